-- bench/scale: many sandboxes from ONE luagent process, against the real engine.
--   1. sessions at once: N tasks each open a session, run one command and one
--      python cell, and close it; every session is open at the same moment
--      (each waits after its open until all are open), so N really are alive
--      together. Per N: wall time, the cost per session against one session
--      alone (same steps), the latency of each step, this process's peak
--      RSS and descriptors, what the engine side holds per session (the
--      containerd shim, the processes in the sandbox, dockerd, containerd;
--      local engine only), and the sessions left behind afterwards (must be 0).
--   2. the energy recipe (scripted driver, in this process through
--      luagent.run): ENERGY runs at once against one run alone.
--   3. what limits those runs: the recipe's heaviest step (the numpy
--      baseline fit) alone and ENERGY at once, with the sandbox's default
--      environment and with OPENBLAS_NUM_THREADS=1 (bench/SCALE.md says why).
-- Settings: --set sizes=16,32,64 (push past: 96,128,256), --set energy=8,
-- --set parts=sessions,energy,blas. A benchmark: it prints figures and never
-- fails on time. What limits the count, and how to raise it: bench/SCALE.md.
local measure = require "measure"
local median = measure.median
local sandbox, sys, fs = luagent.sandbox, luagent.sys, luagent.fs
local run = require "luagent.run"
package.path = "recipes/?.lua;" .. package.path
local steps = require "energy_anomaly_steps"

local function list_setting(value, default)
  local out = {}
  for item in tostring(value or default):gmatch("[^,%s]+") do out[#out + 1] = tonumber(item) or item end
  return out
end
local sizes = list_setting(luagent.settings.sizes, "16,32,64")
local energy_runs = tonumber(luagent.settings.energy) or 8
local parts = {}
for _, p in ipairs(list_setting(luagent.settings.parts, "sessions,energy,blas")) do parts[p] = true end

local function largest(xs)
  local m = 0
  for _, x in ipairs(xs) do m = math.max(m, x) end
  return m
end

local function ms(s) return s * 1000 end
local function mb(bytes) return bytes / 1024 / 1024 end

local client = assert(sandbox.engine())
local my_pid = sys.pid()
local cores = tonumber(select(2, sys.execute({"nproc"})):match("%d+")) or 0

-- ---- what this process and the engine hold ----

local function count_fds()
  local names = fs.list("/proc/self/fd")
  return names and #names - 1 or 0 -- the listing's own descriptor
end

local function proc_status(pid)
  local text = fs.read("/proc/" .. pid .. "/status")
  if not text then return nil end
  return {name = text:match("Name:%s*([^\n]*)"), ppid = tonumber(text:match("PPid:%s*(%d+)")),
          rss = (tonumber(text:match("VmRSS:%s*(%d+)")) or 0) * 1024, threads = tonumber(text:match("Threads:%s*(%d+)"))}
end

-- proportional set size: shared pages counted once across processes
local function pss(pid)
  local text = fs.read("/proc/" .. pid .. "/smaps_rollup")
  return text and (tonumber(text:match("\nPss:%s*(%d+)")) or 0) * 1024 or 0
end

-- The local engine's dockerd (its pid file) and its containerd, when
-- DOCKER_HOST is not set elsewhere; nil for a remote engine.
local function engine_daemons()
  if client.endpoint.unix_socket ~= "/var/run/docker.sock" then return nil end
  local pid = tonumber((fs.read("/var/run/docker.pid") or ""):match("%d+"))
  local dockerd = pid and proc_status(pid)
  if not dockerd then return nil end
  local daemons = {dockerd = {pid = pid, status = dockerd}}
  for _, name in ipairs(fs.list("/proc") or {}) do
    local child = name:match("^%d+$") and proc_status(name)
    if child and child.ppid == pid and child.name == "containerd" then
      daemons.containerd = {pid = tonumber(name), status = child}
    end
  end
  return daemons
end

-- Engine-side cost of our sessions: their shims (the parents of each
-- container's processes) and the processes inside them, found through the
-- memory cgroup of each container (cgroupfs, v1 or v2 layout).
local function engine_side(containers)
  local ours = {}
  for _, id in ipairs(containers) do ours[id] = true end
  local inside, parents = {pss = 0, count = 0}, {}
  for _, name in ipairs(fs.list("/proc") or {}) do
    if name:match("^%d+$") then
      local cgroup = fs.read("/proc/" .. name .. "/cgroup") or ""
      local id = cgroup:match("/docker/(%x+)") or cgroup:match("docker%-(%x+)%.scope")
      if id and ours[id] then
        local st = proc_status(name)
        if st then
          inside.pss, inside.count = inside.pss + pss(name), inside.count + 1
          parents[st.ppid] = true
        end
      end
    end
  end
  local shims = {count = 0, pss = 0, threads = 0}
  for pid in pairs(parents) do
    local st = proc_status(pid)
    if st and st.name and st.name:find("containerd%-shim") then
      shims.count, shims.pss, shims.threads = shims.count + 1, shims.pss + pss(pid), shims.threads + st.threads
    end
  end
  -- what each sandbox's memory cgroup is charged (its processes, tmpfs
  -- files, page cache, kernel memory), cgroup v1 or v2, cgroupfs or systemd
  local charged, found = 0, 0
  for _, id in ipairs(containers) do
    for _, path in ipairs({"/sys/fs/cgroup/memory/docker/" .. id .. "/memory.usage_in_bytes",
                           "/sys/fs/cgroup/docker/" .. id .. "/memory.current",
                           "/sys/fs/cgroup/system.slice/docker-" .. id .. ".scope/memory.current"}) do
      local bytes = tonumber((fs.read(path) or ""):match("%d+"))
      if bytes then
        charged, found = charged + bytes, found + 1
        break
      end
    end
  end
  return {inside = inside, shims = shims, cgroups = found > 0 and charged or nil}
end

-- This process's CPU time (user + system), in seconds.
local function cpu_time()
  local stat = fs.read("/proc/self/stat") or ""
  local after = stat:match("%) (.*)$") or ""
  local fields = {}
  for f in after:gmatch("%S+") do fields[#fields + 1] = f end
  return ((tonumber(fields[12]) or 0) + (tonumber(fields[13]) or 0)) / 100 -- clock ticks (USER_HZ = 100)
end

-- Containers and volumes of this process still on the engine.
local function leftovers()
  local filters = {label = {"luagent.owner.pid=" .. my_pid}}
  local containers = client:call("GET", "/containers/json", nil, {query = {all = 1, filters = filters}})
  local volumes = client:call("GET", "/volumes", nil, {query = {filters = filters}})
  return #(containers or {}) + #(volumes and volumes.Volumes or {})
end

-- ---- 1. sessions at once ----

-- One session's steps; `hold` (when given) is called after the python cell,
-- before the close, with the box (nil when the open failed). Returns the
-- time of each step, or raises.
local function session(hold)
  local t = {}
  local started = luagent.now()
  local box, err = sandbox.open{}
  t.open = luagent.now() - started
  if not box then
    if hold then hold(nil) end
    error(err, 0)
  end
  local ok, fail = pcall(function()
    local s = luagent.now()
    local r = assert(box:exec({"echo", "hello"}))
    assert(r.exit_code == 0 and r.stdout == "hello\n", "the command failed: " .. r.stderr)
    t.exec = luagent.now() - s
    s = luagent.now()
    r = assert(box:python("sum(range(1000))"))
    assert(r.exit_code == 0 and r.stdout == "499500\n", "the python cell failed: " .. r.stderr)
    t.python = luagent.now() - s
  end)
  if hold then hold(ok and box or nil) end
  local s = luagent.now()
  local closed, cerr = box:close()
  t.close = luagent.now() - s
  if not ok then error(fail, 0) end
  if not closed then error(cerr, 0) end
  return t
end

-- N sessions at once. Each waits after its python cell until all have come
-- that far, so all N are open together, each with its supervisor and its
-- python interpreter running; then the engine side and the descriptors are
-- read (that time is left out of the wall time), and they close.
local function sessions_at_once(n, daemons_before)
  local arrived, containers, snapshot = 0, {}, nil
  local released = false
  -- the others wait for this task (one sleeper, not N)
  local gate = luagent.spawn(function() while not released do luagent.sleep(0.005) end end)
  local cpu = cpu_time()
  local started = luagent.now()
  local function hold(box)
    arrived = arrived + 1
    if box then containers[#containers + 1] = box.container end
    if arrived == n then
      local t = luagent.now()
      snapshot = {fds = count_fds(), engine = daemons_before and engine_side(containers), daemons = engine_daemons(),
                  all_ready = t - started, alive = #containers}
      snapshot.took = luagent.now() - t
      released = true
    end
    gate:wait()
  end
  local list = {}
  for i = 1, n do list[i] = i end
  local times, errs = luagent.map(list, function() return session(hold) end, {concurrency = n})
  local wall = luagent.now() - started - (snapshot and snapshot.took or 0)
  local by_step, failures = {open = {}, exec = {}, python = {}, close = {}}, {}
  for i = 1, n do
    if errs and errs[i] then
      failures[#failures + 1] = tostring(type(errs[i]) == "table" and errs[i].message or errs[i])
    else
      for k, list_of in pairs(by_step) do list_of[#list_of + 1] = times[i][k] end
    end
  end
  return {n = n, wall = wall, steps = by_step, failures = failures, snapshot = snapshot,
          leftovers = leftovers(), rss = sys.maxrss(), cpu = cpu_time() - cpu}
end

local function print_sessions()
  local fds_before = count_fds()
  local daemons = engine_daemons()
  -- one session alone, the same steps: the median of 3 (after one to warm up)
  local alone = {open = {}, exec = {}, python = {}, close = {}, total = {}}
  for i = 1, 4 do
    local t = session()
    if i > 1 then
      for k, v in pairs(t) do table.insert(alone[k], v) end
      table.insert(alone.total, t.open + t.exec + t.python + t.close)
    end
  end
  local one = median(alone.total)
  print("sessions at once from one luagent process: open, `echo hello`, a python cell, close; all N are open")
  print("together (each waits after its cell until all are there; the readings then are left out of the wall time)")
  print(("  one session alone (median of 3): %.0f ms = open %.0f + command %.0f + python %.0f + close %.0f")
    :format(ms(one), ms(median(alone.open)), ms(median(alone.exec)), ms(median(alone.python)), ms(median(alone.close))))
  print("      N  wall s  all ready s  per session ms  x alone  open p50/max ms  command p50/max  python p50/max"
    .. "  close p50/max  failed  left behind")
  local results = {}
  for _, n in ipairs(sizes) do
    local r = sessions_at_once(n, daemons)
    results[#results + 1] = r
    local function pm(k) return ("%.0f/%.0f"):format(ms(median(r.steps[k])), ms(largest(r.steps[k]))) end
    print(("  %5d  %6.2f  %11.2f  %14.0f  %7.2f  %14s  %15s  %14s  %13s  %6d  %11d"):format(n, r.wall,
      r.snapshot and r.snapshot.all_ready or 0, ms(r.wall / n), r.wall / n / one, pm("open"), pm("exec"), pm("python"),
      pm("close"), #r.failures, r.leftovers))
    for i = 1, math.min(3, #r.failures) do print("         failure: " .. r.failures[i]) end
  end
  print("  (per session = wall / N, x alone = that against one session alone; left behind = containers + volumes")
  print("  with this process's labels after the last close: must be 0)")
  print()
  print("  what N open sessions hold (read while all were open and ready; PSS counts shared pages once)")
  print("      N  luagent: fds/session  peak RSS MB  CPU ms/session | shims: PSS MB/session  threads/session"
    .. " | in the sandbox: processes  PSS MB/session  cgroup MB/session")
  for _, r in ipairs(results) do
    local snap, n = r.snapshot or {}, r.n
    local e = snap.engine
    local function per(x, f) return e and x and ("%.1f"):format(f(x) / n) or "-" end
    print(("  %5d  %20.2f  %11.1f  %14.1f | %21s  %15s | %25s  %14s  %17s"):format(n,
      snap.fds and (snap.fds - fds_before) / math.max(1, snap.alive) or 0, mb(r.rss), ms(r.cpu / n),
      per(e and e.shims.pss, mb), per(e and e.shims.threads, tonumber), per(e and e.inside.count, tonumber),
      per(e and e.inside.pss, mb), per(e and e.cgroups, mb)))
  end
  if not daemons then
    print("  (the engine is not the local /var/run/docker.sock: its processes are not measured)")
    return
  end
  local function daemon(d) return d and ("%.1f MB, %d threads"):format(mb(d.status.rss), d.status.threads) or "?" end
  print(("  dockerd before: %s; containerd before: %s"):format(daemon(daemons.dockerd), daemon(daemons.containerd)))
  for _, r in ipairs(results) do
    local d = r.snapshot and r.snapshot.daemons
    if d then
      print(("  dockerd with %d open: %s; containerd: %s"):format(r.n, daemon(d.dockerd), daemon(d.containerd)))
    end
  end
end

-- ---- 2. energy runs at once ----

local work = assert(fs.temp_dir("luagent-bench-scale"))

-- The recipe's scripted driver prints a notice from luagent.model on every
-- run (to the terminal, even with capture): counted and left out here.
local notices = 0
local function quietly(fn, ...)
  local saved = _G.print
  _G.print = function(first, ...)
    if type(first) == "string" and (first:find("^SCRIPTED RUN") or first:find("^A script makes")) then
      notices = notices + 1
      return
    end
    return saved(first, ...)
  end
  local ok, a, b = pcall(fn, ...)
  _G.print = saved
  if not ok then error(a, 0) end
  return a, b
end

local energy_count = 0
local function energy_run()
  energy_count = energy_count + 1
  local dir = ("%s/energy-%d"):format(work, energy_count)
  local r = assert(run.new{recipe = "recipes/energy_anomaly.lua", settings = {model = {provider = "scripted"}},
                           dir = dir, capture = true, quiet = true})
  local started = luagent.now()
  local result = r:execute()
  local took = luagent.now() - started
  if result.status ~= "ok" then
    error(("an energy run failed (%s): %s"):format(result.status, tostring(result.error and result.error.message
      or result.error)), 0)
  end
  return took
end

local function energy_at_once(n)
  local list = {}
  for i = 1, n do list[i] = i end
  local started = luagent.now()
  local took, errs = luagent.map(list, energy_run, {concurrency = n})
  local wall = luagent.now() - started
  if errs then
    for i = 1, n do if errs[i] then error(errs[i], 0) end end
  end
  return wall, took
end

local function print_energy()
  local n = energy_runs
  local before = quietly(energy_run)
  local wall, each = quietly(energy_at_once, n)
  local after = quietly(energy_run)
  local one = (before + after) / 2
  print(("the energy recipe (scripted driver), runs in this process through luagent.run"))
  print(("  one run alone           %6.2f s   (before %.2f s, after %.2f s: the mean)"):format(one, before, after))
  print(("  %d runs at once          %6.2f s   %.2fx one run; %d in a row would take %.2f s: at once is %.2fx faster")
    :format(n, wall, wall / one, n, n * one, n * one / wall))
  print(("  each run, at once       median %.2f s, longest %.2f s"):format(median(each), largest(each)))
  print(("  (the scripted driver's two-line notice, printed by luagent.model to the terminal even with capture,"
    .. " came %d times and is left out here)"):format(notices // 2))
end

-- ---- 3. what limits the energy runs: BLAS threads in a 1-CPU sandbox ----

-- CPU seconds a container has used so far (its cgroup: v1 cpuacct, or v2
-- cpu.stat), and how long the CFS quota held it back; nil when not readable.
local function container_cpu(id)
  local usage = tonumber((fs.read("/sys/fs/cgroup/cpuacct/docker/" .. id .. "/cpuacct.usage") or ""):match("%d+"))
  local stat = fs.read("/sys/fs/cgroup/cpu/docker/" .. id .. "/cpu.stat")
  if usage then
    return usage / 1e9, (tonumber(stat and stat:match("throttled_time (%d+)")) or 0) / 1e9
  end
  stat = fs.read("/sys/fs/cgroup/docker/" .. id .. "/cpu.stat")
    or fs.read("/sys/fs/cgroup/system.slice/docker-" .. id .. ".scope/cpu.stat")
  usage = stat and tonumber(stat:match("usage_usec (%d+)"))
  if not usage then return nil end
  return usage / 1e6, (tonumber(stat:match("throttled_usec (%d+)")) or 0) / 1e6
end

-- The most memory a container's cgroup was charged (v1 max_usage, v2 peak), or nil.
local function container_peak_memory(id)
  for _, path in ipairs({"/sys/fs/cgroup/memory/docker/" .. id .. "/memory.max_usage_in_bytes",
                         "/sys/fs/cgroup/docker/" .. id .. "/memory.peak",
                         "/sys/fs/cgroup/system.slice/docker-" .. id .. ".scope/memory.peak"}) do
    local bytes = tonumber((fs.read(path) or ""):match("%d+"))
    if bytes then return bytes end
  end
end

-- The baseline fit in a fresh sandbox: {wall, cpu, throttled} seconds of that
-- one cell, and the sandbox's peak memory.
local function baseline_fit(csv, env)
  local box <close> = assert(sandbox.open{memory = "1g", cpus = 1, env = env,
                                          manifest = {["input/building_energy.csv"] = sandbox.file(csv)}})
  local r = assert(box:python(steps.inspect))
  assert(r.exit_code == 0, r.stderr)
  local cpu0, throttled0 = container_cpu(box.container)
  local started = luagent.now()
  r = assert(box:python(steps.baseline))
  assert(r.exit_code == 0, r.stderr)
  local wall = luagent.now() - started
  local cpu1, throttled1 = container_cpu(box.container)
  local peak = container_peak_memory(box.container)
  return {wall = wall, cpu = cpu1 and cpu1 - cpu0, throttled = throttled1 and throttled1 - throttled0,
          memory = peak and mb(peak)}
end

local function print_blas()
  local csv = require("energy_data").generate{seed = 7, days = 90, dir = work .. "/blas"}
  local n = energy_runs
  local envs = {{label = "the sandbox's environment", env = nil},
                {label = "OPENBLAS_NUM_THREADS=1", env = {OPENBLAS_NUM_THREADS = "1"}}}
  local rows = {}
  for i = 1, #envs do rows[i] = {alone = {}, together = {}} end
  for _ = 1, 2 do -- alternating, so both share the machine's conditions
    for i, e in ipairs(envs) do
      table.insert(rows[i].alone, baseline_fit(csv, e.env))
      local list = {}
      for j = 1, n do list[j] = j end
      for _, fit in ipairs((luagent.map(list, function() return baseline_fit(csv, e.env) end, {concurrency = n}))) do
        table.insert(rows[i].together, fit)
      end
    end
  end
  local function stats(fits, key)
    local xs = {}
    for _, f in ipairs(fits) do if f[key] then xs[#xs + 1] = f[key] end end
    return #xs > 0 and ("%6.2f"):format(median(xs)) or "     -"
  end
  print(("the energy recipe's baseline fit (numpy lstsq, its heaviest step) in sandboxes of cpus = 1, %d cores here;")
    :format(cores))
  print("medians in seconds of the fit's wall time, the CPU time its sandbox used, and the time the CPU quota held it back")
  print(("  %-26s   alone (2 runs): wall    CPU  held back   %d at once (%d runs): wall    CPU  held back"):format("", n,
    2 * n))
  for i, e in ipairs(envs) do
    local r = rows[i]
    print(("  %-26s                 %s %s     %s                       %s %s     %s"):format(e.label,
      stats(r.alone, "wall"), stats(r.alone, "cpu"), stats(r.alone, "throttled"), stats(r.together, "wall"),
      stats(r.together, "cpu"), stats(r.together, "throttled")))
  end
  print(("  each sandbox's peak memory (the analysis in pandas and numpy): %s MB (median)"):format(
    stats(rows[1].alone, "memory"):gsub("^%s+", "")))
end

local ok, err = pcall(function()
  if parts.sessions then print_sessions(); print() end
  if parts.energy then print_energy(); print() end
  if parts.blas then print_blas() end
end)
fs.remove(work)
if not ok then error(err, 0) end
print(("host: %d cores, load average at the end %s (other work on the machine moves every figure)")
  :format(cores, (fs.read("/proc/loadavg") or "?"):match("^(%S+ %S+ %S+)")))

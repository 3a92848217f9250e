-- bench/fork: box:fork against opening the same sessions
-- cold, in one run, alternating, against the real engine:
--   fork     a source session holding a 50 MB workspace (staged once, not
--            timed) forked into 8: box:fork(8), which opens 8 sessions of its
--            spec at once and streams the workspace from the source's
--            supervisor into all 8 (one read, eight writers)
--   cold     8 sandbox.open at once with the same 50 MB staged by the manifest
--            (the engine's archive PUT per session)
-- Each round closes what it opened (not timed). Medians of `rounds`, and
-- their ratio. A benchmark, not a test: it prints figures, never fails on time.
local measure = require "measure"
local median, timed = measure.median, measure.timed
local sandbox, fs = luagent.sandbox, luagent.fs
local sched = require "luagent.sched"
local events = require "luagent.events"
local rounds = tonumber(luagent.settings.rounds) or 3
local N = tonumber(luagent.settings.n) or 8
local MB = tonumber(luagent.settings.mb) or 50

local work = assert(fs.temp_dir("luagent-bench-fork"))
luagent.at_exit(function() fs.remove(work) end)
local input = work .. "/data.bin"
local random = assert(io.open("/dev/urandom", "rb"))
local out = assert(io.open(input, "wb"))
for _ = 1, MB do out:write(random:read(1024 * 1024)) end
out:close()
random:close()

local OPTS = {memory = "128m", tmp_size = "32m", workspace_size = ("%dm"):format(MB + 32)}
local function options(extra)
  local o = {}
  for k, v in pairs(OPTS) do o[k] = v end
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end
local function staged() return options{manifest = {["data.bin"] = sandbox.file(input)}} end

local function close_all(boxes)
  for _, b in ipairs(boxes) do b:close() end
end

local function cold_round()
  local boxes = {}
  local took = timed(function()
    local tasks = {}
    for i = 1, N do tasks[i] = sched.spawn(function() return assert(sandbox.open(staged())) end) end
    for i, task in ipairs(tasks) do boxes[i] = assert(task:wait()) end
  end)
  close_all(boxes)
  return took
end

-- when the last fork was open, seconds after the fork began (the rest is the copy)
local opened = {}
local last_open
local function watch(ev) if ev.type == "sandbox_open" then last_open = luagent.now() end end

local function fork_round()
  local source <close> = assert(sandbox.open(staged()))
  assert(source:exec("true"))
  local forks
  events.subscribe(watch)
  local began = luagent.now()
  local took = timed(function() forks = assert(source:fork(N)) end)
  events.unsubscribe(watch)
  opened[#opened + 1] = last_open - began
  local r = assert(forks[N]:exec("wc -c < data.bin"))
  assert(tonumber(r.stdout) == MB * 1024 * 1024, "the last fork holds the whole file")
  close_all(forks)
  return took
end

local fork_s, cold_s = {}, {}
for i = 1, rounds do
  if i % 2 == 1 then
    fork_s[#fork_s + 1] = fork_round()
    cold_s[#cold_s + 1] = cold_round()
  else
    cold_s[#cold_s + 1] = cold_round()
    fork_s[#fork_s + 1] = fork_round()
  end
end
local f, c = median(fork_s), median(cold_s)
print(("%d MB workspace into %d sessions, median of %d rounds (load average %s)"):format(MB, N, rounds,
  (fs.read("/proc/loadavg") or "?"):match("^(%S+)")))
print(("  box:fork(%d)                    %7.0f ms  (%.0f MB/s written into the forks)"):format(N, f * 1000,
  MB * N / f))
print(("    of which opening the %d       %7.0f ms, the copy %.0f ms"):format(N, median(opened) * 1000,
  (f - median(opened)) * 1000))
print(("  %d cold sandbox.open, staged     %7.0f ms"):format(N, c * 1000))
print(("  fork / cold                      %7.2f"):format(f / c))

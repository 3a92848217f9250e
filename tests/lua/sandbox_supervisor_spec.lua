-- needs: docker
-- The eight reproductions of the supervisor's defects against the real engine through
-- luagent.sandbox, each asserting the fixed behaviour, in the sandbox image
-- and in a Python-less busybox image (tools/busybox-image.sh builds it when
-- it is missing): OOM of shell commands, the workspace cap, signals to
-- PID 1, honest results after the supervisor or the container dies, sparse
-- files and long paths in extraction, commands escaping their timeout,
-- background processes, and PID 1 out of a command's reach. Plus
-- box:spawn's handles.
local t = require "helper"
local sandbox, engine_stream, fs, sys = luagent.sandbox, luagent.engine_stream, luagent.fs, luagent.sys

local ROOT = (luagent.recipe or ""):match("^(.*)tests/lua/[^/]*$") or ""
local BUSYBOX = "luagent-busybox:test"
local work = assert(fs.temp_dir("luagent-supervisor-spec"))
luagent.at_exit(function() fs.remove(work) end)

local code, out = sys.execute({"sh", ROOT .. "tools/busybox-image.sh", BUSYBOX})
if code ~= 0 then error("tools/busybox-image.sh could not build " .. BUSYBOX .. ": " .. out) end

local client = assert(sandbox.engine())

local function ok_exec(box, cmd, opts)
  local r, err = box:exec(cmd, opts)
  if not r then error("exec failed: " .. tostring(err), 2) end
  return r
end

-- How many processes' command lines start with prefix (a shell loop: the
-- busybox image has no Python).
local function count(box, prefix)
  local r = ok_exec(box, {"sh", "-c", [[n=0; for f in /proc/[0-9]*/cmdline; do
    case "$(tr '\0' ' ' < $f 2>/dev/null)" in "$1"*) n=$((n + 1));; esac; done; echo $n]], "count", prefix})
  return tonumber(r.stdout)
end

-- A root shell in the session's container, as the host can run one through
-- the engine (an operator, a crash): it can kill the supervisor.
local function host_exec(box, script)
  if t.engine == "k8s" then -- a pod: the cluster's exec (as the container's user, root)
    local ns = t.k8s_namespace
    local _, printed = luagent.sys.execute({"tests/k8s.sh", "kubectl", "-n", ns, "exec", box.container, "--",
                                            "sh", "-c", script})
    return printed -- (its exit status is the script's last test, as with Docker's exec)
  end
  local created = assert(client:call("POST", "/containers/" .. box.container .. "/exec",
    {AttachStdout = true, AttachStderr = true, User = "0", Cmd = {"sh", "-c", script}}))
  local stream = engine_stream.exec_start(client:options("/exec/" .. created.Id .. "/start",
    {body = '{"Detach":false,"Tty":false}'}))
  assert(stream:wait(30))
  return assert(stream:result()).stdout
end

-- kill -9 of `serve` itself (its reapers are forked copies: their parent is serve)
local KILL_SERVE = [[for d in /proc/[0-9]*; do
  case "$(tr '\0' ' ' < $d/cmdline 2>/dev/null)" in '/run/luagent/luagent-supervisor serve'*)
    while read k v; do [ "$k" = PPid: ] && [ "$v" = 0 ] && kill -9 ${d#/proc/} && echo killed; done < $d/status;;
  esac
done]]

local function median_true(box, n)
  local times = {}
  for i = 1, n do
    local started = luagent.now()
    ok_exec(box, {"true"})
    times[i] = luagent.now() - started
  end
  table.sort(times)
  return times[(n + 1) // 2]
end

local SHELL_BOMB = "x=0123456789abcdef; while :; do x=$x$x; done"

-- "A command costs a fork, not a Docker exec": n commands are n requests on the
-- session's one supervisor channel, and no other serve was started for them
-- (how long they took depends on the machine's load: bench/sandbox measures it).
local function through_supervisor(box, n, what)
  local sv = box._session.supervisor
  local before = sv and sv.next_id
  t.ok(sv and sv:alive(), what .. ": a live supervisor")
  local median = median_true(box, n)
  t.ok(box._session.supervisor == sv and sv.next_id == before + n,
       ("%s: %d commands, %d requests on the supervisor's channel (median %.1f ms)")
         :format(what, n, (box._session.supervisor.next_id or 0) - (before or 0), median * 1000))
end

local function checks(name, image, python)
  local function test(what, fn, opts) t.test(("[%s] %s"):format(name, what), fn, opts) end
  local box = assert(sandbox.open{image = image, timeout = 30,
                                  manifest = {["input/staged.txt"] = sandbox.text("staged\n")}})
  local small = assert(sandbox.open{image = image, memory = "128m", workspace_size = "64m", tmp_size = "16m"})

  test("repro 1: OOM is reported for sh -c (the shell goes on), argv and python", function()
    local r = ok_exec(small, "sh -c '" .. SHELL_BOMB .. "' 2>/dev/null; echo after")
    t.eq(r.stdout, "after\n"); t.eq(r.exit_code, 0)
    t.eq(r.oom_killed, true, "an OOM kill of a child of sh -c")
    r = ok_exec(small, {"sh", "-c", SHELL_BOMB})
    t.eq(r.exit_code, 137); t.eq(r.oom_killed, true, "argv")
    if python then
      r = ok_exec(small, "python3 -c 'b = bytearray(1 << 30)'")
      t.eq(r.exit_code, 137); t.eq(r.oom_killed, true, "the issue's command")
      assert(small:python("kept = 1"))
      r = assert(small:python("b = bytearray(1 << 30)"))
      t.eq(r.oom_killed, true, "box:python")
      t.eq(assert(small:python("1")).state_lost, true, "the next call says the interpreter is new")
    end
    r = ok_exec(small, "kill -9 $$")
    t.eq(r.exit_code, 137); t.eq(r.oom_killed, false, "a plain SIGKILL is not an OOM")
  end, {skip_runtime = {runsc = "gVisor has no memory cgroup inside: a command over the cap is not OOM-killed "
    .. "alone, the whole sandbox ends (sandbox_restarted; sandbox/GVISOR.md)"}})

  test("repro 2: the workspace is capped by the kernel: ENOSPC, not the host's disk, df shows it", function()
    local r = ok_exec(box, "df -k /workspace | tail -1")
    t.match(r.stdout, "%s524288%s", "df: 512m, the default workspace_size")
    r = ok_exec(box, "dd if=/dev/zero of=/workspace/fill bs=1M count=4096")
    t.ok(r.exit_code ~= 0, "dd fails"); t.match(r.stderr, "No space left on device")
    t.eq(r.oom_killed, false, "the writer gets ENOSPC, not an OOM kill")
    t.match(ok_exec(box, "ls -l fill; rm fill && echo removed").stdout, "removed\n$")
    t.match(ok_exec(small, "df -k /workspace | tail -1").stdout, "%s65536%s", "workspace_size = '64m'")
    r = ok_exec(small, "dd if=/dev/zero of=/tmp/fill bs=1M count=100; rm -f /tmp/fill")
    t.match(r.stderr, "No space left on device", "/tmp too"); t.eq(r.oom_killed, false)
  end)

  test("repro 3: TERM, HUP, INT, QUIT, USR1, ALRM (and KILL, STOP) to PID 1 fail; the session goes on", function()
    if python then assert(box:python("kept = 'value'")) end
    local r = ok_exec(box, "for s in TERM HUP INT QUIT USR1 ALRM KILL STOP; do kill -$s 1 2>/dev/null && echo $s; done;"
      .. " echo done")
    t.eq(r.stdout, "done\n", "no signal reached PID 1")
    r = ok_exec(box, "echo next")
    t.eq(r.stdout, "next\n"); t.lt(r.duration, 1)
    t.eq(box._session.restarts, 0, "nothing restarted")
    through_supervisor(box, 11, "commands still cost a fork, not a Docker exec")
    if python then
      r = assert(box:python("kept"))
      t.eq(r.stdout, "'value'\n"); t.eq(r.state_lost, false)
    end
  end)

  test("repro 5: a 1 TiB sparse file is refused in seconds and named; the rest comes home", function()
    ok_exec(box, "mkdir -p out && echo small > out/small.txt && truncate -s 1099511627776 out/big")
    local started = luagent.now()
    local report = assert(box:extract("out", work .. "/" .. name .. "-sparse"))
    t.lt(luagent.now() - started, 5, "seconds, not the whole stream")
    t.eq(fs.read(work .. "/" .. name .. "-sparse/small.txt"), "small\n")
    t.eq(#report.refused, 1); t.eq(report.refused[1].name, "out/big")
    t.match(report.refused[1].reason, "extraction limit")
    started = luagent.now()
    local bytes, err = box:snapshot(work .. "/" .. name .. "-snap.tar")
    t.eq(bytes, nil); t.eq(err.kind, "too_large"); t.match(err.message, "out/big")
    t.lt(luagent.now() - started, 5)
    ok_exec(box, "rm -rf out")
  end)

  test("extraction: paths longer than PATH_MAX come back; what cannot is reported by name", function()
    -- two chains of 11 folders of 200 bytes, one moved into the other: no
    -- command ever names the whole 4400-byte path
    local r = ok_exec(box, [[set -e; n=$(printf '%0200d' 0 | tr 0 d); p=$n; for i in $(seq 2 11); do p=$p/$n; done
      mkdir -p deep/a/$p deep/b/$p && echo bottom > deep/b/$p/file.txt && mv deep/b deep/a/$p/
      echo secret > deep/locked.txt && chmod 000 deep/locked.txt && mkfifo deep/pipe]])
    t.eq(r.exit_code, 0, r.stderr)
    local dest = work .. "/" .. name .. "-deep"
    local report = assert(box:extract("deep", dest))
    local longest = 0
    for _, f in ipairs(report.files) do longest = math.max(longest, #f.path) end
    t.lt(4096, longest, "a file whose path is longer than PATH_MAX came back")
    local refused = {}
    for _, e in ipairs(report.refused) do refused[e.name] = e.reason end
    t.match(refused["deep/locked.txt"] or "", "cannot read", "an unreadable file is named")
    t.match(refused["deep/pipe"] or "", "fifo", "a fifo is named")
    ok_exec(box, "rm -rf deep")
  end)

  test("repro 6: a timed-out 'setsid env -i sleep 1010 & sleep 999' leaves nothing running", function()
    local r = ok_exec(box, "setsid env -i sleep 1010 & sleep 999", {timeout = 3})
    t.eq(r.timed_out, true); t.eq(r.exit_code, 137)
    t.lt(r.duration, 6, "the timeout, not 7 s"); t.ok(r.killed >= 1, "the escaped sleep was killed and counted")
    t.eq(count(box, "sleep 1010"), 0)
    r = ok_exec(box, "setsid sh -c 'while :; do :; done' spinner & sleep 999", {timeout = 2})
    t.eq(r.timed_out, true)
    t.eq(count(box, "sh -c while :; do :; done spinner"), 0, "no escaped CPU spinner")
  end)

  test("repro 7: background processes are killed (and counted) when their command ends", function()
    local r = ok_exec(box, "sleep 1002 & echo started")
    t.eq(r.stdout, "started\n"); t.lt(r.duration, 2)
    t.eq(r.killed, 1, "one process left behind, killed")
    t.eq(count(box, "sleep 1002"), 0)
    r = ok_exec(box, "(while :; do sleep 1008 & done) 2>/dev/null & sleep 1; echo bomb", {timeout = 10})
    t.eq(r.stdout, "bomb\n"); t.ok(r.killed > 20, "a fork bomb to the pids cap, killed whole: " .. r.killed)
    t.eq(count(box, "sleep 1008"), 0)
  end)

  test("box:spawn: a process that outlives the call; read, signal, wait, kill, close", function()
    local server = assert(box:spawn("trap 'echo stopping; exit 7' TERM; sleep 1003 & echo up; wait"))
    t.match(tostring(server), "^sandbox process %d+ of .* %(running%)$")
    local stdout = assert(server:read(5))
    t.eq(stdout, "up\n")
    luagent.sleep(0.2) -- the sleep is forked before "up", maybe not exec'd yet
    t.eq(count(box, "sleep 1003"), 1, "it runs after box:spawn returned")
    local r, err = server:wait(0.2)
    t.eq(r, nil); t.eq(err.kind, "timeout")
    assert(server:signal("TERM"))
    r = assert(server:wait(10))
    t.eq(r.exit_code, 7); t.eq(r.stdout, "stopping\n", "what read() took is not repeated")
    t.eq(count(box, "sleep 1003"), 0, "its group got the signal")
    t.eq(server:running(), false)
    local bg = assert(box:spawn("sleep 1004 & sleep 1005 & echo bg"))
    t.eq(assert(bg:read(5)), "bg\n")
    luagent.sleep(0.2)
    if t.runtime == "runsc" then -- no subreaper to wait for them: they end with it (sandbox/GVISOR.md)
      r = assert(bg:wait(10))
      t.eq(count(box, "sleep 100"), 0, "gVisor: its children end with its main process")
    else
      t.eq(count(box, "sleep 100"), 2, "its children live on after its main process")
      assert(bg:kill())
      r = assert(bg:wait(10))
    end
    t.eq(r.exit_code, 0, "its main process had ended with 0"); t.eq(r.killed, 2)
    t.eq(count(box, "sleep 100"), 0)
    do
      local scoped <close> = assert(box:spawn("sleep 1006")) -- luacheck: ignore 211
      luagent.sleep(0.2)
      t.eq(count(box, "sleep 1006"), 1)
    end
    luagent.sleep(0.5)
    t.eq(count(box, "sleep 1006"), 0, "<close> killed it")
  end)

  test("repro 8: a command cannot signal, trace or read PID 1 or the supervisor; orphans are reaped", function()
    local r = ok_exec(box, [[cat /proc/1/environ > /dev/null 2>&1 || echo environ denied
      head -c 1 /proc/1/mem > /dev/null 2>&1 || echo mem denied
      for d in /proc/[0-9]*; do [ "$(grep '^Uid:' $d/status | cut -f2)" = 0 ] && kill -9 ${d#/proc/} 2>/dev/null &&
        echo killed; done
      grep CapEff /proc/self/status]])
    -- gVisor lets uid 1000 read /proc/1/environ (the container's env, which commands get anyway: sandbox/GVISOR.md)
    t.eq(r.stdout, (t.runtime == "runsc" and "" or "environ denied\n") .. "mem denied\nCapEff:\t0000000000000000\n")
    if python then
      r = ok_exec(box, {"python3", "-c", [[
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
roots = [int(p) for p in os.listdir('/proc') if p.isdigit() and os.stat('/proc/' + p).st_uid == 0]
for pid in roots:
    for req in (16, 0x4206):  # PTRACE_ATTACH, PTRACE_SEIZE
        if libc.ptrace(req, pid, 0, 0) != -1: print('traced', pid)
print(len(roots) >= 2, 'none traced')]]})
      t.eq(r.stdout, "True none traced\n")
    end
    r = ok_exec(box, "for i in $(seq 1 60); do (sleep 0.1 &) ; done; sleep 1;"
      .. " grep -l '^State:.Z' /proc/[0-9]*/status 2>/dev/null | wc -l")
    t.eq(r.stdout:match("%d+"), "0", "no zombie: orphans are reaped")
    t.eq(box._session.restarts, 0)
  end)

  test("repro 3/4: the supervisor killed from the host: the call in flight says sandbox_restarted, never a "
    .. "result; the session comes back fast", function()
    if python then assert(box:python("kept = 'value'")) end
    for trial = 1, 2 do
      local flight = luagent.spawn(function() return box:exec("sleep 30") end)
      luagent.sleep(0.5)
      t.match(host_exec(box, KILL_SERVE), "killed")
      local r, err = flight:wait()
      t.eq(r, nil, "trial " .. trial .. ": no command result made of a fault")
      t.eq(err.kind, "sandbox_restarted"); t.eq(err.restarted, "supervisor")
      t.match(err.message, "lost its supervisor")
      through_supervisor(box, 11, "a working supervisor again, not a slow fallback")
    end
    t.eq(ok_exec(box, "cat input/staged.txt").stdout, "staged\n", "the workspace is kept")
    if python then
      local r = assert(box:python("'kept' in globals()"))
      t.eq(r.stdout, "False\n"); t.eq(r.state_lost, true)
      t.eq(assert(box:python("1")).state_lost, false, "state_lost is said once")
    end
    -- between calls: the next call says so, once
    t.match(host_exec(box, KILL_SERVE), "killed")
    luagent.sleep(0.3)
    local r, err = box:exec("echo after")
    t.eq(r, nil); t.eq(err.kind, "sandbox_restarted")
    t.eq(ok_exec(box, "echo after").stdout, "after\n")
  end)

  test("repro 4: the container killed under a command: sandbox_restarted, the workspace staged again", function()
    ok_exec(box, "echo mine > later.txt")
    for trial = 1, 2 do
      local flight = luagent.spawn(function() return box:exec("sleep 30") end)
      luagent.sleep(0.5)
      assert(client:call("POST", "/containers/" .. box.container .. "/kill"))
      local r, err = flight:wait()
      t.eq(r, nil, "trial " .. trial .. ": no exit code 126 or -1 made of an engine error")
      t.eq(err.kind, "sandbox_restarted"); t.eq(err.restarted, "container")
      t.match(err.message, "workspace was reset")
      local ls = ok_exec(box, "find .") -- not ls -R: statx under gVisor
      t.match(ls.stdout, "staged.txt", "the manifest is staged again"); t.no_match(ls.stdout, "later.txt")
      t.eq(ok_exec(box, "cat /proc/1/comm").stdout, "luagent-supervi\n")
      through_supervisor(box, 11, "fast again")
    end
    if python then t.eq(assert(box:python("1")).state_lost, true) end
  end, {skip_engine = {k8s = "it kills the container through Docker's API, and the workspace is reset there; a "
    .. "pod's container restarts with its emptyDirs kept: k8s_spec deletes a pod under a command"}})

  test("box:spawn handles whose supervisor died: every method returns nil, err, none raises", function()
    -- one process per method: the first waiter sees the channel end and
    -- recovers the session; the others hold a channel the recovery closed
    local methods = {
      wait = function(p) return p:wait(10) end, read = function(p) return p:read(1) end,
      signal = function(p) return p:signal("TERM") end, kill = function(p) return p:kill() end,
      write = function(p) return p:write("x\n") end,
    }
    local first = assert(box:spawn("sleep 1009"))
    local procs = {}
    for method in pairs(methods) do procs[method] = assert(box:spawn("cat", {stdin = true})) end
    t.match(host_exec(box, KILL_SERVE), "killed")
    local r, err = first:wait(10)
    t.eq(r, nil); t.eq(err.kind, "sandbox_restarted")
    for method, call in pairs(methods) do
      local ok, value, why = pcall(call, procs[method])
      t.ok(ok, ("%s on a process of the dead supervisor raised: %s"):format(method, tostring(value)))
      if method == "wait" or method == "read" or method == "write" then
        t.eq(value, nil, method); t.eq(why.kind, "sandbox_restarted", method)
      end
      t.eq(procs[method]:running(), false, method .. ": not running")
    end
    t.eq(ok_exec(box, "echo after").stdout, "after\n", "the session goes on")
  end)

  small:close()
  box:close()
end

checks("sandbox", sandbox.IMAGE, true)
-- under gVisor the sandbox image's checks are enough (tests/run's gvisor entries keep make test short)
if not t.runtime then checks("busybox", BUSYBOX, false) end
return t.done()

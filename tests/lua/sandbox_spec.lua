-- needs: docker
-- luagent.sandbox against the real Docker engine: staging, lock-down,
-- hostile code, extraction, lifecycle. Needs the luagent-sandbox image
-- (tests/run builds it).
local t = require "helper"
local sandbox, fs, sys, tar = luagent.sandbox, luagent.fs, luagent.sys, luagent.tar

local work = assert(fs.temp_dir("luagent-sandbox-spec"))
luagent.at_exit(function() fs.remove(work) end)

local function write(path, data)
  assert(fs.mkdir(path:match("^(.*)/[^/]*$")))
  assert(fs.write(path, data))
end

local function all_bytes()
  local bytes = {}
  for i = 0, 255 do bytes[#bytes + 1] = string.char(i) end
  return table.concat(bytes):rep(300)
end

-- one long-lived session for the hostile-code tests, closed at the end
local box = assert(sandbox.open{memory = "256m", pids = 64, timeout = 30})

local function ok_exec(cmd, opts)
  local r, err = box:exec(cmd, opts)
  if not r then error("exec failed: " .. tostring(err and err.message), 2) end
  return r
end

local function still_usable()
  local r = ok_exec("echo alive")
  t.eq(r.stdout, "alive\n", "the session still runs commands")
end

t.test("staging round trip: binary, unicode name, empty folder, text", function()
  local src = work .. "/src"
  write(src .. "/bin/all-bytes.bin", all_bytes())
  write(src .. "/données/énergie ☀.csv", "a,b\n1,2\n")
  assert(fs.mkdir(src .. "/empty/inner"))
  write(src .. "/skip/me.pyc", "x")
  local s <close> = assert(sandbox.open{manifest = {
    ["input"] = sandbox.dir(src, {exclude = {"*.pyc"}}),
    ["notes/task.md"] = sandbox.text("find the anomaly\n"),
  }})
  local r = assert(s:exec("cd input && find . | sort && sha256sum bin/all-bytes.bin"))
  t.match(r.stdout, "./données/énergie ☀.csv", "unicode name")
  t.match(r.stdout, "./empty/inner\n", "empty folder")
  t.no_match(r.stdout, "me.pyc", "excluded file")
  t.match(r.stdout, sys.sha256(all_bytes()), "binary content intact inside")
  t.eq(assert(s:get("notes/task.md")), "find the anomaly\n")
  local out = work .. "/back"
  local report = assert(s:extract("input", out))
  t.eq(#report.refused, 0)
  t.eq(fs.read(out .. "/bin/all-bytes.bin"), all_bytes(), "binary content intact after the round trip")
  t.eq(fs.read(out .. "/données/énergie ☀.csv"), "a,b\n1,2\n")
  t.eq(fs.stat(out .. "/empty/inner").type, "directory")
  t.eq(r.exit_code, 0)
end)

t.test("staged files belong to the sandbox user, who can change them", function()
  local s <close> = assert(sandbox.open{manifest = {["input/a.csv"] = sandbox.text("x\n")}})
  -- find, not stat: gVisor's runsc answers statx (GNU stat, ls -l) with EINVAL (sandbox/GVISOR.md)
  local r = assert(s:exec("find input input/a.csv -maxdepth 0 -printf '%U %m\\n' && echo more >> input/a.csv && touch input/new"))
  t.eq(r.exit_code, 0, r.stderr)
  t.match(r.stdout, "^1000 755\n1000 644\n")
end)

t.test("a missing host file fails before any container starts, naming key and path", function()
  local before = #assert(sandbox.list(assert(sandbox.engine())))
  local s, err = sandbox.open{manifest = {["input/building_energy.csv"] = sandbox.file(work .. "/nope.csv")}}
  t.eq(s, nil)
  t.eq(err.kind, "not_found")
  t.match(err.message, "input/building_energy.csv")
  t.match(err.message, "nope.csv")
  t.eq(#assert(sandbox.list(assert(sandbox.engine()))), before, "no container was created")
end)

t.test("numerical libraries get a thread per sandbox CPU, unless the recipe sets their variables", function()
  local s <close> = assert(sandbox.open{cpus = 1.5, env = {OMP_NUM_THREADS = 4}})
  local r = assert(s:exec("echo $OPENBLAS_NUM_THREADS $OMP_NUM_THREADS $MKL_NUM_THREADS"))
  t.eq(r.stdout, "2 4 2\n", "ceil(cpus) for BLAS and MKL; the recipe's own OMP_NUM_THREADS kept")
end)

t.test("exec: string and argv forms, exit codes, env, cwd, stdin", function()
  local r = ok_exec("echo out; echo err >&2; exit 3")
  t.eq(r.stdout, "out\n"); t.eq(r.stderr, "err\n"); t.eq(r.exit_code, 3)
  r = ok_exec({"printf", "%s|", "a b", "$HOME"})
  t.eq(r.stdout, "a b|$HOME|", "argv is not parsed by a shell")
  r = ok_exec("echo $GREETING; pwd", {env = {GREETING = "hi"}, cwd = "/tmp"})
  t.eq(r.stdout, "hi\n/tmp\n")
  r = ok_exec("wc -c", {stdin = ("x"):rep(100000)})
  t.eq(r.stdout:match("%d+"), "100000")
  r = ok_exec({"no-such-program"})
  t.ok(r.exit_code ~= 0)
end)

local function survivors(marker)
  -- processes whose command line carries the marker; the marker is split in
  -- this command's own text so it does not count itself
  local half = #marker // 2
  local r = ok_exec({"python3", "-c", ([[
import os
m = %q + %q
print(sum(1 for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()
          and m.encode() in open('/proc/%%s/cmdline' %% p, 'rb').read()))
]]):format(marker:sub(1, half), marker:sub(half + 1))})
  return tonumber(r.stdout)
end

t.test("an endless loop times out, is really stopped, the session goes on", function()
  local marker = "loop-" .. sys.random_hex(4)
  local r = ok_exec("sh -c 'while :; do :; done' " .. marker .. " & setsid sh -c 'while :; do :; done' "
    .. marker .. " & while :; do :; done", {timeout = 2})
  t.eq(r.timed_out, true)
  t.lt(r.duration, 8)
  t.eq(survivors(marker), 0, "no looping process survives, not even a setsid one")
  still_usable()
end)

t.test("a fork bomb is held by the pids cap and stopped", function()
  -- the sleep first, and the bomb in a subshell: the outer shell forks only
  -- before the bomb starts. A shell whose fork fails at the pids cap exits, so
  -- an outer shell forking while the bomb runs could end early (seen under load)
  -- and the race would decide whether the command timed out.
  local r = ok_exec("sleep 30 & (bomb() { bomb | bomb & }; bomb); wait", {timeout = 4})
  t.eq(r.timed_out, true)
  t.lt(r.duration, 25)
  still_usable()
end)

t.test("a memory bomb is reported as OOM-killed", function()
  local r = ok_exec({"python3", "-c", "x = bytearray(1024 * 1024 * 1024); print('allocated')"})
  t.eq(r.exit_code, 137)
  t.eq(r.oom_killed, true)
  t.eq(r.timed_out, false)
  still_usable()
  local again = ok_exec({"python3", "-c", "x = bytearray(1024 * 1024 * 1024)"})
  t.eq(again.oom_killed, true, "a second OOM in the same session is seen too")
  local killed = ok_exec("kill -9 $$")
  t.eq(killed.exit_code, 137); t.eq(killed.oom_killed, false, "a plain SIGKILL is not an OOM")
end, {skip_runtime = {runsc = "gVisor has no memory cgroup inside: a command over the cap is not OOM-killed "
  .. "alone, the whole sandbox ends (sandbox_restarted; sandbox/GVISOR.md)"}})

t.test("100 MB on stdout is truncated, head and tail kept", function()
  local r = ok_exec("echo FIRST; head -c 100000000 /dev/zero | tr '\\0' x; echo; echo LAST")
  t.eq(r.truncated, true)
  t.lt(#r.stdout, 1100000)
  t.match(r.stdout, "^FIRST\n")
  t.match(r.stdout, "LAST\n$")
  t.match(r.stdout, "bytes omitted by luagent")
  t.ok(r.stdout_bytes > 100000000, "the full size is reported")
  still_usable()
end)

t.test("no network: outbound connections fail", function()
  local r = ok_exec({"python3", "-c", [[
import socket
try:
    socket.create_connection(("1.1.1.1", 80), timeout=3)
    print("CONNECTED")
except OSError as e:
    print("refused:", e)
]]})
  t.no_match(r.stdout, "CONNECTED")
  t.match(r.stdout, "refused")
  if t.engine ~= "k8s" then -- (a pod always has the cluster's interface; the deny-all policy closes it: k8s_spec)
    local ifs = ok_exec("cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
    t.eq(ifs.stdout, "lo\n", "only the loopback interface")
  end
end)

t.test("locked down: read-only root, non-root, no capabilities, the supervisor as PID 1", function()
  local r = ok_exec("touch /usr/evil")
  t.ok(r.exit_code ~= 0)
  t.match(r.stderr, t.runtime == "runsc" and "Permission denied" or "Read%-only file system") -- gVisor says EACCES
  t.eq(ok_exec("id -u").stdout, "1000\n")
  local status = ok_exec("grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status").stdout
  t.match(status, "CapEff:%s+0000000000000000")
  t.match(status, "CapBnd:%s+0000000000000000")
  if t.runtime == "runsc" then -- gVisor's /proc/self/status has no NoNewPrivs line: asked with prctl
    status = ok_exec({"python3", "-c", "import ctypes; print('NoNewPrivs:', ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))"}).stdout
  end
  t.match(status, "NoNewPrivs:%s+1")
  t.eq(ok_exec("cat /proc/1/comm").stdout, "luagent-supervi\n", "the supervisor (its name cut at 15 bytes)")
  t.eq(ok_exec("touch /tmp/ok /workspace/ok && echo writable").stdout, "writable\n")
  local mem = ok_exec("cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"
    .. " 2>/dev/null || cat /sys/fs/cgroup/memory.max")
  if t.runtime == "runsc" and t.engine == "k8s" then -- no cgroup inside gVisor: the pod's limit holds it
    local ns = t.k8s_namespace
    local p = assert(assert(sandbox.engine()):call("GET", "/api/v1/namespaces/" .. ns .. "/pods/" .. box.container))
    mem.stdout = p.spec.containers[1].resources.limits.memory
  elseif t.runtime == "runsc" then -- no cgroup inside gVisor: the host's holds the whole sandbox
    mem.stdout = tostring(assert(assert(sandbox.engine()):call("GET", "/containers/" .. box.container .. "/json"))
      .HostConfig.Memory)
  end
  -- files in /tmp and the workspace are in RAM: the cgroup holds them on top
  t.match(mem.stdout, "^1073741824", "memory capped at 256m + tmp_size 256m + workspace_size 512m")
end)

t.test("the host's files and secrets are not visible", function()
  local marker = work .. "/host-only-" .. sys.random_hex(4)
  assert(fs.write(marker, "secret"))
  local r = ok_exec("cat " .. marker .. " 2>&1; cat /etc/hostname")
  t.match(r.stdout, "No such file")
  t.no_match(r.stdout, sys.hostname() .. "\n$")
  local secret = t.env("OPENAI_API_KEY")
  local env = ok_exec("env; cat /proc/1/environ | tr '\\0' '\\n'").stdout
  t.no_match(env, secret, "the host's API key")
  t.no_match(env, "OPENAI_API_KEY")
  t.raises(function() sandbox.open{env = {KEY = secret}} end, "API keys never enter a sandbox")
  t.raises(function() sandbox.open{env = {AUTH = "Bearer " .. secret}} end, "OPENAI_API_KEY")
  t.raises(function() sandbox.open{manifest = {["notes.md"] = sandbox.text("key: " .. secret)}} end, "manifest")
  t.raises(function() box:put("leak.txt", "x" .. secret) end, "API keys never enter")
  local refused, err = box:exec("echo " .. secret)
  t.eq(refused, nil); t.eq(err.kind, "refused"); t.no_match(err.message, secret)
  local _, perr = box:python("key = '" .. secret .. "'")
  t.eq(perr.kind, "refused")
  luagent.model.openai{model = "m", base_url = "http://127.0.0.1:9/v1", api_key = "sk-given-not-from-env-1234"}
  t.raises(function() sandbox.open{env = {K = "sk-given-not-from-env-1234"}} end, "API keys never enter",
           "a key given to a model is known too")
end)

t.test("extraction refuses links that leave the destination and writes nothing outside", function()
  ok_exec("mkdir -p output/sub && echo data > output/sub/ok.txt && ln -s /etc/passwd output/passwd"
    .. " && ln -s .. output/up && ln -s sub/ok.txt output/inside")
  local dest = work .. "/extract/dest"
  local report = assert(box:extract("output", dest))
  local refused = {}
  for _, r in ipairs(report.refused) do refused[r.name:gsub("^output/", "")] = r.reason end
  t.ok(refused.passwd, "symlink to /etc/passwd refused")
  t.ok(refused.up, "symlink to .. refused")
  t.eq(fs.read(dest .. "/sub/ok.txt"), "data\n")
  t.eq(fs.stat(dest .. "/inside").type, "link", "a link that stays inside is kept")
  t.same(fs.list(work .. "/extract"), {"dest"}, "nothing beside the destination")
end)

t.test("extraction limits: a huge sparse file is refused, the rest comes home", function()
  ok_exec("mkdir -p big && truncate -s 300M big/huge.bin && echo small > big/small.txt")
  local dest = work .. "/limits/dest"
  local report = assert(box:extract("big", dest, {max_bytes = 10 * 1024 * 1024}))
  t.eq(fs.read(dest .. "/small.txt"), "small\n")
  t.eq(fs.exists(dest .. "/huge.bin"), false)
  t.eq(#report.refused, 1); t.match(report.refused[1].reason, "extraction limit")
  local s <close> = assert(sandbox.open{max_extract = 1024 * 1024})
  assert(s:exec("truncate -s 50M sparse.bin"))
  local bytes, err = s:snapshot(work .. "/limits/too-big.tar")
  t.eq(bytes, nil); t.match(err.message, "larger than the limit")
  t.same(fs.list(work .. "/limits"), {"dest"}, "no half snapshot is left behind")
  ok_exec("rm -rf big")
end)

t.test("box:get of a folder is an error, not its first file", function()
  ok_exec("mkdir -p folder && echo inside > folder/a.txt")
  local v, err = box:get("folder")
  t.eq(v, nil); t.eq(err.kind, "not_a_file"); t.match(err.message, "folder")
end)

t.test("python calls wait their turn; a call's timeout counts only its own running time", function()
  local slow = luagent.spawn(function() return box:python("import time; time.sleep(1.2); print('slow')", {timeout = 5}) end)
  luagent.sleep(0.1)
  local quick = assert(box:python("print('quick')", {timeout = 1}))
  t.eq(quick.stdout, "quick\n"); t.eq(quick.timed_out, false); t.eq(quick.restarted, false)
  t.eq(slow:wait().stdout, "slow\n")
end)

t.test("outputs declared with save are brought home on close, e.g. after an error", function()
  local dest = work .. "/saved/output"
  local s = assert(sandbox.open{save = {from = "output", to = dest, required = {"output/result.txt"}}})
  assert(s:exec("mkdir -p output && echo 42 > output/result.txt"))
  assert(s:close()) -- as <close> does when the recipe fails before collecting
  t.eq(fs.read(dest .. "/result.txt"), "42\n")
  t.match(fs.read(work .. "/saved/manifest.json"), "output/result.txt")
end)

t.test("a hostile snapshot is refused entry by entry on restore", function()
  local evil = work .. "/evil.tar"
  local code, out = sys.execute({"python3", "-c", [[
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    def add(name, data=b"x", **kw):
        info = tarfile.TarInfo(name); info.size = len(data)
        for k, v in kw.items(): setattr(info, k, v)
        t.addfile(info, io.BytesIO(data) if info.isreg() else None)
    add("workspace/ok.txt", b"kept\n")
    add("workspace/../evil", b"escaped\n")
    add("/abs-evil", b"escaped\n")
    add("workspace/link", type=tarfile.SYMTYPE, linkname="/etc/passwd", size=0)
    add("workspace/dev", type=tarfile.CHRTYPE, devmajor=1, devminor=3, size=0)
]], evil})
  t.eq(code, 0, out)
  local s <close> = assert(sandbox.open{restore = evil})
  t.eq(assert(s:get("ok.txt")), "kept\n")
  t.eq(#s.restored.refused, 4)
  local r = assert(s:exec("find /workspace -mindepth 1 -maxdepth 1 -printf '%f\\n'")) -- not ls: statx under gVisor
  t.eq(r.stdout, "ok.txt\n")
  local dest = work .. "/restore-check/dest"
  local report = assert(tar.extract(evil, dest, {strip = "workspace"}))
  t.eq(#report.refused, 4)
  t.same(fs.list(work .. "/restore-check"), {"dest"})
end)

t.test("snapshot and restore carry a workspace over", function()
  ok_exec("mkdir -p state && echo 42 > state/answer")
  local snap = work .. "/ws.tar"
  t.ok(assert(box:snapshot(snap)) > 0)
  local s <close> = assert(sandbox.open{restore = snap})
  t.eq(assert(s:get("state/answer")), "42\n")
end)

t.test("python keeps its variables and imports between calls", function()
  local r = assert(box:python("import json\ncounter = 41"))
  t.eq(r.exit_code, 0); t.eq(r.persistent, true)
  r = assert(box:python("counter += 1\njson.dumps({'counter': counter})"))
  t.eq(r.stdout, "'{\"counter\": 42}'\n", "the last expression is printed")
  r = assert(box:python("print('before'); undefined_name"))
  t.eq(r.exit_code, 1); t.eq(r.stdout, "before\n")
  t.match(r.stderr, "NameError: name 'undefined_name' is not defined")
  t.no_match(r.stderr, "runner", "the traceback shows the user's code only")
  r = assert(box:python("import subprocess\n_ = subprocess.run(['echo', 'from a child'])"))
  t.eq(r.stdout, "from a child\n", "output of child processes is captured too")
end)

t.test("a python call that hangs is killed; the next call says its state was lost", function()
  assert(box:python("kept = 'value'"))
  local r = assert(box:python("import time\nwhile True: time.sleep(0.01)", {timeout = 1}))
  t.eq(r.timed_out, true)
  r = assert(box:python("print('kept' in globals())"))
  t.eq(r.stdout, "False\n"); t.eq(r.state_lost, true)
  r = assert(box:python("print(1)"))
  t.eq(r.state_lost, false)
end)

t.test("a command cannot kill the supervisor: it runs as another uid", function()
  local r = ok_exec([[for f in /proc/[0-9]*/cmdline; do
    case "$(tr '\0' ' ' < $f 2>/dev/null)" in /run/luagent/luagent-supervisor*)
      p=${f%/cmdline}; kill -9 ${p#/proc/} 2>/dev/null && echo killed;; esac
  done; echo done]])
  t.eq(r.stdout, "done\n", "no supervisor process could be killed")
  t.eq(box._session.restarts, 0, "the supervisor never restarted")
  still_usable()
end)

t.test("in an image without Python (busybox) the limits hold too", function()
  local code, out = sys.execute({"sh", "tools/busybox-image.sh", "luagent-busybox:test"})
  t.eq(code, 0, out)
  local s <close> = assert(sandbox.open{image = "luagent-busybox:test", memory = "128m", workspace_size = "64m",
                                        tmp_size = "16m"})
  local r = assert(s:exec("echo $((6 * 7)); cat", {stdin = "in"}))
  t.eq(r.stdout, "42\nin")
  r = assert(s:exec("sleep 60 & sleep 60", {timeout = 1}))
  t.eq(r.timed_out, true); t.lt(r.duration, 6)
  if t.runtime ~= "runsc" then -- gVisor: no memory cgroup inside, the sandbox would end (sandbox/GVISOR.md)
    r = assert(s:exec({"sh", "-c", "x=0123456789abcdef; while :; do x=$x$x; done"}))
    t.eq(r.oom_killed, true); t.eq(r.exit_code, 137)
  end
  r = assert(s:exec("head -c 5000000 /dev/zero", {max_output = 1000}))
  t.eq(r.truncated, true); t.lt(#r.stdout, 1200)
  r = assert(s:python("print(6 * 7)"))
  t.eq(r.exit_code, 127); t.match(r.stderr, "python3"); t.eq(r.persistent, false)
end)

t.test("workspace_size = false: an uncapped disk volume, kept when the container restarts", function()
  local s <close> = assert(sandbox.open{workspace_size = false, memory = "256m"})
  local mem = assert(s:exec("cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max"))
  if t.runtime == "runsc" then -- no cgroup inside gVisor: the host's holds the whole sandbox
    mem.stdout = tostring(assert(assert(sandbox.engine()):call("GET", "/containers/" .. s.container .. "/json"))
      .HostConfig.Memory)
  end
  t.match(mem.stdout, "^536870912", "memory 256m + tmp_size 256m: no workspace in RAM")
  t.no_match(assert(s:exec("df /workspace | tail -1")).stdout, "^tmpfs", "a disk volume")
  assert(s:exec("echo mine > kept.txt"))
  local client = assert(sandbox.engine())
  assert(client:call("POST", "/containers/" .. s.container .. "/kill"))
  luagent.sleep(0.5)
  local r, err = s:exec("cat kept.txt")
  t.eq(r, nil); t.eq(err.kind, "sandbox_restarted"); t.eq(err.restarted, "container")
  t.match(err.message, "volume is kept")
  t.eq(assert(s:exec("cat kept.txt")).stdout, "mine\n")
end, {skip_engine = {k8s = "it kills the container through Docker's API; k8s_spec deletes a pod under a "
  .. "command, and a disk emptyDir outlives a container restart by Kubernetes' own design"}})

t.test("put and get, and a clear error for a missing file", function()
  assert(box:put("deep/dir/file.txt", "hello"))
  t.eq(assert(box:get("/workspace/deep/dir/file.txt")), "hello")
  local v, err = box:get("missing.txt")
  t.eq(v, nil); t.eq(err.kind, "not_found"); t.match(err.message, "missing.txt")
  t.raises(function() box:put("../outside", "x") end, "'%.%.'")
end)

t.test("two sessions run commands concurrently", function()
  -- each command says when it began and ended (the containers share the host's clock):
  -- the two 1 s commands overlap in time, however loaded the machine is
  local results, errors = luagent.map({1, 2}, function(i)
    local s <close> = assert(sandbox.open{})
    return assert(s:exec("date +%s.%N; sleep 1; echo " .. i .. "; date +%s.%N")).stdout
  end)
  t.eq(errors, nil)
  local spans = {}
  for i, out in ipairs(results) do
    local began, n, ended = out:match("^(%S+)\n(%d)\n(%S+)\n$")
    t.eq(tonumber(n), i, out)
    spans[i] = {tonumber(began), tonumber(ended)}
  end
  t.ok(spans[1][1] < spans[2][2] and spans[2][1] < spans[1][2],
       ("the two commands ran at the same time: %.2f-%.2f and %.2f-%.2f"):format(spans[1][1], spans[1][2],
                                                                                 spans[2][1], spans[2][2]))
end)

t.test("close removes the container and its workspace volume", function()
  local client = assert(sandbox.engine())
  local s = assert(sandbox.open{})
  local id, volume = s.container, s.volume
  assert(s:close())
  t.ok(s:close(), "closing twice is fine")
  local _, err = client:call("GET", "/containers/" .. id .. "/json")
  t.eq(err.kind, "not_found")
  local _, verr = client:call("GET", "/volumes/" .. volume)
  t.eq(verr.kind, "not_found")
  local r, cerr = s:exec("true")
  t.eq(r, nil); t.eq(cerr.kind, "closed"); t.match(cerr.message, "closed")
end, {skip_engine = {k8s = "a container and a volume are Docker's; k8s_spec: closing removes the pod "
  .. "(its emptyDirs go with it)"}})

t.test("a box nobody closes is left alone by the garbage collector (close_all removes it at the end)", function()
  local client = assert(sandbox.engine())
  local function forget() -- the box is unreachable once this returns
    local forgotten = assert(sandbox.open{})
    assert(forgotten:exec("true"))
    return forgotten.container
  end
  local id = forget()
  local calls, real = 0, client.call
  client.call = function(...) calls = calls + 1 return real(...) end
  collectgarbage()
  collectgarbage()
  client.call = nil
  t.eq(calls, 0, "engine calls made while collecting garbage")
  t.eq(assert(client:call("GET", "/containers/" .. id .. "/json")).State.Running, true, "the container still runs")
end, {skip_engine = {k8s = "it reads the container from Docker's API; a pod left alone until close_all: "
  .. "k8s_spec's sandbox ls and close"}})

t.test("bad options raise naming the option", function()
  t.raises(function() sandbox.open{memory = "lots"} end, "memory")
  t.raises(function() sandbox.open{pids = -1} end, "pids")
  t.raises(function() sandbox.open{user = "0:0"} end, "never run as root")
  t.raises(function() sandbox.open{user = "0:1000"} end, "never run as root")
  t.raises(function() sandbox.open{cap_add = {"NET_ADMIN"}} end, "cap_add")
  t.raises(function() sandbox.open{command = {"sleep", "1"}} end, "box:spawn")
  t.raises(function() sandbox.open{workspace_size = "lots"} end, "workspace_size")
  t.raises(function() box:exec(42) end, "cmd")
end)

t.test("an unreachable engine is one clear error naming the socket and the fix", function()
  local s, err = sandbox.open{docker_host = "unix://" .. work .. "/no-docker.sock"}
  t.eq(s, nil)
  t.eq(err.kind, "docker_unreachable")
  t.match(err.message, "no%-docker%.sock")
  t.match(err.message, "dockerd")
end)

box:close()
return t.done()

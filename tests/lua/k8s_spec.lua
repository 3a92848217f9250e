-- needs: k8s
-- Sessions as pods on a real Kubernetes cluster (tests/k8s.sh, started by
-- tests/run's kubernetes phase: KUBECONFIG and LUAGENT_TEST_K8S set): what is
-- Kubernetes' own — the Pod as the API server holds it, what a command sees
-- inside it, the Lease that owns the pods, a killed luagent's pods, the warm
-- pool's claim, and the faults a cluster has. The behaviours a session shares
-- with Docker run here too: the sandbox specs, in the same phase.
local t = require "helper"
local sandbox, fs, sys = luagent.sandbox, luagent.fs, luagent.sys
local process = require "luagent.process"

local K8S = t.env("LUAGENT_TEST_K8S")
local LUAGENT = os.getenv("LUAGENT") or "./luagent"
local engines = {K8S}
local client = assert(sandbox.engine{engines = engines})
local NS = client.namespace
local work = assert(fs.temp_dir("luagent-k8s-spec"))
luagent.at_exit(function() fs.remove(work) end)

local function open(opts)
  opts = opts or {}
  opts.engines = opts.engines or engines
  local box, err = sandbox.open(opts)
  if not box then error("sandbox.open: " .. tostring(err), 2) end
  return box
end

local function ok_exec(box, cmd, opts)
  local r, err = box:exec(cmd, opts)
  if not r then error("exec failed: " .. tostring(err), 2) end
  return r
end

-- Runs luagent with more environment (and stdin): {status, stdout, stderr}.
local function run_luagent(args, env, stdin)
  local full = process.environ()
  for k, v in pairs(env or {}) do full[k] = v end
  local argv = {LUAGENT}
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local proc = assert(process.spawn{argv = argv, env = full, stdin = stdin and "pipe" or "null", stdout = "pipe",
                                    stderr = "pipe"})
  if stdin then proc:write(stdin) proc:close_stdin() end
  local out, errs = {}, {}
  local reader = luagent.spawn(function()
    while true do
      local chunk = proc:read("stderr")
      if not chunk then return end
      errs[#errs + 1] = chunk
    end
  end)
  while true do
    local chunk = proc:read("stdout")
    if not chunk then break end
    out[#out + 1] = chunk
  end
  reader:wait()
  local status = proc:wait()
  proc:close()
  return {status = status, stdout = table.concat(out), stderr = table.concat(errs)}
end

local function get_pod(name)
  return client:call("GET", "/api/v1/namespaces/" .. NS .. "/pods/" .. name)
end

-- Polls until fn() is true, at most seconds: true | false.
local function eventually(seconds, fn)
  local deadline = luagent.now() + seconds
  while luagent.now() < deadline do
    if fn() then return true end
    luagent.sleep(0.5)
  end
  return fn() and true or false
end

local box = open({memory = "256m", tmp_size = "64m", workspace_size = "128m"})

t.test("a session is a Pod: the supervisor PID 1 as root with four capabilities, no token, a deadline, its Lease",
  function()
  local p = assert(get_pod(box.container))
  local c = p.spec.containers[1]
  t.same(c.command, {"/run/luagent/luagent-supervisor", "init"})
  t.same(c.securityContext.capabilities, {drop = {"ALL"}, add = {"SETUID", "SETGID", "KILL", "SETPCAP"}})
  t.eq(c.securityContext.allowPrivilegeEscalation, false)
  t.eq(c.securityContext.readOnlyRootFilesystem, true)
  t.eq(p.spec.automountServiceAccountToken, false)
  t.eq(p.spec.enableServiceLinks, false)
  t.eq(p.spec.securityContext.seccompProfile.type, "RuntimeDefault")
  t.eq(p.spec.activeDeadlineSeconds, 86400)
  t.eq(c.resources.limits.memory, tostring((256 + 64 + 128) * 1024 * 1024))
  t.eq(p.metadata.labels.luagent, "1")
  t.eq(p.metadata.labels["luagent.network"], "none")
  local owner = p.metadata.ownerReferences[1]
  t.eq(owner.kind, "Lease")
  local lease = assert(client:call("GET", "/apis/coordination.k8s.io/v1/namespaces/" .. NS .. "/leases/" .. owner.name))
  t.eq(lease.metadata.uid, owner.uid, "the pod's owner is this process's Lease")
  t.match(lease.spec.holderIdentity, "pid " .. sys.pid())
end)

t.test("inside: commands run as 1000 with no capability, no_new_privs, seccomp, and nothing of the cluster", function()
  local r = ok_exec(box, [[id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status
    ls /var/run/secrets/kubernetes.io 2>&1 | head -1; env | grep -c '^KUBERNETES_' || true]])
  local lines = {}
  for line in r.stdout:gmatch("[^\n]+") do lines[#lines + 1] = line end
  t.eq(lines[1], "1000")
  t.match(r.stdout, "CapEff:%s+0000000000000000")
  t.match(r.stdout, "CapBnd:%s+0000000000000000")
  t.match(r.stdout, "NoNewPrivs:%s+1")
  t.match(r.stdout, "Seccomp:%s+2", "the runtime's default seccomp filter")
  t.match(r.stdout, "No such file or directory", "no service account token mounted")
  t.eq(lines[#lines], "0", "no KUBERNETES_* variable reaches a command")
end)

t.test("the root is read-only, /tmp and the workspace are capped in memory, PID 1 is out of reach", function()
  local r = ok_exec(box, [[touch /etc/x 2>&1; dd if=/dev/zero of=/tmp/fill bs=1M count=100 2>&1 | grep -c 'No space'
    dd if=/dev/zero of=/workspace/fill bs=1M count=200 2>&1 | grep -c 'No space'; rm -f /tmp/fill /workspace/fill
    df -k /workspace /tmp | tail -2; kill -9 1 2>&1; head -c 1 /proc/1/mem > /dev/null 2>&1 || echo mem denied]])
  t.match(r.stdout, "Read%-only file system")
  t.match(r.stdout, "system\n1\n1\n", "both caps hold: ENOSPC, not an eviction")
  t.match(r.stdout, "tmpfs%s+131072 .*/workspace")
  t.match(r.stdout, "tmpfs%s+65536 .*/tmp")
  t.match(r.stdout, "Operation not permitted")
  t.match(r.stdout, "mem denied")
  t.match(ok_exec(box, "echo still").stdout, "still", "the session goes on")
end)

t.test("no network: nothing of the cluster or the host can be reached, and the deny-all policy is there", function()
  local r = ok_exec(box, [[python3 - <<'PY'
import socket
for host, port in [("10.89.0.1", 22), ("10.89.0.2", 6443), ("10.88.0.1", 10250)]:
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((host, port)); print("reached", host)
    except OSError as e:
        print("refused", host, type(e).__name__)
PY]], {timeout = 30})
  t.no_match(r.stdout, "reached")
  local np = assert(client:call("GET", "/apis/networking.k8s.io/v1/namespaces/" .. NS .. "/networkpolicies/luagent-deny-all"))
  t.same(np.spec.podSelector.matchLabels, {["luagent.network"] = "none"})
  t.same(np.spec.policyTypes, {"Ingress", "Egress"})
end)

t.test("files go in through the supervisor's unpack and come back through its pack, as the command user", function()
  local big = work .. "/big.bin"
  local f = assert(io.open(big, "wb"))
  for i = 1, 40 do f:write(("%07d"):format(i):rep(16384)) end -- 4.5 MB, not one repeated block
  f:close()
  local s <close> = open({manifest = {["in/big.bin"] = sandbox.file(big), ["in/note.txt"] = sandbox.text("hi\n")}})
  local r = ok_exec(s, "sha256sum in/big.bin; stat -c '%u:%g %a' in/note.txt; cat in/note.txt")
  t.match(r.stdout, sys.sha256(assert(fs.read(big))))
  t.match(r.stdout, "1000:1000 644")
  t.match(r.stdout, "hi\n")
  local report = assert(s:extract("in", work .. "/back"))
  t.eq(#report.refused, 0)
  t.eq(fs.read(work .. "/back/big.bin"), fs.read(big))
end)

t.test("a pod no node can hold: one error with the scheduler's words, at once, and no pod left", function()
  local started = luagent.now()
  local none, err = sandbox.open{engines = engines, memory = "900g", capacity_wait = 600}
  t.eq(none, nil)
  t.eq(err.kind, "capacity")
  t.match(err.message, "Insufficient memory")
  t.match(err.message, "no node of the Kubernetes cluster has room")
  t.lt(luagent.now() - started, 60, "not the capacity_wait: no node could ever hold it")
  local left = client:call("GET", "/api/v1/namespaces/" .. NS .. "/pods", nil,
                           {query = {labelSelector = "luagent=1"}})
  for _, p in ipairs(left.items) do t.ok(p.metadata.name == box.container or p.metadata.deletionTimestamp,
    "left: " .. p.metadata.name) end
end)

t.test("an image the node does not have and may not pull: not_found naming it", function()
  local none, err = sandbox.open{engines = {K8S .. "&pull=Never"}, image = "luagent-missing:1"}
  t.eq(none, nil)
  t.eq(err.kind, "not_found")
  t.match(err.message, "luagent%-missing:1")
  t.match(err.message, "ErrImageNeverPull")
end)

t.test("an image from a registry that does not answer (127.0.0.1:1): not_found with the pull's words", function()
  local none, err = sandbox.open{engines = engines, image = "127.0.0.1:1/luagent/missing:1"}
  t.eq(none, nil)
  t.eq(err.kind, "not_found")
  t.match(err.message, "ErrImagePull")
  t.match(err.message, "127%.0%.0%.1:1")
end)

t.test("an API server that does not answer: cluster_unreachable at once, naming it", function()
  local port = 1 -- nothing listens on 127.0.0.1:1
  local kubeconfig = work .. "/dead.kubeconfig"
  assert(fs.write(kubeconfig, ([[
apiVersion: v1
kind: Config
clusters: [{name: dead, cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: dead, context: {cluster: dead, user: u, namespace: x}}]
current-context: dead
]]):format(port)))
  assert(fs.write(work .. "/dead.lua", [[
local box, err = luagent.sandbox.open{engines = {"k8s://dead"}}
print(err and err.kind, err and err.message)]]))
  local r = run_luagent({"run", "-q", work .. "/dead.lua"}, {KUBECONFIG = kubeconfig})
  t.match(r.stdout, "^cluster_unreachable\t")
  t.match(r.stdout, "127%.0%.0%.1:" .. port)
end)

t.test("a pod deleted under a command: sandbox_restarted saying so, a new pod with the manifest staged again",
  function()
  local s <close> = open({manifest = {["in/a.txt"] = sandbox.text("a\n")}})
  local first = s._session.container
  ok_exec(s, "echo later > in/b.txt")
  local running = luagent.spawn(function() return s:exec("sleep 30") end)
  luagent.sleep(1)
  assert(client:call("DELETE", "/api/v1/namespaces/" .. NS .. "/pods/" .. first, nil,
                     {query = {gracePeriodSeconds = 0}}))
  local r, err = running:wait()
  t.eq(r, nil)
  t.eq(err.kind, "sandbox_restarted")
  t.match(err.message, "the pod was deleted")
  t.ok(s._session.container ~= first, "a new pod")
  t.eq(ok_exec(s, "cat in/a.txt; ls in").stdout, "a\na.txt\n", "staged again; what came later is gone")
end)

t.test("a killed luagent's pods: their deadline bounds them, and the next sweep removes them at once", function()
  local script = work .. "/orphan.lua"
  assert(fs.write(script, ([[
local box = assert(luagent.sandbox.open{engines = {%q}})
print(box.container); io.stdout:flush()
luagent.sleep(600)]]):format(K8S)))
  local proc = assert(process.spawn{argv = {LUAGENT, "run", "-q", script}, stdout = "pipe"})
  local line = ""
  while not line:find("\n") do line = line .. assert(proc:read("stdout"), "the orphan's pod name") end
  local name = line:match("^(%S+)")
  proc:kill("KILL")
  proc:wait()
  proc:close()
  local p = assert(get_pod(name))
  t.eq(p.spec.activeDeadlineSeconds, 86400)
  local r = run_luagent({"sandbox", "prune"}, {LUAGENT_ENGINES = K8S})
  t.eq(r.status, 0, r.stderr)
  t.ok(eventually(60, function()
    local q = get_pod(name)
    return q == nil or q.metadata.deletionTimestamp ~= nil
  end), "the orphan's pod is gone")
end)

t.test("a warm pool's pod another process claimed first is never handed out here", function()
  local _pool <close> = assert(sandbox.pool{size = 2, engines = engines, memory = "128m"})
  local ready = {}
  local list = client:call("GET", "/api/v1/namespaces/" .. NS .. "/pods", nil,
                           {query = {labelSelector = "luagent.pool"}})
  for _, p in ipairs(list.items) do
    if not p.metadata.deletionTimestamp then ready[#ready + 1] = p.metadata.name end
  end
  t.eq(#ready, 2)
  -- another process's claim: the label patch on the pod's resourceVersion
  local taken = assert(get_pod(ready[1]))
  assert(client:call("PATCH", "/api/v1/namespaces/" .. NS .. "/pods/" .. ready[1],
    {metadata = {resourceVersion = taken.metadata.resourceVersion, labels = {["luagent.claimed"] = "another"}}},
    {patch = "merge"}))
  local a <close> = open({memory = "128m"})
  local b <close> = open({memory = "128m"})
  t.ok(a.container ~= ready[1] and b.container ~= ready[1], "the claimed pod is not used here")
  t.ok(a.pooled or b.pooled, "the other warm pod was")
  t.eq(get_pod(ready[1]).metadata.labels["luagent.claimed"], "another")
end)

t.test("sandbox ls lists the pods with their engine", function()
  local r = run_luagent({"sandbox", "ls"}, {LUAGENT_ENGINES = K8S})
  t.eq(r.status, 0, r.stderr)
  t.match(r.stdout, box.session)
end)

box:close()
t.test("closing removes the pod; the process's end deletes its Lease", function()
  t.ok(eventually(30, function()
    local p = get_pod(box.container)
    return p == nil or p.metadata.deletionTimestamp ~= nil
  end), "the pod is gone")
end)

return t.done()

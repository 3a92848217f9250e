-- needs: k8s
-- The supervisor channel over a Kubernetes exec: engine_stream.supervisor{websocket = true}
-- to `luagent-supervisor serve` in a pod, through the API server's exec WebSocket
-- (src/core/websocket.c, kube_exec.c, attach.c), with the options luagent.kube.client's
-- stream_options makes. Everything above the channel is luagent.sandbox.supervisor's,
-- unchanged. Needs the test cluster (eval "$(tests/k8s.sh env)": LUAGENT_TEST_K8S,
-- KUBECONFIG) with luagent-sandbox:latest in it. Everything happens in a namespace of its
-- own — a pod that looks like a sandbox (the supervisor from a ConfigMap, PID 1 `init`) —
-- deleted at the end.
local t = require "helper"
local config = require "luagent.kube.config"
local engine_stream = require "luagent.engine_stream"
local fs = require "luagent.fs"
local kube = require "luagent.kube.client"
local supervisor = require "luagent.sandbox.supervisor"
local sys = require "luagent.sys"
local tar = require "luagent.tar"

local SPEC = "k8s_exec_stream_spec"
local target = os.getenv("LUAGENT_TEST_K8S")
if not target or target == "" then
  print(("# skip - %s: needs the test cluster (eval \"$(tests/k8s.sh env)\": LUAGENT_TEST_K8S, KUBECONFIG)")
    :format(SPEC))
  return 0
end
local ADMIN = assert(config.load(target:match("^k8s://([^?]+)")))
local NS = "luagent-ws-spec-" .. sys.random_hex(4)
local POD = "sandbox-ws"
local client = assert(kube.connect(ADMIN))

local function ns_path(rest) return "/api/v1/namespaces/" .. NS .. rest end

local function escape(s)
  return (s:gsub("[^%w%-%._~/]", function(c) return ("%%%02X"):format(c:byte()) end))
end

-- The options of engine_stream.supervisor for an exec of argv in pod (of NS).
local function exec_options(pod, argv, extra, via)
  local query = {"container=sandbox"}
  for _, arg in ipairs(argv) do query[#query + 1] = "command=" .. escape(arg) end
  query[#query + 1] = "stdin=true&stdout=true&stderr=true"
  local opts = (via or client):stream_options(ns_path(("/pods/%s/exec?%s"):format(pod, table.concat(query, "&"))),
    {timeout = 20})
  for k, v in pairs(extra or {}) do opts[k] = v end
  return opts
end

local SERVE = {supervisor.PATH, "serve", "1000:1000"}

-- ---- a pod like a sandbox ----

local function sandbox_pod(name)
  return {apiVersion = "v1", kind = "Pod", metadata = {name = name, labels = {["luagent.test"] = SPEC}},
    spec = {automountServiceAccountToken = false, enableServiceLinks = false, terminationGracePeriodSeconds = 1,
      containers = {{name = "sandbox", image = "luagent-sandbox:latest", imagePullPolicy = "Never",
        command = {supervisor.PATH, "init"},
        securityContext = {runAsUser = 0, readOnlyRootFilesystem = true, allowPrivilegeEscalation = false,
          capabilities = {drop = {"ALL"}, add = {"SETUID", "SETGID", "KILL", "SETPCAP"}}},
        volumeMounts = {{name = "supervisor", mountPath = supervisor.HOME},
          {name = "workspace", mountPath = "/workspace"}, {name = "tmp", mountPath = "/tmp"}}}},
      volumes = {{name = "supervisor", configMap = {name = "luagent-supervisor", defaultMode = 365}},
        {name = "workspace", emptyDir = {}}, {name = "tmp", emptyDir = {}}}}}
end

local function wait_running(name)
  local deadline = luagent.now() + 60
  while luagent.now() < deadline do
    local pod = assert(client:call("GET", ns_path("/pods/" .. name)))
    if pod.status and pod.status.phase == "Running" then return end
    luagent.sleep(0.2)
  end
  error("pod " .. name .. " did not run within 60 s")
end

local function setup()
  assert(client:call("POST", "/api/v1/namespaces", {metadata = {name = NS, labels = {["luagent.test"] = SPEC}}}))
  assert(client:call("POST", ns_path("/configmaps"), {metadata = {name = "luagent-supervisor"},
    binaryData = {["luagent-supervisor"] = sys.base64(assert(sys.asset(supervisor.ASSET)))}}))
  assert(client:call("POST", ns_path("/pods"), sandbox_pod(POD)))
  wait_running(POD)
end

local function teardown()
  client:call("DELETE", "/api/v1/namespaces/" .. NS)
end

-- A supervisor handle (luagent.sandbox.supervisor's class) on a channel.
local function attach(pod)
  local channel, err = engine_stream.supervisor(exec_options(pod or POD, SERVE))
  if not channel then error(tostring(err), 2) end
  return setmetatable({channel = channel, next_id = 0}, supervisor.Supervisor)
end

local function run(ex, job, seconds)
  assert(ex:send(job.op or "run", job))
  t.eq(ex:wait(job, seconds or 30), true, "it ended in time")
  return ex:result(job)
end

local function pattern(n)
  local piece = {}
  for i = 0, 255 do piece[#piece + 1] = string.char((i * 7 + 3) % 256) end
  piece = table.concat(piece) .. sys.random_hex(32)
  return piece:rep(n // #piece + 1):sub(1, n)
end

-- ---- the specs ----

local ok, failure = pcall(setup)
if not ok then
  print(("not ok - %s: a pod with the supervisor in namespace %s"):format(SPEC, NS))
  io.stderr:write("    ", tostring(failure), "\n")
  pcall(teardown)
  return 1
end

local ex
t.test("serve answers over the exec WebSocket, and a command runs", function()
  ex = attach()
  t.eq(ex:alive(), true)
  t.match(tostring(ex.channel), "open")
  local r = run(ex, {argv = {"sh", "-c", "echo hi; id -u"}})
  t.eq(r.stdout, "hi\n1000\n")
  t.eq(r.exit_code, 0)
end)

t.test("run: 2 MiB of stdin through cat comes back intact", function()
  local data = pattern(2 * 1024 * 1024)
  local r = run(ex, {argv = {"cat"}, stdin = data, max_output = #data + 1})
  t.eq(#r.stdout, #data)
  t.ok(r.stdout == data, "the same bytes")
  t.eq(r.exit_code, 0)
end)

t.test("stderr and exit codes", function()
  local r = run(ex, {argv = {"sh", "-c", "echo out; echo oops >&2; exit 7"}})
  t.eq(r.stdout, "out\n")
  t.eq(r.stderr, "oops\n")
  t.eq(r.exit_code, 7)
  r = run(ex, {argv = {"/no/such/program"}})
  t.ok(r.exit_code ~= 0, "a program that is not there fails")
end)

t.test("pack: a few MB stream back intact, saved and paced by a slow reader", function()
  local data = pattern(3 * 1024 * 1024 + 17)
  t.eq(run(ex, {argv = {"sh", "-c", "mkdir -p /workspace/pk && cat > /workspace/pk/big"}, stdin = data}).exit_code, 0)
  local dir = assert(fs.temp_dir("luagent-k8s-pack"))
  local saved = run(ex, {op = "pack", path = "/workspace/pk", max_bytes = 0, max_entries = 0, save = dir .. "/a.tar"})
  t.eq(saved.exit_code, 0)
  t.ok(saved.saved and saved.saved > #data, "the tar was saved")
  assert(tar.extract(dir .. "/a.tar", dir .. "/a", {strip = "pk"}))
  t.ok(fs.read(dir .. "/a/big") == data, "the saved pack holds the same bytes")
  local window = 65536
  local job = {op = "pack", path = "/workspace/pk", max_bytes = 0, max_entries = 0, window = window}
  assert(ex:send("pack", job))
  local parts, largest = {}, 0
  local streamed, err = pcall(function()
    repeat
      local ended, lost = ex:wait(job, 30, true) -- false: output came
      if ended == nil then error(tostring(lost)) end
      local out = ex:take(job)
      largest = math.max(largest, #out)
      parts[#parts + 1] = out
      luagent.sleep(0.002) -- a slow reader: the channel stops reading meanwhile
    until ended
  end)
  local r = ex:result(job) -- forgotten either way: the channel reads again
  assert(streamed, err)
  t.eq(r.exit_code, 0)
  t.ok(largest < window + 2 * 65536, ("each take is about a window (largest %d)"):format(largest))
  fs.write(dir .. "/b.tar", table.concat(parts))
  assert(tar.extract(dir .. "/b.tar", dir .. "/b", {strip = "pk"}))
  t.ok(fs.read(dir .. "/b/big") == data, "the streamed pack holds the same bytes")
  fs.remove(dir)
end)

t.test("4 commands at once share the channel", function()
  local started = luagent.now()
  local tasks = {}
  for i = 1, 4 do
    tasks[i] = luagent.spawn(function() return run(ex, {argv = {"sh", "-c", "sleep 0.5; echo " .. i}}) end)
  end
  local results, failed = luagent.wait_all(tasks)
  t.eq(failed, nil, "every task ran")
  for i = 1, 4 do t.eq(results[i].stdout, i .. "\n") end
  t.lt(luagent.now() - started, 1.5, "they ran side by side")
end)

t.test("kill: a running command is killed on request", function()
  local job = {argv = {"sleep", "30"}}
  assert(ex:send("run", job))
  t.eq(ex:wait(job, 0.3), false, "it runs")
  assert(ex:kill(job))
  t.eq(ex:wait(job, 10), true, "it ended")
  local r = ex:result(job)
  t.match(r.flags, "k")
  t.eq(ex:alive(), true, "the channel goes on")
  t.eq(run(ex, {argv = {"true"}}).exit_code, 0)
end)

t.test("an exec into a pod that is not there: kind kubernetes, naming the pod", function()
  local channel, err = engine_stream.supervisor(exec_options("no-such-pod", SERVE))
  t.eq(channel, nil)
  t.eq(err.kind, "kubernetes")
  t.eq(err.status, 404)
  t.match(err.message, 'pods "no%-such%-pod" not found')
  t.match(err.message, "the Kubernetes API server at https://")
end)

t.test("a CA that did not sign the API server's certificate: kind tls", function()
  local not_the_ca = ADMIN.tls.cert_pem or assert(fs.read(ADMIN.tls.cert_file)) -- a certificate it did not sign
  local opts = exec_options(POD, SERVE, {ca_pem = not_the_ca})
  opts.ca_file = nil
  local _, err = engine_stream.supervisor(opts)
  t.eq(err and err.kind, "tls")
  t.match(err.message, "TLS with the Kubernetes API server at https://")
end)

t.test("an address where nothing listens: kind cluster_unreachable", function()
  local opts = exec_options(POD, SERVE, {connect_timeout = 5})
  opts.url = opts.url:gsub("^https://[^/]+", "https://127.0.0.1:1")
  local _, err = engine_stream.supervisor(opts)
  t.eq(err and err.kind, "cluster_unreachable")
  t.match(err.message, "cannot connect to the Kubernetes API server at https://127.0.0.1:1")
end)

-- A service account allowed to exec in NS, and its token.
local function service_account_token(name)
  assert(client:call("POST", ns_path("/serviceaccounts"), {metadata = {name = name}}))
  assert(client:call("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/" .. NS .. "/rolebindings", {
    metadata = {name = name .. "-edit"},
    roleRef = {apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "edit"},
    subjects = {{kind = "ServiceAccount", name = name, namespace = NS}}}))
  for _ = 1, 100 do
    local account = assert(client:call("GET", ns_path("/serviceaccounts/" .. name)))
    local secret = account.secrets and account.secrets[1] and account.secrets[1].name
    local data = secret and assert(client:call("GET", ns_path("/secrets/" .. secret))).data
    if data and data.token then return assert(config.base64_decode(data.token)) end
    luagent.sleep(0.1)
  end
  error("no token Secret for the service account " .. name .. " in 10 s")
end

t.test("a service account's bearer token in opts.headers opens the channel as well", function()
  local token = service_account_token("ws-exec")
  local opts = exec_options(POD, SERVE, {headers = {Authorization = "Bearer " .. token}})
  opts.cert_pem, opts.key_pem, opts.cert_file, opts.key_file = nil, nil, nil, nil
  local channel, err
  for _ = 1, 50 do -- the RoleBinding may take a moment to count
    channel, err = engine_stream.supervisor(opts)
    if channel or err.status ~= 403 then break end
    luagent.sleep(0.1)
  end
  t.ok(channel, tostring(err))
  local other = setmetatable({channel = channel, next_id = 0}, supervisor.Supervisor)
  t.eq(run(other, {argv = {"echo", "by token"}}).stdout, "by token\n")
  other:close()
  opts.headers = {Authorization = "Bearer not-a-token"}
  local _, refused = engine_stream.supervisor(opts)
  t.eq(refused and refused.kind, "kubernetes")
  t.eq(refused.status, 401)
end)

t.test("the pod deleted while a command runs: the channel ends with supervisor_lost", function()
  local job = {argv = {"sleep", "60"}}
  assert(ex:send("run", job))
  t.eq(ex:wait(job, 0.3), false, "it runs")
  local started = luagent.now()
  assert(client:call("DELETE", ns_path("/pods/" .. POD), {gracePeriodSeconds = 0}))
  local ended, err = ex:wait(job, 60)
  t.eq(ended, nil, "no result: the supervisor is gone")
  t.eq(err and err.kind, "supervisor_lost")
  t.lt(luagent.now() - started, 30, "noticed, not a hang")
  local alive, reason = ex:alive()
  t.eq(alive, false)
  t.match(reason, "Kubernetes API server")
  ex:close()
end)

pcall(teardown)
return t.done()

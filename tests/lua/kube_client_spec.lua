-- needs: k8s
-- luagent.kube.client against the real test cluster (tests/k8s.sh; KUBECONFIG
-- and LUAGENT_TEST_K8S from `tests/k8s.sh env`): connect, JSON calls on
-- ConfigMaps and Leases, the errors read from the API server's Status (404,
-- 409 both ways, 422, 403), a watch, a service account's token as the
-- credentials, a wrong CA and a server where nothing listens. Everything
-- happens in a namespace of its own, deleted at the end.
local t = require "helper"
local config = require "luagent.kube.config"
local fs = require "luagent.fs"
local kube = require "luagent.kube.client"
local sys = require "luagent.sys"

local target = os.getenv("LUAGENT_TEST_K8S")
if not target or target == "" then
  print("# skip - kube_client_spec: needs the test cluster (eval \"$(tests/k8s.sh env)\": LUAGENT_TEST_K8S, KUBECONFIG)")
  return 0
end
local CONTEXT = target:match("^k8s://([^?]+)")
local NS = "luagent-kube-spec-" .. sys.random_hex(4)
local DIR = assert(fs.temp_dir("luagent-kube-client"))
local ADMIN = assert(config.load(CONTEXT))
local client -- the admin's, made by the first test

local function ns_path(rest) return "/api/v1/namespaces/" .. NS .. rest end
local function lease_path(rest) return "/apis/coordination.k8s.io/v1/namespaces/" .. NS .. "/leases" .. rest end

-- failed(kind, what, f()): f() failed with an error of that kind.
local function failed(kind, what, value, err)
  t.eq(value, nil, what .. ": no value")
  t.ok(err, what .. ": an error")
  t.eq(err.kind, kind, what .. ": kind (" .. tostring(err) .. ")")
  return err
end

-- A kubeconfig in DIR for the cluster's server: fields of the cluster and the user as YAML lines.
local function kubeconfig(name, server, cluster_fields, user_fields)
  local path = DIR .. "/" .. name
  assert(fs.write(path, table.concat({
    "clusters:", "- name: spec", "  cluster:", "    server: " .. server, cluster_fields,
    "users:", "- name: spec-user", "  user:", user_fields,
    "contexts:", "- name: spec-ctx", "  context: {cluster: spec, user: spec-user, namespace: " .. NS .. "}",
    "current-context: spec-ctx"}, "\n") .. "\n"))
  return path
end

local CA_DATA = "    certificate-authority-data: " .. sys.base64(ADMIN.tls.ca_pem or assert(fs.read(ADMIN.tls.ca_file)))

t.test("connect asks GET /version and names the endpoint; a second connect reuses the client's options", function()
  local started = luagent.now()
  local err
  client, err = kube.connect(ADMIN)
  t.ok(client, tostring(err))
  t.match(client.server_version, "^v%d")
  t.eq(client.endpoint.description, ("k8s://%s (%s)"):format(CONTEXT, ADMIN.server))
  t.eq(client.endpoint.server, ADMIN.server); t.eq(client.endpoint.namespace, ADMIN.namespace)
  t.lt(luagent.now() - started, 5, "within the connect timeout")
  local again = assert(kube.connect(ADMIN))
  t.ok(again.http == client.http, "the same request options (curl reuses the connection)")
  assert(client:call("POST", "/api/v1/namespaces", {metadata = {name = NS, labels = {["luagent-spec"] = "kube"}}}))
end)

t.test("a ConfigMap: create, get, list by label, merge patch with resourceVersion, delete", function()
  local cm = assert(client:call("POST", ns_path("/configmaps"),
    {metadata = {name = "spec-cm", labels = {app = "kube-spec"}}, data = {a = "1"}}))
  t.eq(cm.metadata.name, "spec-cm"); t.eq(cm.data.a, "1")
  local got = assert(client:call("GET", ns_path("/configmaps/spec-cm")))
  t.eq(got.metadata.uid, cm.metadata.uid)
  local list = assert(client:call("GET", ns_path("/configmaps"), nil, {query = {labelSelector = "app=kube-spec"}}))
  t.eq(#list.items, 1); t.eq(list.items[1].metadata.name, "spec-cm")
  local none = assert(client:call("GET", ns_path("/configmaps"), nil, {query = "labelSelector=app%3Dnobody"}))
  t.eq(#none.items, 0, "a query string as text")
  local patched = assert(client:call("PATCH", ns_path("/configmaps/spec-cm"),
    {metadata = {resourceVersion = got.metadata.resourceVersion}, data = {b = "2"}}, {patch = "merge"}))
  t.eq(patched.data.a, "1"); t.eq(patched.data.b, "2")
  local err = failed("conflict", "a stale resourceVersion", client:call("PATCH", ns_path("/configmaps/spec-cm"),
    {metadata = {resourceVersion = got.metadata.resourceVersion}, data = {c = "3"}}))
  t.eq(err.reason, "Conflict"); t.eq(err.status, 409)
  t.match(err.message, "the object has been modified")
  err = failed("conflict", "made twice", client:call("POST", ns_path("/configmaps"), {metadata = {name = "spec-cm"}}))
  t.eq(err.reason, "AlreadyExists")
  t.match(err.message, 'configmaps "spec%-cm" already exists')
  local json_patched = assert(client:call("PATCH", ns_path("/configmaps/spec-cm"),
    {{op = "replace", path = "/data/a", value = "one"}}, {patch = "json"}))
  t.eq(json_patched.data.a, "one", "a JSON patch")
  assert(client:call("DELETE", ns_path("/configmaps/spec-cm")))
  err = failed("not_found", "after the delete", client:call("GET", ns_path("/configmaps/spec-cm")))
  t.match(err.message, 'configmaps "spec%-cm" not found'); t.eq(err.reason, "NotFound"); t.eq(err.status, 404)
  t.eq(err.message:sub(1, #ns_path("/configmaps/spec-cm") + 6), "GET " .. ns_path("/configmaps/spec-cm") .. ": ")
  t.ok(err.message:find(client.endpoint.description, 1, true), "names the endpoint")
end)

t.test("a Lease (coordination.k8s.io/v1): create, strategic patch, delete", function()
  local lease = assert(client:call("POST", lease_path(""), {apiVersion = "coordination.k8s.io/v1", kind = "Lease",
    metadata = {name = "spec-lease"}, spec = {holderIdentity = "kube-spec", leaseDurationSeconds = 60}}))
  t.eq(lease.spec.holderIdentity, "kube-spec")
  local renewed = assert(client:call("PATCH", lease_path("/spec-lease"),
    {spec = {renewTime = "2024-01-02T03:04:05.000000Z"}}, {patch = "strategic"}))
  t.eq(renewed.spec.renewTime, "2024-01-02T03:04:05.000000Z"); t.eq(renewed.spec.leaseDurationSeconds, 60)
  local list = assert(client:call("GET", lease_path("")))
  t.eq(#list.items, 1)
  assert(client:call("DELETE", lease_path("/spec-lease")))
  failed("not_found", "the deleted lease", client:call("GET", lease_path("/spec-lease")))
end)

t.test("an invalid name (422) is kind kubernetes naming the field", function()
  local err = failed("kubernetes", "an invalid name",
    client:call("POST", ns_path("/configmaps"), {metadata = {name = "Bad_Name"}}))
  t.eq(err.status, 422); t.eq(err.reason, "Invalid")
  t.match(err.message, "metadata%.name"); t.match(err.message, "Bad_Name")
  t.eq(err.causes[1].field, "metadata.name")
end)

t.test("a watch sees a ConfigMap's ADDED and MODIFIED events, and stops when told", function()
  local seen = {}
  local watcher = luagent.spawn(function()
    return client:watch(ns_path("/configmaps"), {fieldSelector = "metadata.name=watched"}, function(ev)
      seen[#seen + 1] = ev.type .. " " .. tostring(ev.object.data and ev.object.data.v)
      return ev.type == "MODIFIED"
    end, {timeout = 20})
  end)
  luagent.sleep(0.3)
  assert(client:call("POST", ns_path("/configmaps"), {metadata = {name = "watched"}, data = {v = "1"}}))
  assert(client:call("PATCH", ns_path("/configmaps/watched"), {data = {v = "2"}}))
  local ev, err = watcher:wait()
  t.ok(ev, tostring(err))
  t.eq(ev.type, "MODIFIED"); t.eq(ev.object.data.v, "2")
  t.same(seen, {"ADDED 1", "MODIFIED 2"})
  -- the server ends each watch after 1 s: it is started again from the last version seen (no second ADDED)
  seen = {}
  watcher = luagent.spawn(function()
    return client:watch(ns_path("/configmaps"), {fieldSelector = "metadata.name=watched", timeoutSeconds = 1},
      function(e)
        seen[#seen + 1] = e.type .. " " .. tostring(e.object.data and e.object.data.v)
        return e.object.data.v == "3"
      end, {timeout = 20})
  end)
  luagent.sleep(2.5)
  assert(client:call("PATCH", ns_path("/configmaps/watched"), {data = {v = "3"}}))
  ev, err = watcher:wait()
  t.ok(ev, tostring(err))
  t.same(seen, {"ADDED 2", "MODIFIED 3"})
  local started = luagent.now()
  local _, terr = client:watch(ns_path("/configmaps"), {fieldSelector = "metadata.name=watched"},
    function() return false end, {timeout = 1.5})
  failed("timeout", "a watch nothing ends", nil, terr)
  t.lt(luagent.now() - started, 4, "ends at its timeout")
end)

-- The token of a service account, from the Secret the token controller makes for it.
local function service_account_token(name)
  assert(client:call("POST", ns_path("/serviceaccounts"), {metadata = {name = name}}))
  for _ = 1, 100 do
    local sa = assert(client:call("GET", ns_path("/serviceaccounts/" .. name)))
    local secret = sa.secrets and sa.secrets[1] and sa.secrets[1].name
    if secret then
      local s = assert(client:call("GET", ns_path("/secrets/" .. secret)))
      if s.data and s.data.token then return assert(config.base64_decode(s.data.token)) end
    end
    luagent.sleep(0.1)
  end
  error("no token Secret for the service account " .. name .. " in 10 s")
end

t.test("a service account's token: its client works in its namespace, and is forbidden outside it", function()
  local token = service_account_token("spec-sa")
  assert(client:call("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/" .. NS .. "/rolebindings", {
    metadata = {name = "spec-sa-edit"},
    roleRef = {apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "edit"},
    subjects = {{kind = "ServiceAccount", name = "spec-sa", namespace = NS}}}))
  local path = kubeconfig("token.kubeconfig", ADMIN.server, CA_DATA, "    token: " .. token)
  local conn = assert(config.load(nil, {env = {KUBECONFIG = path}}))
  t.eq(conn.token, token); t.eq(conn.namespace, NS)
  local sa_client = assert(kube.connect(conn))
  local opts = sa_client:stream_options(ns_path("/pods/p/exec?command=true"), {headers = {["X-Extra"] = "1"},
    timeout = 9})
  t.same(opts, {url = ADMIN.server .. ns_path("/pods/p/exec?command=true"), ca_pem = ADMIN.tls.ca_pem,
    websocket = true, timeout = 9, headers = {Authorization = "Bearer " .. token, ["X-Extra"] = "1"}})
  local made, err
  for _ = 1, 50 do -- the RoleBinding may take a moment to count
    made, err = sa_client:call("POST", ns_path("/configmaps"), {metadata = {name = "by-sa"}})
    if made or err.status ~= 403 then break end
    luagent.sleep(0.1)
  end
  t.ok(made, "the service account makes a ConfigMap in its namespace: " .. tostring(err))
  err = failed("kubernetes", "outside its namespace", sa_client:call("GET", "/api/v1/namespaces/default/configmaps"))
  t.eq(err.status, 403); t.eq(err.reason, "Forbidden")
  t.ok(err.message:find(('User "system:serviceaccount:%s:spec-sa" cannot list resource "configmaps"'):format(NS),
    1, true), "the API server's words: " .. err.message)
  t.match(err.message, 'in the namespace "default"')
  err = failed("kubernetes", "a watch outside its namespace",
    sa_client:watch("/api/v1/namespaces/default/configmaps", nil, function() return true end, {timeout = 5}))
  t.eq(err.status, 403); t.match(err.message, 'cannot watch resource "configmaps"')
end)

t.test("a token the API server does not know (401) is kind kubernetes, naming the credentials used", function()
  local path = kubeconfig("bad-token.kubeconfig", ADMIN.server, CA_DATA, "    token: not-a-token")
  local err = failed("kubernetes", "an unknown token", kube.connect(assert(config.load(nil, {env = {KUBECONFIG = path}}))))
  t.eq(err.status, 401); t.match(err.message, "Unauthorized")
  t.ok(err.message:find("token of user spec-user in " .. path, 1, true), "names the credentials: " .. err.message)
end)

t.test("an admin's stream options carry its client certificate and no Authorization", function()
  local o = client:stream_options("/api/v1/namespaces/x/pods/y/exec")
  t.eq(o.websocket, true); t.eq(o.url, ADMIN.server .. "/api/v1/namespaces/x/pods/y/exec")
  t.eq(o.cert_pem, ADMIN.tls.cert_pem); t.eq(o.key_pem, ADMIN.tls.key_pem); t.same(o.headers, {})
end)

t.test("a wrong CA is kind tls, naming the CA used", function()
  local bundle = assert(fs.read("/etc/ssl/certs/ca-certificates.crt"))
  local other = bundle:match("%-%-%-%-%-BEGIN CERTIFICATE%-%-%-%-%-.-%-%-%-%-%-END CERTIFICATE%-%-%-%-%-\n")
  local path = kubeconfig("wrong-ca.kubeconfig", ADMIN.server, "    certificate-authority-data: " .. sys.base64(other),
    "    token: whatever")
  local conn = assert(config.load(nil, {env = {KUBECONFIG = path}}))
  local err = failed("tls", "a CA of another cluster", kube.connect(conn))
  t.ok(err.message:find("certificate-authority-data of cluster spec in " .. path, 1, true), "names the CA: " .. err.message)
  t.ok(err.message:find(ADMIN.server, 1, true), "names the server")
end)

t.test("a server where nothing listens is cluster_unreachable, at once, naming server and context", function()
  local code, port = sys.execute({"python3", "-c",
    "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1]); s.close()"})
  t.eq(code, 0, port)
  local server = "https://127.0.0.1:" .. port:match("%d+")
  local conn = assert(config.load(nil, {env = {KUBECONFIG = kubeconfig("closed.kubeconfig", server, CA_DATA,
    "    token: whatever")}}))
  local started = luagent.now()
  local err = failed("cluster_unreachable", "a closed port", kube.connect(conn))
  t.lt(luagent.now() - started, 2, "fast")
  t.ok(err.message:find(server, 1, true), "names the server: " .. err.message)
  t.match(err.message, "spec%-ctx"); t.match(err.message, "cluster%-info")
end)

t.test("the spec's namespace is deleted", function()
  assert(client:call("DELETE", "/api/v1/namespaces/" .. NS))
  local ns = client:call("GET", "/api/v1/namespaces/" .. NS)
  t.ok(ns == nil or ns.status.phase == "Terminating", "gone or going")
end)

fs.remove(DIR)
return t.done()

-- luagent.kube.config reads kubeconfigs as kubectl does: KUBECONFIG lists
-- merged (the first file naming an entry wins), *-data decoded in memory,
-- relative paths from the file's folder, tokens inline or from a file, the
-- in-cluster config of a pod; and every refusal is kind config naming the
-- file and the field. No cluster: the files are written to a temp dir, and
-- the environment is given as opts.env (the in-cluster files under opts.root).
local t = require "helper"
local config = require "luagent.kube.config"
local fs = require "luagent.fs"
local sys = require "luagent.sys"

local DIR = assert(fs.temp_dir("luagent-kube-config"))

local CA = "-----BEGIN CERTIFICATE-----\nMIIBca\n-----END CERTIFICATE-----\n"
local CERT = "-----BEGIN CERTIFICATE-----\nMIIBcert\n-----END CERTIFICATE-----\n"
local KEY = "-----BEGIN EC PRIVATE KEY-----\nMHckey\n-----END EC PRIVATE KEY-----\n"

local function write(name, text)
  local path = DIR .. "/" .. name
  assert(fs.mkdir(path:match("^(.*)/[^/]*$")))
  assert(fs.write(path, text))
  return path
end

-- A kubeconfig with one cluster, user and context (fields as YAML lines).
local function kubeconfig(o)
  return table.concat({
    "apiVersion: v1", "kind: Config",
    "clusters:", "- name: " .. (o.cluster or "c1"), "  cluster:", "    server: " .. (o.server or "https://k8s.example:6443"),
    o.cluster_extra or "",
    "users:", "- name: " .. (o.user or "u1"), "  user:", o.user_fields or "    token: abc",
    "contexts:", "- name: " .. (o.context or "ctx1"),
    "  context: {cluster: " .. (o.cluster or "c1") .. ", user: " .. (o.user or "u1")
      .. (o.namespace and ", namespace: " .. o.namespace or "") .. "}",
    o.current ~= false and "current-context: " .. (o.current or o.context or "ctx1") or "",
  }, "\n") .. "\n"
end

local function load(kubeconfig_list, context)
  return config.load(context, {env = {KUBECONFIG = kubeconfig_list, HOME = DIR .. "/nohome"}})
end

-- A config error whose message names the file and the field (and err says them too).
local function refused(conn, err, file, field, what)
  t.eq(conn, nil, what .. ": no connection")
  t.ok(err, what .. ": an error")
  t.eq(err.kind, "config", what .. ": kind")
  t.ok(err.message:find(file, 1, true), what .. ": names the file " .. file .. ": " .. err.message)
  if field then -- (not for a YAML syntax error: its line and column instead)
    t.ok(err.message:find(field, 1, true), what .. ": names the field " .. field .. ": " .. err.message)
  end
  t.eq(err.field, field, what .. ": err.field")
  return err
end

t.test("*-data fields are decoded in memory; namespace from the context; nothing written", function()
  local path = write("data/config", kubeconfig{namespace = "team-a",
    cluster_extra = "    certificate-authority-data: " .. sys.base64(CA),
    user_fields = "    client-certificate-data: " .. sys.base64(CERT) .. "\n    client-key-data: " .. sys.base64(KEY)})
  local before = #assert(fs.walk(DIR))
  local conn = assert(load(path))
  t.eq(conn.context, "ctx1"); t.eq(conn.cluster, "c1"); t.eq(conn.user, "u1")
  t.eq(conn.server, "https://k8s.example:6443"); t.eq(conn.namespace, "team-a")
  t.same(conn.tls, {ca_pem = CA, cert_pem = CERT, key_pem = KEY})
  t.eq(conn.token, nil)
  t.eq(conn.source, path); t.same(conn.files, {path})
  t.match(conn.ca_from, "certificate%-authority%-data of cluster c1")
  t.match(conn.auth_from, "client certificate of user u1")
  t.eq(#assert(fs.walk(DIR)), before, "no file was written")
end)

t.test("file fields are relative to the kubeconfig's folder; the namespace defaults to default", function()
  write("files/pki/ca.crt", CA); write("files/pki/u.crt", CERT); write("files/pki/u.key", KEY)
  local path = write("files/config", kubeconfig{cluster_extra = "    certificate-authority: pki/ca.crt",
    user_fields = "    client-certificate: pki/u.crt\n    client-key: " .. DIR .. "/files/pki/u.key"})
  local conn = assert(load(path))
  t.same(conn.tls, {ca_file = DIR .. "/files/pki/ca.crt", cert_file = DIR .. "/files/pki/u.crt",
                    key_file = DIR .. "/files/pki/u.key"})
  t.eq(conn.namespace, "default")
  local missing = write("files/missing", kubeconfig{cluster_extra = "    certificate-authority: pki/nope.crt"})
  local _, err = load(missing)
  refused(nil, err, missing, "clusters[c1].cluster.certificate-authority", "a CA file that is not there")
  t.ok(err.message:find(DIR .. "/files/pki/nope.crt", 1, true), "names the path it tried")
  t.eq(err.line, 7, "the line of the field")
  t.ok(err.message:find(missing .. ":7:", 1, true), "FILE:LINE")
end)

t.test("a KUBECONFIG list is merged: the first file naming an entry wins, current-context from the first", function()
  local a = write("merge/a", table.concat({
    "clusters:", "- name: shared", "  cluster: {server: 'https://first:6443'}",
    "contexts:", "- name: dev", "  context: {cluster: shared, user: dev-user, namespace: dev}",
  }, "\n"))
  local b = write("merge/b", table.concat({
    "current-context: dev",
    "clusters:", "- name: shared", "  cluster: {server: 'https://second:6443'}",
    "users:", "- name: dev-user", "  user: {token: from-b}",
    "contexts:", "- name: dev", "  context: {cluster: other, user: dev-user}",
  }, "\n"))
  local c = write("merge/c", "current-context: prod\n")
  local conn = assert(load(a .. ":" .. DIR .. "/merge/not-there:" .. b .. ":" .. c))
  t.eq(conn.context, "dev", "current-context from b, the first file that sets one")
  t.eq(conn.server, "https://first:6443", "the cluster of a, the first to name it")
  t.eq(conn.namespace, "dev", "a's context")
  t.eq(conn.token, "from-b")
  t.same(conn.files, {a, b, c}, "a missing file is skipped")
  t.eq(conn.source, ("%s (context, cluster), %s (user)"):format(a, b))
  local named = assert(load(c .. ":" .. a .. ":" .. b, "dev"))
  t.eq(named.context, "dev", "a context named by the caller")
  local _, err = load(c .. ":" .. a .. ":" .. b)
  refused(nil, err, c, "current-context", "c's current-context names a context nobody has")
  t.match(err.message, 'no context "prod"'); t.match(err.message, "contexts there: dev")
end)

t.test("token, tokenFile (read when loaded, relative, trimmed), and token before tokenFile", function()
  write("tokens/secret/token", "tok-from-file\n")
  local conn = assert(load(write("tokens/inline", kubeconfig{user_fields = "    token: tok-inline"})))
  t.eq(conn.token, "tok-inline"); t.match(conn.auth_from, "^token of user u1")
  conn = assert(load(write("tokens/file", kubeconfig{user_fields = "    tokenFile: secret/token"})))
  t.eq(conn.token, "tok-from-file")
  conn = assert(load(write("tokens/both", kubeconfig{user_fields = "    token: tok-inline\n    tokenFile: secret/token"})))
  t.eq(conn.token, "tok-inline")
  local path = write("tokens/gone", kubeconfig{user_fields = "    tokenFile: secret/gone"})
  local _, err = load(path)
  refused(nil, err, path, "users[u1].user.tokenFile", "a tokenFile that is not there")
  t.ok(err.message:find(DIR .. "/tokens/secret/gone", 1, true), "names the path it tried")
end)

t.test("insecure-skip-tls-verify: no CA check; with a CA too it is refused", function()
  local conn = assert(load(write("insecure/ok", kubeconfig{cluster_extra = "    insecure-skip-tls-verify: true"})))
  t.same(conn.tls, {insecure = true}); t.match(conn.ca_from, "insecure%-skip%-tls%-verify")
  local path = write("insecure/both", kubeconfig{cluster_extra = "    insecure-skip-tls-verify: true\n"
    .. "    certificate-authority-data: " .. sys.base64(CA)})
  refused(nil, select(2, load(path)), path, "clusters[c1].cluster.insecure-skip-tls-verify", "insecure with a CA")
end)

t.test("exec plugins, auth-providers and username/password are refused, saying what to use", function()
  local cases = {
    exec = "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws",
    ["auth-provider"] = "    auth-provider:\n      name: gcp",
    username = "    username: admin\n    password: secret",
  }
  for field, fields in pairs(cases) do
    local path = write("auth/" .. field, kubeconfig{user = "cloud-user", user_fields = fields})
    local err = refused(nil, select(2, load(path)), path, "users[cloud-user].user." .. field, field)
    t.match(err.message, "not supported", field)
    t.match(err.message, "kubectl create token", field .. ": what to do")
    t.match(err.message, "client%-certificate%-data", field .. ": what to do")
    t.eq(err.line, 11, field .. ": the line")
  end
  -- another user of the file with an exec plugin is no matter
  local path = write("auth/other", kubeconfig{user_fields = "    token: abc\n- name: unused\n  user: {exec: {command: aws}}"})
  local conn, err = load(path)
  t.ok(conn, "an unused exec user is fine: " .. tostring(err))
end)

t.test("a context that is not there lists the contexts there; so does one without current-context", function()
  local path = write("ctx/config", kubeconfig{context = "alpha", current = false})
  local err = refused(nil, select(2, load(path, "beta")), path, "contexts", "an unknown context")
  t.match(err.message, 'no context "beta"'); t.match(err.message, "contexts there: alpha")
  err = refused(nil, select(2, load(path)), path, "current-context", "no current-context")
  t.match(err.message, "contexts there: alpha")
  local unknown = write("ctx/cluster", table.concat({"contexts:", "- name: x", "  context: {cluster: gone}",
    "clusters:", "- {name: real, cluster: {server: 'https://a:1'}}", "current-context: x"}, "\n"))
  err = refused(nil, select(2, load(unknown)), unknown, "contexts[x].context.cluster", "a context's missing cluster")
  t.match(err.message, "clusters there: real")
  local noserver = write("ctx/noserver", kubeconfig{server = "k8s.example:6443"})
  refused(nil, select(2, load(noserver)), noserver, "clusters[c1].cluster.server", "a server without https://")
end)

t.test("*-data that is not base64 PEM, both FIELD and FIELD-data, a certificate without its key", function()
  local path = write("bad/b64", kubeconfig{cluster_extra = "    certificate-authority-data: not*base64"})
  refused(nil, select(2, load(path)), path, "clusters[c1].cluster.certificate-authority-data", "not base64")
  path = write("bad/notpem", kubeconfig{cluster_extra = "    certificate-authority-data: " .. sys.base64("hello")})
  refused(nil, select(2, load(path)), path, "clusters[c1].cluster.certificate-authority-data", "not PEM")
  write("bad/ca.crt", CA)
  path = write("bad/both", kubeconfig{cluster_extra = "    certificate-authority: ca.crt\n"
    .. "    certificate-authority-data: " .. sys.base64(CA)})
  refused(nil, select(2, load(path)), path, "clusters[c1].cluster.certificate-authority-data", "both")
  path = write("bad/nokey", kubeconfig{user_fields = "    client-certificate-data: " .. sys.base64(CERT)})
  refused(nil, select(2, load(path)), path, "users[u1].user.client-key", "a certificate without a key")
  path = write("bad/yaml", "clusters: [\n")
  local err = refused(nil, select(2, load(path)), path, nil, "not YAML")
  t.eq(err.line, 2); t.ok(err.message:find(path .. ":2:", 1, true), "FILE:LINE:COLUMN")
  path = write("bad/shape", "clusters: {c1: {server: x}}\n")
  refused(nil, select(2, load(path)), path, "clusters", "clusters as a map")
end)

t.test("no kubeconfig at all says where it looked", function()
  local conn, err = config.load(nil, {env = {HOME = DIR .. "/nohome"}})
  refused(conn, err, DIR .. "/nohome/.kube/config", "KUBECONFIG", "no ~/.kube/config")
  conn, err = load(DIR .. "/none-1:" .. DIR .. "/none-2")
  refused(conn, err, DIR .. "/none-1:" .. DIR .. "/none-2", "KUBECONFIG", "KUBECONFIG's files missing")
  write("home/.kube/config", kubeconfig{context = "from-home"})
  conn = assert(config.load(nil, {env = {HOME = DIR .. "/home"}}))
  t.eq(conn.context, "from-home", "~/.kube/config without KUBECONFIG")
end)

t.test("the in-cluster config of a pod, with a fake root", function()
  local root = DIR .. "/pod"
  local sa = root .. config.IN_CLUSTER_DIR
  local env = {HOME = DIR .. "/nohome", KUBERNETES_SERVICE_HOST = "10.96.0.1", KUBERNETES_SERVICE_PORT = "443"}
  local _, err = config.load(nil, {env = env, root = root})
  refused(nil, err, DIR .. "/nohome/.kube/config", "KUBECONFIG", "no token yet")
  t.ok(err.message:find(sa .. "/token", 1, true), "says the token is missing: " .. err.message)
  assert(fs.mkdir(sa))
  assert(fs.write(sa .. "/token", "sa-token\n")); assert(fs.write(sa .. "/ca.crt", CA))
  assert(fs.write(sa .. "/namespace", "team-b"))
  local conn = assert(config.load(nil, {env = env, root = root}))
  t.eq(conn.context, "in-cluster"); t.eq(conn.server, "https://10.96.0.1:443")
  t.eq(conn.token, "sa-token"); t.same(conn.tls, {ca_file = sa .. "/ca.crt"}); t.eq(conn.namespace, "team-b")
  env.KUBERNETES_SERVICE_HOST = "fd00::1"
  t.eq(assert(config.load(nil, {env = env, root = root})).server, "https://[fd00::1]:443", "IPv6 in brackets")
  env.KUBECONFIG = write("pod/kubeconfig", kubeconfig{})
  t.eq(assert(config.load(nil, {env = env, root = root})).context, "ctx1", "a kubeconfig comes first")
end)

t.test("base64_decode", function()
  for _, s in ipairs({"", "a", "ab", "abc", "abcd", CA, "\0\255\128"}) do
    t.eq(config.base64_decode(sys.base64(s)), s, ("%q"):format(s))
  end
  t.eq(config.base64_decode("YWJj\nZA=="), "abcd", "whitespace is ignored")
  for _, bad in ipairs({"YWJ", "YW=j", "Y===", "YWJjZA=a", "YW*j"}) do t.eq(config.base64_decode(bad), nil, bad) end
end)

fs.remove(DIR)
return t.done()

-- luagent.kube.config: where a Kubernetes cluster is and how to sign in to
-- it, read from the user's kubeconfig the way kubectl reads it. Nothing here
-- talks to a cluster (luagent.kube.client does).
--
--   local kube_config = require "luagent.kube.config"
--   local conn, err = kube_config.load()              -- the current context
--   local conn, err = kube_config.load("staging")     -- a named one
--   conn: {context, cluster, user, server, namespace, tls, token, source, files, ca_from, auth_from}
--   (lua/meta/kube_config.lua)
--
-- Which files: KUBECONFIG, a colon-separated list (files that do not exist
-- are skipped), else ~/.kube/config. A list is merged as kubectl merges it:
-- in each of clusters, users and contexts the first file that names an entry
-- wins, and current-context comes from the first file that sets one.
-- Relative paths in a file (certificate-authority, client-certificate,
-- client-key, tokenFile) are relative to that file's folder; the *-data fields
-- are base64 PEM, decoded in memory and handed to curl as text, never written
-- to disk; a tokenFile is read when the config is loaded.
--
-- With no kubeconfig at all, a process in a pod uses the in-cluster config
-- when it is there: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, and
-- the service account's token (and ca.crt, namespace) under
-- /var/run/secrets/kubernetes.io/serviceaccount; its context is "in-cluster".
--
-- Credentials luagent can use: client certificates and bearer tokens. An
-- exec plugin, an auth-provider, username/password or impersonation is
-- refused with what to use instead. Every failure is kind config, and its
-- message names the file (with the line) and the field (err.file, err.field).
local errors = require "luagent.errors"
local fs = require "luagent.fs"
local json = require "luagent.json"
local sys = require "luagent.sys"
local yaml = require "luagent.yaml"

local config = {}

config.IN_CLUSTER_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

-- kind of list -> the key of each entry's settings
local LISTS = {clusters = "cluster", users = "user", contexts = "context"}

local USE_INSTEAD = "give this user a token (kubectl create token NAME, or a service account's token in `token:` "
  .. "or `tokenFile:`) or client certificates (client-certificate-data and client-key-data)"

-- {field, why it cannot be used}, in the order they are looked for
local UNSUPPORTED_USER = {
  {"exec", "exec credential plugins are not supported"},
  {"auth-provider", "auth-provider plugins are not supported"},
  {"username", "username/password (basic) authentication is not supported"},
  {"password", "username/password (basic) authentication is not supported"},
  {"as", "impersonation (as) is not supported"},
  {"as-groups", "impersonation (as-groups) is not supported"},
}

local UNSUPPORTED_CLUSTER = {
  {"proxy-url", "a proxy (proxy-url) is not supported: luagent connects to the server directly"},
  {"tls-server-name", "tls-server-name is not supported: use a server address the certificate names"},
}

local function is_map(v) return type(v) == "table" and not json.is_array(v) end

local function is_list(v) return type(v) == "table" and (json.is_array(v) or next(v) == nil) end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

local function readable(path)
  local f = io.open(path)
  if f then f:close() end
  return f ~= nil
end

local function absolute(dir, path)
  if path:sub(1, 1) == "/" then return path end
  return dir .. "/" .. path
end

-- ---- messages ----

-- nil, a config error at FILE:LINE naming the field.
local function fail_at(file, line, field, fmt, ...)
  local at = line and ("%s:%d"):format(file, line) or file
  return errors.fail("config", ("kubeconfig %s: %s: %s"):format(at, field, fmt:format(...)),
    {file = file, field = field, line = line})
end

-- An entry of a file: {doc, kind ("users"), name, item = its settings map}.
local function field_of(ref, key)
  return ("%s[%s].%s%s"):format(ref.kind, ref.name, LISTS[ref.kind], key and "." .. key or "")
end

local function line_of(doc, tbl, key)
  local at = doc.pos[tbl] and doc.pos[tbl][key]
  return at and at.line
end

-- nil, err about field `key` of an entry's settings.
local function bad(ref, key, fmt, ...)
  return fail_at(ref.doc.path, line_of(ref.doc, ref.item, key) or ref.line, field_of(ref, key), fmt, ...)
end

-- ---- base64 ----

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local B64_VALUE = {}
for i = 1, #B64 do B64_VALUE[B64:byte(i)] = i - 1 end

-- The bytes of base64 text (whitespace ignored), or nil when it is not base64.
function config.base64_decode(text)
  text = text:gsub("%s", "")
  if #text % 4 ~= 0 or text:find("[^%w%+/=]") then return nil end
  local out = {}
  for i = 1, #text, 4 do
    local a, b, c, d = text:byte(i, i + 3)
    local n = ((B64_VALUE[a] or 0) << 18) | ((B64_VALUE[b] or 0) << 12) | ((B64_VALUE[c] or 0) << 6)
      | (B64_VALUE[d] or 0)
    out[#out + 1] = string.char(n >> 16, (n >> 8) & 255, n & 255)
  end
  local bytes = table.concat(out):sub(1, #text // 4 * 3 - #text:match("=*$"))
  if sys.base64(bytes) ~= text then return nil end -- padding in the middle, stray bits
  return bytes
end

-- ---- one file ----

-- The entries of one list (clusters, users, contexts) of a file, by name.
local function read_list(doc, kind)
  local list = doc.root[kind]
  local entries = {}
  if list == nil then return entries end
  local inner = LISTS[kind]
  if not is_list(list) then
    return fail_at(doc.path, line_of(doc, doc.root, kind), kind, "a list of {name: NAME, %s: {...}}", inner)
  end
  for i, entry in ipairs(list) do
    local line = doc.pos[list] and doc.pos[list][i] and doc.pos[list][i].line
    if not is_map(entry) or type(entry.name) ~= "string" or entry.name == "" then
      return fail_at(doc.path, line, ("%s[%d]"):format(kind, i), "an entry is {name: NAME, %s: {...}}", inner)
    end
    local item = entry[inner]
    if item == nil then item = {} end
    if not is_map(item) then
      return fail_at(doc.path, line_of(doc, entry, inner) or line, ("%s[%s].%s"):format(kind, entry.name, inner),
        "a map of settings")
    end
    if not entries[entry.name] then
      entries[entry.name] = {doc = doc, kind = kind, name = entry.name, item = item, line = line}
    end
  end
  return entries
end

local function read_doc(path)
  local root, pos = yaml.load_file(path, {positions = true})
  if root == nil and pos then
    return errors.fail("config", ("kubeconfig %s cannot be read: %s"):format(path, pos.message),
      {file = path, line = pos.line, column = pos.column, cause = pos})
  end
  local doc = {path = path, dir = path:match("^(.*)/[^/]*$") or ".", root = root or {}, pos = pos or {}}
  if not is_map(doc.root) then
    return fail_at(path, 1, "(top)", "a kubeconfig is a map with clusters, users, contexts and current-context")
  end
  for kind in pairs(LISTS) do
    local entries, err = read_list(doc, kind)
    if not entries then return nil, err end
    doc[kind] = entries
  end
  local current = doc.root["current-context"]
  if current ~= nil and type(current) ~= "string" then
    return fail_at(path, line_of(doc, doc.root, "current-context"), "current-context", "the name of a context")
  end
  doc.current = current ~= "" and current or nil
  return doc
end

-- ---- which files, merged ----

-- The kubeconfig files that exist, and where they were looked for.
local function kubeconfig_files(getenv)
  local list = getenv("KUBECONFIG")
  local found, seen = {}, {}
  if list and list ~= "" then
    for path in list:gmatch("[^:]+") do
      if not seen[path] and readable(path) then found[#found + 1] = path end
      seen[path] = true
    end
    return found, ("the files KUBECONFIG names (%s)"):format(list)
  end
  local home = getenv("HOME")
  if not home or home == "" then return found, "~/.kube/config (HOME is not set)" end
  local path = home .. "/.kube/config"
  if readable(path) then found[1] = path end
  return found, path
end

local function merge(docs)
  local paths = {}
  for i, doc in ipairs(docs) do paths[i] = doc.path end
  local merged = {clusters = {}, users = {}, contexts = {}, files = table.concat(paths, ", ")}
  for _, doc in ipairs(docs) do
    for kind in pairs(LISTS) do
      for name, ref in pairs(doc[kind]) do
        if not merged[kind][name] then merged[kind][name] = ref end
      end
    end
    if not merged.current and doc.current then merged.current, merged.current_doc = doc.current, doc end
  end
  return merged
end

local function names_there(entries)
  local names = sorted_keys(entries)
  return #names > 0 and table.concat(names, ", ") or "none"
end

local function pick_context(merged, name)
  local in_files = merged.files
  if name == nil then
    if not merged.current then
      return fail_at(in_files, nil, "current-context", "none is set: name a context (contexts there: %s)",
        names_there(merged.contexts))
    end
    name = merged.current
  end
  local ref = merged.contexts[name]
  if ref then return ref end
  if merged.current == name then
    local doc = merged.current_doc
    return fail_at(doc.path, line_of(doc, doc.root, "current-context"), "current-context",
      "no context %q in %s (contexts there: %s)", name, in_files, names_there(merged.contexts))
  end
  return fail_at(in_files, nil, "contexts", "no context %q (contexts there: %s)", name, names_there(merged.contexts))
end

-- The entry a context names (its cluster or user), or nil, err.
local function named(merged, context, kind, required)
  local key = LISTS[kind]
  local name = context.item[key]
  if name == nil or name == "" then
    if required then return bad(context, key, "no %s is named", key) end
    return false
  end
  if type(name) ~= "string" then return bad(context, key, "the name of a %s", key) end
  local ref = merged[kind][name]
  if not ref then
    return bad(context, key, "no %s %q in %s (%s there: %s)", key, name, merged.files, kind,
      names_there(merged[kind]))
  end
  return ref
end

-- ---- one entry's settings ----

local function where(ref, key)
  return ("%s of %s %s in %s"):format(key, LISTS[ref.kind], ref.name, ref.doc.path)
end

-- A TLS item of an entry: `key` (a file, relative to the kubeconfig's folder)
-- or `key`-data (base64 of PEM text): {pem = TEXT} | {file = PATH} | false.
local function pem_or_file(ref, key)
  local data, path = ref.item[key .. "-data"], ref.item[key]
  if data ~= nil and path ~= nil then
    return bad(ref, key .. "-data", "both %s and %s-data are set: keep one", key, key)
  end
  if data ~= nil then
    local pem = type(data) == "string" and config.base64_decode(data)
    if not pem or not pem:find("-----BEGIN ", 1, true) then
      return bad(ref, key .. "-data", "not base64 of PEM text (-----BEGIN ...)")
    end
    return {pem = pem, from = where(ref, key .. "-data")}
  end
  if path == nil then return false end
  if type(path) ~= "string" or path == "" then return bad(ref, key, "the name of a file") end
  local full = absolute(ref.doc.dir, path)
  if not readable(full) then
    return bad(ref, key, "%s cannot be read (a relative name is relative to the kubeconfig's folder)", full)
  end
  return {file = full, from = where(ref, key)}
end

local function first_unsupported(ref, list)
  for _, entry in ipairs(list) do
    if ref.item[entry[1]] ~= nil then return entry[1], entry[2] end
  end
end

-- The cluster's server and TLS settings, into conn.
local function read_cluster(ref, conn)
  local key, why = first_unsupported(ref, UNSUPPORTED_CLUSTER)
  if key then return bad(ref, key, "%s", why) end
  local server = ref.item.server
  if type(server) ~= "string" or not server:match("^https?://[^/]") then
    return bad(ref, "server", "the API server's address, https://HOST:PORT")
  end
  conn.server = server:gsub("/+$", "")
  local insecure = ref.item["insecure-skip-tls-verify"]
  if insecure ~= nil and type(insecure) ~= "boolean" then
    return bad(ref, "insecure-skip-tls-verify", "true or false")
  end
  local ca, err = pem_or_file(ref, "certificate-authority")
  if ca == nil then return nil, err end
  if ca and insecure then
    return bad(ref, "insecure-skip-tls-verify", "a CA (%s) and insecure-skip-tls-verify together: keep one",
      ca.from)
  end
  conn.tls.insecure = insecure or nil
  if ca then conn.tls.ca_pem, conn.tls.ca_file = ca.pem, ca.file end
  conn.ca_from = ca and ca.from or insecure and "none: insecure-skip-tls-verify of cluster " .. ref.name
    or "the system's CAs"
  return true
end

local function read_token(ref)
  local token, file = ref.item.token, ref.item.tokenFile
  if token ~= nil then
    if type(token) ~= "string" or token == "" then return bad(ref, "token", "a token (text)") end
    return token
  end
  if file == nil then return false end
  if type(file) ~= "string" or file == "" then return bad(ref, "tokenFile", "the name of a file") end
  local full = absolute(ref.doc.dir, file)
  local text, err = fs.read(full)
  if not text then
    return bad(ref, "tokenFile", "%s cannot be read: %s (a relative name is relative to the kubeconfig's folder)",
      full, err.message)
  end
  text = text:gsub("%s+$", "")
  if text == "" then return bad(ref, "tokenFile", "%s is empty", full) end
  return text
end

-- The user's credentials, into conn.
local function read_user(ref, conn)
  local key, why = first_unsupported(ref, UNSUPPORTED_USER)
  if key then return bad(ref, key, "%s: %s", why, USE_INSTEAD) end
  local cert, err = pem_or_file(ref, "client-certificate")
  if cert == nil then return nil, err end
  local keyfile
  keyfile, err = pem_or_file(ref, "client-key")
  if keyfile == nil then return nil, err end
  if (cert and true) ~= (keyfile and true) then
    local missing = cert and "client-key" or "client-certificate"
    return bad(ref, missing, "a client certificate needs its key and the key its certificate: %s (or %s-data) "
      .. "is missing", missing, missing)
  end
  if cert then
    conn.tls.cert_pem, conn.tls.cert_file = cert.pem, cert.file
    conn.tls.key_pem, conn.tls.key_file = keyfile.pem, keyfile.file
  end
  local token
  token, err = read_token(ref)
  if token == nil then return nil, err end
  conn.token = token or nil
  local how = {}
  if cert then how[#how + 1] = "client certificate" end
  if token then how[#how + 1] = "token" end
  conn.auth_from = ("%s of user %s in %s"):format(#how > 0 and table.concat(how, " and ") or "no credentials",
    ref.name, ref.doc.path)
  return true
end

local function context_namespace(ref)
  local ns = ref.item.namespace
  if ns == nil or ns == "" then return "default" end
  if type(ns) ~= "string" then return bad(ref, "namespace", "the name of a namespace") end
  return ns
end

-- Where the connection's parts come from: "FILE" or "FILE (context), FILE (cluster, user)".
local function source_of(refs)
  local order, parts = {}, {}
  for _, ref in ipairs(refs) do
    local path = ref.doc.path
    if not parts[path] then order[#order + 1], parts[path] = path, {} end
    table.insert(parts[path], LISTS[ref.kind])
  end
  if #order == 1 then return order[1] end
  for i, path in ipairs(order) do order[i] = ("%s (%s)"):format(path, table.concat(parts[path], ", ")) end
  return table.concat(order, ", ")
end

local function resolve(merged, name)
  local context, err = pick_context(merged, name)
  if not context then return nil, err end
  local cluster, user
  cluster, err = named(merged, context, "clusters", true)
  if not cluster then return nil, err end
  user, err = named(merged, context, "users", false)
  if user == nil then return nil, err end
  local conn = {context = context.name, cluster = cluster.name, user = user and user.name or nil, tls = {},
                auth_from = "no credentials (the context names no user)"}
  conn.namespace, err = context_namespace(context)
  if not conn.namespace then return nil, err end
  local ok
  ok, err = read_cluster(cluster, conn)
  if not ok then return nil, err end
  if user then
    ok, err = read_user(user, conn)
    if not ok then return nil, err end
  end
  conn.source = source_of({context, cluster, user or nil})
  return conn
end

-- ---- in a pod ----

-- The in-cluster connection, or nil and why not (nil: not in a pod at all).
local function in_cluster(getenv, root)
  local host, port = getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
  if not host or host == "" or not port or port == "" then return nil end
  local dir = root .. config.IN_CLUSTER_DIR
  local token = fs.read(dir .. "/token")
  if not token or not token:match("%S") then
    return nil, ("KUBERNETES_SERVICE_HOST is set, but there is no service account token at %s/token"):format(dir)
  end
  if host:find(":", 1, true) then host = "[" .. host .. "]" end
  local conn = {context = "in-cluster", server = ("https://%s:%s"):format(host, port), tls = {},
                token = token:gsub("%s+$", ""), namespace = "default", files = {},
                source = "in-cluster (" .. dir .. ")", auth_from = "the service account token in " .. dir .. "/token"}
  if readable(dir .. "/ca.crt") then conn.tls.ca_file = dir .. "/ca.crt" end
  conn.ca_from = conn.tls.ca_file or "the system's CAs"
  local ns = fs.read(dir .. "/namespace")
  if ns and ns:match("%S") then conn.namespace = ns:gsub("%s+$", "") end
  return conn
end

local function no_kubeconfig(looked, name, why_not_in_cluster)
  local message = ("no kubeconfig: looked at %s"):format(looked)
  if name then message = message .. (" for the context %q"):format(name) end
  message = message .. "; " .. (why_not_in_cluster or "not in a pod either (no KUBERNETES_SERVICE_HOST)")
    .. ". Point KUBECONFIG at a kubeconfig (kubectl config view --raw shows yours) or write ~/.kube/config"
  return errors.fail("config", message, {file = looked, field = "KUBECONFIG"})
end

-- config.load(context, opts) -> conn | nil, err   (opts.env, opts.root: for tests)
function config.load(name, opts)
  opts = opts or {}
  local getenv = opts.env and function(k) return opts.env[k] end or sys.getenv
  local files, looked = kubeconfig_files(getenv)
  if #files == 0 then
    local conn, why = nil, nil
    if name == nil or name == "in-cluster" then conn, why = in_cluster(getenv, opts.root or "") end
    if conn then return conn end
    return no_kubeconfig(looked, name, why)
  end
  local docs = {}
  for i, path in ipairs(files) do
    local doc, err = read_doc(path)
    if not doc then return nil, err end
    docs[i] = doc
  end
  local conn, err = resolve(merge(docs), name)
  if not conn then return nil, err end
  conn.files = files
  return conn
end

return config

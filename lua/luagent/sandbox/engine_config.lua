-- luagent.sandbox.engine_config: reading a list of engines (Docker engines
-- and Kubernetes clusters) — the
-- `engines` option of sandbox.open and sandbox.pool, sandbox.defaults.engines,
-- and the environment's LUAGENT_ENGINES — into checked entries. Nothing here
-- talks to an engine (luagent.sandbox.engine_set does).
--
--   engine_config.parse(list, option) -> entries | nil, err
--       list: a comma-separated string ("unix:///var/run/docker.sock, tcp://build-2:2376#8") or a
--       table whose items are such strings or {host = URL, capacity = N, tls = ...}; option: how
--       to name it in messages ("sandbox.open: engines", "LUAGENT_ENGINES"). err: kind config,
--       naming the option and the entry.
--   entry = {host = URL, capacity = N | nil, runtime = NAME | nil, where = 'entry 2 ("tcp://...")',
--            tls = nil (DOCKER_TLS_VERIFY's convention) | false | {ca_file, cert_file, key_file},
--            tls_from = where TLS comes from (nil: none)}
--   a cluster's entry: {host = "k8s://...", kind = "k8s", context = NAME | nil (the kubeconfig's
--            current one), namespace = NS | nil (the context's), ttl = seconds | nil, pull = POLICY | nil,
--            capacity, runtime, where}
--   engine_config.describe(entry) -> "tcp://host:2376 (capacity 8, TLS)"
--
-- An address is unix:///absolute/path or tcp://HOST:PORT (HOST a name, an
-- IPv4 address or [an IPv6 one]), or a Kubernetes cluster:
-- k8s://CONTEXT?namespace=NS — a context of the kubeconfig (KUBECONFIG, else
-- ~/.kube/config; empty: its current context; %XX escapes any character) and
-- the namespace its sandboxes go to (default: the context's); also
-- ttl=SECONDS (each pod's activeDeadlineSeconds, default 86400) and
-- pull=IfNotPresent|Always|Never (the image pull policy). A capacity is "URL#N" or capacity = N, a
-- whole number of sessions of this process on that engine (none: no limit).
-- runtime = NAME (table form only): the runtime this engine's sessions run
-- under unless sandbox.open names one (e.g. "runsc", gVisor).
-- TLS follows Docker's conventions: a tcp:// engine without its own `tls` is
-- spoken to with TLS when DOCKER_TLS_VERIFY is set (not "0"), with ca.pem,
-- cert.pem and key.pem from DOCKER_CERT_PATH (default ~/.docker); tls = "DIR"
-- takes those three files from DIR, tls = {ca = , cert = , key = } names
-- them, tls = true is DOCKER_CERT_PATH's, tls = false is plain TCP.
local errors = require "luagent.errors"
local sys = require "luagent.sys"

local engine_config = {}

local ENTRY_KEYS = {host = true, capacity = true, tls = true, runtime = true}

local function bad(option, where, fmt, ...)
  return errors.fail("config", ("%s: %s: %s"):format(option, where, fmt:format(...)), {option = option})
end

local function trim(s)
  return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

-- nil | why the address is not one luagent can speak to.
local K8S_QUERY = {namespace = true, ttl = true, pull = true}
local PULL = {IfNotPresent = true, Always = true, Never = true}

local function unescape(s)
  return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

-- k8s://CONTEXT?k=v&k=v as {context, namespace, ttl, pull} | nil, why.
function engine_config.parse_k8s(url)
  local rest = url:match("^k8s://(.*)$")
  local context, query = rest:match("^([^?]*)%??(.*)$")
  if context:find("[%s,#]") then return nil, "a context name with a space, a comma or a # must be %XX-escaped" end
  local out = {context = context ~= "" and unescape(context) or nil}
  for pair in query:gmatch("[^&]+") do
    local k, v = pair:match("^([^=]+)=(.*)$")
    if not k or not K8S_QUERY[k] then
      return nil, ("%q is not a setting of a cluster (k8s://CONTEXT?namespace=NS&ttl=SECONDS&pull=POLICY)")
        :format(pair)
    end
    out[k] = unescape(v)
  end
  local ns = out.namespace
  if ns and not (#ns <= 63 and ns:match("^[a-z0-9][-a-z0-9]*$") and ns:match("[a-z0-9]$")) then
    return nil, ("namespace %q is not a Kubernetes namespace name (lower-case letters, digits and -)")
      :format(out.namespace)
  end
  if out.ttl then
    local n = math.tointeger(tonumber(out.ttl))
    if not n or n < 60 then return nil, ("ttl=%s: say seconds, 60 or more"):format(out.ttl) end
    out.ttl = n
  end
  if out.pull and not PULL[out.pull] then
    return nil, ("pull=%s: IfNotPresent, Always or Never"):format(out.pull)
  end
  return out
end

local function url_problem(url)
  if url:match("^k8s://") then return select(2, engine_config.parse_k8s(url)) end
  if url:match("^unix://") then
    if url:sub(8, 8) ~= "/" then
      return "a unix:// address names the socket's absolute path, e.g. unix:///var/run/docker.sock"
    end
    return nil
  end
  if url:match("^tcp://") then
    local hostport = url:sub(7)
    local host, port = hostport:match("^(%[[%x:%.]+%]):(%d+)$")
    if not host then host, port = hostport:match("^([%w][%w%.%-_]*):(%d+)$") end
    if not host then
      return "a tcp:// address is tcp://HOST:PORT, e.g. tcp://build-2.example:2376 (no path, no user)"
    end
    local n = tonumber(port)
    if n < 1 or n > 65535 then return ("port %s is not a TCP port (1-65535)"):format(port) end
    return nil
  end
  local scheme = url:match("^([%a][%w+.-]*)://")
  if scheme then
    return ("%s:// is not supported: use unix:///path/to/docker.sock, tcp://HOST:PORT (an engine behind ssh: "
      .. "forward its socket with ssh -L and name the local end) or k8s://CONTEXT?namespace=NS"):format(scheme)
  end
  return "not an engine address: use unix:///path/to/docker.sock, tcp://HOST:PORT or k8s://CONTEXT?namespace=NS"
end

local function cert_dir_files(dir)
  dir = dir:gsub("/+$", "")
  return {ca_file = dir .. "/ca.pem", cert_file = dir .. "/cert.pem", key_file = dir .. "/key.pem"}
end

local function default_cert_dir()
  local dir = sys.getenv("DOCKER_CERT_PATH")
  if dir and dir ~= "" then return dir, "DOCKER_CERT_PATH" end
  return (sys.getenv("HOME") or "") .. "/.docker", "~/.docker"
end

local function env_tls()
  local verify = sys.getenv("DOCKER_TLS_VERIFY")
  return verify ~= nil and verify ~= "" and verify ~= "0"
end

-- The entry's TLS files: nil (the environment's convention, which the
-- client reads), false, or the three files; and where they come from.
local function tls_of(tls, option, where)
  if tls == nil then
    if not env_tls() then return nil end
    return nil, "DOCKER_TLS_VERIFY with " .. select(2, default_cert_dir())
  end
  if tls == false then return false end
  if tls == true then
    local dir, from = default_cert_dir()
    return cert_dir_files(dir), "tls = true: " .. from
  end
  if type(tls) == "string" and tls ~= "" then return cert_dir_files(tls), "tls = " .. ("%q"):format(tls) end
  if type(tls) == "table" then
    for k in pairs(tls) do
      if k ~= "ca" and k ~= "cert" and k ~= "key" then
        return nil, nil, select(2, bad(option, where, "tls has no field '%s' (tls = {ca = FILE, cert = FILE, key = FILE}, "
          .. "or a folder holding ca.pem, cert.pem and key.pem)", tostring(k)))
      end
    end
    if type(tls.ca) ~= "string" or (tls.cert == nil) ~= (tls.key == nil)
      or (tls.cert ~= nil and (type(tls.cert) ~= "string" or type(tls.key) ~= "string")) then
      return nil, nil, select(2, bad(option, where, "tls = {ca = FILE, cert = FILE, key = FILE} needs ca, and cert "
        .. "and key together (file names)"))
    end
    return {ca_file = tls.ca, cert_file = tls.cert, key_file = tls.key}, "tls"
  end
  return nil, nil, select(2, bad(option, where, "tls = %s: use a folder holding ca.pem, cert.pem and key.pem, "
    .. "{ca = FILE, cert = FILE, key = FILE}, true (DOCKER_CERT_PATH) or false (plain TCP)", tostring(tls)))
end

local function capacity_of(value, option, where)
  local n = math.tointeger(tonumber(value))
  if n == nil or n < 1 then
    return bad(option, where, "capacity %s is not a whole number of sessions (1 or more)", tostring(value))
  end
  return n
end

local function entry_of(item, option, index)
  local where = ("entry %d"):format(index)
  local host, capacity, tls, runtime
  if type(item) == "string" then
    where = ("entry %d (%q)"):format(index, trim(item))
    local text = trim(item)
    host, capacity = text:match("^(.-)#(.*)$")
    host = trim(host or text)
    if capacity then
      local err
      capacity, err = capacity_of(trim(capacity), option, where)
      if not capacity then return nil, err end
    end
  elseif type(item) == "table" then
    for k in pairs(item) do
      if not ENTRY_KEYS[k] then
        return bad(option, where, "unknown field '%s' (an engine is {host = URL, capacity = N, tls = ..., "
          .. "runtime = NAME})", tostring(k))
      end
    end
    if type(item.host) ~= "string" then return bad(option, where, "host must be an engine address (a string)") end
    host, tls, runtime = trim(item.host), item.tls, item.runtime
    where = ("entry %d (%q)"):format(index, host)
    if runtime ~= nil and (type(runtime) ~= "string" or not runtime:match("^[%w][%w._/-]*$")) then
      return bad(option, where, "runtime = %s: name a runtime this engine lists (`luagent doctor` shows them), "
        .. "e.g. \"runsc\" for gVisor", tostring(runtime))
    end
    if item.capacity ~= nil then
      local err
      capacity, err = capacity_of(item.capacity, option, where)
      if not capacity then return nil, err end
    end
  else
    return bad(option, where, "an engine is an address string or {host = URL, capacity = N, tls = ...}")
  end
  local why = url_problem(host)
  if why then return bad(option, where, "%s", why) end
  local e = {host = host, capacity = capacity, where = where, runtime = runtime}
  if host:match("^k8s://") then
    if tls ~= nil then return bad(option, where, "tls is for tcp:// engines; a cluster's TLS is its kubeconfig's") end
    local k = engine_config.parse_k8s(host)
    e.kind, e.context, e.namespace, e.ttl, e.pull = "k8s", k.context, k.namespace, k.ttl, k.pull
    return e
  end
  if host:match("^unix://") then
    if tls then return bad(option, where, "tls is for tcp:// engines; a unix socket needs none") end
    return e
  end
  local files, from, err = tls_of(tls, option, where)
  if err then return nil, err end
  e.tls, e.tls_from = files, from
  return e
end

function engine_config.parse(list, option)
  local items = list
  if type(list) == "string" then
    items = {}
    for part in (list .. ","):gmatch("([^,]*),") do
      if part:match("%S") then items[#items + 1] = part end
    end
  elseif type(list) ~= "table" then
    return bad(option, "the list", "engines are a list of addresses, or one string of them separated by commas")
  end
  local entries, seen = {}, {}
  for i, item in ipairs(items) do
    local e, err = entry_of(item, option, i)
    if not e then return nil, err end
    if seen[e.host] then return bad(option, e.where, "%s is listed twice (entry %d)", e.host, seen[e.host]) end
    seen[e.host] = i
    entries[#entries + 1] = e
  end
  if #entries == 0 then
    return bad(option, "the list", "it names no engine (e.g. unix:///var/run/docker.sock, tcp://HOST:2376#8)")
  end
  return entries
end

function engine_config.describe(e)
  local extras = {}
  if e.capacity then extras[#extras + 1] = "capacity " .. e.capacity end
  if e.tls_from then extras[#extras + 1] = "TLS: " .. e.tls_from end
  if e.runtime then extras[#extras + 1] = "runtime " .. e.runtime end
  return #extras > 0 and ("%s (%s)"):format(e.host, table.concat(extras, ", ")) or e.host
end

return engine_config

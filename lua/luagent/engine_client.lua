-- luagent.engine_client: a Docker Engine API client.
--
--   local engine = require "luagent.engine_client"
--   local client, err = engine_client.connect()            -- DOCKER_HOST or /var/run/docker.sock
--   client:call(method, path, body, opts) and client:options(...) for the streams:
--   lua/meta/engine_client.lua
--
-- JSON calls go through luagent.http on the engine's socket (one reused
-- connection); streaming calls (exec, archives) through luagent.engine_stream.
-- The API version is negotiated with GET /_ping. Errors are luagent.errors
-- values of kind docker_unreachable | not_found | conflict | docker (with
-- status and engine_message), and the message always carries the engine's
-- own words: an error body is read in one place, engine_stream.engine_error.
local http = require "luagent.http"
local json = require "luagent.json"
local engine_stream = require "luagent.engine_stream"
local errors = require "luagent.errors"

local engine_client = {}

-- The newest API version this client speaks; an older engine is spoken to in its own.
engine_client.MAX_API = "1.43"
engine_client.MIN_API = "1.40"

local Client = {}
Client.__index = Client

local function version_number(v)
  local major, minor = tostring(v):match("^(%d+)%.(%d+)")
  return major and tonumber(major) * 1000 + tonumber(minor) or 0
end

function engine_client.urlencode(s)
  return (tostring(s):gsub("[^%w%-%._~]", function(c) return ("%%%02X"):format(c:byte()) end))
end
local urlencode = engine_client.urlencode

function engine_client.query_string(query)
  if not query then return "" end
  local keys = {}
  for k in pairs(query) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    local v = query[k]
    if type(v) == "table" then v = json.encode(v) end
    if type(v) == "boolean" then v = v and "1" or "0" end
    parts[#parts + 1] = urlencode(k) .. "=" .. urlencode(v)
  end
  return "?" .. table.concat(parts, "&")
end

local function how_to_start(endpoint)
  if endpoint.unix_socket then
    return ("Is the Docker engine running? Start it with 'sudo systemctl start docker' (or 'sudo dockerd &'), "
      .. "check that you may use %s (the docker group), or point DOCKER_HOST at a running engine.")
      :format(endpoint.unix_socket)
  end
  return "Is the engine at " .. endpoint.description .. " running, and are DOCKER_HOST/DOCKER_TLS_VERIFY/DOCKER_CERT_PATH right?"
end

local function why_unreachable(endpoint, err)
  if endpoint.unix_socket then
    local st = require("luagent.fs").stat(endpoint.unix_socket)
    if not st then return "there is no socket at " .. endpoint.unix_socket end
    if st.type ~= "socket" then return endpoint.unix_socket .. " is not a socket" end
    return "the socket refused the connection (" .. err.message .. ")"
  end
  return err.message
end

-- A connection that fails because this process has no descriptor left
-- (each sandbox session holds one) is not the engine's fault: curl says only
-- "Couldn't connect", so a descriptor is tried here.
local function out_of_descriptors()
  local f, why = io.open("/dev/null")
  if f then
    f:close()
    return false
  end
  return (why or ""):find("Too many open files", 1, true) ~= nil
end

local function unreachable(endpoint, err)
  if err.kind == "tls" then
    return errors.new("tls", ("TLS with the Docker engine at %s failed: %s (CA file %s, certificate %s, key %s). "
      .. "Are these the files made for this engine (DOCKER_CERT_PATH)?"):format(endpoint.description, err.message,
      endpoint.ca_file or "the system's", endpoint.cert_file or "none", endpoint.key_file or "none"),
      {endpoint = endpoint.description})
  end
  if out_of_descriptors() then
    return errors.new("docker_unreachable", ("cannot connect to the Docker engine at %s: this process has no file "
      .. "descriptor left (each open sandbox holds one): close sandboxes or open fewer at once, or raise the limit "
      .. "(ulimit -n; luagent raises its soft limit up to the hard one, at most 65536)"):format(endpoint.description),
      {endpoint = endpoint.description})
  end
  return errors.new("docker_unreachable", ("cannot reach the Docker engine at %s: %s. %s"):format(
    endpoint.description, why_unreachable(endpoint, err), how_to_start(endpoint)),
    {endpoint = endpoint.description})
end

-- A tcp:// endpoint spoken to with the files of opts.tls ({ca_file,
-- cert_file, key_file}) or in plain TCP (false), whatever DOCKER_TLS_VERIFY
-- says.
local function with_tls(endpoint, tls)
  if tls == nil or endpoint.unix_socket then return endpoint end
  endpoint.ca_file, endpoint.cert_file, endpoint.key_file = nil, nil, nil
  endpoint.url = (tls and "https://" or "http://") .. endpoint.url:gsub("^https?://", "")
  if tls then
    endpoint.ca_file, endpoint.cert_file, endpoint.key_file = tls.ca_file, tls.cert_file, tls.key_file
  end
  return endpoint
end

-- TLS needs its files; the first one missing, as an error. `given`: they
-- came from opts.tls, else from DOCKER_TLS_VERIFY/DOCKER_CERT_PATH.
local function tls_file_missing(endpoint, given)
  for _, f in ipairs{{"ca_file", "the CA certificate"}, {"cert_file", "the client certificate"},
                     {"key_file", "the client key"}} do
    local path = endpoint[f[1]]
    if path and not require("luagent.fs").stat(path) then
      local message = given and ("the Docker engine at %s is spoken to over TLS, but %s %s does not exist")
          :format(endpoint.description, f[2], path)
        or ("the Docker engine at %s is spoken to over TLS (DOCKER_TLS_VERIFY), but %s %s does not exist: "
          .. "DOCKER_CERT_PATH (default ~/.docker) must hold ca.pem, cert.pem and key.pem")
          :format(endpoint.description, f[2], path)
      return errors.new("config", message, {endpoint = endpoint.description, path = path})
    end
  end
end

-- Connects and negotiates the API version. opts.host overrides DOCKER_HOST;
-- opts.tls ({ca_file, cert_file, key_file} or false) the TLS settings
-- DOCKER_TLS_VERIFY/DOCKER_CERT_PATH give a tcp:// host.
function engine_client.connect(opts)
  opts = opts or {}
  local endpoint, err = engine_stream.endpoint(opts.host)
  if not endpoint then return nil, err end
  endpoint = with_tls(endpoint, opts.tls)
  err = tls_file_missing(endpoint, opts.tls ~= nil)
  if err then return nil, err end
  local base = {unix_socket = endpoint.unix_socket, ca_file = endpoint.ca_file, cert_file = endpoint.cert_file,
                key_file = endpoint.key_file}
  local ping_opts = {url = endpoint.url .. "/_ping", timeout = opts.timeout or 10, connect_timeout = 5}
  for k, v in pairs(base) do ping_opts[k] = v end
  local res
  res, err = http.request(ping_opts)
  if not res then return nil, unreachable(endpoint, err) end
  if res.status ~= 200 then
    return nil, unreachable(endpoint, {message = ("GET /_ping answered HTTP %d: %s"):format(res.status, res.body)})
  end
  local server = res.headers["api-version"] or engine_client.MIN_API
  if version_number(server) < version_number(engine_client.MIN_API) then
    return errors.fail("docker", ("the Docker engine at %s speaks API %s; luagent needs %s or newer")
      :format(endpoint.description, server, engine_client.MIN_API))
  end
  local version = version_number(server) < version_number(engine_client.MAX_API) and server or engine_client.MAX_API
  return setmetatable({
    endpoint = endpoint,
    version = version,
    server_version = server,
    base_url = endpoint.url .. "/v" .. version,
    http = base,
  }, Client)
end

-- Options for a request to `path` (with its query string) merged with extra.
function Client:options(path, extra)
  local o = {url = self.base_url .. path}
  for k, v in pairs(self.http) do o[k] = v end
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

-- engine_client.error_from_response(res, what) -> err   for an answer with an error
-- status: kind not_found (404), conflict (409) or docker; status,
-- engine_message; message "WHAT: Docker engine says: MSG (HTTP N)".
function engine_client.error_from_response(res, what)
  return engine_stream.engine_error(res.status, res.body, what)
end

-- client:call(method, path, body, {query, timeout}) -> decoded JSON (or true) | nil, err
function Client:call(method, path, body, opts)
  opts = opts or {}
  local request = self:options(path .. engine_client.query_string(opts.query), {
    method = method,
    timeout = opts.timeout or 120,
    headers = body ~= nil and {["content-type"] = "application/json"} or nil,
    body = body ~= nil and json.encode(body) or nil,
  })
  local res, err = http.request(request)
  if not res then
    if err.kind == "connect" then return nil, unreachable(self.endpoint, err) end
    if err.kind == "timeout" then -- a hung or overloaded engine: say which, and how long it was given
      err.message = ("the Docker engine at %s did not answer in %s s (%s)"):format(self.endpoint.description,
        tostring(request.timeout), err.message)
      err.endpoint = self.endpoint.description
    end
    err.message = ("%s %s: %s"):format(method, path, err.message)
    return nil, err
  end
  if res.status < 200 or res.status >= 300 then
    return nil, engine_client.error_from_response(res, method .. " " .. path)
  end
  if res.body == "" then return true end
  if (res.headers["content-type"] or ""):find("json", 1, true) then
    local value, derr = json.decode(res.body)
    if value == nil then return nil, derr end
    return value
  end
  return res.body
end

return engine_client

-- luagent.kube.client: a Kubernetes API client, the counterpart of
-- luagent.engine_client for a cluster.
--
--   local kube = require "luagent.kube.client"
--   local conn = assert(require("luagent.kube.config").load())
--   local client, err = kube.connect(conn)            -- GET /version (5 s)
--   client:call(method, path, body, opts), client:watch(path, query, on_event, opts),
--   client:stream_options(path, extra): lua/meta/kube_client.lua
--
-- JSON calls go through luagent.http. Its transfers share the event loop's
-- curl multi handle, whose connection cache keeps a connection alive for the
-- next request with the same server and TLS settings; so the process keeps
-- one set of request options per (server, credentials), made at the first
-- connect (which is the one to ask GET /version), and every client of them
-- sends the very same options.
--
-- Errors are luagent.errors values, and an answer with an error status is
-- read in one place, kube.error_from_response: not_found (404), conflict (409:
-- AlreadyExists and the resourceVersion Conflict; err.reason says which) or
-- kubernetes (anything else: 401/403 with the API server's words naming the
-- verb and resource, 400/422 with each cause's field, 5xx), with status,
-- reason, api_message and causes. A server that does not answer is
-- cluster_unreachable, a failed TLS handshake tls naming the CA used.
local engine_client = require "luagent.engine_client"
local errors = require "luagent.errors"
local http = require "luagent.http"
local json = require "luagent.json"
local lines = require "luagent.lines"
local sched = require "luagent.sched"

local kube = {}

kube.CONNECT_TIMEOUT = 5 -- seconds: GET /version, and connecting for any call
kube.CALL_TIMEOUT = 60   -- seconds: a call without opts.timeout
kube.WATCH_TIMEOUT = 60  -- seconds: a watch without opts.timeout

local KubeClient = {}
KubeClient.__index = KubeClient

-- "server\0credentials" -> {http = the request options, headers, server_version}
local shared = {}

local PATCH_TYPES = {
  merge = "application/merge-patch+json",
  json = "application/json-patch+json",
  strategic = "application/strategic-merge-patch+json",
}

local TLS_OPTIONS = {"ca_pem", "ca_file", "cert_pem", "cert_file", "key_pem", "key_file", "insecure"}

local function credentials_key(conn)
  local parts = {conn.server, conn.token or ""}
  for _, k in ipairs(TLS_OPTIONS) do parts[#parts + 1] = tostring(conn.tls and conn.tls[k] or "") end
  return table.concat(parts, "\0")
end

local function base_of(conn)
  local options = {}
  for _, k in ipairs(TLS_OPTIONS) do options[k] = conn.tls and conn.tls[k] or nil end
  local headers = {}
  if conn.token then headers.Authorization = "Bearer " .. conn.token end
  return {http = options, headers = headers}
end

-- ---- errors ----

local function server_words(client)
  return ("the API server of %s says"):format(client and client.endpoint.description or "the cluster")
end

-- The causes of a 400/422 that its message does not already name, as text.
local function causes_text(message, causes)
  local extra = {}
  for _, cause in ipairs(type(causes) == "table" and causes or {}) do
    local field, why = cause.field, cause.message or cause.reason
    if field and why and not message:find(field, 1, true) then extra[#extra + 1] = field .. ": " .. why end
  end
  return #extra > 0 and " [" .. table.concat(extra, "; ") .. "]" or ""
end

local function hint(status, client)
  if status == 401 then
    return (" The API server did not take the credentials (%s): an expired or revoked token, or a certificate "
      .. "of another cluster?"):format(client and client.conn.auth_from or "none")
  end
  return ""
end

-- The one reading of an error answer: its Status object `st` (or the text it
-- sent instead) as an error value.
local function status_error(status, st, text, what, client)
  local message, reason, details = text, nil, nil
  if type(st) == "table" then
    message, reason, details = st.message, st.reason, st.details
    status = math.tointeger(st.code) or status
  end
  message = tostring(message or ""):gsub("%s+$", "")
  if message == "" then message = "(no message)" end
  local causes = type(details) == "table" and details.causes or nil
  local kind = status == 404 and "not_found" or status == 409 and "conflict" or "kubernetes"
  local full = ("%s: %s: %s%s (%sHTTP %s).%s"):format(what, server_words(client), message,
    causes_text(message, causes), reason and reason ~= "" and reason .. ", " or "", tostring(status),
    hint(status, client))
  return errors.new(kind, full, {status = status, reason = reason, api_message = message, causes = causes,
                                 endpoint = client and client.endpoint.description})
end

-- kube.error_from_response(res, what [, client]) -> err
function kube.error_from_response(res, what, client)
  local st = json.decode(res.body or "")
  if type(st) ~= "table" or st.kind ~= "Status" then st = nil end
  return status_error(res.status, st, (res.body or ""):sub(1, 2000), what, client)
end

local function connect_failed(err)
  return err.kind == "connect" or (err.kind == "timeout" and (err.message:find("onnect") or err.message:find("esolv")))
end

-- What to check when the server does not answer.
local function unreachable_advice(conn, server)
  local where = conn.cluster and conn.source
    and (" (the server of cluster %s in %s)"):format(conn.cluster, conn.source) or ""
  local ask = conn.context and (" `kubectl --context %s cluster-info` asks the same."):format(conn.context) or ""
  return ("Is the cluster running, and is %s its address%s?%s A VPN or a firewall in between?"):format(server,
    where, ask)
end

local function transport_error(client, err, what, timeout)
  local c, e = client.conn, client.endpoint
  if connect_failed(err) then
    return errors.new("cluster_unreachable", ("%s: cannot reach the Kubernetes API server of %s: %s. %s"):format(
      what, e.description, err.message, unreachable_advice(c, e.server)), {endpoint = e.description, cause = err})
  end
  if err.kind == "tls" then
    return errors.new("tls", ("%s: TLS with the Kubernetes API server at %s (context %s) failed: %s. The CA used: "
      .. "%s; the credentials: %s. Is this kubeconfig made for this cluster?"):format(what, e.server,
      tostring(c.context), err.message, c.ca_from or "the system's CAs", c.auth_from or "none"),
      {endpoint = e.description, cause = err})
  end
  if err.kind == "timeout" then
    return errors.new("timeout", ("%s: the Kubernetes API server at %s did not answer in %s s (%s)"):format(what,
      e.server, tostring(timeout), err.message), {endpoint = e.description, cause = err})
  end
  return errors.wrap(err, what .. " (the Kubernetes API server at " .. e.server .. ")")
end

-- ---- requests ----

local function query_of(query)
  if type(query) == "string" then return query ~= "" and "?" .. query:gsub("^%?", "") or "" end
  return engine_client.query_string(query)
end

-- Request options for `path`: the shared TLS options, the headers, then extra.
function KubeClient:_options(path, extra, headers)
  local o = {url = self.endpoint.server .. path}
  for k, v in pairs(self.http) do o[k] = v end
  local h = {}
  for k, v in pairs(self.headers) do h[k] = v end
  for k, v in pairs(headers or {}) do h[k] = v end
  o.headers = h
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

local function content_type(method, patch)
  if method ~= "PATCH" then return "application/json" end
  local t = PATCH_TYPES[patch or "merge"]
  if not t then error(("opts.patch must be merge, json or strategic, not %s"):format(tostring(patch)), 3) end
  return t
end

local function decoded(res)
  if res.body == "" then return true end
  if (res.headers["content-type"] or ""):find("json", 1, true) then
    local value, err = json.decode(res.body)
    if value == nil then return nil, err end
    return value
  end
  return res.body
end

-- client:call(method, path, body, {query, timeout, patch}) -> decoded JSON (or true) | nil, err
function KubeClient:call(method, path, body, opts)
  opts = opts or {}
  local headers = {Accept = "application/json"}
  local payload
  if body ~= nil then
    payload = type(body) == "string" and body or json.encode(body)
    headers["Content-Type"] = content_type(method, opts.patch)
  end
  local request = self:_options(path .. query_of(opts.query), {method = method, body = payload,
    timeout = opts.timeout or kube.CALL_TIMEOUT, connect_timeout = kube.CONNECT_TIMEOUT}, headers)
  local what = method .. " " .. path
  local res, err = http.request(request)
  if not res then return nil, transport_error(self, err, what, request.timeout) end
  if res.status < 200 or res.status >= 300 then return nil, kube.error_from_response(res, what, self) end
  return decoded(res)
end

-- ---- watches ----

-- One watch request: feeds its events to on_event until it says stop, the
-- server ends it or time is up. state: rv (the last resourceVersion seen),
-- stopped (the event on_event stopped at), failure, raised.
function KubeClient:_watch_once(path, query, on_event, seconds, state)
  local what = "watch " .. path
  local split = lines.splitter()
  local function on_line(line)
    if state.stopped or state.failure or state.raised or not line:find("%S") then return end
    local ev = json.decode(line)
    if type(ev) ~= "table" or type(ev.type) ~= "string" then
      state.failure = errors.new("protocol", ("%s: not a watch event: %s"):format(what, line:sub(1, 200)))
    elseif ev.type == "ERROR" then
      state.failure = status_error(500, ev.object, nil, what, self)
    else
      local meta = type(ev.object) == "table" and ev.object.metadata
      if type(meta) == "table" and meta.resourceVersion then state.rv = meta.resourceVersion end
      local ok, stop = pcall(on_event, ev)
      if not ok then state.raised = stop elseif stop then state.stopped = ev end
    end
  end
  local request = self:_options(path .. query_of(query), {timeout = seconds, connect_timeout = kube.CONNECT_TIMEOUT,
    on_chunk = function(chunk)
      split:feed(chunk, on_line)
      return not (state.stopped or state.failure or state.raised)
    end}, {Accept = "application/json"})
  local res, err = http.request(request)
  if state.raised then error(state.raised, 0) end
  if not res then return nil, transport_error(self, err, what, seconds) end
  if res.status < 200 or res.status >= 300 then return nil, kube.error_from_response(res, what, self) end
  return true
end

-- client:watch(path, query, on_event, {timeout}) -> the event on_event stopped at | nil, err
function KubeClient:watch(path, query, on_event, opts)
  local seconds = (opts and opts.timeout) or kube.WATCH_TIMEOUT
  local deadline = sched.now() + seconds
  local q = {}
  for k, v in pairs(query or {}) do q[k] = v end
  q.watch = 1
  local state = {}
  while true do
    local left = deadline - sched.now()
    if left <= 0 then break end
    q.resourceVersion = state.rv or q.resourceVersion
    local started = sched.now()
    local ok, err = self:_watch_once(path, q, on_event, left, state)
    if state.stopped then return state.stopped end
    if state.failure and state.failure.status == 410 and state.rv then -- the version seen is gone: from now
      state.failure, state.rv, q.resourceVersion = nil, nil, nil
    end
    if state.failure then return nil, state.failure end
    if not ok and err.kind ~= "timeout" then return nil, err end
    -- the server ended the watch (its own time limit) or time is up: again from the last version seen
    if sched.now() - started < 1 and deadline - sched.now() > 1 then sched.sleep(0.5) end
  end
  return errors.fail("timeout", ("watch %s: no event ended the watch in %s s (the API server of %s)"):format(path,
    tostring(seconds), self.endpoint.description), {endpoint = self.endpoint.description})
end

-- ---- streams ----

-- client:stream_options(path, extra) -> the options of a WebSocket stream (exec) to `path`
function KubeClient:stream_options(path, extra)
  local o = self:_options(path, {websocket = true})
  for k, v in pairs(extra or {}) do
    if k == "headers" then
      for name, value in pairs(v) do o.headers[name] = value end
    else
      o[k] = v
    end
  end
  return o
end

-- ---- connecting ----

local function description(conn)
  return ("k8s://%s (%s)"):format(conn.context or "?", conn.server)
end

-- kube.connect(conn) -> client | nil, err   conn: what luagent.kube.config.load returns
function kube.connect(conn)
  if type(conn) ~= "table" or type(conn.server) ~= "string" then
    error("kube.connect: conn must be a connection from luagent.kube.config.load (a table with server)", 2)
  end
  local key = credentials_key(conn)
  local base = shared[key] or base_of(conn)
  local client = setmetatable({
    conn = conn,
    endpoint = {description = description(conn), server = conn.server, namespace = conn.namespace or "default",
                context = conn.context},
    http = base.http,
    headers = base.headers,
  }, KubeClient)
  if not base.server_version then
    local version, err = client:call("GET", "/version", nil, {timeout = kube.CONNECT_TIMEOUT})
    if not version then return nil, err end
    base.server_version = type(version) == "table" and version.gitVersion or "?"
    shared[key] = base
  end
  client.server_version = base.server_version
  return client
end

return kube

-- luagent.mcp.http: MCP's Streamable HTTP transport (`url = "http://host/mcp"`).
-- Every message is a POST of one JSON-RPC message to the URL, accepting
-- `application/json, text/event-stream`: a request's answer is either one
-- JSON response or a stream of server-sent events carrying the server's
-- notifications (progress) and requests (ping) and, last, the response. The
-- session id the server gives at initialize (Mcp-Session-Id) and the
-- negotiated protocol version (MCP-Protocol-Version) go with every later
-- message; close() ends the session with a DELETE.
--
--   http.open(spec, hooks) -> transport   spec: url, headers (added to each request), label
--   t:request(msg, timeout) -> response | nil, err
--       err.kind: timeout, connect, network, ... (luagent.http's), auth (401/403),
--       mcp (another HTTP status, an answer without the response, a session the server ended)
--   t:send(msg) -> true | nil, err        a notification or a response (HTTP 202)
--   t.protocol_version                    set by the client once negotiated
--   t:fail_pending(err), t:close() -> what became of the session (text)
local http = require "luagent.http"
local json = require "luagent.json"
local errors = require "luagent.errors"
local excerpt = require("luagent.text").excerpt

local mcp_http = {}

local HttpTransport = {}
HttpTransport.__index = HttpTransport

local ACCEPT = "application/json, text/event-stream"
local CLOSE_TIMEOUT = 5
local SEND_TIMEOUT = 10 -- a notification or a response

function mcp_http.open(spec, hooks)
  return setmetatable({url = spec.url, headers = spec.headers or {}, hooks = hooks, label = hooks.label}, HttpTransport)
end

function HttpTransport:_headers()
  local h = {["content-type"] = "application/json", accept = ACCEPT}
  for k, v in pairs(self.headers) do h[k] = tostring(v) end
  if self.session then h["mcp-session-id"] = self.session end
  if self.protocol_version then h["mcp-protocol-version"] = self.protocol_version end
  return h
end

-- The failure for an HTTP status that is not an answer.
function HttpTransport:_status_error(res, what)
  local fields = {server = self.hooks.server, status = res.status}
  local body = excerpt(res.body or "", 300, "flat")
  if res.status == 401 or res.status == 403 then
    return errors.new("auth", ("%s refused %s (HTTP %d): check the headers you give tools.mcp; %s")
      :format(self.label, what, res.status, body), fields)
  end
  if res.status == 404 and self.session then
    return errors.new("mcp", ("%s ended the session (HTTP 404 to %s): connect again"):format(self.label, what), fields)
  end
  return errors.new("mcp", ("%s answered %s with HTTP %d: %s"):format(self.label, what, res.status, body), fields)
end

-- POSTs msg; messages in the answer go to on_message, the response to msg
-- (if it has an id) is returned.
function HttpTransport:_post(msg, timeout)
  local response, buffered, sse_parser, kind = nil, {}, nil, nil
  local function take(m)
    if type(m) ~= "table" then return end
    if json.is_array(m) then
      for _, item in ipairs(m) do take(item) end
    elseif m.method == nil and m.id ~= nil and m.id == msg.id then
      response = m
    elseif m.method ~= nil then
      self.hooks.on_message(m)
    end
  end
  local on_event = function(ev)
    if ev.data and ev.data:match("%S") then
      local m = json.decode(ev.data)
      if m == nil then self.hooks.on_garbage(ev.data) else take(m) end
    end
    return true -- the server ends the stream after the response
  end
  local on_sse
  local res, err = http.request{
    method = "POST", url = self.url, headers = self:_headers(), body = json.encode(msg), timeout = timeout,
    on_chunk = function(chunk)
      if not kind then -- a JSON body starts with { or [; an event stream with a field name or a comment
        local first = chunk:match("^%s*(.)")
        if not first then return true end
        kind = (first == "{" or first == "[") and "json" or "sse"
        if kind == "sse" then on_sse, sse_parser = http.sse(on_event) end
      end
      if kind == "json" then
        buffered[#buffered + 1] = chunk
        return true
      end
      return on_sse(chunk)
    end,
  }
  if sse_parser then sse_parser:close() end
  if not res then
    return nil, errors.wrap(err, ("%s at %s (%s)"):format(self.label, self.url, msg.method or "a response"))
  end
  if res.status < 200 or res.status >= 300 then return nil, self:_status_error(res, msg.method or "a response") end
  if res.headers["mcp-session-id"] then self.session = res.headers["mcp-session-id"] end
  if kind == "json" then
    local m = json.decode(table.concat(buffered))
    if m == nil then
      self.hooks.on_garbage(table.concat(buffered))
      return nil, errors.new("protocol", ("%s answered %s with a body that is not JSON"):format(self.label, msg.method),
                             {server = self.hooks.server})
    end
    take(m)
  end
  return res, response
end

function HttpTransport:request(msg, timeout)
  if self.dead then return nil, self.dead end
  local res, response = self:_post(msg, timeout)
  if not res then return nil, response end
  if response then return response end
  if self.dead then return nil, self.dead end
  return errors.fail("mcp", ("%s answered %s (HTTP %d) without its JSON-RPC response"):format(self.label, msg.method,
                     res.status), {server = self.hooks.server})
end

function HttpTransport:send(msg)
  if self.dead then return nil, self.dead end
  local res, err = self:_post(msg, SEND_TIMEOUT)
  if not res then return nil, err end
  return true
end

-- A request waiting now is inside its own POST; a failure there is its own.
function HttpTransport:fail_pending(err)
  self.dead = err
end

function HttpTransport:close()
  if self.closed then return end
  self.closed = true
  self.dead = self.dead or errors.new("closed", self.label .. " is closed", {server = self.hooks.server})
  if self.session then
    local res, err = http.request{method = "DELETE", url = self.url, headers = self:_headers(), timeout = CLOSE_TIMEOUT}
    return res and ("session ended (HTTP %d)"):format(res.status) or ("session not ended: %s"):format(err.message)
  end
end

return mcp_http

-- luagent.mcp.client: one connection to an MCP server, over any transport
-- (luagent.mcp.stdio, .http; each has request, send, fail_pending, close).
--
--   client.connect(spec, transport_module) -> c | nil, err
--       initialize (the latest protocol version we speak is offered; the
--       server's answer must be one we speak), then notifications/initialized
--   c:list_tools() -> {tool...} | nil, err        every page (nextCursor)
--   c:call(name, arguments [, {timeout, tool, turn}]) -> result | nil, err
--       with a progress token: the server's notifications/progress become
--       mcp_progress events (the live view shows them); a call that times
--       out or is cancelled (Ctrl-C, task:cancel) is cancelled at the server
--       too (notifications/cancelled), and a cancel is raised on
--   c:tools{only, prefix} -> tools | nil, err      as luagent tools (luagent.mcp.tools)
--   c:close([grace])   idempotent; <close> too    a stdio server gets `grace` seconds (2) to exit
--   c.name, c.label, c.protocol_version, c.server_info, c.capabilities, c.instructions
--
-- Errors name the server: kind mcp (a JSON-RPC error; the server exited),
-- protocol (it does not speak MCP), timeout, and the transport's.
-- The server's requests: ping is answered; others are refused (-32601):
-- luagent offers the server no roots, sampling or elicitation.
local json = require "luagent.json"
local errors = require "luagent.errors"
local events = require "luagent.events"
local sched = require "luagent.sched"
local host = require "luagent.host"
local excerpt = require("luagent.text").excerpt
local handle = require "luagent.handle"

local client = {}

-- Newest first; the first is offered.
client.PROTOCOL_VERSIONS = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

local MAX_PAGES = 1000

local McpClient = {}
McpClient.__index = McpClient

local function str_or(v, default)
  if type(v) == "string" then return v end
  return default
end

-- ---- messages ----

function McpClient:_fail(kind, message, fields)
  fields = fields or {}
  fields.server = self.name
  return errors.new(kind, self.label .. " " .. message, fields)
end

-- The JSON-RPC error of a response as an error value.
function McpClient:_rpc_error(method, e)
  local message = type(e) == "table" and str_or(e.message, "no message") or tostring(e)
  local code = type(e) == "table" and math.tointeger(e.code) or nil
  return self:_fail("mcp", ("refused %s: %s%s"):format(method, message, code and (" (JSON-RPC error " .. code .. ")") or ""),
                    {code = code, data = type(e) == "table" and e.data or nil})
end

function McpClient:_send(msg)
  msg.jsonrpc = "2.0"
  return self.t:send(msg)
end

-- Tells the server a request of ours is abandoned; what fails here is only traced.
function McpClient:_cancel(id, method, reason)
  local ok, err = self:_send({method = "notifications/cancelled", params = {requestId = id, reason = reason}})
  events.emit({type = "mcp_cancelled", server = self.name, id = id, method = method, reason = reason,
               error = not ok and err and err.message or nil})
end

-- request(method, params, timeout) -> result | nil, err; a cancel is raised
-- on after the server is told.
function McpClient:_request(method, params, timeout)
  self.next_id = self.next_id + 1
  local id = self.next_id
  local ok, response, err = pcall(self.t.request, self.t, {jsonrpc = "2.0", id = id, method = method, params = params},
                                  timeout)
  if not ok then
    if type(response) == "table" and response.kind == "cancelled" and method ~= "initialize" then
      self:_cancel(id, method, "cancelled by luagent: " .. tostring(response.message))
    end
    error(response, 0)
  end
  if not response then
    if err.kind == "timeout" and method ~= "initialize" then
      self:_cancel(id, method, ("no answer within %s s"):format(tostring(timeout)))
    end
    return nil, err
  end
  if response.error ~= nil and response.error ~= json.null then return nil, self:_rpc_error(method, response.error) end
  if type(response.result) ~= "table" then
    return nil, self:_fail("protocol", ("answered %s without a result object"):format(method))
  end
  return response.result
end

-- The server's requests and notifications.
function McpClient:_on_message(m)
  local method = m.method
  if m.id ~= nil and m.id ~= json.null then -- a request
    if not self.ready and method ~= "ping" then
      local what = method == "initialize"
        and "it sent our own initialize request back (does it echo its input? is it an MCP server?)"
        or ("before answering initialize it sent a %q request"):format(tostring(method))
      self.t:fail_pending(self:_fail("protocol", "does not speak MCP: " .. what))
    elseif method == "ping" then
      self:_send({id = m.id, result = {}})
    else
      self:_send({id = m.id, error = {code = -32601, message = "luagent does not support " .. tostring(method)}})
    end
    return
  end
  local params = type(m.params) == "table" and m.params or {}
  if method == "notifications/progress" then
    local call = self.progress[params.progressToken]
    if call then
      local function number(v) return type(v) == "number" and v or nil end
      events.emit({type = "mcp_progress", server = self.name, tool = call.tool, turn = call.turn,
                   progress = number(params.progress), total = number(params.total),
                   message = str_or(params.message, nil)})
    end
  elseif method == "notifications/message" then
    events.emit({type = "mcp_log", server = self.name, level = params.level, logger = params.logger, data = params.data})
  elseif method == "notifications/tools/list_changed" then
    events.emit({type = "mcp_tools_changed", server = self.name})
  end
end

-- A line or body that is not JSON: during initialize it means the program is
-- no MCP server; later it is traced and skipped.
function McpClient:_on_garbage(text)
  events.emit({type = "mcp_garbage", server = self.name, text = excerpt(text, 2000, "flat")})
  if not self.ready then
    self.t:fail_pending(self:_fail("protocol", ("does not speak MCP: it printed %q where a JSON-RPC message belongs")
      :format(excerpt(text, 120, "flat"))))
  end
end

-- ---- the life of a connection ----

local function supported(version)
  for _, v in ipairs(client.PROTOCOL_VERSIONS) do
    if v == version then return true end
  end
  return false
end

function McpClient:_initialize()
  local result, err = self:_request("initialize", {
    protocolVersion = client.PROTOCOL_VERSIONS[1], capabilities = {},
    clientInfo = {name = "luagent", version = host.version},
  }, self.start_timeout)
  if not result then return nil, err end
  local version = result.protocolVersion
  if type(version) ~= "string" then
    return nil, self:_fail("protocol", "does not speak MCP: its answer to initialize has no protocolVersion")
  end
  if not supported(version) then
    return nil, self:_fail("mcp", ("speaks MCP version %s, which luagent does not (it speaks %s): "
      .. "use a server that speaks one of them"):format(version, table.concat(client.PROTOCOL_VERSIONS, ", ")),
      {protocol_version = version})
  end
  self.protocol_version = version
  self.t.protocol_version = version
  self.capabilities = type(result.capabilities) == "table" and result.capabilities or {}
  self.server_info = type(result.serverInfo) == "table" and result.serverInfo or {}
  self.instructions = str_or(result.instructions, nil)
  self.ready = true
  local ok
  ok, err = self:_send({method = "notifications/initialized"})
  if not ok then return nil, err end
  return true
end

-- A connection that could not be made: traced, and nil, err.
function McpClient:_failed(err)
  events.emit({type = "mcp_failed", server = self.name, error = err.message, kind = err.kind})
  return nil, err
end

function client.connect(spec, transport)
  local c = setmetatable({name = spec.name, label = spec.label, next_id = 0, progress = {}, next_token = 0,
                          timeout = spec.timeout, start_timeout = spec.start_timeout}, McpClient)
  -- born closed (luagent.handle): until it has initialized, every way out of
  -- here ends what it started at once (close(0)), and its methods refuse it
  local building <close> = handle.building(c, function() c:close(0) end)
  local started = sched.now()
  local t, err = transport.open(spec, {
    label = spec.label, server = spec.name,
    on_message = function(m) c:_on_message(m) end,
    on_garbage = function(text) c:_on_garbage(text) end,
  })
  if not t then return c:_failed(err) end
  c.t = t
  local ok, raised = pcall(function()
    local done
    done, err = c:_initialize()
    return done
  end)
  if not (ok and raised) then
    if not ok then error(raised, 0) end
    return c:_failed(err)
  end
  events.emit({type = "mcp_start", server = c.name, transport = spec.transport, command = spec.command_text,
               url = spec.url, pid = t.pid and t.pid() or nil, protocol_version = c.protocol_version,
               server_info = {name = c.server_info.name, version = c.server_info.version},
               duration = sched.now() - started})
  return building:built()
end

function McpClient:list_tools()
  if self.closed then return nil, self:_fail("closed", "is closed") end
  if not self.capabilities.tools then
    return nil, self:_fail("mcp", "offers no tools (its capabilities name no 'tools')")
  end
  local all, cursor, seen = {}, nil, {}
  for _ = 1, MAX_PAGES do
    local result, err = self:_request("tools/list", cursor and {cursor = cursor} or nil, self.timeout)
    if not result then return nil, err end
    if type(result.tools) ~= "table" then return nil, self:_fail("protocol", "answered tools/list without a tools list") end
    for _, tool in ipairs(result.tools) do
      if type(tool) ~= "table" or type(tool.name) ~= "string" then
        return nil, self:_fail("protocol", "listed a tool without a name")
      end
      all[#all + 1] = tool
    end
    local next_cursor = result.nextCursor
    if next_cursor == nil or next_cursor == json.null then return all end
    if seen[next_cursor] then
      return nil, self:_fail("protocol", ("gave the tools/list cursor %q twice"):format(tostring(next_cursor)))
    end
    seen[next_cursor], cursor = true, next_cursor
  end
  return nil, self:_fail("protocol", ("has more than %d pages of tools"):format(MAX_PAGES))
end

function McpClient:call(name, arguments, opts)
  opts = opts or {}
  if self.closed then return nil, self:_fail("closed", "is closed") end
  if type(arguments) ~= "table" or (json.is_array(arguments) and #arguments == 0) then arguments = {} end
  self.next_token = self.next_token + 1
  local token = "luagent-" .. self.next_token
  self.progress[token] = {tool = opts.tool or name, turn = opts.turn}
  local ok, result, err = pcall(self._request, self, "tools/call",
                                {name = name, arguments = arguments, _meta = {progressToken = token}},
                                opts.timeout or self.timeout)
  self.progress[token] = nil
  if not ok then error(result, 0) end
  if not result and err.kind == "timeout" then
    err = self:_fail("timeout", ("did not finish the tool %s within %s s (the call is cancelled; give tools.mcp a "
      .. "longer timeout if it needs more)"):format(name, tostring(opts.timeout or self.timeout)))
  end
  return result, err
end

-- c:tools{only, prefix} -> list | nil, err   (luagent.mcp.tools)
function McpClient:tools(opts)
  return require("luagent.mcp.tools").of(self, opts)
end

-- Idempotent; a client that never connected (born closed) ends what it
-- started, if anything (its transport).
function McpClient:close(grace)
  if self.ended then return end
  self.ended, self.closed = true, true
  if not self.t then return end
  local how = self.t:close(grace or 2)
  events.emit({type = "mcp_close", server = self.name, how = how})
end

-- <close>: a scope left by an error (a failure, Ctrl-C) ends the server at once.
function McpClient:__close(err)
  self:close(err ~= nil and 0 or nil)
end

return client

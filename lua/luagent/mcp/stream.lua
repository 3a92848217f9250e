-- luagent.mcp.stream: MCP's stdio transport over any pair of byte streams —
-- JSON-RPC messages one per line on the server's stdin and stdout, its
-- stderr a log (an event per line, capped). The process behind the streams
-- is the caller's (luagent.mcp.stdio: a host process; a sandbox process
-- next), given as `io`:
--
--   io:write(data) -> true | nil, err      to the server's stdin (may yield)
--   io:pump(on_stdout, on_stderr) -> "stopped" | "ended"
--       reads both streams, calling on_stdout(bytes) and on_stderr(bytes);
--       "stopped" when on_stdout returned false, "ended" when stdout ended
--       (the server is gone and its stderr is read to the end); a cancel
--       (task:cancel) raises out of it and loses no byte
--   io:status() -> "exited with status 1" | "was killed by signal KILL" ...
--   io:close(grace, on_stderr)   stdin closed, `grace` seconds to exit,
--       then killed; the rest of its stderr goes to on_stderr
--   io:kill()                     ends it now (the pump then sees "ended")
--
--   stream.new(io, hooks) -> s   hooks: label ("the MCP server 'fs'"), server (its name),
--                                on_message(msg) for the server's requests and notifications,
--                                on_garbage(line) for a stdout line that is not JSON
--   s:request(msg, timeout) -> response | nil, err   (kind timeout, mcp: the server is gone)
--   s:send(msg) -> true | nil, err    a notification or a response
--   s:fail_pending(err)                every request waiting now gets err
--   s:close(grace) -> how it ended (io:status())   idempotent
--
-- Reading happens only while a request waits (a task running io:pump), so a
-- run whose requests are answered ends without waiting for the server; a
-- waiting request sleeps in a small "latch" task that the pump cancels when
-- the answer is there, and that returns "timeout" when it is not.
local json = require "luagent.json"
local errors = require "luagent.errors"
local events = require "luagent.events"
local sched = require "luagent.sched"
local lines = require "luagent.lines"

local stream = {}

local McpStream = {}
McpStream.__index = McpStream

local MAX_LINE = 64 * 1024 * 1024 -- one message; longer is a broken server
local STDERR_EVENTS = 200         -- stderr lines traced per server; then one note
local STDERR_LINE = 2000          -- characters kept of a stderr line
local RECENT = 20                 -- last stderr lines kept to say why a server ended

function stream.new(io, hooks)
  return setmetatable({io = io, hooks = hooks, label = hooks.label, pending = {}, npending = 0,
                       out = lines.splitter(), err = lines.splitter(), -- its stdout and stderr, in lines
                       stderr_lines = 0, outq = {}, recent = {}}, McpStream)
end

-- ---- the server's stderr: an event per line ----

function McpStream:_stderr_line(line)
  line = line:gsub("\r$", "")
  if line:match("%S") then
    self.recent[#self.recent + 1] = line:sub(1, 300)
    if #self.recent > RECENT then table.remove(self.recent, 1) end
  end
  self.stderr_lines = self.stderr_lines + 1
  if self.stderr_lines <= STDERR_EVENTS then
    if #line > STDERR_LINE then line = line:sub(1, STDERR_LINE) .. " [...]" end
    events.emit({type = "mcp_stderr", server = self.hooks.server, line = line})
  elseif self.stderr_lines == STDERR_EVENTS + 1 then
    events.emit({type = "mcp_stderr", server = self.hooks.server,
                 line = ("[luagent: more stderr lines of this server are not traced (only the first %d are)]")
                   :format(STDERR_EVENTS)})
  end
end

function McpStream:_on_stderr(data)
  self.err:feed(data, function(line) self:_stderr_line(line) end)
  if self.err.bytes > STDERR_LINE * 4 then self:_stderr_line(self.err:take()) end
end

-- What is left of its stderr (a last line without a newline) goes to the trace.
function McpStream:_flush_stderr()
  if self.err.bytes > 0 then self:_stderr_line(self.err:take()) end
end

-- The line of its last stderr lines that best says why a server ended: the
-- last that reads like an error (not a stack frame), else the last with words.
function McpStream:_why(killed)
  local words
  for i = #self.recent, 1, -1 do
    local line = self.recent[i]
    local frame = line:match("^%s+at ") or line:match("^%s+File \"")
    if not frame and (line:match("[Ee]rror") or line:match("[Ee]xception") or line:match("[Ff]ail")) then return line end
    if not words and not frame and line:match("^%S") and line:match("%a%a") then words = line end
  end
  if killed then return nil end -- its last words were not about why
  return words or self.recent[#self.recent]
end

-- ---- the server's stdout: messages ----

-- Wakes the request waiting for id with its response (or err).
function McpStream:_answer(id, response, err)
  local entry = self.pending[id]
  if not entry then return false end
  self.pending[id] = nil
  self.npending = self.npending - 1
  entry.response, entry.err = response, err
  entry.latch:cancel()
  return true
end

function McpStream:_message(msg)
  if type(msg) ~= "table" then
    return self.hooks.on_garbage(json.encode(msg))
  end
  if json.is_array(msg) then -- a batch
    for _, m in ipairs(msg) do self:_message(m) end
    return
  end
  if msg.method == nil and msg.id ~= nil and (msg.result ~= nil or msg.error ~= nil) then
    if not self:_answer(msg.id, msg) then
      events.emit({type = "mcp_late_response", server = self.hooks.server, id = msg.id})
    end
  else
    self.hooks.on_message(msg)
  end
end

function McpStream:_on_stdout(data)
  self.out:feed(data, function(line)
    line = line:gsub("\r$", "")
    if line:match("%S") then
      local msg = json.decode(line)
      if msg == nil then self.hooks.on_garbage(line) else self:_message(msg) end
    end
  end)
  if self.out.bytes > MAX_LINE then self.hooks.on_garbage(self.out:take():sub(1, 200)) end
  return self.npending > 0
end

-- ---- the pump: reads while requests wait ----

function McpStream:_died()
  local status = self.io:status()
  local last = self:_why(status:match("killed") ~= nil)
  local why = ("%s %s"):format(self.label, status)
  if last then why = why .. ": " .. last end
  self.dead = errors.new("mcp", why, {server = self.hooks.server})
  events.emit({type = "mcp_exit", server = self.hooks.server, status = status, stderr = last})
  self:fail_pending(self.dead)
end

function McpStream:_pump_task()
  local me
  me = sched.spawn(function()
    local ok, how = pcall(self.io.pump, self.io, function(data) return self:_on_stdout(data) end,
                          function(data) self:_on_stderr(data) end)
    if self.pump == me then self.pump, self.pump_stopping = nil, nil end
    if ok and how == "ended" then
      self:_flush_stderr()
      self:_died()
    elseif not ok and not (type(how) == "table" and how.kind == "cancelled") then
      self.dead = errors.new("mcp", ("%s cannot be read: %s"):format(self.label, tostring(how)), {server = self.hooks.server})
      self:fail_pending(self.dead)
    end
  end)
  return me
end

function McpStream:_ensure_pump()
  if self.pump and self.pump_stopping then self.pump:wait() end -- a stopped pump finishes first
  if not self.pump and not self.dead then self.pump = self:_pump_task() end
end

function McpStream:_stop_pump()
  if self.pump and self.npending == 0 and not self.pump_stopping then
    self.pump_stopping = true
    self.pump:cancel()
  end
end

-- ---- writing: one task at a time; the others queue ----

function McpStream:_write(data)
  if self.writing then
    self.outq[#self.outq + 1] = data
    return true
  end
  self.writing = true
  local done, ok, err = pcall(function()
    local wrote, why = self.io:write(data)
    while wrote and #self.outq > 0 do wrote, why = self.io:write(table.remove(self.outq, 1)) end
    return wrote, why
  end)
  self.writing = nil
  if not (done and ok) then self.outq = {} end
  if not done then -- cancelled while the pipe was full: a message may be cut, nothing after it would parse
    self.dead = errors.new("mcp", self.label .. " was cut off in the middle of a message (a write was cancelled)",
                           {server = self.hooks.server})
    self.io:kill()
    error(ok, 0)
  end
  return ok, err
end

-- ---- requests ----

function McpStream:fail_pending(err)
  for id in pairs(self.pending) do self:_answer(id, nil, err) end
end

function McpStream:request(msg, timeout)
  if self.dead then return nil, self.dead end
  local entry = {}
  entry.latch = sched.spawn(function()
    sched.sleep(timeout)
    return "timeout"
  end)
  self.pending[msg.id] = entry
  self.npending = self.npending + 1
  local function done()
    if self.pending[msg.id] == entry then
      self.pending[msg.id] = nil
      self.npending = self.npending - 1
    end
    entry.latch:close()
    self:_stop_pump()
  end
  local ok, outcome, why = pcall(function()
    self:_ensure_pump()
    -- a failed write needs no answer here: the server is gone, and the pump
    -- sees its end and answers every request with why
    self:_write(json.encode(msg) .. "\n")
    return entry.latch:wait()
  end)
  done()
  if entry.response or entry.err then return entry.response, entry.err end
  if ok and outcome == "timeout" then
    return errors.fail("timeout", ("%s did not answer %s within %s s"):format(self.label, msg.method, tostring(timeout)),
                       {server = self.hooks.server})
  end
  -- our own task was cancelled (Ctrl-C, task:cancel), or the latch with it
  if ok then error(why, 0) end
  error(outcome, 0)
end

function McpStream:send(msg)
  if self.dead then return nil, self.dead end
  return self:_write(json.encode(msg) .. "\n")
end

function McpStream:close(grace)
  if self.closed then return end
  self.closed = true
  if self.pump then
    self.pump_stopping = true
    self.pump:cancel()
    self.pump:wait()
  end
  self.dead = self.dead or errors.new("closed", self.label .. " is closed", {server = self.hooks.server})
  self:fail_pending(self.dead)
  self.io:close(grace, function(data) self:_on_stderr(data) end)
  self:_flush_stderr()
  return self.io:status()
end

return stream

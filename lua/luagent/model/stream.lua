-- luagent.model.stream: what the providers' stream assemblers share. A
-- provider writes only what its events mean:
--
--   local Stream = stream.class{done_data = "[DONE]"}   -- done_data: a data line that ends the stream
--   function Stream:on_data(data, kind) ... return true end    -- one decoded event (kind: data.type or
--                                                               -- the event name); false stops the stream
--   function Stream:missing(cut) return not self.done and "message_stop" or nil end
--   function Stream:result() return {text = ..., tool_calls = ...} end
--   function wire.stream(m, req) return stream.new(Stream, m, req, {blocks = {}}) end
--
-- and uses self:add_text(piece) (kept, and handed to on_delta), self:fail(kind,
-- message) and self:error_event(KINDS, code, message). The base decodes each
-- event's JSON, keeps the first failure, and decides a failure's kind once:
-- after part of the answer was handed to on_delta every failure is
-- bad_response, since a retry would show that part twice.
local json = require "luagent.json"
local errors = require "luagent.errors"
local content = require "luagent.model.content"

local stream = {}

-- A stream event's JSON data, or nil and the failure that ends the stream.
function stream.decode_event(ev)
  local data, err = json.decode(ev.data)
  if type(data) == "table" then return data end
  return nil, errors.new("bad_response", "a stream event is not valid JSON: " .. (err and err.message or ev.data))
end

local Base = {}

function stream.class(fields)
  local class = setmetatable(fields or {}, {__index = Base})
  class.__index = class
  return class
end

-- An assembler of `class` for model m and request req; `fields` are its own state.
function stream.new(class, m, req, fields)
  local self = setmetatable({m = m, text = {}, shown = false}, class)
  local user_on_delta = req.on_delta
  self.on_delta = function(piece)
    self.shown = true
    if user_on_delta then user_on_delta(piece) end
  end
  for k, v in pairs(fields or {}) do self[k] = v end
  return self
end

function Base:event(ev)
  if self.failure then return false end
  if self.done_data and ev.data == self.done_data then
    self.done = true
    return true
  end
  local data, failure = stream.decode_event(ev)
  if not data then
    self.failure = failure
    return false
  end
  return self:on_data(data, data.type or ev.event)
end

-- A piece of the answer's text: kept (in `into`, or the answer's text) and handed to on_delta.
function Base:add_text(piece, into)
  into = into or self.text
  into[#into + 1] = piece
  self.on_delta(piece)
end

-- Ends the stream with a failure (the first one is kept); returns false for on_data.
function Base:fail(kind, message, fields)
  if self.failure then return false end
  local copy = {}
  for k, v in pairs(fields or {}) do copy[k] = v end
  if self.shown and kind ~= "bad_response" then
    kind, message, copy.retry_after = "bad_response", message .. " (after part of the answer was streamed)", nil
  end
  self.failure = errors.new(kind, message, copy)
  return false
end

-- A provider's error event: its kind from the provider's table of codes, server when unknown.
function Base:error_event(kinds, code, message, fields)
  return self:fail(kinds[code] or "server", "error in the stream: " .. tostring(message or code), fields)
end

-- The assembled result, or the failure; a stream that stopped before its end is bad_response.
function Base:finish(cut)
  if self.failure then return nil, self.failure end
  local missing = self:missing(cut)
  if missing then
    local message = type(cut) == "string" and "the stream was cut off: " .. cut
      or "the stream ended before " .. missing
    self:fail("bad_response", message)
    return nil, self.failure
  end
  return self:result()
end

-- Calls whose arguments arrived in pieces, {{id, name, pieces}}, as tool calls.
function stream.tool_calls(list)
  local calls = {}
  for i, c in ipairs(list) do calls[i] = content.tool_call(c.id, c.name, table.concat(c.pieces)) end
  return calls
end

return stream

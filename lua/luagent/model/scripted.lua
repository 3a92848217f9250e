-- luagent.model.scripted: a model that answers from a script, for tests and
-- demos without a provider or a network.
--
--   model.scripted{replies = {reply, ...}}  or  model.scripted{reply, ...}
--   model.scripted(function(request, n) return reply end [, {name = "..."}])
--
-- A reply is {text = ..., tool_calls = {{name, arguments}}} (ids are made up)
-- or {error = {kind, message}}, which the call returns as a luagent.errors
-- value. Usage is estimated at 4 characters a token; the cost is 0.
local structured = require "luagent.model.structured"
local json = require "luagent.json"
local errors = require "luagent.errors"
local content = require "luagent.model.content"
local call = require "luagent.model.call"

local Scripted = {}
Scripted.__index = Scripted

function Scripted:__tostring() return "scripted model " .. self.model end

local function estimate_tokens(messages)
  local chars = 0
  for _, msg in ipairs(messages) do
    chars = chars + #content.text_of(msg.content)
    for _, c in ipairs(msg.tool_calls or {}) do chars = chars + #(c.arguments_json or "") end
  end
  return math.max(1, chars // 4)
end

local function tool_calls(reply, n)
  local calls = {}
  for i, c in ipairs(reply.tool_calls or {}) do
    local args_json = type(c.arguments) == "string" and c.arguments or json.encode(c.arguments or {})
    calls[i] = content.tool_call(c.id or ("call_scripted_%d_%d"):format(n, i), c.name, args_json)
  end
  return calls
end

-- The script's next reply, once the request was checked (structured.complete, below).
local function reply_of(self, req)
  self.n = self.n + 1
  local reply = self.fn(req, self.n)
  if reply.error then return nil, errors.from(reply.error) end
  local calls = tool_calls(reply, self.n)
  local usage = {input_tokens = estimate_tokens(req.messages), output_tokens = math.max(1, #(reply.text or "") // 4),
                 cached_tokens = 0, estimated = true}
  if req.on_delta and reply.text then req.on_delta(reply.text) end
  return call.answered(self, {text = reply.text, tool_calls = calls, finish_reason = #calls > 0 and "tool_calls" or "stop",
                              usage = usage, cost = 0, provider = "scripted", model = self.model, raw = reply,
                              attempts = 1, duration = 0})
end

-- m:complete(request): with schema or output, the reply's text is the answer's JSON
-- (luagent.model.structured).
function Scripted:complete(req)
  return structured.complete(self, req, reply_of)
end

return function(spec, opts)
  local fn = spec
  if type(spec) == "table" then
    local replies = spec.replies or spec
    fn = function(_, n) return replies[n] or {text = "(the script has no reply " .. n .. ")"} end
  end
  local name = (opts and opts.name) or (type(spec) == "table" and spec.name) or "scripted"
  return setmetatable({fn = fn, n = 0, provider = "scripted", model = name,
    totals = {calls = 0, input_tokens = 0, output_tokens = 0, cached_tokens = 0, cost = 0}}, Scripted)
end

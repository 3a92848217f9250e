-- luagent.model.responses: the OpenAI Responses API wire format
-- (POST /responses). Used through luagent.model: model.openai_responses{...}.
-- Requests are sent with store = false: luagent keeps the transcript itself.
local json = require "luagent.json"
local model = require "luagent.model"

local wire = {
  name = "openai_responses",
  path = "/responses",
  key_env = "OPENAI_API_KEY",
  base_url_env = "OPENAI_BASE_URL",
  default_base_url = "https://api.openai.com/v1",
  default_model = "gpt-4o-mini",
}

-- the same keys and authentication as Chat Completions
local chat = require "luagent.model.openai"
wire.needs_key, wire.headers = chat.needs_key, chat.headers

local function image_part(part)
  return {type = "input_image", image_url = ("data:%s;base64,%s"):format(part.media_type, part.data)}
end

local function user_item(content)
  if type(content) == "string" or #model.images_of(content) == 0 then
    return {role = "user", content = model.text_of(content)}
  end
  local parts = json.array{}
  for _, part in ipairs(content) do
    if part.type == "text" then parts[#parts + 1] = {type = "input_text", text = part.text}
    elseif part.type == "image" then parts[#parts + 1] = image_part(part) end
  end
  return {role = "user", content = parts}
end

-- System messages become `instructions`; the rest are input items. Images a
-- tool returned follow its function_call_output in a user message.
function wire.input(messages)
  local items, instructions, pending = json.array{}, {}, {}
  local function flush()
    if #pending == 0 then return end
    local parts = json.array{{type = "input_text", text = "The images returned by the tool calls above:"}}
    for _, part in ipairs(pending) do parts[#parts + 1] = image_part(part) end
    items[#items + 1] = {role = "user", content = parts}
    pending = {}
  end
  for _, msg in ipairs(messages) do
    if msg.role ~= "tool" then flush() end
    if msg.role == "system" then
      instructions[#instructions + 1] = model.text_of(msg.content)
    elseif msg.role == "user" then
      items[#items + 1] = user_item(msg.content)
    elseif msg.role == "assistant" then
      local text = msg.content and model.text_of(msg.content) or ""
      if text ~= "" then items[#items + 1] = {role = "assistant", content = text} end
      for _, call in ipairs(msg.tool_calls or {}) do
        items[#items + 1] = {type = "function_call", call_id = call.id, name = call.name,
                             arguments = call.arguments_json or json.encode(call.arguments or {})}
      end
    else
      items[#items + 1] = {type = "function_call_output", call_id = msg.tool_call_id, output = model.text_of(msg.content)}
      for _, img in ipairs(model.images_of(msg.content)) do pending[#pending + 1] = img end
    end
  end
  flush()
  return items, #instructions > 0 and table.concat(instructions, "\n\n") or nil
end

function wire.tools(tools)
  local out = json.array{}
  for i, tool in ipairs(tools) do
    out[i] = {type = "function", name = tool.name, description = tool.description,
              parameters = model.schema(tool.parameters or {type = "object"}), strict = false}
  end
  return out
end

function wire.tool_choice(choice)
  if choice == nil or type(choice) == "string" then return choice end
  return {type = "function", name = choice.name}
end

function wire.body(m, req)
  local input, instructions = wire.input(req.messages)
  local body = {model = m.model, input = input, instructions = instructions, store = false}
  if req.tools and #req.tools > 0 then
    body.tools = wire.tools(req.tools)
    body.tool_choice = wire.tool_choice(req.tool_choice)
  end
  body.temperature = req.temperature or m.temperature
  body.max_output_tokens = req.max_tokens or m.max_tokens
  if req.stream then body.stream = true end
  return body
end

local function usage_of(u)
  if type(u) ~= "table" then return nil end
  local inner = type(u.input_tokens_details) == "table" and u.input_tokens_details or {}
  local outer = type(u.output_tokens_details) == "table" and u.output_tokens_details or {}
  return {input_tokens = u.input_tokens or 0, output_tokens = u.output_tokens or 0,
          cached_tokens = type(inner.cached_tokens) == "number" and inner.cached_tokens or 0,
          reasoning_tokens = type(outer.reasoning_tokens) == "number" and outer.reasoning_tokens or nil}
end

local INCOMPLETE = {max_output_tokens = "length", content_filter = "content_filter"}

function wire.parse(_, response)
  if type(response.output) ~= "table" then return nil, "no output" end
  if response.status == "failed" then
    local e = type(response.error) == "table" and response.error or {}
    return nil, "the response failed: " .. tostring(e.message or e.code or "no reason given")
  end
  local text, calls = {}, {}
  for _, item in ipairs(response.output) do
    if item.type == "message" then
      for _, part in ipairs(type(item.content) == "table" and item.content or {}) do
        if part.type == "output_text" and type(part.text) == "string" then text[#text + 1] = part.text end
      end
    elseif item.type == "function_call" then
      if type(item.name) ~= "string" then return nil, "a function_call without a name" end
      calls[#calls + 1] = model.tool_call(item.call_id, item.name, type(item.arguments) == "string" and item.arguments or "")
    end
  end
  local finish = "stop"
  if response.status == "incomplete" then
    local details = type(response.incomplete_details) == "table" and response.incomplete_details or {}
    finish = INCOMPLETE[details.reason] or "length"
  end
  local joined = table.concat(text)
  return {text = joined ~= "" and joined or nil, tool_calls = calls, finish_reason = finish,
          usage = usage_of(response.usage), model = type(response.model) == "string" and response.model or nil,
          id = response.id}
end

-- ---- streaming: typed events; response.completed carries the whole response ----

local Stream = {}
Stream.__index = Stream

function wire.stream(m, req)
  return setmetatable({m = m, on_delta = req.on_delta, text = {}, calls = {}}, Stream)
end

local ERROR_KINDS = {rate_limit_exceeded = "rate_limit", server_error = "server", server_is_overloaded = "server",
                     insufficient_quota = "quota"}

function Stream:event(ev)
  local data, failure = model.decode_event(ev)
  if not data then
    self.failure = failure
    return false
  end
  local kind = data.type or ev.event
  if kind == "response.output_text.delta" and type(data.delta) == "string" then
    self.text[#self.text + 1] = data.delta
    if self.on_delta then self.on_delta(data.delta) end
  elseif kind == "response.output_item.added" and type(data.item) == "table" and data.item.type == "function_call" then
    self.calls[data.output_index or #self.calls] = {id = data.item.call_id, name = data.item.name, args = {}}
  elseif kind == "response.function_call_arguments.delta" and self.calls[data.output_index] then
    table.insert(self.calls[data.output_index].args, data.delta)
  elseif kind == "response.completed" or kind == "response.incomplete" then
    self.final = data.response
  elseif kind == "response.failed" or kind == "error" then
    local e = type(data.response) == "table" and type(data.response.error) == "table" and data.response.error or data
    self.failure = {kind = ERROR_KINDS[e.code] or "server", code = e.code,
                    message = "error in the stream: " .. tostring(e.message or e.code)}
    return false
  end
  return true
end

function Stream:finish()
  if self.failure then return nil, self.failure end
  if type(self.final) ~= "table" then
    return nil, {kind = "bad_response", message = "the stream ended before response.completed"}
  end
  -- the final response is authoritative; the deltas were for on_delta
  local result, why = wire.parse(self.m, self.final)
  if not result then return nil, {kind = "bad_response", message = why} end
  return result
end

return wire

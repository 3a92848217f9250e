-- luagent.model.anthropic: the Anthropic Messages API wire format
-- (POST /v1/messages). Used through luagent.model: model.anthropic{...}; the
-- shape of this table is luagent.model.provider's.
local json = require "luagent.json"
local content = require "luagent.model.content"
local stream = require "luagent.model.stream"
local provider = require "luagent.model.provider"
local structured = require "luagent.model.structured"

local wire = {
  name = "anthropic",
  path = "/v1/messages",
  key_env = "ANTHROPIC_API_KEY",
  base_url_env = "ANTHROPIC_BASE_URL",
  default_base_url = "https://api.anthropic.com",
  default_model = "claude-sonnet-4-5",
  version = "2023-06-01",
  default_max_tokens = 4096, -- the API requires max_tokens
  output_by_tool = true, -- a structured answer is a call of a tool named after it (luagent.model.structured)
}

function wire.needs_key(base_url)
  return base_url:find("api.anthropic.com", 1, true) ~= nil
end

function wire.headers(m)
  local h = {["anthropic-version"] = wire.version}
  if m.api_key then h["x-api-key"] = m.api_key end
  return h
end

local function image_block(part)
  return {type = "image", source = {type = "base64", media_type = part.media_type, data = part.data}}
end

local function blocks(value)
  local out = json.array{}
  if type(value) == "string" then
    if value ~= "" then out[1] = {type = "text", text = value} end
    return out
  end
  for _, part in ipairs(value or {}) do
    if part.type == "text" then out[#out + 1] = {type = "text", text = part.text}
    elseif part.type == "image" then out[#out + 1] = image_block(part) end
  end
  return out
end

local function tool_input(call)
  if type(call.arguments) == "table" then return call.arguments end
  return {} -- invalid arguments were already reported back to the model
end

-- Consecutive messages of one role are merged (tool results into the user
-- turn that follows the assistant's tool calls), so roles alternate.
function wire.messages(messages)
  local out, system = json.array{}, {}
  local function push(role, block_list)
    local last = out[#out]
    if last and last.role == role then
      for _, b in ipairs(block_list) do last.content[#last.content + 1] = b end
    else
      out[#out + 1] = {role = role, content = block_list}
    end
  end
  for _, msg in ipairs(messages) do
    if msg.role == "system" then
      system[#system + 1] = content.text_of(msg.content)
    elseif msg.role == "user" then
      push("user", blocks(msg.content))
    elseif msg.role == "assistant" then
      local b = blocks(msg.content and content.text_of(msg.content) or "")
      for _, call in ipairs(msg.tool_calls or {}) do
        b[#b + 1] = {type = "tool_use", id = call.id, name = call.name, input = tool_input(call)}
      end
      if #b > 0 then push("assistant", b) end -- an empty turn is refused by the API
    else
      local result = {type = "tool_result", tool_use_id = msg.tool_call_id}
      if #content.images_of(msg.content) > 0 then result.content = blocks(msg.content)
      else result.content = content.text_of(msg.content) end
      if msg.is_error then result.is_error = true end
      push("user", json.array{result})
    end
  end
  return out, #system > 0 and table.concat(system, "\n\n") or nil
end

function wire.tools(tools)
  local out = json.array{}
  for i, tool in ipairs(tools) do
    out[i] = {name = tool.name, description = tool.description,
              input_schema = content.parameters(tool)}
  end
  return out
end

function wire.tool_choice(choice)
  if choice == nil then return nil end
  if choice == "auto" then return {type = "auto"} end
  if choice == "required" then return {type = "any"} end
  if choice == "none" then return {type = "none"} end
  return {type = "tool", name = choice.name}
end

-- A structured answer (req.output): a tool named after it, whose input is
-- the answer. It is forced (tool_choice {type = "tool", name}) when the
-- request offers no other tool, gives no tool_choice, or names it; else it
-- is offered beside the others under the request's tool_choice (an agent
-- lets the model use its tools first, then answer through it).
local function with_output(req, body)
  local out = req.output
  body.tools = body.tools or json.array{}
  body.tools[#body.tools + 1] = {name = out.name, description = structured.tool_description(out),
                                 input_schema = structured.wire_schema(out)}
  local choice = req.tool_choice
  if #(req.tools or {}) == 0 or choice == nil or (type(choice) == "table" and choice.name == out.name) then
    body.tool_choice = {type = "tool", name = out.name}
  end
end

function wire.body(m, req)
  local messages, system = wire.messages(req.messages)
  local body = {model = m.model, messages = messages, system = system,
                max_tokens = req.max_tokens or m.max_tokens or wire.default_max_tokens}
  if req.tools and #req.tools > 0 then
    body.tools = wire.tools(req.tools)
    body.tool_choice = wire.tool_choice(req.tool_choice)
  end
  if req.output then with_output(req, body) end
  body.temperature = req.temperature or m.temperature
  if req.stream then body.stream = true end
  return body
end

local STOP = {end_turn = "stop", stop_sequence = "stop", tool_use = "tool_calls", max_tokens = "length",
              refusal = "content_filter", pause_turn = "stop"}

-- Anthropic counts cache reads and writes apart from input_tokens; luagent's
-- input_tokens is every input token.
local function usage_of(u)
  if type(u) ~= "table" then return nil end
  local read = type(u.cache_read_input_tokens) == "number" and u.cache_read_input_tokens or 0
  local written = type(u.cache_creation_input_tokens) == "number" and u.cache_creation_input_tokens or 0
  return {input_tokens = (u.input_tokens or 0) + read + written, output_tokens = u.output_tokens or 0,
          cached_tokens = read, cache_write_tokens = written}
end

function wire.parse(_, msg)
  if type(msg.content) ~= "table" then return provider.unexpected("no content") end
  local text, calls = {}, {}
  for _, block in ipairs(msg.content) do
    if block.type == "text" and type(block.text) == "string" then
      text[#text + 1] = block.text
    elseif block.type == "tool_use" then
      if type(block.name) ~= "string" then return provider.unexpected("a tool_use block without a name") end
      local args = block.input
      calls[#calls + 1] = content.tool_call(block.id, block.name, json.encode(type(args) == "table" and args or {}))
    end
  end
  return {text = content.join(text), tool_calls = calls, finish_reason = STOP[msg.stop_reason] or "stop",
          usage = usage_of(msg.usage), model = type(msg.model) == "string" and msg.model or nil, id = msg.id}
end

-- ---- streaming: message_start, content_block_*, message_delta, message_stop ----

local Stream = stream.class()

function wire.stream(m, req)
  return stream.new(Stream, m, req, {blocks = {}, usage = {}})
end

local ERROR_KINDS = {overloaded_error = "server", api_error = "server", rate_limit_error = "rate_limit",
                     authentication_error = "auth", permission_error = "auth", invalid_request_error = "bad_request"}

local function merge_usage(into, usage)
  for k, v in pairs(type(usage) == "table" and usage or {}) do into[k] = v end
end

function Stream:on_data(data, kind)
  if kind == "message_start" and type(data.message) == "table" then
    self.id, self.model = data.message.id, data.message.model
    merge_usage(self.usage, data.message.usage)
  elseif kind == "content_block_start" and type(data.content_block) == "table" then
    local b = data.content_block
    self.blocks[#self.blocks + 1] = {index = data.index, type = b.type, id = b.id, name = b.name, pieces = {}}
  elseif kind == "content_block_delta" and type(data.delta) == "table" then
    local block = self.blocks[#self.blocks]
    if not block then return true end
    if data.delta.type == "text_delta" and type(data.delta.text) == "string" then
      self:add_text(data.delta.text, block.pieces)
    elseif data.delta.type == "input_json_delta" and type(data.delta.partial_json) == "string" then
      block.pieces[#block.pieces + 1] = data.delta.partial_json
    end
  elseif kind == "message_delta" then
    if type(data.delta) == "table" then self.stop_reason = data.delta.stop_reason end
    merge_usage(self.usage, data.usage)
  elseif kind == "message_stop" then
    self.done = true
  elseif kind == "error" then
    local e = type(data.error) == "table" and data.error or {}
    return self:error_event(ERROR_KINDS, e.type, e.message, {type = e.type})
  end
  return true
end

function Stream:missing()
  return not self.done and "message_stop" or nil
end

-- A block's pieces are its text or its tool call's arguments.
function Stream:result()
  local text, calls = {}, {}
  for _, b in ipairs(self.blocks) do
    if b.type == "text" then text[#text + 1] = table.concat(b.pieces)
    elseif b.type == "tool_use" then calls[#calls + 1] = b end
  end
  return {text = content.join(text), tool_calls = stream.tool_calls(calls), finish_reason = STOP[self.stop_reason] or "stop",
          usage = usage_of(self.usage), model = self.model, id = self.id}
end

return wire

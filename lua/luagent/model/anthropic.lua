-- luagent.model.anthropic: the Anthropic Messages API wire format
-- (POST /v1/messages). Used through luagent.model: model.anthropic{...}; the
-- shape of this table is luagent.model.api's.
local json = require "luagent.json"
local content = require "luagent.model.content"
local stream = require "luagent.model.stream"
local api_contract = require "luagent.model.api"
local structured = require "luagent.model.structured"

local api = {
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

function api.needs_key(base_url)
  return base_url:find("api.anthropic.com", 1, true) ~= nil
end

function api.headers(m)
  local h = {["anthropic-version"] = api.version}
  if m.api_key then h["x-api-key"] = m.api_key end
  return h
end

local function image_block(part)
  return {type = "image", source = {type = "base64", media_type = part.media_type, data = part.data}}
end

-- Content as blocks. The API refuses a text block without a character, so
-- empty text (a tool result made only of images) sends none.
local function blocks(value)
  local out = json.array{}
  if type(value) == "string" then
    if value ~= "" then out[1] = {type = "text", text = value} end
    return out
  end
  for _, part in ipairs(value or {}) do
    if part.type == "text" and type(part.text) == "string" and part.text ~= "" then
      out[#out + 1] = {type = "text", text = part.text}
    elseif part.type == "image" then out[#out + 1] = image_block(part) end
  end
  return out
end

-- The blocks of an assistant turn this API sent, kept verbatim (thinking and
-- redacted_thinking with their signatures come first): the API requires them
-- back with the tool_use they led to. nil for a turn another provider made.
local function own_blocks(msg)
  local items = msg.provider_items
  if type(items) == "table" and items.wire == api.name and type(items.blocks) == "table" then
    return json.array{table.unpack(items.blocks)}
  end
  return nil
end

local function tool_input(call)
  if type(call.arguments) == "table" then return call.arguments end
  return {} -- invalid arguments were already reported back to the model
end

-- Consecutive messages of one role are merged (tool results into the user
-- turn that follows the assistant's tool calls), so roles alternate.
function api.messages(messages)
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
      local b = own_blocks(msg)
      if not b then
        b = blocks(msg.content and content.text_of(msg.content) or "")
        for _, call in ipairs(msg.tool_calls or {}) do
          b[#b + 1] = {type = "tool_use", id = call.id, name = call.name, input = tool_input(call)}
        end
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

-- A tool with Anthropic's own form (text_editor_20250728, bash_20250124)
-- goes as that form: its calls come back as tool_use blocks under the form's
-- name, which the agent knows (tool.native_names).
function api.tools(tools)
  local out = json.array{}
  for i, o in ipairs(content.offered(tools, api.name)) do
    local tool = o.tool
    out[i] = o.native or {name = tool.name, description = tool.description, input_schema = content.parameters(tool)}
  end
  return out
end

function api.tool_choice(choice)
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

-- Prompt caching (req.cache_breakpoints, set by the agent loop): cache_control
-- breakpoints on the last tool, the system prompt and the newest turn's last
-- block — three of the API's four — when the prompt is long enough for the
-- model's cache (the model table's min_cache_tokens; 4 characters a token).
local EPHEMERAL = {type = "ephemeral"}

local function prompt_tokens(body)
  return #json.encode(body) // 4
end

local function place_breakpoints(m, body)
  local least = m.family and m.family.min_cache_tokens or 1024
  if prompt_tokens(body) < least then return end
  if body.tools and #body.tools > 0 then body.tools[#body.tools].cache_control = EPHEMERAL end
  if body.system then body.system = json.array{{type = "text", text = body.system, cache_control = EPHEMERAL}} end
  local last = body.messages[#body.messages]
  local newest = last and last.content
  if type(newest) == "table" and #newest > 0 then
    local block = {}
    for k, v in pairs(newest[#newest]) do block[k] = v end -- a copy: the transcript's blocks stay as they are
    block.cache_control = EPHEMERAL
    newest[#newest] = block
  end
end

function api.body(m, req)
  local messages, system = api.messages(req.messages)
  local body = {model = m.model, messages = messages, system = system,
                max_tokens = req.max_tokens or m.max_tokens or api.default_max_tokens}
  if req.tools and #req.tools > 0 then
    body.tools = api.tools(req.tools)
    body.tool_choice = api.tool_choice(req.tool_choice)
  end
  if req.output then with_output(req, body) end
  local budget = type(m.reasoning) == "table" and m.reasoning.budget_tokens
  -- extended thinking: the API takes no temperature with it
  if budget then body.thinking = {type = "enabled", budget_tokens = budget} end
  api_contract.sampling(m, req, body, budget and "thinking" or "none")
  if req.stream then body.stream = true end
  if req.cache_breakpoints and m.prompt_cache ~= false then place_breakpoints(m, body) end
  return body
end

-- stop_reason -> finish_reason. pause_turn (a long turn the API paused: send
-- it back to continue) and model_context_window_exceeded are not a final
-- answer: the agent continues, or stops saying why.
local STOP = {end_turn = "stop", stop_sequence = "stop", tool_use = "tool_calls", max_tokens = "length",
              refusal = "content_filter", pause_turn = "pause", model_context_window_exceeded = "context_window"}

local function count(v)
  return type(v) == "number" and v or 0
end

-- Anthropic counts cache reads and writes apart from input_tokens; luagent's
-- input_tokens is every input token. Any counter may be null (the SDK's types
-- allow it): it counts 0.
local function usage_of(u)
  if type(u) ~= "table" then return nil end
  local read, written = count(u.cache_read_input_tokens), count(u.cache_creation_input_tokens)
  return {input_tokens = count(u.input_tokens) + read + written, output_tokens = count(u.output_tokens),
          cached_tokens = read, cache_write_tokens = written}
end

local THINKING = {thinking = true, redacted_thinking = true}

-- The text of the thinking blocks, as one (nil when there is none): the trace page shows it.
local function thinking_text(list)
  local parts = {}
  for _, b in ipairs(list) do
    if b.type == "thinking" and type(b.thinking) == "string" and b.thinking ~= "" then parts[#parts + 1] = b.thinking end
  end
  return #parts > 0 and table.concat(parts, "\n\n") or nil
end

-- The result's provider_items when the turn has thinking: every block, verbatim.
local function kept_blocks(list)
  for _, b in ipairs(list) do
    if THINKING[b.type] then return {wire = api.name, blocks = list} end
  end
  return nil
end

function api.parse(_, msg)
  if type(msg.content) ~= "table" then return api_contract.unexpected("no content") end
  local text, calls = {}, {}
  for _, block in ipairs(msg.content) do
    if type(block) ~= "table" then return api_contract.unexpected("a content block that is not an object") end
    if block.type == "text" and type(block.text) == "string" then
      text[#text + 1] = block.text
    elseif block.type == "tool_use" then
      if type(block.name) ~= "string" then return api_contract.unexpected("a tool_use block without a name") end
      local args = block.input
      calls[#calls + 1] = content.tool_call(block.id, block.name, json.encode(type(args) == "table" and args or {}))
    end
  end
  return {text = content.join(text), tool_calls = calls, finish_reason = STOP[msg.stop_reason] or "stop",
          usage = usage_of(msg.usage), model = type(msg.model) == "string" and msg.model or nil, id = msg.id,
          provider_items = kept_blocks(msg.content), reasoning_summary = thinking_text(msg.content)}
end

-- ---- streaming: message_start, content_block_*, message_delta, message_stop ----

local Stream = stream.class()

function api.stream(m, req)
  return stream.new(Stream, m, req, {blocks = {}, usage = {}})
end

local ERROR_KINDS = {overloaded_error = "server", api_error = "server", rate_limit_error = "rate_limit",
                     authentication_error = "auth", permission_error = "auth", invalid_request_error = "bad_request"}

-- message_delta's usage is cumulative; a null counter keeps the earlier one.
local function merge_usage(into, usage)
  for k, v in pairs(type(usage) == "table" and usage or {}) do
    if type(v) == "number" then into[k] = v end
  end
end

function Stream:on_data(data, kind)
  if kind == "message_start" and type(data.message) == "table" then
    self.id, self.model = data.message.id, data.message.model
    merge_usage(self.usage, data.message.usage)
  elseif kind == "content_block_start" and type(data.content_block) == "table" then
    local b = data.content_block
    self.blocks[#self.blocks + 1] = {index = data.index, type = b.type, id = b.id, name = b.name, pieces = {},
                                     signature = b.signature, data = b.data}
  elseif kind == "content_block_delta" and type(data.delta) == "table" then
    local block = self.blocks[#self.blocks]
    if not block then return true end
    if data.delta.type == "text_delta" and type(data.delta.text) == "string" then
      self:add_text(data.delta.text, block.pieces)
    elseif data.delta.type == "input_json_delta" and type(data.delta.partial_json) == "string" then
      block.pieces[#block.pieces + 1] = data.delta.partial_json
    elseif data.delta.type == "thinking_delta" and type(data.delta.thinking) == "string" then
      block.pieces[#block.pieces + 1] = data.delta.thinking
    elseif data.delta.type == "signature_delta" and type(data.delta.signature) == "string" then
      block.signature = data.delta.signature
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

-- A streamed block as the API sends it whole (for provider_items).
local function whole_block(b, call)
  if b.type == "thinking" then return {type = "thinking", thinking = table.concat(b.pieces), signature = b.signature} end
  if b.type == "redacted_thinking" then return {type = "redacted_thinking", data = b.data} end
  if b.type == "text" then return {type = "text", text = table.concat(b.pieces)} end
  if b.type == "tool_use" and call then
    return {type = "tool_use", id = call.id, name = call.name,
            input = type(call.arguments) == "table" and call.arguments or {}}
  end
  return nil
end

-- A block's pieces are its text, its thinking or its tool call's arguments.
function Stream:result()
  local text, uses = {}, {}
  for _, b in ipairs(self.blocks) do
    if b.type == "text" then text[#text + 1] = table.concat(b.pieces)
    elseif b.type == "tool_use" then uses[#uses + 1] = b end
  end
  local calls = stream.tool_calls(uses)
  local whole, n = {}, 0
  for _, b in ipairs(self.blocks) do
    if b.type == "tool_use" then n = n + 1 end
    whole[#whole + 1] = whole_block(b, b.type == "tool_use" and calls[n] or nil)
  end
  return {text = content.join(text), tool_calls = calls, finish_reason = STOP[self.stop_reason] or "stop",
          usage = usage_of(self.usage), model = self.model, id = self.id, provider_items = kept_blocks(whole),
          reasoning_summary = thinking_text(whole)}
end

return api

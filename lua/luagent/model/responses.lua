-- luagent.model.responses: the OpenAI Responses API wire format
-- (POST /responses). Used through luagent.model: model.openai_responses{...};
-- the shape of this table is luagent.model.api's.
-- Requests are sent with store = false: luagent keeps the transcript itself.
local json = require "luagent.json"
local content = require "luagent.model.content"
local stream = require "luagent.model.stream"
local api_contract = require "luagent.model.api"
local patch = require "luagent.tools.patch"
local structured = require "luagent.model.structured"

-- the same servers, keys and authentication as Chat Completions
local chat = require "luagent.model.openai"
local api = {
  name = "openai_responses",
  path = "/responses",
  key_env = chat.key_env,
  base_url_env = chat.base_url_env,
  default_base_url = chat.default_base_url,
  default_model = chat.default_model,
  needs_key = chat.needs_key,
  headers = chat.headers,
}

-- detail is required by the schema: "auto" lets the service choose.
local function image_part(part)
  return {type = "input_image", image_url = content.data_url(part), detail = part.detail or "auto"}
end

-- The output items of a turn this API sent (reasoning with its encrypted
-- content, messages with their phase, function calls), kept verbatim: a
-- stateless request (store = false) passes them back as they came.
-- nil for a turn another provider made.
local function own_items(msg)
  local items = msg.provider_items
  if type(items) == "table" and items.wire == api.name and type(items.output) == "table" then
    return items.output
  end
  return nil
end

-- A reasoning item without its encrypted content refers to what the
-- service stored, and under store = false it stored nothing (it answers 404):
-- such an item is left out.
local function sendable(item)
  return not (type(item) == "table" and item.type == "reasoning" and not item.encrypted_content)
end

local function user_item(value)
  if type(value) == "string" or #content.images_of(value) == 0 then
    return {role = "user", content = content.text_of(value)}
  end
  local parts = json.array{}
  for _, part in ipairs(value) do
    if part.type == "text" then parts[#parts + 1] = {type = "input_text", text = part.text}
    elseif part.type == "image" then parts[#parts + 1] = image_part(part) end
  end
  return {role = "user", content = parts}
end

-- The output item that answers a native call (kind: its item type) with the
-- tool message msg.
local function native_output(kind, msg)
  local text = content.text_of(msg.content)
  if kind == "apply_patch_call" then
    return {type = "apply_patch_call_output", call_id = msg.tool_call_id,
            status = msg.is_error and "failed" or "completed", output = text}
  end
  local native = type(msg.native_output) == "table" and msg.native_output or nil
  local output = native and native.output
    or {{stdout = text, stderr = "", outcome = {type = "exit", exit_code = msg.is_error and 1 or 0}}}
  return {type = "shell_call_output", call_id = msg.tool_call_id, output = json.array(output),
          max_output_length = native and native.max_output_length or nil}
end

local NATIVE_CALLS = {apply_patch_call = "apply_patch", shell_call = "shell"}

-- A native call item as a call of the tool it is answered by: apply_patch's
-- operation as a V4A patch ({patch}), shell's action as its arguments.
local function native_call(item)
  local args
  if item.type == "apply_patch_call" then
    local text, why = patch.of_operation(item.operation)
    args = text and {patch = text} or {operation_error = why}
  else
    args = type(item.action) == "table" and item.action or {}
  end
  local call = content.tool_call(item.call_id, NATIVE_CALLS[item.type], json.encode(args))
  call.native = item.type
  return call
end

-- System messages become `instructions`; the rest are input items. Images a
-- tool returned follow its function_call_output in a user message.
function api.input(messages)
  local items, instructions, pending = json.array{}, {}, {}
  local native_kind = {} -- call_id -> the native call item's type
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
      instructions[#instructions + 1] = content.text_of(msg.content)
    elseif own_items(msg) then -- an assistant turn, or the provider's compaction of earlier turns
      for _, item in ipairs(own_items(msg)) do
        if sendable(item) then items[#items + 1] = item end
        if type(item) == "table" and NATIVE_CALLS[item.type] then native_kind[item.call_id] = item.type end
      end
    elseif msg.role == "user" then
      items[#items + 1] = user_item(msg.content)
    elseif msg.role == "assistant" then
      local text = msg.content and content.text_of(msg.content) or ""
      if text ~= "" then items[#items + 1] = {role = "assistant", content = text} end
      for _, call in ipairs(msg.tool_calls or {}) do
        items[#items + 1] = {type = "function_call", call_id = call.id, name = call.name,
                             arguments = call.arguments_json or json.encode(call.arguments or {})}
      end
    elseif native_kind[msg.tool_call_id] then
      items[#items + 1] = native_output(native_kind[msg.tool_call_id], msg)
    else
      items[#items + 1] = {type = "function_call_output", call_id = msg.tool_call_id, output = content.text_of(msg.content)}
      for _, img in ipairs(content.images_of(msg.content)) do pending[#pending + 1] = img end
    end
  end
  flush()
  return items, #instructions > 0 and table.concat(instructions, "\n\n") or nil
end

-- A tool with the API's own form (apply_patch, shell) goes as that form;
-- its calls come back as apply_patch_call and shell_call items (read below
-- as calls of the tool named apply_patch and shell).
function api.tools(tools)
  local out = json.array{}
  for i, o in ipairs(content.offered(tools, api.name)) do
    local tool = o.tool
    out[i] = o.native or {type = "function", name = tool.name, description = tool.description,
                          parameters = content.parameters(tool), strict = false}
  end
  return out
end


function api.tool_choice(choice)
  if choice == nil or type(choice) == "string" then return choice end
  return {type = "function", name = choice.name}
end

-- Does the model reason at this request's effort, set or its default (the
-- model table: gpt-5 reasons at medium with no setting)?
local function reasons(m)
  if m.reasoning then return api_contract.effort(m) ~= "none" end
  return m.family ~= nil and m.family.reasoning == true and (api_contract.effort(m) or "none") ~= "none"
end

function api.body(m, req)
  local input, instructions = api.input(req.messages)
  local body = {model = m.model, input = input, instructions = instructions, store = false}
  if m.reasoning then body.reasoning = {effort = m.reasoning.effort, summary = m.reasoning.summary} end
  if reasons(m) then
    -- stateless: ask for the reasoning encrypted, to pass it back next turn
    body.include = json.array{"reasoning.encrypted_content"}
  end
  if req.tools and #req.tools > 0 then
    body.tools = api.tools(req.tools)
    body.tool_choice = api.tool_choice(req.tool_choice)
  end
  if req.output then
    -- a structured answer (luagent.model.structured): the output text is its JSON
    local out = req.output
    body.text = {format = {type = "json_schema", name = out.name, description = out.description,
                           schema = structured.wire_schema(out), strict = out.strict}}
  end
  api_contract.sampling(m, req, body, api_contract.effort(m))
  body.max_output_tokens = req.max_tokens or m.max_tokens
  if req.stream then body.stream = true end
  return body
end

local function usage_of(u)
  if type(u) ~= "table" then return nil end
  local inner = type(u.input_tokens_details) == "table" and u.input_tokens_details or {}
  local outer = type(u.output_tokens_details) == "table" and u.output_tokens_details or {}
  local function n(v) return type(v) == "number" and v or nil end
  return {input_tokens = n(u.input_tokens) or 0, output_tokens = n(u.output_tokens) or 0,
          cached_tokens = n(inner.cached_tokens) or 0, cache_write_tokens = n(inner.cache_write_tokens),
          reasoning_tokens = n(outer.reasoning_tokens)}
end

-- The text of a message item: its output_text parts, as one.
local function message_text(item, refusal)
  local parts = {}
  for _, part in ipairs(type(item.content) == "table" and item.content or {}) do
    if part.type == "output_text" and type(part.text) == "string" then parts[#parts + 1] = part.text end
    if part.type == "refusal" and type(part.refusal) == "string" then refusal[#refusal + 1] = part.refusal end
  end
  return table.concat(parts)
end

-- The summary texts of the reasoning items, as one (nil when there is none): the trace page shows it.
local function reasoning_summary(output)
  local parts = {}
  for _, item in ipairs(output) do
    if item.type == "reasoning" then
      for _, part in ipairs(type(item.summary) == "table" and item.summary or {}) do
        if type(part) == "table" and type(part.text) == "string" and part.text ~= "" then parts[#parts + 1] = part.text end
      end
    end
  end
  return #parts > 0 and table.concat(parts, "\n\n") or nil
end

-- Items worth passing back verbatim: anything but plain messages and calls
-- (a reasoning item), or a message with a phase.
local function needs_keeping(output)
  for _, item in ipairs(output) do
    if item.type == "reasoning" or (item.type == "message" and type(item.phase) == "string") then return true end
    if NATIVE_CALLS[item.type] then return true end -- they go back as they came
  end
  return false
end

-- The provider's own compaction (POST /responses/compact): the old part of a
-- transcript in, a shorter list of items (an encrypted compaction item) out,
-- which later requests send as they came (luagent.compaction).
api.compact_path = "/responses/compact"

function api.compact_body(m, req)
  local input, instructions = api.input(req.messages)
  return {model = m.model, input = input, instructions = instructions}
end

function api.parse_compact(_, decoded)
  if type(decoded.output) ~= "table" then return api_contract.unexpected("a compaction without output") end
  return {tool_calls = {}, finish_reason = "stop", usage = usage_of(decoded.usage),
          provider_items = {wire = api.name, output = decoded.output}}
end

local INCOMPLETE = {max_output_tokens = "length", content_filter = "content_filter"}

function api.parse(_, response)
  if type(response.output) ~= "table" then return api_contract.unexpected("no output") end
  if response.status == "failed" then
    local e = type(response.error) == "table" and response.error or {}
    return api_contract.unexpected("the response failed: " .. tostring(e.message or e.code or "no reason given"))
  end
  -- Several message items are several paragraphs; a "commentary" item (a
  -- preamble before tool calls) is not part of the answer.
  local text, calls, refusal, commentary = {}, {}, {}, {}
  for _, item in ipairs(response.output) do
    if type(item) ~= "table" then return api_contract.unexpected("an output item that is not an object") end
    if item.type == "message" then
      local said = message_text(item, refusal)
      if said ~= "" then
        local into = item.phase == "commentary" and commentary or text
        into[#into + 1] = said
      end
    elseif item.type == "function_call" then
      if type(item.name) ~= "string" then return api_contract.unexpected("a function_call without a name") end
      calls[#calls + 1] = content.tool_call(item.call_id, item.name, type(item.arguments) == "string" and item.arguments or "")
    elseif NATIVE_CALLS[item.type] then
      calls[#calls + 1] = native_call(item)
    end
  end
  local finish = "stop"
  if response.status == "incomplete" then
    local details = type(response.incomplete_details) == "table" and response.incomplete_details or {}
    finish = INCOMPLETE[details.reason] or "length"
  end
  return {text = #text > 0 and table.concat(text, "\n\n") or nil, tool_calls = calls, finish_reason = finish,
          commentary = #commentary > 0 and table.concat(commentary, "\n\n") or nil,
          usage = usage_of(response.usage), model = type(response.model) == "string" and response.model or nil,
          id = response.id, refusal = content.join(refusal), reasoning_summary = reasoning_summary(response.output),
          provider_items = needs_keeping(response.output) and {wire = api.name, output = response.output} or nil}
end

-- ---- streaming: typed events; response.completed carries the whole response ----

local Stream = stream.class()

function api.stream(m, req)
  return stream.new(Stream, m, req, {calls = {}})
end

local ERROR_KINDS = {rate_limit_exceeded = "rate_limit", server_error = "server", server_is_overloaded = "server",
                     insufficient_quota = "quota"}

function Stream:on_data(data, kind)
  if kind == "response.output_text.delta" and type(data.delta) == "string" then
    self:add_text(data.delta)
  elseif kind == "response.output_item.added" and type(data.item) == "table" and data.item.type == "function_call" then
    self.calls[data.output_index or #self.calls] = {id = data.item.call_id, name = data.item.name, pieces = {}}
  elseif kind == "response.function_call_arguments.delta" and self.calls[data.output_index] then
    table.insert(self.calls[data.output_index].pieces, data.delta)
  elseif kind == "response.completed" or kind == "response.incomplete" then
    self.final = data.response
  elseif kind == "response.failed" or kind == "error" then
    local e = type(data.response) == "table" and type(data.response.error) == "table" and data.response.error or data
    return self:error_event(ERROR_KINDS, e.code, e.message, {code = e.code})
  end
  return true
end

function Stream:missing()
  return type(self.final) ~= "table" and "response.completed" or nil
end

-- The final response is authoritative; the deltas were for on_delta.
function Stream:result()
  return api.parse(self.m, self.final)
end

return api

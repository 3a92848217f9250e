-- luagent.model.openai: the OpenAI Chat Completions wire format, which every
-- OpenAI-compatible server also speaks (Ollama, vLLM, llama.cpp server, LM
-- Studio, OpenRouter). Used through luagent.model: model.openai{...}; the
-- shape of this table is luagent.model.api's.
local json = require "luagent.json"
local content = require "luagent.model.content"
local stream = require "luagent.model.stream"
local api_contract = require "luagent.model.api"
local structured = require "luagent.model.structured"

local api = {
  name = "openai",
  path = "/chat/completions",
  key_env = "OPENAI_API_KEY",
  base_url_env = "OPENAI_BASE_URL",
  default_base_url = "https://api.openai.com/v1",
  default_model = "gpt-4o-mini",
}

-- The official API needs a key; a local compatible server usually does not.
function api.needs_key(base_url)
  return base_url:find("api.openai.com", 1, true) ~= nil
end

-- Provider-specific options: max_tokens_field (default: the model table's
-- token_field, else max_tokens, which compatible servers take); stream_usage =
-- false for servers that reject stream_options.
function api.options(opts)
  return {max_tokens_field = opts.max_tokens_field, stream_usage = opts.stream_usage ~= false}
end

function api.headers(m)
  return m.api_key and {authorization = "Bearer " .. m.api_key} or {}
end

-- content -> a string, or parts when there are images
local function user_content(value)
  local images = content.images_of(value)
  if type(value) == "string" or #images == 0 then return content.text_of(value) end
  local parts = json.array{}
  for _, part in ipairs(value) do
    if part.type == "text" then parts[#parts + 1] = {type = "text", text = part.text}
    elseif part.type == "image" then parts[#parts + 1] = {type = "image_url", image_url = {url = content.data_url(part)}} end
  end
  return parts
end

local function assistant_message(msg)
  local out = {role = "assistant", content = msg.content and content.text_of(msg.content) or json.null}
  if msg.tool_calls and #msg.tool_calls > 0 then
    out.tool_calls = json.array{}
    for i, call in ipairs(msg.tool_calls) do
      out.tool_calls[i] = {id = call.id, type = "function", ["function"] = {
        name = call.name, arguments = call.arguments_json or json.encode(call.arguments or {})}}
    end
  end
  return out
end

-- Tool results can hold only text here: images they return follow, after the
-- block of tool messages, in one user message.
function api.messages(messages)
  local out, pending_images = json.array{}, {}
  local function flush_images()
    if #pending_images == 0 then return end
    local parts = json.array{{type = "text", text = "The images returned by the tool calls above:"}}
    for _, part in ipairs(pending_images) do
      parts[#parts + 1] = {type = "image_url", image_url = {url = content.data_url(part)}}
    end
    out[#out + 1] = {role = "user", content = parts}
    pending_images = {}
  end
  for _, msg in ipairs(messages) do
    if msg.role ~= "tool" then flush_images() end
    if msg.role == "system" then
      out[#out + 1] = {role = "system", content = content.text_of(msg.content)}
    elseif msg.role == "user" then
      out[#out + 1] = {role = "user", content = user_content(msg.content)}
    elseif msg.role == "assistant" then
      -- an empty turn (no text, no calls) is refused by the API: leave it out
      if content.text_of(msg.content) ~= "" or (msg.tool_calls and #msg.tool_calls > 0) then
        out[#out + 1] = assistant_message(msg)
      end
    else
      out[#out + 1] = {role = "tool", tool_call_id = msg.tool_call_id, content = content.text_of(msg.content)}
      for _, img in ipairs(content.images_of(msg.content)) do pending_images[#pending_images + 1] = img end
    end
  end
  flush_images()
  return out
end

function api.tools(tools)
  local out = json.array{}
  for i, o in ipairs(content.offered(tools, api.name)) do
    local tool = o.tool
    out[i] = {type = "function", ["function"] = {name = tool.name, description = tool.description,
                                                 parameters = content.parameters(tool)}}
  end
  return out
end

function api.tool_choice(choice)
  if choice == nil or type(choice) == "string" then return choice end
  return {type = "function", ["function"] = {name = choice.name}}
end

-- A structured answer (req.output, luagent.model.structured): the message content is its JSON.
function api.response_format(output)
  return {type = "json_schema", json_schema = {name = output.name, description = output.description,
                                               schema = structured.wire_schema(output), strict = output.strict}}
end

function api.body(m, req)
  local body = {model = m.model, messages = api.messages(req.messages)}
  if req.tools and #req.tools > 0 then
    body.tools = api.tools(req.tools)
    body.tool_choice = api.tool_choice(req.tool_choice)
  end
  if req.output then body.response_format = api.response_format(req.output) end
  local effort = api_contract.effort(m)
  api_contract.sampling(m, req, body, effort)
  local field = m.max_tokens_field or (m.family and m.family.token_field) or "max_tokens"
  body[field] = req.max_tokens or m.max_tokens
  if type(m.reasoning) == "table" and m.reasoning.effort then body.reasoning_effort = m.reasoning.effort end
  if req.stream then
    body.stream = true
    if m.stream_usage then body.stream_options = {include_usage = true} end
  end
  return body
end

local FINISH = {stop = "stop", length = "length", tool_calls = "tool_calls", function_call = "tool_calls",
                content_filter = "content_filter"}

local function usage_of(u)
  if type(u) ~= "table" then return nil end
  local details = type(u.prompt_tokens_details) == "table" and u.prompt_tokens_details or {}
  local out_details = type(u.completion_tokens_details) == "table" and u.completion_tokens_details or {}
  local function n(v) return type(v) == "number" and v or nil end
  return {input_tokens = n(u.prompt_tokens) or 0, output_tokens = n(u.completion_tokens) or 0,
          cached_tokens = n(details.cached_tokens) or 0, cache_write_tokens = n(details.cache_write_tokens),
          reasoning_tokens = n(out_details.reasoning_tokens)}
end

local function text_or_nil(v)
  return type(v) == "string" and v or nil
end

function api.parse(_, decoded)
  local choice = type(decoded.choices) == "table" and decoded.choices[1]
  if type(choice) ~= "table" or type(choice.message) ~= "table" then return api_contract.unexpected("no choices[1].message") end
  local msg = choice.message
  local calls = {}
  for i, c in ipairs(type(msg.tool_calls) == "table" and msg.tool_calls or {}) do
    local fn = type(c["function"]) == "table" and c["function"] or {}
    if type(fn.name) ~= "string" then return api_contract.unexpected("a tool call without a function name") end
    calls[i] = content.tool_call(c.id, fn.name, text_or_nil(fn.arguments) or "")
  end
  return {text = text_or_nil(msg.content), tool_calls = calls, finish_reason = FINISH[choice.finish_reason] or "stop",
          usage = usage_of(decoded.usage), model = text_or_nil(decoded.model), id = decoded.id,
          refusal = text_or_nil(msg.refusal)}
end

-- ---- streaming: chat.completion.chunk events, then data: [DONE] ----

local Stream = stream.class{done_data = "[DONE]"}

function api.stream(m, req)
  return stream.new(Stream, m, req, {calls = {}, order = {}})
end

-- The pieces of one tool call, by its index in the chunks.
function Stream:call_piece(d)
  local index = math.tointeger(d.index) or (#self.order)
  local call = self.calls[index]
  if not call then
    call = {pieces = {}}
    self.calls[index] = call
    self.order[#self.order + 1] = index
  end
  call.id = text_or_nil(d.id) or call.id
  local fn = type(d["function"]) == "table" and d["function"] or {}
  -- the name is assigned, as the official SDK does: some compatible servers
  -- repeat it in every chunk, and appending made "get_weatherget_weather"
  if type(fn.name) == "string" and fn.name ~= "" then call.name = fn.name end
  if type(fn.arguments) == "string" then call.pieces[#call.pieces + 1] = fn.arguments end
end

function Stream:on_data(chunk)
  if type(chunk.error) == "table" then
    return self:fail("server", "error in the stream: " .. tostring(chunk.error.message))
  end
  self.id, self.model = self.id or chunk.id, self.model or text_or_nil(chunk.model)
  if type(chunk.usage) == "table" then self.usage = usage_of(chunk.usage) end
  local choice = type(chunk.choices) == "table" and chunk.choices[1]
  if type(choice) ~= "table" then return true end
  local delta = type(choice.delta) == "table" and choice.delta or {}
  if type(delta.content) == "string" and delta.content ~= "" then self:add_text(delta.content) end
  if type(delta.refusal) == "string" then self.refusal = (self.refusal or "") .. delta.refusal end
  for _, d in ipairs(type(delta.tool_calls) == "table" and delta.tool_calls or {}) do self:call_piece(d) end
  if type(choice.finish_reason) == "string" then self.finish_reason = choice.finish_reason end
  return true
end

-- Some servers end without [DONE]; a finish_reason and a clean end will do.
function Stream:missing(cut)
  if not self.done and (cut or not self.finish_reason) then return "its end ([DONE])" end
  return nil
end

function Stream:result()
  table.sort(self.order)
  local calls = {}
  for i, index in ipairs(self.order) do calls[i] = self.calls[index] end
  return {text = content.join(self.text), tool_calls = stream.tool_calls(calls),
          finish_reason = FINISH[self.finish_reason] or "stop", usage = self.usage, model = self.model, id = self.id,
          refusal = self.refusal}
end

return api

-- luagent.model.openai: the OpenAI Chat Completions wire format, which every
-- OpenAI-compatible server also speaks (Ollama, vLLM, llama.cpp server, LM
-- Studio, OpenRouter). Used through luagent.model: model.openai{...}.
local json = require "luagent.json"
local model = require "luagent.model"

local wire = {
  name = "openai",
  path = "/chat/completions",
  key_env = "OPENAI_API_KEY",
  base_url_env = "OPENAI_BASE_URL",
  default_base_url = "https://api.openai.com/v1",
  default_model = "gpt-4o-mini",
}

-- The official API needs a key; a local compatible server usually does not.
function wire.needs_key(base_url)
  return base_url:find("api.openai.com", 1, true) ~= nil
end

-- Provider-specific options: max_tokens_field = "max_completion_tokens" for
-- reasoning models; stream_usage = false for servers that reject stream_options.
function wire.options(opts)
  return {max_tokens_field = opts.max_tokens_field or "max_tokens", stream_usage = opts.stream_usage ~= false}
end

function wire.headers(m)
  return m.api_key and {authorization = "Bearer " .. m.api_key} or {}
end

local function data_url(part)
  return ("data:%s;base64,%s"):format(part.media_type, part.data)
end

-- content -> a string, or parts when there are images
local function user_content(content)
  local images = model.images_of(content)
  if type(content) == "string" or #images == 0 then return model.text_of(content) end
  local parts = json.array{}
  for _, part in ipairs(content) do
    if part.type == "text" then parts[#parts + 1] = {type = "text", text = part.text}
    elseif part.type == "image" then parts[#parts + 1] = {type = "image_url", image_url = {url = data_url(part)}} end
  end
  return parts
end

local function assistant_message(msg)
  local out = {role = "assistant", content = msg.content and model.text_of(msg.content) or json.null}
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
function wire.messages(messages)
  local out, pending_images = json.array{}, {}
  local function flush_images()
    if #pending_images == 0 then return end
    local parts = json.array{{type = "text", text = "The images returned by the tool calls above:"}}
    for _, part in ipairs(pending_images) do parts[#parts + 1] = {type = "image_url", image_url = {url = data_url(part)}} end
    out[#out + 1] = {role = "user", content = parts}
    pending_images = {}
  end
  for _, msg in ipairs(messages) do
    if msg.role ~= "tool" then flush_images() end
    if msg.role == "system" then
      out[#out + 1] = {role = "system", content = model.text_of(msg.content)}
    elseif msg.role == "user" then
      out[#out + 1] = {role = "user", content = user_content(msg.content)}
    elseif msg.role == "assistant" then
      -- an empty turn (no text, no calls) is refused by the API: leave it out
      if model.text_of(msg.content) ~= "" or (msg.tool_calls and #msg.tool_calls > 0) then
        out[#out + 1] = assistant_message(msg)
      end
    else
      out[#out + 1] = {role = "tool", tool_call_id = msg.tool_call_id, content = model.text_of(msg.content)}
      for _, img in ipairs(model.images_of(msg.content)) do pending_images[#pending_images + 1] = img end
    end
  end
  flush_images()
  return out
end

function wire.tools(tools)
  local out = json.array{}
  for i, tool in ipairs(tools) do
    out[i] = {type = "function", ["function"] = {name = tool.name, description = tool.description,
                                                 parameters = model.schema(tool.parameters or {type = "object"})}}
  end
  return out
end

function wire.tool_choice(choice)
  if choice == nil or type(choice) == "string" then return choice end
  return {type = "function", ["function"] = {name = choice.name}}
end

function wire.body(m, req)
  local body = {model = m.model, messages = wire.messages(req.messages)}
  if req.tools and #req.tools > 0 then
    body.tools = wire.tools(req.tools)
    body.tool_choice = wire.tool_choice(req.tool_choice)
  end
  body.temperature = req.temperature or m.temperature
  body[m.max_tokens_field] = req.max_tokens or m.max_tokens
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
  return {input_tokens = u.prompt_tokens or 0, output_tokens = u.completion_tokens or 0,
          cached_tokens = type(details.cached_tokens) == "number" and details.cached_tokens or 0,
          reasoning_tokens = type(out_details.reasoning_tokens) == "number" and out_details.reasoning_tokens or nil}
end
wire.usage_of = usage_of

local function text_or_nil(v)
  return type(v) == "string" and v or nil
end

function wire.parse(_, decoded)
  local choice = type(decoded.choices) == "table" and decoded.choices[1]
  if type(choice) ~= "table" or type(choice.message) ~= "table" then return nil, "no choices[1].message" end
  local msg = choice.message
  local calls = {}
  for i, c in ipairs(type(msg.tool_calls) == "table" and msg.tool_calls or {}) do
    local fn = type(c["function"]) == "table" and c["function"] or {}
    if type(fn.name) ~= "string" then return nil, "a tool call without a function name" end
    calls[i] = model.tool_call(c.id, fn.name, text_or_nil(fn.arguments) or "")
  end
  return {text = text_or_nil(msg.content), tool_calls = calls, finish_reason = FINISH[choice.finish_reason] or "stop",
          usage = usage_of(decoded.usage), model = text_or_nil(decoded.model), id = decoded.id,
          refusal = text_or_nil(msg.refusal)}
end

-- ---- streaming: chat.completion.chunk events ----

local Stream = {}
Stream.__index = Stream

function wire.stream(m, req)
  return setmetatable({m = m, on_delta = req.on_delta, text = {}, calls = {}, order = {}}, Stream)
end

function Stream:event(ev)
  if ev.data == "[DONE]" then
    self.done = true
    return true
  end
  local chunk, failure = model.decode_event(ev)
  if not chunk then
    self.failure = failure
    return false
  end
  if type(chunk.error) == "table" then
    self.failure = {kind = "server", message = "error in the stream: " .. tostring(chunk.error.message)}
    return false
  end
  self.id, self.model = self.id or chunk.id, self.model or text_or_nil(chunk.model)
  if type(chunk.usage) == "table" then self.usage = usage_of(chunk.usage) end
  local choice = type(chunk.choices) == "table" and chunk.choices[1]
  if type(choice) ~= "table" then return true end
  local delta = type(choice.delta) == "table" and choice.delta or {}
  if type(delta.content) == "string" and delta.content ~= "" then
    self.text[#self.text + 1] = delta.content
    if self.on_delta then self.on_delta(delta.content) end
  end
  for _, d in ipairs(type(delta.tool_calls) == "table" and delta.tool_calls or {}) do
    local index = math.tointeger(d.index) or (#self.order)
    local call = self.calls[index]
    if not call then
      call = {args = {}}
      self.calls[index] = call
      self.order[#self.order + 1] = index
    end
    call.id = text_or_nil(d.id) or call.id
    local fn = type(d["function"]) == "table" and d["function"] or {}
    if type(fn.name) == "string" then call.name = (call.name or "") .. fn.name end
    if type(fn.arguments) == "string" then call.args[#call.args + 1] = fn.arguments end
  end
  if type(choice.finish_reason) == "string" then self.finish_reason = choice.finish_reason end
  return true
end

-- The assembled result; a stream that stopped before its end is bad_response.
function Stream:finish(cut_inside_event)
  if self.failure then return nil, self.failure end
  if not self.done and (cut_inside_event or not self.finish_reason) then
    return nil, {kind = "bad_response", message = "the stream ended before its end ([DONE])"}
  end
  local calls = {}
  table.sort(self.order)
  for i, index in ipairs(self.order) do
    local c = self.calls[index]
    calls[i] = model.tool_call(c.id, c.name, table.concat(c.args))
  end
  local text = table.concat(self.text)
  return {text = text ~= "" and text or nil, tool_calls = calls, finish_reason = FINISH[self.finish_reason] or "stop",
          usage = self.usage, model = self.model, id = self.id}
end

return wire

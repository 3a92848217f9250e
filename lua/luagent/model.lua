-- luagent.model: language models behind one interface.
--
--   local model = require "luagent.model"
--   local m = model.openai{model = "gpt-4o-mini"}             -- Chat Completions (and compatible servers:
--   local m = model.openai{model = "llama3.1", base_url = "http://localhost:11434/v1"}  -- no key needed)
--   local m = model.openai_responses{model = "gpt-4.1"}       -- the Responses API
--   local m = model.anthropic{model = "claude-sonnet-4-5"}    -- the Messages API
--   local m = model.from(cfg.model)                           -- from a recipe's YAML
--
--   local r, err = m:complete{
--     messages = {{role = "system", content = "..."}, {role = "user", content = "..."}},
--     tools = {{name = "run_python", description = "...", parameters = {...JSON Schema...}}},
--     tool_choice = "auto",            -- "none" | "required" | {name = "run_python"}
--     temperature = 0, max_tokens = 1024,
--     stream = true, on_delta = function(text) io.write(text) end,
--   }
--   -- r = {text, tool_calls = {{id, name, arguments (table), arguments_json}}, finish_reason
--   --      ("stop" | "tool_calls" | "length" | "content_filter"), usage = {input_tokens,
--   --      output_tokens, cached_tokens}, cost (dollars, nil when the price is unknown), raw}
--   -- err = {kind = "auth" | "rate_limit" | "quota" | "server" | "timeout" | "network" |
--   --        "bad_request" | "bad_response", status, type, code, message, retry_after}
--
-- Messages use one format for every provider:
--   {role = "system" | "user", content = "text" or {parts}}   parts: {type = "text", text},
--                                                              model.image(base64, "image/png")
--   {role = "assistant", content = "text" or nil, tool_calls = {{id, name, arguments}}}
--   {role = "tool", tool_call_id = id, content = "result text" or {parts}, is_error = bool}
-- Calls are retried by a policy (retry.default: 6 attempts on rate limits,
-- server errors, timeouts and network faults, honouring Retry-After),
-- replaceable per model (retry = ...) and per call. Keys come from the
-- environment or `api_key`, and are never printed: tostring(m) shows only
-- whether one is set, and error messages are redacted.
local http = require "luagent.http"
local json = require "luagent.json"
local retry = require "luagent.retry"
local secrets = require "luagent.secrets"
local prices = require "luagent.prices"
local loop = require "luagent.loop"

local model = {}

-- Every provider request goes through model.transport(request) -> response
-- | nil, err, with luagent.http.request's shape; recording and replaying a
-- run (luagent.trace) replace it.
model.transport = http.request

-- ---- events, for traces and live views (luagent.events) ----

local events = require "luagent.events"
local emit = events.emit

-- Kept for recipes that only want model events: fn(event) for model_request,
-- model_response, model_retry and model_error.
function model.on_event(fn)
  return events.subscribe(function(ev)
    if ev.type:sub(1, 6) == "model_" then fn(ev) end
  end)
end

model.off_event = events.unsubscribe

-- ---- errors ----

local ERROR_MT = {__tostring = function(e) return e.kind .. ": " .. e.message end, __name = "luagent.error"}

local function model_error(m, kind, message, fields)
  local err = setmetatable({kind = kind, provider = m.provider, model = m.model,
    message = secrets.redact(("%s %s: %s"):format(m.provider, m.model, message))}, ERROR_MT)
  for k, v in pairs(fields or {}) do err[k] = type(v) == "string" and secrets.redact(v) or v end
  return err
end
model.error = model_error

local function kind_for_status(status, code)
  if code == "insufficient_quota" then return "quota" end
  if status == 401 or status == 403 then return "auth" end
  if status == 429 then return "rate_limit" end
  if status == 408 then return "timeout" end
  if status >= 500 then return "server" end
  return "bad_request"
end

-- Seconds since the epoch of an HTTP date or an RFC 3339 time, or nil.
model.parse_time = require("luagent.dates").parse

-- "1s", "6m0s", "20ms", "1h2m3.5s" -> seconds
local function parse_duration(text)
  if type(text) ~= "string" or text == "" then return nil end
  local total, rest = 0, text
  while rest ~= "" do
    local n, unit, tail = rest:match("^([%d%.]+)(%a+)(.*)$")
    if not n then return nil end
    local scale = ({h = 3600, m = 60, s = 1, ms = 0.001})[unit]
    if not scale then return nil end
    total, rest = total + tonumber(n) * scale, tail
  end
  return total
end

local function now_epoch() return require("luagent.sys").time() end

-- How long the provider asked us to wait, from its headers, in seconds.
function model.retry_after(headers, now)
  headers = headers or {}
  now = now or now_epoch()
  local ms = tonumber(headers["retry-after-ms"])
  if ms then return ms / 1000 end
  local ra = headers["retry-after"]
  if ra then
    local seconds = tonumber(ra)
    if seconds then return seconds end
    local at = model.parse_time(ra)
    if at then return math.max(0, at - now) end
  end
  local wait
  for _, name in ipairs({"x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"}) do
    local s = parse_duration(headers[name])
    if s then wait = math.max(wait or 0, s) end
  end
  for _, name in ipairs({"anthropic-ratelimit-requests-reset", "anthropic-ratelimit-tokens-reset",
                         "anthropic-ratelimit-input-tokens-reset", "anthropic-ratelimit-output-tokens-reset"}) do
    local at = model.parse_time(headers[name])
    if at then wait = math.max(wait or 0, at - now) end
  end
  return wait
end

local function status_error(m, res)
  local decoded = json.decode(res.body or "")
  local info = type(decoded) == "table" and type(decoded.error) == "table" and decoded.error or {}
  local code = type(info.code) == "string" and info.code or nil
  local text = type(info.message) == "string" and info.message or (res.body or ""):sub(1, 500)
  local kind = kind_for_status(res.status, code)
  return model_error(m, kind, ("%s (HTTP %d)"):format(text, res.status), {
    status = res.status, type = type(info.type) == "string" and info.type or nil, code = code,
    provider_message = text, retry_after = (kind == "rate_limit" or kind == "server") and model.retry_after(res.headers) or nil,
  })
end

local function transport_error(m, err)
  if type(err) == "table" and err.kind == "cancelled" then error(err, 0) end
  local kind = (type(err) == "table" and err.kind == "timeout") and "timeout" or "network"
  return model_error(m, kind, type(err) == "table" and err.message or tostring(err))
end

-- A stream event's JSON data, or nil and the failure that ends the stream.
function model.decode_event(ev)
  local data, err = json.decode(ev.data)
  if type(data) == "table" then return data end
  return nil, {kind = "bad_response", message = "a stream event is not valid JSON: " .. (err and err.message or ev.data)}
end

-- ---- messages ----

-- An image part for a message's content.
function model.image(base64, media_type)
  return {type = "image", media_type = media_type or "image/png", data = base64}
end

-- The text of a content value (a string, or parts whose text parts are joined).
function model.text_of(content)
  if type(content) == "string" then return content end
  if type(content) ~= "table" then return "" end
  local out = {}
  for _, part in ipairs(content) do
    if part.type == "text" then out[#out + 1] = part.text end
  end
  return table.concat(out, "\n")
end

-- The image parts of a content value.
function model.images_of(content)
  local out = {}
  if type(content) == "table" then
    for _, part in ipairs(content) do
      if part.type == "image" then out[#out + 1] = part end
    end
  end
  return out
end

local ROLES = {system = true, user = true, assistant = true, tool = true}

local function check_messages(messages)
  if type(messages) ~= "table" or #messages == 0 then
    error("model:complete: messages must be a non-empty list", 3)
  end
  for i, msg in ipairs(messages) do
    if type(msg) ~= "table" or not ROLES[msg.role] then
      error(("model:complete: messages[%d] needs a role of system, user, assistant or tool"):format(i), 3)
    end
    if msg.role == "tool" and type(msg.tool_call_id) ~= "string" then
      error(("model:complete: messages[%d] (a tool result) needs tool_call_id"):format(i), 3)
    end
  end
end

-- JSON Schema keywords whose value is a list: an empty Lua table there must
-- be sent as [] (not {}), so a schema written in plain Lua stays valid.
local LIST_KEYWORDS = {required = true, enum = true, anyOf = true, oneOf = true, allOf = true,
                       prefixItems = true, examples = true}

function model.schema(schema)
  if type(schema) ~= "table" then return schema end
  local out = setmetatable({}, getmetatable(schema))
  for k, v in pairs(schema) do
    if LIST_KEYWORDS[k] and type(v) == "table" then
      out[k] = json.array({})
      for i, item in ipairs(v) do out[k][i] = model.schema(item) end
    elseif type(v) == "table" then
      out[k] = model.schema(v)
    else
      out[k] = v
    end
  end
  if out.type == "object" and out.properties == nil then out.properties = {} end
  return out
end

-- Decodes a tool call's arguments; keeps the text and the reason when they
-- are not a JSON object (the agent shows the model its mistake).
local made_up_ids = 0

function model.tool_call(id, name, arguments_json)
  if type(id) ~= "string" or id == "" then
    -- some compatible servers send none; the transcript needs one to pair results
    made_up_ids = made_up_ids + 1
    id = ("call_luagent_%d"):format(made_up_ids)
  end
  local call = {id = id, name = name, arguments_json = arguments_json}
  local text = arguments_json
  if text == nil or text:match("^%s*$") then text = "{}" end
  local value, err = json.decode(text)
  if type(value) == "table" and not json.is_array(value) then
    call.arguments = value
  elseif value == nil then
    call.arguments_error = "the arguments are not valid JSON: " .. err.message
  else
    call.arguments_error = "the arguments must be a JSON object"
  end
  return call
end

-- ---- the model object ----

local Model = {}
Model.__index = Model

function Model:__tostring()
  return ("%s model %s at %s (API key %s)"):format(self.provider, self.model, self.base_url,
    self.api_key and "set" or "not set")
end

function Model:_request(req)
  local body = self.wire.body(self, req)
  for k, v in pairs(self.extra or {}) do if body[k] == nil then body[k] = v end end
  for k, v in pairs(req.extra or {}) do body[k] = v end
  local headers = {["content-type"] = "application/json"}
  for k, v in pairs(self.wire.headers(self)) do headers[k] = v end
  for k, v in pairs(self.headers or {}) do headers[k] = v end
  return body, {
    method = "POST", url = self.base_url .. self.wire.path, headers = headers,
    timeout = req.timeout or self.timeout, connect_timeout = self.connect_timeout,
  }
end

local function finish_result(m, result, started)
  result.provider = m.provider
  result.model = result.model or m.model
  result.usage = result.usage or {input_tokens = 0, output_tokens = 0, cached_tokens = 0}
  result.usage.cached_tokens = result.usage.cached_tokens or 0
  result.cost = prices.cost(result.model, result.usage, m.prices) or prices.cost(m.model, result.usage, m.prices)
  result.duration = loop.now() - started
  result.tool_calls = result.tool_calls or {}
  if #result.tool_calls > 0 and result.finish_reason == "stop" then result.finish_reason = "tool_calls" end
  return result
end

function Model:_attempt(req, attempt)
  local body, request = self:_request(req)
  request.body = json.encode(body)
  local started = loop.now()
  emit({type = "model_request", provider = self.provider, model = self.model, attempt = attempt,
        stream = req.stream or false, body = body, url = request.url})
  local result, err
  if req.stream then
    local shown = 0
    local user_on_delta = req.on_delta
    local sreq = setmetatable({on_delta = function(d)
      shown = shown + 1
      if user_on_delta then user_on_delta(d) end
    end}, {__index = req})
    local assembler = self.wire.stream(self, sreq)
    local on_chunk, parser = http.sse(function(ev) return assembler:event(ev) end)
    request.on_chunk = on_chunk
    request.idle_timeout = self.idle_timeout
    local res, terr = model.transport(request)
    if not res and type(terr) == "table" and terr.status and terr.status >= 200 and terr.status < 300 then
      -- the stream began, then the connection broke: what arrived decides. A
      -- cut stream is bad_response, not retried by default: its deltas were
      -- already handed to on_delta.
      result, err = assembler:finish(true)
      if not result then
        err = model_error(self, "bad_response", "the stream was cut off: " .. terr.message)
      end
    elseif not res then
      err = transport_error(self, terr)
    elseif res.status < 200 or res.status >= 300 then
      err = status_error(self, res)
    else
      local why
      result, why = assembler:finish(parser:pending())
      if not result then err = model_error(self, why.kind or "bad_response", why.message, why) end
    end
    if err and shown > 0 and err.kind ~= "bad_response" then
      -- part of the answer was already handed to on_delta: a retry would show it twice
      err.message = err.message .. " (after part of the answer was streamed)"
      err.retry_after, err.kind = nil, "bad_response"
    end
  else
    local res, terr = model.transport(request)
    if not res then
      err = transport_error(self, terr)
    elseif res.status < 200 or res.status >= 300 then
      err = status_error(self, res)
    else
      local decoded, derr = json.decode(res.body)
      if decoded == nil then
        err = model_error(self, "bad_response", "the response is not valid JSON: " .. derr.message
          .. " (first bytes: " .. res.body:sub(1, 120) .. ")")
      else
        local why
        result, why = self.wire.parse(self, decoded)
        if result then result.raw = decoded
        else err = model_error(self, "bad_response", "unexpected response: " .. why) end
      end
    end
  end
  if err then
    emit({type = "model_error", provider = self.provider, model = self.model, attempt = attempt, error = err,
          duration = loop.now() - started})
    return nil, err
  end
  return finish_result(self, result, started)
end

-- m:complete(request) -> result | nil, err   (see the top of this file)
function Model:complete(req)
  req = req or {}
  check_messages(req.messages)
  local policy = req.retry or self.retry
  local attempt = 0
  local user_on_retry = policy.on_retry
  policy = policy:with({on_retry = function(err, n, wait)
    emit({type = "model_retry", provider = self.provider, model = self.model, attempt = n, wait = wait, error = err})
    if user_on_retry then user_on_retry(err, n, wait) end
  end})
  local started = loop.now()
  local result, err = retry.call(policy, function()
    attempt = attempt + 1
    return self:_attempt(req, attempt)
  end)
  if not result then return nil, err end
  result.attempts = attempt
  result.duration = loop.now() - started
  local t = self.totals
  t.calls = t.calls + 1
  t.input_tokens = t.input_tokens + (result.usage.input_tokens or 0)
  t.output_tokens = t.output_tokens + (result.usage.output_tokens or 0)
  t.cached_tokens = t.cached_tokens + (result.usage.cached_tokens or 0)
  if result.cost then t.cost = t.cost + result.cost else t.cost_unknown = true end
  emit({type = "model_response", provider = self.provider, model = self.model, attempts = attempt,
        duration = result.duration, usage = result.usage, cost = result.cost, finish_reason = result.finish_reason,
        text = result.text, tool_calls = result.tool_calls})
  return result
end

local DEFAULTS = {timeout = 600, connect_timeout = 15, idle_timeout = 120}

-- Makes a model for a provider's wire module (luagent.model.openai & co.).
function model.new(wire, opts)
  assert(type(opts) == "table", "model: options table expected")
  local name = opts.model or wire.default_model
  if type(name) ~= "string" or name == "" then
    error(("model.%s: option 'model' (the model name) is required"):format(wire.name), 3)
  end
  local key = opts.api_key
  if key == nil and wire.key_env then key = os.getenv(wire.key_env) end
  if key == "" then key = nil end
  local base_url = opts.base_url or (wire.base_url_env and os.getenv(wire.base_url_env)) or wire.default_base_url
  base_url = base_url:gsub("/+$", "")
  local replaying = package.loaded["luagent.host"] and package.loaded["luagent.host"].replay
  if not key and wire.needs_key(base_url) and not replaying then
    error(("model.%s: no API key: set %s or pass api_key (a local server: pass base_url)"):format(wire.name, wire.key_env), 3)
  end
  secrets.add(key, wire.key_env or "api_key")
  local m = setmetatable({
    provider = wire.name, wire = wire, model = name, base_url = base_url, api_key = key,
    timeout = opts.timeout or DEFAULTS.timeout, connect_timeout = opts.connect_timeout or DEFAULTS.connect_timeout,
    idle_timeout = opts.idle_timeout or DEFAULTS.idle_timeout,
    retry = opts.retry or retry.default, headers = opts.headers, extra = opts.extra, prices = opts.prices,
    temperature = opts.temperature, max_tokens = opts.max_tokens,
    totals = {calls = 0, input_tokens = 0, output_tokens = 0, cached_tokens = 0, cost = 0},
  }, Model)
  for k, v in pairs(wire.options and wire.options(opts) or {}) do m[k] = v end
  return m
end

function model.openai(opts) return model.new(require("luagent.model.openai"), opts) end
function model.openai_responses(opts) return model.new(require("luagent.model.responses"), opts) end
function model.anthropic(opts) return model.new(require("luagent.model.anthropic"), opts) end

-- ---- choosing a model from settings ----

local PROVIDERS = {openai = model.openai, openai_responses = model.openai_responses, anthropic = model.anthropic}

-- Which provider the environment points at: "openai", "anthropic" or nil.
-- When replaying, the provider the recording was made with.
function model.detect()
  local host = package.loaded["luagent.host"]
  if host and host.replay then return require("luagent.trace").recorded_provider(host.replay) end
  if os.getenv("OPENAI_API_KEY") or os.getenv("OPENAI_BASE_URL") then return "openai" end
  if os.getenv("ANTHROPIC_API_KEY") then return "anthropic" end
  return nil
end

-- model.from{provider = "auto" | "openai" | "openai_responses" | "anthropic", model, base_url,
--            api_key, temperature, max_tokens, timeout, retry = {attempts, base, max}, prices}
-- -> model | nil, err (kind "config") when nothing is configured.
function model.from(cfg)
  cfg = cfg or {}
  local provider = cfg.provider or "auto"
  if provider == "auto" then
    provider = cfg.base_url and "openai" or model.detect()
    if not provider then
      return nil, {kind = "config", message = "no model is configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, "
        .. "OPENAI_BASE_URL for a local OpenAI-compatible server, or --set model.provider=..."}
    end
  end
  local make = PROVIDERS[provider]
  if not make then
    return nil, {kind = "config",
                 message = ("unknown model provider '%s' (openai, openai_responses, anthropic)"):format(provider)}
  end
  local opts = {}
  for k, v in pairs(cfg) do opts[k] = v end
  opts.provider = nil
  if type(cfg.retry) == "table" and getmetatable(cfg.retry) == nil then opts.retry = retry.exponential(cfg.retry) end
  local ok, m = pcall(make, opts)
  if not ok then return nil, {kind = "config", message = tostring(m)} end
  return m
end

-- ---- fallback ----

local Fallback = {}
Fallback.__index = Fallback

function Fallback:__tostring()
  local names = {}
  for _, m in ipairs(self.models) do names[#names + 1] = tostring(m) end
  return "fallback of " .. table.concat(names, ", ")
end

-- model.fallback{m1, m2, ...}: tries the next model when one keeps failing
-- (after its own retries). A bad_request or auth error of one model does not
-- stop the others: they may accept what it refused.
function model.fallback(models)
  assert(type(models) == "table" and #models > 0, "model.fallback{m1, m2, ...} needs models")
  local first = models[1]
  return setmetatable({models = models, provider = "fallback", model = first.model,
                       totals = first.totals}, Fallback)
end

function Fallback:complete(req)
  local errors = {}
  for _, m in ipairs(self.models) do
    local result, err = m:complete(req)
    if result then
      result.fallbacks = #errors
      return result
    end
    errors[#errors + 1] = err
  end
  local last = errors[#errors]
  local messages = {}
  for _, e in ipairs(errors) do messages[#messages + 1] = e.message end
  return nil, setmetatable({kind = last.kind, errors = errors, status = last.status,
    message = "every model failed: " .. table.concat(messages, "; ")}, ERROR_MT)
end

-- ---- a scripted model, for tests and demos without a provider ----

local Scripted = {}
Scripted.__index = Scripted

function Scripted:__tostring() return "scripted model " .. self.model end

-- model.scripted{replies = {reply, ...}} or model.scripted(function(request, n) return reply end [, {name}])
-- A reply is {text = ..., tool_calls = {{name, arguments}}} (ids are made up) or
-- {error = {kind, message}}. Usage is estimated at 4 characters a token.
function model.scripted(spec, opts)
  local fn = spec
  if type(spec) == "table" then
    local replies = spec.replies or spec
    fn = function(_, n) return replies[n] or {text = "(the script has no reply " .. n .. ")"} end
  end
  local name = (opts and opts.name) or (type(spec) == "table" and spec.name) or "scripted"
  return setmetatable({fn = fn, n = 0, provider = "scripted", model = name,
    totals = {calls = 0, input_tokens = 0, output_tokens = 0, cached_tokens = 0, cost = 0}}, Scripted)
end

local function estimate_tokens(messages)
  local chars = 0
  for _, msg in ipairs(messages) do
    chars = chars + #model.text_of(msg.content)
    for _, call in ipairs(msg.tool_calls or {}) do chars = chars + #(call.arguments_json or "") end
  end
  return math.max(1, chars // 4)
end

function Scripted:complete(req)
  check_messages(req.messages)
  self.n = self.n + 1
  local reply = self.fn(req, self.n)
  if reply.error then return nil, setmetatable(reply.error, ERROR_MT) end
  local calls = {}
  for i, c in ipairs(reply.tool_calls or {}) do
    local args_json = type(c.arguments) == "string" and c.arguments or json.encode(c.arguments or {})
    calls[i] = model.tool_call(c.id or ("call_scripted_%d_%d"):format(self.n, i), c.name, args_json)
  end
  local usage = {input_tokens = estimate_tokens(req.messages), output_tokens = math.max(1, #(reply.text or "") // 4),
                 cached_tokens = 0, estimated = true}
  if req.on_delta and reply.text then req.on_delta(reply.text) end
  local t = self.totals
  t.calls, t.input_tokens, t.output_tokens = t.calls + 1, t.input_tokens + usage.input_tokens,
    t.output_tokens + usage.output_tokens
  local result = {text = reply.text, tool_calls = calls, finish_reason = #calls > 0 and "tool_calls" or "stop",
                  usage = usage, cost = 0, provider = "scripted", model = self.model, raw = reply, attempts = 1,
                  duration = 0}
  emit({type = "model_response", provider = "scripted", model = self.model, attempts = 1, duration = 0,
        usage = usage, cost = 0, finish_reason = result.finish_reason, text = result.text, tool_calls = calls})
  return result
end

return model

-- luagent.model.call: one attempt of a model call. It builds the HTTP request
-- from the provider (luagent.model.api), sends it through the run's
-- transport (context.current().transport, the calling run's: HTTP, a
-- recorder or a replayer), and gives the result or one error. A failure's kind is decided once,
-- where it is seen: the HTTP status or the transport's failure here, the
-- answer's shape in the provider, a stream's end in its assembler;
-- call.error then names the provider and model and redacts keys.
--
--   call.attempt(m, req, n [, time_left]) -> result | nil, err   (n: the attempt's number, for
--       events; time_left: seconds left of the call's deadline, which caps the attempt's timeout)
--   call.error(m, kind, message [, fields]) -> err   also model.error
--   call.answered(m, result) -> result   the call's model_response event, built here alone (model
--       clients, cached answers, scripted models); a result not from the cache is added to m.totals
--
-- Model errors' kinds: auth | rate_limit | quota | server | timeout | network |
-- bad_request | bad_response. A connection that cannot be made or breaks is
-- network (its transport error is kept as err.cause); a cancelled run raises.
local http = require "luagent.http"
local json = require "luagent.json"
local sched = require "luagent.sched"
local errors = require "luagent.errors"
local events = require "luagent.events"
local context = require "luagent.context"
local secrets = require "luagent.secrets"
local prices = require "luagent.prices"
local retry_after = require "luagent.model.retry_after"
local api_contract = require "luagent.model.api"

local call = {}

-- An error of model m: "provider model: message", keys redacted everywhere.
function call.error(m, kind, message, fields)
  local safe = {}
  for k, v in pairs(fields or {}) do
    if k ~= "kind" and k ~= "message" then safe[k] = type(v) == "string" and secrets.redact(v) or v end
  end
  safe.provider, safe.model = m.provider, m.model
  return errors.new(kind, secrets.redact(("%s %s: %s"):format(m.provider, m.model, message)), safe)
end

local function kind_for_status(status, code)
  if code == "insufficient_quota" then return "quota" end
  if status == 401 or status == 403 then return "auth" end
  if status == 429 then return "rate_limit" end
  if status == 408 then return "timeout" end
  if status >= 500 then return "server" end
  return "bad_request"
end

local function status_failure(res)
  local decoded = json.decode(res.body or "")
  local info = type(decoded) == "table" and type(decoded.error) == "table" and decoded.error or {}
  local code = type(info.code) == "string" and info.code or nil
  local text = type(info.message) == "string" and info.message or (res.body or ""):sub(1, 500)
  local kind = kind_for_status(res.status, code)
  return kind, ("%s (HTTP %d)"):format(text, res.status), {
    status = res.status, type = type(info.type) == "string" and info.type or nil, code = code,
    provider_message = text,
    retry_after = (kind == "rate_limit" or kind == "server") and retry_after.wait(res.headers) or nil,
  }
end

-- What went wrong with an exchange, as kind, message, fields; nil when the
-- server answered with a 2xx status.
local function http_failure(res, terr)
  if not res then
    terr = errors.from(terr)
    if terr.kind == "cancelled" then error(terr, 0) end
    return terr.kind == "timeout" and "timeout" or "network", terr.message, {cause = terr}
  end
  if res.status < 200 or res.status >= 300 then return status_failure(res) end
  return nil
end

-- A transport failure after a 2xx status: the stream began, then broke.
local function stream_broke(terr)
  return type(terr) == "table" and type(terr.status) == "number" and terr.status >= 200 and terr.status < 300
end

-- The calling task's run's transport (luagent.context): the one it chose
-- (--record, --replay, model.use_transport), else HTTP.
local function transport()
  return context.current().transport or http.request
end

local function plain(m, request, parse)
  local res, terr = transport()(request)
  local kind, message, fields = http_failure(res, terr)
  if kind then return nil, errors.new(kind, message, fields) end
  local decoded, derr = json.decode(res.body)
  if decoded == nil then
    return nil, errors.new("bad_response", "the response is not valid JSON: " .. derr.message
      .. " (first bytes: " .. res.body:sub(1, 120) .. ")")
  end
  local result, err = (parse or m.api.parse)(m, decoded)
  if result then result.raw = decoded end
  return result, err
end

-- Server-sent events go to the provider's assembler, which also decides what
-- a failure is once part of the answer was shown (luagent.model.stream).
local function streamed(m, req, request)
  local assembler = m.api.stream(m, req)
  local on_chunk, parser = http.sse(function(ev) return assembler:event(ev) end)
  request.on_chunk = on_chunk
  local res, terr = transport()(request)
  if not res and stream_broke(terr) then
    -- a stream that went quiet: a timeout (retried) unless part of the answer was shown
    if terr.kind == "timeout" then assembler:fail("timeout", "the stream stalled: " .. terr.message) end
    return assembler:finish(terr.message)
  end
  local kind, message, fields = http_failure(res, terr)
  if kind then assembler:fail(kind, message, fields) end
  return assembler:finish(parser:pending())
end

-- The request body and the HTTP request (without its body text).
-- req.compact: the provider's own compaction of req.messages (a wire with
-- compact_body, compact_path and parse_compact: the Responses API), not an answer.
function call.request(m, req)
  local body = req.compact and m.api.compact_body(m, req) or m.api.body(m, req)
  for k, v in pairs(m.extra or {}) do if body[k] == nil then body[k] = v end end
  for k, v in pairs(req.extra or {}) do body[k] = v end
  local headers = {["content-type"] = "application/json"}
  for k, v in pairs(m.api.headers(m)) do headers[k] = v end
  for k, v in pairs(m.headers or {}) do headers[k] = v end
  return body, {
    method = "POST", url = m.base_url .. (req.compact and m.api.compact_path or m.api.path), headers = headers,
    timeout = req.timeout or m.timeout, connect_timeout = m.connect_timeout, idle_timeout = m.idle_timeout,
  }
end

local function finish_result(m, result, started)
  result.provider = m.provider
  result.model = result.model or m.model
  result.usage = result.usage or {input_tokens = 0, output_tokens = 0, cached_tokens = 0}
  result.usage.cached_tokens = result.usage.cached_tokens or 0
  result.cost = prices.cost(result.model, result.usage, m.prices, m.models)
                or prices.cost(m.model, result.usage, m.prices, m.models)
  if not m.family and result.cost == nil then
    api_contract.note_once(m, "unknown", ("%s is not in the model table: its limits and prices are unknown "
      .. "(its cost counts as unknown; add it under the model section's models: in the recipe's YAML)"):format(m.model))
  end
  result.duration = sched.now() - started
  result.tool_calls = result.tool_calls or {}
  if #result.tool_calls > 0 and result.finish_reason == "stop" then result.finish_reason = "tool_calls" end
  return result
end

function call.answered(m, result)
  if not result.cached then
    local t, usage = m.totals, result.usage
    t.calls = t.calls + 1
    t.input_tokens = t.input_tokens + (usage.input_tokens or 0)
    t.output_tokens = t.output_tokens + (usage.output_tokens or 0)
    t.cached_tokens = t.cached_tokens + (usage.cached_tokens or 0)
    if result.cost then t.cost = t.cost + result.cost else t.cost_unknown = true end
  end
  events.emit({type = "model_response", provider = m.provider, model = m.model, attempts = result.attempts,
               cached = result.cached or nil, duration = result.duration, usage = result.usage, cost = result.cost,
               saved_cost = result.saved_cost, finish_reason = result.finish_reason, text = result.text,
               tool_calls = result.tool_calls, reasoning = result.reasoning_summary})
  return result
end

function call.attempt(m, req, n, time_left)
  local body, request = call.request(m, req)
  request.body = json.encode(body)
  if time_left then request.timeout = math.max(0.001, math.min(request.timeout, time_left)) end
  local started = sched.now()
  events.emit({type = "model_request", provider = m.provider, model = m.model, attempt = n,
               stream = req.stream or false, body = body, url = request.url})
  local result, err
  if req.stream and not req.compact then result, err = streamed(m, req, request)
  else result, err = plain(m, request, req.compact and m.api.parse_compact) end
  if not result then
    err = call.error(m, err.kind, err.message, err)
    events.emit({type = "model_error", provider = m.provider, model = m.model, attempt = n, error = err,
                 duration = sched.now() - started})
    return nil, err
  end
  return finish_result(m, result, started)
end

return call

-- luagent.model.client: a model served by a provider over HTTP — what
-- model.openai{...}, model.anthropic{...} and model.new(provider, opts) make.
--
--   client.new(provider, opts) -> m        (provider: see luagent.model.api)
--   m:complete(req) -> result | nil, err   attempts (luagent.model.call) under the retry
--                                          policy, with model_retry and model_response events
--
-- A cancelled task (Ctrl-C, SIGTERM, task:cancel()) makes no call: complete
-- raises the cancellation, before the cache and before each attempt.
--
-- Deadlines: each attempt has `timeout` (600 s) and `idle_timeout` (30 s
-- without a byte once the answer began, streamed or not: a server that
-- answered and then went quiet); the whole call, attempts and waits
-- together, has `deadline` (600 s; req.deadline for one call). When the
-- deadline passes the call fails with kind timeout, saying how long it tried.
--   m.totals = {calls, input_tokens, output_tokens, cached_tokens, cost, cost_unknown}
--
-- When the run has the model-call cache on (luagent.cache, context.current().cache),
-- the request is looked up first, before any attempt: a hit is the stored
-- answer (cached = true, cost = 0, saved_cost; on_delta gets its text; the
-- model_request and model_response events say cached = true; it is not added
-- to m.totals, as nothing was spent); a miss goes live and a successful
-- answer is stored.
local retry = require "luagent.retry"
local sched = require "luagent.sched"
local events = require "luagent.events"
local context = require "luagent.context"
local secrets = require "luagent.secrets"
local content = require "luagent.model.content"
local api_contract = require "luagent.model.api"
local call = require "luagent.model.call"
local structured = require "luagent.model.structured"

local client = {}

local Model = {}
Model.__index = Model

function Model:__tostring()
  return ("%s model %s at %s (API key %s)"):format(self.provider, self.model, self.base_url,
    self.api_key and "set" or "not set")
end

-- The policy of this call, telling the events about each retry.
local function announced(m, policy)
  local user_on_retry = policy.on_retry
  return policy:with({on_retry = function(err, n, wait)
    events.emit({type = "model_retry", provider = m.provider, model = m.model, attempt = n, wait = wait, error = err})
    if user_on_retry then user_on_retry(err, n, wait) end
  end})
end

-- The run's model-call cache, or nil.
local function run_cache()
  return context.current().cache
end

-- A stored answer as a live one looks: tool calls decoded the same way.
local function from_cache(m, req, look, body, url, started)
  local entry, stored = look.entry, look.entry.result
  events.emit({type = "model_request", provider = m.provider, model = m.model, attempt = 0, cached = true,
               stream = req.stream or false, body = body, url = url})
  local calls = {}
  for i, c in ipairs(stored.tool_calls) do calls[i] = content.tool_call(c.id, c.name, c.arguments_json) end
  local result = {text = stored.text, tool_calls = calls, finish_reason = stored.finish_reason, usage = stored.usage,
                  model = stored.model or m.model, provider = m.provider, cost = 0, saved_cost = entry.cost,
                  cached = true, attempts = 0, provider_items = stored.provider_items, commentary = stored.commentary,
                  reasoning_summary = stored.reasoning_summary}
  if req.on_delta and result.text and result.text ~= "" then req.on_delta(result.text) end
  result.duration = sched.now() - started
  return call.answered(m, result)
end

-- A task that was asked to stop (Ctrl-C, SIGTERM, task:cancel()) makes no
-- model call, even when code under it caught the cancellation: it raises.
local function stop_if_cancelled()
  local stop = sched.cancelled()
  if stop then error(stop, 0) end
end

-- The call's error, or a timeout saying how long it tried when the deadline ended it.
local function past_deadline(m, err, attempts, deadline, took)
  if not (err.deadline or (err.kind == "timeout" and took >= deadline - 0.05)) then return err end
  return call.error(m, "timeout", ("gave up after %d attempt%s over %.1f s: the call's deadline is %g s "
    .. "(option deadline); the last attempt: %s"):format(attempts, attempts == 1 and "" or "s", took, deadline,
    tostring(err)), {cause = err, attempts = attempts, deadline = deadline})
end

-- The call itself, once the request was checked (structured.complete, in
-- Model:complete below): the cache, then attempts under the retry policy.
local function call_provider(self, req)
  req = req or {}
  stop_if_cancelled()
  local started = sched.now()
  local store, look = run_cache(), nil
  if store then
    local body, request = call.request(self, req)
    look = store:lookup(self, req, body)
    if look.entry then return from_cache(self, req, look, body, request.url, started) end
  end
  local attempt = 0
  local deadline = req.deadline or self.deadline
  local policy = req.retry or self.retry
  policy = announced(self, policy:with({deadline = math.min(policy.deadline or deadline, deadline)}))
  local result, err = retry.call(policy, function()
    stop_if_cancelled()
    attempt = attempt + 1
    return call.attempt(self, req, attempt, deadline - (sched.now() - started))
  end)
  if not result then
    if look then store:failed(look) end
    return nil, past_deadline(self, err, attempt, policy.deadline, sched.now() - started)
  end
  result.attempts = attempt
  result.duration = sched.now() - started
  if look then store:stored(look, result) end
  return call.answered(self, result)
end

-- m:complete(request) -> result | nil, err   (lua/meta/model.lua): the messages and a
-- structured answer (req.schema / req.output) checked and read around the call.
function Model:complete(req)
  return structured.complete(self, req, call_provider)
end

local DEFAULTS = {timeout = 600, connect_timeout = 15, idle_timeout = 30, deadline = 600}

local function api_key(api, opts)
  local key = opts.api_key
  if key == nil and api.key_env then key = os.getenv(api.key_env) end
  if key == "" or key == false then return nil end
  return key
end

-- Raises (misuse) at the level of whoever called model.openai & co.
function client.new(api, opts)
  api_contract.check(api, 3)
  if type(opts) ~= "table" then error(("model.%s: options table expected"):format(api.name), 3) end
  local families = require "luagent.model.families"
  local name = opts.model or families.default_model(api.name) or api.default_model
  if type(name) ~= "string" or name == "" then
    error(("model.%s: option 'model' (the model name) is required"):format(api.name), 3)
  end
  local key = api_key(api, opts)
  local base_url = opts.base_url or (api.base_url_env and os.getenv(api.base_url_env)) or api.default_base_url
  base_url = base_url:gsub("/+$", "")
  if not key and api.needs_key(base_url) and not context.current().replaying then
    error(("model.%s: no API key: set %s or pass api_key (a local server: pass base_url)"):format(api.name,
      api.key_env), 3)
  end
  secrets.add(key, api.key_env or "api_key")
  local m = setmetatable({
    provider = api.name, api = api, model = name, base_url = base_url, api_key = key,
    timeout = opts.timeout or DEFAULTS.timeout, connect_timeout = opts.connect_timeout or DEFAULTS.connect_timeout,
    idle_timeout = opts.idle_timeout or DEFAULTS.idle_timeout, deadline = opts.deadline or DEFAULTS.deadline,
    retry = opts.retry or retry.default, headers = opts.headers, extra = opts.extra, prices = opts.prices,
    temperature = opts.temperature, max_tokens = opts.max_tokens, reasoning = opts.reasoning,
    models = opts.models, family = families.lookup(name, opts.models), prompt_cache = opts.prompt_cache,
    totals = {calls = 0, input_tokens = 0, output_tokens = 0, cached_tokens = 0, cost = 0},
  }, Model)
  for k, v in pairs(api.options and api.options(opts) or {}) do m[k] = v end
  return m
end

return client

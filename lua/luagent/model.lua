-- luagent.model: language models behind one interface.
--
-- model.openai / openai_responses / anthropic{...}, model.from(cfg), model.fallback,
-- model.scripted and m:complete{...}: the options, results and error kinds are in
-- lua/meta/model.lua; `luagent help models` says what they do.
--
-- Messages use one format for every provider (luagent.model.content); each
-- provider (luagent.model.api: openai, responses, anthropic) turns it
-- into its own. Calls are retried by a policy (retry.default: 6 attempts on
-- what the error catalogue marks retryable — rate limits, server errors,
-- timeouts and network faults — honouring Retry-After), replaceable per model
-- (retry = ...) and per call. Keys come from the environment or `api_key`, and
-- are never printed: tostring(m) shows only whether one is set, and error
-- messages are redacted.
--
-- Where the parts live: model/client.lua (a provider's model and its
-- retries), model/call.lua (one attempt, and its errors), model/stream.lua
-- (what streaming providers share), model/families.lua with models.yaml (the
-- model table: limits, prices, what each family takes), model/retry_after.lua,
-- model/fallback.lua, model/scripted.lua, model/recording.lua (record and replay).
local errors = require "luagent.errors"
local events = require "luagent.events"
local context = require "luagent.context"
local http = require "luagent.http"
local content = require "luagent.model.content"
local client = require "luagent.model.client"

local model = {}

-- Every provider request goes through the calling run's transport
-- (request) -> response | nil, err, with luagent.http.request's shape: HTTP,
-- unless the run chose a recording's replayer (--replay) or a recorder around
-- HTTP (--record). model.use_transport(fn) puts fn in its place for the
-- calling run and returns the one it replaces (tests, benchmarks, a recipe
-- that answers some requests itself).
function model.use_transport(fn)
  if type(fn) ~= "function" then error("model.use_transport: a function(request) -> response | nil, err", 2) end
  local r = context.current()
  local before = r.transport or http.request
  r.transport = fn
  return before
end

-- Kept for recipes that only want model events: fn(event) for model_request,
-- model_response, model_retry and model_error.
function model.on_event(fn)
  return events.subscribe(function(ev)
    if ev.type:sub(1, 6) == "model_" then fn(ev) end
  end)
end

model.off_event = events.unsubscribe

-- ---- the message format, errors and waits, for recipes and providers ----

model.image, model.text_of, model.images_of = content.image, content.text_of, content.images_of
model.schema, model.tool_call = content.schema, content.tool_call
model.decode_event = require("luagent.model.stream").decode_event
model.error = require("luagent.model.call").error

local retry_after = require "luagent.model.retry_after"
model.retry_after, model.parse_time = retry_after.wait, retry_after.parse_time

-- ---- making models ----

-- model.new(provider, opts): a model of any provider table (luagent.model.api).
model.new = client.new

function model.openai(opts) return client.new(require("luagent.model.openai"), opts) end
function model.openai_responses(opts) return client.new(require("luagent.model.responses"), opts) end
function model.anthropic(opts) return client.new(require("luagent.model.anthropic"), opts) end

function model.fallback(models) return require("luagent.model.fallback")(models) end
function model.scripted(spec, opts) return require("luagent.model.scripted")(spec, opts) end

-- ---- choosing a model from settings ----

local PROVIDERS = {openai = model.openai, openai_responses = model.openai_responses, anthropic = model.anthropic}

-- Which provider the environment points at: "openai", "anthropic" or nil.
-- When replaying, the provider the recording was made with.
function model.detect()
  local replaying = context.current().replaying
  if replaying then return replaying.provider end
  if os.getenv("OPENAI_API_KEY") or os.getenv("OPENAI_BASE_URL") then return "openai" end
  if os.getenv("ANTHROPIC_API_KEY") then return "anthropic" end
  return nil
end

-- model.from{provider = "auto" | "openai" | "openai_responses" | "anthropic", model, base_url,
--            api_key, temperature, max_tokens, timeout, retry = {attempts, base, max}, prices}
-- -> model | nil, err (kind "config") when nothing or something wrong is configured.
function model.from(cfg)
  cfg = cfg or {}
  local provider = cfg.provider or "auto"
  if provider == "auto" then
    provider = cfg.base_url and "openai" or model.detect()
    if not provider then
      return errors.fail("config", "no model is configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, "
        .. "OPENAI_BASE_URL for a local OpenAI-compatible server, or --set model.provider=...")
    end
  end
  local make = PROVIDERS[provider]
  if not make then
    local names = {"anthropic", "auto", "openai", "openai_responses", "scripted"}
    return errors.fail("config", ("model.provider '%s' is not a provider%s; the providers are: %s. A local server "
      .. "(Ollama, vLLM, llama.cpp) is provider openai with --set model.base_url=http://localhost:11434/v1")
      :format(tostring(provider), require("luagent.options").suggest(tostring(provider), names), table.concat(names, ", ")))
  end
  local opts = {}
  for k, v in pairs(cfg) do opts[k] = v end
  opts.provider = nil
  if type(cfg.retry) == "table" and getmetatable(cfg.retry) == nil then
    opts.retry = require("luagent.retry").exponential(cfg.retry)
  end
  local ok, m = pcall(make, opts)
  if not ok then return errors.fail("config", tostring(m)) end
  return m
end

-- model.from_or_scripted(cfg, make_scripted) -> model, scripted?
-- What a recipe runs on: the model the settings point at; when none is
-- configured (provider "auto" with nothing in the environment, or
-- provider "scripted"), make_scripted() — the recipe's scripted driver,
-- NOT a model — after saying so plainly on stdout. A provider that is named
-- but cannot be used (an unknown one, a missing key) raises its error.
function model.from_or_scripted(cfg, make_scripted)
  cfg = cfg or {}
  local provider = cfg.provider or "auto"
  local m, err
  if provider ~= "scripted" then m, err = model.from(cfg) end
  if m then return m, false end
  if provider ~= "auto" and provider ~= "scripted" then error(err, 0) end -- an error value: no traceback
  local say = context.current() -- to the run's captured stdout under luagent eval
  local why = err and err.message:gsub("^no model is configured:%s*", "") or "model.provider is scripted"
  say:print("SCRIPTED RUN: no model is configured (" .. why .. ").")
  say:print("A script makes the tool calls a capable model would; every line of its code really runs in the sandbox. "
    .. "It ignores the instructions and the task: a prompt edit shows only with a model.")
  return make_scripted(), true
end

return model

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
local options = require "luagent.options"

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

-- Options are strict (luagent.options): a key lua/meta's class does not
-- declare is a typo, refused before anything starts with a did-you-mean. A
-- field the provider's request takes that luagent has no option for goes in
-- extra = {...}, added to the request body as it is.

-- The first key of tbl (sorted) that the class does not declare, its
-- did-you-mean and the declared keys; nil when every key is declared.
local function typo(tbl, class)
  if type(tbl) ~= "table" then return nil end
  local known, set = options.fields(class)
  local bad
  for k in pairs(tbl) do
    if type(k) == "string" and not set[k] and (bad == nil or k < bad) then bad = k end
  end
  if bad and #known > 0 then return bad, options.suggest(bad, known), table.concat(known, ", ") end
end

local EXTRA = "a field of the provider's request that is not an option here goes in %s"

-- Raises (an error value, kind config) when opts has a key the provider's options do not declare.
local function checked(opts, where)
  local bad, hint, known = typo(opts, "luagent.ModelOptions")
  if bad then
    error(errors.new("config", ("%s: '%s' is not an option%s; the options are: %s; " .. EXTRA):format(where, bad,
      hint, known, "extra = {...}"), {option = bad}), 0)
  end
  return opts
end

-- model.new(provider, opts): a model of any provider table (luagent.model.api);
-- not checked, as a recipe's own provider may read options of its own.
model.new = client.new

function model.openai(opts) return client.new(require("luagent.model.openai"), checked(opts, "model.openai")) end
function model.openai_responses(opts)
  return client.new(require("luagent.model.responses"), checked(opts, "model.openai_responses"))
end
function model.anthropic(opts) return client.new(require("luagent.model.anthropic"), checked(opts, "model.anthropic")) end

function model.fallback(models) return require("luagent.model.fallback")(models) end
function model.scripted(spec, opts)
  options.check(spec, "luagent.ScriptedSpec", "model.scripted")
  options.check(opts, "luagent.ScriptedOptions", "model.scripted")
  return require("luagent.model.scripted")(spec, opts)
end

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

-- A setting of the model section that lua/meta does not declare (luagent.ModelConfig,
-- luagent.RetryOptions under retry): an error value naming it as --set would, or nil.
local function not_a_setting(cfg)
  local bad, hint, known = typo(cfg, "luagent.ModelConfig")
  if bad then
    return errors.new("config", ("model.%s: not a setting of the model%s; the model settings are: %s; " .. EXTRA)
      :format(bad, hint, known, "model.extra"), {option = bad})
  end
  if getmetatable(cfg.retry) == nil then -- a policy made already is not settings
    bad, hint, known = typo(cfg.retry, "luagent.RetryOptions")
    if bad then
      return errors.new("config", ("model.retry.%s: not a setting of the retry policy%s; the retry settings are: %s")
        :format(bad, hint, known), {option = "retry." .. bad})
    end
  end
end

-- model.from{provider = "auto" | "openai" | "openai_responses" | "anthropic", and the
-- options of model.openai & co. (luagent.ModelConfig)}
-- -> model | nil, err (kind "config") when nothing or something wrong is configured,
-- a key that is not a setting (a typo) first.
function model.from(cfg)
  cfg = cfg or {}
  local typo_err = not_a_setting(cfg)
  if typo_err then return nil, typo_err end
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
-- but cannot be used (an unknown one, a missing key), or a setting that is
-- not one (a typo, whatever the provider), raises its error.
function model.from_or_scripted(cfg, make_scripted)
  cfg = cfg or {}
  local typo_err = not_a_setting(cfg)
  if typo_err then error(typo_err, 0) end -- an error value: no traceback
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

-- luagent.run: a recipe run's start and end, in one visible place. init.lua
-- calls run.start when `luagent run` begins and registers run.finish as the
-- last exit hook.
--
--   run.start{quiet, json, record, replay, settings}
--     * chooses the model transport: --replay answers every model call from a
--       recording (no network, no key needed), --record saves every exchange
--       (luagent.model.recording); otherwise model calls go over HTTP;
--     * subscribes the run's trace (luagent.trace) to its events. The trace
--       opens at the first event — runs/<run-id>/trace.jsonl, after a
--       run_start event — so a run that does nothing traced writes nothing.
--     * switches the model-call cache on (opts.cache = "on" | "refresh"; "off"
--       is --no-cache, which a recipe's YAML cannot undo; luagent.cache);
--   run.finish(status, message)   run_end ("ok" | "failed" | "interrupted"); the trace is closed
--   run.current() -> the run (a table: cache, cache_option, settings, recipe, recipe_dir)
--
-- Kept small (every recipe run loads it, empty ones too): the trace and the
-- recording are loaded only when they are used.
local events = require "luagent.events"
local loop = require "luagent.loop"

local run = {}

local opts, trace

-- The one run of this process.
local current = {}

function run.current()
  return current
end

local function on_event(ev)
  if not trace then
    local err
    trace, err = require("luagent.trace").open(opts)
    if not trace then error(err, 0) end -- events drops this subscriber, with a warning
    trace:start(ev.time)
  end
  trace:write(ev)
end

function run.start(options)
  assert(not opts, "run.start: the run has already started")
  opts = options
  opts.t0 = loop.now()
  if opts.replay or opts.record then
    local model = require "luagent.model"
    model.transport, model.replaying = require("luagent.model.recording").transport(opts, model.transport)
  end
  events.subscribe(on_event)
  local host = require "luagent.host"
  current.settings, current.recipe = opts.settings, host.script
  current.recipe_dir = host.script and (host.script:match("^(.*)/[^/]*$") or ".")
  current.cache_option = opts.cache
  if opts.cache == "on" or opts.cache == "refresh" then require("luagent.cache").for_run(current, opts.cache) end
end

function run.finish(status, message)
  local summary = current.cache and current.cache:finish()
  if summary then events.emit(summary) end
  if trace then trace:finish(status, message) end
end

return run

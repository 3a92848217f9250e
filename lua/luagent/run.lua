-- luagent.run: a recipe run as a value, so several live in one process
-- (luagent eval). A run is its tasks' context (loop.spawn_in; inherited), so
-- what a recipe does — luagent.settings, .config, .run_dir, .at_exit, its
-- events, sandboxes and model calls — reaches its own run.
--
-- A run's fields and methods: lua/meta/run.lua.
--
-- The default run is `luagent run`'s (made by init.lua, ended by the host
-- through luagent._run_exit_hooks), or a bare one (REPL, CLI modules). A run's
-- model transport is r.transport when a recording or a caller chose one,
-- else HTTP (luagent.model.call asks the calling task's run, in one place).
-- Every recipe run loads this file, so it holds only what an empty run
-- needs: the methods an empty run never calls are in luagent.run.methods,
-- and each stub below loads that module at its first call (run_spec checks
-- that the stubs name every method it has).
--
-- The library learns the current run from luagent.context (a leaf: the
-- library never requires this module); run.current is context.current.
-- luagent.run.methods never requires this module either: it returns the
-- methods, which are installed in the class here.
local sched = require "luagent.sched"
local context = require "luagent.context"

local run = {}

local RecipeRun = {}
context._register(RecipeRun)

-- A run's id is made when first read: the clock and the random part cost
-- about 5% of an empty recipe's start-up, and most runs that never write a
-- file never need one. Everything else is a field or a method of the class.
RecipeRun.__index = function(r, k)
  if k ~= "id" then return RecipeRun[k] end
  local name = ((r.recipe or "repl"):match("([^/]+)%.lua$") or "run"):gsub("[^%w_-]", "_")
  r.id = os.date("!%Y%m%d-%H%M%S") .. "-" .. name .. "-" .. require("luagent.sys").random_hex(2)
  return r.id
end

-- luagent.run.methods, with its methods installed in the class (over the stubs below).
local later
local function methods()
  if not later then
    later = require "luagent.run.methods"
    for k, fn in pairs(later.methods) do RecipeRun[k] = fn end
  end
  return later
end

-- The methods of luagent.run.methods: each a stub until the first call of one.
run.LATER = {"print", "emit", "subscribe", "unsubscribe", "dir", "execute", "at_exit", "_folder", "_use_recording",
             "_run_exit_hooks", "_open_trace", "_write_failures"}
for _, name in ipairs(run.LATER) do
  RecipeRun[name] = function(self, ...)
    methods()
    return RecipeRun[name](self, ...)
  end
end

function RecipeRun:__tostring()
  return ("run %s (%s)"):format(self.id, self.recipe or "no recipe")
end

-- Where run folders go: $LUAGENT_RUNS_DIR, else "runs".
run.runs_root = context.runs_root

function run._make(fields)
  local r = setmetatable(fields, RecipeRun)
  r.settings = r.settings or {}
  r.args = r.args or {}
  if r.recipe then r.recipe_dir = r.recipe:match("^(.*)/[^/]*$") or "." end
  r.stats = {model_calls = 0, cached_calls = 0, live_calls = 0, saved_cost = 0, cost = 0, input_tokens = 0,
             output_tokens = 0}
  r.subscribers, r.hooks, r.last_hooks = {}, {}, {}
  return r
end

-- The default run, from the command line's {recipe, args, settings}.
function run._set_default(fields)
  return context._set_default(run._make(fields or {}))
end

run.current = context.current

-- a bare default run until init.lua makes the command line's
run._set_default()

function run.new(opts)
  return methods().new(opts, run._make)
end

-- ---- a run's start and end ----

-- r:_start{quiet, json, record, replay}: the run is traced (from its first
-- event); record/replay: see _use_recording. Raises the recording's message.
function RecipeRun:_start(opts)
  assert(not self.started, "run:_start: the run has already started")
  self.started = true
  self.quiet, self.json, self.record, self.replay = opts.quiet, opts.json, opts.record, opts.replay
  self.t0 = sched.now()
  if opts.replay or opts.record then self:_use_recording(opts) end
  -- the model-call cache: "on" | "refresh" switch it on; "off" (--no-cache) is
  -- kept so a recipe's YAML cannot undo it (luagent.cache.from_config)
  self.cache_option, self.cache_salt = opts.cache, opts.cache_salt
  if opts.cache == "on" or opts.cache == "refresh" then require("luagent.cache").for_run(self, opts.cache) end
end

-- The cache's line for the run's end ("N model calls: K from cache, ..."), as an event.
local function cache_summary(r)
  local cache = rawget(r, "cache")
  local summary = cache and cache:finish()
  if summary then r:emit(summary) end
end

-- run_end, and the trace closed. A run that made its folder but failed
-- before any event still gets a trace there (run_start, run_end with the error).
local function close_trace(r, status, message)
  if not rawget(r, "trace") and r.started and rawget(r, "made_dir") and not rawget(r, "trace_failed") then
    r:_open_trace()
  end
  local trace = rawget(r, "trace")
  if trace then trace:finish(status, message) end
end

-- Only a trace or a recording can fail to be written: a run with neither
-- (an empty recipe) ends without loading luagent.run.methods.
local function writes(r)
  return rawget(r, "trace") or rawget(r, "trace_failed") or rawget(r, "record")
end

-- r:_end(status, err) -> status, err, failures
-- The one rule for a run's end, `luagent run`'s (luagent._run_exit_hooks)
-- and run.new's (r:execute): the exit hooks, each even if an earlier one
-- failed; the cache's summary; run_end, and the trace closed. A hook that
-- failed, or a file of the run that could not be written (its trace, its
-- recording), makes an "ok" run "failed" — run_end says so too, so it
-- agrees with the exit status. failures: those, as one error value (the
-- hooks' first; nil: none); status, err (an error value or a message): how
-- the run ended.
-- r:incomplete(why): what the run made is not all known to be on the host (its
-- sandbox could not be read at the end: the engine went away for good, and the
-- outputs saved are the mirror's copies from earlier). A run that would end
-- "ok" ends "incomplete" with why, and `luagent run` exits 1 saying it.
function RecipeRun:incomplete(why)
  self.incomplete_why = self.incomplete_why or why
end

function RecipeRun:_end(status, err)
  local message = type(err) == "table" and err.message or err
  local hooks_failed
  if #self.hooks + #self.last_hooks > 0 then hooks_failed = self:_run_exit_hooks(status, message) end
  cache_summary(self)
  local failures = hooks_failed
  local incomplete
  if status == "ok" and rawget(self, "incomplete_why") then
    status, err = "incomplete", self.incomplete_why
    incomplete = require("luagent.errors").new("incomplete", "the run is incomplete: " .. self.incomplete_why)
  end
  if writes(self) then failures = self:_write_failures(hooks_failed) end
  if failures and status == "ok" then status, err = "failed", failures end
  close_trace(self, status, type(err) == "table" and err.message or err)
  if writes(self) then failures = self:_write_failures(hooks_failed) end -- and run_end's own line
  if failures and status == "ok" then status, err = "failed", failures end
  return status, err, failures or incomplete
end

return run

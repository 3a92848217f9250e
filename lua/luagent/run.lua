-- luagent.run: a recipe run as a value. Several runs live in one process
-- (luagent eval runs variants × inputs × epochs at once); each has its own
-- settings, folder, trace, exit hooks, sandboxes and model transport. A run
-- is the context of its tasks (luagent.loop: loop.spawn_in, inherited by the
-- tasks they spawn), so what a recipe does — luagent.settings,
-- luagent.config, luagent.run_dir, luagent.at_exit, the events it emits,
-- the sandboxes it opens, the model calls it makes — reaches its own run.
--
--   run.current() -> r          the calling task's run, else the process's default run
--   run.new{recipe, settings, dir, id, args, quiet, json, record, replay, cache, transport, capture}
--     -> r | nil, err           a run of a recipe file, started (luagent.run.methods)
--   r:execute(...) -> {status = "ok" | "failed" | "interrupted", error, traceback, final, stats, dir, trace}
--   r.id, r:dir(sub), r.settings, r.args, r.recipe, r.recipe_dir, r.transport, r.cache,
--   r.stats = {model_calls, cached_calls, live_calls, saved_cost, cost, input_tokens, output_tokens}
--   r.final = {output, stopped_by, usage, cost, turns} of the last agent that finished in it
--   r:emit(ev)                  to r's subscribers (its trace first) and the process-wide ones
--   r:subscribe(fn), r:unsubscribe(fn)
--   r:at_exit(fn [, {last = true}])   fn(status, message) when r ends, newest first
--
-- The default run is `luagent run RECIPE`'s (init.lua makes it with the
-- command line's settings; the host ends it through luagent._run_exit_hooks),
-- or a bare one for the REPL and the CLI modules. Its transport is
-- model.transport, so assigning that still works.
--
-- The trace opens at a run's first event — <run folder>/trace.jsonl after a
-- run_start event — so a run that does nothing traced writes nothing.
-- Kept small: every recipe run loads this, empty ones too. The methods a run
-- needs only once something happens (emit, dir, at_exit, execute, run.new,
-- ...) are in luagent.run.methods, loaded at first use, as are the trace,
-- the recording and the model.
local loop = require "luagent.loop"

local run = {}

local RecipeRun = {}
run._class = RecipeRun

local default -- the process's run

-- methods of luagent.run.methods
local LATER = {emit = true, subscribe = true, unsubscribe = true, dir = true, execute = true, at_exit = true,
               _folder = true, _use_recording = true, _run_exit_hooks = true}

-- A run without its own transport (the default run) uses model.transport;
-- likewise whether it replays a recording.
local FROM_MODEL = {transport = true, replaying = true}

RecipeRun.__index = function(r, k)
  local method = RecipeRun[k]
  if method ~= nil then return method end
  if LATER[k] then
    require "luagent.run.methods"
    return RecipeRun[k]
  end
  if k == "id" then -- made on first use: "<UTC time>-<recipe name>-<4 hex>"
    local name = ((r.recipe or "repl"):match("([^/]+)%.lua$") or "run"):gsub("[^%w_-]", "_")
    r.id = os.date("!%Y%m%d-%H%M%S") .. "-" .. name .. "-" .. require("luagent.sys").random_hex(2)
    return r.id
  end
  if FROM_MODEL[k] then return require("luagent.model")[k] end
  return nil
end

function RecipeRun:__tostring()
  return ("run %s (%s)"):format(self.id, self.recipe or "no recipe")
end

-- Where run folders go: $LUAGENT_RUNS_DIR, else "runs".
function run.runs_root()
  return os.getenv("LUAGENT_RUNS_DIR") or "runs"
end

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

-- The default run: init.lua makes it with what the command line gave
-- ({recipe, args, settings}); without init.lua a bare one is made on demand.
function run._set_default(fields)
  default = run._make(fields or {})
  return default
end

function run._default()
  return default
end

function run.current()
  local r = loop.context()
  if getmetatable(r) == RecipeRun then return r end
  return default or run._set_default()
end

function run.new(opts)
  return require("luagent.run.methods").new(opts)
end

-- ---- a run's start and end ----

-- r:_start{quiet, json, record, replay}: the run is traced (its trace opens
-- at its first event) and, with record or replay, its model transport is a
-- recording's (luagent.run.methods). Raises the recording's message.
function RecipeRun:_start(opts)
  assert(not self.started, "run:_start: the run has already started")
  self.started = true
  self.quiet, self.json, self.record, self.replay = opts.quiet, opts.json, opts.record, opts.replay
  self.t0 = loop.now()
  if opts.replay or opts.record then self:_use_recording(opts) end
end

-- r:_end(status, message) -> err | nil   its exit hooks (if any), then run_end
-- ("ok" | "failed" | "interrupted") and the trace is closed; err: the hooks' failures.
function RecipeRun:_end(status, message)
  local err
  if #self.hooks + #self.last_hooks > 0 then err = self:_run_exit_hooks(status, message) end
  local trace = rawget(self, "trace")
  if trace then trace:finish(status, message) end
  return err
end

return run

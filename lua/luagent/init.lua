-- luagent: the global table every recipe sees.
--
--   luagent.spawn(fn, ...) -> task       luagent.sleep(seconds)
--   luagent.wait_all(tasks) -> results, errors
--   luagent.map(list, fn, {concurrency = 8}) -> results, errors
--   luagent.settings   (--set key=value, dotted keys nest, values typed like YAML)
--   luagent.args       (arguments after the recipe)
--   luagent.config(file) -> the YAML beside the recipe, with --set applied on top
--   (these, run_id, run_dir, at_exit, recipe and recipe_dir are the calling task's run's: luagent.run)
--   luagent.http / json / yaml / fs / retry / model / sandbox / agent / tools / trace
--     (loaded on first use, so start-up stays fast; so are wait_all and map,
--     from luagent.tasks, and the config helpers, from luagent.config)
local sched = require "luagent.sched"
local info = require "luagent.host"
local run = require "luagent.run"

local luagent = {
  version = info.version,
  spawn = sched.spawn,
  sleep = sched.sleep,
  yield = sched.yield,
  now = sched.now,
}

-- Fields of the calling task's run.
local OF_RUN = {settings = true, args = true, recipe = true, recipe_dir = true}

local LAZY = {
  http = true, json = true, yaml = true, fs = true, sys = true, engine_stream = true, engine_client = true, tar = true,
  errors = true,
  retry = true, model = true, sandbox = true, agent = true, tools = true, trace = true,
  manifest = true, outputs = true, events = true, dates = true,
}

-- The old names of two modules, for one release.
package.preload["luagent.engine"] = function() return require "luagent.engine_client" end
package.preload["luagent.engine_io"] = function() return require "luagent.engine_stream" end

-- Functions loaded on first use too, from the module that has them.
local LAZY_FUNCTIONS = {wait_all = "luagent.tasks", map = "luagent.tasks", merge = "luagent.config"}

setmetatable(luagent, {
  __index = function(t, name)
    if OF_RUN[name] then return run.current()[name] end
    local value
    if LAZY[name] then value = require("luagent." .. name)
    elseif LAZY_FUNCTIONS[name] then value = require(LAZY_FUNCTIONS[name])[name]
    else return nil end
    rawset(t, name, value)
    return value
  end,
})

-- A bad --set, --record or --replay is the command line's fault: it stops the
-- run before anything runs, and the host exits 2 (usage) with this message.
local function usage_check(fn, ...)
  local ok, result = pcall(fn, ...)
  if ok then return result end
  local message = type(result) == "table" and result.message or tostring(result)
  error(luagent.errors.new("config", message, {usage = true}), 0)
end

local settings = #info.settings > 0 and usage_check(require("luagent.config").parse_settings, info.settings) or {}
local default = run._set_default{recipe = info.script, args = info.args, settings = settings,
                                  raw_settings = info.settings}

-- `luagent run --resume RUN` runs the recipe again as that run (its folder,
-- its id), answered from its journal up to where it stopped (luagent.journal).
local resume_dir = os.getenv("LUAGENT_RESUME")
if resume_dir and info.script then
  usage_check(require("luagent.journal").resume, default, resume_dir)
end

-- Loads a YAML file (relative to the recipe's folder) with the run's
-- settings (--set) on top. A missing or broken file stops the recipe with the
-- file, line and column.
function luagent.config(file)
  local r = run.current()
  return require("luagent.config").load(file, r.recipe_dir, r.settings)
end

-- Functions run once when the run ends — normally, on an error or on Ctrl-C —
-- after every task has finished, newest first; `last = true` puts one after
-- all the others (and the run's run_end comes after them all). They get how
-- the run ended ("ok", "failed", "interrupted") and the error message, and
-- may wait (close sandboxes, flush traces).
function luagent.at_exit(fn, opts)
  return run.current():at_exit(fn, opts)
end

-- Called by the host when the default run ends: its end (luagent.run's
-- r:_end: its hooks, each even if an earlier one failed, then run_end). What
-- failed there (the hooks, the files of the run) is raised as one error
-- value (the first one's kind; err.errors): the host says it and exits 1.
function luagent._run_exit_hooks(status, message)
  local _, _, failures = default:_end(status, message)
  if failures then error(failures, 0) end
end

-- This run's id and folder (runs/<run-id>/...), made on first use.
function luagent.run_id() return run.current().id end
function luagent.run_dir(sub) return run.current():dir(sub) end

-- Under `luagent run --watch`, the run lists the files it reads for the watcher.
if os.getenv("LUAGENT_WATCH_LIST") then require("luagent.watchlist").start(os.getenv("LUAGENT_WATCH_LIST")) end

-- A recipe run (`luagent run`) starts here: it is traced, and its run
-- chooses the model transport (--record, --replay); its run_end comes after
-- every exit hook.
if info.script then
  usage_check(default._start, default, {quiet = info.quiet, json = info.json, record = info.record,
                                        replay = info.replay, cache = info.cache})
end

return luagent

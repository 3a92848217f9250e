-- luagent: the global table every recipe sees.
--
--   luagent.spawn(fn, ...) -> task       luagent.sleep(seconds)
--   luagent.wait_all(tasks) -> results, errors
--   luagent.map(list, fn, {concurrency = 8}) -> results, errors
--   luagent.settings   (--set key=value, dotted keys nest, values typed like YAML)
--   luagent.args       (arguments after the recipe)
--   luagent.config(file) -> the YAML beside the recipe, with --set applied on top
--   luagent.http / json / yaml / fs / retry / model / sandbox / agent / tools / trace
--     (loaded on first use, so start-up stays fast; so are wait_all and map,
--     from luagent.tasks, and the config helpers, from luagent.config)
local loop = require "luagent.loop"
local info = require "luagent.host"

local luagent = {
  version = info.version,
  spawn = loop.spawn,
  sleep = loop.sleep,
  yield = loop.yield,
  now = loop.now,
  args = info.args,
  recipe = info.script,
}

if info.script then
  luagent.recipe_dir = info.script:match("^(.*)/[^/]*$") or "."
end

local LAZY = {
  http = true, json = true, yaml = true, fs = true, sys = true, engine_io = true, engine = true, tar = true,
  errors = true,
  retry = true, model = true, sandbox = true, agent = true, tools = true, trace = true,
  manifest = true, outputs = true, events = true, dates = true,
}

-- Functions loaded on first use too, from the module that has them.
local LAZY_FUNCTIONS = {wait_all = "luagent.tasks", map = "luagent.tasks", merge = "luagent.config"}

setmetatable(luagent, {
  __index = function(t, name)
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

luagent.settings = #info.settings > 0 and usage_check(require("luagent.config").parse_settings, info.settings) or {}

-- Loads a YAML file (relative to the recipe's folder) with --set applied on
-- top. A missing or broken file stops the recipe with the file, line and column.
function luagent.config(file)
  return require("luagent.config").load(file, luagent.recipe_dir, luagent.settings)
end

-- Functions run once when the run ends — normally, on an error or on Ctrl-C —
-- after every task has finished, newest first; `last = true` puts one after
-- all the others (the trace, which records what the others do). They get how
-- the run ended ("ok", "failed", "interrupted") and the error message, and
-- may wait (close sandboxes, flush traces).
local exit_hooks, last_hooks = {}, {}

function luagent.at_exit(fn, opts)
  if opts and opts.last then last_hooks[#last_hooks + 1] = fn else exit_hooks[#exit_hooks + 1] = fn end
end

-- Called by the host; each hook runs even if an earlier one failed. Failures
-- are raised together as one error value (the first one's kind; err.errors).
function luagent._run_exit_hooks(status, message)
  local order = {}
  for i = #exit_hooks, 1, -1 do order[#order + 1] = exit_hooks[i] end
  for i = #last_hooks, 1, -1 do order[#order + 1] = last_hooks[i] end
  exit_hooks, last_hooks = {}, {}
  local failures, messages = {}, {}
  for _, hook in ipairs(order) do
    local ok, err = pcall(hook, status, message)
    if not ok then
      failures[#failures + 1] = luagent.errors.from(err)
      messages[#messages + 1] = failures[#failures].message
    end
  end
  if #failures > 0 then
    error(luagent.errors.new(failures[1].kind, "while finishing the run: " .. table.concat(messages, "; "),
                             {errors = failures}), 0)
  end
end

-- This run's id and folder (runs/<run-id>/...), made on first use.
function luagent.run_id() return require("luagent.trace").run_id() end
function luagent.run_dir(sub) return require("luagent.trace").run_dir(sub) end

-- Under `luagent run --watch`, the run lists the files it reads for the watcher.
if os.getenv("LUAGENT_WATCH_LIST") then require("luagent.watchlist").start(os.getenv("LUAGENT_WATCH_LIST")) end

-- A recipe run (`luagent run`) starts here: luagent.run chooses the model
-- transport (--record, --replay) and subscribes the trace to the run's events.
if info.script then
  local run = require "luagent.run"
  usage_check(run.start, {quiet = info.quiet, json = info.json, record = info.record, replay = info.replay,
                          cache = info.cache, settings = luagent.settings})
  luagent.at_exit(run.finish, {last = true})
end

return luagent

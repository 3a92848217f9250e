---@meta luagent.run
-- luagent.run, a low-level module: recipes normally do not need it (the
-- recipe API, luagent.sandbox, .model, .agent, ..., is built on it). It is
-- not a field of the `luagent` class. LuaLS annotations: definitions only.
-- LuaLS takes one module per file: `---@meta luagent.run` above makes
-- `require "luagent.run"` give the types of the table returned below.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---What a run's model calls came to, counted from its model_response events.
---@class luagent.RunStats
---@field model_calls integer
---@field cached_calls integer answered from the model-call cache
---@field live_calls integer
---@field saved_cost number dollars the cached answers would have cost
---@field cost number dollars
---@field input_tokens integer
---@field output_tokens integer

---The last agent that finished in the run (its agent_end event).
---@class luagent.RunFinal
---@field output string? the final answer
---@field stopped_by "answer"|"max_turns"|"budget"|"error"
---@field usage luagent.Usage
---@field cost number?
---@field turns integer

---@class luagent.RunOptions
---@field recipe string the recipe file (loaded fresh by execute)
---@field settings? table the run's settings, already merged (what --set gives `luagent run`)
---@field dir? string the run's folder (default runs/<id>, or under $LUAGENT_RUNS_DIR)
---@field id? string the run's id (default "<UTC time>-<recipe name>-<4 hex>")
---@field args? string[] luagent.args for the recipe (execute's arguments replace them)
---@field quiet? boolean no terminal lines for its events
---@field json? boolean its events as JSON lines on stdout
---@field record? string save its model exchanges to this file
---@field replay? string answer its model calls from this recording
---@field cache? any the model-call cache handle (luagent.cache), or nil
---@field transport? fun(request: table): table?, luagent.Error? its model transport (default: the default run's)
---@field capture? boolean the recipe's print and io.write go to <dir>/stdout.txt

---What r:execute() returns.
---@class luagent.RunResult
---@field status "ok"|"failed"|"interrupted"
---@field error luagent.Error? why it failed (a raised string becomes kind "error")
---@field traceback string? where the recipe raised
---@field final luagent.RunFinal?
---@field stats luagent.RunStats
---@field dir string the run's folder
---@field trace string? its trace file, if it wrote one

---low-level: recipes normally do not need this (`luagent run` makes a
---recipe's run; luagent eval makes many).
---luagent.run: a recipe run as a value (lua/luagent/run.lua). Several runs
---live in one process; each has its own settings, folder, trace, exit hooks,
---sandboxes and model transport, and what a recipe does (luagent.settings,
---luagent.config, luagent.run_dir, luagent.at_exit, events, sandboxes,
---model calls) reaches the run of the task doing it.
---
---    local r = assert(run.new{recipe = "recipes/energy_anomaly.lua", settings = {...},
---                             dir = "evals/e1/runs/a/1", quiet = true, capture = true})
---    local result = r:execute()   -- {status, error, final, stats, dir, trace}
---@class luagent.run
---@field LATER string[] the methods of a run that load luagent.run.methods at their first call (an empty
---recipe never loads it)
local run = {}

---The run of the calling task, or the process's default run (the one
---`luagent run RECIPE` started; a bare one in the REPL and CLI commands).
---@return luagent.Run
function run.current() end

---A run of a recipe file, started: its transport chosen (record, replay), its
---trace subscribed (the trace opens at its first event). A recording that
---cannot be used is `nil, err` (kind "config"); bad options raise.
---@param opts luagent.RunOptions
---@return luagent.Run? run
---@return luagent.Error? err
function run.new(opts) end

---Where run folders go: $LUAGENT_RUNS_DIR, else "runs".
---@return string
function run.runs_root() end

---@class luagent.Run
---@field id string e.g. "20260130-120000-energy_anomaly-3f2a"
---@field settings table its settings (luagent.settings inside it)
---@field args string[] luagent.args inside it
---@field recipe string? the recipe file
---@field recipe_dir string? the recipe's folder; luagent.config reads from here
---@field transport fun(request: table): table?, luagent.Error? its model transport
---@field replaying table|false|nil the recording it replays, loaded once as the run starts (recording.load's)
---@field cache any the model-call cache handle, or nil
---@field stats luagent.RunStats
---@field final luagent.RunFinal?
---@field result luagent.RunResult? once executed
local RecipeRun = {}

---The run's folder, or a folder inside it; made on first use (raises if it
---cannot be made).
---@param sub? string e.g. "output"
---@return string path
function RecipeRun:dir(sub) end

---Gives an event to the run's subscribers (its trace first), then to the
---process-wide ones (what luagent.events.emit does inside the run).
---@param ev luagent.Event
function RecipeRun:emit(ev) end

---Marks what the run made as not all known to be on the host (its sandbox
---could not be read at the end; luagent.outputs calls it): a run that would end
---"ok" ends "incomplete" with this reason, and `luagent run` exits 1 saying it.
---@param why string
function RecipeRun:incomplete(why) end

---Says something to the run's user (print's format): on the run's stdout.txt
---when its output is captured (luagent eval), else on the terminal.
---@param ... any
function RecipeRun:print(...) end

---Calls fn(ev, run) for every event of this run; returns fn.
---@param fn fun(ev: luagent.Event, run: luagent.Run)
---@return function
function RecipeRun:subscribe(fn) end

---@param fn function
function RecipeRun:unsubscribe(fn) end

---Runs `fn(status, message)` when this run ends, newest first; `{last =
---true}` puts it after the others. luagent.at_exit registers here.
---@param fn fun(status: "ok"|"failed"|"interrupted", message: string?)
---@param opts? {last?: boolean}
function RecipeRun:at_exit(fn, opts) end

---Runs the recipe (loaded fresh, with globals of its own; its folder is
---searched first for modules) as a task in this run, with `...` as its
---arguments; then its exit hooks (its sandboxes are closed there), then
---run_end. A failing recipe is `status = "failed"`, never an error here; a
---caller cancelled meanwhile (Ctrl-C) waits for the run to end, then
---raises the cancellation (r.result has the run's result). Once per run.
---@param ... string
---@return luagent.RunResult
function RecipeRun:execute(...) end

return run

---@meta _
-- luagent: the global table every recipe sees (lua/luagent/init.lua).
--
-- LuaLS annotation file: `luagent meta [DIR]` copies these files into
-- DIR/.luagent/meta/ and points DIR/.luarc.json at them, so an editor
-- completes and type-checks a recipe. Definitions only: nothing here runs.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---The luagent global: tasks, settings, the run's folder, and the recipe API
---modules, each loaded on first use (`luagent.sandbox`, `luagent.model`, ...;
---`require "luagent.sandbox"` gives the same table).
---Low-level modules (luagent.sys, .tar, .engine, .engine_stream, .loop, .events,
---.manifest, .dates, .run, .process) are not listed here: each has its own
---file (sys.lua, tar.lua, ...), marked low-level.
---`settings`, `args`, `recipe`, `recipe_dir`, `config`, `at_exit`, `run_id`
---and `run_dir` are those of the calling task's run (luagent.run): the one
---`luagent run` started, or one of the runs an eval executes in the process.
---@class luagent
---@field version string luagent's version, e.g. "0.1.0"
---@field args string[] the arguments after the recipe (after `--`)
---@field recipe string? the recipe's path as given to `luagent run` (nil in the REPL)
---@field recipe_dir string? the recipe's folder; relative config paths start here
---@field settings table<string, any> `--set key=value` settings; dotted keys nest, values typed like YAML
---@field http luagent.http HTTP requests and server-sent events (libcurl)
---@field json luagent.json exact JSON for model payloads
---@field yaml luagent.yaml YAML to Lua tables and back
---@field fs luagent.fs host files: read, atomic write, walk, temp dirs
---@field errors luagent.errors the one error value and its catalogue of kinds
---@field retry luagent.retry retry policies as values
---@field model luagent.model language models behind one interface
---@field sandbox luagent.sandbox locked-down Docker sessions
---@field agent luagent.agent the write-run-observe loop
---@field tools luagent.tools the tools a model sees
---@field trace luagent.trace the run's trace, record and replay
---@field outputs luagent.outputs bring a sandbox's results home
luagent = {}

---Runs `fn(...)` as a task beside the others on the event loop. Waiting
---primitives (HTTP, sandbox commands, sleeps) yield, so tasks run at once.
---@param fn fun(...): ...
---@param ... any arguments for fn
---@return luagent.Task
function luagent.spawn(fn, ...) end

---Lets other tasks run for `seconds` (a fraction is fine).
---@param seconds number
function luagent.sleep(seconds) end

---Lets other ready tasks run first, then continues.
function luagent.yield() end

---Monotonic seconds (with fraction), for measuring durations.
---@return number
function luagent.now() end

---Waits for every task. `results[i]` is task i's first result (nil if it
---failed); `errors` is nil when all succeeded, else `errors[i]` = task i's error.
---@param tasks luagent.Task[]
---@return any[] results
---@return table<integer, luagent.Error|any>? errors
function luagent.wait_all(tasks) end

---Calls `fn(item, i)` for every item, at most `concurrency` at once (8 by
---default). Results come in list order; a call that raises puts its error in
---`errors[i]` (nil when none failed).
---@generic T, R
---@param list T[]
---@param fn fun(item: T, i: integer): R
---@param opts? {concurrency?: integer}
---@return R[] results
---@return table<integer, any>? errors
function luagent.map(list, fn, opts) end

---Loads a YAML file (relative to the recipe's folder) with `--set` settings
---applied on top. A missing or broken file stops the recipe with the file,
---line and column.
---@param file string
---@return table
function luagent.config(file) end

---Merges `over` into `base` (nested plain tables merge, other values replace);
---returns `base`.
---@param base table
---@param over table
---@return table base
function luagent.merge(base, over) end

---Runs `fn(status, message)` once when the run ends (normally, on an error or
---on Ctrl-C), after every task has finished, newest first; `{last = true}`
---puts it after all the others. `status` is "ok", "failed" or "interrupted".
---The function may wait (close sandboxes, flush files).
---@param fn fun(status: "ok"|"failed"|"interrupted", message: string?)
---@param opts? {last?: boolean}
function luagent.at_exit(fn, opts) end

---This run's id, e.g. "20260130-120000-energy_anomaly-3f2a".
---@return string
function luagent.run_id() end

---This run's folder (runs/<run-id>, or under $LUAGENT_RUNS_DIR), or a folder
---inside it; made on first use.
---@param sub? string e.g. "output"
---@return string path
function luagent.run_dir(sub) end

---A task made by `luagent.spawn` (or `luagent.map`).
---@class luagent.Task
local Task = {}

---Waits for the task; returns its results, or nil and its error (an error
---value, or what the task raised).
---@return any ...
function Task:wait() end

---Stops the task at its next wait, with a "cancelled" error.
function Task:cancel() end

---@return "ready"|"running"|"waiting"|"done"|"failed"
function Task:status() end

---Makes it a background task: the run does not wait for it to end (a server
---loop waiting for connections; what owns it ends it, as a box's close ends
---its network relay's).
---@return luagent.Task self
function Task:background() end

---Cancels the task if it has not finished and marks the handle closed (the
---task's own work unwinds with a "cancelled" error naming why); wait, cancel
---and status then raise "task is closed". Idempotent; bound to `<close>`.
function Task:close() end

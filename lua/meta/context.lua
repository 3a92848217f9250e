---@meta luagent.context
-- luagent.context, a low-level module: recipes normally do not need it (the
-- recipe API, luagent.sandbox, .model, .agent, ..., is built on it). It is
-- not a field of the `luagent` class. LuaLS annotations: definitions only.
-- LuaLS takes one module per file: `---@meta luagent.context` above makes
-- `require "luagent.context"` give the types of the table returned below.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---low-level: recipes normally do not need this (luagent.run_id, .run_dir,
---.settings and .at_exit answer for the calling task's run).
---luagent.context: which run the calling task belongs to
---(lua/luagent/context.lua), for the library modules, which never require
---luagent.run.
---@class luagent.context
local context = {}

---The run of the calling task, or the process's default run (the one
---`luagent run RECIPE` started; a bare one in the REPL and CLI commands).
---Same as `luagent.run.current()`.
---@return luagent.Run
function context.current() end

---The process's default run.
---@return luagent.Run?
function context.default() end

---Where run folders go: $LUAGENT_RUNS_DIR, else "runs".
---@return string
function context.runs_root() end

return context

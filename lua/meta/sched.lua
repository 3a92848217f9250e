---@meta luagent.sched
-- luagent.sched (its old name, luagent.loop, loads it too for one release),
-- a low-level module: recipes normally do not need it (the
-- recipe API, luagent.sandbox, .model, .agent, ..., is built on it). It is
-- not a field of the `luagent` class. LuaLS annotations: definitions only.
-- LuaLS takes one module per file: `---@meta luagent.sched` above makes
-- `require "luagent.sched"` give the types of the table returned below.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---low-level: recipes normally do not need this (use luagent.spawn, luagent.sleep, ...).
---luagent.sched: tasks and the scheduler over the event loop (src/lua/lua_sched.c).
---@class luagent.sched
local sched = {}

---Runs fn(...) as a task (luagent.spawn).
---@param fn fun(...): ...
---@param ... any
---@return luagent.Task
function sched.spawn(fn, ...) end

---Yields to other tasks for that long (luagent.sleep).
---@param seconds number
function sched.sleep(seconds) end

---Lets other ready tasks run (luagent.yield).
function sched.yield() end

---Monotonic seconds (luagent.now).
---@return number
function sched.now() end

---The task running now, or nil outside a task.
---@return luagent.Task?
function sched.current() end

---The context of the task running now: the value it was spawned with by
---`sched.spawn_in`, or inherited from the task that spawned it; nil outside a
---task or when it has none. luagent.run keeps a recipe run there.
---@return any
function sched.context() end

---Runs fn(...) as a task whose context is `ctx` (nil: none); the tasks it
---spawns inherit it.
---@param ctx any
---@param fn fun(...): ...
---@param ... any
---@return luagent.Task
function sched.spawn_in(ctx, fn, ...) end

---Was the running task asked to stop (Ctrl-C, SIGTERM, task:cancel(), its
---main task failing)? Its "cancelled" error, or nil. It stays set after a
---wait raised the cancellation once, so code that caught it can still tell
---the run is stopping (the agent and model calls check it).
---@return luagent.Error? err kind "cancelled"
function sched.cancelled() end

return sched

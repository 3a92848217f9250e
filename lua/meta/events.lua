---@meta luagent.events
-- luagent.events, a low-level module: recipes normally do not need it (the
-- recipe API, luagent.sandbox, .model, .agent, ..., is built on it). It is
-- not a field of the `luagent` class. LuaLS annotations: definitions only.
-- LuaLS takes one module per file: `---@meta luagent.events` above makes
-- `require "luagent.events"` give the types of the table returned below.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---low-level: recipes normally do not need this (agent.new{on_step = ...} and
---the trace show every step).
---luagent.events: the bus every model call, agent step and sandbox command
---is emitted on (lua/luagent/events.lua).
---@class luagent.events
local events = {}

---Calls fn(ev, run) for every event; returns fn, for unsubscribe. Called
---inside a run that luagent.run started (an eval's run), it sees that run's
---events only; elsewhere every run's (`run` says whose).
---@param fn fun(ev: luagent.Event, run: luagent.Run)
---@return function
function events.subscribe(fn) end

---@param fn function
function events.unsubscribe(fn) end

---Sends an event to the calling task's run: its subscribers (its trace
---first), then the process-wide ones (ev.time is set). Same as
---`luagent.run.current():emit(ev)`.
---@param ev luagent.Event
function events.emit(ev) end

return events

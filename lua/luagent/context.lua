-- luagent.context: which run the calling task belongs to, for the library
-- modules (events, trace, model, sandbox, mcp, ...). A run is its tasks'
-- context (loop.spawn_in; inherited by the tasks they spawn), else the
-- process's default run. A leaf: the library requires it and never
-- luagent.run, which makes runs and registers here what they are; calls
-- go down only (luagent.run -> luagent.context -> luagent.sched).
--
-- The functions: lua/meta/context.lua; luagent.run registers its class with
-- context._register, so a task's context is a run when its metatable is that class.
local sched = require "luagent.sched"

local context = {}

local class   -- the runs' metatable
local default -- the process's run

function context._register(c)
  class = c
end

function context._set_default(r)
  default = r
  return r
end

function context.default()
  return default
end

function context.current()
  local r = sched.context()
  if r ~= nil and getmetatable(r) == class then return r end
  return default
end

function context.runs_root()
  return os.getenv("LUAGENT_RUNS_DIR") or "runs"
end

return context

-- luagent.events: one bus for what happens during a run — model requests and
-- responses, agent steps, tool calls, sandbox commands — so a trace file, a
-- live terminal view, or a recipe's own hook can follow everything.
--
--   local events = require "luagent.events"
--   local sub = events.subscribe(function(ev) print(ev.type) end)
--   events.emit{type = "my_event", detail = 1}
--   events.unsubscribe(sub)
-- Every event gets `time` (wall clock, seconds) before subscribers see it.
-- A subscriber that raises is dropped with a warning: one broken view must
-- not stop a run (a cancelled run's error goes on). The bus knows nobody: a
-- recipe run's trace is one subscriber, which luagent.run adds when the run
-- starts.
local sys = require "luagent.sys"

local events = {}

local subscribers = {}

function events.subscribe(fn)
  subscribers[#subscribers + 1] = fn
  return fn
end

function events.unsubscribe(fn)
  for i, f in ipairs(subscribers) do
    if f == fn then table.remove(subscribers, i) return end
  end
end

function events.emit(ev)
  if #subscribers == 0 then return end
  ev.time = ev.time or sys.time()
  for _, fn in ipairs({table.unpack(subscribers)}) do
    local ok, err = pcall(fn, ev)
    if not ok then
      if type(err) == "table" and err.kind == "cancelled" then error(err, 0) end
      io.stderr:write("luagent: an event subscriber failed and was removed: ", tostring(err), "\n")
      events.unsubscribe(fn)
    end
  end
end

return events

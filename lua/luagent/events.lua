-- luagent.events: one bus for what happens during a run — model requests and
-- responses, agent steps, tool calls, sandbox commands — so a trace file, a
-- live terminal view, or a recipe's own hook can follow everything.
--
--   local events = require "luagent.events"
--   local sub = events.subscribe(function(ev, run) print(ev.type) end)
--   events.emit{type = "my_event", detail = 1}
--   events.unsubscribe(sub)
-- An event belongs to the run of the task that emits it (luagent.context:
-- context.current()): events.emit is that run's r:emit, which gives it to the
-- run's own subscribers (its trace first) and then to the process-wide ones;
-- each gets (ev, run). events.subscribe called inside a run that luagent.run
-- started (an eval's run) subscribes to that run only; elsewhere (a recipe
-- run by `luagent run`, the REPL) it subscribes process-wide, seeing every
-- run's events. Every event gets `time` (wall clock, seconds) before
-- subscribers see it. A subscriber that raises is dropped with a warning:
-- one broken view must not stop a run (a cancelled run's error goes on).
local sys = require "luagent.sys"
local context = require "luagent.context"

local events = {}

local subscribers = {} -- process-wide

-- The run a subscription made now belongs to, or nil: process-wide.
local function own_run()
  local r = context.current()
  return r ~= context.default() and r or nil
end

local function remove(list, fn)
  for i, f in ipairs(list) do
    if f == fn then table.remove(list, i) return true end
  end
  return false
end

function events.subscribe(fn)
  local r = own_run()
  if r then return r:subscribe(fn) end
  subscribers[#subscribers + 1] = fn
  return fn
end

function events.unsubscribe(fn)
  local r = own_run()
  if not (r and remove(r.subscribers, fn)) then remove(subscribers, fn) end
end

-- Gives ev to each function of `list` as fn(ev, run); a failing one is
-- removed from the list.
local function give(list, ev, r)
  for _, fn in ipairs({table.unpack(list)}) do
    local ok, err = pcall(fn, ev, r)
    if not ok then
      if type(err) == "table" and err.kind == "cancelled" then error(err, 0) end
      io.stderr:write("luagent: an event subscriber failed and was removed: ", tostring(err), "\n")
      remove(list, fn)
    end
  end
end

-- events._deliver(ev, run, own): what run:emit does once it has noted the event.
function events._deliver(ev, r, own)
  if #own == 0 and #subscribers == 0 then return end
  ev.time = ev.time or sys.time()
  if #own > 0 then give(own, ev, r) end
  if #subscribers > 0 then give(subscribers, ev, r) end
end

function events.emit(ev)
  return context.current():emit(ev)
end

return events

-- luagent.handle: handles born closed. A handle built in steps counts as
-- closed until it is built, and every way out of the scope that builds it
-- (nil, err; an error; a cancellation) releases what it holds, once.
local t = require "helper"
local handle = require "luagent.handle"
local sched = require "luagent.sched"

-- A handle that holds a resource from its first step, and says when it is released.
local function thing()
  local h = {released = 0, holds = true}
  function h.close(self) self.released, self.holds = self.released + 1, false end
  return h
end

-- Builds h in steps; `fail` says how the second step fails: "nil" (nil, err), "raise", "sleep" (waits, to be
-- cancelled), or nil (it is built).
local function build(h, fail)
  local building <close> = handle.building(h)
  t.eq(h.closed, true, "closed while it is built")
  if fail == "nil" then return nil, "the second step failed" end
  if fail == "raise" then error("the second step raised", 0) end
  if fail == "sleep" then sched.sleep(10) end
  return building:built()
end

t.test("a handle built: open, kept, not released", function()
  local h = thing()
  t.eq(build(h), h)
  t.eq(h.closed, false); t.eq(h.released, 0); t.ok(h.holds)
end)

t.test("a failure returned, raised, or a cancellation: released once, still closed, the error unchanged", function()
  local h = thing()
  local none, why = build(h, "nil")
  t.eq(none, nil); t.eq(why, "the second step failed")
  t.eq(h.released, 1); t.eq(h.closed, true)
  h = thing()
  local ok, err = pcall(build, h, "raise")
  t.eq(ok, false); t.eq(err, "the second step raised"); t.eq(h.released, 1)
  h = thing()
  local task = sched.spawn(build, h, "sleep")
  sched.sleep(0.01)
  task:cancel()
  local none2, werr = task:wait()
  t.eq(none2, nil); t.eq(werr.kind, "cancelled", tostring(werr))
  t.eq(h.released, 1, "a cancelled build is released too")
end)

t.test("guard: a handle usable while it is built is released the same way; release and value are the builder's", function()
  local h, freed = thing(), nil
  local function make(fail)
    local building <close> = handle.guard(h, function(x) freed = x end)
    t.eq(h.closed, nil, "not marked closed")
    if fail then return nil, "no" end
    return building:built("the value")
  end
  t.eq(make(false), "the value"); t.eq(freed, nil)
  t.eq(select(2, make(true)), "no"); t.eq(freed, h, "its own release ran"); t.eq(h.released, 0)
end)

return t.done()

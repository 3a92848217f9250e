-- Cancellation goes through: a task asked to stop keeps saying so after its
-- wait raised it once (loop.cancelled), an agent stops however its tool
-- treats the cancellation, and a cancelled task makes no model call.
-- The model is tests/fake_provider.py (a test double) or a stand-in table.
local t = require "helper"
local fake = require "fake_provider_client"
local sched = require "luagent.sched"

t.test("sched.cancelled(): nil until the task is asked to stop, then its cancelled error, even once caught", function()
  t.eq(sched.cancelled(), nil)
  local seen = {}
  local task = luagent.spawn(function()
    seen.before = sched.cancelled()
    local ok, err = pcall(luagent.sleep, 10)
    seen.caught, seen.after = not ok and err, sched.cancelled()
    luagent.sleep(0.01) -- a wait after the first one is not cancelled again: cleanup can wait
    return "finished"
  end)
  luagent.sleep(0.05)
  task:cancel()
  t.eq(task:wait(), "finished")
  t.eq(seen.before, nil)
  t.eq(seen.caught.kind, "cancelled")
  t.eq(seen.after.kind, "cancelled"); t.match(seen.after.message, "task:cancel%(%)")
  t.eq(sched.cancelled(), nil, "the task that cancelled it is not stopping")
end)

-- A stand-in model that always asks for the nap tool, counting its calls.
local function napping_model()
  local m = {provider = "stand-in", model = "napper", calls = 0}
  function m:complete()
    self.calls = self.calls + 1
    return {text = "", tool_calls = {{id = "call_" .. self.calls, name = "nap", arguments = {}}},
            usage = {input_tokens = 1, output_tokens = 1, cached_tokens = 0}}
  end
  return m
end

for _, case in ipairs({
  {"raises", function() luagent.sleep(10) return "rested" end},
  {"swallows", function() local ok = pcall(luagent.sleep, 10) return ok and "rested" or "the nap was interrupted" end},
  {"returns", function() local ok, err = pcall(luagent.sleep, 10) if ok then return "rested" end return nil, err end},
}) do
  local mode, handler = case[1], case[2]
  t.test("an agent whose tool " .. mode .. " the cancellation stops: agent:run raises it, no model call follows", function()
    local m = napping_model()
    local a = luagent.agent.new{name = "napper", model = m, max_turns = 5,
      tools = {{name = "nap", description = "naps", parameters = {type = "object", properties = {}}, handler = handler}}}
    local task = luagent.spawn(function() return a:run("nap") end)
    luagent.sleep(0.05)
    task:cancel()
    local result, err = task:wait()
    t.eq(result, nil)
    t.eq(err.kind, "cancelled")
    t.eq(m.calls, 1, "the model was asked once, before the signal")
  end)
end

t.test("a cancelled task that caught the cancellation makes no model call: complete raises it", function()
  local q = fake.queue("cancelled")
  fake.script(q, {{text = "never asked for"}})
  local m = luagent.model.openai{model = "gpt-4o-mini", base_url = fake.base_url(q, "openai"), api_key = "sk-test",
                                 retry = luagent.retry.none}
  local task = luagent.spawn(function()
    pcall(luagent.sleep, 10)
    return m:complete{messages = {{role = "user", content = "hi"}}}
  end)
  luagent.sleep(0.05)
  task:cancel()
  local result, err = task:wait()
  t.eq(result, nil)
  t.eq(err.kind, "cancelled")
  t.eq(#fake.requests(q), 0)
end)

return t.done()

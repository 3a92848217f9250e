-- An agent driven by the fake provider (tests/fake_provider.py, a test double)
-- whose tool returns a long text each turn, for the faults tests (recordings,
-- a trace on a full disk): luagent run faults_recipe.lua --set base_url=URL
local s = luagent.settings
print("STARTED"); io.stdout:flush()
local m = luagent.model.openai{model = "gpt-4o-mini", base_url = assert(s.base_url, "--set base_url=..."),
                               api_key = "sk-fake-key-for-tests", retry = luagent.retry.none}
local long = {
  name = "long_text", description = "Returns a long text.", parameters = {type = "object", properties = {}},
  handler = function() return ("a line of the long text\n"):rep(s.lines or 10) end,
}
local a = luagent.agent.new{name = "reader", model = m, tools = {long}, max_turns = 10, max_tool_output = 100000}
local r = a:run("Read the long text.")
print("STOPPED: " .. r.stopped_by)
print("OUTPUT: " .. tostring(r.output))

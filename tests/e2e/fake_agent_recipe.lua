-- A small agent recipe driven by the fake provider (tests/fake_provider.py, a
-- test double), for the record/replay and Ctrl-C tests.
--   luagent run tests/e2e/fake_agent_recipe.lua --set base_url=URL [--set instructions=...]
local agent, sandbox, model, tools = luagent.agent, luagent.sandbox, luagent.model, luagent.tools
local s = luagent.settings

local m = model.openai{model = "gpt-4o-mini", base_url = assert(s.base_url, "--set base_url=..."),
                       api_key = "sk-fake-key-for-tests", retry = luagent.retry.none, timeout = 60}
local box <close> = assert(sandbox.open{labels = {["luagent.test"] = s.label or "none"},
                                        save = {from = "output", to = luagent.run_dir("output")}})
local calculator = agent.new{
  name = "calculator",
  instructions = s.instructions or "Compute with Python; answer with the number.",
  model = m, tools = {tools.run_python(box)}, max_turns = 5,
}
local r = calculator:run("What is 6 * 7?")
print("STOPPED: " .. r.stopped_by)
print("OUTPUT: " .. tostring(r.output))
local tool_text = model.text_of(r.transcript[4] and r.transcript[4].content or "")
print("TOOL: " .. tool_text:gsub("took [%d.]+ s", "took t"):gsub("\n", " | "))

-- A small agent run for the trace page's test (tests/e2e/trace_page_test.sh),
-- driven by the fake provider (tests/fake_provider.py, a test double):
--   luagent run tests/e2e/trace_page_recipe.lua --set base_url=URL
-- run_python in a real sandbox draws output/chart.png, view_image looks at
-- it; the outputs are saved to the run folder with their manifest.json.
local agent, sandbox, model, tools = luagent.agent, luagent.sandbox, luagent.model, luagent.tools
local s = luagent.settings

local m = model.openai{model = "gpt-4o-mini", base_url = assert(s.base_url, "--set base_url=..."),
                       api_key = "sk-fake-key-for-tests", timeout = 60,
                       retry = luagent.retry.exponential{attempts = 3, base = 0.05, jitter = false}}
local box <close> = assert(sandbox.open{labels = {["luagent.test"] = "trace_page"},
                                        save = {from = "output", to = luagent.run_dir("output")}})
local charter = agent.new{
  name = "charter",
  instructions = "Draw the chart with **Python**; look at it; answer in Markdown.",
  model = m, tools = {tools.run_python(box), tools.view_image(box)}, max_turns = 5,
  outputs = {"output/chart.png"},
}
local r = charter:run("Chart the squares of 1..10 into `output/chart.png`.")
print("STOPPED: " .. r.stopped_by)

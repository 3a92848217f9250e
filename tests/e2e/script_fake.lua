-- Scripts a queue of the fake provider: luagent run script_fake.lua -- QUEUE KIND
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local queue, kind = ...
local steps = {
  calculator = {
    {text = "Let me compute it.", tool_calls = {{id = "call_1", name = "run_python", arguments = {code = "print(6 * 7)"}}}},
    {text = "The answer is 42."},
  },
  hang = {
    {tool_calls = {{id = "call_w", name = "run_python", arguments = {
      code = "import os; os.makedirs('output', exist_ok=True); open('output/partial.txt', 'w').write('so far')"}}}},
    {hang = 60, text = "too late"},
  },
  energy = (function()
    -- the energy analysis as an OpenAI model would send it: one tool call a turn
    package.path = "recipes/?.lua;" .. package.path
    local code = require "energy_anomaly_steps"
    local list = {}
    for i, name in ipairs({"inspect", "baseline", "detect", "plot", "report"}) do
      list[i] = {text = "Step: " .. name, tool_calls = {{id = "call_" .. name, name = "run_python",
                                                          arguments = {code = code[name]}}}, chunk = 40}
    end
    list[#list + 1] = {text = "The anomaly is in the report.", usage = {input_tokens = 5000, output_tokens = 30}}
    return list
  end)(),
}
fake.script(queue, assert(steps[kind], "unknown kind"))
print(fake.base_url(queue, "openai"))

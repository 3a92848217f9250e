-- Scripts a queue of the fake provider: luagent run script_fake.lua -- QUEUE KIND [PROVIDER]
-- and prints the base URL of the queue for PROVIDER (default openai).
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local queue, kind, provider = ...

-- The energy analysis, one tool call a turn; each turn's step gets `extra(i, name)`'s fields.
local function energy(extra)
  package.path = "recipes/?.lua;" .. package.path
  local code = require "energy_anomaly_steps"
  local list = {}
  for i, name in ipairs({"inspect", "baseline", "detect", "plot", "report"}) do
    list[i] = {text = "Step: " .. name, tool_calls = {{id = "call_" .. name, name = "run_python",
                                                        arguments = {code = code[name]}}}, chunk = 40}
    for k, v in pairs(extra and extra(i, name) or {}) do list[i][k] = v end
  end
  list[#list + 1] = {text = "The anomaly is in the report.", usage = {input_tokens = 5000, output_tokens = 30}}
  return list
end
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
  -- the energy analysis as an OpenAI model would send it
  energy = energy(),
  -- ... as a reasoning model over Responses: encrypted reasoning and a commentary preamble each turn
  energy_reasoning = energy(function(i, name)
    return {reasoning = {{summary = "Next: " .. name, encrypted_content = "gAAAA-enc-" .. i}},
            messages = {{text = "I will " .. name .. " next.", phase = "commentary"}}, text = ""}
  end),
  -- ... as Claude with extended thinking: a signed thinking block before each call
  energy_thinking = energy(function(i, name)
    return {thinking = {{thinking = "Now " .. name .. ".", signature = "sig-" .. i}}, count_tokens = true}
  end),
}
fake.script(queue, assert(steps[kind], "unknown kind"))
print(fake.base_url(queue, provider or "openai"))

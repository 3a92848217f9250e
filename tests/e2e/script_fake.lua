-- Scripts a queue of the fake provider: luagent run script_fake.lua -- QUEUE KIND
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local queue, kind = ...
local steps = {
  calculator = {
    {text = "Let me compute it.", tool_calls = {{id = "call_1", name = "run_python", arguments = {code = "print(6 * 7)"}}}},
    {text = "The answer is 42."},
  },
  hang = {{hang = 60, text = "too late"}},
}
fake.script(queue, assert(steps[kind], "unknown kind"))
print(fake.base_url(queue, "openai"))

-- Scripts a queue of the fake provider for approval_test.sh and prints its base URL:
--   luagent run -q tests/e2e/approval_script.lua -- QUEUE once|twice
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local queue, kind = ...
local function call(n, command)
  return {text = "Running it.", tool_calls = {{id = "call_" .. n, name = "shell", arguments = {command = command}}}}
end
local steps = {
  once = {call(1, "rm -rf data"), {text = "Done."}},
  twice = {call(1, "rm -rf data"), call(2, "rm -rf cache"), {text = "Done."}},
}
fake.script(queue, assert(steps[kind], "unknown kind"))
print(fake.base_url(queue, "openai"))

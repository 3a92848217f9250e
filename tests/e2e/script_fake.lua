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
-- The energy analysis with the unified exec pair and each provider's own
-- editor (--set tools.shell=unified --set tools.edit=native): a look at the
-- data through exec_command, a REPL-free poll, the five Python steps, then
-- notes written and changed by the model's own editing tool.
local function energy_native(wire)
  local list = {
    {tool_calls = {{id = "call_look", name = "exec_command",
                    arguments = {cmd = "head -3 input/building_energy.csv; sleep 1; echo looked", yield_time_ms = 300}}}},
    {tool_calls = {{id = "call_poll", name = "write_stdin", arguments = {session_id = 1, yield_time_ms = 5000}}}},
  }
  for _, step in ipairs(energy()) do
    if step.tool_calls then list[#list + 1] = step end
  end
  local create, update
  if wire == "openai_responses" then
    create = {native = "apply_patch_call", id = "call_notes",
              operation = {type = "create_file", path = "output/notes.md", diff = "+# Notes\n+draft\n"}}
    update = {native = "apply_patch_call", id = "call_notes2",
              operation = {type = "update_file", path = "output/notes.md", diff = " # Notes\n-draft\n+checked by the editor\n"}}
  elseif wire == "anthropic" then
    create = {id = "toolu_notes", name = "str_replace_based_edit_tool",
              arguments = {command = "create", path = "output/notes.md", file_text = "# Notes\ndraft\n"}}
    update = {id = "toolu_notes2", name = "str_replace_based_edit_tool",
              arguments = {command = "str_replace", path = "output/notes.md", old_str = "draft",
                           new_str = "checked by the editor"}}
  else
    create = {id = "call_notes", name = "apply_patch",
              arguments = {patch = "*** Begin Patch\n*** Add File: output/notes.md\n+# Notes\n+draft\n*** End Patch"}}
    update = {id = "call_notes2", name = "edit_file",
              arguments = {command = "str_replace", path = "output/notes.md", old_str = "draft",
                           new_str = "checked by the editor"}}
  end
  list[#list + 1] = {tool_calls = {create}}
  list[#list + 1] = {tool_calls = {update}}
  list[#list + 1] = {text = "The anomaly is in the report."}
  return list
end

local steps = {
  energy_native = energy_native(provider or "openai"),
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

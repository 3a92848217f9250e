-- The official SDKs (npm openai and @anthropic-ai/sdk, pinned in
-- tests/sdks.json, installed by tests/sdks.sh) read the fake provider's
-- answers and streams as luagent reads them: the same text, tool calls,
-- usage and stop, for every shape luagent once mishandled. So the fake (a
-- test double) speaks the services' formats as their own clients expect
-- them, and luagent reads them as those clients do.
local t = require "helper"
local fake = require "fake_provider_client"
local model, json = luagent.model, luagent.json

local KEY = t.env("LUAGENT_TEST_SECRET")
local MAKE = {openai = model.openai, openai_responses = model.openai_responses, anthropic = model.anthropic}
local NAME = {openai = "gpt-4o-mini", openai_responses = "gpt-4o-mini", anthropic = "claude-sonnet-4-5"}

local sdks_ready
local function sdk_read(provider, base_url, body)
  if not sdks_ready then
    local code, out = luagent.sys.execute({"sh", "tests/sdks.sh"})
    if code ~= 0 then error("test setup: tests/sdks.sh failed (node, npm, the npm registry?):\n" .. out, 2) end
    sdks_ready = true
  end
  local code, out = luagent.sys.execute({"node", "tests/sdk_read.mjs", provider, base_url, json.encode(body)})
  local line = out:match("(%{[^\n]*%})%s*$")
  assert(code == 0 and line, "the SDK could not read the answer: " .. out)
  return assert(json.decode(line))
end

-- luagent's finish_reason as each API's own stop word
local STOP = {
  openai = {stop = "stop", tool_calls = "tool_calls", length = "length"},
  openai_responses = {stop = "completed", tool_calls = "completed", length = "incomplete"},
  anthropic = {stop = "end_turn", tool_calls = "tool_use", length = "max_tokens", pause = "pause_turn",
               context_window = "model_context_window_exceeded"},
}

local TOOL = {name = "run_python", description = "Run Python code.",
              parameters = {type = "object", properties = {code = {type = "string"}}, required = {"code"}}}

-- luagent's calls of function tools (the API's own tools' calls apart: native_calls)
local function calls_of(list)
  local out = {}
  for _, c in ipairs(list) do
    if not c.native then out[#out + 1] = {id = c.id, name = c.name, arguments = c.arguments} end
  end
  return out
end

-- Responses' own tools' calls as luagent read them, in the SDK's terms: an
-- apply_patch call carries the operation's patch, a shell call the action.
local function native_calls_match(r, s, label)
  local patch = require "luagent.tools.patch"
  local mine = {}
  for _, c in ipairs(r.tool_calls) do if c.native then mine[#mine + 1] = c end end
  t.eq(#mine, #(s.native_calls or {}), label .. ": the API's own tools' calls")
  for i, c in ipairs(s.native_calls or {}) do
    t.same({mine[i].native, mine[i].id}, {c.type, c.id}, label .. ": call " .. i)
    if c.type == "apply_patch_call" then
      t.eq(mine[i].arguments.patch, assert(patch.of_operation(c.operation)), label .. ": the operation, as a patch")
    else
      t.same(mine[i].arguments.commands, c.action.commands, label .. ": the shell action's commands")
    end
  end
end

local function compare(provider, step, stream, what)
  local q = fake.queue("sdk")
  fake.script(q, {step, step})
  local m = MAKE[provider]{model = NAME[provider], base_url = fake.base_url(q, provider), api_key = KEY}
  local r = assert(m:complete{messages = {{role = "user", content = "Find the anomaly."}}, tools = {TOOL},
                               stream = stream})
  local sent = fake.requests(q)[1].body
  local s = sdk_read(provider, fake.base_url(q, provider), sent)
  local label = ("%s %s%s"):format(provider, what, stream and " (stream)" or "")
  t.same(calls_of(r.tool_calls), s.tool_calls, label .. ": tool calls")
  for _, k in ipairs{"input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens"} do
    t.eq(r.usage[k] or 0, s.usage[k], label .. ": usage." .. k)
  end
  t.eq(STOP[provider][r.finish_reason], s.stop, label .. ": stop")
  if provider == "openai_responses" then
    native_calls_match(r, s, label)
    local final, commentary = {}, {}
    for _, item in ipairs(s.items) do
      if item.text ~= "" then table.insert(item.phase == "commentary" and commentary or final, item.text) end
    end
    t.eq(r.text, #final > 0 and table.concat(final, "\n\n") or nil, label .. ": the answer's items")
    t.eq(r.commentary, #commentary > 0 and table.concat(commentary, "\n\n") or nil, label .. ": commentary")
    local kept = {}
    for _, item in ipairs(r.provider_items and r.provider_items.output or {}) do
      if item.type == "reasoning" then kept[#kept + 1] = item.encrypted_content or json.null end
    end
    t.same(kept, s.reasoning, label .. ": reasoning items, with their encrypted content")
  else
    t.eq(r.text, s.text ~= json.null and s.text or nil, label .. ": text")
  end
  if provider == "anthropic" then
    local kept = {}
    for _, b in ipairs(r.provider_items and r.provider_items.blocks or {}) do
      if b.type == "thinking" then kept[#kept + 1] = {thinking = b.thinking, signature = b.signature}
      elseif b.type == "redacted_thinking" then kept[#kept + 1] = {redacted = b.data} end
    end
    t.same(kept, s.thinking, label .. ": thinking blocks with their signatures")
  end
end

local CALL = {{id = "call_sdk_1", name = "run_python", arguments = {code = "print(1)"}}}
local USAGE = {input_tokens = 900, output_tokens = 40, cached_tokens = 500, cache_write_tokens = 200}

local CASES = {
  {"a plain answer", {text = "The spike is on day 3."}},
  {"tool calls and cache usage", {text = "Let me look.", tool_calls = CALL, usage = USAGE}},
  {"an answer cut at max_tokens", {text = "The spike is on", finish = "length"}},
}
local ONLY = {
  openai = {{"a function name repeated in every chunk", {tool_calls = CALL, repeat_names = true, chunk = 3}}},
  openai_responses = {{"reasoning items and phases", {
    reasoning = {{summary = "Compare with the baseline.", encrypted_content = "gAAAAenc"}},
    messages = {{text = "Let me check first.", phase = "commentary"}},
    text = "Day 3.", phase = "final_answer"}},
    {"the API's own tools' calls (apply_patch, shell)", {tool_calls = {
      {native = "apply_patch_call", id = "call_p", operation = {type = "update_file", path = "a.py", diff = "-x\n+y\n"}},
      {native = "shell_call", id = "call_s", action = {commands = {"ls", "python3 a.py"}, timeout_ms = 5000}}}}}},
  anthropic = {
    {"thinking and redacted thinking", {thinking = {{thinking = "The median is the baseline.", signature = "sig-1"},
                                                    {redacted = "opaque"}}, text = "Day 3.", tool_calls = CALL}},
    {"null counters in message_delta", {text = "ok", usage = {input_tokens = 50, output_tokens = 7},
      delta_usage = {input_tokens = json.null, cache_creation_input_tokens = json.null,
                     cache_read_input_tokens = json.null, output_tokens = 7}}},
    {"pause_turn", {text = "Working", finish = "pause_turn"}},
    {"model_context_window_exceeded", {text = "The anomaly", finish = "model_context_window_exceeded"}},
  },
}

for _, provider in ipairs{"openai", "openai_responses", "anthropic"} do
  local cases = {table.unpack(CASES)}
  for _, c in ipairs(ONLY[provider]) do cases[#cases + 1] = c end
  t.test(provider .. ": the official SDK reads the fake's answers and streams as luagent does", function()
    for _, c in ipairs(cases) do
      for _, stream in ipairs{false, true} do
        -- delta_usage is a stream's; null counters in a whole message are model_wire_spec's
        if stream or not c[2].delta_usage then compare(provider, c[2], stream, c[1]) end
      end
    end
  end)
end

return t.done()

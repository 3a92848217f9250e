-- The model wire formats against shapes the real services send that
-- luagent once mishandled (each defect reproduced here first),
-- over tests/fake_provider.py (a test double speaking each provider's
-- format): null usage counters, image-only tool results, message phases and
-- reasoning items, thinking blocks, pause_turn and the context window,
-- repeated names in a stream, image detail, cache writes.
local t = require "helper"
local fake = require "fake_provider_client"
local model, retry, agent = luagent.model, luagent.retry, luagent.agent

local KEY = t.env("LUAGENT_TEST_SECRET")
local FAST = retry.exponential{attempts = 2, base = 0.01, max = 0.02}
local MAKE = {openai = model.openai, openai_responses = model.openai_responses, anthropic = model.anthropic}
local NAME = {openai = "gpt-4o-mini", openai_responses = "gpt-4o-mini", anthropic = "claude-sonnet-4-5"}

local function new_model(provider, queue, opts)
  local o = {model = NAME[provider], base_url = fake.base_url(queue, provider), api_key = KEY, retry = FAST}
  for k, v in pairs(opts or {}) do o[k] = v end
  return MAKE[provider](o)
end

local USER = {role = "user", content = "Find the anomaly."}

local function scripted_agent(provider, queue, opts)
  local tool = {name = "run_python", description = "Run Python code.",
                parameters = {type = "object", properties = {code = {type = "string"}}, required = {"code"}},
                handler = function() return "42\n" end}
  local o = {name = "wire", instructions = "You analyse data.", model = new_model(provider, queue, opts),
             tools = {tool}, max_turns = 5}
  return agent.new(o)
end

-- defect 1: a crash on a null counter
t.test("Anthropic: a stream whose message_delta has input_tokens null is read, not a Lua error", function()
  local q = fake.queue("null-usage")
  fake.script(q, {{text = "The spike is on day 3.", usage = {input_tokens = 120, output_tokens = 9},
                   delta_usage = {input_tokens = luagent.json.null, cache_creation_input_tokens = luagent.json.null,
                                  cache_read_input_tokens = luagent.json.null, output_tokens = 9}}})
  local r, err = new_model("anthropic", q):complete{messages = {USER}, stream = true}
  t.ok(r, "a result, not " .. tostring(err))
  t.eq(r.text, "The spike is on day 3.")
  t.eq(r.usage.input_tokens, 120, "the input count of message_start stands (null is no count)")
  t.eq(r.usage.output_tokens, 9)
end)

t.test("Anthropic: null counters in a whole (non-streamed) message count as 0", function()
  local q = fake.queue("null-usage-json")
  fake.script(q, {{text = "ok"}})
  local m = new_model("anthropic", q)
  local parsed = m.api.parse(m, {content = {{type = "text", text = "ok"}}, stop_reason = "end_turn",
                                  usage = {input_tokens = luagent.json.null, output_tokens = 3}})
  t.eq(parsed.usage.input_tokens, 0); t.eq(parsed.usage.output_tokens, 3)
end)

-- defect 2
t.test("Anthropic: a tool result made only of images has no empty text block", function()
  local q = fake.queue("img-only")
  fake.script(q, {{text = "I see it."}})
  local png = "iVBORw0KGgo="
  assert(new_model("anthropic", q):complete{messages = {USER,
    {role = "assistant", tool_calls = {{id = "v1", name = "view_image", arguments = {path = "a.png"}}}},
    {role = "tool", tool_call_id = "v1", content = {{type = "text", text = ""}, model.image(png, "image/png")}}}})
  local result = fake.requests(q)[1].body.messages[3].content[1]
  t.eq(result.type, "tool_result")
  t.eq(#result.content, 1, "one block: the image")
  t.eq(result.content[1].type, "image")
end)

-- defect 5
t.test("Responses: several message items are paragraphs; a commentary preamble is not the answer", function()
  local q = fake.queue("phases")
  for _, stream in ipairs{false, true} do
    fake.script(q, {{messages = {{text = "Let me check the data first.", phase = "commentary"},
                                 {text = "The spike is on day 3.", phase = "final_answer"}},
                     text = "It is 40% above the baseline.", phase = "final_answer"}})
    local r = assert(new_model("openai_responses", q):complete{messages = {USER}, stream = stream})
    t.eq(r.text, "The spike is on day 3.\n\nIt is 40% above the baseline.",
         "the final items, a blank line between (stream = " .. tostring(stream) .. ")")
    t.eq(r.commentary, "Let me check the data first.", "the preamble is kept apart")
  end
end)

-- defect 4
t.test("Responses: reasoning items and message phases go back verbatim; encrypted reasoning is asked for", function()
  local q = fake.queue("reasoning")
  fake.script(q, {
    {reasoning = {{summary = "Compare with the baseline.", encrypted_content = "gAAAAenc1"}},
     messages = {{text = "I will run a check.", phase = "commentary"}},
     tool_calls = {{id = "call_1", name = "run_python", arguments = {code = "print(42)"}}}},
    {text = "The anomaly is on day 3.", phase = "final_answer"},
  })
  local result = scripted_agent("openai_responses", q, {reasoning = {effort = "low"}}):run("Find it.")
  t.eq(result.output, "The anomaly is on day 3.")
  local reqs = fake.requests(q)
  t.eq(#reqs, 2)
  t.same(reqs[1].body.include, {"reasoning.encrypted_content"}, "stateless use asks for the encrypted reasoning")
  t.eq(reqs[1].body.store, false)
  t.eq(reqs[1].body.reasoning.effort, "low")
  local input = reqs[2].body.input
  local kinds = {}
  for i, item in ipairs(input) do kinds[i] = item.type or item.role end
  t.same(kinds, {"user", "reasoning", "message", "function_call", "function_call_output"})
  t.eq(input[2].encrypted_content, "gAAAAenc1", "the reasoning item comes back with its encrypted content")
  t.eq(input[3].phase, "commentary", "the message keeps its phase")
  t.eq(input[4].call_id, "call_1")
end)

-- issue 29, defect: a model that reasons by default (gpt-5 at medium), with no
-- reasoning setting, returned items the stateless second turn could not send
-- back (the service answers 404 for an item it did not store)
t.test("Responses: a model that reasons by default asks for the encrypted reasoning; its second turn is taken", function()
  local q = fake.queue("default-reasoning")
  fake.script(q, {
    {reasoning = {{summary = "Look at the data.", encrypted_content = "gAAAAdefault1"}},
     tool_calls = {{id = "call_1", name = "run_python", arguments = {code = "print(42)"}}}},
    {text = "The anomaly is on day 3."},
  })
  local result = scripted_agent("openai_responses", q, {model = "gpt-5"}):run("Find it.")
  t.eq(result.output, "The anomaly is on day 3.", "the second turn is answered, not refused")
  local reqs = fake.requests(q)
  t.eq(reqs[1].body.reasoning, nil, "no reasoning setting is sent: the model's default stands")
  t.same(reqs[1].body.include, {"reasoning.encrypted_content"}, "gpt-5 reasons at medium by default (the model table)")
  t.eq(reqs[2].body.input[2].encrypted_content, "gAAAAdefault1", "its reasoning comes back encrypted")
  t.eq(reqs[2].refused, nil)
end)

t.test("Responses: a reasoning item without encrypted content is never sent back under store = false", function()
  local q = fake.queue("no-include")
  fake.script(q, {
    {reasoning = {{summary = "Look at the data."}},
     tool_calls = {{id = "call_1", name = "run_python", arguments = {code = "print(42)"}}}},
    {text = "The anomaly is on day 3."},
  })
  -- gpt-5.1 does not reason by default (effort none), yet a service may still send an item
  local result = scripted_agent("openai_responses", q, {model = "gpt-5.1"}):run("Find it.")
  t.eq(result.output, "The anomaly is on day 3.")
  local reqs = fake.requests(q)
  t.eq(reqs[1].body.include, nil, "at effort none no encrypted reasoning is asked for")
  local kinds = {}
  for i, item in ipairs(reqs[2].body.input) do kinds[i] = item.type or item.role end
  t.same(kinds, {"user", "function_call", "function_call_output"}, "the item the service did not store is left out")
end)

t.test("the strict fake refuses a stateless reasoning item it did not store, as the service does (404)", function()
  local q = fake.queue("invalid-unstored") -- (a queue named invalid-* expects the refusal)
  fake.script(q, {{text = "never"}})
  local body = luagent.json.encode{model = "gpt-5", store = false, input = luagent.json.array{
    {role = "user", content = "Find the anomaly."}, {type = "reasoning", id = "rs_abc", summary = luagent.json.array{}},
    {role = "user", content = "Go on."}}}
  local res = assert(luagent.http.request{method = "POST", url = fake.base_url(q, "openai_responses") .. "/responses",
    headers = {["content-type"] = "application/json", authorization = "Bearer " .. KEY}, body = body})
  t.eq(res.status, 404)
  t.match(luagent.json.decode(res.body).error.message, "Items are not persisted when `store` is set to false")
end)

-- defect 6
for _, stream in ipairs{false, true} do
  t.test("Anthropic: thinking blocks go back with their signatures in the tool_use turn (stream = "
         .. tostring(stream) .. ")", function()
    local q = fake.queue("thinking")
    fake.script(q, {
      {thinking = {{thinking = "The baseline is the median.", signature = "sig-1"}, {redacted = "opaque-2"}},
       text = "Checking.", tool_calls = {{id = "toolu_1", name = "run_python", arguments = {code = "print(42)"}}}},
      {text = "Day 3."},
    })
    local a = scripted_agent("anthropic", q, {reasoning = {budget_tokens = 2048}})
    a.stream = stream
    local result = a:run("Find it.")
    t.eq(result.output, "Day 3.")
    local reqs = fake.requests(q)
    t.same(reqs[1].body.thinking, {type = "enabled", budget_tokens = 2048})
    t.eq(reqs[1].body.temperature, nil, "no temperature with extended thinking")
    local turn = reqs[2].body.messages[2]
    t.eq(turn.role, "assistant")
    t.same(turn.content[1], {type = "thinking", thinking = "The baseline is the median.", signature = "sig-1"})
    t.same(turn.content[2], {type = "redacted_thinking", data = "opaque-2"})
    t.eq(turn.content[3].type, "text")
    t.same(turn.content[4], {type = "tool_use", id = "toolu_1", name = "run_python", input = {code = "print(42)"}})
  end)
end

-- defect 7
t.test("Anthropic pause_turn: the agent sends the turn back and the model goes on", function()
  local q = fake.queue("pause")
  fake.script(q, {{text = "Working on it", finish = "pause_turn"}, {text = "Day 3."}})
  local result = scripted_agent("anthropic", q):run("Find it.")
  t.eq(result.stopped_by, "answer")
  t.eq(result.output, "Day 3.")
  local reqs = fake.requests(q)
  t.eq(#reqs, 2, "the paused turn was continued")
  local last = reqs[2].body.messages[#reqs[2].body.messages]
  t.eq(last.role, "assistant", "the paused turn goes back as it is")
end)

t.test("Anthropic model_context_window_exceeded and a cut answer are never taken as final", function()
  local q = fake.queue("ctx")
  fake.script(q, {{text = "The anomaly is on", finish = "model_context_window_exceeded"}})
  local result = scripted_agent("anthropic", q):run("Find it.")
  t.eq(result.stopped_by, "context_window")
  local q2 = fake.queue("len")
  for _, provider in ipairs{"openai", "openai_responses", "anthropic"} do
    fake.script(q2, {{text = "The anomaly is on", finish = "length"}})
    t.eq(scripted_agent(provider, q2):run("Find it.").stopped_by, "length", provider .. ": cut at max_tokens")
  end
end)

-- defect 8
t.test("Chat streaming: a function name repeated in later chunks is assigned, not appended", function()
  local q = fake.queue("names")
  fake.script(q, {{tool_calls = {{name = "get_weather", arguments = {city = "Oslo"}}}, repeat_names = true, chunk = 3}})
  local r = assert(new_model("openai", q):complete{messages = {USER}, stream = true})
  t.eq(r.tool_calls[1].name, "get_weather")
  t.same(r.tool_calls[1].arguments, {city = "Oslo"})
end)

-- defect 10
t.test("OpenAI usage: cache_write_tokens is read (Chat and Responses, streamed or not)", function()
  for _, provider in ipairs{"openai", "openai_responses", "anthropic"} do
    for _, stream in ipairs{false, true} do
      local q = fake.queue("cache-write")
      fake.script(q, {{text = "ok", usage = {input_tokens = 1000, output_tokens = 5, cached_tokens = 600,
                                             cache_write_tokens = 300}}})
      local r = assert(new_model(provider, q):complete{messages = {USER}, stream = stream})
      local what = provider .. (stream and " (stream)" or "")
      t.eq(r.usage.input_tokens, 1000, what .. ": every input token")
      t.eq(r.usage.cached_tokens, 600, what .. ": read from the cache")
      t.eq(r.usage.cache_write_tokens, 300, what .. ": written to the cache")
    end
  end
end)

-- defect 3: the model table decides the token-limit field and the sampling parameters
local function notes_during(fn)
  local seen = {}
  local sub = luagent.events.subscribe(function(ev) if ev.type == "model_note" then seen[#seen + 1] = ev end end)
  local ok, err = pcall(fn)
  luagent.events.unsubscribe(sub)
  assert(ok, err)
  return seen
end

t.test("Chat Completions: a reasoning model gets max_completion_tokens, and no temperature while it reasons", function()
  local cases = {
    -- model, reasoning, temperature sent?, effort sent
    {"gpt-5.4", nil, true, nil},              -- gpt-5.1 and later: effort none by default, sampling allowed
    {"gpt-5.4", {effort = "low"}, false, "low"},
    {"gpt-5-mini", nil, false, nil},          -- before gpt-5.1: medium by default, never sampling
    {"o3", nil, false, nil},
    {"gpt-4o-mini", nil, true, nil},
  }
  for _, c in ipairs(cases) do
    local q = fake.queue("chat-limits")
    fake.script(q, {{text = "ok"}, {text = "ok"}})
    local m = new_model("openai", q, {model = c[1], reasoning = c[2], temperature = 0, max_tokens = 2000})
    local notes = notes_during(function()
      assert(m:complete{messages = {USER}}); assert(m:complete{messages = {USER}})
    end)
    local what = c[1] .. (c[2] and " effort " .. c[2].effort or "")
    for _, req in ipairs(fake.requests(q)) do
      local b = req.body
      t.eq(b.max_completion_tokens, 2000, what .. ": max_completion_tokens")
      t.eq(b.max_tokens, nil, what .. ": no deprecated max_tokens")
      t.eq(b.temperature ~= nil, c[3], what .. ": temperature sent")
      t.eq(b.reasoning_effort, c[4], what .. ": reasoning_effort")
    end
    local said = 0
    for _, n in ipairs(notes) do if n.note == "temperature" then said = said + 1 end end
    t.eq(said, c[3] and 0 or 1, what .. ": said once that temperature was left out, and why")
  end
end)

t.test("Responses: a reasoning model's temperature is left out; max_output_tokens; reasoning as the API names it",
  function()
  local q = fake.queue("resp-limits")
  fake.script(q, {{text = "ok"}})
  local m = new_model("openai_responses", q, {model = "gpt-5.4", reasoning = {effort = "medium"}, temperature = 0,
                                              max_tokens = 3000})
  assert(m:complete{messages = {USER}})
  local b = fake.requests(q)[1].body
  t.eq(b.temperature, nil); t.eq(b.max_output_tokens, 3000); t.same(b.reasoning, {effort = "medium"})
end)

t.test("an unknown model works with plain defaults, and luagent says once that its limits and prices are unknown",
  function()
  local q = fake.queue("unknown")
  fake.script(q, {{text = "a"}, {text = "b"}})
  local m = new_model("openai", q, {model = "llama3.1", temperature = 0.2, max_tokens = 100})
  local notes = notes_during(function()
    assert(m:complete{messages = {USER}}); assert(m:complete{messages = {USER}})
  end)
  local b = fake.requests(q)[1].body
  t.eq(b.max_tokens, 100, "a compatible server's field"); t.eq(b.temperature, 0.2)
  t.eq(#notes, 1); t.eq(notes[1].note, "unknown")
  t.match(notes[1].message, "limits and prices are unknown")
end)

t.test("the model table can be overridden by a recipe (model.models)", function()
  local q = fake.queue("override")
  fake.script(q, {{text = "ok", usage = {input_tokens = 1000000, output_tokens = 0}}})
  local m = new_model("openai", q, {model = "llama3.1", models = {["llama3.1"] = {prices = {input = 2, output = 4},
                                                                                  token_field = "max_completion_tokens"}},
                                    max_tokens = 10})
  local r = assert(m:complete{messages = {USER}})
  t.eq(r.cost, 2.0, "priced from the override")
  t.eq(fake.requests(q)[1].body.max_completion_tokens, 10)
end)

-- prompt caching
local function count_breakpoints(v)
  if type(v) ~= "table" then return 0 end
  local n = v.cache_control and 1 or 0
  for _, item in pairs(v) do n = n + count_breakpoints(item) end
  return n
end

local LONG = ("You are a careful energy analyst. Check every number twice. "):rep(120) -- ~1800 tokens

local function caching_run(queue, opts)
  local steps = {}
  for i = 1, 3 do
    steps[i] = {tool_calls = {{id = "toolu_" .. i, name = "run_python", arguments = {code = "print(" .. i .. ")"}}},
                count_tokens = true}
  end
  steps[4] = {text = "Day 3.", count_tokens = true}
  fake.script(queue, steps)
  local a = scripted_agent("anthropic", queue, opts)
  a.instructions = LONG
  return a:run("Find it.")
end

t.test("Anthropic prompt caching: breakpoints on the tools, the instructions and the newest turn; later turns "
       .. "read the prefix from the provider's cache", function()
  local q = fake.queue("prompt-cache")
  local result = caching_run(q)
  t.eq(result.output, "Day 3.")
  local reqs = fake.requests(q)
  t.eq(#reqs, 4)
  for i, req in ipairs(reqs) do
    local b = req.body
    t.eq(count_breakpoints(b), 3, "request " .. i .. ": three breakpoints (the API allows four)")
    t.ok(b.tools[#b.tools].cache_control, "request " .. i .. ": the last tool")
    t.ok(b.system[1].cache_control, "request " .. i .. ": the instructions")
    local last = b.messages[#b.messages].content
    t.ok(last[#last].cache_control, "request " .. i .. ": the newest turn")
  end
  t.ok(result.usage.cached_tokens > 3 * 1800, "turns 2-4 read the instructions and more from the cache: "
       .. result.usage.cached_tokens)
  t.ok(result.usage.cache_write_tokens >= 1800, "turn 1 wrote the prefix: " .. result.usage.cache_write_tokens)
  local off = caching_run(fake.queue("prompt-cache-off"), {prompt_cache = false})
  t.eq(off.usage.cached_tokens, 0, "prompt_cache = false: nothing from the cache")
  t.eq(count_breakpoints(fake.requests(q)[1].body) > 0, true)
  t.ok(off.cost > result.cost, ("caching costs less: %.5f with, %.5f without"):format(result.cost, off.cost))
end)

t.test("the live view says how many input tokens came from the provider's cache", function()
  local trace = require "luagent.trace"
  local turn = trace.describe{type = "agent_turn", turn = 2, tool_calls = {"run_python"}, duration = 1,
                              usage = {input_tokens = 3000, output_tokens = 10, cached_tokens = 2500},
                              total_usage = {input_tokens = 5000, output_tokens = 20}}
  t.match(turn, "2%.5k from the provider.s cache")
  local done = trace.describe{type = "agent_end", agent = "a", stopped_by = "answer", turns = 3, duration = 2,
                              usage = {input_tokens = 9000, output_tokens = 30, cached_tokens = 6000}}
  t.match(done, "6%.0k input from the provider.s cache")
end)

t.test("a prompt too short for the model's cache gets no breakpoint", function()
  local q = fake.queue("short-prompt")
  fake.script(q, {{text = "Day 3."}})
  scripted_agent("anthropic", q):run("Find it.")
  t.eq(count_breakpoints(fake.requests(q)[1].body), 0)
end)

-- compaction

-- A turn that calls run_python, with the prompt size the provider counted.
local function turn_step(prefix, i, input)
  return {tool_calls = {{id = prefix .. i, name = "run_python", arguments = {code = "step(" .. i .. ")"}}},
          usage = {input_tokens = input, output_tokens = 50}}
end
-- An agent over a 3000-token window keeping 1 turn whole: its result and its agent_compaction events.
local function compacting_run(provider, q)
  local seen = {}
  local a = scripted_agent(provider, q, {model = "small-ctx", models = {["small-ctx"] = {context_window = 3000}}})
  a.compaction = {keep_turns = 1}
  a.on_step = function(ev) if ev.type == "agent_compaction" then seen[#seen + 1] = ev end end
  return a:run("Find the anomaly."), seen
end

t.test("a run past a small context window is compacted and goes on to its answer", function()
  local q = fake.queue("compact")
  local function call(i, input) return turn_step("call_c", i, input) end
  fake.script(q, {call(1, 900), call(2, 1800), call(3, 2500),
                  {text = "Loaded the data; the baseline is 40 kWh; day 3 is high.", usage = {input_tokens = 700}},
                  call(4, 1300), {text = "The anomaly is on day 3.", usage = {input_tokens = 1500}}})
  local result, seen = compacting_run("openai", q)
  t.eq(result.output, "The anomaly is on day 3.")
  t.eq(result.compactions, 1)
  local reqs = fake.requests(q)
  t.eq(#reqs, 6, "four turns, one summary call, the answer")
  local ask = reqs[4].body.messages
  t.match(ask[1].content, "compacting the transcript", "the summary call's prompt is the model table's")
  t.match(ask[2].content, "%[called run_python {\"code\":\"step%(1%)\"}%]", "it reads the old turns")
  local after = reqs[5].body.messages
  t.same({after[1].role, after[2].role, after[3].role, after[4].role, after[5].role},
         {"system", "user", "user", "assistant", "tool"}, "system, task, summary, the last turn whole")
  t.eq(after[2].content, "Find the anomaly.", "the task stays whole")
  t.match(after[3].content, "the baseline is 40 kWh", "the summary replaces turns 1 and 2")
  t.eq(after[4].tool_calls[1].id, "call_c3", "the last turn is kept with its call")
  t.eq(after[5].tool_call_id, "call_c3", "and its result")
  t.eq(#seen, 1); t.eq(seen[1].done, true); t.eq(seen[1].messages_before, 8); t.eq(seen[1].messages_after, 5)
  t.eq(seen[1].tokens, 2550, "the last prompt, as the provider counted it")
end)

t.test("Responses: the provider's own compaction (/responses/compact) replaces the old turns", function()
  local q = fake.queue("compact-native")
  local function call(i, input) return turn_step("call_n", i, input) end
  fake.script(q, {call(1, 900), call(2, 1800), call(3, 2500), {compaction = "enc-summary-1", usage = {input_tokens = 800}},
                  call(4, 1300), {text = "The anomaly is on day 3."}})
  local result, seen = compacting_run("openai_responses", q)
  t.eq(result.output, "The anomaly is on day 3.")
  t.eq(result.compactions, 1)
  local reqs = fake.requests(q)
  t.eq(#reqs, 6)
  t.match(reqs[4].path, "/v1/responses/compact$", "the old turns went to the provider's compaction")
  t.eq(#reqs[4].body.input, 4, "turns 1 and 2: two calls and their results")
  local input = reqs[5].body.input
  t.same(input[1], {role = "user", content = "Find the anomaly."}, "the task stays whole")
  t.same(input[2], {type = "compaction", id = input[2].id, encrypted_content = "enc-summary-1"},
         "the provider's compaction, passed as it came")
  t.eq(input[3].call_id, "call_n3", "the last turn is kept whole")
  t.eq(seen[1].by, "the provider's compaction")
end)

t.test("a hook can replace the compaction policy", function()
  local q = fake.queue("compact-hook")
  fake.script(q, {{tool_calls = {{id = "h1", name = "run_python", arguments = {code = "1"}}},
                   usage = {input_tokens = 2900}}, {text = "done"}})
  local a = scripted_agent("openai", q, {model = "small-ctx", models = {["small-ctx"] = {context_window = 3000}}})
  local called
  a.compaction = {policy = function(messages, info)
    called = info
    return {messages[1], messages[2], {role = "user", content = "(dropped the rest)"}}
  end}
  t.eq(a:run("Go.").output, "done")
  t.eq(called.window, 3000)
  local last = fake.requests(q)[2].body.messages
  t.eq(#last, 3); t.eq(last[3].content, "(dropped the rest)")
end)

t.test("the trace shows encrypted reasoning and signatures as their size, never whole", function()
  local safe = require("luagent.trace").safe{type = "model_request", body = {input = {
    {type = "reasoning", encrypted_content = ("x"):rep(5000)}, {type = "thinking", signature = "sig-abc"}}}}
  t.eq(safe.body.input[1].encrypted_content, "[5000 bytes, encrypted: not shown]")
  t.eq(safe.body.input[2].signature, "[7 bytes, signature: not shown]")
end)

return t.done()

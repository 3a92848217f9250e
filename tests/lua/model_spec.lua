-- The model providers against tests/fake_provider.py, a test double that
-- speaks each provider's wire format: answers, tool calls, streaming, request
-- bodies field by field, faults, retries, and keys kept secret.
local t = require "helper"
local fake = require "fake_provider_client"
local model, retry = luagent.model, luagent.retry

local KEY = t.env("LUAGENT_TEST_SECRET")
local FAST = retry.exponential{attempts = 6, base = 0.01, max = 0.05}

local PROVIDERS = {
  openai = {make = model.openai, name = "gpt-4o-mini"},
  openai_responses = {make = model.openai_responses, name = "gpt-4o-mini"},
  anthropic = {make = model.anthropic, name = "claude-3-5-haiku-20241022"},
}
local ORDER = {"openai", "openai_responses", "anthropic"}

local function new_model(provider, queue, opts)
  local p = PROVIDERS[provider]
  local o = {model = p.name, base_url = fake.base_url(queue, provider), api_key = KEY, retry = FAST}
  for k, v in pairs(opts or {}) do o[k] = v end
  return p.make(o)
end

local SYSTEM = {role = "system", content = "You are an analyst."}
local USER = {role = "user", content = "Find the anomaly."}

local RUN_PYTHON = {name = "run_python", description = "Run Python code in the sandbox.",
  parameters = {type = "object", properties = {code = {type = "string", description = "the code"}},
                required = {"code"}}}

local function only_request(queue)
  local reqs = fake.requests(queue)
  t.eq(#reqs, 1, "requests received")
  return reqs[1]
end

-- ---- what each provider's request must look like ----

local CHECK_PLAIN = {
  openai = function(req)
    t.eq(req.path, "/q/" .. req.queue .. "/v1/chat/completions")
    t.eq(req.headers.authorization, "Bearer " .. KEY)
    local b = req.body
    t.eq(b.model, "gpt-4o-mini")
    t.same(b.messages, {{role = "system", content = "You are an analyst."}, {role = "user", content = "Find the anomaly."}})
    -- max_tokens is deprecated: an OpenAI model of the model table gets max_completion_tokens
    t.eq(b.temperature, 0); t.eq(b.max_completion_tokens, 256); t.eq(b.max_tokens, nil)
    t.eq(b.stream, nil); t.eq(b.tools, nil)
  end,
  openai_responses = function(req)
    t.eq(req.path, "/q/" .. req.queue .. "/v1/responses")
    t.eq(req.headers.authorization, "Bearer " .. KEY)
    local b = req.body
    t.eq(b.model, "gpt-4o-mini")
    t.eq(b.instructions, "You are an analyst.")
    t.same(b.input, {{role = "user", content = "Find the anomaly."}})
    t.eq(b.store, false); t.eq(b.temperature, 0); t.eq(b.max_output_tokens, 256)
  end,
  anthropic = function(req)
    t.eq(req.path, "/q/" .. req.queue .. "/v1/messages")
    t.eq(req.headers["x-api-key"], KEY)
    t.eq(req.headers["anthropic-version"], "2023-06-01")
    t.eq(req.headers.authorization, nil)
    local b = req.body
    t.eq(b.model, "claude-3-5-haiku-20241022")
    t.eq(b.system, "You are an analyst.")
    t.same(b.messages, {{role = "user", content = {{type = "text", text = "Find the anomaly."}}}})
    t.eq(b.max_tokens, 256); t.eq(b.temperature, 0)
  end,
}

local CHECK_TOOLS = {
  openai = function(b)
    t.same(b.tools, {{type = "function", ["function"] = {name = "run_python", description = RUN_PYTHON.description,
      parameters = {type = "object", properties = {code = {type = "string", description = "the code"}}, required = {"code"}}}}})
    t.eq(b.tool_choice, "auto")
  end,
  openai_responses = function(b)
    t.same(b.tools, {{type = "function", name = "run_python", description = RUN_PYTHON.description, strict = false,
      parameters = {type = "object", properties = {code = {type = "string", description = "the code"}}, required = {"code"}}}})
    t.eq(b.tool_choice, "auto")
  end,
  anthropic = function(b)
    t.same(b.tools, {{name = "run_python", description = RUN_PYTHON.description,
      input_schema = {type = "object", properties = {code = {type = "string", description = "the code"}}, required = {"code"}}}})
    t.same(b.tool_choice, {type = "auto"})
  end,
}

-- The conversation after two tool calls, as each provider must receive it.
local ROUND_TRIP = {
  SYSTEM, USER,
  {role = "assistant", content = "Let me look.", tool_calls = {
    {id = "call_a", name = "run_python", arguments = {code = "print(1)"}},
    {id = "call_b", name = "run_python", arguments = {code = "print(2)"}}}},
  {role = "tool", tool_call_id = "call_a", content = "1\n"},
  {role = "tool", tool_call_id = "call_b", content = "2\n"},
}

local CHECK_ROUND_TRIP = {
  openai = function(b)
    t.same(b.messages[3], {role = "assistant", content = "Let me look.", tool_calls = {
      {id = "call_a", type = "function", ["function"] = {name = "run_python", arguments = '{"code":"print(1)"}'}},
      {id = "call_b", type = "function", ["function"] = {name = "run_python", arguments = '{"code":"print(2)"}'}}}})
    t.same(b.messages[4], {role = "tool", tool_call_id = "call_a", content = "1\n"})
    t.same(b.messages[5], {role = "tool", tool_call_id = "call_b", content = "2\n"})
  end,
  openai_responses = function(b)
    t.same(b.input[2], {role = "assistant", content = "Let me look."})
    t.same(b.input[3], {type = "function_call", call_id = "call_a", name = "run_python", arguments = '{"code":"print(1)"}'})
    t.same(b.input[5], {type = "function_call_output", call_id = "call_a", output = "1\n"})
    t.same(b.input[6], {type = "function_call_output", call_id = "call_b", output = "2\n"})
  end,
  anthropic = function(b)
    t.same(b.messages[2], {role = "assistant", content = {{type = "text", text = "Let me look."},
      {type = "tool_use", id = "call_a", name = "run_python", input = {code = "print(1)"}},
      {type = "tool_use", id = "call_b", name = "run_python", input = {code = "print(2)"}}}})
    t.same(b.messages[3], {role = "user", content = {{type = "tool_result", tool_use_id = "call_a", content = "1\n"},
      {type = "tool_result", tool_use_id = "call_b", content = "2\n"}}})
  end,
}

local function summary(r)
  local calls = {}
  for i, c in ipairs(r.tool_calls) do calls[i] = {name = c.name, arguments = c.arguments, id = c.id} end
  return {text = r.text, finish_reason = r.finish_reason, tool_calls = calls, usage = r.usage}
end

t.test("a call's messages are checked once, and malformed ones raise at the caller of m:complete", function()
  local content = require "luagent.model.content"
  local real, checks = content.check_messages, 0
  content.check_messages = function(...) checks = checks + 1 return real(...) end
  local ok, err = pcall(function()
    local q = fake.queue("openai")
    fake.script(q, {{text = "ok"}})
    assert(new_model("openai", q):complete{messages = {USER}})
    t.eq(checks, 1, "a provider's model (it was 2: structured.wrap, then Model:complete)")
    checks = 0
    assert(model.scripted{{text = "ok"}}:complete{messages = {USER}})
    t.eq(checks, 1, "a scripted model")
    local m = model.scripted{{text = "ok"}}
    local line = debug.getinfo(1, "l").currentline + 1
    local raised, message = pcall(function() local r = m:complete{messages = {{role = "robot"}}} return r end)
    t.eq(raised, false)
    t.match(message, ":" .. line .. ": model:complete: messages%[1%] needs a role", "where m:complete was called")
    t.raises(function() m:complete() end, "messages must be a non%-empty list")
  end)
  content.check_messages = real
  if not ok then error(err, 0) end
end)

t.test("model_response is built in one place (call.answered), which adds a live answer to m.totals", function()
  local call = require "luagent.model.call"
  local real, answered = call.answered, 0
  call.answered = function(...) answered = answered + 1 return real(...) end
  local seen = {}
  local sub = luagent.events.subscribe(function(ev) if ev.type == "model_response" then seen[#seen + 1] = ev end end)
  local ok, err = pcall(function()
    local q = fake.queue("openai")
    fake.script(q, {{text = "live", usage = {input_tokens = 10, output_tokens = 2, cached_tokens = 3}}})
    local m = new_model("openai", q)
    local r = assert(m:complete{messages = {USER}})
    local s = model.scripted{{text = "scripted"}}
    local rs = assert(s:complete{messages = {USER}})
    t.eq(answered, 2, "once per call")
    t.eq(#seen, 2)
    t.eq(seen[1].provider, "openai"); t.eq(seen[1].attempts, 1); t.eq(seen[1].text, "live")
    t.eq(seen[1].cost, r.cost); t.eq(seen[1].usage.input_tokens, 10); t.eq(seen[1].cached, nil)
    t.same(m.totals, {calls = 1, input_tokens = 10, output_tokens = 2, cached_tokens = 3, cost = r.cost})
    t.eq(seen[2].provider, "scripted"); t.eq(seen[2].attempts, 1); t.eq(seen[2].text, "scripted"); t.eq(seen[2].cost, 0)
    t.same(s.totals, {calls = 1, input_tokens = rs.usage.input_tokens, output_tokens = rs.usage.output_tokens,
                      cached_tokens = 0, cost = 0})
  end)
  call.answered = real
  luagent.events.unsubscribe(sub)
  if not ok then error(err, 0) end
end)

for _, provider in ipairs(ORDER) do
  t.test(provider .. ": a plain answer, usage, cost and the request field by field", function()
    local q = fake.queue(provider)
    fake.script(q, {{text = "The anomaly is in March.", usage = {input_tokens = 1200, output_tokens = 40, cached_tokens = 200}}})
    local m = new_model(provider, q)
    local r = assert(m:complete{messages = {SYSTEM, USER}, temperature = 0, max_tokens = 256})
    t.eq(r.text, "The anomaly is in March.")
    t.eq(r.finish_reason, "stop")
    t.same(r.tool_calls, {})
    t.eq(r.usage.input_tokens, 1200); t.eq(r.usage.output_tokens, 40); t.eq(r.usage.cached_tokens, 200)
    t.eq(r.cost, require("luagent.prices").cost(PROVIDERS[provider].name, r.usage))
    t.ok(r.cost > 0, "a known model has a price")
    local req = only_request(q)
    req.queue = q
    CHECK_PLAIN[provider](req)
    t.eq(req.headers["content-type"], "application/json")
  end)

  t.test(provider .. ": a tool call with JSON arguments, and the tools as the provider documents them", function()
    local q = fake.queue(provider)
    fake.script(q, {{tool_calls = {{id = "call_1", name = "run_python", arguments = {code = "import pandas\nprint(1)"}}}}})
    local m = new_model(provider, q)
    local r = assert(m:complete{messages = {SYSTEM, USER}, tools = {RUN_PYTHON}, tool_choice = "auto"})
    t.eq(r.finish_reason, "tool_calls")
    t.eq(#r.tool_calls, 1)
    t.eq(r.tool_calls[1].id, "call_1"); t.eq(r.tool_calls[1].name, "run_python")
    t.eq(r.tool_calls[1].arguments.code, "import pandas\nprint(1)")
    CHECK_TOOLS[provider](only_request(q).body)
  end)

  t.test(provider .. ": parallel tool calls", function()
    local q = fake.queue(provider)
    fake.script(q, {{text = "Running both.", tool_calls = {
      {id = "call_1", name = "run_python", arguments = {code = "a"}},
      {id = "call_2", name = "run_shell", arguments = {command = "ls"}}}}})
    local r = assert(new_model(provider, q):complete{messages = {USER}, tools = {RUN_PYTHON}})
    t.eq(#r.tool_calls, 2)
    t.eq(r.tool_calls[2].name, "run_shell"); t.eq(r.tool_calls[2].arguments.command, "ls")
    t.eq(r.tool_calls[2].id, "call_2")
  end)

  t.test(provider .. ": a tool-result round trip in the provider's shape", function()
    local q = fake.queue(provider)
    fake.script(q, {{text = "Both printed."}})
    local r = assert(new_model(provider, q):complete{messages = ROUND_TRIP, tools = {RUN_PYTHON}})
    t.eq(r.text, "Both printed.")
    CHECK_ROUND_TRIP[provider](only_request(q).body)
  end)

  t.test(provider .. ": streaming gives exactly the non-streamed result", function()
    local q = fake.queue(provider)
    local reply = {text = "Energy rose 40% on 12 March, 14:00 to 18:00.", chunk = 3,
                   tool_calls = {{id = "call_9", name = "run_python", arguments = {code = "df.describe()", n = 3}}},
                   usage = {input_tokens = 900, output_tokens = 77, cached_tokens = 100}}
    fake.script(q, {reply, reply})
    local m = new_model(provider, q)
    local plain = assert(m:complete{messages = {USER}, tools = {RUN_PYTHON}})
    local deltas = {}
    local streamed = assert(m:complete{messages = {USER}, tools = {RUN_PYTHON}, stream = true,
                                       on_delta = function(d) deltas[#deltas + 1] = d end})
    t.same(summary(streamed), summary(plain))
    t.eq(table.concat(deltas), plain.text)
    t.ok(#deltas > 5, "the text arrived in pieces")
    local reqs = fake.requests(q)
    t.eq(reqs[1].body.stream, nil)
    t.eq(reqs[2].body.stream, true)
    if provider == "openai" then t.same(reqs[2].body.stream_options, {include_usage = true}) end
  end)

  t.test(provider .. ": a cut stream is bad_response", function()
    local q = fake.queue(provider)
    fake.script(q, {{text = "This answer will be cut in the middle of an event.", cut = true}})
    local r, err = new_model(provider, q, {retry = retry.none}):complete{messages = {USER}, stream = true}
    t.eq(r, nil); t.eq(err.kind, "bad_response")
  end)

  t.test(provider .. ": invalid JSON is bad_response", function()
    local q = fake.queue(provider)
    fake.script(q, {{invalid_json = true}})
    local _, err = new_model(provider, q, {retry = retry.none}):complete{messages = {USER}}
    t.eq(err.kind, "bad_response")
    t.match(err.message, "not valid JSON")
  end)

  t.test(provider .. ": an error body's message reaches the caller", function()
    local q = fake.queue(provider)
    fake.script(q, {{status = 400, error = {type = "invalid_request_error", message = "messages: too long"}}})
    local _, err = new_model(provider, q):complete{messages = {USER}}
    t.eq(err.kind, "bad_request"); t.eq(err.status, 400)
    t.match(err.message, "messages: too long")
    t.eq(err.attempts, 1, "bad_request is not retried")
  end)
end

-- ---- faults and retries ----

t.test("429 with Retry-After: 1 is retried after about a second, then succeeds", function()
  local q = fake.queue("ra")
  fake.script(q, {{status = 429, retry_after = "1"}, {text = "ok"}})
  local started = luagent.now()
  local r = assert(new_model("openai", q, {retry = retry.default}):complete{messages = {USER}})
  local took = luagent.now() - started
  t.eq(r.text, "ok"); t.eq(r.attempts, 2)
  t.ok(took >= 0.95 and took < 2.5, ("retried after %.2f s"):format(took))
end)

t.test("three 500s, then success", function()
  local q = fake.queue("500")
  fake.script(q, {{status = 500}, {status = 500}, {status = 500}, {text = "finally"}})
  local r = assert(new_model("openai", q):complete{messages = {USER}})
  t.eq(r.text, "finally"); t.eq(r.attempts, 4)
  t.eq(#fake.requests(q), 4)
end)

t.test("529 overloaded (Anthropic) is a server error and is retried", function()
  local q = fake.queue("529")
  fake.script(q, {{status = 529}, {text = "better now"}})
  local r = assert(new_model("anthropic", q):complete{messages = {USER}})
  t.eq(r.text, "better now"); t.eq(r.attempts, 2)
end)

t.test("a hang ends with timeout after the configured time", function()
  local q = fake.queue("hang")
  fake.script(q, {{hang = 10, text = "too late"}})
  local started = luagent.now()
  local _, err = new_model("openai", q, {timeout = 1, retry = retry.none}):complete{messages = {USER}}
  local took = luagent.now() - started
  t.eq(err.kind, "timeout")
  t.ok(took >= 0.9 and took < 2, ("timed out after %.2f s"):format(took))
end)

t.test("401 is not retried", function()
  local q = fake.queue("401")
  fake.script(q, {{status = 401}, {text = "never reached"}})
  local _, err = new_model("openai", q, {retry = retry.default}):complete{messages = {USER}}
  t.eq(err.kind, "auth"); t.eq(err.status, 401); t.eq(err.attempts, 1)
  t.eq(#fake.requests(q), 1)
end)

t.test("insufficient_quota is its own kind and is not retried", function()
  local q = fake.queue("quota")
  fake.script(q, {{status = 429, error = {type = "insufficient_quota", code = "insufficient_quota",
                                          message = "You exceeded your current quota"}}})
  local _, err = new_model("openai", q, {retry = retry.default}):complete{messages = {USER}}
  t.eq(err.kind, "quota"); t.eq(err.attempts, 1)
end)

t.test("an error event inside an Anthropic stream: retried before any text, not after", function()
  local q = fake.queue("sterr")
  fake.script(q, {{text = "", stream_error = {type = "overloaded_error", message = "Overloaded"}}, {text = "recovered"}})
  local r = assert(new_model("anthropic", q):complete{messages = {USER}, stream = true})
  t.eq(r.text, "recovered"); t.eq(r.attempts, 2)
  local q2 = fake.queue("sterr2")
  fake.script(q2, {{text = "starting the answer", stream_error = {type = "overloaded_error", message = "Overloaded"}},
                   {text = "never asked for"}})
  local shown = {}
  local _, err = new_model("anthropic", q2):complete{messages = {USER}, stream = true,
                                                    on_delta = function(d) shown[#shown + 1] = d end}
  t.eq(err.kind, "bad_response", "part of the answer was shown: a retry would show it twice")
  t.match(err.message, "Overloaded"); t.match(err.message, "streamed")
  local text = table.concat(shown)
  t.ok(#text > 0 and ("starting the answer"):sub(1, #text) == text, "a first part was shown: " .. text)
  t.eq(#fake.requests(q2), 1)
end)

t.test("while one task waits out a backoff, another task's call completes", function()
  local slow_q, quick_q = fake.queue("slow"), fake.queue("quick")
  fake.script(slow_q, {{status = 429, retry_after = "1.5"}, {text = "slow"}})
  fake.script(quick_q, {{text = "quick"}})
  local started = luagent.now()
  local finished = {}
  local slow = luagent.spawn(function()
    local r = assert(new_model("openai", slow_q, {retry = retry.default}):complete{messages = {USER}})
    finished.slow = luagent.now() - started
    return r.text
  end)
  luagent.sleep(0.1) -- the slow call is now waiting out its Retry-After
  local quick = luagent.spawn(function()
    local r = assert(new_model("anthropic", quick_q):complete{messages = {USER}})
    finished.quick = luagent.now() - started
    return r.text
  end)
  t.eq(quick:wait(), "quick"); t.eq(slow:wait(), "slow")
  t.lt(finished.quick, 0.6, "the quick call did not wait")
  t.ok(finished.slow >= 1.5, "the slow call waited")
end)

t.test("invalid tool-call arguments are kept with the reason, not thrown away", function()
  local q = fake.queue("badargs")
  fake.script(q, {{tool_calls = {{id = "c1", name = "run_python", arguments = '{"code": "print(1)'}}}})
  local r = assert(new_model("openai", q):complete{messages = {USER}, tools = {RUN_PYTHON}})
  local call = r.tool_calls[1]
  t.eq(call.arguments, nil)
  t.eq(call.arguments_json, '{"code": "print(1)')
  t.match(call.arguments_error, "not valid JSON")
end)

t.test("images go to each provider in its own form", function()
  local png = "iVBORw0KGgo="
  local messages = {USER, {role = "assistant", tool_calls = {{id = "v1", name = "view_image", arguments = {path = "a.png"}}}},
    {role = "tool", tool_call_id = "v1", content = {{type = "text", text = "energy.png"}, model.image(png, "image/png")}}}
  local bodies = {}
  for _, provider in ipairs(ORDER) do
    local q = fake.queue("img")
    fake.script(q, {{text = "I see a spike."}})
    assert(new_model(provider, q):complete{messages = messages})
    bodies[provider] = only_request(q).body
  end
  local oa = bodies.openai.messages
  t.same(oa[3], {role = "tool", tool_call_id = "v1", content = "energy.png"})
  t.eq(oa[4].role, "user")
  t.same(oa[4].content[2], {type = "image_url", image_url = {url = "data:image/png;base64," .. png}})
  -- detail is required by the Responses schema: "auto" lets the service choose
  t.same(bodies.openai_responses.input[4].content[2], {type = "input_image", image_url = "data:image/png;base64," .. png,
                                                       detail = "auto"})
  local result = bodies.anthropic.messages[3].content[1]
  t.eq(result.type, "tool_result")
  t.same(result.content[2], {type = "image", source = {type = "base64", media_type = "image/png", data = png}})
end)

t.test("fallback tries the next model when one keeps failing", function()
  local q1, q2 = fake.queue("fb1"), fake.queue("fb2")
  fake.script(q1, {{status = 500}, {status = 500}})
  fake.script(q2, {{text = "from the second"}})
  local m = model.fallback{new_model("openai", q1, {retry = retry.exponential{attempts = 2, base = 0.01}}),
                           new_model("anthropic", q2)}
  local r = assert(m:complete{messages = {USER}})
  t.eq(r.text, "from the second"); t.eq(r.fallbacks, 1); t.eq(r.provider, "anthropic")
end)

t.test("an unknown model has cost nil; a recipe's price table fixes that", function()
  local q = fake.queue("price")
  fake.script(q, {{text = "a"}, {text = "b"}})
  local r = assert(new_model("openai", q, {model = "local-llama"}):complete{messages = {USER}})
  t.eq(r.cost, nil)
  r = assert(new_model("openai", q, {model = "local-llama", prices = {["local-llama"] = {input = 1, output = 2}}})
    :complete{messages = {USER}})
  t.eq(r.cost, (10 * 1 + 5 * 2) / 1e6)
end)

t.test("a compatible server without a key gets no authorization header", function()
  local q = fake.queue("nokey")
  fake.script(q, {{text = "local"}})
  local m = model.openai{model = "llama3.1", base_url = fake.base_url(q, "openai"), api_key = false}
  t.eq(assert(m:complete{messages = {USER}}).text, "local")
  t.eq(only_request(q).headers.authorization, nil)
end)

t.test("the key never shows: not in tostring, not in errors that echo it", function()
  local q = fake.queue("secret")
  fake.script(q, {{status = 401, error = {type = "invalid_request_error", code = "invalid_api_key",
                                          message = "Incorrect API key provided: " .. KEY .. "."}}})
  local m = new_model("openai", q)
  t.no_match(tostring(m), KEY, "tostring"); t.match(tostring(m), "API key set")
  local _, err = m:complete{messages = {USER}}
  t.eq(err.kind, "auth")
  t.no_match(err.message, KEY, "error message")
  t.no_match(err.provider_message, KEY, "provider message")
  t.match(err.message, "%[redacted")
end)

t.test("an empty assistant turn is left out of the next request", function()
  for _, provider in ipairs(ORDER) do
    local q = fake.queue("empty")
    fake.script(q, {{text = "ok"}})
    assert(new_model(provider, q):complete{messages = {USER, {role = "assistant"}, {role = "user", content = "go on"}}})
    local body = only_request(q).body
    for _, m in ipairs(body.messages or body.input) do
      t.ok(m.role ~= "assistant", provider .. " sent the empty assistant turn")
    end
  end
end)

t.test("a tool call without an id gets one", function()
  local call = model.tool_call(nil, "run_python", "{}")
  t.match(call.id, "^call_luagent_%d+$")
end)

t.test("model.from picks a provider from settings and the environment", function()
  local q = fake.queue("from")
  fake.script(q, {{text = "configured"}})
  local m = assert(model.from{provider = "anthropic", model = "claude-3-5-haiku-20241022", api_key = KEY,
                              base_url = fake.base_url(q, "anthropic"), retry = {attempts = 2}})
  t.eq(m.provider, "anthropic"); t.eq(m.retry.attempts, 2)
  t.eq(assert(m:complete{messages = {USER}}).text, "configured")
  local _, err = model.from{provider = "nonesuch"}
  t.eq(err.kind, "config"); t.match(err.message, "nonesuch")
end)

t.test("the scripted model answers from a list or a function, without HTTP", function()
  local m = model.scripted{{text = "first"}, {tool_calls = {{name = "run_python", arguments = {code = "1"}}}}}
  t.eq(assert(m:complete{messages = {USER}}).text, "first")
  local r = assert(m:complete{messages = {USER}})
  t.eq(r.finish_reason, "tool_calls"); t.eq(r.tool_calls[1].arguments.code, "1")
  t.ok(r.usage.estimated)
end)

return t.done()

-- Structured final answers: luagent.schema (checking schemas, validating
-- values), m:complete{schema = ...} and agent.new{output = ...} in the three
-- wire formats against tests/fake_provider.py (a test double of the
-- providers), streamed and not, the invalid-then-fixed loop, and schema errors.
local t = require "helper"
local fake = require "fake_provider_client"
local model, agent, json = luagent.model, luagent.agent, luagent.json
local schema = require "luagent.schema"

local KEY = t.env("LUAGENT_TEST_SECRET")
local FAST = luagent.retry.exponential{attempts = 2, base = 0.01, max = 0.02}

local MAKE = {openai = model.openai, openai_responses = model.openai_responses, anthropic = model.anthropic}
local PROVIDERS = {"openai", "openai_responses", "anthropic"}

local function new_model(provider, queue)
  return MAKE[provider]{model = "fake-model", base_url = fake.base_url(queue, provider), api_key = KEY, retry = FAST}
end

local REPORT = {type = "object", additionalProperties = false, required = {"kind", "hour", "notes"},
  properties = {
    kind = {type = "string", enum = {"spike", "drop"}},
    hour = {type = "integer", minimum = 0, maximum = 23},
    notes = {type = {"string", "null"}},
  }}

local GOOD = {kind = "spike", hour = 14, notes = json.null}
local BAD = {kind = "bump", hour = 30, notes = 1}

local USER = {{role = "user", content = "What happened?"}}

-- The structured part of a request body, per provider: its name, schema and strict.
local ASKED = {
  openai = function(b)
    t.eq(b.response_format.type, "json_schema")
    return b.response_format.json_schema
  end,
  openai_responses = function(b)
    t.eq(b.text.format.type, "json_schema")
    return b.text.format
  end,
  anthropic = function(b)
    local tool = b.tools[#b.tools]
    return {name = tool.name, schema = tool.input_schema}
  end,
}

-- ---- luagent.schema ----

t.test("schema.check names the field of a schema that is not valid JSON Schema", function()
  t.raises(function() schema.check({type = "objekt"}) end, 'schema.type: "objekt" is not a JSON type')
  t.raises(function() schema.check({type = "object", required = "kind"}) end,
           "schema.required: must be a list of property names")
  t.raises(function() schema.check({type = "object", properties = {a = {type = "string", nullable = true}}}) end,
           'schema.properties.a.nullable: is not JSON Schema: write type = {"string", "null"}')
  t.raises(function() schema.check({type = "object", propertes = {}}) end, 'schema.propertes: unknown keyword')
  t.raises(function() schema.check({type = "object", properties = {a = {}}, required = {"b"}}) end,
           'schema.required: names "b", which properties does not have')
  t.raises(function() schema.check({type = "array", items = {{type = "string"}}}) end, "schema.items: must be one schema")
  t.raises(function() schema.check({["$ref"] = "#/$defs/nothing"}) end, "points at nothing")
  t.raises(function() schema.check({type = "string", maxLength = -1}) end, "schema.maxLength: must be an integer >= 0")
  t.eq(schema.check(REPORT), REPORT, "a valid schema comes back")
  t.eq(#schema.problems({type = "object", anyOf = {{type = "object"}}, ["$defs"] = {x = {type = "string"}}}), 0)
end)

t.test("schema.validate: every error with its JSON path and what is wrong", function()
  local ok, errs = schema.validate(REPORT, json.decode('{"kind": "bump", "hour": 30, "notes": 1, "extra": true}'))
  t.eq(ok, false)
  local lines = schema.describe(errs)
  t.match(lines, '%- %$%.kind: expected one of "spike", "drop", got "bump"')
  t.match(lines, "%- %$%.hour: 30 is more than the maximum 23")
  t.match(lines, "%- %$%.notes: expected a string or null, got an integer %(1%)")
  t.match(lines, '%- %$: has the property "extra", which the schema does not allow')
  t.eq(#errs, 4)
  t.ok(schema.validate(REPORT, json.decode('{"kind": "drop", "hour": 0, "notes": null}')), "null through a type list")
  errs = select(2, schema.validate(REPORT, json.decode('{"kind": "drop"}')))
  t.match(schema.describe(errs), 'missing the required property "hour"')
end)

t.test("schema.validate: arrays, nesting, anyOf, $ref, bounds", function()
  local s = {type = "object", properties = {
    events = {type = "array", minItems = 1, maxItems = 3, items = {["$ref"] = "#/$defs/event"}},
    score = {anyOf = {{type = "number", exclusiveMinimum = 0}, {type = "string", minLength = 2}}},
  }, ["$defs"] = {event = {type = "object", required = {"at"}, properties = {at = {type = "string"}}}}}
  local ok, errs = schema.validate(s, json.decode('{"events": [{"at": "x"}, {"at": 5}, {}], "score": 0}'))
  t.eq(ok, false)
  local lines = schema.describe(errs)
  t.match(lines, "%$%.events%[1%]%.at: expected a string, got an integer", "paths index from 0, as in JSON")
  t.match(lines, '%$%.events%[2%]: missing the required property "at"')
  t.match(lines, "%$%.score: matches none of the anyOf choices: %(1%) 0 must be more than 0")
  ok = schema.validate(s, json.decode('{"events": [{"at": "x"}], "score": "ok"}'))
  t.eq(ok, true)
  errs = select(2, schema.validate(s, json.decode('{"events": []}')))
  t.match(schema.describe(errs), "has 0 items, fewer than minItems 1")
  errs = select(2, schema.validate({type = "object"}, json.decode("[1]")))
  t.match(schema.describe(errs), "expected an object, got an array")
end)

t.test("schema.strict_ok: every object closed and every property required", function()
  t.eq(schema.strict_ok(REPORT), true)
  t.eq(schema.strict_ok({type = "object", properties = {a = {type = "string"}}, required = {"a"}}), false)
  t.eq(schema.strict_ok({type = "object", additionalProperties = false, properties = {a = {type = "string"}}}), false)
  t.eq(schema.strict_ok({type = "object", additionalProperties = false, required = {"a"}, properties = {
    a = {type = "array", items = {type = "object", properties = {b = {type = "string"}}}}}}), false, "nested")
end)

-- ---- m:complete{schema = ...} ----

for _, provider in ipairs(PROVIDERS) do
  for _, stream in ipairs({false, true}) do
    local how = stream and "streamed" or "whole"
    t.test(("%s: complete{schema} asks in the provider's way and gives result.value (%s)"):format(provider, how),
      function()
        local q = fake.queue("complete")
        fake.script(q, {{json = GOOD, chunk = 7}})
        local deltas = {}
        local r, err = new_model(provider, q):complete{messages = USER, schema = REPORT, schema_name = "report",
          stream = stream, on_delta = function(piece) deltas[#deltas + 1] = piece end}
        t.ok(r, tostring(err))
        t.same(r.value, GOOD)
        t.eq(#r.tool_calls, 0, "the answer tool's call is not a tool call")
        local body = fake.requests(q)[1].body
        local asked = ASKED[provider](body)
        t.eq(asked.name, "report")
        t.same(asked.schema.required, {"kind", "hour", "notes"})
        if provider == "anthropic" then
          t.same(body.tool_choice, {type = "tool", name = "report"}, "the answer tool is forced")
        else
          t.eq(asked.strict, true, "a schema strict mode allows is sent strict")
          if stream then t.eq(table.concat(deltas), json.encode(GOOD), "the JSON streams as text") end
        end
      end)
  end

  t.test(provider .. ": complete{schema} with an answer that does not match: nil, err invalid_output", function()
    local q = fake.queue("badcomplete")
    fake.script(q, {{json = BAD}})
    local r, err = new_model(provider, q):complete{messages = USER, schema = REPORT}
    t.eq(r, nil)
    t.eq(err.kind, "invalid_output")
    t.match(err.message, '%$%.kind: expected one of "spike", "drop", got "bump"')
    t.eq(#err.errors, 3)
    t.ok(err.result.usage, "the call's result is kept (usage, cost)")
  end)
end

t.test("complete{schema}: a schema strict mode cannot take is sent with strict = false", function()
  local loose = {type = "object", properties = {kind = {type = "string"}}}
  for _, provider in ipairs({"openai", "openai_responses"}) do
    local q = fake.queue("loose")
    fake.script(q, {{json = {kind = "x"}}})
    local r, err = new_model(provider, q):complete{messages = USER, schema = loose}
    t.ok(r, tostring(err))
    t.same(r.value, {kind = "x"})
    t.eq(ASKED[provider](fake.requests(q)[1].body).strict, false)
    t.eq(ASKED[provider](fake.requests(q)[1].body).name, "answer", "the default name")
  end
end)

t.test("complete{schema}: a bad schema raises naming the field, before any request", function()
  local q = fake.queue("badschema")
  local m = new_model("openai", q)
  t.raises(function() m:complete{messages = USER, schema = {type = "objekt"}} end,
           'model:complete: schema.type: "objekt" is not a JSON type')
  t.raises(function() m:complete{messages = USER, schema = {type = "object", required = "kind"}} end,
           "model:complete: schema.required: must be a list of property names")
  t.raises(function() m:complete{messages = USER, schema = {type = "array"}} end, "must describe an object")
  t.eq(#fake.requests(q), 0, "nothing was sent")
end)

t.test("complete{schema}: an OpenAI refusal is nil, err invalid_output with the refusal", function()
  for _, provider in ipairs({"openai", "openai_responses"}) do
    local q = fake.queue("refuse")
    fake.script(q, {{refusal = "I can't help with that."}})
    local r, err = new_model(provider, q):complete{messages = USER, schema = REPORT}
    t.eq(r, nil)
    t.eq(err.kind, "invalid_output")
    t.match(err.message, "refused to answer: I can't help with that")
  end
end)

t.test("complete{schema} on a scripted model: its text is the answer", function()
  local m = model.scripted{{text = json.encode(GOOD)}}
  local r = assert(m:complete{messages = USER, schema = REPORT})
  t.same(r.value, GOOD)
end)

-- ---- agent.new{output = ...} ----

local COUNT = {name = "count_rows", description = "Count the rows of the data.",
  parameters = {type = "object", properties = {}},
  handler = function() return "24 rows" end}

-- The tool step of a script, as each provider sends a tool call.
local function tool_step()
  return {text = "Let me count.", tool_calls = {{id = "call_count", name = "count_rows", arguments = {}}}}
end

for _, provider in ipairs(PROVIDERS) do
  for _, stream in ipairs({false, true}) do
    local how = stream and "streamed" or "whole"
    t.test(("%s: an agent uses its tools, then answers with JSON: result.value (%s)"):format(provider, how), function()
      local q = fake.queue("agent")
      fake.script(q, {tool_step(), {json = GOOD, tool = "report"}})
      local a = agent.new{model = new_model(provider, q), tools = {COUNT}, stream = stream,
                          output = {schema = REPORT, name = "report"}}
      local r = a:run("What happened?")
      t.eq(r.stopped_by, "answer")
      t.same(r.value, GOOD)
      t.same(json.decode(r.output), GOOD, "result.output keeps the JSON text")
      t.eq(r.turns, 2)
      local reqs = fake.requests(q)
      for _, req in ipairs(reqs) do
        t.eq(ASKED[provider](req.body).name, "report", "every turn asks for the structured answer")
      end
      if provider == "anthropic" then
        local b = reqs[1].body
        t.same(b.tool_choice, {type = "auto"}, "the answer tool is offered beside the others")
        t.same({b.tools[1].name, b.tools[2].name, b.tools[3].name}, {"count_rows", "read_output", "report"})
        local answer, taken = r.transcript[#r.transcript - 1], r.transcript[#r.transcript]
        t.eq(answer.tool_calls[1].name, "report", "the transcript keeps the answer tool's call")
        t.eq(taken.role, "tool"); t.eq(taken.tool_call_id, answer.tool_calls[1].id, "and gives it a result")
      end
    end)
  end

  t.test(provider .. ": an answer that does not match goes back with its errors, and a fixed one ends the run", function()
    local q = fake.queue("fix")
    fake.script(q, {{json = BAD, tool = "report"}, {json = GOOD, tool = "report"}})
    local steps = {}
    local a = agent.new{model = new_model(provider, q), tools = {COUNT}, output = {schema = REPORT, name = "report"},
                        on_step = function(ev) steps[#steps + 1] = ev end}
    local r = a:run("What happened?")
    t.eq(r.stopped_by, "answer"); t.eq(r.turns, 2)
    t.same(r.value, GOOD)
    t.eq(r.output_errors, nil)
    local second = fake.requests(q)[2].body
    local feedback
    if provider == "anthropic" then
      local last = second.messages[#second.messages]
      t.eq(last.role, "user")
      t.eq(last.content[1].type, "tool_result", "the answer tool's call gets the errors as its result")
      t.eq(last.content[1].is_error, true)
      feedback = last.content[1].content
      t.match(feedback, "Call the tool report again")
    elseif provider == "openai" then
      feedback = second.messages[#second.messages].content
      t.eq(second.messages[#second.messages].role, "user")
      t.eq(second.messages[#second.messages - 1].content, json.encode(BAD), "the model's answer stays in the transcript")
    else
      feedback = second.input[#second.input].content
    end
    t.match(feedback, "^Your answer does not match the schema report:\n%- %$%.hour: 30 is more than the maximum 23\n")
    t.match(feedback, '\n%- %$%.kind: expected one of "spike", "drop", got "bump"\n', "errors in key order")
    local invalid
    for _, ev in ipairs(steps) do if ev.type == "agent_invalid_output" then invalid = ev end end
    t.ok(invalid, "an agent_invalid_output step")
    t.eq(invalid.turn, 1)
  end)
end

t.test("agent: when turns run out on an invalid answer, stopped_by invalid_output with the errors", function()
  local q = fake.queue("runout")
  fake.script(q, {{json = BAD}, {json = BAD}})
  local r = agent.new{model = new_model("openai", q), output = {schema = REPORT}, max_turns = 2}:run("go")
  t.eq(r.stopped_by, "invalid_output")
  t.eq(r.value, nil)
  t.eq(r.output, json.encode(BAD))
  t.eq(#r.output_errors, 3)
  t.same(r.output_errors[1], {path = "$.hour", message = "30 is more than the maximum 23"})
end)

t.test("agent (anthropic): a turn in plain text is followed by one call that must call the answer tool", function()
  local q = fake.queue("prose")
  fake.script(q, {{text = "The spike was at 14:00."}, {json = GOOD}})
  local r = agent.new{model = new_model("anthropic", q), tools = {COUNT}, output = {schema = REPORT, name = "report"}}
    :run("What happened?")
  t.eq(r.stopped_by, "answer"); t.eq(r.turns, 2)
  t.same(r.value, GOOD)
  local second = fake.requests(q)[2].body
  t.same(second.tool_choice, {type = "tool", name = "report"})
  t.match(second.messages[#second.messages].content[1].text, "Give your final answer now by calling the tool report")
end)

t.test("agent (anthropic): the answer tool called beside another tool is not taken", function()
  local q = fake.queue("beside")
  local step = tool_step()
  fake.script(q, {{tool_calls = step.tool_calls, json = GOOD, tool = "report"}, {json = GOOD, tool = "report"}})
  local r = agent.new{model = new_model("anthropic", q), tools = {COUNT}, output = {schema = REPORT, name = "report"}}
    :run("What happened?")
  t.eq(r.stopped_by, "answer"); t.eq(r.turns, 2)
  local results = fake.requests(q)[2].body.messages[3].content
  t.eq(results[1].content, "24 rows")
  t.match(results[2].content, "^Not taken: call report alone")
end)

t.test("agent: an OpenAI refusal stops the run, stopped_by refused", function()
  local q = fake.queue("refused")
  fake.script(q, {{refusal = "I can't help with that."}})
  local r = agent.new{model = new_model("openai", q), output = {schema = REPORT}}:run("go")
  t.eq(r.stopped_by, "refused")
  t.eq(r.output, "I can't help with that.")
end)

t.test("agent.new: a schema that is not valid JSON Schema is one error naming the field, before any call", function()
  local q = fake.queue("agentschema")
  local m = new_model("openai", q)
  t.raises(function() agent.new{model = m, output = {schema = {type = "objekt"}}} end,
           'agent.new: output.schema.type: "objekt" is not a JSON type')
  t.raises(function()
    agent.new{model = m, output = {schema = {type = "object", properties = {kind = {type = "string"}}, required = "kind"}}}
  end, "agent.new: output.schema.required: must be a list of property names")
  t.raises(function() agent.new{model = m, output = {schema = REPORT, name = "count_rows"}, tools = {COUNT}} end,
           'output.name "count_rows" is the name of a tool too')
  t.raises(function() agent.new{model = m, output = {schema = REPORT, strict = "yes"}} end, "output.strict must be true or false")
  t.eq(#fake.requests(q), 0)
end)

return t.done()

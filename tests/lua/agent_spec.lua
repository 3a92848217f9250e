-- needs: docker
-- luagent.agent with scripted models (no provider needed) and, where the
-- workspace matters, the real sandbox.
local t = require "helper"
local agent, model, tools, sandbox = luagent.agent, luagent.model, luagent.tools, luagent.sandbox

local ECHO = {name = "echo", description = "Echo the text back.",
  parameters = {type = "object", properties = {text = {type = "string"}}, required = {"text"}},
  handler = function(args) return "echo: " .. args.text end}

-- A scripted model that makes each call in `calls`, then answers `final`.
local function script(calls, final)
  return model.scripted(function(_, n)
    local call = calls[n]
    if call then return {text = call.text, tool_calls = call.tool_calls or {call}} end
    return {text = final or "done"}
  end)
end

local function tool_results(result)
  local out = {}
  for _, m in ipairs(result.transcript) do
    if m.role == "tool" then out[#out + 1] = model.text_of(m.content) end
  end
  return out
end

t.test("an answer without tool calls ends the run", function()
  local r = agent.new{model = script({}, "42"), tools = {ECHO}}:run("What is six times seven?")
  t.eq(r.stopped_by, "answer"); t.eq(r.output, "42"); t.eq(r.turns, 1)
  t.eq(r.transcript[1].role, "system"); t.eq(r.transcript[2].content, "What is six times seven?")
end)

t.test("tool results go back to the model, in order", function()
  local seen
  local m = model.scripted(function(req, n)
    if n == 1 then
      return {tool_calls = {{name = "echo", arguments = {text = "a"}}, {name = "echo", arguments = {text = "b"}}}}
    end
    seen = {table.unpack(req.messages)}
    return {text = "ok"}
  end)
  local r = agent.new{model = m, tools = {ECHO}}:run("go")
  t.same(tool_results(r), {"echo: a", "echo: b"})
  t.eq(seen[#seen].content, "echo: b"); t.eq(seen[#seen - 1].content, "echo: a")
  t.eq(seen[#seen].tool_call_id, seen[#seen - 2].tool_calls[2].id)
end)

t.test("max_turns reached: stopped_by max_turns, with the transcript", function()
  local forever = model.scripted(function() return {text = "again", tool_calls = {{name = "echo", arguments = {text = "x"}}}} end)
  local r = agent.new{model = forever, tools = {ECHO}, max_turns = 3}:run("loop")
  t.eq(r.stopped_by, "max_turns"); t.eq(r.turns, 3)
  t.eq(#tool_results(r), 3)
  t.eq(r.output, "again", "the last text the model wrote")
end)

t.test("on_limit can turn a limit into a final answer", function()
  local forever = model.scripted(function() return {tool_calls = {{name = "echo", arguments = {text = "x"}}}} end)
  local r = agent.new{model = forever, tools = {ECHO}, max_turns = 2,
    on_limit = function(res) return ("gave up after %d turns"):format(res.turns) end}:run("loop")
  t.eq(r.output, "gave up after 2 turns")
end)

t.test("a tool that raises becomes a result the model can read", function()
  local boom = {name = "boom", description = "fails", parameters = {type = "object"},
    handler = function() error("disk is full", 0) end}
  local r = agent.new{model = script({{name = "boom", arguments = {}}}), tools = {boom}}:run("try")
  t.eq(r.stopped_by, "answer")
  t.match(tool_results(r)[1], "^Error: the tool boom failed: tests/lua/agent_spec%.lua:%d+: disk is full",
          "with the line that raised it")
  t.eq(r.transcript[4].is_error, true)
end)

t.test("invalid JSON arguments are fed back and a corrected call succeeds", function()
  local m = script({{name = "echo", arguments = '{"text": "unterminated'}, {name = "echo", arguments = {text = "fixed"}}})
  local r = agent.new{model = m, tools = {ECHO}}:run("go")
  local results = tool_results(r)
  t.match(results[1], "not valid JSON")
  t.match(results[1], '{"text": "unterminated', "the model sees what it sent")
  t.eq(results[2], "echo: fixed")
end)

t.test("an unknown tool and a missing argument are explained", function()
  local m = script({{name = "nope", arguments = {}}, {name = "echo", arguments = {}}})
  local r = agent.new{model = m, tools = {ECHO}}:run("go")
  local results = tool_results(r)
  t.match(results[1], 'no tool named "nope"'); t.match(results[1], "echo")
  t.match(results[2], "echo needs the argument%(s%) text")
end)

t.test("a token budget stops the run as a normal outcome", function()
  local forever = model.scripted(function() return {tool_calls = {{name = "echo", arguments = {text = ("x"):rep(4000)}}}} end)
  local r = agent.new{model = forever, tools = {ECHO}, budget = {tokens = 5000}}:run("spend")
  t.eq(r.stopped_by, "budget")
  t.ok(r.turns >= 1 and r.turns < 20, "stopped after " .. r.turns .. " turns")
  t.ok(r.usage.input_tokens + r.usage.output_tokens >= 5000)
end)

t.test("a model error ends the run with the error and the transcript", function()
  local m = model.scripted(function(_, n)
    if n == 1 then return {tool_calls = {{name = "echo", arguments = {text = "a"}}}} end
    return {error = {kind = "auth", message = "bad key"}}
  end)
  local r = agent.new{model = m, tools = {ECHO}}:run("go")
  t.eq(r.stopped_by, "error"); t.eq(r.error.kind, "auth")
  t.eq(#tool_results(r), 1, "the work done so far is kept")
end)

t.test("several tool calls in one turn run at the same time", function()
  local slow = {name = "slow", description = "sleeps", parameters = {type = "object"},
    handler = function() luagent.sleep(0.5) return "slept" end}
  local calls = {}
  for i = 1, 4 do calls[i] = {name = "slow", arguments = {}} end
  local started = luagent.now()
  local r = agent.new{model = script({{tool_calls = calls}}), tools = {slow}}:run("go")
  t.eq(#tool_results(r), 4)
  t.lt(luagent.now() - started, 0.9, "four 0.5 s tools overlapped")
end)

t.test("the same agent runs twice at once, independently", function()
  local a = agent.new{model = model.scripted(function(req)
    local task = req.messages[2].content
    if #req.messages == 2 then return {tool_calls = {{name = "echo", arguments = {text = task}}}} end
    return {text = "finished " .. task}
  end), tools = {ECHO}}
  local results = luagent.map({"one", "two"}, function(task) return a:run(task) end)
  t.eq(results[1].output, "finished one"); t.eq(results[2].output, "finished two")
  t.same(tool_results(results[1]), {"echo: one"})
end)

t.test("on_step sees every turn and tool call", function()
  local seen = {}
  agent.new{model = script({{name = "echo", arguments = {text = "a"}}}), tools = {ECHO},
    on_step = function(ev) seen[#seen + 1] = ev.type end}:run("go")
  t.same(seen, {"agent_start", "agent_turn", "tool_call", "tool_result", "agent_turn", "agent_end"})
end)

t.test("bad agent definitions raise naming the problem", function()
  t.raises(function() agent.new{tools = {ECHO}} end, "model")
  t.raises(function() agent.new{model = script({}), tools = {{name = "x"}}} end, "handler")
  t.raises(function() agent.new{model = script({}), max_turns = 0} end, "max_turns")
end)

-- ---- with the real sandbox ----

local box = assert(sandbox.open{})

t.test("a long tool result is cut, kept whole in the workspace, and read_output pages through it", function()
  local code = "print('\\n'.join(f'line {i:05d}' for i in range(3000)))"
  local read_id
  local m = model.scripted(function(req, n)
    if n == 1 then return {tool_calls = {{id = "big1", name = "run_python", arguments = {code = code}}}} end
    if n == 2 then
      read_id = model.text_of(req.messages[#req.messages].content):match('read_output%(id = "([^"]+)"')
      return {tool_calls = {{name = "read_output", arguments = {id = read_id, offset = 20000, length = 100}}}}
    end
    return {text = "read it"}
  end)
  local r = agent.new{model = m, tools = {tools.run_python(box)}, max_tool_output = 2000}:run("print a lot")
  local results = tool_results(r)
  t.ok(#results[1] < 2600, "the cut result is short")
  t.match(results[1], "line 00000"); t.match(results[1], "line 02999")
  t.match(results[1], "characters left out")
  t.eq(read_id, "big1")
  t.match(results[2], "^characters 20000%-20100 of")
  t.match(assert(box:get(".luagent/outputs/big1.txt")), "line 01500")
end)

t.test("required outputs: the agent is told what is missing before it may finish", function()
  local m = model.scripted(function(req, n)
    if n == 1 then return {text = "done already"} end
    if n == 2 then
      local last = req.messages[#req.messages]
      t.eq(last.role, "user"); t.match(last.content, "output/result.txt")
      return {tool_calls = {{name = "write_file", arguments = {path = "output/result.txt", content = "42\n"}}}}
    end
    return {text = "saved it"}
  end)
  local r = agent.new{model = m, tools = {tools.write_file(box)}, outputs = {"output/result.txt"}}:run("save 42")
  t.eq(r.stopped_by, "answer"); t.eq(r.output, "saved it"); t.same(r.missing_outputs, {})
  t.match(r.transcript[1].content, "output/result.txt", "the instructions name the outputs")
end)

t.test("an agent that never saves an output finishes with it listed as missing", function()
  local r = agent.new{model = script({}, "nothing to save"), tools = {tools.write_file(box)},
                      outputs = {"output/never.csv"}}:run("go")
  t.eq(r.stopped_by, "answer"); t.same(r.missing_outputs, {"output/never.csv"})
  t.eq(r.turns, 3, "two reminders, then it may stop")
end)

t.test("view_image gives the model the PNG itself", function()
  assert(box:python("import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as plt\n"
    .. "plt.plot([1, 3, 2]); plt.savefig('output/chart.png')"))
  local got
  local m = model.scripted(function(req, n)
    if n == 1 then return {tool_calls = {{name = "view_image", arguments = {path = "output/chart.png"}}}} end
    got = req.messages[#req.messages].content
    return {text = "a line chart"}
  end)
  agent.new{model = m, tools = {tools.view_image(box)}}:run("look")
  t.eq(got[2].type, "image"); t.eq(got[2].media_type, "image/png")
  t.eq(luagent.sys.base64(assert(box:get("output/chart.png"))), got[2].data)
end)

box:close()

t.test("two agents in two sandboxes run concurrently in less than 1.5x the time of one", function()
  local function one_agent(tag)
    local b <close> = assert(sandbox.open{})
    local m = model.scripted(function(_, n)
      if n <= 3 then
        return {tool_calls = {{name = "run_python", arguments = {code = "import time\nt0 = time.time()\n"
          .. "while time.time() - t0 < 0.4: pass\nprint('" .. tag .. "', " .. n .. ")"}}}}
      end
      return {text = tag .. " finished"}
    end)
    return agent.new{model = m, tools = {tools.run_python(b)}}:run("work").output
  end
  local started = luagent.now()
  t.eq(one_agent("solo"), "solo finished")
  local single = luagent.now() - started
  started = luagent.now()
  local results, errors = luagent.map({"a", "b"}, one_agent)
  local double = luagent.now() - started
  t.eq(errors, nil); t.eq(results[2], "b finished")
  print(("    # one agent %.2f s, two at once %.2f s (%.2fx)"):format(single, double, double / single))
  t.lt(double, 1.5 * single, "two agents at once")
end)

return t.done()

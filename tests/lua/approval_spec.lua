-- Approvals through a Lua function (luagent.approval): approve returns true,
-- false + reason, changed arguments, or raises; per-tool needs_approval.
-- Asking a person on the terminal is tested through a pseudo-terminal in
-- tests/e2e/approval_test.sh.
local t = require "helper"
local agent, model = luagent.agent, luagent.model

-- A tool that records what it ran.
local function shell_tool(ran, extra)
  local tool = {name = "shell", description = "Run a command.",
    parameters = {type = "object", properties = {command = {type = "string"}}, required = {"command"}},
    handler = function(args) ran[#ran + 1] = args.command return "ran: " .. args.command end}
  for k, v in pairs(extra or {}) do tool[k] = v end
  return tool
end

local function note_tool(ran, extra)
  local tool = {name = "note", description = "Take a note.",
    parameters = {type = "object", properties = {text = {type = "string"}}},
    handler = function(args) ran[#ran + 1] = "note " .. tostring(args.text) return "noted" end}
  for k, v in pairs(extra or {}) do tool[k] = v end
  return tool
end

-- A model that makes each turn's calls, then answers "done".
local function script(turns)
  return model.scripted(function(_, n)
    if turns[n] then return {tool_calls = turns[n]} end
    return {text = "done"}
  end)
end

local function tool_results(r)
  local out = {}
  for _, m in ipairs(r.transcript) do
    if m.role == "tool" then out[#out + 1] = {text = model.text_of(m.content), is_error = m.is_error} end
  end
  return out
end

local function approvals_of(steps)
  local out = {}
  for _, ev in ipairs(steps) do if ev.type == "approval" then out[#out + 1] = ev end end
  return out
end

local RM = {{name = "shell", arguments = {command = "rm -rf data"}}}

t.test("approve returning true runs the call; the decision is an approval step", function()
  local ran, steps, seen = {}, {}, {}
  local a = agent.new{model = script({RM}), tools = {shell_tool(ran)}, max_tool_output = false,
    on_step = function(ev) steps[#steps + 1] = ev end,
    approve = function(call, ctx)
      seen[#seen + 1] = {name = call.name, command = call.arguments.command, turn = ctx.turn, tool = ctx.tool.name}
      return true
    end}
  local r = a:run("clean up")
  t.eq(r.stopped_by, "answer")
  t.same(ran, {"rm -rf data"})
  t.same(seen, {{name = "shell", command = "rm -rf data", turn = 1, tool = "shell"}})
  local ev = approvals_of(steps)[1]
  t.eq(ev.tool, "shell"); t.eq(ev.decision, "approved"); t.eq(ev.by, "function")
  t.same(ev.arguments, {command = "rm -rf data"})
end)

t.test("approve returning false, reason: the call does not run and the model reads the reason", function()
  local ran, steps = {}, {}
  local a = agent.new{model = script({RM}), tools = {shell_tool(ran)}, max_tool_output = false,
    on_step = function(ev) steps[#steps + 1] = ev end,
    approve = function() return false, "deleting data is not allowed; list it instead" end}
  local r = a:run("clean up")
  t.same(ran, {})
  local result = tool_results(r)[1]
  t.eq(result.text, "Not run: the call was refused: deleting data is not allowed; list it instead")
  t.eq(result.is_error, true)
  local ev = approvals_of(steps)[1]
  t.eq(ev.decision, "refused"); t.eq(ev.reason, "deleting data is not allowed; list it instead")
end)

t.test("approve returning a table runs the call with those arguments, and the result says so", function()
  local ran, steps = {}, {}
  local a = agent.new{model = script({RM}), tools = {shell_tool(ran)}, max_tool_output = false,
    on_step = function(ev) steps[#steps + 1] = ev end,
    approve = function(call)
      call.arguments.command = "mutated in place" -- a copy: this changes nothing
      return {command = "ls data"}
    end}
  local r = a:run("clean up")
  t.same(ran, {"ls data"})
  t.eq(tool_results(r)[1].text, '(The arguments were changed before the call ran: {"command":"ls data"})\nran: ls data')
  t.eq(r.transcript[3].tool_calls[1].arguments.command, "rm -rf data", "the transcript keeps what the model asked")
  local ev = approvals_of(steps)[1]
  t.eq(ev.decision, "changed"); t.same(ev.changed_arguments, {command = "ls data"})
end)

t.test("an approve function that raises: one error naming the agent and the tool; <close> handlers run", function()
  local ran, steps, closed = {}, {}, false
  local ok, err = pcall(function()
    local guard <close> = setmetatable({}, {__close = function() closed = true end})
    local a = agent.new{name = "cleaner", model = script({RM}), tools = {shell_tool(ran)},
      on_step = function(ev) steps[#steps + 1] = ev end,
      approve = function() error("the policy service is unreachable", 0) end}
    return a:run("clean up"), guard
  end)
  t.eq(ok, false)
  t.match(err.message, "^agent cleaner: the approve function raised for the tool shell: the policy service is unreachable$")
  t.eq(closed, true)
  t.same(ran, {})
  local ev = approvals_of(steps)[1]
  t.eq(ev.decision, "error"); t.match(ev.error, "policy service is unreachable")
  t.eq(steps[#steps].type, "agent_end"); t.eq(steps[#steps].stopped_by, "error")
end)

t.test("an approve function that returns nothing raises, naming what it must return", function()
  local a = agent.new{model = script({RM}), tools = {shell_tool({})}, approve = function() end}
  t.raises(function() a:run("clean up") end, "the approve function failed for the tool shell: approve returned nothing; "
    .. "it must return true, false %[, reason%] or a table of changed arguments")
end)

t.test("needs_approval: only the tools that say so ask", function()
  local ran, asked = {}, {}
  local turns = {{{name = "note", arguments = {text = "a"}}, {name = "shell", arguments = {command = "ls"}}}}
  local a = agent.new{model = script(turns), max_tool_output = false,
    tools = {note_tool(ran), shell_tool(ran, {needs_approval = true})},
    approve = function(call) asked[#asked + 1] = call.name return true end}
  a:run("go")
  t.same(asked, {"shell"})
  t.same(ran, {"note a", "ls"})
end)

t.test("approve alone asks about every call; needs_approval = false opts a tool out", function()
  local asked = {}
  local turns = {{{name = "note", arguments = {text = "a"}}, {name = "shell", arguments = {command = "ls"}}}}
  local approve = function(call) asked[#asked + 1] = call.name return true end
  agent.new{model = script(turns), tools = {note_tool({}), shell_tool({})}, approve = approve}:run("go")
  t.same(asked, {"note", "shell"}, "in the order of the calls")
  asked = {}
  agent.new{model = script(turns), tools = {note_tool({}, {needs_approval = false}), shell_tool({})}, approve = approve}
    :run("go")
  t.same(asked, {}, "a tool saying needs_approval narrows approval to the tools that need it")
end)

t.test("needs_approval as a function decides per call, from the arguments", function()
  local ran, asked = {}, {}
  local turns = {{{name = "shell", arguments = {command = "ls"}}}, {{name = "shell", arguments = {command = "rm x"}}}}
  local tool = shell_tool(ran, {needs_approval = function(args, ctx)
    t.eq(ctx.tool.name, "shell")
    return args.command:match("^rm") ~= nil
  end})
  local r = agent.new{model = script(turns), tools = {tool}, max_tool_output = false,
    approve = function(call) asked[#asked + 1] = call.arguments.command return false, "no deleting" end}:run("go")
  t.same(asked, {"rm x"})
  t.same(ran, {"ls"})
  t.eq(tool_results(r)[2].text, "Not run: the call was refused: no deleting")
end)

t.test("several calls in one turn are approved one at a time, in order, before they run", function()
  local log = {}
  local turns = {{{name = "shell", arguments = {command = "a"}}, {name = "shell", arguments = {command = "b"}},
                  {name = "shell", arguments = {command = "c"}}}}
  local tool = shell_tool({})
  tool.handler = function(args) log[#log + 1] = "run " .. args.command return "ok" end
  agent.new{model = script(turns), tools = {tool}, approve = function(call)
    log[#log + 1] = "ask " .. call.arguments.command
    luagent.sleep(0.01) -- an approval that waits does not let another start
    log[#log + 1] = "answer " .. call.arguments.command
    return call.arguments.command ~= "b", "not b"
  end}:run("go")
  t.same({table.unpack(log, 1, 6)}, {"ask a", "answer a", "ask b", "answer b", "ask c", "answer c"})
  table.sort(log)
  t.same(log, {"answer a", "answer b", "answer c", "ask a", "ask b", "ask c", "run a", "run c"})
end)

t.test("calls that cannot run ask nothing: an unknown tool, bad arguments", function()
  local asked = 0
  local turns = {{{name = "nope", arguments = {}}, {name = "shell", arguments = "{bad"}, {name = "shell", arguments = {}}}}
  agent.new{model = script(turns), tools = {shell_tool({})},
    approve = function() asked = asked + 1 return true end}:run("go")
  t.eq(asked, 0)
end)

t.test("agent.new: a wrong approve or needs_approval raises, naming it", function()
  local m = script({})
  t.raises(function() agent.new{model = m, approve = "maybe"} end,
           'approve must be a function%(call, ctx%), "ask" or "defer", got maybe')
  t.raises(function() agent.new{model = m, tools = {shell_tool({}, {needs_approval = "yes"})}} end,
           "tools%[1%] 'shell': needs_approval must be true, false or a function")
end)

return t.done()

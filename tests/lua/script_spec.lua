-- A scripted driver as data (luagent.script): a YAML file of tool-call steps
-- and an answer, checked whole when it loads and against the agent's tools at
-- the first request; every mistake is named by file:line for people.
local t = require "helper"
local fs = require "luagent.fs"
local script = require "luagent.script"
local tools = luagent.tools

local dir = assert(fs.temp_dir("luagent-script"))
local USER = {role = "user", content = "go"}

-- The tools' definitions as an agent offers them (their handlers never run here).
local DEFS = {}
for _, tool in ipairs(tools.standard({session = "x"}, {})) do
  DEFS[#DEFS + 1] = {name = tool.name, description = tool.description, parameters = tool.parameters}
end

local function write(name, text)
  assert(fs.write(dir .. "/" .. name, text))
  return dir .. "/" .. name
end

local refused = t.refused

local function first_call(m, messages)
  local r = assert(m:complete{messages = messages or {USER}, tools = DEFS})
  return r
end

t.test("steps run in order, a step's file: fills the tool's code, and the answer takes {last_line}", function()
  write("step.py", "print('hello')\n")
  local m = script.load(write("good.script.yaml", [[
steps:
  - say: a look
    tool: run_shell
    command: ls input
  - tool: run_python
    file: step.py
  - answer: "Done. {last_line}"
]]))
  local r = first_call(m)
  t.eq(r.text, "a look")
  t.eq(r.tool_calls[1].name, "run_shell")
  t.match(r.tool_calls[1].arguments_json, '"command":"ls input"')
  local id = r.tool_calls[1].id
  local after_one = {USER, {role = "assistant", tool_calls = r.tool_calls}, {role = "tool", tool_call_id = id, content = "x"}}
  r = first_call(m, after_one)
  t.eq(r.tool_calls[1].name, "run_python")
  t.eq(require("luagent.json").decode(r.tool_calls[1].arguments_json).code, "print('hello')\n")
  local id2 = r.tool_calls[1].id
  local after_two = {after_one[1], after_one[2], after_one[3], {role = "assistant", tool_calls = r.tool_calls},
                     {role = "tool", tool_call_id = id2, content = "exit code 0\nstdout:\nline one\n12 rows\n"}}
  r = first_call(m, after_two)
  t.eq(r.text, "Done. 12 rows", "the last line of the last step's output")
  t.eq(#r.tool_calls, 0)
  t.match(tostring(m), "scripted%-good", "named after its file")
end)

t.test("a misspelt tool or argument is named with its line and a did-you-mean, at the first request", function()
  local m = script.load(write("typo.script.yaml", "steps:\n  - tool: run_shell\n    command: ls\n  - tool: run_pyton\n"
    .. "    code: print(1)\n"))
  refused(function() first_call(m) end, "^typo%.script%.yaml:4: tool: run_pyton is not one of the agent's tools "
    .. "%(did you mean 'run_python'%?%); its tools are list_files, read_file, run_python")
  m = script.load(write("arg.script.yaml", "steps:\n  - tool: run_shell\n    comand: ls\n"))
  refused(function() first_call(m) end, "^arg%.script%.yaml:2: comand: not an argument of run_shell %(did you mean "
    .. "'command'%?%); its arguments are command")
  m = script.load(write("none.script.yaml", "steps:\n  - tool: run_shell\n"))
  refused(function() first_call(m) end, "^none%.script%.yaml:2: run_shell needs command:")
end)

t.test("mistakes in the file itself are refused when it loads, each naming its line", function()
  refused(function() script.load(write("m1.script.yaml", "steps:\n  - tool: run_python\n    file: nothere.py\n")) end,
    "^m1%.script%.yaml:2: file: nothere%.py is not there %(looked in .*%)")
  refused(function() script.load(write("m2.script.yaml", "step:\n  - answer: hi\n")) end,
    "^m2%.script%.yaml:1: step: not a key of a script %(did you mean 'steps'%?%)")
  refused(function() script.load(write("m3.script.yaml", "steps:\n  - answer: hi\n  - tool: run_shell\n    command: ls\n")) end,
    "^m3%.script%.yaml:3: step 2 comes after the answer")
  refused(function() script.load(write("m4.script.yaml", "steps:\n  - answer: '{last_lin}'\n")) end,
    "^m4%.script%.yaml:2: answer: {last_lin} is not a placeholder %(did you mean 'last_line'%?%)")
  refused(function() script.load(write("m5.script.yaml", "steps:\n  - say: hello\n")) end,
    "^m5%.script%.yaml:2: a step is a tool call %(tool: run_python, with its arguments%) or the answer")
  refused(function() script.load(write("m6.script.yaml", "- tool: run_shell\n")) end,
    "^m6%.script%.yaml:1: a script is a mapping with steps:")
  local ok, err = pcall(script.load, write("m7.script.yaml", "steps:\n  - tool: run_shell\n   command: ls\n"))
  t.eq(ok, false)
  t.match(err.message, "m7%.script%.yaml")
  t.for_people(err)
end)

t.test("script.driver reads the file relative to the recipe's folder, only when the driver is made", function()
  local make = script.driver(dir .. "/nothing-yet.script.yaml")
  t.eq(type(make), "function", "nothing is read before the driver is needed")
  write("nothing-yet.script.yaml", "steps:\n  - answer: hi\n")
  t.eq(first_call(make()).text, "hi")
end)
return t.done()

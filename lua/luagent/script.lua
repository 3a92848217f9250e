-- luagent.script: a scripted driver written as data, for a recipe run with no
-- model configured. A YAML file lists the steps: each the tool call a model
-- would make (it really runs in the sandbox), the last one the answer. It is
-- not a model, and it says so (luagent.model.from_or_scripted).
--
--   steps:
--     - say: First a look at the file        # optional: the text beside the call
--       tool: run_shell                      # a tool the agent has
--       command: head -5 input/data.csv      # the tool's arguments, by name
--     - tool: run_python
--       file: profile.py                     # the tool's one required text argument (run_python's code,
--                                            # run_shell's command), read from a file beside the script
--     - answer: "{last_line}"                # the final answer; {last_line}: the last line the step
--                                            # before printed, {last_output}: all it returned
--
--   script.driver(file) -> make()   make() loads the file (relative to the
--       recipe's folder) and returns the scripted model; the file is checked
--       whole when it loads: an error value naming file:line for people
--   script.load(path) -> model
--   script.steps_done(messages) -> n   the turns of a transcript that called tools (the next step is n + 1)
-- A step's tool and arguments are checked against the tools the agent offers
-- at the first request (a misspelt tool or argument: "did you mean").
local errors = require "luagent.errors"
local fs = require "luagent.fs"
local options = require "luagent.options"

local script = {}

local TOP_KEYS = {"name", "steps"}
local PLACEHOLDERS = {last_line = true, last_output = true}

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  return keys
end

-- A problem at a place in the file: raised as an error value of kind config.
local function refuse(where, message)
  error(errors.new("config", ("%s:%d: %s"):format(where.file, where.line or 1, message),
    {file = where.file, line = where.line}), 0)
end

local function at(positions, tbl, key, file)
  local p = positions[tbl] and positions[tbl][key]
  return {file = file, line = p and p.line}
end

local function check_answer(step, where)
  if type(step.answer) ~= "string" then refuse(where, "answer: must be text, the final answer") end
  for name in step.answer:gmatch("{([%w_]+)}") do
    if not PLACEHOLDERS[name] then
      refuse(where, ("answer: {%s} is not a placeholder%s; the placeholders are {last_line} and {last_output}")
        :format(name, options.suggest(name, {"last_line", "last_output"})))
    end
  end
  local extra = {}
  for k in pairs(step) do if k ~= "answer" then extra[#extra + 1] = tostring(k) end end
  if #extra > 0 then
    table.sort(extra)
    refuse(where, "an answer step has only answer:, not " .. table.concat(extra, ", "))
  end
end

-- One tool step -> {say, tool, args, file, where}; file's text is read now.
local function read_tool_step(step, where, dir)
  if type(step.tool) ~= "string" or step.tool == "" then
    refuse(where, "a step is a tool call (tool: run_python, with its arguments) or the answer (answer: ...); "
      .. "this one has " .. (next(step) and table.concat(sorted_keys(step), ", ") or "nothing"))
  end
  if step.say ~= nil and type(step.say) ~= "string" then refuse(where, "say: must be text") end
  local args, file = {}, nil
  for k, v in pairs(step) do
    if k ~= "tool" and k ~= "say" and k ~= "file" then args[k] = v end
  end
  if step.file ~= nil then
    if type(step.file) ~= "string" then refuse(where, "file: must be a file name, beside the script") end
    local path = step.file:match("^/") and step.file or (dir .. "/" .. step.file)
    local text = fs.read(path)
    if not text then refuse(where, ("file: %s is not there (looked in %s)"):format(step.file, dir)) end
    file = {name = step.file, text = text}
    local watchlist = package.loaded["luagent.watchlist"] -- `luagent run --watch` reruns when it changes
    if watchlist then watchlist.file(path) end
  end
  return {say = step.say, tool = step.tool, args = args, file = file, where = where}
end

-- The file -> its steps, checked; raises an error value naming file:line.
local function read_steps(path)
  local name = path:match("[^/]+$")
  local doc, positions = require("luagent.yaml").load_file(path, {positions = true})
  if doc == nil then error(positions, 0) end
  local top = {file = name, line = 1}
  if type(doc) ~= "table" or doc[1] ~= nil then
    refuse(top, "a script is a mapping with steps: (a list of steps), e.g.\n  steps:\n    - tool: run_shell\n"
      .. "      command: ls input")
  end
  for k in pairs(doc) do
    if k ~= "name" and k ~= "steps" then
      refuse(at(positions, doc, k, name), ("%s: not a key of a script%s; its keys are %s"):format(tostring(k),
        options.suggest(tostring(k), TOP_KEYS), table.concat(TOP_KEYS, ", ")))
    end
  end
  if type(doc.steps) ~= "table" or doc.steps[1] == nil then refuse(top, "steps: must list at least one step") end
  local dir = path:match("^(.*)/[^/]*$") or "."
  local steps = {}
  for i, step in ipairs(doc.steps) do
    local where = at(positions, doc.steps, i, name)
    if type(step) ~= "table" then refuse(where, ("step %d is not a mapping (tool: ... or answer: ...)"):format(i)) end
    if steps.answer then refuse(where, ("step %d comes after the answer: the answer ends the run"):format(i)) end
    if step.answer ~= nil then
      check_answer(step, where)
      steps.answer = step.answer
    else
      steps[#steps + 1] = read_tool_step(step, where, dir)
    end
  end
  return steps, doc.name
end

-- The tool's one required text argument, which a step's file: fills.
local function main_argument(def)
  local props = def.parameters and def.parameters.properties or {}
  local required, found = def.parameters and def.parameters.required or {}, nil
  for _, k in ipairs(required) do
    if type(props[k]) == "table" and props[k].type == "string" then
      if found then return nil end
      found = k
    end
  end
  return found
end

-- A step checked against the tool the agent offers; its arguments -> table.
local function arguments(step, defs)
  local def = defs[step.tool]
  if not def then
    local names = sorted_keys(defs)
    refuse(step.where, ("tool: %s is not one of the agent's tools%s; its tools are %s"):format(step.tool,
      options.suggest(step.tool, names), table.concat(names, ", ")))
  end
  local args = {}
  for k, v in pairs(step.args) do args[k] = v end
  if step.file then
    local main = main_argument(def)
    if not main then
      refuse(step.where, ("file: %s has no one text argument a file could be; give its arguments by name (%s)")
        :format(step.tool, table.concat(sorted_keys(def.parameters and def.parameters.properties or {}), ", ")))
    end
    args[main] = step.file.text
  end
  local props = def.parameters and def.parameters.properties
  if props then
    local known = sorted_keys(props)
    for k in pairs(args) do
      if props[k] == nil then
        refuse(step.where, ("%s: not an argument of %s%s; its arguments are %s"):format(k, step.tool,
          options.suggest(k, known), table.concat(known, ", ")))
      end
    end
    for _, k in ipairs(def.parameters.required or {}) do
      if args[k] == nil then refuse(step.where, ("%s needs %s:"):format(step.tool, k)) end
    end
  end
  return args
end

-- How many turns of a transcript called tools: the step a script takes next.
function script.steps_done(messages)
  local n = 0
  for _, m in ipairs(messages) do
    if m.role == "assistant" and m.tool_calls and #m.tool_calls > 0 then n = n + 1 end
  end
  return n
end

local function last_tool_output(messages)
  local content = require "luagent.model.content"
  for i = #messages, 1, -1 do
    if messages[i].role == "tool" then return content.text_of(messages[i].content) end
  end
  return ""
end

local function answer_text(template, messages)
  local output = last_tool_output(messages):gsub("%s+$", "")
  local last_line = output:match("([^\n]*)$") or ""
  local values = {last_line = last_line, last_output = output}
  return (template:gsub("{([%w_]+)}", function(name) return values[name] end))
end

function script.load(path)
  local steps, name = read_steps(path)
  local checked = false
  local scripted = require "luagent.model.scripted"
  return scripted(function(request)
    if not checked then
      local defs = {}
      for _, def in ipairs(request.tools or {}) do defs[def.name] = def end
      for _, step in ipairs(steps) do step.arguments = arguments(step, defs) end
      checked = true
    end
    local step = steps[script.steps_done(request.messages) + 1]
    if not step then
      return {text = answer_text(steps.answer or "{last_line}", request.messages)}
    end
    return {text = step.say, tool_calls = {{name = step.tool, arguments = step.arguments}}}
  end, {name = "scripted-" .. (name or path:match("[^/]+$"):gsub("%.ya?ml$", ""):gsub("%.script$", ""))})
end

function script.driver(file)
  local recipe_dir = require("luagent.context").current().recipe_dir or "."
  local path = file:match("^/") and file or (recipe_dir .. "/" .. file)
  return function() return script.load(path) end
end

return script

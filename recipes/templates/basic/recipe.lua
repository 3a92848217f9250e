-- {{name}}: an agent with a Python sandbox and the standard tools, over a CSV
-- file (written by `luagent new {{name}}`; change anything). It profiles the
-- data column by column, saves output/columns.csv and output/summary.md, and
-- answers in two sentences; what it saved comes back to runs/<run-id>/output/.
-- Every prompt, limit and setting is in {{name}}.yaml: --set input=my.csv.
local agent, sandbox, model, tools = require "luagent.agent", require "luagent.sandbox",
                                     require "luagent.model", require "luagent.tools"
local cfg = luagent.config("{{name}}.yaml")

-- The model the settings and the environment point at; with none, the
-- scripted driver in {{name}}_script.lua (not a model), said plainly.
local llm = model.from_or_scripted(cfg.model, require("{{name}}_script"))
local input = cfg.input:match("^/") and cfg.input or luagent.recipe_dir .. "/" .. cfg.input

local box <close> = assert(sandbox.open{
  image = cfg.sandbox.image, memory = cfg.sandbox.memory, cpus = cfg.sandbox.cpus,   -- no network unless asked
  manifest = {["input/data.csv"] = sandbox.file(input)},
  save = {from = "output", to = luagent.run_dir("output"), required = cfg.outputs}, -- home whatever happens
})

local worker = agent.new{
  name = "{{name}}", instructions = cfg.instructions, model = llm,
  tools = tools.standard(box, {timeout = cfg.limits.tool_timeout, shell = cfg.tools.shell, edit = cfg.tools.edit}),
  skills = cfg.skills,    -- folders with a SKILL.md, staged read-only under /skills in the sandbox
  max_turns = cfg.limits.max_turns, budget = cfg.limits.budget, outputs = cfg.outputs,
}

local result = worker:run(cfg.task)
local saved, not_saved = luagent.outputs.collect(box, "output", luagent.run_dir("output"), {required = cfg.outputs})

print(("\nAnswer (%s, %d turns):\n%s"):format(result.stopped_by, result.turns, result.output or "(no final answer)"))
if not saved then -- e.g. a full disk: say what could not be written, never crash on it
  print("The outputs could not be saved: " .. not_saved.message)
  return 1
end
for _, f in ipairs(saved.files) do print(("  %-22s %7d bytes  in %s"):format(f.path, f.size, saved.dir)) end
if result.error then print("The run stopped on an error: " .. result.error.message) end
if #saved.missing > 0 then print("MISSING: the agent did not save " .. table.concat(saved.missing, ", ")) end
return (result.stopped_by == "answer" and #saved.missing == 0) and 0 or 1

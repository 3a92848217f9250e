-- {{name}}: an agent with a Python sandbox and the standard tools, over CSV
-- files (written by `luagent new {{name}}`; change anything). It profiles the
-- data column by column, saves output/columns.csv and output/summary.md, and
-- answers in two sentences; what it saved comes back to runs/<run-id>/output/.
-- Prompts and settings: {{name}}.yaml; the scripted driver: {{name}}.script.yaml.
local agent, sandbox, model, tools = require "luagent.agent", require "luagent.sandbox",
                                     require "luagent.model", require "luagent.tools"
local fs, script = require "luagent.fs", require "luagent.script"
local cfg = luagent.config("{{name}}.yaml")

-- The model the settings and the environment point at; with none, the
-- scripted driver of {{name}}.script.yaml (not a model), said plainly.
local llm = model.from_or_scripted(cfg.model, script.driver("{{name}}.script.yaml"))

-- The input, a file or a folder (relative to this folder): its files land in input/.
local function staged(path)
  local full = path:match("^/") and path or (luagent.recipe_dir .. "/" .. path)
  if (fs.stat(fs.realpath(full) or full) or {}).type == "directory" then return {input = sandbox.dir(full)} end
  return {["input/" .. full:match("[^/]+$")] = sandbox.file(full)}
end

local box <close> = assert(sandbox.open{
  image = cfg.sandbox.image, memory = cfg.sandbox.memory, cpus = cfg.sandbox.cpus,   -- no network unless asked
  manifest = staged(cfg.input),
  save = {from = "output", to = luagent.run_dir("output"), required = cfg.outputs}, -- home whatever happens
})

-- The standard tools as the settings say; a tool of your own goes in this list too
-- (a table {name, description, parameters, handler}: `luagent help tools`).
local toolset = tools.standard(box, {timeout = cfg.limits.tool_timeout, shell = cfg.tools.shell, edit = cfg.tools.edit,
                                     add = cfg.tools.add, drop = cfg.tools.drop})

local worker = agent.new{
  name = "{{name}}", instructions = cfg.instructions, model = llm, tools = toolset,
  skills = cfg.skills,    -- folders with a SKILL.md, staged read-only under /skills in the sandbox
  max_turns = cfg.limits.max_turns, budget = cfg.limits.budget, outputs = cfg.outputs,
}

local result = worker:run(cfg.task)
local saved, not_saved = luagent.outputs.collect(box, "output", luagent.run_dir("output"), {required = cfg.outputs})

if result.stopped_by == "answer" then
  print(("\nAnswer (%d turns):\n%s"):format(result.turns, result.output or "(no final answer)"))
else -- max_turns, budget, an error: no answer, and the last remark is not one
  print(("\nNo answer: the run stopped by %s after %d turns."):format(result.stopped_by, result.turns))
end
if not saved then -- e.g. a full disk: say what could not be written, never crash on it
  print("The outputs could not be saved: " .. not_saved.message)
  return 1
end
for _, f in ipairs(saved.files) do print(("  %-22s %7d bytes  in %s"):format(f.path, f.size, saved.dir)) end
if result.error then print("The run stopped on an error: " .. result.error.message) end
if #saved.missing > 0 then print("MISSING: the agent did not save " .. table.concat(saved.missing, ", ")) end
return (result.stopped_by == "answer" and #saved.missing == 0) and 0 or 1

-- The energy-anomaly case study: an agent gets an hourly building-energy CSV
-- in a locked-down sandbox with Python, finds the anomaly event, and saves an
-- anomalies CSV, a chart and a report, which come back to runs/<run-id>/output.
--
--   luagent run recipes/energy_anomaly.lua                      generated data, model from the environment
--   luagent run recipes/energy_anomaly.lua --set input=my.csv   your own data
--   luagent run recipes/energy_anomaly.lua --set model.provider=anthropic --set model.model=claude-sonnet-4-5
--
-- Every prompt, limit and setting is in energy_anomaly.yaml.
local agent, sandbox, model, tools = require "luagent.agent", require "luagent.sandbox",
                                     require "luagent.model", require "luagent.tools"
local outputs = require "luagent.outputs"
local cfg = luagent.config("energy_anomaly.yaml")

-- The data: a CSV given with --set input=PATH, or one generated from a seed
-- (with the true anomaly kept beside it, for checking).
local input = cfg.input
if not input then
  input = require("energy_data").generate{seed = cfg.data.seed, days = cfg.data.days, dir = luagent.run_dir("input")}
end

-- The model: whatever the settings and the environment point at; with none,
-- the scripted driver (a recorded sequence of tool calls) — said plainly.
local llm = model.from_or_scripted(cfg.model, require("energy_anomaly_script"))

local box <close> = assert(sandbox.open{
  image = cfg.sandbox.image, memory = cfg.sandbox.memory, cpus = cfg.sandbox.cpus,   -- no network unless asked
  network = cfg.sandbox.network,                        -- nil: none; {allow = {...}}: by rule (luagent help network)
  pool = cfg.sandbox.pool,                              -- sessions kept started for later runs (an eval)
  runtime = cfg.sandbox.runtime,                        -- "runsc": gVisor (nil: the engine's default)
  engines = cfg.sandbox.engines,                        -- several Docker engines (nil: the default one)
  manifest = {["input/building_energy.csv"] = sandbox.file(input)},
  -- whatever happens (an error, Ctrl-C), what the agent saved comes home
  save = {from = "output", to = luagent.run_dir("output"), required = cfg.outputs},
})

local analyst = agent.new{
  name = "Energy anomaly analyst",
  instructions = cfg.instructions,
  model = llm,
  tools = tools.standard(box, {timeout = cfg.limits.tool_timeout, shell = cfg.tools.shell, edit = cfg.tools.edit}),
  skills = cfg.skills,                                  -- folders with a SKILL.md, read when needed
  max_turns = cfg.limits.max_turns,
  budget = cfg.limits.budget,
  outputs = cfg.outputs,
}

local result = analyst:run(cfg.task)
local saved, not_saved = outputs.collect(box, "output", luagent.run_dir("output"), {required = cfg.outputs})

local cost = result.cost and ("$%.4f"):format(result.cost) or "cost unknown"
if result.stopped_by == "answer" then
  print(("\nAnswer (%d turns, %s):\n%s\n"):format(result.turns, cost, result.output or "(no final answer)"))
else -- max_turns, budget, an error: no answer, and the agent's last remark is not one
  print(("\nNo answer: the run stopped by %s after %d turns (%s).\n"):format(result.stopped_by, result.turns, cost))
end
if not saved then -- e.g. a full disk: say what could not be written, never crash on it
  print("The outputs could not be saved: " .. not_saved.message)
  return 1
end
for _, f in ipairs(saved.files) do
  print(("  %-28s %9d bytes  %s"):format(f.path, f.size, saved.dir .. "/" .. f.path:match("[^/]+$")))
end
print("  manifest: " .. saved.manifest)
if result.error then print("The run stopped on an error: " .. result.error.message) end
if #saved.missing > 0 then
  print("MISSING: the agent did not save " .. table.concat(saved.missing, ", "))
  return 1
end
return result.stopped_by == "answer" and 0 or 1

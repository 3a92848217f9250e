-- A small recipe for tests/e2e/checks_test.sh: an agent with the standard
-- tools in its own sandbox; the model is the fake provider (a test double)
-- behind model.base_url, each variant scripted to take a different path.
local agent, sandbox, model, tools = luagent.agent, luagent.sandbox, luagent.model, luagent.tools
local cfg = luagent.config("checks_recipe.yaml")
local llm = assert(model.from(cfg.model))
local box <close> = assert(sandbox.open{
  labels = {["luagent.test"] = "checks"},
  save = {from = "output", to = luagent.run_dir("output")},
})
local worker = agent.new{name = "worker", instructions = cfg.instructions, model = llm, tools = tools.standard(box),
                         max_turns = 6}
local result = worker:run(cfg.task)
luagent.outputs.collect(box, "output", luagent.run_dir("output"))
print(result.output)
return result.stopped_by == "answer" and 0 or 1

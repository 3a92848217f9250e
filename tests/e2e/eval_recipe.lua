-- A small recipe for tests/e2e/eval_test.sh: an agent in its own sandbox
-- reads its input file with Python and answers; the model is the fake
-- provider (a test double) behind model.base_url.
local agent, sandbox, model, tools = luagent.agent, luagent.sandbox, luagent.model, luagent.tools
local cfg = luagent.config("eval_recipe.yaml")
local llm = assert(model.from(cfg.model))
local box <close> = assert(sandbox.open{
  labels = {["luagent.test"] = "eval"},
  manifest = {["input/data.txt"] = sandbox.file(assert(cfg.input, "--set input=FILE"))},
  save = {from = "output", to = luagent.run_dir("output")},
})
local reader = agent.new{name = "reader", instructions = cfg.instructions, model = llm,
                         tools = {tools.run_python(box)}, max_turns = 4}
local result = reader:run(cfg.task .. " (" .. cfg.input:match("[^/]+$") .. ")")
luagent.outputs.collect(box, "output", luagent.run_dir("output"))
print(result.output)
return result.stopped_by == "answer" and 0 or 1

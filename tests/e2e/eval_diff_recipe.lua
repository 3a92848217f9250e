-- A small recipe without a sandbox for tests/e2e/eval_diff_test.sh: one agent
-- asks the fake provider (tests/fake_provider.py, a test double) behind
-- model.base_url, whose queue answers {"echo": true}: the reply is the request
-- itself, so the answer carries the instructions and the input's text, and
-- editing the prompt changes what a check finds in the answer.
local agent, model, fs = luagent.agent, luagent.model, luagent.fs
local cfg = luagent.config("eval_diff_recipe.yaml")
local llm = assert(model.from(cfg.model))
local reader = agent.new{name = "reader", instructions = cfg.instructions, model = llm, max_turns = 2}
local text = assert(fs.read(assert(cfg.input, "--set input=FILE")))
local result = reader:run(cfg.task .. "\n" .. text)
print(result.output)
return result.stopped_by == "answer" and 0 or 1

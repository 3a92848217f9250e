-- A sandbox-free agent recipe for the model-call cache tests, driven by the
-- fake provider (tests/fake_provider.py, a test double): a calculator agent
-- whose tool is a plain Lua function, then a reviewer agent.
--   luagent run tests/e2e/cache_recipe.lua --set base_url=URL [--set instructions=...]
--     [--set offset=N (added to every tool result)] [--set config=FILE.yaml] [--set stream=true]
local s = luagent.settings
if s.config then luagent.config(s.config) end

local m = luagent.model.openai{model = "gpt-4o-mini", base_url = assert(s.base_url, "--set base_url=..."),
                               api_key = "sk-fake-key-for-tests", retry = luagent.retry.none, timeout = 30}
local add = {
  name = "add", description = "Add two numbers.",
  parameters = {type = "object", properties = {a = {type = "number"}, b = {type = "number"}}, required = {"a", "b"}},
  handler = function(args) return tostring(args.a + args.b + (s.offset or 0)) end,
}
local streamed = {}
local calculator = luagent.agent.new{
  name = "calculator", instructions = "Add with the tool; answer with the sum.", model = m, tools = {add},
  max_turns = 5, stream = s.stream or nil,
  on_delta = s.stream and function(text) streamed[#streamed + 1] = text end or nil,
}
local r = calculator:run("What is 1 + 2 + 3?")
print("CALCULATOR: " .. tostring(r.output) .. " (" .. r.stopped_by .. ", " .. r.turns .. " turns)")
if s.stream then print("STREAMED: " .. table.concat(streamed, "|")) end

local reviewer = luagent.agent.new{
  name = "reviewer", instructions = s.instructions or "Check the sum; answer OK or WRONG.", model = m,
  max_turns = 2,
}
local review = reviewer:run("The calculator said: " .. tostring(r.output))
print("REVIEW: " .. tostring(review.output))

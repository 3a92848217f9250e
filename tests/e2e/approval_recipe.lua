-- An agent whose shell tool needs approval, driven by the fake provider
-- (tests/fake_provider.py, a test double), for tests/e2e/approval_test.sh.
--   luagent run tests/e2e/approval_recipe.lua --set base_url=URL [--set approve=raise]
-- Prints each tool result the model read ("RESULT: ..."), how the agent
-- stopped, and "CLOSED" when its <close> handler runs.
local s = luagent.settings
local model = luagent.model

local guard <close> = setmetatable({}, {__close = function() print("CLOSED") end}) -- luacheck: ignore 211

local m = model.openai{model = "gpt-4o-mini", base_url = assert(s.base_url, "--set base_url=..."),
                       api_key = "sk-fake-key-for-tests", retry = luagent.retry.none}
local shell = {
  name = "shell", description = "Run a shell command.", needs_approval = true,
  parameters = {type = "object", properties = {command = {type = "string"}}, required = {"command"}},
  handler = function(args) return "ran: " .. args.command end,
}
local approve -- nil: the tool's needs_approval asks the person ("ask")
if s.approve == "raise" then approve = function() error("the policy service is unreachable", 0) end end

local r = luagent.agent.new{name = "cleaner", model = m, tools = {shell}, approve = approve, max_turns = 5}
  :run("Clean up the data folder.")
for _, msg in ipairs(r.transcript) do
  if msg.role == "tool" then print("RESULT: " .. model.text_of(msg.content):gsub("\n", " | ")) end
end
print("STOPPED: " .. r.stopped_by)

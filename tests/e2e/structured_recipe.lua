-- An agent with a structured answer, driven by the fake provider
-- (tests/fake_provider.py, a test double), for tests/e2e/structured_test.sh.
--   luagent run tests/e2e/structured_recipe.lua --set base_url=URL --set provider=openai|anthropic
--                                               [--set bad_schema=true]
-- Prints the answer's fields ("VALUE: ..."), how the agent stopped, and
-- "CLOSED" when its <close> handler runs.
local s = luagent.settings
local model = luagent.model

local guard <close> = setmetatable({}, {__close = function() print("CLOSED") end}) -- luacheck: ignore 211

local REPORT = {type = "object", additionalProperties = false, required = {"kind", "hour"},
  properties = {kind = {type = s.bad_schema and "objekt" or "string", enum = {"spike", "drop"}}, hour = {type = "integer"}}}

local m = model.from{provider = s.provider or "openai", model = "fake-model", base_url = assert(s.base_url, "--set base_url=..."),
                     api_key = "sk-fake-key-for-tests", retry = {attempts = 1}}
local r = luagent.agent.new{name = "reporter", model = m, output = {schema = REPORT, name = "report"}, max_turns = 3}
  :run("What happened?")
print("STOPPED: " .. r.stopped_by)
if r.value then print(("VALUE: kind=%s hour=%d"):format(r.value.kind, r.value.hour)) end
for _, e in ipairs(r.output_errors or {}) do print("ERROR: " .. e.path .. ": " .. e.message) end

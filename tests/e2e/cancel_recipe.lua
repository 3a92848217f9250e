-- An agent whose tool is a plain Lua function that naps (no sandbox), driven
-- by the fake provider (tests/fake_provider.py, a test double), for the
-- Ctrl-C / SIGTERM tests: luagent run cancel_recipe.lua --set base_url=URL --set mode=MODE
--   mode raise:   the nap's cancellation goes through the tool as raised
--   mode swallow: the tool catches it and returns text, as a careless tool would
--   mode return:  the tool returns it as nil, err (as box:python did)
local s = luagent.settings
local m = luagent.model.openai{model = "gpt-4o-mini", base_url = assert(s.base_url, "--set base_url=..."),
                               api_key = "sk-fake-key-for-tests", retry = luagent.retry.none}
local out = luagent.run_dir("output")
local _guard <close> = setmetatable({}, {__close = function(_, err)
  luagent.sleep(0.1) -- cleanup may itself wait
  assert(luagent.fs.write(out .. "/closed.txt", "closed after: " .. tostring(err) .. "\n"))
end})
local nap = {
  name = "nap", description = "Rests for a while.", parameters = {type = "object", properties = {}},
  handler = function()
    print("NAPPING"); io.stdout:flush()
    local ok, err = pcall(luagent.sleep, 30)
    if ok then return "rested" end
    if s.mode == "swallow" then return "the nap was interrupted: " .. tostring(err) end
    if s.mode == "return" then return nil, err end
    error(err, 0)
  end,
}
local a = luagent.agent.new{name = "napper", model = m, tools = {nap}, max_turns = 5}
local r = a:run("Take a nap, then another.")
print("STOPPED: " .. r.stopped_by)

-- Strict options (luagent.options): every options table a recipe passes is
-- checked against its declaration in lua/meta, and a key it does not
-- declare (a typo) is refused before anything starts, with a "did you mean"
-- and the known keys, in words for people (no traceback, no library path).
local t = require "helper"
local agent, model, sandbox, tools = luagent.agent, luagent.model, luagent.sandbox, luagent.tools
local options = require "luagent.options"

local SCRIPTED = model.scripted(function() return {text = "done"} end)

local function refused(fn, pattern)
  local ok, err = pcall(fn)
  t.eq(ok, false, "refused: " .. pattern)
  t.eq(type(err) == "table" and err.kind, "config", "an error value of kind config: " .. tostring(err))
  t.match(err.message, pattern)
  t.for_people(err)
  return err
end

t.test("agent.new: instruction and max_turn are typos, each with a did-you-mean (they ran with defaults)", function()
  local err = refused(function() agent.new{model = SCRIPTED, instruction = "Be brief."} end,
    "^agent%.new: 'instruction' is not an option %(did you mean 'instructions'%?%); the options are: ")
  t.match(err.message, "budget, .*instructions, .*max_turns", "the known options, listed")
  refused(function() agent.new{model = SCRIPTED, max_turn = 3} end, "'max_turn' is not an option %(did you mean 'max_turns'%?%)")
  t.ok(agent.new{model = SCRIPTED, instructions = "Be brief.", max_turns = 3, skills = {}}, "the declared ones pass")
end)

t.test("sandbox.open{memroy = ...} is refused before any container is made", function()
  refused(function() sandbox.open{memroy = "768m"} end,
    "^sandbox%.open: 'memroy' is not an option %(did you mean 'memory'%?%)")
  refused(function() sandbox.open{memory = "768m", netwrok = true} end, "did you mean 'network'")
end)

t.test("tools.standard and the box's methods refuse unknown options too", function()
  local fake_box = {}
  refused(function() tools.standard(fake_box, {shel = "unified"}) end,
          "tools%.standard: 'shel' is not an option %(did you mean 'shell'%?%)")
  refused(function() tools.standard(fake_box, {timout = 5}) end, "did you mean 'timeout'")
end)

t.test("a provider typo: one error for people naming the providers, with auto, scripted and local servers", function()
  local m, err = model.from{provider = "opneai"}
  t.eq(m, nil)
  t.match(err.message, "model%.provider 'opneai' is not a provider %(did you mean 'openai'%?%)")
  t.match(err.message, "auto, openai, openai_responses, scripted", "every provider, auto and scripted too")
  t.match(err.message, "provider openai with %-%-set model%.base_url=", "what a local server takes")
  t.for_people(err)
  local ok, raised = pcall(model.from_or_scripted, {provider = "opneai"}, function() end)
  t.eq(ok, false); t.eq(raised.kind, "config", "raised as an error value (printed without a traceback)")
end)

t.test("the declarations are lua/meta's: one source", function()
  local _, set = options.fields("luagent.AgentSpec")
  for _, k in ipairs{"model", "instructions", "tools", "max_turns", "skills", "outputs", "approve"} do
    t.ok(set[k], "agent.new takes " .. k)
  end
  local _, spawn = options.fields("luagent.SpawnOptions")
  t.ok(spawn.tty and spawn.timeout and spawn.on_output, "a class has its parent's fields (SpawnOptions: ExecOptions)")
  t.eq(options.suggest("memroy", {"memory", "image"}), " (did you mean 'memory'?)")
  t.eq(options.suggest("zzzzzz", {"memory"}), "", "no suggestion for a word that is nothing like one")
end)

t.test("YAML: a mis-indented line is named, with 'check the indentation', and the recipe's line", function()
  local dir = assert(luagent.fs.temp_dir("luagent-yaml-indent"))
  local cases = {
    {"limits:\n  max_turns: 3\n   budget: 5\n  tool_timeout: 60\n", 3, "over-indented by one"},
    {"sandbox:\n  image: x\n memory: 1g\n  cpus: 1\n", 3, "under-indented by one"},
    {"model:\n  provider: openai\ninstructions: |\n  Be careful.\n    Indented more inside a block is fine.\n"
       .. "limits:\n  max_turns: 3\n      budget: 5\n", 8, "past a block scalar"},
  }
  for i, c in ipairs(cases) do
    local file = ("%s/c%d.yaml"):format(dir, i)
    assert(luagent.fs.write(file, c[1]))
    local ok, err = pcall(require("luagent.config").load, file)
    t.eq(ok, false, c[3])
    t.match(err.message, ("line %d looks mis%%-indented"):format(c[2]), c[3])
    t.match(err.message, "check the indentation", c[3])
    t.match(err.message, "options_spec%.lua:%d+", c[3] .. ": the recipe's line that read it, not the library's")
    t.for_people(err, c[3])
  end
end)

t.test("a tool handler's error says the recipe's file and line, even raised without one", function()
  local tool = {name = "lookup", description = "Look up.", parameters = {type = "object", properties = {}},
                handler = function() error("no such code", 0) end}
  local m = model.scripted(function(_, n)
    if n == 1 then return {tool_calls = {{name = "lookup", arguments = {}}}} end
    return {text = "done"}
  end)
  local r = agent.new{model = m, tools = {tool}}:run("Go.")
  local said
  for _, msg in ipairs(r.transcript) do if msg.role == "tool" then said = model.text_of(msg.content) end end
  t.match(said, "the tool lookup failed: tests/lua/options_spec%.lua:%d+: no such code")
end)

return t.done()

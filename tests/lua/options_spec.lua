-- Strict options (luagent.options): every options table a recipe passes is
-- checked against its declaration in lua/meta, and a key it does not
-- declare (a typo) is refused before anything starts, with a "did you mean"
-- and the known keys, in words for people (no traceback, no library path).
local t = require "helper"
local agent, model, sandbox, tools = luagent.agent, luagent.model, luagent.sandbox, luagent.tools
local options = require "luagent.options"

local SCRIPTED = model.scripted(function() return {text = "done"} end)

local refused = t.refused

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

-- ---- model constructors, outputs.collect, checks ----

local KEY = "sk-options-spec-key"

t.test("model.openai, openai_responses and anthropic refuse a typo, pointing at extra for the request's own fields",
       function()
  for _, name in ipairs{"openai", "openai_responses", "anthropic"} do
    local err = refused(function() model[name]{model = "m", api_key = KEY, temprature = 0} end,
      ("^model%%.%s: 'temprature' is not an option %%(did you mean 'temperature'%%?%%); the options are: "):format(
        name:gsub("_", "%%_")))
    t.match(err.message, "api_key, base_url, .*max_tokens, .*temperature", name .. ": the known options, listed")
    t.match(err.message, "extra = {", name .. ": where a field for the provider's request goes")
  end
  refused(function() model.openai{model = "m", api_key = KEY, max_token = 10} end, "did you mean 'max_tokens'")
  refused(function() model.anthropic{api_key = KEY, resoning = {budget_tokens = 1024}} end, "did you mean 'reasoning'")
end)

t.test("every option the model constructors read is declared, and extra reaches the request as it is", function()
  local m = model.openai{model = "m", api_key = KEY, base_url = "http://127.0.0.1:9/v1", timeout = 5,
    connect_timeout = 1, idle_timeout = 1, deadline = 5, retry = luagent.retry.exponential{attempts = 1},
    headers = {["X-Test"] = "1"}, extra = {seed = 7, top_k = 3}, prices = {m = {input = 1, output = 2}},
    temperature = 0, max_tokens = 10, max_tokens_field = "max_completion_tokens", reasoning = {effort = "low"},
    stream_usage = false, models = {m = {context_window = 1000}}, prompt_cache = false}
  t.ok(model.anthropic{model = "c", api_key = KEY, prompt_cache = false, reasoning = {budget_tokens = 1024}})
  t.ok(model.openai_responses{model = "r", api_key = KEY, reasoning = {effort = "low", summary = "auto"}})
  local sent
  local saved = model.use_transport(function(request)
    sent = luagent.json.decode(request.body)
    return {status = 200, headers = {["content-type"] = "application/json"}, body = luagent.json.encode{
      id = "x", object = "chat.completion", model = "m", created = 0,
      choices = {{index = 0, finish_reason = "stop", message = {role = "assistant", content = "ok"}}},
      usage = {prompt_tokens = 1, completion_tokens = 1, total_tokens = 2}}}
  end)
  local r, err = m:complete{messages = {{role = "user", content = "Hi"}}}
  model.use_transport(saved)
  t.ok(r, "an answer, not " .. tostring(err))
  t.eq(sent.seed, 7, "extra's fields are in the request body")
  t.eq(sent.top_k, 3)
end)

t.test("model.from: a typo of the YAML model section names the setting, with a did-you-mean, before any provider",
       function()
  local dir = assert(luagent.fs.temp_dir("luagent-model-typo"))
  local file = dir .. "/recipe.yaml"
  assert(luagent.fs.write(file, "model:\n  provider: openai\n  api_key: " .. KEY .. "\n  temprature: 0\n"))
  local cfg = require("luagent.config").load(file, nil, {})
  local m, err = model.from(cfg.model)
  t.eq(m, nil, "no model")
  t.eq(err.kind, "config")
  t.match(err.message, "^model%.temprature: not a setting of the model %(did you mean 'temperature'%?%); "
    .. "the model settings are: api_key, base_url, ")
  t.match(err.message, "provider, .*temperature", "provider is one of them (model.from's own)")
  t.match(err.message, "model%.extra", "where a field for the provider's request goes")
  t.for_people(err)
  -- provider auto with nothing in the environment: the typo, not "no model is configured"
  m, err = model.from{temprature = 0}
  t.eq(m, nil)
  t.match(err.message, "^model%.temprature: not a setting")
  m, err = model.from{provider = "openai", api_key = KEY, retry = {attemps = 2}}
  t.eq(m, nil)
  t.match(err.message, "^model%.retry%.attemps: not a setting of the retry policy %(did you mean 'attempts'%?%)")
  t.for_people(err)
  t.ok(model.from{provider = "openai", api_key = KEY, temperature = 0, retry = {attempts = 2, base = 0.1},
                  extra = {seed = 1}, models = {}, prices = {}}, "the declared settings pass")
end)

t.test("model.from_or_scripted raises the typo whatever the provider: it never falls back to the script over it",
       function()
  for _, provider in ipairs{"auto", "scripted", "openai"} do
    local called = false
    local ok, err = pcall(model.from_or_scripted, {provider = provider, api_key = KEY, temprature = 0},
                          function() called = true return SCRIPTED end)
    t.eq(ok, false, provider .. ": raised")
    t.eq(called, false, provider .. ": the script was not made")
    t.eq(type(err) == "table" and err.kind, "config", provider .. ": " .. tostring(err))
    t.match(err.message, "^model%.temprature: not a setting of the model %(did you mean 'temperature'%?%)")
    t.for_people(err)
  end
end)

t.test("model.scripted refuses a typo in its spec or its options", function()
  refused(function() model.scripted({{text = "hi"}}, {nmae = "demo"}) end,
          "^model%.scripted: 'nmae' is not an option %(did you mean 'name'%?%)")
  refused(function() model.scripted{replys = {{text = "hi"}}} end,
          "^model%.scripted: 'replys' is not an option %(did you mean 'replies'%?%)")
  local m = model.scripted({replies = {{text = "hi"}}, name = "demo"})
  t.eq(m.model, "demo")
  t.eq(model.scripted(function() return {text = "x"} end, {name = "fn"}).model, "fn")
  t.eq(assert(model.scripted{{text = "listed"}}:complete{messages = {{role = "user", content = "Hi"}}}).text, "listed")
end)

t.test("outputs.collect refuses an unknown option before touching the sandbox", function()
  local touched = false
  local box = setmetatable({}, {__index = function() touched = true end})
  refused(function() luagent.outputs.collect(box, "output", "/nonexistent/output", {requried = {"output/a.csv"}}) end,
          "^outputs%.collect: 'requried' is not an option %(did you mean 'required'%?%); the options are: quiet, "
          .. "required, run_id")
  t.eq(touched, false, "the box was not touched")
  refused(function() luagent.outputs.collect(box, "output", "/nonexistent/output", {quite = true}) end,
          "did you mean 'quiet'")
end)

t.test("checks.graded and checks.weighted refuse unknown options", function()
  local checks = require "luagent.checks"
  local run = {events = {}, status = "ok"}
  refused(function() checks.graded(run, {rubrik = "Is it right?"}) end,
          "^checks%.graded: 'rubrik' is not an option %(did you mean 'rubric'%?%); the options are: model, outputs, "
          .. "rubric, trajectory")
  refused(function() checks.graded(run, {rubric = "Is it right?", model = {temprature = 0}}) end,
          "^checks%.graded: model: 'temprature' is not an option %(did you mean 'temperature'%?%)")
  refused(function() checks.weighted{{checks.pass(), 1}, pas = 0.5} end,
          "^checks%.weighted: 'pas' is not an option %(did you mean 'pass'%?%)")
  t.eq(checks.weighted{{checks.pass(), 1}, {checks.fail(), 1}, pass = 0.5}.passed, true, "pass is declared")
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


t.test("tools.standard: add takes built-in tools by name, drop leaves tools out; a wrong name gets a did-you-mean", function()
  local fake_box = {session = "x"}
  local function names(list)
    local out = {}
    for _, tool in ipairs(list) do out[#out + 1] = tool.name end
    return table.concat(out, ",")
  end
  t.eq(names(tools.standard(fake_box)), "run_python,run_shell,read_file,write_file,list_files,view_image")
  t.eq(names(tools.standard(fake_box, {add = {"apply_patch", "exec_command"}, drop = {"view_image"}})),
       "run_python,run_shell,read_file,write_file,list_files,apply_patch,exec_command,write_stdin",
       "exec_command comes with write_stdin; view_image is left out")
  t.eq(names(tools.standard(fake_box, {add = {"run_shell", "write_file"}})),
       "run_python,run_shell,read_file,write_file,list_files,view_image", "a tool the set has is not added twice")
  t.eq(names(tools.standard(fake_box, {add = {}, drop = {}})), names(tools.standard(fake_box)), "empty lists: the set")
  refused(function() tools.standard(fake_box, {add = {"apply_pach"}}) end,
          "^tools%.standard: add%[1%] 'apply_pach' is not a built%-in tool %(did you mean 'apply_patch'%?%); the names are ")
  refused(function() tools.standard(fake_box, {drop = {"view_imag"}}) end,
          "drop%[1%] 'view_imag' is not a tool of the set %(did you mean 'view_image'%?%)")
end)

return t.done()

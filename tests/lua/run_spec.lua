-- luagent.run: several recipe runs in one process, each with its own
-- settings, folder, trace, captured output, exit hooks, model transport and
-- result, while `luagent run` (the default run, this spec's own) stays as it was.
local t = require "helper"
local fake = require "fake_provider_client"
local run = require "luagent.run"
local sched = require "luagent.sched"
local events = require "luagent.events"
local fs, json, sys = luagent.fs, luagent.json, luagent.sys

local work = assert(fs.temp_dir("luagent-run-spec"))
luagent.at_exit(function() fs.remove(work) end)

-- A small recipe: its config merged with the run's settings, prints, events
-- of its own, a wait (so two runs interleave), an optional failure, and a
-- scripted agent whose answer names the run.
local RECIPE = [[
local cfg = luagent.config("recipe.yaml")
print("hello from", cfg.name, luagent.settings.name, ...)
io.write("written ", cfg.greeting, "\n")
luagent.events.emit{type = "mine", name = cfg.name, run_id = luagent.run_id()}
luagent.at_exit(function(status) luagent.events.emit{type = "hook", name = cfg.name, status = status} end)
luagent.sleep(cfg.delay or 0.05)
luagent.events.emit{type = "mine", name = cfg.name, run_id = luagent.run_id()}
if cfg.fail then error("failing on purpose: " .. cfg.name) end
local a = luagent.agent.new{name = "agent " .. cfg.name, instructions = "x",
                            model = luagent.model.scripted{{text = "answer " .. cfg.name}}}
print("done", a:run("task").output)
]]
assert(fs.write(work .. "/recipe.lua", RECIPE))
assert(fs.write(work .. "/recipe.yaml", "name: none\ngreeting: hi\ndelay: 0.05\nfail: false\n"))

local function new_run(name, settings, opts)
  local o = {recipe = work .. "/recipe.lua", settings = settings, dir = work .. "/runs/" .. name, quiet = true,
             capture = true}
  for k, v in pairs(opts or {}) do o[k] = v end
  return assert(run.new(o))
end

local function trace_events(path)
  local list = {}
  for line in assert(fs.read(path)):gmatch("[^\n]+") do list[#list + 1] = assert(json.decode(line)) end
  return list
end

-- Executes the runs at once, each from its own task, as luagent eval does.
local function execute_all(runs, ...)
  local tasks = {}
  for i, r in ipairs(runs) do tasks[i] = luagent.spawn(r.execute, r, ...) end
  local results, errors = luagent.wait_all(tasks)
  t.eq(errors, nil, "execute never raises for a recipe's failure")
  return results
end

-- ---- runs side by side ----

t.test("two runs at once, with different settings: their own settings, folders, traces, output and final", function()
  local a = new_run("A", {name = "A", delay = 0.15})
  local b = new_run("B", {name = "B", greeting = "hello"})
  local started = luagent.now()
  local ra, rb = table.unpack(execute_all({a, b}, "arg1"))
  t.lt(luagent.now() - started, 0.3, "the runs overlapped (0.15 s and 0.05 s waits)")
  for _, c in ipairs({{a, ra, "A", "hi"}, {b, rb, "B", "hello"}}) do
    local r, result, name, greeting = c[1], c[2], c[3], c[4]
    t.eq(result.status, "ok", name); t.eq(result.error, nil, name)
    t.eq(result.dir, work .. "/runs/" .. name)
    t.eq(result.trace, result.dir .. "/trace.jsonl")
    t.eq(r.settings.name, name)
    t.eq(fs.read(result.dir .. "/stdout.txt"),
         ("hello from\t%s\t%s\targ1\nwritten %s\ndone\tanswer %s\n"):format(name, name, greeting, name),
         name .. ": print and io.write of its recipe, captured")
    t.same(result.final, {output = "answer " .. name, stopped_by = "answer", turns = 1, cost = 0,
                          usage = result.final.usage}, name .. ": final")
    t.eq(result.stats.model_calls, 1); t.eq(result.stats.live_calls, 1); t.eq(result.stats.cached_calls, 0)
    local evs = trace_events(result.trace)
    t.eq(evs[1].type, "run_start"); t.eq(evs[#evs].type, "run_end"); t.eq(evs[#evs].status, "ok")
    t.eq(evs[1].run_id, r.id); t.eq(evs[1].settings.name, name); t.same(evs[1].args, {"arg1"})
    local mine, hooks, agents = 0, 0, 0
    for i, ev in ipairs(evs) do
      if i > 1 and i < #evs then t.ok(ev.type ~= "run_start" and ev.type ~= "run_end", "one run_start, one run_end") end
      if ev.type == "mine" then
        mine = mine + 1
        t.eq(ev.name, name, "only its own events"); t.eq(ev.run_id, r.id, "luagent.run_id() inside the run")
      elseif ev.type == "hook" then
        hooks = hooks + 1
        t.eq(ev.name, name); t.eq(ev.status, "ok"); t.eq(evs[i + 1].type, "run_end", "its exit hooks, then run_end")
      elseif ev.type == "agent_end" then
        agents = agents + 1
        t.eq(ev.output, "answer " .. name)
      end
    end
    t.eq(mine, 2, name .. ": its two events"); t.eq(hooks, 1, name .. ": its exit hook"); t.eq(agents, 1)
  end
  t.ok(a.id ~= b.id, "two ids")
  t.eq(luagent.settings.name, nil, "the default run's settings are untouched")
  t.ok(run.current() ~= a and run.current() ~= b, "outside them, the default run")
end)

t.test("a run that fails does not fail the other; its result says why", function()
  local ok_run = new_run("ok", {name = "fine", delay = 0.1})
  local bad_run = new_run("bad", {name = "broken", fail = true})
  local rok, rbad = table.unpack(execute_all({ok_run, bad_run}))
  t.eq(rok.status, "ok"); t.eq(rok.final.output, "answer fine")
  t.eq(rbad.status, "failed")
  t.eq(rbad.error.kind, "error"); t.match(rbad.error.message, "recipe%.lua:8: failing on purpose: broken")
  t.match(rbad.traceback, "recipe%.lua:8")
  t.eq(rbad.final, nil, "no agent finished")
  local evs = trace_events(rbad.trace)
  t.eq(evs[#evs].type, "run_end"); t.eq(evs[#evs].status, "failed"); t.match(evs[#evs].error, "failing on purpose")
  t.eq(evs[#evs - 1].type, "hook"); t.eq(evs[#evs - 1].status, "failed", "the hooks hear how it ended")
end)

t.test("a recipe's returned exit status decides its run's status, as under luagent run", function()
  assert(fs.write(work .. "/returns.lua", "luagent.run_dir(); return ...\n"))
  local function status_of(...)
    local r = assert(run.new{recipe = work .. "/returns.lua", dir = work .. "/runs/returns-" .. select("#", ...) ..
                              tostring((...)), quiet = true, capture = true})
    return r:execute(...)
  end
  local res = status_of(1)
  t.eq(res.status, "failed", "return 1 is a failure")
  t.eq(res.error.exit_status, 1); t.match(res.error.message, "exit status 1")
  t.eq(status_of(0).status, "ok", "return 0 is success")
  t.eq(status_of("text").status, "ok", "a value that is not an exit status is no failure")
  t.eq(status_of().status, "ok", "no return value")
end)

t.test("the scripted-driver notice goes to a captured run's stdout.txt, like the recipe's own print", function()
  assert(fs.write(work .. "/notice.lua", [[
local m = luagent.model.from_or_scripted({provider = "scripted"}, function() return luagent.model.scripted{} end)
print("model:", m.provider)
]]))
  local r = assert(run.new{recipe = work .. "/notice.lua", dir = work .. "/runs/notice", quiet = true, capture = true})
  local res = r:execute()
  t.eq(res.status, "ok")
  local out = assert(fs.read(res.dir .. "/stdout.txt"))
  t.match(out, "^SCRIPTED RUN: no model is configured %(model.provider is scripted%)%.\n", "the notice, first")
  t.match(out, "\nmodel:\tscripted\n$", "then the recipe's own line")
end)

t.test("two runs of one recipe at once keep their globals apart", function()
  assert(fs.write(work .. "/globals.lua", [[
NAME = ...
seen = (seen or 0) + 1
luagent.sleep(0.05)
print(NAME, seen, _G.NAME)
]]))
  local a = new_run("ga", nil, {recipe = work .. "/globals.lua"})
  local b = new_run("gb", nil, {recipe = work .. "/globals.lua"})
  execute_all({a, b}, "first")
  t.eq(fs.read(work .. "/runs/ga/stdout.txt"), "first\t1\tfirst\n")
  t.eq(fs.read(work .. "/runs/gb/stdout.txt"), "first\t1\tfirst\n")
  t.eq(rawget(_G, "NAME"), nil, "nothing leaks into the process's globals")
end)

t.test("luagent.config merges the run's settings over the YAML, nested keys too", function()
  assert(fs.write(work .. "/nested.yaml", "model: {name: base, temperature: 0.5}\nkeep: 1\n"))
  assert(fs.write(work .. "/nested.lua", [[
local cfg = luagent.config("nested.yaml")
return cfg
]]))
  local r = assert(run.new{recipe = work .. "/nested.lua", settings = {model = {name = "variant"}}, dir = work .. "/runs/n"})
  local result = r:execute()
  t.eq(result.status, "ok")
  t.eq(result.trace, nil, "a run that emits nothing writes no trace")
  t.eq(fs.exists(work .. "/runs/n/stdout.txt"), false, "nothing captured without capture = true")
  -- the recipe's return value is not the result; read the config through a second run that prints it
  assert(fs.write(work .. "/nested_print.lua", [[
local cfg = luagent.config("nested.yaml")
print(cfg.model.name, cfg.model.temperature, cfg.keep, luagent.recipe_dir == ]] .. ("%q"):format(work) .. [[)
]]))
  local p = assert(run.new{recipe = work .. "/nested_print.lua", settings = {model = {name = "variant"}},
                           dir = work .. "/runs/np", capture = true})
  t.eq(p:execute().status, "ok")
  t.eq(fs.read(work .. "/runs/np/stdout.txt"), "variant\t0.5\t1\ttrue\n")
end)

t.test("each run's model calls go through its own transport", function()
  local http = luagent.http
  local queues, served = {A = fake.queue("run-a"), B = fake.queue("run-b")}, {A = 0, B = 0}
  for name, q in pairs(queues) do
    fake.script(q, {{text = "reply via " .. name}})
  end
  -- both recipes name the same base URL; each run's transport sends its calls to its own queue
  local function transport_of(name)
    return function(request)
      served[name] = served[name] + 1
      request.url = request.url:gsub("/q/unrouted/", "/q/" .. queues[name] .. "/")
      return http.request(request)
    end
  end
  assert(fs.write(work .. "/model.lua", [[
local m = luagent.model.openai{model = "gpt-4o-mini", base_url = ]] .. ("%q"):format(fake.base_url("unrouted")) .. [[,
                               api_key = "sk-not-a-real-key", retry = luagent.retry.none}
local a = luagent.agent.new{name = "asker", instructions = "Answer.", model = m}
a:run("Which transport?")
]]))
  local a = assert(run.new{recipe = work .. "/model.lua", dir = work .. "/runs/ma", quiet = true,
                           transport = transport_of("A")})
  local b = assert(run.new{recipe = work .. "/model.lua", dir = work .. "/runs/mb", quiet = true,
                           transport = transport_of("B")})
  local ra, rb = table.unpack(execute_all({a, b}))
  t.eq(ra.status, "ok"); t.eq(rb.status, "ok")
  t.eq(ra.final.output, "reply via A"); t.eq(rb.final.output, "reply via B")
  t.eq(served.A, 1); t.eq(served.B, 1)
  t.eq(#fake.requests(queues.A), 1); t.eq(#fake.requests(queues.B), 1)
  t.eq(a.transport ~= b.transport, true)
end)

t.test("the default run's transport is HTTP, and model.use_transport puts another in its place", function()
  local model = luagent.model
  t.eq(run.current().transport, nil, "none chosen: its calls go over HTTP")
  local q = fake.queue("default")
  fake.script(q, {{text = "through the transport put in place"}})
  local calls, saved = 0, nil
  saved = model.use_transport(function(request) calls = calls + 1 return saved(request) end)
  t.eq(saved, luagent.http.request, "it returns the one it replaces")
  local ok, result = pcall(function()
    local m = model.openai{model = "gpt-4o-mini", base_url = fake.base_url(q), api_key = "sk-x", retry = luagent.retry.none}
    return m:complete{messages = {{role = "user", content = "hi"}}}
  end)
  model.use_transport(saved)
  t.ok(ok, tostring(result))
  t.eq(result.text, "through the transport put in place"); t.eq(calls, 1)
  t.raises(function() model.use_transport("http") end, "model.use_transport: a function")
end)

t.test("the stubs luagent.run loads its later methods through name every one of them", function()
  local names = {}
  for _, name in ipairs(run.LATER) do names[name] = true end
  for name in pairs(require("luagent.run.methods").methods) do
    t.ok(names[name], "luagent.run.methods has " .. name .. ", which run.LATER does not name")
  end
  for name in pairs(names) do
    t.eq(type(require("luagent.run.methods").methods[name]), "function", name .. " in run.LATER is a method")
  end
end)

-- ---- what a run counts and hears ----

t.test("stats count model responses, cached ones apart; final is the last agent's", function()
  local r = assert(run.new{recipe = work .. "/recipe.lua", dir = work .. "/runs/stats", quiet = true})
  r:emit{type = "model_response", cost = 0.25, usage = {input_tokens = 100, output_tokens = 10}}
  r:emit{type = "model_response", cached = true, cost = 0, saved_cost = 0.5,
         usage = {input_tokens = 200, output_tokens = 20}}
  r:emit{type = "agent_end", output = "first", stopped_by = "answer", turns = 2, cost = 0.25, usage = {}}
  r:emit{type = "agent_end", output = "second", stopped_by = "max_turns", turns = 5, cost = 0.5, usage = {}}
  t.same(r.stats, {model_calls = 2, cached_calls = 1, live_calls = 1, saved_cost = 0.5, cost = 0.25,
                   input_tokens = 300, output_tokens = 30})
  t.same(r.final, {output = "second", stopped_by = "max_turns", turns = 5, cost = 0.5, usage = {}})
  r:_end("ok")
end)

t.test("a subscriber made inside a run hears only that run; a process-wide one hears every run, with it", function()
  assert(fs.write(work .. "/listen.lua", [[
local heard = {}
luagent.events.subscribe(function(ev) if ev.type == "ping" then heard[#heard + 1] = ev.from end end)
luagent.events.emit{type = "ping", from = ...}
luagent.sleep(0.05)
print(table.concat(heard, ","))
]]))
  local seen = {}
  local sub = events.subscribe(function(ev, r)
    if ev.type == "ping" then seen[#seen + 1] = ev.from .. "@" .. r.id end
  end)
  local a = new_run("la", nil, {recipe = work .. "/listen.lua", id = "la"})
  local b = new_run("lb", nil, {recipe = work .. "/listen.lua", id = "lb"})
  execute_all({a, b}, "x")
  events.unsubscribe(sub)
  table.sort(seen)
  t.same(seen, {"x@la", "x@lb"})
  t.eq(fs.read(work .. "/runs/la/stdout.txt"), "x\n", "its own ping only")
  t.eq(fs.read(work .. "/runs/lb/stdout.txt"), "x\n")
  t.eq(#a.subscribers, 2, "the trace and the recipe's subscriber, kept in the run")
end)

-- ---- the edges ----

t.test("a caller cancelled while its run goes on waits for the run's end, then raises", function()
  assert(fs.write(work .. "/slow.lua", [[
luagent.at_exit(function() print("hook ran") end)
luagent.sleep(0.2)
print("recipe ended")
]]))
  local r = new_run("slow", nil, {recipe = work .. "/slow.lua"})
  local caller = luagent.spawn(r.execute, r)
  luagent.sleep(0.05)
  caller:cancel()
  local value, err = caller:wait()
  t.eq(value, nil); t.eq(err.kind, "cancelled")
  t.eq(r.result.status, "ok", "the run itself went on to its end")
  t.eq(fs.read(work .. "/runs/slow/stdout.txt"), "recipe ended\nhook ran\n")
end)

t.test("misuse raises naming the option; a recipe that cannot load is a failed result naming it", function()
  t.raises(function() run.new{} end, "recipe")
  t.raises(function() run.new{recipe = "x.lua", settings = "a=1"} end, "settings")
  t.raises(function() run.new{recipe = "x.lua", transport = 3} end, "transport")
  local r = assert(run.new{recipe = work .. "/does-not-exist.lua", dir = work .. "/runs/missing"})
  local result = r:execute()
  t.eq(result.status, "failed"); t.eq(result.error.kind, "config")
  t.match(result.error.message, "does%-not%-exist%.lua")
  t.raises(function() r:execute() end, "already executed")
  local bad, err = run.new{recipe = work .. "/recipe.lua", replay = work .. "/no-recording.jsonl"}
  t.eq(bad, nil); t.eq(err.kind, "config"); t.match(err.message, "no%-recording%.jsonl")
end)

t.test("captured output stays off the terminal (a separate luagent process)", function()
  assert(fs.write(work .. "/driver.lua", ([[
local run = require "luagent.run"
local r = assert(run.new{recipe = %q, settings = {name = "child"}, dir = %q, quiet = true, capture = true})
print("result " .. r:execute().status)
]]):format(work .. "/recipe.lua", work .. "/runs/child")))
  local code, out = sys.execute({t.env("LUAGENT"), "run", work .. "/driver.lua"})
  t.eq(code, 0, out)
  t.eq(out, "result ok\n", "the terminal gets the driver's print only")
  t.match(fs.read(work .. "/runs/child/stdout.txt"), "^hello from\tchild")
end)

t.test("the default run: this spec's own settings, id and folder, outside any task's run", function()
  local r = run.current()
  t.eq(sched.context(), nil)
  t.eq(r.recipe, luagent.recipe); t.eq(r.settings, luagent.settings)
  t.eq(luagent.run_id(), r.id); t.eq(luagent.trace.run_id(), r.id)
  t.eq(luagent.run_dir(), run.runs_root() .. "/" .. r.id)
  t.eq(luagent.spawn(function() return run.current() end):wait(), r, "its tasks are in it too")
end)

t.test("luagent.context answers as run.current: a run's tasks get their run; elsewhere the default run", function()
  local context = require "luagent.context"
  t.eq(run.current, context.current, "one function")
  t.eq(context.current(), run.current()); t.eq(context.default(), run.current())
  t.eq(context.runs_root(), run.runs_root())
  local r = new_run("context", {name = "context"})
  local seen = sched.spawn_in(r, function()
    return luagent.spawn(function() return context.current() end):wait()
  end):wait()
  t.eq(seen, r, "a task spawned by a run's task is in that run")
  t.eq(sched.spawn_in({}, context.current):wait(), context.default(), "a context that is not a run is no run")
end)

t.test("a replayed run reads its recording once: the replayer, the provider and the approvals share it", function()
  local recording = require "luagent.model.recording"
  local path = work .. "/once.jsonl"
  assert(fs.write(path, table.concat({
    json.encode{luagent_recording = 1, version = "test", recipe = "once"},
    json.encode{endpoint = "/completions", body = {model = "m"}, response = {status = 200, headers = {}, body = "{}"}},
    json.encode{approval = {tool = "shell", arguments = {command = "ls"}, decision = "approved", by = "person"}},
  }, "\n") .. "\n"))
  assert(fs.write(work .. "/once.lua", [[
local model = luagent.model
local shell = {name = "shell", description = "d", needs_approval = true,
  parameters = {type = "object", properties = {command = {type = "string"}}},
  handler = function(args) return "ran " .. args.command end}
local m = model.scripted{{tool_calls = {{name = "shell", arguments = {command = "ls"}}}}, {text = "done"}}
local r = luagent.agent.new{name = "a", model = m, tools = {shell}}:run("go")
print(model.detect(), model.from{}.provider, r.output)
]]))
  local opens, loads = 0, 0
  local real_open, real_load = io.open, recording.load
  rawset(io, "open", function(p, ...) if p == path then opens = opens + 1 end return real_open(p, ...) end)
  recording.load = function(...) loads = loads + 1 return real_load(...) end
  local ok, result = pcall(function()
    return assert(run.new{recipe = work .. "/once.lua", replay = path, dir = work .. "/runs/once", quiet = true,
                          capture = true}):execute()
  end)
  rawset(io, "open", real_open)
  recording.load = real_load
  assert(ok, result)
  t.eq(result.status, "ok", result.error and result.error.message)
  t.eq(fs.read(work .. "/runs/once/stdout.txt"), "openai\topenai\tdone\n", "the provider is the recording's")
  local by
  for _, ev in ipairs(trace_events(result.trace)) do if ev.type == "approval" then by = ev.by end end
  t.eq(by, "replay", "the recorded decision answered")
  t.eq(loads, 1, "loaded once")
  t.eq(opens, 1, "the file is opened once (it was 4 times: the replayer, each detect, the approvals)")
end)

t.test("one rule for a run's end: a failing exit hook fails an ok run, and run_end says so as the exit status does", function()
  local HOOKED = [[
luagent.events.emit{type = "mine"}
luagent.at_exit(function() error("the hook broke", 0) end)
luagent.at_exit(function(status) print("the other hook ran: " .. status) end)
]]
  assert(fs.write(work .. "/hooked.lua", HOOKED))
  -- run.new
  local r = new_run("hooked", nil, {recipe = work .. "/hooked.lua"})
  local result = r:execute()
  t.eq(result.status, "failed"); t.match(result.error.message, "while finishing the run: the hook broke")
  local last = trace_events(result.trace)
  t.eq(last[#last].type, "run_end"); t.eq(last[#last].status, "failed")
  t.match(last[#last].error, "the hook broke")
  t.match(fs.read(work .. "/runs/hooked/stdout.txt"), "the other hook ran: ok")
  -- luagent run (the default run, ended by the host)
  local runs = work .. "/default-runs"
  local code, out = sys.execute({"sh", "-c", ("LUAGENT_RUNS_DIR=%q %q run -q %q"):format(runs, t.env("LUAGENT"),
    work .. "/hooked.lua")})
  t.eq(code, 1, out)
  t.match(out, "luagent: while finishing the run: the hook broke")
  local dirs = assert(fs.list(runs))
  t.eq(#dirs, 1)
  last = trace_events(runs .. "/" .. dirs[1] .. "/trace.jsonl")
  t.eq(last[#last].type, "run_end")
  t.eq(last[#last].status, "failed", "run_end agrees with exit status 1 (it said ok)")
  t.match(last[#last].error, "the hook broke")
end)

return t.done()

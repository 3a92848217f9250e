-- luagent.eval: the spec checked before anything runs (one error naming the
-- file, line and key), and the orchestrator driven by a fake run_job (the one
-- function that runs one run): order, concurrency, budget, checks, results.
local t = require "helper"
local fs, json = luagent.fs, luagent.json
local sched = require "luagent.sched"
local spec_mod = require "luagent.eval.spec"
local eval = require "luagent.eval"
local results = require "luagent.eval.results"
local view = require "luagent.eval.view"

local dir = assert(fs.temp_dir("eval-spec"))

local RECIPE_YAML = [[
model:
  provider: auto
  temperature: 0
  base_url:
limits:
  max_turns: 20
input:
instructions: Be careful.
outputs: [output/a.csv]
]]

assert(fs.write(dir .. "/recipe.lua", "return 0\n"))
assert(fs.write(dir .. "/recipe.yaml", RECIPE_YAML))
assert(fs.write(dir .. "/bare.lua", "return 0\n"))
assert(fs.write(dir .. "/check.lua", "return function(run) return {passed = true, score = 1} end\n"))
assert(fs.write(dir .. "/not_a_check.lua", "return 42\n"))
assert(fs.mkdir(dir .. "/data"))
for _, name in ipairs({"b.csv", "a.csv", "notes.txt"}) do assert(fs.write(dir .. "/data/" .. name, "x\n")) end

-- Writes a spec and loads it: spec | nil, err
local function load(text, opts)
  local path = dir .. "/spec.eval.yaml"
  assert(fs.write(path, text))
  return spec_mod.load(path, opts)
end

-- The error a spec gets; its message must be exactly `expected` (FILE stands for the spec's path).
local function refused(text, expected, opts)
  local s, err = load(text, opts)
  t.eq(s, nil, "the spec should be refused")
  t.eq(err.kind, "config")
  t.eq(err.usage, true)
  t.eq(err.message, (expected:gsub("FILE", dir .. "/spec.eval.yaml")))
  return err
end

-- ---- bad specs: one error, the file, the line, the key ----

t.test("an unknown key at the top names its line and the keys a spec has", function()
  local err = refused("recipe: recipe.lua\nepoch: 2\n",
    "FILE:2: epoch: unknown key (did you mean 'epochs'?); a spec has: budget, cache, check, concurrency, epochs, grader, "
    .. "inputs, name, recipe, variants")
  t.eq(err.line, 2); t.eq(err.key, "epoch"); t.eq(err.file, dir .. "/spec.eval.yaml")
end)

t.test("an unknown key inside budget and inside a glob input", function()
  refused("recipe: recipe.lua\nbudget:\n  tokens: 100\n  dollars: 1\n",
    "FILE:4: budget.dollars: unknown key; budget has: cost, tokens")
  refused("recipe: recipe.lua\ninputs:\n  - glob: data/*.csv\n    setting: input\n    seed: 3\n",
    "FILE:5: inputs[1].seed: unknown key; inputs[1] has: glob, setting")
end)

t.test("a missing recipe, a missing recipe key, a missing check, a check that is not a function", function()
  refused("name: x\nrecipe: nope.lua\n",
    "FILE:2: recipe: no such file: " .. dir .. "/nope.lua (paths are relative to the spec's folder)")
  refused("name: x\n", "FILE:1: recipe: missing: name the recipe file, e.g. recipe: energy_anomaly.lua")
  refused("recipe: recipe.lua\n\ncheck: checks/none.lua\n",
    "FILE:3: check: no such file: " .. dir .. "/checks/none.lua (paths are relative to the spec's folder)")
  refused("recipe: recipe.lua\ncheck: not_a_check.lua\n",
    "FILE:2: check: not_a_check.lua returned 42, not a function: end it with `return function(run) ... end`")
end)

t.test("a variant that sets a setting the recipe's YAML does not have", function()
  refused("recipe: recipe.lua\nvariants:\n  a: {}\n  b:\n    model.temprature: 0.5\n",
    "FILE:5: variants.b.model.temprature: not a setting of the recipe (recipe.yaml has model: base_url, provider, "
    .. "temperature) (did you mean 'temperature'?)")
  refused("recipe: recipe.lua\nvariants:\n  b:\n    limits:\n      max_turns: 3\n      budget: 9\n",
    "FILE:6: variants.b.limits.budget: not a setting of the recipe (recipe.yaml has limits: max_turns)")
  refused("recipe: recipe.lua\nvariants:\n  b:\n    temperature: 0.5\n",
    "FILE:4: variants.b.temperature: not a setting of the recipe (recipe.yaml has input, instructions, limits, "
    .. "model, outputs)")
  refused("recipe: bare.lua\nvariants:\n  b: {model: x}\n",
    "FILE:3: variants.b.model: not a setting of the recipe (the recipe has no bare.yaml beside it, so it has no "
    .. "settings to set)")
end)

t.test("an input that sets an unknown setting; a --set that does", function()
  refused("recipe: recipe.lua\ninputs:\n  - {input: data/a.csv}\n  - {inptu: data/b.csv}\n",
    "FILE:4: inputs[2].inptu: not a setting of the recipe (recipe.yaml has input, instructions, limits, model, "
    .. "outputs) (did you mean 'input'?)")
  refused("recipe: recipe.lua\n", "--set limits.max_turn=3: limits.max_turn: not a setting of the recipe "
    .. "(recipe.yaml has limits: max_turns) (did you mean 'max_turns'?)", {sets = {"limits.max_turn=3"}})
  refused("recipe: recipe.lua\ninputs:\n  - glob: data/*.csv\n    setting: data\n",
    "FILE:4: inputs[1].setting: data: not a setting of the recipe (recipe.yaml has input, instructions, limits, "
    .. "model, outputs)")
end)

-- A recipe whose model section is empty (any shape goes there) and one whose model section has a typo.
assert(fs.write(dir .. "/free.lua", "return 0\n"))
assert(fs.write(dir .. "/free.yaml", "model:\ninput:\n"))
assert(fs.write(dir .. "/typo.lua", "return 0\n"))
assert(fs.write(dir .. "/typo.yaml", "input:\nmodel:\n  provider: auto\n  temprature: 0\n"))

-- The one-line error of a model setting that is not one: `where` (the file and line), the key, the did-you-mean.
local function model_typo(err, where, key, hint)
  t.eq(err.kind, "config"); t.eq(err.usage, true)
  t.for_people(err)
  t.eq(err.message:find("\n"), nil, "one line")
  local head = ("%s: %s: not a setting of the model%s; the model settings are: "):format(where, key, hint)
  t.eq(err.message:sub(1, #head), head)
end

t.test("a typo in the recipe's own model section, or in a variant's model settings over it, is refused first", function()
  local _, err = load("recipe: typo.lua\n")
  model_typo(err, dir .. "/typo.yaml:4", "model.temprature", " (did you mean 'temperature'?)")
  t.eq(err.file, dir .. "/typo.yaml"); t.eq(err.line, 4); t.eq(err.key, "model.temprature")
  -- an empty model section takes any shape as settings; the model settings still have to be the model's
  _, err = load("recipe: free.lua\nvariants:\n  a: {}\n  b:\n    model.max_token: 9\n")
  model_typo(err, dir .. "/spec.eval.yaml:5", "variants.b.model.max_token", " (did you mean 'max_tokens'?)")
  _, err = load("recipe: free.lua\nvariants:\n  b:\n    model: {retry: {attempt: 2}}\n")
  local head = dir .. "/spec.eval.yaml:4: variants.b.model.retry.attempt: not a setting of the retry policy "
    .. "(did you mean 'attempts'?); the retry settings are: "
  t.eq(err.message:sub(1, #head), head)
  _, err = load("recipe: free.lua\n", {sets = {"model.temprature=1"}})
  model_typo(err, "--set model.temprature=1", "model.temprature", " (did you mean 'temperature'?)")
  t.ok(load("recipe: free.lua\nvariants:\n  b:\n    model: {temperature: 1, retry: {attempts: 2}}\n"))
end)

t.test("an empty input list, a glob that matches nothing, no variants", function()
  refused("recipe: recipe.lua\ninputs: []\n", "FILE:2: inputs: expected a list with at least one input, e.g. "
    .. "- {input: data/a.csv} or - {glob: 'data/*.csv', setting: input}; got an empty list")
  refused("recipe: recipe.lua\ninputs:\n", "FILE:2: inputs: expected a list with at least one input, e.g. "
    .. "- {input: data/a.csv} or - {glob: 'data/*.csv', setting: input}; got nothing")
  refused("recipe: recipe.lua\ninputs:\n  - glob: data/*.parquet\n    setting: input\n",
    "FILE:3: inputs[1].glob: 'data/*.parquet' matches no file in " .. dir)
  refused("recipe: recipe.lua\nvariants: {}\n",
    "FILE:2: variants: expected a map of name -> settings with at least one variant, got an empty map")
end)

t.test("values of the wrong type", function()
  refused("recipe: recipe.lua\nepochs: two\n", "FILE:2: epochs: expected a whole number >= 1, got 'two'")
  refused("recipe: recipe.lua\nconcurrency: 0\n", "FILE:2: concurrency: expected a whole number >= 1 or auto, got 0")
  refused("recipe: recipe.lua\nbudget:\n  cost: lots\n", "FILE:3: budget.cost: expected a number > 0, got 'lots'")
  refused("recipe: recipe.lua\ncache: maybe\n", "FILE:2: cache: expected true, false or refresh, got 'maybe'")
  refused("recipe: recipe.lua\nvariants: [a, b]\n",
    "FILE:2: variants: expected a map of name -> settings with at least one variant, got a list")
  refused("recipe: recipe.lua\nvariants:\n  a: hot\n",
    "FILE:3: variants.a: expected a map of settings (like --set, e.g. model.temperature: 0.5), got 'hot'")
  refused("recipe: recipe.lua\nvariants:\n  a:\n    model.temperature: hot\n",
    "FILE:4: variants.a.model.temperature: expected a number like the recipe's default (0), got a string")
  refused("recipe: recipe.lua\nvariants:\n  a:\n    model: gpt-4o\n",
    "FILE:4: variants.a.model: expected a map like the recipe's default (a map with base_url, provider, "
    .. "temperature), got a string")
  refused("recipe: recipe.lua\nvariants:\n  a:\n    model.provider:\n",
    "FILE:4: variants.a.model.provider: no value (null): give one, or leave the key out")
  refused("recipe: recipe.lua\ninputs:\n  - data/a.csv\n", "FILE:3: inputs[1]: expected a map like {input: a.csv} "
    .. "or {glob: 'data/*.csv', setting: input}, got 'data/a.csv'")
  refused("recipe: recipe.lua\nvariants:\n  'a b': {}\n",
    "FILE:3: variants.a b: a variant's name names its folder: use letters, digits, '_', '-' and '.' only")
end)

t.test("a spec that is not YAML, or missing, is refused with its file and line", function()
  local _, err = load("recipe: recipe.lua\nvariants: [a\n")
  t.eq(err.usage, true); t.match(err.message, "^" .. dir:gsub("%p", "%%%0") .. "/spec.eval.yaml:3:%d+: ")
  local _, err2 = spec_mod.load(dir .. "/none.eval.yaml")
  t.eq(err2.usage, true); t.match(err2.message, "none.eval.yaml")
end)

-- ---- a good spec ----

t.test("a good spec: variants in file order, inputs named by their files, dotted keys nest, --set on top", function()
  local s = assert(load([[
recipe: recipe.lua
check: check.lua
variants:
  zeta:
    model.temperature: 0.5
    model: {provider: openai}
  alpha: {}
  mid:
    limits: {max_turns: 3}
    model.base_url: http://localhost:1/v1
inputs:
  - glob: data/*.csv
    setting: input
  - {input: data/notes.txt, instructions: Short.}
  - {instructions: No file.}
epochs: 2
budget: {tokens: 1000}
]], {sets = {"limits.max_turns=7"}, concurrency = 5}))
  t.eq(s.name, "spec")
  t.eq(s.recipe, dir .. "/recipe.lua")
  t.eq(s.check_file, dir .. "/check.lua"); t.eq(type(s.check), "function")
  t.eq(s.epochs, 2); t.eq(s.concurrency, 5); t.same(s.budget, {tokens = 1000}); t.eq(s.cache, "on")
  local names = {}
  for i, v in ipairs(s.variants) do names[i] = v.name end
  t.same(names, {"zeta", "alpha", "mid"})
  t.same(s.variants[1].settings, {model = {temperature = 0.5, provider = "openai"}})
  t.same(s.variants[3].settings, {limits = {max_turns = 3}, model = {base_url = "http://localhost:1/v1"}})
  local inputs = {}
  for i, input in ipairs(s.inputs) do inputs[i] = input.name end
  t.same(inputs, {"a", "b", "notes", "input-4"})
  t.same(s.inputs[1].settings, {input = dir .. "/data/a.csv"})
  t.same(s.inputs[3].settings, {input = dir .. "/data/notes.txt", instructions = "Short."})
  t.same(s.sets, {limits = {max_turns = 7}})
  local jobs = eval.plan(s, "/E")
  t.eq(#jobs, 3 * 4 * 2)
  t.same(jobs[6].settings, {limits = {max_turns = 7}, model = {base_url = "http://localhost:1/v1"},
                            input = dir .. "/data/b.csv"}, "variant, then input, then --set on top")
  t.eq(jobs[6].dir, "/E/runs/mid/b/1"); t.eq(jobs[6].run_dir, "runs/mid/b/1")
end)

t.test("an input is named by its file or folder, else by its input setting's file name; names made unique", function()
  local s = assert(load([[
recipe: recipe.lua
inputs:
  - input: data/
  - input: logs/app.log
  - input: other/app.log
  - {input: data/a.csv, instructions: Short.}
  - {instructions: No file.}
]]))
  local names = {}
  for i, input in ipairs(s.inputs) do names[i] = input.name end
  t.same(names, {"data", "app", "app-3", "a", "input-5"})
  t.eq(s.inputs[1].settings.input, dir .. "/data/", "a folder beside the spec is given as its absolute path, as a file is")
  t.eq(s.inputs[2].settings.input, "logs/app.log", "a path that is not beside the spec is given as it is")
end)

t.test("variants keep the file's order on one line; without variants or inputs: one of each, named default", function()
  local flow = assert(load("recipe: recipe.lua\nvariants: {zz: {}, aa: {}, mm: {}}\n"))
  t.same({flow.variants[1].name, flow.variants[2].name, flow.variants[3].name}, {"zz", "aa", "mm"}, "on one line too")
  local s = assert(load("recipe: recipe.lua\ncache: false\n"))
  t.eq(#s.variants, 1); t.eq(s.variants[1].name, "default")
  t.eq(#s.inputs, 1); t.eq(s.inputs[1].name, "default")
  t.eq(s.cache, nil); t.eq(s.epochs, 1); t.eq(s.concurrency, 2)
  t.eq(assert(load("recipe: recipe.lua\ncache: refresh\n")).cache, "refresh")
end)

-- ---- the orchestrator, with a fake run_job ----

-- A spec for the orchestrator: 2 variants x 2 inputs x `epochs`.
local function two_by_two(extra)
  return assert(load("recipe: recipe.lua\nvariants:\n  v1: {}\n  v2: {model.temperature: 1}\n"
    .. "inputs:\n  - {input: data/a.csv}\n  - {input: data/b.csv}\n" .. (extra or "")))
end

-- A fake run_job: writes what a run writes, answers like luagent.run's run_job.
local function fake_run_job(log, opts)
  opts = opts or {}
  local running = 0
  log.max_running = 0
  return function(job)
    running = running + 1
    log.max_running = math.max(log.max_running, running)
    log[#log + 1] = ("%s/%s/%d"):format(job.variant, job.input, job.epoch)
    sched.sleep(opts.sleep or 0.01)
    running = running - 1
    assert(fs.mkdir(job.dir .. "/output"))
    assert(fs.write(job.dir .. "/output/a.csv", job.variant .. "\n"))
    assert(fs.write(job.dir .. "/manifest.json", json.encode({files = {{path = "output/a.csv", size = #job.variant + 1,
      sha256 = "abc"}}})))
    if opts.fail and opts.fail(job) then error("the recipe broke", 0) end
    local turns = job.variant == "v1" and 3 or 5
    return {status = "ok", dir = job.dir, trace = job.dir .. "/trace.jsonl",
            final = {output = "answer of " .. job.variant, stopped_by = "answer", turns = turns,
                     usage = {input_tokens = 90, output_tokens = 10}, cost = 0.01},
            stats = {model_calls = turns, cached_calls = 1, live_calls = turns - 1, saved_cost = 0.002,
                     cost = job.variant == "v1" and 0.01 or 0.03, input_tokens = 90, output_tokens = 10}}
  end
end

local function lines_of(path)
  local out = {}
  for line in assert(fs.read(path)):gmatch("[^\n]+") do out[#out + 1] = assert(json.decode(line)) end
  return out
end

-- What the eval says, but the scripted-driver notice (its own test below).
local function collect(said)
  return function(line) if not line:match("^SCRIPTED RUNS") then said[#said + 1] = line end end
end

local function quiet_run(s, run_job, said)
  return assert(eval.run(s, {run_job = run_job, quiet = true, evals_dir = dir .. "/evals", say = collect(said)}))
end

t.test("runs start epoch by epoch, input by input, variant by variant; one at a time with concurrency 1", function()
  local log, said = {}, {}
  local report = quiet_run(two_by_two("epochs: 2\nconcurrency: 1\n"), fake_run_job(log), said)
  t.same({table.unpack(log)}, {"v1/a/1", "v2/a/1", "v1/b/1", "v2/b/1", "v1/a/2", "v2/a/2", "v1/b/2", "v2/b/2"})
  t.eq(log.max_running, 1)
  t.eq(report.status, "ok"); t.eq(#report.records, 8)
  t.match(report.id, "^%d+%-%d+%-spec%-%x%x%x%x$")
end)

t.test("never more runs at once than the concurrency", function()
  local log, said = {}, {}
  quiet_run(two_by_two("epochs: 3\nconcurrency: 3\n"), fake_run_job(log, {sleep = 0.03}), said)
  t.eq(#log, 12); t.eq(log.max_running, 3)
end)

t.test("results.jsonl: one line per run with every field; final.json; summary.csv; check verdicts", function()
  local log, said = {}, {}
  local s = two_by_two()
  local seen
  s.check = function(run)
    seen = run
    if run.variant == "v2" and run.input == "b" then error("the check broke on b") end
    if run.variant == "v2" then return "yes" end
    return {passed = true, score = run.input == "a" and 1 or 0.5, note = "fine"}
  end
  local report = quiet_run(s, fake_run_job(log), said)
  local lines = lines_of(report.results)
  t.eq(#lines, 4)
  for _, line in ipairs(lines) do
    for _, field in ipairs(results.FIELDS) do t.ok(line[field] ~= nil, "field " .. field .. " present") end
  end
  local by = {}
  for _, l in ipairs(lines) do by[l.variant .. "/" .. l.input] = l end
  local a1 = by["v1/a"]
  t.eq(a1.epoch, 1); t.eq(a1.status, "ok"); t.eq(a1.passed, true); t.eq(a1.score, 1); t.eq(a1.note, "fine")
  t.eq(a1.stopped_by, "answer"); t.eq(a1.turns, 3); t.same(a1.usage, {input_tokens = 90, output_tokens = 10})
  t.eq(a1.cost, 0.01); t.eq(a1.cached_calls, 1); t.eq(a1.live_calls, 2); t.eq(a1.run_dir, "runs/v1/a/1")
  t.eq(a1.error, json.null); t.ok(a1.wall_s >= 0.01); t.eq(a1.skipped, false)
  t.eq(by["v2/b"].passed, false)
  t.match(by["v2/b"].error, "^check raised: .*eval_spec%.lua:%d+: the check broke on b$")
  t.eq(by["v2/a"].passed, false)
  t.match(by["v2/a"].error, "^check returned yes, not {passed = true|false")
  -- what the check saw
  t.eq(seen.dir, report.dir .. "/runs/" .. seen.variant .. "/" .. seen.input .. "/1")
  t.eq(seen.outputs["output/a.csv"].path, seen.dir .. "/output/a.csv")
  t.eq(seen.outputs["output/a.csv"].sha256, "abc")
  t.eq(seen.output, "answer of " .. seen.variant); t.eq(seen.trace, seen.dir .. "/trace.jsonl")
  t.eq(seen.settings.input, dir .. "/data/" .. seen.input .. ".csv"); t.eq(seen.stopped_by, "answer")
  local final = json.decode(assert(fs.read(report.dir .. "/runs/v1/b/1/final.json")))
  t.same(final, {output = "answer of v1", stopped_by = "answer", turns = 3, cost = 0.01,
                 usage = {input_tokens = 90, output_tokens = 10}})
  local csv = assert(fs.read(report.summary))
  local rows = {}
  for line in csv:gmatch("[^\n]+") do rows[#rows + 1] = line end
  t.eq(rows[1], "variant,runs,done,passed,skipped,interrupted,errors,pass_rate,mean_score,mean_turns,mean_tokens,"
    .. "mean_cost,mean_wall_s,total_tokens,total_cost,saved_cost,cached_calls,live_calls,graded,grading_cost,waiting")
  t.match(rows[2], "^v1,2,2,2,0,0,0,1,0.75,3,100,0.01,[%d.]+,200,0.02,0.004,2,4,0,,0$")
  t.match(rows[3], "^v2,2,2,0,0,0,2,0,,5,100,0.03,[%d.]+,200,0.06,0.004,2,8,0,,0$")
  t.eq(#rows, 3)
  local about = json.decode(assert(fs.read(report.dir .. "/eval.json")))
  t.eq(about.status, "ok"); t.eq(about.runs, 4); t.eq(about.variants[2].name, "v2")
  -- the page, from what the eval wrote
  t.eq(report.page, report.dir .. "/index.html")
  local page = assert(fs.read(report.page))
  t.match(page, "answer of v2"); t.match(page, "check raised: ")
end)

t.test("a run_job that raises is that run's failure; the eval goes on", function()
  local log, said = {}, {}
  local report = quiet_run(two_by_two(), fake_run_job(log, {fail = function(job) return job.input == "a" end}), said)
  t.eq(#report.records, 4)
  for _, r in ipairs(report.records) do
    if r.input == "a" then
      t.eq(r.status, "failed"); t.eq(r.passed, false); t.eq(r.error, "the recipe broke")
    else
      t.eq(r.status, "ok"); t.eq(r.passed, true)
    end
  end
end)

t.test("the budget stops runs from starting, says so, and marks the rest skipped", function()
  local log, said = {}, {}
  local report = quiet_run(two_by_two("epochs: 2\nconcurrency: 1\nbudget: {tokens: 250}\n"), fake_run_job(log), said)
  t.eq(#log, 3, "three runs of 100 tokens spend 250")
  t.eq(report.status, "budget")
  t.same(said, {"budget: the budget of 250 tokens is spent (300 used); 5 runs not started (skipped)"})
  local lines = lines_of(report.results)
  t.eq(#lines, 8)
  for i = 4, 8 do
    t.eq(lines[i].status, "skipped"); t.eq(lines[i].passed, false); t.eq(lines[i].error, json.null)
    t.eq(lines[i].skipped, "not started: the budget of 250 tokens is spent (300 used)")
  end
  local report2 = quiet_run(two_by_two("concurrency: 1\nbudget: {cost: 0.015}\n"), fake_run_job({}), said)
  t.eq(report2.records[3].status, "skipped", "v1 ($0.01) then v2 ($0.03) spend $0.015")
end)

t.test("an interrupted run (Ctrl-C) stops the eval from starting runs; what finished is kept", function()
  local log, said = {}, {}
  local run_job = fake_run_job(log)
  local n = 0
  local report = quiet_run(two_by_two("epochs: 2\nconcurrency: 1\n"), function(job)
    n = n + 1
    if n == 3 then error(luagent.errors.new("cancelled", "interrupted (Ctrl-C): the run is stopping"), 0) end
    return run_job(job)
  end, said)
  t.eq(report.status, "interrupted")
  t.eq(#report.records, 3)
  t.eq(report.records[3].status, "interrupted"); t.eq(report.records[3].passed, false)
  t.eq(#lines_of(report.results), 3)
  local about = json.decode(assert(fs.read(report.dir .. "/eval.json")))
  t.eq(about.status, "interrupted"); t.eq(about.finished, 2, "two runs finished, one was interrupted")
  -- a run that ended as the eval was interrupted (cancelled = true) keeps its result; nothing more starts
  n = 0
  report = quiet_run(two_by_two("concurrency: 1\n"), function(job)
    n = n + 1
    local r = run_job(job)
    if n == 2 then r.cancelled = true end
    return r
  end, said)
  t.eq(report.status, "interrupted"); t.eq(#report.records, 2); t.eq(report.records[2].status, "ok")
end)

t.test("a run that waits for a person's approval: marked waiting with what it waits for, listed apart, not failed",
  function()
  local said, checked = {}, 0
  local s = two_by_two("concurrency: 1\n")
  s.check = function() checked = checked + 1 return {passed = true, score = 1} end
  local run_job = fake_run_job({})
  local report = assert(eval.run(s, {evals_dir = dir .. "/evals", say = collect(said), run_job = function(job)
    local r = run_job(job)
    if job.variant ~= "v2" then return r end
    local waiting = {run_id = "run-" .. job.input, agent = "agent", turn = 1,
                     call = {id = "call_" .. job.input, tool = "write_note", arguments = {text = "hi"}}}
    -- luagent.run's result: status waiting (or failed: the error's kind says it), the error of kind waiting
    return {status = job.input == "a" and "waiting" or "failed", dir = job.dir, final = {}, stats = r.stats,
            error = luagent.errors.new("waiting", "the run waits for a person to approve write_note", {waiting = waiting})}
  end}))
  t.eq(report.waiting, 2); t.eq(checked, 2, "the check judges only the runs that ended")
  local by = {}
  for _, l in ipairs(lines_of(report.results)) do by[l.variant .. "/" .. l.input] = l end
  for _, input in ipairs({"a", "b"}) do
    local l = by["v2/" .. input]
    t.eq(l.status, "waiting"); t.eq(l.passed, json.null); t.eq(l.error, json.null)
    t.same(l.waiting, {run_id = "run-" .. input, agent = "agent", turn = 1,
                       call = {id = "call_" .. input, tool = "write_note", arguments = {text = "hi"}}})
  end
  t.eq(by["v1/a"].waiting, json.null)
  local rows = report.rows
  t.eq(rows[1].pass_rate, 1); t.eq(rows[2].waiting, 2); t.eq(rows[2].done, 0); t.eq(rows[2].pass_rate, nil)
  t.eq(rows[2].errors, 0, "a waiting run is no failure")
  t.match(said[3], "^%[2/4%] v2 / a #1: waiting for approval of write_note %(call call_a, turn 1 of agent%)")
  local about = json.decode(assert(fs.read(report.dir .. "/eval.json")))
  t.eq(about.finished, 2, "the waiting runs have not finished")
  t.match(assert(fs.read(report.summary)), "\nv2,2,0,0,0,0,0,[^\n]*,2\n")
  t.eq(view.waiting(report.records, {dir = "E", resume = "luagent eval s.yaml --resume ID"}), table.concat({
    "2 runs wait for an approval (not counted in the pass rates):",
    "  v2 / a #1: write_note (call call_a, turn 1 of agent): luagent approve E/runs/v2/a/1",
    "  v2 / b #1: write_note (call call_b, turn 1 of agent): luagent approve E/runs/v2/b/1",
    "approve each (or --deny CALL --why TEXT), then: luagent eval s.yaml --resume ID", ""}, "\n"))
  t.match(view.waiting({report.records[2]}, {dir = "E", resume = "R", decided = function() return "approved" end}),
    "^1 run waits for an approval %(not counted in the pass rates%):\n  v2 / a #1: write_note %(call call_a, turn 1 "
    .. "of agent%): approved; R goes on with it\n")
  t.eq(view.waiting({report.records[1]}, {dir = "E", resume = "R"}), nil, "none waits")
  t.match(assert(fs.read(report.page)), "waits for a person to approve write_note %(call call_a, turn 1 of agent%)")
  t.eq(require("luagent.eval.diff").verdict(report.records[2]), "waiting", "eval diff: neither passed nor failed")
end)

t.test("progress lines, one per finished run, unless quiet", function()
  local said = {}
  assert(eval.run(two_by_two("concurrency: 1\n"), {run_job = fake_run_job({}), evals_dir = dir .. "/evals",
                                                     say = collect(said)}))
  t.match(said[1], "^eval %d+%-%d+%-spec%-%x+: 4 runs %(2 variants x 2 inputs x 1 epoch%), 1 at a time; ")
  t.eq(#said, 5)
  t.match(said[2], "^%[1/4%] v1 / a #1: passed, 3 turns, 100 tokens, %$0%.0100, [%d.]+s, 1 cached %+ 2 live calls$")
  local one = {}
  assert(eval.run(assert(load("recipe: recipe.lua\n")), {run_job = fake_run_job({}), evals_dir = dir .. "/evals",
                                                         say = collect(one)}))
  t.match(one[1], ": 1 run %(1 variant x 1 input x 1 epoch%), 2 at a time; ", "one of each: no 's'")
end)

t.test("the scripted driver is said once when no model is configured for the variants", function()
  local s = two_by_two()
  local detected = require("luagent.model").detect()
  local names = eval.scripted_variants(s)
  if detected then t.same(names, {}) else t.same(names, {"v1", "v2"}) end
  s.variants[2].settings.model = {base_url = "http://localhost:1/v1"}
  t.same(eval.scripted_variants(s), detected and {} or {"v1"})
  s.variants[1].settings.model = {provider = "scripted"}
  t.same(eval.scripted_variants(s), {"v1"})
  local said = {}
  assert(eval.run(s, {run_job = fake_run_job({}), quiet = true, evals_dir = dir .. "/evals",
                      say = function(line) said[#said + 1] = line end}))
  t.same(said, {"SCRIPTED RUNS: no model is configured for v1: the recipe's scripted driver runs those."},
    "said once, before the runs")
  s.variants[2].settings.model.provider = "scripted"
  said = {}
  assert(eval.run(s, {run_job = fake_run_job({}), quiet = true, evals_dir = dir .. "/evals",
                      say = function(line) said[#said + 1] = line end}))
  t.same(said, {"SCRIPTED RUNS: no model is configured (no OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENAI_BASE_URL, "
    .. "no model.provider), so the recipe's scripted driver runs every run: it ignores the instructions and the "
    .. "task, so variants that differ only in their prompts run alike. Set a model to compare prompts."})
end)

t.test("the table: a row per variant, the best of each column marked (not when only one has a value)", function()
  local rows = {
    {variant = "short", runs = 6, done = 6, pass_rate = 5 / 6, mean_score = 0.71, mean_turns = 6.5,
     mean_tokens = 12300, mean_cost = 0.012, mean_wall_s = 41.2},
    {variant = "long", runs = 6, done = 4, pass_rate = 1, mean_score = nil, mean_turns = 5,
     mean_tokens = 15100, mean_cost = 0.012, mean_wall_s = 38},
  }
  t.eq(view.table(rows), table.concat({
    "variant  runs  pass   score   turns   tokens         $    wall",
    "short       6   83%   0.71    6.5   12.3k*  $0.0120   41.2s",
    "long      4/6  100%*     -    5.0*  15.1k   $0.0120   38.0s*",
    "* best in its column", ""}, "\n"))
  local one = view.table({rows[1]})
  t.no_match(one, "%*", "one variant: nothing to compare")
  rows[2].mean_wall_s = 41.24
  t.no_match(view.table(rows), "41%.2s%*", "values that show the same are not marked")
end)

-- ---- the energy recipe's check ----

t.test("the energy check: IoU of event 1's window with the truth; the report must name the dates", function()
  local root = (luagent.recipe or ""):match("^(.*)tests/lua/[^/]*$") or ""
  local check = dofile(root .. "recipes/energy_anomaly_check.lua")
  local run_dir = dir .. "/energy"
  assert(fs.mkdir(run_dir .. "/output"))
  assert(fs.write(dir .. "/energy/d.truth.json", json.encode({kind = "night_hvac", start = "2024-04-08 19:00",
                                                             ["end"] = "2024-04-11 18:00"})))
  local csv = "event_id,timestamp,energy_kwh\n1,2024-04-08 19:00:00,80\n1,2024-04-11 05:00:00,81\n"
    .. "2,2024-03-20 03:00:00,70\n2,2024-03-20 04:00:00,70\n"
  assert(fs.write(run_dir .. "/output/anomalies.csv", csv))
  assert(fs.write(run_dir .. "/output/report.md", "From 2024-04-08 19:00 to 2024-04-11 05:00."))
  local function run(outputs)
    return {dir = run_dir, settings = {input = dir .. "/energy/d.csv"}, outputs = outputs}
  end
  local both = {["output/anomalies.csv"] = {path = run_dir .. "/output/anomalies.csv"},
                ["output/report.md"] = {path = run_dir .. "/output/report.md"}}
  local v = check(run(both))
  t.eq(v.passed, true); t.eq(v.score, 59 / 72)
  t.eq(v.note, "IoU 0.82: found 2024-04-08 19:00 .. 2024-04-11 05:00, truth 2024-04-08 19:00 .. 2024-04-11 18:00 "
    .. "(night_hvac)")
  assert(fs.write(run_dir .. "/output/report.md", "It started on 2024-04-08."))
  v = check(run(both))
  t.eq(v.passed, false); t.match(v.note, "; report.md does not name the dates$")
  v = check(run({["output/report.md"] = both["output/report.md"]}))
  t.same(v, {passed = false, score = 0, note = "no output/anomalies.csv"})
  assert(fs.write(run_dir .. "/output/anomalies.csv", "timestamp,energy_kwh\n2024-05-01 00:00,3\n"))
  v = check(run(both))
  t.eq(v.passed, false); t.eq(v.score, 0, "no overlap")
  t.raises(function() check({dir = run_dir, settings = {}, outputs = both}) end, "the run has no input setting")
end)

fs.remove(dir)
return t.done()

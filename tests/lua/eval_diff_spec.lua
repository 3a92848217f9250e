-- luagent eval diff's comparison (luagent.eval.diff) and how it finds evals
-- (luagent.eval.folders), over eval folders written here in luagent.eval's
-- format: runs matched by variant, input and epoch; a flip is passed in one
-- and failed or errored in the other (a run that did not start is not one);
-- a resumed eval's latest line of a run counts; the figures count only the
-- runs both have; what changed is said, nothing when only timings moved.
-- tests/e2e/eval_diff_test.sh runs it end to end on real evals.
local t = require "helper"
local fs, json = luagent.fs, luagent.json
local diff = require "luagent.eval.diff"
local folders = require "luagent.eval.folders"

local root = assert(fs.temp_dir("luagent-eval-diff"))

-- An eval folder root/ID with eval.json (recipe) and results.jsonl (one line per run given).
local function make_eval(id, recipe, runs)
  local dir = root .. "/evals/" .. id
  assert(fs.mkdir(dir))
  local variants, inputs, seen = json.array{}, json.array{}, {}
  local lines = {}
  for _, r in ipairs(runs) do
    local v, i, passed = r[1], r[2], r[3]
    if not seen["v" .. v] then seen["v" .. v] = true; variants[#variants + 1] = {name = v, settings = {}} end
    if not seen["i" .. i] then seen["i" .. i] = true; inputs[#inputs + 1] = {name = i, settings = {}} end
    local rec = {variant = v, input = i, epoch = r.epoch or 1, status = r.status or "ok", passed = passed,
                 score = passed and 1 or 0, note = r.note or json.null, turns = r.turns or 2,
                 usage = {input_tokens = 100, output_tokens = 10}, cost = 0.001, wall_s = r.wall or 1.0,
                 run_dir = ("runs/%s/%s/%d"):format(v, i, r.epoch or 1), error = r.error or json.null,
                 skipped = r.skipped or false}
    lines[#lines + 1] = json.encode(rec)
  end
  assert(fs.write(dir .. "/results.jsonl", table.concat(lines, "\n") .. "\n"))
  assert(fs.write(dir .. "/eval.json", json.encode({id = id, recipe = recipe, variants = variants, inputs = inputs})))
  return dir
end

local function load(dir) return assert(diff.load(dir)) end

t.test("a flip each way is listed first, in the spec's order; the rest after; what changed is said", function()
  local a = make_eval("20260101-000000-x-aaaa", "/r.lua", {{"v1", "i1", false}, {"v1", "i2", true}, {"v2", "i1", true},
                                                           {"v2", "i2", true}})
  local b = make_eval("20260101-000100-x-bbbb", "/r.lua", {{"v2", "i2", true}, {"v2", "i1", false}, {"v1", "i2", true},
                                                           {"v1", "i1", true}})
  local cmp = diff.compare(load(a), load(b))
  t.eq(#cmp.flips, 2)
  t.same({cmp.flips[1].variant, cmp.flips[1].input, cmp.flips[1].from, cmp.flips[1].to}, {"v1", "i1", "failed", "passed"})
  t.same({cmp.flips[2].variant, cmp.flips[2].input, cmp.flips[2].from, cmp.flips[2].to}, {"v2", "i1", "passed", "failed"})
  t.same({cmp.rest[1].variant, cmp.rest[1].input, cmp.rest[2].variant, cmp.rest[2].input}, {"v1", "i2", "v2", "i2"})
  t.eq(cmp.recipes_differ, false)
  t.same(cmp.changes, {"2 runs flipped", "the pass rate of v1, v2"})
  t.eq(cmp.rows[1].a.pass_rate, 0.5)
  t.eq(cmp.rows[1].b.pass_rate, 1.0)
end)

t.test("the same verdicts with other timings: nothing changed (exit 0), the moves still measured", function()
  local a = make_eval("same-a", "/r.lua", {{"v1", "i1", true, wall = 1.0}, {"v1", "i2", false, wall = 1.0}})
  local b = make_eval("same-b", "/r.lua", {{"v1", "i1", true, wall = 3.0}, {"v1", "i2", false, wall = 3.0}})
  local cmp = diff.compare(load(a), load(b))
  t.same(cmp.changes, {})
  t.eq(#cmp.flips, 0)
  local wall = diff.METRICS[6]
  t.eq(wall.key, "mean_wall_s")
  t.same({diff.change(wall, cmp.rows[1].a.mean_wall_s, cmp.rows[1].b.mean_wall_s)}, {"+2.00 s (+200%)", "worse"})
  t.same({diff.change(diff.METRICS[1], 0.5, 0.75)}, {"+25 pts", "better"})
  t.same({diff.change(diff.METRICS[2], 0.5, 0.5)}, {"same", "same"})
  t.same({diff.change(diff.METRICS[3], nil, 2, "-")}, {"-"})
end)

t.test("an error against a pass is a flip; a run skipped (the budget) or interrupted is not", function()
  local a = make_eval("err-a", "/r.lua", {{"v", "i1", true}, {"v", "i2", true}, {"v", "i3", true}})
  local b = make_eval("err-b", "/r.lua", {{"v", "i1", false, status = "failed", error = "the run raised"},
                                          {"v", "i2", false, status = "skipped", skipped = "not started: budget"},
                                          {"v", "i3", false, status = "interrupted"}})
  local cmp = diff.compare(load(a), load(b))
  t.eq(#cmp.flips, 1)
  t.same({cmp.flips[1].input, cmp.flips[1].from, cmp.flips[1].to}, {"i1", "passed", "error"})
  t.same({cmp.rest[1].to, cmp.rest[2].to}, {"skipped", "interrupted"})
  t.eq(cmp.rows[1].b.checked, 1, "the runs that did not run are not counted in the pass rate")
end)

t.test("a resumed eval: the latest line of a run is the one compared", function()
  local a = make_eval("res-a", "/r.lua", {{"v", "i1", true}})
  local b = make_eval("res-b", "/r.lua", {{"v", "i1", false, status = "interrupted"}, {"v", "i1", true}})
  local eb = load(b)
  t.eq(#eb.records, 1)
  local cmp = diff.compare(load(a), eb)
  t.same(cmp.changes, {})
  t.eq(cmp.rest[1].to, "passed")
end)

t.test("other recipes, variants, inputs and epochs: said; the figures count the runs both have", function()
  local a = make_eval("rec-a", "/one.lua", {{"v", "i1", true}, {"v", "i2", false}, {"old", "i1", true}})
  local b = make_eval("rec-b", "/two.lua", {{"v", "i1", true}, {"v", "i3", true}, {"new", "i1", false},
                                            {"v", "i1", true, epoch = 2}})
  local cmp = diff.compare(load(a), load(b))
  t.eq(cmp.recipes_differ, true)
  t.same(cmp.only.variants, {a = {"old"}, b = {"new"}})
  t.same(cmp.only.inputs, {a = {"i2"}, b = {"i3"}})
  t.same(cmp.only.runs, {a = 2, b = 3})
  t.eq(cmp.matched, 1)
  t.eq(#cmp.rows, 1)
  t.same({cmp.rows[1].variant, cmp.rows[1].a.runs, cmp.rows[1].b.runs}, {"v", 1, 1})
  t.same(cmp.changes, {"variants in one eval only", "inputs in one eval only", "the recipe"})
end)

-- A run's trace in an eval folder: its agent's instructions and task, on a model ("scripted/..." or not).
local function write_trace(dir, run_dir, instructions, task, model_name)
  assert(fs.mkdir(dir .. "/" .. run_dir))
  assert(fs.write(dir .. "/" .. run_dir .. "/trace.jsonl", table.concat({
    json.encode{type = "run_start", t = 0, run_id = "r", recipe = "/r.lua", settings = {}},
    json.encode{type = "agent_start", t = 0.1, agent = "triage", model = model_name or "openai/gpt-4o-mini",
                instructions = instructions, task = task},
    json.encode{type = "run_end", t = 0.2, run_id = "r", status = "ok"}}, "\n") .. "\n"))
end

-- What `luagent eval diff A B -o PAGE` prints.
local function eval_diff_text(a, b, page)
  local out, real = {}, io.stdout
  io.stdout = {write = function(_, ...) for _, v in ipairs{...} do out[#out + 1] = v end end} -- luacheck: ignore 122
  local ok, status = pcall(require("luagent.cli.eval_diff").main, {a, b, "-o", page})
  io.stdout = real -- luacheck: ignore 122
  assert(ok, status)
  return table.concat(out)
end

t.test("prompts: each variant's instructions and task in A and B, word by word, when they differ", function()
  local a = make_eval("prompt-a", "/r.lua", {{"v1", "i1", true}, {"v1", "i2", true}, {"v2", "i1", true}})
  local b = make_eval("prompt-b", "/r.lua", {{"v1", "i1", true}, {"v1", "i2", true}, {"v2", "i1", true}})
  for _, input in ipairs{"i1", "i2"} do
    write_trace(a, "runs/v1/" .. input .. "/1", "Count the errors. Answer in one sentence.", "Triage " .. input .. ".")
    write_trace(b, "runs/v1/" .. input .. "/1", "Count the errors. Answer in two sentences.", "Triage " .. input .. ".")
  end
  write_trace(a, "runs/v2/i1/1", "Be brief.", "Triage i1.")
  write_trace(b, "runs/v2/i1/1", "Be brief.", "Triage i1.")
  local cmp = diff.compare(load(a), load(b))
  t.eq(#cmp.prompts, 1, "one variant's prompts differ")
  t.eq(cmp.prompts[1].variant, "v1")
  t.same(cmp.prompts[1].lines, {"  instructions of triage (words: [-A-] {+B+}):",
                                "    Count the errors. Answer in [-one sentence.-] {+two sentences.+}"},
         "the same edit for every input: said once")
  t.same(cmp.changes, {}, "the scores did not move: the evals are the same by their results")
  local text = eval_diff_text(a, b, root .. "/prompts.html")
  t.for_people(text)
  t.match(text, "prompts: 1 variant differs")
  t.match(text, "Answer in %[%-one sentence%.%-%] {%+two sentences%.%+}")
  t.match(text, "the evals are the same: no run flipped, the same pass rates; their prompts differ %(above%)")
  local page = assert(fs.read(root .. "/prompts.html"))
  t.match(page, '<section id="prompts">')
  t.match(page, '<span class="d%-del">%[%-one sentence%.%-%]</span> <span class="d%-add">{%+two sentences%.%+}</span>')
end)

t.test("prompts under the scripted driver: the edit is shown, and that the driver ignored it", function()
  local a = make_eval("scripted-a", "/r.lua", {{"v", "i", true}})
  local b = make_eval("scripted-b", "/r.lua", {{"v", "i", true}})
  write_trace(a, "runs/v/i/1", "Answer in one sentence.", "Go.", "scripted/scripted-triage")
  write_trace(b, "runs/v/i/1", "Answer in two sentences.", "Go.", "scripted/scripted-triage")
  local cmp = diff.compare(load(a), load(b))
  t.eq(cmp.prompts[1].scripted, true)
  local text = eval_diff_text(a, b, root .. "/scripted.html")
  t.match(text, "Answer in %[%-one sentence%.%-%] {%+two sentences%.%+}")
  t.match(text, "the scripted driver ran these runs: it ignores the prompts")
end)

t.test("finding an eval: a folder, an id, the start of an id; bad ones named (kind usage)", function()
  local dir = make_eval("20260202-101010-find-abcd", "/r.lua", {{"v", "i", true}})
  make_eval("20260202-101010-find-abce", "/r.lua", {{"v", "i", true}})
  local roots = {root .. "/nothing-here", root .. "/evals"}
  t.eq(folders.find(dir .. "/"), dir)
  t.eq(folders.find("20260202-101010-find-abcd", roots), dir)
  t.eq(folders.find("20260101-000000", roots), root .. "/evals/20260101-000000-x-aaaa")
  local _, err = folders.find("20260202-101010-find-abc", roots)
  t.eq(err.kind, "usage")
  t.match(err.message, "^'20260202%-101010%-find%-abc' is the start of 2 evals' ids")
  _, err = folders.find("nope", roots)
  t.eq(err.message, ("no eval 'nope' (looked in %s/nothing-here, %s/evals); give an eval id (a folder name under evals/) or an "
    .. "eval's folder"):format(root, root))
  _, err = folders.find(root)
  t.match(err.message, "is a folder without a results.jsonl, not an eval's folder")
  _, err = folders.find(dir .. "/results.jsonl")
  t.match(err.message, "results.jsonl is a file, not an eval's folder")
  _, err = folders.find(root .. "/gone/x")
  t.match(err.message, "gone/x: no such folder")
end)

t.test("evals whose lines hold the input's settings (as the eval page's fixture): matched by the input's label",
  function()
  local fixture = require "eval_fixture"
  local dirs = {}
  for i = 1, 2 do
    dirs[i] = root .. "/fixture-" .. i
    assert(fs.mkdir(dirs[i]))
    fixture.make(dirs[i])
  end
  local cmp = diff.compare(load(dirs[1]), load(dirs[2]))
  t.eq(cmp.matched, 12)
  t.same(cmp.only.inputs, {a = {}, b = {}})
  t.same(cmp.changes, {})
  t.eq(cmp.rest[1].input, "input=data/spike.csv")
end)

fs.remove(root)
return t.done()

-- luagent.checks: composition (all, any, weighted; lazy items), what bad
-- input gets (a path outside the run's outputs, a link out, a malformed
-- schema or pattern, an unreadable trace: that check fails naming it, the
-- eval goes on), and the model-graded check through luagent.eval against the
-- fake provider (a test double): its request checked by the fake, the answer
-- read, the cost kept apart, a cached rerun asking nothing, the marker in the
-- table and on the page. The helpers on real runs: tests/e2e/checks_test.sh.
local t = require "helper"
local fs, json = luagent.fs, luagent.json
local checks = require "luagent.checks"
local spec_mod = require "luagent.eval.spec"
local eval = require "luagent.eval"
local fake = require "fake_provider_client"

local root = assert(fs.temp_dir("luagent-checks"))

-- A run folder as luagent.eval gives it to a check: outputs (manifest.json),
-- a trace of `events`; returns the run table.
local function run_folder(name, opts)
  opts = opts or {}
  local dir = root .. "/" .. name
  assert(fs.mkdir(dir .. "/output"))
  local list, outputs = {}, {}
  for path, content in pairs(opts.files or {}) do
    assert(fs.write(dir .. "/" .. path, content))
    list[#list + 1] = {path = path, size = #content, sha256 = "x"}
    outputs[path] = {path = dir .. "/" .. path, size = #content, sha256 = "x"}
  end
  assert(fs.write(dir .. "/manifest.json", json.encode({files = json.array(list)})))
  local lines = {}
  for i, ev in ipairs(opts.events or {}) do lines[i] = json.encode(ev) end
  assert(fs.write(dir .. "/trace.jsonl", table.concat(lines, "\n") .. "\n"))
  return {dir = dir, trace = dir .. "/trace.jsonl", outputs = outputs, output = opts.output, settings = {},
          status = "ok"}
end

local EVENTS = {
  {type = "run_start"},
  {type = "agent_turn", turn = 1},
  {type = "tool_call", name = "read_file"},
  {type = "tool_call", name = "run_python"},
  {type = "sandbox_exec", kind = "python", command = "print(1)", exit_code = 0},
  {type = "model_response", cost = 0.002},
  {type = "agent_turn", turn = 2},
  {type = "run_end"},
}

t.test("all, any, weighted: passed, score and note from the parts", function()
  local yes, no = checks.pass("found it"), checks.fail("missing x", 0.5)
  local all = checks.all{yes, no}
  t.eq(all.passed, false); t.eq(all.score, 0.75); t.eq(all.note, "missing x")
  local both = checks.all{yes, checks.pass("also")}
  t.eq(both.passed, true); t.eq(both.score, 1); t.eq(both.note, "found it; also")
  local any = checks.any{no, yes}
  t.eq(any.passed, true); t.eq(any.score, 1); t.eq(any.note, "found it")
  local none = checks.any{no, checks.fail("nope")}
  t.eq(none.passed, false); t.eq(none.score, 0.5); t.eq(none.note, "none passed: missing x; nope")
  local w = checks.weighted{{yes, 3}, {no, 1}}
  t.eq(w.passed, false, "without pass =: every part must pass"); t.eq(w.score, 0.875)
  local w2 = checks.weighted{{yes, 3}, {no, 1}, pass = 0.8}
  t.eq(w2.passed, true); t.match(w2.note, "^score 0%.88 %(pass at 0%.80%): found it; missing x")
  -- they nest
  t.eq(checks.all{checks.any{no, yes}, checks.weighted{{yes, 1}}}.passed, true)
end)

t.test("a function item is called only when needed: all stops at a failure, any at a pass", function()
  local called = 0
  local function costly() called = called + 1; return checks.pass("asked") end
  local all = checks.all{checks.fail("cheap check failed"), costly}
  t.eq(called, 0); t.eq(all.passed, false); t.eq(all.score, 0, "the item not reached counts 0")
  t.eq(checks.any{checks.pass("cheap"), costly}.note, "cheap"); t.eq(called, 0)
  t.eq(checks.all{checks.pass("cheap"), costly}.note, "cheap; asked"); t.eq(called, 1)
end)

t.test("an item that is not a verdict fails naming it; a function that raises fails with its message", function()
  local v = checks.all{checks.pass("ok"), 42}
  t.eq(v.passed, false); t.eq(v.note, "checks.all: item 2 is 42, not a verdict {passed, score, note}")
  local r = checks.any{function() error("boom", 0) end}
  t.eq(r.passed, false); t.eq(r.note, "none passed: item 1 raised: boom")
  t.ok(not pcall(checks.all, {}), "an empty list is a mistake")
  t.ok(not pcall(checks.weighted, {{checks.pass("x")}}), "a weight is needed")
end)

t.test("the trajectory helpers read the run's trace once", function()
  local run = run_folder("traj", {events = EVENTS})
  t.eq(checks.used_tool(run, "run_python").note, "used run_python (1 call)")
  t.eq(checks.used_tool(run, "run_shell").note, "never used run_shell (tools used: read_file, run_python)")
  t.eq(checks.tool_order(run, {"read_file", "run_python"}).passed, true)
  local wrong = checks.tool_order(run, {"run_python", "read_file"})
  t.eq(wrong.passed, false); t.eq(wrong.score, 0.5)
  t.eq(wrong.note, "not run_python then read_file: no read_file after run_python (calls: read_file, run_python)")
  assert(fs.write(run.trace, "")) -- read already: the verdicts stay
  t.eq(checks.max_turns(run, 2).passed, true)
  t.eq(checks.max_turns(run, 1).note, "2 turns, more than 1")
end)

t.test("bad input: paths outside the run's outputs fail the check, naming the path", function()
  local run = run_folder("paths", {files = {["output/report.md"] = "# kWh\n"}, events = EVENTS})
  local v = checks.output_text(run, "../x", "kWh")
  t.eq(v.passed, false); t.eq(v.note, "'../x' leaves the run's outputs (..): name one of them (output/report.md)")
  t.eq(checks.output_text(run, "output/../../secret", "x").passed, false)
  t.eq(checks.output_text(run, "/etc/passwd", "root").note,
    "'/etc/passwd' is an absolute path: name one of the run's outputs (output/report.md)")
  t.eq(checks.output_text(run, "notes.md", "x").note, "no output 'notes.md' (the run's outputs: output/report.md)")
  t.eq(checks.output_text(run, "report.md", "kWh").passed, true, "inside output/ by its short name")
  -- a declared output that is a link out of the run's folder
  local linked = run_folder("link", {files = {["output/ok.txt"] = "x"}})
  os.remove(linked.dir .. "/output/ok.txt")
  assert(os.execute(("ln -s /etc/passwd '%s/output/ok.txt'"):format(linked.dir)))
  local out = checks.output_text(linked, "ok.txt", "root")
  t.eq(out.passed, false); t.eq(out.note, "output/ok.txt resolves outside the run's folder (/etc/passwd): not read")
  t.eq(checks.csv_columns(linked, "ok.txt", {"root"}).passed, false)
end)

t.test("bad input: a malformed schema, a malformed pattern, an unreadable trace fail the check", function()
  local run = run_folder("schema", {files = {["output/a.json"] = '{"n": 1}'}, output = '{"n": 1}'})
  local v = checks.output_json(run, "a.json", {type = "objekt"})
  t.eq(v.passed, false); t.match(v.note, "^the schema is malformed: schema%.type: \"objekt\" is not a JSON type")
  t.match(checks.answer_schema(run, {type = "object", propertes = {}}).note, "^the schema is malformed: .*propertes")
  t.eq(checks.answer_schema(run, "nope").note, "the schema is string, not a JSON Schema table")
  t.eq(checks.output_matches(run, "a.json", "[%d").passed, false)
  t.match(checks.output_matches(run, "a.json", "[%d").note, "^the pattern '%[%%d' is malformed: ")
  local gone = {dir = root .. "/none", trace = root .. "/none/trace.jsonl", outputs = {}}
  t.match(checks.used_tool(gone, "x").note, "^the run's trace cannot be read: ")
  t.eq(checks.used_tool(gone, "x").passed, false)
end)

t.test("misuse raises: no run, a name that is not text, an unknown failure kind", function()
  t.ok(not pcall(checks.used_tool, "run_python"))
  local run = run_folder("misuse", {events = EVENTS})
  t.ok(not pcall(checks.used_tool, run, 3))
  local ok, err = pcall(checks.no_failed_command, run, "crashed")
  t.ok(not ok); t.match(err, "kind must be one of error, timed_out, oom_killed, killed, exit")
  t.ok(not pcall(checks.graded, run, {}), "a graded check needs a rubric")
end)

-- ---- the model-graded check, through luagent.eval ----

local edir = root .. "/eval"
assert(fs.mkdir(edir))
assert(fs.write(edir .. "/recipe.lua", "return 0\n"))
assert(fs.write(edir .. "/recipe.yaml", "model:\n  provider: openai\n  model: gpt-4o-mini\n  api_key: sk-fake\n"
  .. "label: x\n"))
assert(fs.write(edir .. "/graded_check.lua", [[
local checks = require "luagent.checks"
return function(run)
  return checks.all{checks.output_text(run, "report.md", "kWh"), function() return checks.graded(run) end}
end
]]))

-- A run_job that writes a run's folder (answer, report.md) as luagent.run would.
local function run_job(job)
  assert(fs.mkdir(job.dir .. "/output"))
  local report = ("Report of %s: 42 kWh.\n"):format(job.variant)
  assert(fs.write(job.dir .. "/output/report.md", report))
  assert(fs.write(job.dir .. "/manifest.json", json.encode({files = {{path = "output/report.md", size = #report,
    sha256 = "x"}}})))
  assert(fs.write(job.dir .. "/trace.jsonl", json.encode({type = "run_start"}) .. "\n"))
  return {status = "ok", final = {output = "The total is 42 kWh (" .. job.variant .. ").", stopped_by = "answer",
          turns = 2}, stats = {cost = 0.01, input_tokens = 100, output_tokens = 10, live_calls = 2, cached_calls = 0}}
end

local function graded_eval(q)
  local path = edir .. "/g.eval.yaml"
  assert(fs.write(path, ([[
recipe: recipe.lua
check: graded_check.lua
variants:
  clear: {}
  terse: {label: y}
grader:
  model: {base_url: %s}
  rubric: The report states the total in kWh.
concurrency: 1
]]):format(fake.base_url(q, "openai"))))
  local s = assert(spec_mod.load(path))
  return assert(eval.run(s, {run_job = run_job, quiet = true, evals_dir = edir .. "/evals", say = function() end}))
end

local function results(report)
  local out = {}
  for line in assert(fs.read(report.results)):gmatch("[^\n]+") do out[#out + 1] = json.decode(line) end
  return out
end

t.test("a graded check asks the spec's grader, reads its answer, keeps its cost apart; a rerun asks nothing", function()
  local q = fake.queue("grader")
  fake.script(q, {
    {json = {passed = true, score = 0.9, note = "states 42 kWh"}, usage = {input_tokens = 1000, output_tokens = 20}},
    {json = {passed = false, score = 0.2, note = "too terse"}, usage = {input_tokens = 1000, output_tokens = 20}},
  })
  local report = graded_eval(q)
  local asked = fake.requests(q)
  t.eq(#asked, 2, "one grading request per run")
  for _, r in ipairs(asked) do t.eq(r.status or 200, 200, "the fake accepted the request") end
  local body = asked[1].body
  t.eq(body.model, "gpt-4o-mini", "the recipe's model, under the spec's base_url")
  t.eq(body.response_format.type, "json_schema")
  t.match(body.messages[2].content, "Rubric:\nThe report states the total in kWh%.")
  t.match(body.messages[2].content, "The total is 42 kWh %(clear%)")
  t.match(body.messages[2].content, "%-%-%- output/report%.md %(%d+ bytes%)\nReport of clear: 42 kWh%.")
  local lines = results(report)
  t.eq(lines[1].passed, true); t.eq(lines[1].score, 0.95); t.match(lines[1].note, "graded by openai/gpt%-4o%-mini: states")
  t.eq(lines[2].passed, false); t.match(lines[2].note, "too terse")
  for _, l in ipairs(lines) do
    t.eq(l.graded, true); t.ok(l.grading_cost > 0, "the grading has its cost"); t.eq(l.cost, 0.01, "the run's own")
    t.ok(fs.exists(report.dir .. "/" .. l.run_dir .. "/grading/trace.jsonl"), "the grading's trace")
  end
  t.match(report.table, "pass~ +score~ +turns")
  t.match(report.table, "~ model%-graded: a model judged 2 of 2 runs %(grading %$0%.%d+, not in the %$ column%)")
  local page = assert(fs.read(report.page))
  t.match(page, 'pass rate <span class="graded" title="model%-graded: a model judged runs">◆</span>')
  t.match(page, 'id="graded%-legend"><span class="graded">◆</span> model%-graded: a model judged 2 of 2 runs')
  t.match(page, "model%-graded ◆</span> <b>clear</b>")
  -- again: the cache answers, the fake sees nothing new, the verdicts are the same
  local again = graded_eval(q)
  t.eq(#fake.requests(q), 2, "a cached rerun makes no grading request")
  local lines2 = results(again)
  t.eq(lines2[1].passed, true); t.eq(lines2[2].passed, false); t.eq(lines2[1].grading_cost, 0)
  t.eq(lines2[1].graded, true)
end)

t.test("a spec with only a rubric grades every run; a bad grader is refused before anything runs", function()
  local q = fake.queue("rubric")
  fake.script(q, {{json = {passed = true, score = 1, note = "fine"}}})
  local path = edir .. "/r.eval.yaml"
  assert(fs.write(path, ("recipe: recipe.lua\ngrader:\n  model: {base_url: %s}\n  rubric: Says kWh.\ncache: false\n")
    :format(fake.base_url(q, "openai"))))
  local s = assert(spec_mod.load(path))
  local report = assert(eval.run(s, {run_job = run_job, quiet = true, evals_dir = edir .. "/evals", say = function() end}))
  local lines = results(report)
  t.eq(#lines, 1); t.eq(lines[1].passed, true); t.eq(lines[1].graded, true)
  t.eq(#fake.requests(q), 1)
  assert(fs.write(path, "recipe: recipe.lua\ngrader:\n  model: {provider: nope}\n"))
  local _, err = spec_mod.load(path)
  t.match(err.message, "^" .. path:gsub("%p", "%%%0") .. ":3: grader.model: model.provider 'nope' is not a provider")
  assert(fs.write(path, "recipe: recipe.lua\ngrader:\n  rubrik: x\n"))
  _, err = spec_mod.load(path)
  t.eq(err.message, path .. ":3: grader.rubrik: unknown key (did you mean 'rubric'?); grader has: model, rubric")
end)

t.test("a grader that answers badly fails that run's check, never the eval", function()
  local q = fake.queue("badgrade")
  fake.script(q, {{json = {passed = true, score = 7, note = "!"}}, {status = 400}})
  local report = graded_eval(q)
  local lines = results(report)
  t.eq(report.status, "ok")
  t.eq(lines[1].passed, false); t.match(lines[1].note, "it answered score 7, not a number from 0 to 1")
  t.eq(lines[2].passed, false); t.match(lines[2].note, "the grading failed: ")
end)

return t.done()

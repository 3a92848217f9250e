-- luagent eval --resume (luagent.eval.resume) and concurrency auto
-- (luagent.eval.width), driven by a fake run_job (the one function that runs
-- one run): what is kept, what runs again, what a changed spec gets, and how
-- the width follows the engine.
local t = require "helper"
local fs, json = luagent.fs, luagent.json
local sched = require "luagent.sched"
local events = require "luagent.events"
local spec_mod = require "luagent.eval.spec"
local eval = require "luagent.eval"
local resume = require "luagent.eval.resume"
local width = require "luagent.eval.width"

local dir = assert(fs.temp_dir("eval-resume"))
local evals = dir .. "/evals"
assert(fs.write(dir .. "/recipe.lua", "return 0\n"))
assert(fs.write(dir .. "/recipe.yaml", "model:\n  temperature: 0\ninput:\nlabel: x\n"))
assert(fs.mkdir(dir .. "/data"))
for _, name in ipairs({"a", "b", "c"}) do assert(fs.write(dir .. "/data/" .. name .. ".csv", "x\n")) end

-- The spec: variants v1, v2 (and `more`), inputs a, b, `epochs`; written and loaded.
local function spec(o)
  o = o or {}
  local text = "recipe: recipe.lua\nconcurrency: 1\nvariants:\n  v1: {}\n  v2: {model.temperature: "
    .. (o.temperature or 1) .. "}\n" .. (o.variants or "") .. "inputs:\n  - {input: data/a.csv}\n  - {input: data/b.csv}\n"
    .. (o.inputs or "") .. "epochs: " .. (o.epochs or 3) .. "\n" .. (o.extra or "")
  assert(fs.write(dir .. "/s.eval.yaml", text))
  return assert(spec_mod.load(dir .. "/s.eval.yaml", {sets = o.sets}))
end

-- A run_job that counts its calls (calls[key] = n), writes a run's files and answers with 100 tokens.
local function counting(calls)
  return function(job)
    local key = resume.key(job)
    calls[#calls + 1] = key
    assert(fs.mkdir(job.dir))
    assert(fs.write(job.dir .. "/made", key .. " " .. #calls .. "\n"))
    sched.sleep(0.001)
    return {status = "ok", final = {output = "answer of " .. key, stopped_by = "answer", turns = 2},
            stats = {input_tokens = 90, output_tokens = 10, cost = 0.01, cached_calls = 0, live_calls = 2}}
  end
end

local function run(s, calls, o)
  o = o or {}
  return assert(eval.run(s, {run_job = counting(calls), quiet = true, evals_dir = evals, resume = o.resume,
                             say = function() end, engines = o.engines}))
end

local function lines_of(path)
  local out = {}
  for line in assert(fs.read(path)):gmatch("[^\n]+") do out[#out + 1] = assert(json.decode(line)) end
  return out
end

local function sorted(list)
  local out = {table.unpack(list)}
  table.sort(out)
  return out
end

local function prepare(s, id, o)
  return resume.prepare(s, id, {evals_dir = evals, rerun_failed_checks = o and o.rerun_failed_checks})
end

t.test("an eval stopped by its budget after 5 of 12 runs, resumed with a larger one, runs exactly the other 7", function()
  fs.remove(evals)
  local calls = {}
  local first = run(spec{extra = "budget: {tokens: 500}\n"}, calls)
  t.eq(first.status, "budget"); t.eq(#calls, 5)
  local made_before = fs.read(first.dir .. "/runs/v1/a/1/made")
  local s = spec{extra = "budget: {tokens: 5000}\n"}
  local resumed = assert(prepare(s))
  t.eq(resumed.id, first.id)
  local again = {}
  local report = run(s, again, {resume = resumed})
  t.eq(#again, 7, "only the runs that had not finished")
  local all = {}
  for _, k in ipairs(calls) do all[#all + 1] = k end
  for _, k in ipairs(again) do all[#all + 1] = k end
  t.eq(#sorted(all), 12)
  for i = 2, #sorted(all) do t.ok(sorted(all)[i] ~= sorted(all)[i - 1], "no run made twice") end
  t.eq(report.status, "ok"); t.eq(report.dir, first.dir); t.eq(report.kept, 5); t.eq(report.finished, 12)
  local lines = lines_of(report.results)
  t.eq(#lines, 12, "results.jsonl: one line per run, the skipped ones replaced")
  for _, l in ipairs(lines) do t.eq(l.status, "ok") end
  t.eq(report.rows[1].done, 6); t.eq(report.rows[2].done, 6)
  t.eq(fs.read(first.dir .. "/runs/v1/a/1/made"), made_before, "a kept run's folder is left as it was")
  t.match(fs.read(report.summary), "\nv1,6,6,6,")
  local about = json.decode(assert(fs.read(report.dir .. "/eval.json")))
  t.eq(about.status, "ok"); t.eq(about.finished, 12)
end)

t.test("a crash: a line cut short, a run without its final.json and an interrupted one run again", function()
  fs.remove(evals)
  local first = run(spec{epochs = 1}, {})
  local path = first.dir .. "/results.jsonl"
  local lines = lines_of(path)
  lines[2].status = "interrupted"
  local text = {}
  for i = 1, 3 do text[i] = json.encode(lines[i]) end
  -- the 4th line as a crash mid-write leaves it: no newline
  assert(fs.write(path, table.concat(text, "\n") .. "\n" .. json.encode(lines[4]):sub(1, 40)))
  assert(fs.remove(first.dir .. "/" .. lines[3].run_dir .. "/final.json"))
  local s = spec{epochs = 1}
  local resumed = assert(prepare(s))
  t.eq(resumed.dropped, 3)
  local again = {}
  local report = run(s, again, {resume = resumed})
  t.same(sorted(again), sorted({resume.key(lines[2]), resume.key(lines[3]), resume.key(lines[4])}))
  t.eq(#lines_of(report.results), 4)
end)

t.test("a spec that adds a variant, an input or epochs: only the new runs run", function()
  fs.remove(evals)
  run(spec{epochs = 1}, {})
  local s = spec{epochs = 1, variants = "  v3: {label: three}\n"}
  local resumed = assert(prepare(s))
  t.eq(resumed.added, "variant v3")
  local again = {}
  local report = run(s, again, {resume = resumed})
  t.same(sorted(again), {"v3/a/1", "v3/b/1"})
  t.eq(#lines_of(report.results), 6); t.eq(#report.rows, 3)
  s = spec{epochs = 2, variants = "  v3: {label: three}\n", inputs = "  - {input: data/c.csv}\n"}
  resumed = assert(prepare(s))
  t.eq(resumed.added, "input c, epochs 1 -> 2")
  again = {}
  report = run(s, again, {resume = resumed})
  t.eq(#again, 3 * 3 * 2 - 6)
  for _, k in ipairs(again) do t.ok(k:match("/c/1$") or k:match("/2$"), k .. " is new") end
  t.eq(#lines_of(report.results), 18)
end)

t.test("a spec edited since in a way that changes made runs is refused, naming each change", function()
  fs.remove(evals)
  local first = run(spec{epochs = 2}, {})
  local s, err = prepare(spec{epochs = 1, temperature = 0.5})
  t.eq(s, nil); t.eq(err.kind, "usage")
  t.eq(err.message, ("--resume %s: %s was edited since that eval: variant v2 changed (model.temperature); epochs "
    .. "was 2, now 1; only adding variants, inputs or epochs can be resumed (run it anew without --resume)")
    :format(first.id, dir .. "/s.eval.yaml"))
  assert(fs.write(dir .. "/s.eval.yaml", "recipe: recipe.lua\nvariants:\n  v1: {}\ninputs:\n  - {input: data/a.csv}\n"
    .. "  - {input: data/b.csv}\nepochs: 2\n"))
  s, err = prepare(assert(spec_mod.load(dir .. "/s.eval.yaml", {sets = {"label=y"}})))
  t.eq(s, nil)
  t.match(err.message, "was edited since that eval: %-%-set changed %(label%); variant v2 is gone; only adding")
end)

t.test("--resume of an eval that does not exist, of another spec, or with none: one line naming it", function()
  fs.remove(evals)
  local s = spec()
  local none, err = prepare(s)
  t.eq(none, nil); t.eq(err.kind, "usage")
  t.eq(err.message, ("--resume: no eval of %s in %s; run it once without --resume"):format(s.file, evals))
  local _
  _, err = prepare(s, "20990101-000000-nope-beef")
  t.eq(err.message, ("--resume 20990101-000000-nope-beef: no such eval (no %s/20990101-000000-nope-beef/eval.json); "
    .. "`ls %s` lists the evals"):format(evals, evals))
  assert(fs.write(dir .. "/other.eval.yaml", "recipe: recipe.lua\n"))
  local other = assert(spec_mod.load(dir .. "/other.eval.yaml"))
  local theirs = run(other, {})
  _, err = prepare(s, theirs.id)
  t.eq(err.message, ("--resume %s: that eval is of %s, not of %s"):format(theirs.id,
    fs.realpath(dir .. "/other.eval.yaml"), s.file))
  _, err = prepare(s, theirs.dir)
  t.match(err.message, "that eval is of .*other%.eval%.yaml")
end)

t.test("the newest eval of the spec is resumed by default", function()
  fs.remove(evals)
  local s = spec{epochs = 1}
  run(s, {})
  sched.sleep(1.1) -- ids carry the second they started
  local second = run(s, {})
  t.eq(assert(prepare(s)).id, second.id)
end)

t.test("runs whose check failed are kept, unless --rerun-failed-checks", function()
  fs.remove(evals)
  local function checked()
    local s = spec{epochs = 1}
    s.check = function(r) return {passed = r.variant == "v1"} end
    return s
  end
  run(checked(), {})
  local again = {}
  local report = run(checked(), again, {resume = assert(prepare(checked()))})
  t.eq(#again, 0); t.eq(#lines_of(report.results), 4)
  again = {}
  report = run(checked(), again, {resume = assert(prepare(checked(), nil, {rerun_failed_checks = true}))})
  t.same(sorted(again), {"v2/a/1", "v2/b/1"})
  t.eq(#lines_of(report.results), 4)
end)

-- A run_job whose v2 runs wait for a person (approve = "defer") until they are run again as themselves
-- (job.resume_dir): then they end ok, and calls lists "resumed KEY".
local function deferring(calls)
  local base = counting(calls)
  return function(job)
    if job.resume_dir then
      calls[#calls + 1] = "resumed " .. resume.key(job)
      t.eq(job.resume_dir, job.dir); t.eq(job.resume_id, "run-" .. job.input)
      t.ok(fs.exists(job.dir .. "/made"), "the run's folder is kept")
      return {status = "ok", final = {output = "went on", turns = 2}, stats = {input_tokens = 9, output_tokens = 1}}
    end
    local r = base(job)
    if job.variant ~= "v2" then return r end
    return {status = "waiting", stats = r.stats, error = luagent.errors.new("waiting", "waits",
      {waiting = {run_id = "run-" .. job.input, agent = "agent", turn = 1, call = {id = "call_" .. job.input,
       tool = "write_note", arguments = {}}}})}
  end
end

t.test("waiting runs: --resume goes on with those a person decided, each as itself; the others still wait", function()
  fs.remove(evals)
  local s, calls = spec{epochs = 1}, {}
  local said = {}
  local function go(resumed)
    said = {}
    return assert(eval.run(s, {run_job = deferring(calls), quiet = false, evals_dir = evals, resume = resumed,
                               say = function(line) said[#said + 1] = line end}))
  end
  local first = go()
  t.eq(first.waiting, 2); t.eq(#calls, 4)
  -- luagent approve writes the decision in the run's folder
  assert(fs.write(first.dir .. "/runs/v2/a/1/approvals.jsonl", '{"id":"call_a","decision":"approved"}\n'))
  assert(fs.write(first.dir .. "/runs/v2/b/1/approvals.jsonl", '{"id":"call_other","decision":"approved"}\n'))
  local resumed = assert(prepare(s))
  t.eq(resume.decision(first.dir, resumed.waiting["v2/a/1"]).decision, "approved")
  t.eq(resume.decision(first.dir, resumed.waiting["v2/b/1"]), nil, "a decision on another call is none")
  calls = {}
  local report = go(resumed)
  t.same(calls, {"resumed v2/a/1"}, "only the decided run runs, as itself")
  t.eq(report.waiting, 1)
  t.match(said[1], "^resuming eval .*: 2 of 4 runs kept, 1 to run %(1 waiting run goes on with its decision, 1 still "
    .. "waits for one%)")
  local lines = lines_of(report.results)
  t.eq(#lines, 4, "one line a run")
  local by = {}
  for _, l in ipairs(lines) do by[resume.key(l)] = l end
  t.eq(by["v2/a/1"].status, "ok"); t.eq(by["v2/b/1"].status, "waiting")
  t.same(by["v2/a/1"].usage, {input_tokens = 99, output_tokens = 11}, "the whole run's: before the wait and after")
  t.eq(by["v2/a/1"].cost, 0.01); t.eq(by["v2/a/1"].live_calls, 2)
  t.eq(report.rows[2].done, 1); t.eq(report.rows[2].waiting, 1)
  -- nothing decided since: nothing runs, the waiting one still waits
  calls = {}
  report = go(assert(prepare(s)))
  t.same(calls, {}); t.eq(report.waiting, 1); t.eq(#lines_of(report.results), 4)
  t.match(said[1], "3 of 4 runs kept, 0 to run %(1 still waits for a decision%)")
end)

-- ---- concurrency auto ----

-- An engine set of capacities (false: an engine without one).
local function set_of(...)
  local members = {}
  for i, c in ipairs({...}) do members[i] = {capacity = c or nil, engine = {address = "e" .. i}} end
  return {key = "fake", members = members}
end

t.test("the ceiling: the engines' capacities, 4 runs a core, the runs to make", function()
  t.eq((width.ceiling{set = set_of(2, 3), cores = 8}), 5)
  t.eq((width.ceiling{set = set_of(2, false), cores = 2}), 8, "an engine without a capacity: the cores")
  t.eq((width.ceiling{set = set_of(20), cores = 2, runs = 3}), 3)
  t.ok(width.cores() >= 1)
end)

-- Feeds w `n` opens of `seconds` each, a run ending after each.
local function opens(w, n, seconds)
  for _ = 1, n do
    w:observe{type = "sandbox_open", open_s = seconds, queued_s = 0}
    w:finished()
  end
end

t.test("the width grows while opens keep their first speed, halves when they slow, grows again", function()
  local w = width.new{max = 6}
  t.eq(w:allowed(), 2)
  opens(w, 16, 0.3)
  t.eq(w:allowed(), 6, "up to the ceiling")
  opens(w, 6, 1.5)
  t.ok(w:allowed() < 6, "slow opens shrink it")
  t.match(w.history[#w.history].why, "^opens take [%d.]+x as long as in the first runs")
  local low = w:allowed()
  opens(w, 30, 0.3)
  t.ok(w:allowed() > low, "it grows again once they recover")
  w = width.new{max = 6}
  opens(w, 20, 0.3)
  w:observe{type = "sandbox_open", open_s = 0.3, queued_s = 2}
  t.eq(w:allowed(), 3, "an open that queued for room halves it")
  t.match(w.history[#w.history].why, "waited 2%.00 s for room")
  -- commands: each against its own first run
  w = width.new{max = 4}
  for _ = 1, 3 do w:observe{type = "sandbox_exec", kind = "python", command = "fast", duration = 0.05} end
  for _ = 1, 6 do w:observe{type = "sandbox_exec", kind = "python", command = "slow", duration = 3} end
  t.eq(w:slow("exec"), nil, "a long command is not a slow engine")
  for _ = 1, 3 do w:observe{type = "sandbox_exec", kind = "python", command = "slow", duration = 9} end
  t.match(w:slow("exec"), "^commands take")
end)

t.test("concurrency auto: never more runs than the engines hold; narrower when the engine's opens slow", function()
  fs.remove(evals)
  local engine = {open = 0, max_open = 0, delay = 0.02, opened = 0}
  local function run_job(job)
    engine.opened = engine.opened + 1
    if engine.opened > 12 then engine.delay = 0.4 end -- the engine slows
    sched.sleep(engine.delay)
    engine.open = engine.open + 1
    engine.max_open = math.max(engine.max_open, engine.open)
    events.emit{type = "sandbox_open", open_s = engine.delay, queued_s = 0}
    sched.sleep(0.05)
    engine.open = engine.open - 1
    assert(fs.mkdir(job.dir))
    return {status = "ok", final = {output = "x", stopped_by = "answer", turns = 1}, stats = {}}
  end
  local said = {}
  local s = spec{epochs = 6, extra = "concurrency: auto\n"} -- 24 runs
  local report = assert(eval.run(s, {run_job = run_job, evals_dir = evals, engines = set_of(2, 2),
                                     say = function(line) said[#said + 1] = line end}))
  t.eq(report.status, "ok"); t.eq(#report.records, 24)
  t.eq(engine.max_open, 4, "as many as the two engines hold, never more")
  local widest, shrank = 0, false
  for _, h in ipairs(report.widths) do
    widest = math.max(widest, h.width)
    if h.why:match("^opens take") then shrank = true end
  end
  t.eq(widest, 4); t.ok(shrank, "the width shrank when opens slowed")
  t.match(said[1], "auto %(2 to start, up to 4: the engines' capacity, 4%)")
  local progress = 0
  for _, line in ipairs(said) do
    if line:match("^%[ ?%d+/24%] .*  %[%d at a time%]$") then progress = progress + 1 end
  end
  t.eq(progress, 24, "each progress line shows the width")
end)

return t.done()

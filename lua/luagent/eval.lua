-- luagent.eval: runs a recipe many times in one process — every variant x
-- input x epoch of a spec (luagent.eval.spec) — and says which variant did best.
--
--   local report = eval.run(spec, {run_job, quiet, say, evals_dir, resume, engines})
--   -- resume: luagent.eval.resume.prepare's (the eval continued in its folder: the runs it
--   -- kept stay, the others run); engines: the engine set concurrency auto sizes for
--   -- (default the configured one: luagent.eval.width)
--   -- report = {id, dir, status = "ok" | "interrupted" | "budget", records, rows, table, waiting}
--
-- Runs start in the order epoch, input, variant (so a budget stop leaves the
-- variants with the same inputs, as far as it can), `spec.concurrency` at a
-- time (auto: luagent.eval.width). Each run gets its own folder, evals/<eval-id>/runs/<variant>/<input>/<epoch>/
-- (evals/ beside the spec, or $LUAGENT_EVALS_DIR), and its settings: the
-- variant's, then the input's, then --set on top. Running one run is ONE
-- function, `run_job(job)`:
--   job = {recipe, settings, dir, cache ("on" | "refresh" | nil), capture = true, quiet = true,
--          variant, input, epoch, resume_dir, resume_id}
--   (resume_dir: the run goes on as the run of that folder, whose id is resume_id:
--   a waiting run a person decided, under --resume)
--   -> {status = "ok" | "failed" | "interrupted" | "waiting", error, dir, trace,
--       final = {output, stopped_by, usage, cost, turns},
--       stats = {model_calls, cached_calls, live_calls, saved_cost, cost, input_tokens, output_tokens},
--       cancelled = true when the eval was interrupted while the run ended}
-- The default run_job is luagent.run's: run.new(job):execute(). A run_job that
-- raises is that run's failure (a "cancelled" error: the run was interrupted).
--
-- After each run: run_dir/final.json, the check (its verdict; a check that
-- raises or returns something else is that run's failure with the message),
-- one line appended to results.jsonl (luagent.eval.results) and summary.csv
-- rewritten, and a progress line (unless quiet). A check that asked a model
-- (luagent.checks.graded; the check's run.grader says which, run.grading
-- what it cost) marks the run graded, its cost apart (grading_cost). The
-- budget ({tokens, cost}, counted over finished runs, grading included)
-- stops runs from starting once spent: said
-- once, the rest written as "skipped". Ctrl-C: no run starts any more, the
-- running ones are interrupted (their outputs saved as usual), what finished
-- is written. At the end: the table, and the page (luagent.eval.page, when
-- this build has it). Without a run's check, passed means the run ended ok;
-- with one, the run ended ok and the check passed it.
--
-- A run that stopped for a person's approval (agent.new{approve = "defer"}:
-- its error is of kind "waiting") has not ended: its line says status
-- "waiting" and what it waits for (err.waiting), passed and error null; no
-- check judges it; it counts neither as done nor in the pass rates
-- (report.waiting: how many). `luagent approve` writes the decision in its
-- folder, and --resume goes on with it as that run (luagent.eval.resume).
local sched = require "luagent.sched"
local json = require "luagent.json"
local fs = require "luagent.fs"
local sys = require "luagent.sys"
local errors = require "luagent.errors"
local config = require "luagent.config"
local results = require "luagent.eval.results"
local view = require "luagent.eval.view"
local resume = require "luagent.eval.resume"
local events = require "luagent.events"

local eval = {}

local function copy(t)
  if type(t) ~= "table" then return t end
  local out = {}
  for k, v in pairs(t) do out[k] = copy(v) end
  return setmetatable(out, getmetatable(t))
end

local function is_cancel(err) return type(err) == "table" and err.kind == "cancelled" end

-- Every run of the spec, in starting order.
function eval.plan(spec, root)
  local jobs = {}
  for epoch = 1, spec.epochs do
    for _, input in ipairs(spec.inputs) do
      for _, variant in ipairs(spec.variants) do
        local settings = config.merge(config.merge(copy(variant.settings), copy(input.settings)), copy(spec.sets or {}))
        local rel = ("runs/%s/%s/%d"):format(variant.name, input.name, epoch)
        jobs[#jobs + 1] = {recipe = spec.recipe, settings = settings, dir = root .. "/" .. rel, run_dir = rel,
                           cache = spec.cache, capture = true, quiet = true,
                           variant = variant.name, input = input.name, epoch = epoch}
      end
    end
  end
  return jobs
end

-- luagent.run's run_job. The model-call cache (luagent.cache) is the eval's
-- choice for every run, over a recipe's own `cache:` setting, like --cache /
-- --no-cache: each run opens it in the same folder (setting cache.dir,
-- LUAGENT_CACHE, or .luagent/cache beside the recipe), so runs share what is
-- stored; a repeat (epoch > 1) has its own keys, so it asks the model anew.
function eval.default_run_job()
  local run = require "luagent.run"
  return function(job)
    local r, err = run.new{recipe = job.recipe, settings = job.settings, dir = job.dir, capture = true, quiet = true,
                           cache = job.cache or "off", resume_dir = job.resume_dir, id = job.resume_id,
                           cache_salt = job.epoch and job.epoch > 1 and ("epoch " .. job.epoch) or nil}
    if not r then return {status = "failed", error = err} end
    local ok, result = pcall(r.execute, r)
    if ok then return result end
    -- Ctrl-C: execute lets the run end (its hooks save what it made), then
    -- raises the cancel; the run's result is kept and the eval stops
    if errors.from(result).kind == "cancelled" and type(r.result) == "table" then
      r.result.cancelled = true
      return r.result
    end
    error(result, 0)
  end
end

-- Which variants would run the recipe's scripted driver: no model configured
-- for them (model.provider auto with no key, no base_url; or scripted).
function eval.scripted_variants(spec)
  local defaults = spec.defaults and spec.defaults.value or {}
  if type(defaults.model) ~= "table" or (spec.defaults.positions[defaults.model] or {}).provider == nil then
    return {}
  end
  local detected = require("luagent.model").detect()
  local out = {}
  for _, variant in ipairs(spec.variants) do
    local m = config.merge(config.merge(copy(defaults.model), copy(variant.settings.model or {})),
                           copy((spec.sets or {}).model or {}))
    local provider = m.provider or "auto"
    if provider == "scripted" or (provider == "auto" and not m.base_url and not detected) then
      out[#out + 1] = variant.name
    end
  end
  return out
end

-- The check's verdict on a run: passed, score, note, error.
local function judge(check, arg)
  local ok, verdict = pcall(check, arg)
  if not ok then
    if is_cancel(verdict) then return {passed = false, interrupted = true} end
    return {passed = false, error = "check raised: " .. errors.from(verdict).message}
  end
  if type(verdict) ~= "table" or type(verdict.passed) ~= "boolean" then
    return {passed = false, error = ("check returned %s, not {passed = true|false, score = 0..1, note = '...'}")
      :format(type(verdict) == "table" and "a table without passed = true|false" or tostring(verdict))}
  end
  local score, note = verdict.score, verdict.note
  if score ~= nil and (type(score) ~= "number" or score ~= score or score < 0 or score > 1) then
    return {passed = false, error = ("check returned score %s: a score is a number from 0 to 1"):format(tostring(score))}
  end
  if note ~= nil and type(note) ~= "string" then note = tostring(note) end
  return {passed = verdict.passed, score = score, note = note}
end

-- The run's declared outputs from its manifest.json: path -> {path (on the host), size, sha256}.
local function outputs_of(dir)
  local text = fs.read(dir .. "/manifest.json")
  local manifest = text and json.decode(text)
  local out = {}
  if type(manifest) == "table" and type(manifest.files) == "table" then
    for _, f in ipairs(manifest.files) do
      if type(f) == "table" and type(f.path) == "string" then
        out[f.path] = {path = dir .. "/" .. f.path, size = f.size, sha256 = f.sha256}
      end
    end
  end
  return out
end

-- A waiting run gone on (job.before: its line from before the wait): its
-- figures are the whole run's, both processes' (the journal answers the turns
-- before the wait without a model call).
local function add_before(o, before)
  local function num(v) return type(v) == "number" and v or nil end
  local function sum(a, b)
    if num(a) == nil and num(b) == nil then return nil end
    return (num(a) or 0) + (num(b) or 0)
  end
  local usage, earlier = type(o.usage) == "table" and o.usage or {}, type(before.usage) == "table" and before.usage or {}
  o.usage = {input_tokens = sum(usage.input_tokens, earlier.input_tokens) or 0,
             output_tokens = sum(usage.output_tokens, earlier.output_tokens) or 0}
  for _, k in ipairs({"cost", "saved_cost", "cached_calls", "live_calls", "wall_s"}) do o[k] = sum(o[k], before[k]) end
end

-- Runs one job; returns its outcome (the fields of its results line).
local function run_one(state, job)
  local made, merr = fs.mkdir(job.dir)
  if not made then return {status = "failed", passed = false, error = merr.message} end
  local t0 = sched.now()
  local ok, r = pcall(state.run_job, job)
  local wall = sched.now() - t0
  local o = {wall_s = wall}
  local err
  if not ok then
    o.status, err = is_cancel(r) and "interrupted" or "failed", errors.from(r)
    r = {}
  elseif type(r) ~= "table" then
    o.status, o.error, r = "failed", "the run_job returned " .. tostring(r) .. ", not a run's result", {}
  else
    o.status = r.status or "failed"
    err = r.error ~= nil and errors.from(r.error) or nil
  end
  -- stopped for a person's approval (approve = "defer"): the run has not ended, it waits
  if err and err.kind == "waiting" and o.status ~= "interrupted" then
    o.status, o.waiting = "waiting", type(err.waiting) == "table" and err.waiting or {}
  elseif err then
    o.error = err.message
  end
  if o.status == "interrupted" or r.cancelled then state.stopping = state.stopping or "interrupted" end
  local final, stats = type(r.final) == "table" and r.final or {}, type(r.stats) == "table" and r.stats or {}
  o.stopped_by, o.turns, o.output = final.stopped_by, final.turns, final.output
  if stats.input_tokens or stats.output_tokens then
    o.usage = {input_tokens = stats.input_tokens or 0, output_tokens = stats.output_tokens or 0}
  else
    o.usage = final.usage
  end
  o.cost = stats.cost or final.cost
  o.saved_cost, o.cached_calls, o.live_calls = stats.saved_cost, stats.cached_calls, stats.live_calls
  if job.before then add_before(o, job.before) end
  local wrote, werr = results.write_final(job.dir, final)
  if not wrote then state.say("luagent: warning: " .. werr.message) end
  local verdict = {passed = o.status == "ok"}
  if o.status == "waiting" then verdict.passed = nil end -- not judged before it ends
  if state.check and o.status ~= "interrupted" and o.status ~= "waiting" then
    local arg = {
      dir = job.dir, output = final.output, outputs = outputs_of(job.dir), settings = job.settings,
      trace = r.trace or (job.dir .. "/trace.jsonl"), stopped_by = final.stopped_by, usage = o.usage, cost = o.cost,
      status = o.status, error = o.error, variant = job.variant, input = job.input, epoch = job.epoch,
      grader = state.grader,
    }
    verdict = judge(state.check, arg)
    -- a model-graded check (luagent.checks.graded) counts what it asked in arg.grading
    if type(arg.grading) == "table" then
      o.graded, o.grading_cost, o.grading_tokens = true, arg.grading.cost, arg.grading.tokens
    end
  end
  if verdict.interrupted then
    o.status = "interrupted"
    state.stopping = state.stopping or "interrupted"
  end
  if verdict.passed ~= nil then o.passed = verdict.passed and o.status == "ok" end
  o.score, o.note = verdict.score, verdict.note
  if verdict.error then o.error = o.error and (o.error .. "; " .. verdict.error) or verdict.error end
  return o
end

-- Has the eval's budget been spent by the runs that finished?
local function budget_spent(state)
  local b = state.spec.budget
  if not b then return nil end
  if b.tokens and state.tokens >= b.tokens then
    return ("the budget of %d tokens is spent (%d used)"):format(b.tokens, state.tokens)
  end
  if b.cost and state.cost >= b.cost then
    return ("the budget of $%.4f is spent ($%.4f used)"):format(b.cost, state.cost)
  end
end

local function record(state, job, record_)
  state.records[#state.records + 1] = record_
  local ok, err = results.append(state.results_path, record_)
  if not ok then state.say("luagent: warning: " .. err.message) end
  ok, err = results.write_summary(state.summary_path, results.summarize(state.spec.variants, state.records))
  if not ok then state.say("luagent: warning: " .. err.message) end
  job.recorded = true
  state.pending[resume.key(job)] = nil
end

-- concurrency auto: waits until the width lets one more run go (luagent.eval.width)
local function wait_turn(state)
  local w = state.width
  while w and state.active >= w:allowed() and not state.stopping do sched.sleep(0.05) end
end

local function worker(state)
  while true do
    -- a pending Ctrl-C shows here, before a run starts
    local ok, err = pcall(function() sched.sleep(0) wait_turn(state) end)
    if not ok then
      if not is_cancel(err) then error(err, 0) end
      state.stopping = state.stopping or "interrupted"
    end
    if state.stopping then return end
    local why = budget_spent(state)
    if why then
      state.stopping = "budget"
      state.budget_message = why
      return
    end
    state.next = state.next + 1
    local job = state.jobs[state.next]
    if not job then return end
    state.active = state.active + 1
    local o = run_one(state, job)
    state.active = state.active - 1
    if state.width then state.width:finished() end
    local rec = results.line(job, o)
    state.tokens = state.tokens + (results.tokens_of(rec) or 0)
    state.tokens = state.tokens + (o.grading_tokens or 0)
    state.cost = state.cost + (type(o.cost) == "number" and o.cost or 0) + (o.grading_cost or 0)
    record(state, job, rec)
    state.finished = state.finished + 1
    if rec.status == "waiting" then
      state.waiting = state.waiting + 1
    elseif rec.status ~= "interrupted" then
      state.done = state.done + 1
    end
    if not state.quiet then
      state.say(view.progress(state.finished, #state.jobs, rec, state.width and state.width:allowed()))
    end
  end
end

local function stderr_line(line)
  io.stderr:write(line, "\n")
  io.stderr:flush()
end

local function eval_id(name)
  return os.date("!%Y%m%d-%H%M%S") .. "-" .. name .. "-" .. sys.random_hex(2)
end

local function write_about(state, status)
  local spec = state.spec
  local about = {
    id = state.id, name = spec.name, spec = spec.file, spec_path = fs.realpath(spec.file) or spec.file,
    recipe = spec.recipe, check = spec.check_file or json.null, sets = spec.sets or {}, epochs = spec.epochs,
    concurrency = spec.concurrency, budget = spec.budget or json.null, cache = spec.cache or false,
    status = status or "running", runs = state.runs, finished = state.done, waiting = state.waiting,
    variants = json.array{}, inputs = json.array{},
  }
  for _, v in ipairs(spec.variants) do about.variants[#about.variants + 1] = {name = v.name, settings = v.settings} end
  for _, i in ipairs(spec.inputs) do about.inputs[#about.inputs + 1] = {name = i.name, settings = i.settings} end
  local ok, err = fs.write(state.dir .. "/eval.json", json.encode(about, {indent = 2}) .. "\n")
  if not ok then state.say("luagent: warning: " .. err.message) end
end

-- Waits for every worker; Ctrl-C while waiting stops starting runs and waits on.
local function wait_workers(state, workers)
  for _, w in ipairs(workers) do
    while true do
      local waited, value, err = pcall(w.wait, w)
      if not waited then -- this wait was cancelled (Ctrl-C): wait on
        if not is_cancel(value) then error(value, 0) end
        state.stopping = state.stopping or "interrupted"
      else
        if value == nil and err ~= nil then -- the worker failed
          if not is_cancel(err) then error(err, 0) end
          state.stopping = state.stopping or "interrupted"
        end
        break
      end
    end
  end
end

-- The comparison page (luagent.eval.page); a failure is a warning.
local function write_page(state)
  local page = require("luagent.eval.page")
  local ok, path, err = pcall(page.write, state.dir)
  if not ok or not path then
    state.say("luagent: warning: the eval page could not be written: " .. errors.from(ok and err or path).message)
    return nil
  end
  return path
end

-- A resumed eval (opts.resume = {id, dir, kept, waiting}): the runs kept are
-- its records as they were (results.jsonl rewritten with only them, at once),
-- and so are the waiting runs without a decision (they still wait); a waiting
-- run a person decided (luagent approve) is a job that goes on as that run
-- (job.resume_dir: its folder, journal and decision; job.resume_id: its id;
-- job.before: its line, kept in results.jsonl until its new one is written:
-- state.pending); the others are the jobs, each from an empty folder.
local function take_over(state, resumed)
  local todo, lines = {}, {}
  local function keep(r)
    lines[#lines + 1] = json.encode(r)
    state.records[#state.records + 1] = r
    state.tokens = state.tokens + (results.tokens_of(r) or 0)
    state.cost = state.cost + (type(r.cost) == "number" and r.cost or 0)
  end
  for _, job in ipairs(state.jobs) do
    local key = resume.key(job)
    local r, waiting = resumed.kept[key], (resumed.waiting or {})[key]
    if r then
      keep(r)
      state.done, state.kept = state.done + 1, state.kept + 1
    elseif waiting and resume.decision(state.dir, waiting) then
      job.resume_dir, job.resume_id = job.dir, type(waiting.waiting) == "table" and waiting.waiting.run_id or nil
      job.before = waiting
      todo[#todo + 1] = job
      lines[#lines + 1] = json.encode(waiting)
      state.pending[key], state.went_on = waiting, state.went_on + 1
    elseif waiting then
      keep(waiting)
      state.waiting, state.still = state.waiting + 1, state.still + 1
    else
      todo[#todo + 1] = job
      fs.remove(job.dir)
    end
  end
  state.jobs = todo
  return fs.write(state.results_path, #lines > 0 and (table.concat(lines, "\n") .. "\n") or "")
end

-- After a resume that went on with waiting runs: the ones that did not get
-- to run (a budget, Ctrl-C) still wait, with their decision; results.jsonl
-- is written again with one line a run.
local function settle(state)
  if state.went_on == 0 then return end
  for _, job in ipairs(state.jobs) do
    local r = state.pending[resume.key(job)]
    if r then
      state.records[#state.records + 1] = r
      state.waiting = state.waiting + 1
    end
  end
  local lines = {}
  for i, r in ipairs(state.records) do lines[i] = json.encode(r) end
  local ok, err = fs.write(state.results_path, table.concat(lines, "\n") .. (#lines > 0 and "\n" or ""))
  if not ok then state.say("luagent: warning: " .. err.message) end
end

-- concurrency auto: the width (luagent.eval.width), fed by every run's sandbox events.
local function auto_width(state)
  local width = require "luagent.eval.width"
  local set = state.engines or require("luagent.sandbox.engine_set").configured() or false
  local max, why = width.ceiling{set = set, runs = #state.jobs}
  state.width = width.new{max = max, ceiling = function() return (width.ceiling{set = set, runs = #state.jobs}) end,
    on_change = function(old, new, reason)
      if not state.quiet then state.say(("width %d -> %d: %s"):format(old, new, reason)) end
    end}
  state.width_sub = events.subscribe(function(ev) state.width:observe(ev) end)
  return max, why
end

local function say_start(state, spec, resumed)
  local id, dir = state.id, state.dir
  local at_once = state.width and ("auto (%d to start, up to %d: %s)"):format(state.width.width, state.width.max,
    state.width_why) or tostring(spec.concurrency)
  local function n(count, word) return ("%d %s%s"):format(count, word, count == 1 and "" or "s") end
  if resumed then
    local waits = ""
    if state.went_on > 0 then
      waits = (" (%s %s on with %s decision%s)"):format(n(state.went_on, "waiting run"),
        state.went_on == 1 and "goes" or "go", state.went_on == 1 and "its" or "their",
        state.still > 0 and (", %d still wait%s for one"):format(state.still, state.still == 1 and "s" or "") or "")
    elseif state.still > 0 then
      waits = (" (%d still wait%s for a decision)"):format(state.still, state.still == 1 and "s" or "")
    end
    state.say(("resuming eval %s: %d of %d runs kept, %d to run%s%s, %s at a time; %s"):format(id, state.kept,
      state.runs, #state.jobs, resumed.added and (" (the spec adds " .. resumed.added .. ")") or "", waits, at_once,
      dir))
  else
    state.say(("eval %s: %s (%s x %s x %s), %s at a time; %s"):format(id, n(state.runs, "run"),
      n(#spec.variants, "variant"), n(#spec.inputs, "input"), n(spec.epochs, "epoch"), at_once, dir))
  end
end

function eval.run(spec, opts)
  opts = opts or {}
  local run_job = opts.run_job or eval.default_run_job()
  local root = resume.root(spec, opts.evals_dir)
  local resumed = opts.resume
  local id = resumed and resumed.id or eval_id(spec.name)
  local dir = resumed and resumed.dir or (root .. "/" .. id)
  local made, merr = fs.mkdir(dir)
  if not made then return nil, errors.wrap(merr, "making the eval's folder") end
  local state = {
    spec = spec, run_job = run_job, check = spec.check, id = id, dir = dir, quiet = opts.quiet,
    say = opts.say or stderr_line, jobs = eval.plan(spec, dir), records = {}, next = 0, finished = 0, done = 0,
    tokens = 0, cost = 0, results_path = dir .. "/results.jsonl", summary_path = dir .. "/summary.csv",
    grader = {model = spec.grader and spec.grader.model or {}, rubric = spec.grader and spec.grader.rubric,
              cache = spec.cache, recipe = spec.recipe},
    active = 0, kept = 0, engines = opts.engines, waiting = 0, pending = {}, went_on = 0, still = 0,
  }
  state.runs = #state.jobs
  if resumed then assert(take_over(state, resumed)) else assert(fs.write(state.results_path, "")) end
  write_about(state)
  local scripted = eval.scripted_variants(spec)
  if #scripted > 0 then
    state.say(#scripted == #spec.variants and
      "SCRIPTED RUNS: no model is configured (no OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENAI_BASE_URL, no "
        .. "model.provider), so the recipe's scripted driver runs every run: it ignores the instructions and the "
        .. "task, so variants that differ only in their prompts run alike. Set a model to compare prompts."
      or ("SCRIPTED RUNS: no model is configured for %s: the recipe's scripted driver runs those."):format(
        table.concat(scripted, ", ")))
  end
  local n_workers = spec.concurrency
  if spec.concurrency == "auto" then n_workers, state.width_why = auto_width(state) end
  if not opts.quiet then say_start(state, spec, resumed) end
  local workers = {}
  for w = 1, math.max(1, math.min(n_workers, #state.jobs)) do workers[w] = sched.spawn(worker, state) end
  wait_workers(state, workers)
  if state.width_sub then events.unsubscribe(state.width_sub) end
  -- runs that never started
  local skipped = 0
  if state.stopping == "budget" then
    state.say(("budget: %s; %d runs not started (skipped)"):format(state.budget_message,
      math.max(0, #state.jobs - state.next)))
    for i = state.next + 1, #state.jobs do
      local job = state.jobs[i]
      if not job.resume_dir then -- a decided waiting run still waits (settle)
        record(state, job, results.line(job, {status = "skipped", passed = false,
          skipped = "not started: " .. state.budget_message}))
        skipped = skipped + 1
      end
    end
  end
  settle(state)
  local rows = results.summarize(spec.variants, state.records)
  local ok, err = results.write_summary(state.summary_path, rows)
  if not ok then state.say("luagent: warning: " .. err.message) end
  local status = state.stopping or "ok"
  write_about(state, status)
  local page = write_page(state)
  return {id = id, dir = dir, status = status, records = state.records, rows = rows, table = view.table(rows),
          runs = state.runs, finished = state.done, kept = state.kept, ran = #state.jobs, waiting = state.waiting,
          widths = state.width and state.width.history or nil,
          results = state.results_path, summary = state.summary_path, page = page, skipped = skipped}
end

return eval

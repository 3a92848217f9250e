-- luagent.eval.diff: two evals compared, for `luagent eval diff A B` (its
-- terminal text: luagent.cli.eval_diff; its page: luagent.eval.diff_page).
-- This is how a prompt edit is judged: run the eval, edit, run it again, diff.
--
--   diff.load(arg) -> ev | nil, err   arg: an eval id or folder (luagent.eval.folders); err kind "usage"
--     ev = {dir, id, about (its eval.json, or {}), recipe (or nil), records, variants, inputs}
--   diff.compare(a, b) -> cmp
--     cmp = {a, b, recipes_differ, rows = {{variant, a = row, b = row}}, flips = {pair}, rest = {pair},
--            only = {variants = {a, b}, inputs = {a, b}, runs = {a, b}}, matched, changes = {text},
--            prompts = {{variant, lines, scripted}}, prompts_read}
--     pair = {variant, input, epoch, a = record, b = record, from = verdict, to = verdict}
--   diff.verdict(record) -> "passed" | "failed" | "error" | "skipped" | "interrupted" | "waiting" | "no check"
--   diff.METRICS: {{key, label, show(v) -> text, better = "high" | "low"}}   the columns compared
--   diff.change(metric, a, b [, none]) -> text, direction ("better" | "worse" | "same" | nil when not known)
--   diff.cell(metric, row [, none]) -> text   a summary row's value ("50% (1/2)" for the pass rate)
--     (none: the text when a value is not known, default "—")
--
-- Runs are matched by variant, input and epoch (names, so evals of different
-- recipes compare what they share); a run in one eval only is counted as such.
-- A run's latest line in results.jsonl is the one compared (a resumed eval
-- may hold an earlier line of the same run). The per-variant figures are
-- luagent.eval.results.summarize over the matched runs only, so both sides
-- count the same runs. A flip is a run passed in one eval and failed (its
-- check, or an error) in the other; flips come first, then the rest in the
-- spec's order. cmp.changes says what differs: a flip, a pass rate, a variant,
-- input or run in one eval only, the recipe; empty: the evals are the same
-- (scores, turns, tokens, cost and wall time may still move, and are shown).
-- cmp.prompts: per variant, how each agent's instructions and task changed
-- from A to B, word by word (luagent.trace_page.compare), read from the
-- traces of one matched run per variant and input; scripted: every agent of
-- those runs ran on the scripted driver, which ignores them. prompts_read:
-- how many pairs of traces were read (0: no traces to compare).
local json = require "luagent.json"
local format = require "luagent.trace_page.format"
local folders = require "luagent.eval.folders"
local results = require "luagent.eval.results"
local eval_page = require "luagent.eval.page"
local trace = require "luagent.trace"
local compare = require "luagent.trace_page.compare"

local diff = {}

local function value(v) if v == json.null then return nil end return v end

-- A results line with its input as a name (older evals wrote the input's settings).
local function named(r)
  if type(r.input) == "string" then return r end
  local copy = {}
  for k, v in pairs(r) do copy[k] = v end
  copy.input = eval_page.input_label(r.input)
  return copy
end

local function key_of(r)
  return ("%s\0%s\0%s"):format(tostring(r.variant), r.input, tostring(r.epoch))
end

-- Names in the order of eval.json's list (the spec's), then of first appearance in the records.
local function names_of(listed, records, field)
  local out, seen = {}, {}
  local function add(name)
    if name ~= nil and not seen[name] then
      seen[name] = true
      out[#out + 1] = name
    end
  end
  for _, item in ipairs(type(listed) == "table" and listed or {}) do
    add(type(item) == "table" and value(item.name) or nil)
  end
  for _, r in ipairs(records) do add(value(r[field]) ~= nil and tostring(r[field]) or nil) end
  return out
end

function diff.load(arg)
  local dir, err = folders.find(arg)
  if not dir then return nil, err end
  local records, rerr = eval_page.read_results(dir)
  if not records then
    rerr.kind = "usage"
    return nil, rerr
  end
  -- the latest line of each run
  local latest, order = {}, {}
  for _, r in ipairs(records) do
    r = named(r)
    local k = key_of(r)
    if not latest[k] then order[#order + 1] = k end
    latest[k] = r
  end
  local runs = {}
  for i, k in ipairs(order) do runs[i] = latest[k] end
  local about = format.read_json(dir .. "/eval.json")
  about = type(about) == "table" and about or {}
  local ev = {dir = dir, id = value(about.id) or dir:match("([^/]+)$"), about = about,
              recipe = value(about.recipe), records = runs, by_key = latest}
  ev.variants = names_of(about.variants, runs, "variant")
  ev.inputs = names_of(about.inputs, runs, "input")
  return ev
end

function diff.verdict(r)
  if r.status == "skipped" or (value(r.skipped) and r.skipped ~= false) then return "skipped" end
  if r.status == "interrupted" then return "interrupted" end
  if r.status == "waiting" then return "waiting" end -- for a person's approval: not ended
  if r.passed == true then return "passed" end
  if value(r.error) then return "error" end
  if r.passed == false then return "failed" end
  return "no check"
end

local RAN_NOT_PASSED = {failed = true, error = true}

local function is_flip(from, to)
  return (from == "passed" and RAN_NOT_PASSED[to]) or (to == "passed" and RAN_NOT_PASSED[from]) or false
end

-- ---- the figures compared ----

local function signed(x, pattern)
  return (x >= 0 and "+" or "-") .. pattern:format(math.abs(x))
end

local function percent_of(a, b)
  if a == 0 then return "" end
  return (" (%s%%)"):format(signed((b - a) / a * 100, "%.0f"):gsub("^%+%-", "-"))
end

diff.METRICS = {
  {key = "pass_rate", label = "pass rate", better = "high",
   show = function(v) return ("%.0f%%"):format(v * 100) end,
   delta = function(a, b) return signed((b - a) * 100, "%.0f") .. " pts" end},
  {key = "mean_score", label = "score", better = "high", show = function(v) return ("%.2f"):format(v) end,
   delta = function(a, b) return signed(b - a, "%.2f") end},
  {key = "mean_turns", label = "turns / run", better = "low", show = function(v) return ("%.1f"):format(v) end,
   delta = function(a, b) return signed(b - a, "%.1f") .. percent_of(a, b) end},
  {key = "mean_tokens", label = "tokens / run", better = "low", show = format.tokens,
   delta = function(a, b) return (b >= a and "+" or "-") .. format.tokens(math.abs(b - a)) .. percent_of(a, b) end},
  {key = "mean_cost", label = "$ / run", better = "low", show = format.money,
   delta = function(a, b) return (b >= a and "+" or "-") .. format.money(math.abs(b - a)) .. percent_of(a, b) end},
  {key = "mean_wall_s", label = "wall / run", better = "low", show = format.secs,
   delta = function(a, b) return (b >= a and "+" or "-") .. format.secs(math.abs(b - a)) .. percent_of(a, b) end},
}

function diff.change(metric, a, b, none)
  if a == nil or b == nil then return none or "—", nil end
  if metric.show(a) == metric.show(b) then return "same", "same" end
  local up = b > a
  local better = (metric.better == "high") == up
  return metric.delta(a, b), better and "better" or "worse"
end

function diff.cell(metric, row, none)
  local v = row[metric.key]
  if v == nil then return none or "—" end
  if metric.key == "pass_rate" then return ("%s (%d/%d)"):format(metric.show(v), row.passed, row.checked) end
  return metric.show(v)
end

-- ---- the comparison ----

local function only_in(names, other_seen)
  local out = {}
  for _, name in ipairs(names) do
    if not other_seen[name] then out[#out + 1] = name end
  end
  return out
end

local function set_of(list)
  local s = {}
  for _, x in ipairs(list) do s[x] = true end
  return s
end

-- Position of a run in the spec's order (variant, input, epoch), for sorting.
local function sorter(variants, inputs)
  local vpos, ipos = {}, {}
  for i, v in ipairs(variants) do vpos[v] = i end
  for i, v in ipairs(inputs) do ipos[v] = i end
  return function(x, y)
    local xv, yv = vpos[x.variant] or math.huge, vpos[y.variant] or math.huge
    if xv ~= yv then return xv < yv end
    local xi, yi = ipos[x.input] or math.huge, ipos[y.input] or math.huge
    if xi ~= yi then return xi < yi end
    return (tonumber(x.epoch) or 0) < (tonumber(y.epoch) or 0)
  end
end

local function runs_only(ev, other)
  local n = 0
  for _, r in ipairs(ev.records) do
    if not other.by_key[key_of(r)] then n = n + 1 end
  end
  return n
end

local function plural(n, word) return ("%d %s%s"):format(n, word, n == 1 and "" or "s") end

-- What differs, as short phrases (empty: the evals are the same).
local function changes_of(cmp)
  local out = {}
  if #cmp.flips > 0 then out[#out + 1] = plural(#cmp.flips, "run") .. " flipped" end
  local moved = {}
  for _, row in ipairs(cmp.rows) do
    if row.a.pass_rate ~= row.b.pass_rate then moved[#moved + 1] = row.variant end
  end
  if #moved > 0 then out[#out + 1] = "the pass rate of " .. table.concat(moved, ", ") end
  for _, what in ipairs({"variants", "inputs"}) do
    local only = cmp.only[what]
    if #only.a + #only.b > 0 then out[#out + 1] = what .. " in one eval only" end
  end
  if #cmp.only.variants.a + #cmp.only.variants.b + #cmp.only.inputs.a + #cmp.only.inputs.b == 0
      and cmp.only.runs.a + cmp.only.runs.b > 0 then
    out[#out + 1] = "runs in one eval only"
  end
  if cmp.recipes_differ then out[#out + 1] = "the recipe" end
  return out
end

-- ---- the prompts: each agent's instructions and task, from the runs' traces ----

-- A run's prompts (luagent.trace_page.compare.prompts), or nil without a trace.
local function prompts_of(ev, r)
  local dir = eval_page.run_folder(ev.dir, r)
  local list = dir and trace.read(dir .. "/trace.jsonl", {partial = true})
  return list and compare.prompts(list) or nil
end

local function all_scripted(list)
  for _, p in ipairs(list) do
    if not tostring(p.model or ""):match("^scripted/") then return false end
  end
  return #list > 0
end

-- Per variant: how its prompts changed from A to B, each distinct change
-- once. One run per variant and input is read (the epochs share a prompt).
-- Returns the entries {variant, lines, scripted} and how many pairs were read.
local function prompt_changes(a, b, pairs_)
  local out, by_variant, seen, read = {}, {}, {}, 0
  for _, p in ipairs(pairs_) do
    local k = p.variant .. "\0" .. p.input
    local xa = not seen[k] and prompts_of(a, p.a)
    local xb = xa and prompts_of(b, p.b)
    seen[k] = true
    if xa and xb then
      read = read + 1
      local text = table.concat(compare.prompt_changes(xa, xb), "\n")
      if text ~= "" then
        local entry = by_variant[p.variant]
        if not entry then
          entry = {variant = p.variant, lines = {}, seen = {}, scripted = true}
          by_variant[p.variant], out[#out + 1] = entry, entry
        end
        entry.scripted = entry.scripted and all_scripted(xa) and all_scripted(xb)
        if not entry.seen[text] then
          entry.seen[text] = true
          for line in text:gmatch("[^\n]+") do entry.lines[#entry.lines + 1] = line end
        end
      end
    end
  end
  for _, entry in ipairs(out) do entry.seen = nil end
  return out, read
end

function diff.compare(a, b)
  local seen_va, seen_vb, seen_ia, seen_ib = set_of(a.variants), set_of(b.variants), set_of(a.inputs), set_of(b.inputs)
  local cmp = {
    a = a, b = b, recipes_differ = a.recipe ~= nil and b.recipe ~= nil and a.recipe ~= b.recipe,
    only = {variants = {a = only_in(a.variants, seen_vb), b = only_in(b.variants, seen_va)},
            inputs = {a = only_in(a.inputs, seen_ib), b = only_in(b.inputs, seen_ia)},
            runs = {a = runs_only(a, b), b = runs_only(b, a)}},
    flips = {}, rest = {}, rows = {},
  }
  -- the matched runs, in the order of A's variants and inputs (then B's)
  local both_variants = {}
  for _, v in ipairs(a.variants) do if seen_vb[v] then both_variants[#both_variants + 1] = {name = v} end end
  local matched_a, matched_b, pairs_ = {}, {}, {}
  for _, ra in ipairs(a.records) do
    local rb = b.by_key[key_of(ra)]
    if rb then
      matched_a[#matched_a + 1], matched_b[#matched_b + 1] = ra, rb
      local from, to = diff.verdict(ra), diff.verdict(rb)
      pairs_[#pairs_ + 1] = {variant = tostring(ra.variant), input = tostring(ra.input), epoch = ra.epoch,
                             a = ra, b = rb, from = from, to = to}
    end
  end
  table.sort(pairs_, sorter(a.variants, a.inputs))
  for _, p in ipairs(pairs_) do
    local list = is_flip(p.from, p.to) and cmp.flips or cmp.rest
    list[#list + 1] = p
  end
  cmp.matched = #pairs_
  local rows_a = results.summarize(both_variants, matched_a)
  local rows_b = results.summarize(both_variants, matched_b)
  for i, row in ipairs(rows_a) do cmp.rows[i] = {variant = row.variant, a = row, b = rows_b[i]} end
  cmp.changes = changes_of(cmp)
  cmp.prompts, cmp.prompts_read = prompt_changes(a, b, pairs_)
  return cmp
end

return diff

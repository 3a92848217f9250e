-- luagent.eval.resume: continuing an eval that stopped (Ctrl-C, a crash, a
-- full budget, a dead engine) in its own folder.
--
--   resume.find(spec, root, id) -> {id, dir, about} | nil, err
--       the eval `id` (a folder name under root, or a folder path), else the
--       newest eval of this spec under root. err: kind "usage" (exit 2), one
--       line naming it: no such eval, no eval of this spec, an eval of another spec.
--   resume.changes(about, spec) -> nil | err, added
--       err (kind "usage"): the spec was edited since in a way that changes runs
--       already made (a variant's or input's settings, one removed, fewer epochs,
--       another recipe, check or --set), naming each change; added: what the spec
--       adds (variants, inputs, epochs: those runs are new), as text, or nil.
--   resume.kept(dir, {rerun_failed_checks}) -> {key -> record}, dropped, waiting
--       the runs that finished and stay as they are: their line in results.jsonl
--       says status "ok" (and, with rerun_failed_checks, passed), and their
--       final.json is there. A line cut short (a crash mid-write: no newline, or
--       not JSON) counts as not written. dropped: how many lines were not kept.
--       waiting: {key -> record} the runs whose line says status "waiting" (they
--       stopped for a person's approval) and whose folder is there
--   resume.decision(dir, record) -> {id, decision, why} | nil   what a person decided
--       (luagent approve: approvals.jsonl in the run's folder) on the call a waiting run waits for
--   resume.key(record_or_job) -> "variant/input/epoch"
--   resume.prepare(spec, id, {rerun_failed_checks, evals_dir}) -> {id, dir, about, kept, waiting, added} | nil, err
--       all of it: what eval.run's opts.resume takes
--   resume.root(spec, evals_dir) -> the folder evals go in
--
-- A finished run is committed by its results.jsonl line, appended in one
-- write after its folder (trace, outputs, final.json) is complete; a run
-- without one is run again from an empty folder. A waiting run is kept as it
-- is until a person decides; then luagent.eval runs it again as itself, in
-- its folder, answered from its journal up to the call it waited for.
local json = require "luagent.json"
local fs = require "luagent.fs"
local errors = require "luagent.errors"

local resume = {}

local function usage(message) return errors.fail("usage", message, {usage = true}) end

local function value(v) if v == json.null then return nil end return v end

function resume.key(r) return ("%s/%s/%s"):format(r.variant, r.input, tostring(r.epoch)) end

local function read_about(dir)
  local text = fs.read(dir .. "/eval.json")
  local ok, about = pcall(json.decode, text or "")
  if text and ok and type(about) == "table" then return about end
  return nil
end

-- Is `about` (an eval.json) an eval of this spec?
local function of_spec(about, spec)
  local here = fs.realpath(spec.file)
  if type(about.spec_path) == "string" then return about.spec_path == here end
  return about.name == spec.name and about.recipe == spec.recipe
end

local function spec_of(about)
  return about.spec_path or about.spec or "?"
end

local function newest(spec, root)
  local names = fs.list(root) or {}
  local best, best_about, best_key
  for _, name in ipairs(names) do
    local about = read_about(root .. "/" .. name)
    if about and of_spec(about, spec) then
      local st = fs.stat(root .. "/" .. name .. "/results.jsonl")
      -- ids start with their UTC start time; the same second: the one written last
      local key = (name:match("^(%d+%-%d+)") or "") .. ("%012d"):format(st and st.mtime or 0)
      if not best_key or key > best_key then best, best_about, best_key = name, about, key end
    end
  end
  return best, best_about
end

function resume.find(spec, root, id)
  if id == nil then
    local name, about = newest(spec, root)
    if not name then
      return usage(("--resume: no eval of %s in %s; run it once without --resume"):format(spec.file, root))
    end
    return {id = name, dir = root .. "/" .. name, about = about}
  end
  local dir = id:find("/", 1, true) and id:gsub("/+$", "") or (root .. "/" .. id)
  local about = read_about(dir)
  if not about then
    return usage(("--resume %s: no such eval (no %s/eval.json); `ls %s` lists the evals"):format(id, dir, root))
  end
  if not of_spec(about, spec) then
    return usage(("--resume %s: that eval is of %s, not of %s"):format(id, spec_of(about), spec.file))
  end
  return {id = dir:match("([^/]+)$"), dir = dir, about = about}
end

-- ---- what changed ----

-- Every leaf of a settings table as "a.b.c" -> value (JSON text, to compare).
local function leaves(t, prefix, out)
  out = out or {}
  if type(t) ~= "table" then
    out[prefix or ""] = json.encode(t)
    return out
  end
  for k, v in pairs(t) do leaves(v, prefix and (prefix .. "." .. tostring(k)) or tostring(k), out) end
  return out
end

-- The keys whose values differ between two settings tables, sorted.
local function differing(a, b)
  local la, lb = leaves(value(a) or {}), leaves(value(b) or {})
  local keys, seen = {}, {}
  for k, v in pairs(la) do if lb[k] ~= v then keys[#keys + 1], seen[k] = k, true end end
  for k in pairs(lb) do if la[k] == nil and not seen[k] then keys[#keys + 1] = k end end
  table.sort(keys)
  return keys
end

local function by_name(list)
  local out = {}
  for _, entry in ipairs(value(list) or {}) do out[entry.name] = entry end
  return out
end

-- Compares one list (variants or inputs): changed/removed go to `refused`,
-- new names to `added`.
local function compare_list(what, old, new, refused, added)
  local before = by_name(old)
  for _, entry in ipairs(value(old) or {}) do
    local now = nil
    for _, n in ipairs(new) do if n.name == entry.name then now = n end end
    if not now then refused[#refused + 1] = ("%s %s is gone"):format(what, entry.name) end
  end
  for _, entry in ipairs(new) do
    local was = before[entry.name]
    if not was then
      added[#added + 1] = ("%s %s"):format(what, entry.name)
    else
      local keys = differing(was.settings, entry.settings)
      if #keys > 0 then
        refused[#refused + 1] = ("%s %s changed (%s)"):format(what, entry.name, table.concat(keys, ", "))
      end
    end
  end
end

function resume.changes(about, spec)
  local refused, added = {}, {}
  if about.recipe ~= spec.recipe then
    refused[#refused + 1] = ("recipe was %s, now %s"):format(tostring(about.recipe), spec.recipe)
  end
  if value(about.check) ~= spec.check_file and about.check ~= nil then
    refused[#refused + 1] = ("check was %s, now %s"):format(tostring(value(about.check) or "none"),
      spec.check_file or "none")
  end
  local sets = differing(about.sets, spec.sets)
  if #sets > 0 then refused[#refused + 1] = ("--set changed (%s)"):format(table.concat(sets, ", ")) end
  compare_list("variant", about.variants, spec.variants, refused, added)
  compare_list("input", about.inputs, spec.inputs, refused, added)
  local epochs = math.tointeger(about.epochs) or 1
  if spec.epochs < epochs then
    refused[#refused + 1] = ("epochs was %d, now %d"):format(epochs, spec.epochs)
  elseif spec.epochs > epochs then
    added[#added + 1] = ("epochs %d -> %d"):format(epochs, spec.epochs)
  end
  local adds = #added > 0 and table.concat(added, ", ") or nil
  if #refused > 0 then
    local _, err = usage(("--resume %s: %s was edited since that eval: %s; only adding variants, inputs or "
      .. "epochs can be resumed (run it anew without --resume)"):format(about.id or "?", spec.file,
      table.concat(refused, "; ")))
    return err, adds
  end
  return nil, adds
end

-- ---- what stays ----

-- The complete lines of results.jsonl, decoded (a line cut short is not one).
local function lines_of(path)
  local text = fs.read(path) or ""
  local out, bad = {}, 0
  for line, nl in text:gmatch("([^\n]*)(\n?)") do
    if line ~= "" then
      local ok, r = pcall(json.decode, line)
      if nl == "\n" and ok and type(r) == "table" and r.variant and r.input and r.epoch then
        out[#out + 1] = r
      else
        bad = bad + 1
      end
    end
  end
  return out, bad
end

local function finished(dir, r, opts)
  if r.status ~= "ok" then return false end
  if opts.rerun_failed_checks and r.passed ~= true then return false end
  local run_dir = value(r.run_dir)
  return type(run_dir) == "string" and fs.exists(dir .. "/" .. run_dir .. "/final.json")
end

local function waits(dir, r)
  local run_dir = value(r.run_dir)
  return r.status == "waiting" and type(run_dir) == "string" and fs.exists(dir .. "/" .. run_dir) or false
end

function resume.kept(dir, opts)
  opts = opts or {}
  local lines, dropped = lines_of(dir .. "/results.jsonl")
  local kept, waiting = {}, {}
  for _, r in ipairs(lines) do -- a later line of the same run wins
    local key = resume.key(r)
    kept[key] = finished(dir, r, opts) and r or nil
    waiting[key] = waits(dir, r) and r or nil
  end
  local n = 0
  for _ in pairs(kept) do n = n + 1 end
  return kept, #lines + dropped - n, waiting
end

function resume.decision(dir, r)
  local w, run_dir = value(r.waiting), value(r.run_dir)
  local call = type(w) == "table" and value(w.call)
  if type(call) ~= "table" or type(run_dir) ~= "string" then return nil end
  local found
  for line in (fs.read(dir .. "/" .. run_dir .. "/approvals.jsonl") or ""):gmatch("[^\n]+") do
    local ok, d = pcall(json.decode, line)
    if ok and type(d) == "table" and d.id == call.id and (d.decision == "approved" or d.decision == "denied") then
      found = d
    end
  end
  return found
end

-- Where evals go: evals_dir, else $LUAGENT_EVALS_DIR, else evals/ beside the spec.
function resume.root(spec, evals_dir)
  return evals_dir or os.getenv("LUAGENT_EVALS_DIR") or (spec.dir .. "/evals")
end

function resume.prepare(spec, id, opts)
  opts = opts or {}
  local found, err = resume.find(spec, resume.root(spec, opts.evals_dir), id)
  if not found then return nil, err end
  local refused, added = resume.changes(found.about, spec)
  if refused then return nil, refused end
  found.kept, found.dropped, found.waiting = resume.kept(found.dir, opts)
  found.added = added
  return found
end

return resume

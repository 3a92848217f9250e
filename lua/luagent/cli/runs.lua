-- luagent runs [DIR] [--json]: the runs under the runs folder ($LUAGENT_RUNS_DIR,
-- else ./runs; or DIR), newest first: id, status, when it started, the recipe,
-- turns and cost, and for a run that can go on, the command that resumes it.
--
-- A run's status comes from its folder: the last run_end of trace.jsonl (ok,
-- failed, interrupted, incomplete, waiting) when none of the trace's run_start
-- comes after it; else "running" while journal.lock names a live process,
-- "resumable" when journal.jsonl and resume.argv are there (it was killed;
-- `luagent run --resume` goes on), "killed" when they are not. A failed or
-- interrupted run with a journal is resumable too. Cheap: a big trace is read
-- at its head (the first run_start) and its tail (the last events) only.
--
--   runs.list(root) -> {run...} | nil (no such folder)   each: {id, dir, status, resumable, started, ...}
--   runs.main(args) -> exit status: 0 listed (or nothing to list), 2 bad usage
local context = require "luagent.context"
local fs = require "luagent.fs"
local journal = require "luagent.journal"
local json = require "luagent.json"

local runs = {}

local USAGE = "usage: luagent runs [DIR] [--json]"
local WHOLE, HEAD, TAIL = 1024 * 1024, 64 * 1024, 256 * 1024
local GOES_ON = {failed = true, interrupted = true, waiting = true} -- ended, and resumable with a journal

-- The events that say how a run went, from the text of (part of) a trace: the
-- whole lines' run_start, run_end and agent_end events, in order.
local function events_in(text, out)
  for line in text:gmatch("([^\n]*)\n") do
    if line:find('"run_start"', 1, true) or line:find('"run_end"', 1, true) or line:find('"agent_end"', 1, true) then
      local ev = json.decode(line)
      if type(ev) == "table" and (ev.type == "run_start" or ev.type == "run_end" or ev.type == "agent_end") then
        out[#out + 1] = ev
      end
    end
  end
  return out
end

-- The trace's telling events: all of them for a small trace; for a big one
-- the head's and the tail's (the tail from its first whole line).
local function trace_events(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local size = f:seek("end")
  f:seek("set", 0)
  local list
  if size <= WHOLE then
    list = events_in(f:read("a") or "", {})
  else
    local head = events_in(f:read(HEAD) or "", {})
    list = {head[1] and head[1].type == "run_start" and head[1] or nil} -- the first run_start
    f:seek("set", size - TAIL)
    events_in((f:read("a") or ""):gsub("^[^\n]*\n", "", 1), list)
  end
  f:close()
  return list
end

-- A run id's time (UTC, YYYYMMDD-HHMMSS-...) as seconds since the epoch, or nil.
local function id_time(id)
  local y, mo, d, h, mi, s = id:match("^(%d%d%d%d)(%d%d)(%d%d)%-(%d%d)(%d%d)(%d%d)%-")
  if not y then return nil end
  local t = os.time({year = tonumber(y), month = tonumber(mo), day = tonumber(d), hour = tonumber(h),
                     min = tonumber(mi), sec = tonumber(s), isdst = false})
  local now = os.time()
  local utc = os.date("!*t", now)
  utc.isdst = false
  return t + (os.time(os.date("*t", now)) - os.time(utc)) -- os.time read the fields as local time
end

local function number(v) return type(v) == "number" and v or nil end

-- One run folder read: {id, dir, status, resumable, started, recipe, turns, cost, error, waiting}.
local function read_run(root, id)
  local dir = root .. "/" .. id
  local run = {id = id, dir = dir}
  local list = trace_events(dir .. "/trace.jsonl") or {}
  local first_start, last_start, last_end = nil, 0, 0
  for i, ev in ipairs(list) do
    if ev.type == "run_start" then
      first_start = first_start or ev
      last_start = i
    elseif ev.type == "run_end" then
      last_end = i
    end
  end
  -- turns and cost: the agents that ended since the last run_start (a resume's count the replayed turns)
  for i = last_start + 1, #list do
    local ev = list[i]
    if ev.type == "agent_end" then
      if number(ev.turns) then run.turns = (run.turns or 0) + ev.turns end
      if number(ev.cost) then run.cost = (run.cost or 0) + ev.cost end
    end
  end
  run.started = id_time(id) or (first_start and number(first_start.time))
  run.recipe = first_start and type(first_start.recipe) == "string" and first_start.recipe or nil
  local journaled = fs.exists(dir .. "/journal.jsonl") and fs.exists(dir .. "/resume.argv")
  local ended = last_end > last_start and list[last_end] or nil
  if ended then
    run.status = type(ended.status) == "string" and ended.status or "ended"
    run.error = type(ended.error) == "string" and ended.error or nil
    run.waiting = ended.waiting ~= json.null and ended.waiting or nil
    run.resumable = journaled and GOES_ON[run.status] or false
  elseif journal.lock_holder(dir) then
    run.status, run.resumable = "running", false
  else
    run.status, run.resumable = journaled and "resumable" or "killed", journaled
  end
  return run
end

-- Is this folder a run's (what a run writes first: its trace, or its journal)?
local function is_run(dir)
  local st = fs.stat(dir)
  return st and st.type == "directory" and (fs.exists(dir .. "/trace.jsonl") or fs.exists(dir .. "/journal.jsonl"))
end

function runs.list(root)
  local names = fs.list(root)
  if not names then return nil end
  local list = {}
  for _, name in ipairs(names) do
    if is_run(root .. "/" .. name) then list[#list + 1] = read_run(root, name) end
  end
  table.sort(list, function(a, b)
    if (a.started or 0) ~= (b.started or 0) then return (a.started or 0) > (b.started or 0) end
    return a.id > b.id
  end)
  return list
end

-- ---- for people ----

local function one_line(text, width)
  text = tostring(text):gsub("%s+", " ")
  if #text > width then text = text:sub(1, width - 3) .. "..." end
  return text
end

-- The id of the call a waiting run waits for (its run_end's waiting: {call = {id, tool, arguments}}, or
-- {call = ID, tool, arguments}), or nil.
local function call_id(w)
  if type(w) ~= "table" then return nil end
  local id = type(w.call) == "table" and w.call.id or w.call
  return (type(id) == "string" or type(id) == "number") and tostring(id) or nil
end

-- What a waiting run waits for, in one line.
local function waits_for(w)
  if type(w) ~= "table" then return one_line(w, 100) end
  local call = type(w.call) == "table" and w.call or w
  local args = call.arguments
  if type(args) == "table" then args = json.encode(args) end
  local text = "approval of " .. tostring(call.tool or call.name or "a tool call")
  if args ~= nil then text = text .. " " .. tostring(args) end
  if call_id(w) then text = text .. " (call " .. call_id(w) .. ")" end
  return one_line(text, 100)
end

-- How `luagent run --resume` names the run: its id when it is under the runs
-- folder it looks in, else its path.
local function resume_name(run, by_id)
  return by_id and run.id or run.dir
end

local function status_word(run)
  if run.resumable and run.status ~= "resumable" and run.status ~= "waiting" then return run.status .. ", resumable" end
  return run.status
end

local function show(list, by_id)
  local rows, width = {}, {#"ID", #"STATUS", #"STARTED", #"TURNS", #"COST"}
  for i, run in ipairs(list) do
    local row = {run.id, status_word(run), run.started and os.date("%Y-%m-%d %H:%M:%S", math.floor(run.started)) or "-",
                 run.turns and tostring(run.turns) or "-", run.cost and ("$%.4f"):format(run.cost) or "-"}
    for c, cell in ipairs(row) do width[c] = math.max(width[c], #cell) end
    rows[i] = row
  end
  local format = ("%%-%ds  %%-%ds  %%-%ds  %%%ds  %%%ds  %%s"):format(table.unpack(width))
  print((format:format("ID", "STATUS", "STARTED", "TURNS", "COST", "RECIPE")))
  for i, run in ipairs(list) do
    local row = rows[i]
    print((format:format(row[1], row[2], row[3], row[4], row[5], run.recipe or "-")))
    local name = resume_name(run, by_id)
    if run.status == "waiting" then
      if run.waiting then print("    waits for " .. waits_for(run.waiting)) end
      print(("    go on: luagent approve %s (or --deny %s --why TEXT), then luagent run --resume %s"):format(name,
        call_id(run.waiting) or "CALL", name))
    else
      if run.error and run.status ~= "ok" then print("    " .. one_line(run.error, 110)) end
      if run.resumable then print("    resume: luagent run --resume " .. name) end
    end
  end
end

local function show_json(list, by_id)
  for _, run in ipairs(list) do
    local out = {}
    for k, v in pairs(run) do out[k] = v end
    out.resume = run.resumable and ("luagent run --resume " .. resume_name(run, by_id)) or nil
    print(json.encode(out))
  end
end

function runs.main(args)
  local root, as_json
  for _, a in ipairs(args) do
    if a == "--json" then as_json = true
    elseif a:sub(1, 1) == "-" or root then
      io.stderr:write("luagent: runs: ", a:sub(1, 1) == "-" and "unknown option '" or "one folder at a time, not '",
        a, "'\n", USAGE, "\n")
      return 2
    else root = a end
  end
  local default = context.runs_root()
  root = (root or default):gsub("(.)/+$", "%1")
  local st = fs.stat(root)
  if st and st.type ~= "directory" then
    io.stderr:write("luagent: runs: ", root, " is not a folder\n", USAGE, "\n")
    return 2
  end
  local list = st and runs.list(root) or {}
  if #list == 0 then
    local where = root == default and " (the runs folder: $LUAGENT_RUNS_DIR, else ./runs)" or ""
    local text = ("no runs in %s%s: %s\n"):format(root, where, st and "it holds no run folder" or "there is no such folder")
    if as_json then io.stderr:write(text) else io.stdout:write(text) end
    return 0
  end
  -- `luagent run --resume ID` looks under the runs folder; elsewhere the command names the folder
  local by_id = fs.realpath(root) == fs.realpath(default)
  if as_json then show_json(list, by_id) else show(list, by_id) end
  return 0
end

return runs

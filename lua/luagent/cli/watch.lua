-- luagent run RECIPE --watch [run options]: runs the recipe, then again each
-- time the recipe, a YAML file it read through luagent.config or a Lua module
-- it loaded from disk changes, and says what changed since the run before:
-- each agent's instructions and task word by word (also when the scripted
-- driver, which ignores them, leaves all else the same), the final answer as
-- a unified diff, each declared output as a unified diff (text) or sizes and
-- sha256 (the rest), "new" and "gone".
--
-- How it works:
--   * Each run is a child process, `luagent run --cache RECIPE [run options]`
--     (the cache on, unless the options say --cache=refresh or --no-cache, so
--     a rerun is live only from the first model call that changed). It leads
--     its own process group, shares stdout and stderr (the live view) and
--     reads /dev/null.
--   * The child gets LUAGENT_WATCH_LIST=FILE (lua/luagent/watchlist.lua): it
--     lists the modules and YAML files it read and, at its end, its trace.
--     The final answer is the output of the trace's last agent_end event; the
--     outputs are those of the manifest.json files in the trace's folder
--     (luagent.outputs writes them), read from that folder.
--   * The watched files are polled 3 times a second (size and sha256, so an
--     edit within the same second is seen). A change reruns once the files
--     have kept still for a moment (an editor's save is several writes); a
--     change during a run reruns right after it.
--   * Ctrl-C (or SIGTERM): the child gets one SIGINT — it stops and saves
--     its outputs as usual — and is waited for (within the cancel grace,
--     LUAGENT_CANCEL_GRACE); then the watcher exits 130 with nothing left
--     running.
-- The main(args) of this module gets the recipe first, then the run's own
-- arguments as given, without --watch (src/main.c).
local diff = require "luagent.diff"
local compare = require "luagent.trace_page.compare"
local errors = require "luagent.errors"
local fs = require "luagent.fs"
local json = require "luagent.json"
local sched = require "luagent.sched"
local process = require "luagent.process"
local sys = require "luagent.sys"

local cli = {}

local POLL = 0.33         -- seconds between looks at the watched files
local SETTLE = 0.3        -- a change must keep still this long before a rerun
local HASH_LIMIT = 4 << 20 -- bigger files are compared by size and mtime
local TEXT_LIMIT = 1 << 20 -- outputs up to this size are diffed as text

local function say(fmt, ...)
  io.stdout:write("watch: ", fmt:format(...), "\n")
  io.stdout:flush()
end

-- ---- the watched files ----

local function fingerprint(path)
  local st = fs.stat(path)
  if not st then return "missing" end
  if st.size > HASH_LIMIT then return ("%d:%d"):format(st.size, st.mtime) end
  return st.size .. ":" .. (sys.sha256_file(path) or st.mtime)
end

-- {order = {path...}, fp = {path = fingerprint}}
local function new_watch_set() return {order = {}, fp = {}} end

local function add_file(set, path, fp)
  path = fs.realpath(path) or path
  if set.fp[path] then return end
  set.order[#set.order + 1] = path
  set.fp[path] = fp or fingerprint(path)
end

local function snapshot(set)
  local fps = {}
  for _, path in ipairs(set.order) do fps[path] = fingerprint(path) end
  return fps
end

local function differing(set, fps)
  local out = {}
  for _, path in ipairs(set.order) do
    if fps[path] ~= set.fp[path] then out[#out + 1] = path end
  end
  return out
end

-- Sleeps until a watched file changed and the files kept still for SETTLE;
-- returns the changed paths.
local function wait_for_change(set)
  while true do
    sched.sleep(POLL)
    local now = snapshot(set)
    local changed = differing(set, now)
    if #changed > 0 then
      repeat
        sched.sleep(SETTLE)
        local later = snapshot(set)
        local still = true
        for path, fp in pairs(later) do
          if now[path] ~= fp then still = false end
        end
        now = later
      until still
      return differing(set, now)
    end
  end
end

-- "a.lua, b.yaml and 3 more" (paths shown relative to the working folder)
local function names(paths, max)
  local cwd = (fs.realpath(".") or "") .. "/"
  local shown = {}
  for i = 1, math.min(#paths, max or 6) do
    local p = paths[i]
    shown[i] = p:sub(1, #cwd) == cwd and p:sub(#cwd + 1) or p
  end
  local text = table.concat(shown, ", ")
  if #paths > #shown then text = text .. (" and %d more"):format(#paths - #shown) end
  return text
end

-- ---- one run ----

-- The child's command line: this binary, `run`, the cache on unless the
-- options choose, then the run's own arguments.
local function child_argv(exe, run_args)
  local argv, chose = {exe, "run"}, false
  for _, a in ipairs(run_args) do
    if a == "--" then break end
    if a:match("^%-%-cache") or a == "--no-cache" then chose = true end
  end
  if not chose then argv[#argv + 1] = "--cache" end
  for _, a in ipairs(run_args) do argv[#argv + 1] = a end
  return argv
end

-- What the list file says: the files read, and the run's trace.
local function read_list(path)
  local files, trace = {}, nil
  for line in (fs.read(path) or ""):gmatch("[^\n]+") do
    local kind, value = line:match("^(%a+)\t(.*)$")
    if kind == "file" then files[#files + 1] = value
    elseif kind == "run" then trace = value end
  end
  return files, trace
end

-- The output of the trace's last agent_end event (nil when no agent ended),
-- and each agent's instructions and task (its agent_start events).
local function read_trace(trace_path)
  local answer, starts = nil, {}
  for line in (fs.read(trace_path) or ""):gmatch("[^\n]+") do
    if line:find('"agent_end"', 1, true) or line:find('"agent_start"', 1, true) then
      local ok, ev = pcall(json.decode, line)
      if ok and type(ev) == "table" and ev.type == "agent_end" then
        local out = ev.output
        if out == nil or out == json.null then answer = nil
        elseif type(out) == "string" then answer = out
        else answer = json.encode(out) end
      elseif ok and type(ev) == "table" and ev.type == "agent_start" then
        starts[#starts + 1] = ev
      end
    end
  end
  return answer, compare.prompts(starts)
end

-- The declared outputs of a run folder, from its manifest.json files:
-- {[path] = {size, sha256, file = where it is on this host}}
local function outputs_of(dir)
  local found = {}
  for _, entry in ipairs(fs.walk(dir) or {}) do
    if entry.type == "file" and (entry.path == "manifest.json" or entry.path:match("/manifest%.json$")) then
      local base = entry.path:match("^(.*)/manifest%.json$")
      local ok, manifest = pcall(json.decode, fs.read(dir .. "/" .. entry.path) or "")
      for _, f in ipairs(ok and type(manifest) == "table" and manifest.files or {}) do
        local key = base and (base .. "/" .. f.path) or f.path
        found[key] = {size = f.size, sha256 = f.sha256, file = dir .. "/" .. key}
      end
    end
  end
  return found
end

local function run_status(code, signal)
  if code == 0 then return "ok" end
  if code == 130 or signal == 2 then return "interrupted" end
  if signal then return ("ended by signal %d"):format(signal) end
  return ("failed (exit %d)"):format(code)
end

-- Runs the recipe once as a child (state.child while it runs).
local function run_once(state, n)
  fs.write(state.list, "")
  local env = process.environ()
  env.LUAGENT_WATCH_LIST = state.list
  local started = sched.now()
  local child, err = process.spawn{argv = child_argv(state.exe, state.run_args), env = env, stdin = "null",
                                   new_group = true}
  if not child then error(errors.wrap(err, "watch: cannot start the run"), 0) end
  state.child = child
  local code, signal = child:wait()
  state.child = nil
  child:close()
  local files, trace = read_list(state.list)
  local result = {n = n, status = run_status(code, signal), took = sched.now() - started, files = files}
  if trace then
    result.trace = trace
    result.dir = trace:match("^(.*)/[^/]*$") or "."
    result.answer, result.prompts = read_trace(trace)
    result.outputs = outputs_of(result.dir)
  end
  return result
end

-- ---- what changed ----

local function short_sha(sha) return sha and sha:sub(1, 12) or "?" end

local function output_change(path, a, b, na, nb)
  if not a then return ("%s: new (%d bytes)\n"):format(path, b.size or 0) end
  if not b then return ("%s: gone\n"):format(path) end
  if a.sha256 == b.sha256 then return nil end
  local ta = (a.size or 0) <= TEXT_LIMIT and fs.read(a.file)
  local tb = (b.size or 0) <= TEXT_LIMIT and fs.read(b.file)
  if ta and tb then
    return diff.unified(ta, tb, {a_name = ("%s (run %d)"):format(path, na), b_name = ("%s (run %d)"):format(path, nb)})
  end
  return ("%s: %d bytes, sha256 %s -> %d bytes, sha256 %s\n"):format(path, a.size or 0, short_sha(a.sha256),
    b.size or 0, short_sha(b.sha256))
end

local function sorted_union(a, b)
  local keys, seen = {}, {}
  for _, t in ipairs({a, b}) do
    for k in pairs(t) do
      if not seen[k] then seen[k], keys[#keys + 1] = true, k end
    end
  end
  table.sort(keys)
  return keys
end

-- Did every agent of the run run on the scripted driver (no model)?
local function scripted_only(r)
  if #(r.prompts or {}) == 0 then return false end
  for _, p in ipairs(r.prompts) do
    if not tostring(p.model or ""):match("^scripted/") then return false end
  end
  return true
end

-- Prints how run `cur` differs from run `prev`: the prompts word by word,
-- the final answer and the outputs as diffs, then what is unchanged.
local function report(prev, cur)
  say("run %d %s in %.1f s; since run %d:", cur.n, cur.status, cur.took, prev.n)
  local changes, same = {}, {}
  local prompts = compare.prompt_changes(prev.prompts or {}, cur.prompts or {},
    {a_label = ("run %d"):format(prev.n), b_label = ("run %d"):format(cur.n)})
  if #prompts > 0 then
    changes[#changes + 1] = "prompts:\n" .. table.concat(prompts, "\n")
  elseif #(cur.prompts or {}) > 0 then
    same[#same + 1] = "prompts"
  end
  local a, b = prev.answer or "", cur.answer or ""
  if a ~= b then
    changes[#changes + 1] = diff.unified(a, b, {a_name = ("final answer (run %d)"):format(prev.n),
                                                b_name = ("final answer (run %d)"):format(cur.n)})
  else
    same[#same + 1] = "final answer"
  end
  local pa, pb = prev.outputs or {}, cur.outputs or {}
  for _, path in ipairs(sorted_union(pa, pb)) do
    local text = output_change(path, pa[path], pb[path], prev.n, cur.n)
    if text then changes[#changes + 1] = text else same[#same + 1] = path end
  end
  for _, text in ipairs(changes) do io.stdout:write(text, text:sub(-1) == "\n" and "" or "\n") end
  if #prompts > 0 and #changes == 1 and scripted_only(cur) then
    say("only the prompts changed, and the scripted driver ignores them: a prompt edit changes the answer "
      .. "only with a model")
  end
  if #same > 0 then say("unchanged: %s", table.concat(same, ", ")) end
  io.stdout:flush()
end

local function line_count(text)
  local n = select(2, text:gsub("\n", ""))
  return text:sub(-1) == "\n" and n or n + 1
end

local function first_report(r, set)
  local outs = r.outputs and sorted_union(r.outputs, {}) or {}
  local answer = r.answer and ("%d line(s)"):format(line_count(r.answer)) or "none"
  say("run 1 %s in %.1f s; final answer: %s; outputs: %s", r.status, r.took, answer,
      #outs > 0 and table.concat(outs, ", ") or "none")
  say("watching %d files: %s (Ctrl-C to stop)", #set.order, names(set.order))
end

-- ---- the loop ----

local function watch_loop(state)
  local set = state.set
  local prev
  for n = 1, math.huge do
    local before = snapshot(set)
    local result = run_once(state, n)
    for path, fp in pairs(before) do set.fp[path] = fp end
    for _, path in ipairs(result.files) do add_file(set, path) end
    if prev then report(prev, result) else first_report(result, set) end
    prev = result
    local changed = wait_for_change(set)
    say("changed: %s; running again", names(changed))
  end
end

-- Ctrl-C while a run was going: it gets one SIGINT (it saves its outputs and
-- ends), within the grace period; what is left is killed with its group.
local function stop_child(state)
  local child = state.child
  if not child then return end
  state.child = nil
  child:kill("INT")
  local grace = tonumber(os.getenv("LUAGENT_CANCEL_GRACE") or "") or 10
  child:wait(math.max(grace - 0.5, 0.1))
  child:close()
end

function cli.main(args)
  local recipe = args[1]
  local run_args = table.move(args, 2, #args, 1, {})
  local list_dir = assert(fs.temp_dir("luagent-watch"))
  local state = {
    exe = assert(fs.realpath("/proc/self/exe")), run_args = run_args, list = list_dir .. "/watchlist.txt",
    set = new_watch_set(),
  }
  add_file(state.set, recipe)
  local ok, err = pcall(watch_loop, state)
  stop_child(state)
  fs.remove(list_dir)
  if not ok and not (errors.is(err) and err.kind == "cancelled") then error(err, 0) end
  say("stopped")
  return 0 -- after Ctrl-C the host's status is 130 (128 + SIGINT)
end

return cli

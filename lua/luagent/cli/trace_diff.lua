-- luagent trace diff A B: how two runs differ, step by step (luagent.cli.trace
-- sends `trace diff` here). A and B are trace.jsonl files or run folders
-- (runs/<run-id>/, whose trace.jsonl is read).
--
--   settings        run_start: the recipe, its settings (--set, eval variants), its arguments
--   prompts         each agent's instructions and task, word by word (luagent.trace_page.compare)
--   model requests  in order (first attempts; retries are the same request): for
--                   each that differs, the first field path where it does; runs
--                   of equal requests collapsed. Tool call ids and the "took N s"
--                   timings tools report are left out, as replay leaves them out.
--   tool calls      name and arguments, then the result (error or not, content)
--   final answer    the output of the last agent that finished, as a unified diff
--   outputs         the run folders' manifest.json: size and sha256 of each file;
--                   text files that differ as unified diffs
--
--   trace_diff.main(a, b) -> exit status: 0 the same, 1 different, 2 bad input (named)
--   trace_diff.load_run(path) -> run | nil, message   {path, dir, events, start, status,
--       requests, calls, final}
--   trace_diff.compare_outputs(dir_a, dir_b, {a_label = "A", b_label = "B"}) -> lines, n_different
--       (also for the watch mode: what changed in the declared outputs)
--   trace_diff.compare_answers(text_a, text_b, {a_label, b_label}) -> lines, different
-- (an answer as text, the diff of two, a manifest's file in a run folder:
-- luagent.trace_page.compare, which the eval page uses too)
local json = require "luagent.json"
local fs = require "luagent.fs"
local diff = require "luagent.diff"
local trace = require "luagent.trace"
local recording = require "luagent.model.recording"
local compare = require "luagent.trace_page.compare"

local trace_diff = {}

local HELP = "give a trace.jsonl file or a run folder (runs/<run-id>/)"
local MAX_DIFF_LINES = 200

-- ---- reading a run ----

local function parent(path)
  return path:match("^(.*)/[^/]*$") or "."
end

function trace_diff.load_run(arg)
  local st = fs.stat(arg)
  if not st then return nil, ("%s: no such file or folder; %s"):format(arg, HELP) end
  local path, dir = arg, parent(arg)
  if st.type == "directory" then
    path, dir = arg:gsub("/+$", "") .. "/trace.jsonl", arg:gsub("/+$", "")
    if not fs.exists(path) then return nil, ("%s is a folder without a trace.jsonl; %s"):format(arg, HELP) end
  end
  local events, err = trace.read(path)
  if not events then return nil, ("%s; %s"):format(err.message, HELP) end
  if #events == 0 then return nil, ("%s is empty, not a trace; %s"):format(path, HELP) end
  local run = {path = path, dir = dir, events = events, requests = {}, calls = {}}
  local open_calls = {}
  for _, ev in ipairs(events) do
    if ev.type == "run_start" then run.start = run.start or ev
    elseif ev.type == "run_end" then run.status = ev.status
    elseif ev.type == "model_request" and (ev.attempt or 1) == 1 then run.requests[#run.requests + 1] = ev
    elseif ev.type == "tool_call" then
      local call = {name = ev.name, arguments = ev.arguments}
      if type(call.arguments) == "string" then call.arguments = json.decode(call.arguments) or call.arguments end
      run.calls[#run.calls + 1] = call
      open_calls[tostring(ev.id)] = call
    elseif ev.type == "tool_result" then
      local call = open_calls[tostring(ev.id)] or run.calls[#run.calls]
      open_calls[tostring(ev.id)] = nil
      if call then call.result = {is_error = ev.is_error or false, content = ev.content} end
    elseif ev.type == "agent_end" then
      run.final = ev.output
      run.has_final = true
    end
  end
  if not run.start and #run.requests == 0 and #run.calls == 0 and not run.has_final then
    return nil, ("%s has no run_start, model request, tool call or agent end: not a run's trace; %s"):format(path, HELP)
  end
  run.start = run.start or {}
  return run
end

-- ---- what is compared ----

local ID_KEYS = {id = true, tool_call_id = true, tool_use_id = true, call_id = true}

local function blank_ids(v)
  if type(v) == "table" then
    for k, x in pairs(v) do
      if ID_KEYS[k] and type(x) == "string" then v[k] = "(id)" else blank_ids(x) end
    end
  end
  return v
end

-- A request body as compared: timings blanked as replay does, ids blanked.
local function normal_body(body)
  if type(body) ~= "table" then return body end
  return blank_ids(json.decode(recording.replay_key(body)))
end

local function same_value(a, b)
  return #diff.values(a, b, {max = 1}) == 0
end

local function blank_timing(text)
  if type(text) ~= "string" then return text end
  return (recording.replay_key(text))
end

-- Lines of a unified diff, indented, at most MAX_DIFF_LINES of them.
local function add_diff(out, text, indent)
  local n = 0
  for line in text:gmatch("[^\n]*\n?") do
    if line == "" then break end
    n = n + 1
    if n > MAX_DIFF_LINES then
      local _, rest = text:gsub("\n", "")
      out[#out + 1] = ("%s... (%d more lines)"):format(indent, rest - MAX_DIFF_LINES)
      break
    end
    out[#out + 1] = indent .. line:gsub("\n$", "")
  end
end

local function plural(n, word)
  return ("%d %s%s"):format(n, word, n == 1 and "" or "s")
end

-- "#3" or "#3-#5", for a run of positions.
local function span(first, last)
  return first == last and ("#%d"):format(first) or ("#%d-#%d"):format(first, last)
end

-- Calls each(i) -> lines | nil (nil: the same) for positions 1..n, collapsing
-- runs of the same into one "#i-#j same" line (no lines when all are the
-- same); returns the number different.
local function positions(out, n, each)
  local same_from, different, start = nil, 0, #out + 1
  local function flush(upto)
    if same_from then out[#out + 1] = ("  %s same"):format(span(same_from, upto)) end
    same_from = nil
  end
  for i = 1, n do
    local lines = each(i)
    if lines then
      flush(i - 1)
      different = different + 1
      for _, line in ipairs(lines) do out[#out + 1] = line end
    else
      same_from = same_from or i
    end
  end
  flush(n)
  if different == 0 then
    for i = #out, start, -1 do out[i] = nil end
  end
  return different
end

local function settings_section(out, a, b)
  local sa, sb = a.start, b.start
  local found = diff.values({recipe = sa.recipe, settings = sa.settings or {}, args = sa.args or {}},
                            {recipe = sb.recipe, settings = sb.settings or {}, args = sb.args or {}}, {max = 50})
  if #found == 0 then
    out[#out + 1] = "settings: same"
    return 0
  end
  out[#out + 1] = ("settings: %s"):format(plural(#found, "difference"))
  for _, d in ipairs(found) do
    out[#out + 1] = ("  %s\n    A: %s\n    B: %s"):format(d.path:gsub("^settings%.", ""), diff.short(d.a), diff.short(d.b))
  end
  return #found
end

-- A section over two lists compared position by position: its head line
-- ("tool calls: 3, 1 different"), then what each(i, x, y) says differs.
local function section(out, title, xs, ys, none, each)
  local n = math.max(#xs, #ys)
  if n == 0 then
    out[#out + 1] = title .. ": " .. none
    return 0
  end
  local head = #out + 1
  out[head] = ""
  local different = positions(out, n, function(i) return each(i, xs[i], ys[i]) end)
  out[head] = ("%s: %s%s"):format(title, #xs == #ys and tostring(#xs) or ("A %d, B %d"):format(#xs, #ys),
    different == 0 and ", the same" or (", %d different"):format(different))
  return different
end

local function requests_section(out, a, b)
  return section(out, "model requests", a.requests, b.requests, "none in either trace (a scripted model sends none)",
    function(i, x, y)
      if not y then return {("  #%d only in A (%s %s)"):format(i, tostring(x.provider), tostring(x.model))} end
      if not x then return {("  #%d only in B (%s %s)"):format(i, tostring(y.provider), tostring(y.model))} end
      if x.provider ~= y.provider then
        return {("  #%d differs in the provider\n    A: %s\n    B: %s"):format(i, tostring(x.provider),
          tostring(y.provider))}
      end
      local d = diff.values(normal_body(x.body), normal_body(y.body), {root = "request", max = 1})[1]
      if not d then return nil end
      return {("  #%d differs at %s\n    A: %s\n    B: %s"):format(i, d.path, diff.short(d.a), diff.short(d.b))}
    end)
end

local function call_text(call)
  return ("%s %s"):format(tostring(call.name), diff.short(call.arguments, 200))
end

local function result_text(r)
  if r.content == nil then return "(no result)" end
  return (r.is_error and "error " or "") .. diff.short(r.content, 200)
end

local function calls_section(out, a, b)
  return section(out, "tool calls", a.calls, b.calls, "none", function(i, x, y)
    if not y then return {("  #%d only in A: %s"):format(i, call_text(x))} end
    if not x then return {("  #%d only in B: %s"):format(i, call_text(y))} end
    local same_call = x.name == y.name and same_value(x.arguments, y.arguments)
    local rx, ry = x.result or {}, y.result or {}
    local same_result = rx.is_error == ry.is_error and same_value(blank_timing(rx.content), blank_timing(ry.content))
    if same_call and same_result then return nil end
    local lines = {}
    if same_call then lines[1] = ("  #%d %s: the same call, a different result"):format(i, call_text(x))
    else lines[1] = ("  #%d differs\n    A: %s\n    B: %s"):format(i, call_text(x), call_text(y)) end
    if not same_result then
      lines[#lines + 1] = ("    A result: %s\n    B result: %s"):format(result_text(rx), result_text(ry))
    end
    return lines
  end)
end

function trace_diff.compare_answers(text_a, text_b, opts)
  opts = opts or {}
  local a_label, b_label = opts.a_label or "A", opts.b_label or "B"
  if text_a == text_b then return {"final answer: same"}, false end
  local out = {"final answer: different"}
  add_diff(out, compare.answer_diff(text_a, text_b, a_label .. " final answer", b_label .. " final answer"), "  ")
  return out, true
end

-- ---- outputs ----

-- The files of a run folder's manifest.json by path, or nil and why not.
local function manifest_of(dir)
  local text = fs.read(dir .. "/manifest.json")
  if not text then return nil, "no manifest.json" end
  local m = json.decode(text)
  if type(m) ~= "table" or type(m.files) ~= "table" then return nil, "manifest.json is not a manifest" end
  local files = {}
  for _, f in ipairs(m.files) do
    if type(f) == "table" and type(f.path) == "string" then files[f.path] = f end
  end
  return files
end

local function describe_file(f)
  return ("%s bytes, sha256 %s"):format(tostring(f.size), tostring(f.sha256):sub(1, 16))
end

-- How one file of two manifests differs: one only in one run, a text diff, or sizes and hashes.
local function file_difference(dir_a, dir_b, path, fa, fb, a_label, b_label)
  if not fb then return ("  %s: only in %s (%s)"):format(path, a_label, describe_file(fa)) end
  if not fa then return ("  %s: only in %s (%s)"):format(path, b_label, describe_file(fb)) end
  local file_a, file_b = compare.run_file(dir_a, path), compare.run_file(dir_b, path)
  local ta, tb = file_a and fs.read(file_a), file_b and fs.read(file_b)
  if ta and tb and not ta:find("\0", 1, true) and not tb:find("\0", 1, true) then
    local added, removed = diff.lines_changed(ta, tb)
    local lines = {("  %s: different (+%d -%d lines)"):format(path, added, removed)}
    add_diff(lines, diff.unified(ta, tb, {a_name = a_label .. "/" .. path, b_name = b_label .. "/" .. path}), "    ")
    return table.concat(lines, "\n")
  end
  return ("  %s: different\n    %s: %s\n    %s: %s"):format(path, a_label, describe_file(fa), b_label, describe_file(fb))
end

function trace_diff.compare_outputs(dir_a, dir_b, opts)
  opts = opts or {}
  local a_label, b_label = opts.a_label or "A", opts.b_label or "B"
  local ma, why_a = manifest_of(dir_a)
  local mb, why_b = manifest_of(dir_b)
  if not ma and not mb then return {("outputs: none listed (%s in either run folder)"):format(why_a)}, 0 end
  local out = {""}
  if not ma then out[#out + 1] = ("  (%s in %s's run folder %s)"):format(why_a, a_label, dir_a) end
  if not mb then out[#out + 1] = ("  (%s in %s's run folder %s)"):format(why_b, b_label, dir_b) end
  ma, mb = ma or {}, mb or {}
  local paths = {}
  for path in pairs(ma) do paths[#paths + 1] = path end
  for path in pairs(mb) do if not ma[path] then paths[#paths + 1] = path end end
  table.sort(paths)
  local different = 0
  for _, path in ipairs(paths) do
    local fa, fb = ma[path], mb[path]
    if not (fa and fb and fa.sha256 == fb.sha256) then
      different = different + 1
      out[#out + 1] = file_difference(dir_a, dir_b, path, fa, fb, a_label, b_label)
    end
  end
  out[1] = ("outputs: %s%s"):format(plural(#paths, "file"),
    different == 0 and ", the same" or (", %d different"):format(different))
  return out, different
end

-- ---- prompts: each agent's instructions and task, word by word ----

-- (luagent.trace_page.compare's, which --watch and eval diff use too)
trace_diff.word_diff = compare.word_diff

-- Each agent's instructions and task (in the order they started), compared
-- in full: a prompt edit is seen even when no model request was made (the
-- scripted driver ignores the prompt).
local function prompts_section(out, a, b)
  return section(out, "prompts", compare.prompts(a.events), compare.prompts(b.events), "no agent started in either trace",
    function(i, x, y)
      if not x or not y then return {("  agent #%d only in %s"):format(i, x and "A" or "B")} end
      return compare.prompt_change(x, y)
    end)
end

-- ---- the command ----

function trace_diff.main(arg_a, arg_b)
  local a, why_a = trace_diff.load_run(arg_a)
  local b, why_b = trace_diff.load_run(arg_b)
  if not a or not b then
    io.stderr:write("luagent: trace diff: ", why_a or why_b, "\n")
    return 2
  end
  local out = {}
  for _, r in ipairs({a, b}) do
    out[#out + 1] = ("%s: %s (run %s, %s)"):format(#out == 0 and "A" or "B", r.path, tostring(r.start.run_id or "?"),
      r.status or "no run end")
  end
  local differences = {}
  local function note(n, what)
    if n and n ~= 0 and n ~= false then differences[#differences + 1] = what end
  end
  if a.status ~= b.status then
    out[#out + 1] = ("status: A %s, B %s"):format(a.status or "no run end", b.status or "no run end")
    note(1, "status")
  end
  note(settings_section(out, a, b), "settings")
  note(prompts_section(out, a, b), "prompts")
  note(requests_section(out, a, b), "model requests")
  note(calls_section(out, a, b), "tool calls")
  local lines, answer_differs = trace_diff.compare_answers(compare.answer_text(a.final),
    compare.answer_text(b.final))
  for _, line in ipairs(lines) do out[#out + 1] = line end
  note(answer_differs, "final answer")
  local output_lines, outputs_differ = trace_diff.compare_outputs(a.dir, b.dir)
  for _, line in ipairs(output_lines) do out[#out + 1] = line end
  note(outputs_differ, "outputs")
  if #differences == 0 then out[#out + 1] = "the runs are the same"
  else out[#out + 1] = "the runs differ in: " .. table.concat(differences, ", ") end
  io.stdout:write(table.concat(out, "\n"), "\n")
  return #differences == 0 and 0 or 1
end

return trace_diff

-- luagent trace show TRACE.jsonl [--full]       a run's steps, for people
-- luagent trace html TRACE.jsonl|RUN_DIR [-o OUT.html]   the run as one self-contained page
--   (luagent.trace_page: conversation, timeline, totals, outputs; default OUT: beside the trace)
-- luagent trace diff A B                        how two runs differ, step by step
--   (A, B: trace.jsonl files or run folders; luagent.cli.trace_diff)
--
--   cli.load(trace_path [, {partial = true}]) -> events | nil, err   with partial: events, cut
--     (the events before the first line that is not a whole event, and {line, message} of it)
--   cli.escape_html(text) -> text with & < > " escaped (luagent.highlight.escape)
--   cli.write_html(trace_path | run_dir, out_path) -> out_path | nil, err   the page, for other writers (the eval page)
local json = require "luagent.json"
local errors = require "luagent.errors"
local trace = require "luagent.trace"
local fs = require "luagent.fs"

local cli = {}

local USAGE = [[
usage: luagent trace show TRACE.jsonl [--full]
       luagent trace html TRACE.jsonl|RUN_DIR [-o OUT.html]
       luagent trace diff A B      (A, B: trace.jsonl files or run folders; exit 0 same, 1 different, 2 bad input)]]

-- The trace's events | nil, err (a line that is not a JSON event with a type: kind "json").
-- With opts.partial: the events before such a line, and where the trace is cut.
local function load(path, opts)
  local text, err = fs.read(path)
  if not text then return nil, err end
  local list, n = {}, 0
  for line in text:gmatch("[^\n]+") do
    n = n + 1
    local ev = json.decode(line)
    if type(ev) ~= "table" or type(ev.type) ~= "string" then
      local message = ("%s:%d: not a trace event (a JSON object with a \"type\")"):format(path, n)
      if opts and opts.partial then return list, {line = n, message = message} end
      return errors.fail("json", message, {path = path, line = n})
    end
    list[#list + 1] = ev
  end
  return list
end
cli.load = load

local function indent(text, max_lines)
  local out, n = {}, 0
  for line in (tostring(text) .. "\n"):gmatch("(.-)\n") do
    n = n + 1
    if max_lines and n > max_lines then
      out[#out + 1] = "      ..."
      break
    end
    out[#out + 1] = "      " .. line
  end
  return table.concat(out, "\n")
end

-- What `show` says after the events of a trace that is cut (a full disk, a
-- killed run): where, and that the run's end is missing. Returns the status.
local function say_cut(path, list, cut)
  if cut then
    io.stderr:write(("luagent: the trace %s is cut at line %d (not a whole event); the %d event%s before it "
      .. "are shown above\n"):format(path, cut.line, #list, #list == 1 and "" or "s"))
    return 1
  end
  if #list > 0 and list[#list].type ~= "run_end" then
    io.stderr:write(("luagent: the trace %s ends without run_end: the run was stopped before it finished "
      .. "(killed, or its disk filled up)\n"):format(path))
  end
  return 0
end

local function show(path, full)
  local list, cut = load(path, {partial = true})
  if not list then
    io.stderr:write("luagent: ", cut.message, "\n")
    return 1
  end
  local limit = not full and 8 or nil
  for _, ev in ipairs(list) do
    local line = trace.describe(ev)
    if line then print(("[%7.2fs] %s"):format(ev.t or 0, line)) end
    if ev.type == "agent_turn" and type(ev.text) == "string" and ev.text ~= "" then print(indent(ev.text, limit)) end
    if ev.type == "tool_call" and ev.arguments ~= nil then
      local args = type(ev.arguments) == "table" and (ev.arguments.code or ev.arguments.command or json.encode(ev.arguments))
        or tostring(ev.arguments)
      print(indent(args, limit))
    end
    if ev.type == "tool_result" and full then print(indent(ev.content)) end
  end
  io.stdout:flush()
  return say_cut(path, list, cut)
end

cli.escape_html = require("luagent.highlight").escape

-- The trace file, the run folder and the default page of a trace file or a run folder.
local function html_paths(path)
  local st = fs.stat(path)
  if st and st.type == "directory" then
    local dir = path:gsub("/+$", "")
    return dir .. "/trace.jsonl", dir, dir .. "/trace.html"
  end
  return path, path:match("^(.*)/[^/]*$") or ".", path:gsub("%.jsonl$", "") .. ".html"
end

-- The page of a run (luagent.trace_page), written to `out` (default: beside the trace).
function cli.write_html(path, out)
  local trace_path, dir, default = html_paths(path)
  local list, err = load(trace_path)
  if not list then
    return errors.fail(err.kind, err.message .. "; give a trace.jsonl file or a run folder (runs/<run-id>/)",
      {path = trace_path, line = err.line})
  end
  out = out or default
  local page = require("luagent.trace_page").render(list, {dir = dir, out = out, source = trace_path})
  local ok, werr = fs.write(out, page) -- atomic: a temporary file, then a rename
  if not ok then return nil, werr end
  return out
end

local function html(path, out)
  local written, err = cli.write_html(path, out)
  if not written then
    io.stderr:write("luagent: ", err.message, "\n")
    return 1
  end
  print(written)
  return 0
end

function cli.main(args)
  local command, path = args[1], args[2]
  if command == "diff" then
    if not args[2] or not args[3] or args[4] then
      io.stderr:write(USAGE, "\n")
      return 2
    end
    return require("luagent.cli.trace_diff").main(args[2], args[3])
  end
  if not path or (command ~= "show" and command ~= "html") then
    io.stderr:write(USAGE, "\n")
    return 2
  end
  if command == "show" then return show(path, args[3] == "--full") end
  local out = args[3] == "-o" and args[4] or nil
  return html(path, out)
end

return cli

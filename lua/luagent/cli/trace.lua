-- luagent trace show TRACE.jsonl [--full]       a run's steps, for people
-- luagent trace html TRACE.jsonl [-o OUT.html]  the same as one self-contained page
-- luagent trace diff A B                        how two runs differ, step by step
--   (A, B: trace.jsonl files or run folders; luagent.cli.trace_diff)
--
--   cli.load(trace_path [, {partial = true}]) -> events | nil, err   with partial: events, cut
--     (the events before the first line that is not a whole event, and {line, message} of it)
--   cli.escape_html(text) -> text with & < > " escaped
--   cli.write_html(trace_path, out_path) -> out_path | nil, err   the page, for other writers (the eval page)
local json = require "luagent.json"
local errors = require "luagent.errors"
local trace = require "luagent.trace"
local fs = require "luagent.fs"

local cli = {}

local USAGE = [[
usage: luagent trace show TRACE.jsonl [--full]
       luagent trace html TRACE.jsonl [-o OUT.html]
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

local function escape(s)
  return (tostring(s):gsub("[&<>\"]", {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;"}))
end
cli.escape_html = escape

local STYLE = [[
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}h1{font-size:1.3em}
table{border-collapse:collapse;width:100%}td{border-bottom:1px solid #eee;padding:.3em .5em;vertical-align:top}
td.t{color:#888;white-space:nowrap;text-align:right}td.k{white-space:nowrap;font-weight:600}
pre{white-space:pre-wrap;background:#f7f7f7;padding:.5em;margin:.3em 0;max-height:30em;overflow:auto}
.tool_result.err td.k{color:#b00}.agent_end td,.run_end td{background:#f3f8ff}]]

-- The page of a trace's events.
local function page_of(list)
  local first = list[1] or {}
  local rows = {}
  for _, ev in ipairs(list) do
    local summary = trace.describe(ev) or ""
    local class = tostring(ev.type) .. ((ev.type == "tool_result" and ev.is_error) and " err" or "")
    rows[#rows + 1] = ('<tr class="%s"><td class="t">%.2fs</td><td class="k">%s</td><td>%s<details><summary>details</summary>'
      .. "<pre>%s</pre></details></td></tr>"):format(escape(class), tonumber(ev.t) or 0, escape(ev.type), escape(summary),
      escape(json.encode(ev, {indent = 2})))
  end
  return ("<!doctype html><meta charset=utf-8><title>luagent run %s</title><style>%s</style>"
    .. "<h1>luagent run %s</h1><p>%s</p><table>%s</table>\n"):format(escape(first.run_id or "?"), STYLE,
    escape(first.run_id or "?"), escape(first.recipe or ""), table.concat(rows, "\n"))
end

function cli.write_html(path, out)
  local list, err = load(path)
  if not list then return nil, err end
  out = out or path:gsub("%.jsonl$", "") .. ".html"
  local ok, werr = fs.write(out, page_of(list))
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

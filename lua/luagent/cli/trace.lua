-- luagent trace show TRACE.jsonl|RUN_DIR [--full]   a run's steps, for people
-- luagent trace html TRACE.jsonl|RUN_DIR [-o OUT.html]   the run as one self-contained page
--   (luagent.trace_page: conversation, timeline, totals, outputs; default OUT: beside the trace)
-- luagent trace diff A B                        how two runs differ, step by step
--   (A, B: trace.jsonl files or run folders; luagent.cli.trace_diff)
--
-- (a trace is read by luagent.trace.read; its page is written by luagent.trace_page.write)
local json = require "luagent.json"
local trace = require "luagent.trace"

local cli = {}

local USAGE = [[
usage: luagent trace show TRACE.jsonl|RUN_DIR [--full]
       luagent trace html TRACE.jsonl|RUN_DIR [-o OUT.html]
       luagent trace diff A B      (A, B: trace.jsonl files or run folders; exit 0 same, 1 different, 2 bad input)]]

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
  local st = require("luagent.fs").stat(path)
  if st and st.type == "directory" then path = path:gsub("/+$", "") .. "/trace.jsonl" end -- a run folder: its trace
  local list, cut = trace.read(path, {partial = true})
  if not list then
    io.stderr:write("luagent: ", cut.message, "\n")
    return 1
  end
  if #list == 0 and not cut then
    io.stderr:write(("luagent: the trace %s is empty: no event was written (the run never started, or it was "
      .. "stopped before its first event)\n"):format(path))
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

local function html(path, out)
  local written, err = require("luagent.trace_page").write(path, out)
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
  if command == "show" then -- TRACE|RUN and --full, in either order
    local target, full = nil, false
    for i = 2, #args do
      if args[i] == "--full" then full = true
      elseif args[i]:sub(1, 1) == "-" or target then io.stderr:write(USAGE, "\n") return 2
      else target = args[i] end
    end
    if not target then io.stderr:write(USAGE, "\n") return 2 end
    return show(target, full)
  end
  local out = args[3] == "-o" and args[4] or nil
  return html(path, out)
end

return cli

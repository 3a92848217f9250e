-- luagent.tools: the tools a model sees. Each is a plain table:
--
--   {name = "run_python", description = "...", parameters = {JSON Schema}, handler = function(args, ctx) ... end}
--
-- The handler returns the text the model reads (or {text = ..., images = {...}}),
-- or raises (the tools here raise luagent.errors values): the agent turns an
-- error into a tool result the model can read and fix — but a cancellation
-- (Ctrl-C, SIGTERM) goes through as it is and ends the run. A recipe adds its own tool in a few lines:
--
--   local lookup = {name = "lookup_country", description = "ISO code of a country name",
--     parameters = {type = "object", properties = {name = {type = "string"}}, required = {"name"}},
--     handler = function(args) return CODES[args.name:lower()] or "unknown" end}
--
-- The sandbox tools here all work on one session (`box`) and its /workspace.
local errors = require "luagent.errors"
local events = require "luagent.events"
local options = require "luagent.options"
local message_content = require "luagent.model.content"
local sched = require "luagent.sched"
local sys = require "luagent.sys"
local common = require "luagent.tools.common"

local tools = {}
local fail, checked, schema = common.fail, common.checked, common.schema

-- "took 1.23 s": replays match requests with any value here (luagent.trace),
-- since how long a command takes differs from run to run.
local function seconds(d)
  return d < 10 and ("%.2f s"):format(d) or ("%.0f s"):format(d)
end

function tools.took(d)
  return "took " .. seconds(d)
end

-- The text a model reads for a command's result.
function tools.format_exec(r, opts)
  opts = opts or {}
  local lines = {("exit code %d (%s)"):format(r.exit_code, tools.took(r.duration or 0))}
  if r.timed_out then
    lines[#lines + 1] = ("the command was stopped after %s: it ran past its timeout"):format(seconds(opts.timeout or r.duration))
  end
  if r.oom_killed then
    lines[#lines + 1] = "the command was killed for using more memory than the sandbox has"
      .. (opts.memory and (" (" .. opts.memory .. ")") or "") .. "; use less memory, e.g. read the data in chunks"
  end
  if r.state_lost then
    lines[#lines + 1] = "note: the Python session was restarted before this call (an earlier call was stopped), "
      .. "so variables and imports from before are gone"
  end
  if r.truncated then
    lines[#lines + 1] = ("the output was long (%d bytes of stdout, %d of stderr): the middle is left out"):format(
      r.stdout_bytes or #r.stdout, r.stderr_bytes or #r.stderr)
  end
  if r.stdout ~= "" then lines[#lines + 1] = "stdout:\n" .. r.stdout end
  if r.stderr ~= "" then lines[#lines + 1] = "stderr:\n" .. r.stderr end
  if r.stdout == "" and r.stderr == "" then lines[#lines + 1] = "(no output)" end
  return table.concat(lines, "\n")
end

local LIVE_EVERY = 0.5 -- seconds: output that comes faster is one sandbox_output event
local LIVE_TEXT = 4096 -- bytes of an event's text at most (its end: the whole output is in the result)

-- An on_output for box:exec and box:python that traces a command's output
-- as it comes: a sandbox_output event {session, tool, stream, text} at most
-- every LIVE_EVERY seconds per stream (the live view shows its last line,
-- the trace page the pieces with their times). Returns on_output and
-- flush (the rest, once the command ended).
function tools.live_output(box, tool)
  local pending, last = {stdout = {}, stderr = {}}, {stdout = 0, stderr = 0}
  local function emit(stream)
    if #pending[stream] == 0 then return end
    local text = table.concat(pending[stream])
    if #text > LIVE_TEXT then text = ("[... %d bytes before ...]\n"):format(#text - LIVE_TEXT) .. text:sub(-LIVE_TEXT) end
    events.emit({type = "sandbox_output", session = box.session, tool = tool, stream = stream, text = text})
    pending[stream], last[stream] = {}, sched.now()
  end
  local function on_output(text, stream)
    table.insert(pending[stream], text)
    if sched.now() - last[stream] >= LIVE_EVERY then emit(stream) end
  end
  return on_output, function() emit("stdout"); emit("stderr") end
end

function tools.run_python(box, opts)
  opts = opts or {}
  return {
    name = "run_python",
    description = "Run Python 3 code in the sandbox (numpy, pandas, scipy and matplotlib are installed; no network). "
      .. "Variables and imports persist between calls, like a notebook. The working directory is /workspace; "
      .. "the value of a final expression is printed. Save files under /workspace/output.",
    parameters = schema({code = {type = "string", description = "The Python code to run."}}, {"code"}),
    box = box,
    handler = function(args)
      local on_output, flush = tools.live_output(box, "run_python")
      local r, err = box:python(args.code, {timeout = opts.timeout, on_output = on_output})
      flush()
      r = checked(r, err)
      return tools.format_exec(r, {timeout = opts.timeout or box.timeout, memory = box.memory})
    end,
  }
end

function tools.run_shell(box, opts)
  opts = opts or {}
  return {
    name = "run_shell",
    description = "Run a shell command (sh -c) in the sandbox, in /workspace, without network access.",
    parameters = schema({command = {type = "string", description = "The command line."}}, {"command"}),
    box = box,
    handler = function(args)
      local on_output, flush = tools.live_output(box, "run_shell")
      local r, err = box:exec(args.command, {timeout = opts.timeout, on_output = on_output})
      flush()
      r = checked(r, err)
      return tools.format_exec(r, {timeout = opts.timeout or box.timeout, memory = box.memory})
    end,
  }
end

local MAX_READ = 200000

function tools.read_file(box)
  return {
    name = "read_file",
    description = "Read a text file from the workspace. Long files: pass offset and limit (in lines).",
    parameters = schema({path = {type = "string", description = "Path relative to /workspace."},
                         offset = {type = "integer", description = "First line to show, from 1."},
                         limit = {type = "integer", description = "How many lines to show."}}, {"path"}),
    box = box,
    handler = function(args)
      local content
      if type(args.path) == "string" and args.path:match("^/skills/") and not args.path:find("/%.%.?/") then
        local r = checked(box:exec({"cat", "--", args.path})) -- a skill's file (luagent.skills): outside the workspace
        if r.exit_code ~= 0 then fail(r.stderr) end
        content = r.stdout
      else
        content = checked(box:get(args.path, {max_bytes = 64 * 1024 * 1024}))
      end
      if content:find("\0", 1, true) then
        return ("%s is a binary file of %d bytes; inspect it with run_python"):format(args.path, #content)
      end
      local offset, limit = math.max(1, math.tointeger(args.offset) or 1), math.tointeger(args.limit)
      if offset == 1 and not limit and #content <= MAX_READ then return content end
      local lines, n = {}, 0
      for line in (content .. "\n"):gmatch("(.-)\n") do
        n = n + 1
        if n >= offset and (not limit or n < offset + limit) then lines[#lines + 1] = line end
      end
      local text = table.concat(lines, "\n")
      if #text > MAX_READ then text = text:sub(1, MAX_READ) .. "\n[... cut at " .. MAX_READ .. " characters]" end
      return ("lines %d-%d of %d:\n%s"):format(offset, offset + #lines - 1, n - 1, text)
    end,
  }
end

function tools.write_file(box)
  return {
    name = "write_file",
    description = "Write a text file in the workspace (folders are created; an existing file is replaced).",
    parameters = schema({path = {type = "string", description = "Path relative to /workspace."},
                         content = {type = "string", description = "The whole content."}}, {"path", "content"}),
    box = box,
    handler = function(args)
      checked(box:put(args.path, args.content))
      return ("wrote %s (%d bytes)"):format(args.path, #args.content)
    end,
  }
end

function tools.list_files(box)
  return {
    name = "list_files",
    description = "List files under a folder of the workspace, with their sizes.",
    parameters = schema({path = {type = "string", description = "Folder relative to /workspace (default: all)."},
                         depth = {type = "integer", description = "How deep to look (default 3)."}}),
    box = box,
    handler = function(args)
      local depth = math.tointeger(args.depth) or 3
      local r = checked(box:exec({"find", args.path or ".", "-mindepth", "1", "-maxdepth", tostring(depth),
        "-not", "-path", "*/.luagent*", "-printf", "%y %8s  %P\n"}))
      if r.exit_code ~= 0 then
        fail(r.stderr ~= "" and r.stderr or "cannot list " .. (args.path or "."))
      end
      return r.stdout ~= "" and r.stdout or "(empty)"
    end,
  }
end

local IMAGE_TYPES = {
  {"\137PNG\r\n\26\n", "image/png"}, {"\255\216\255", "image/jpeg"}, {"GIF8", "image/gif"}, {"RIFF", "image/webp"},
}

function tools.view_image(box)
  return {
    name = "view_image",
    description = "Look at an image file from the workspace (PNG, JPEG, GIF, WebP), e.g. a chart you saved, "
      .. "to check it shows what you meant.",
    parameters = schema({path = {type = "string", description = "Path relative to /workspace."}}, {"path"}),
    box = box,
    handler = function(args)
      local data = checked(box:get(args.path, {max_bytes = 8 * 1024 * 1024}))
      local media_type
      for _, t in ipairs(IMAGE_TYPES) do
        if data:sub(1, #t[1]) == t[1] then media_type = t[2] break end
      end
      if not media_type then fail(args.path .. " is not a PNG, JPEG, GIF or WebP image") end
      return {text = ("%s (%s, %d bytes)"):format(args.path, media_type, #data),
              images = {message_content.image(sys.base64(data), media_type)}}
    end,
  }
end

-- The exec tool pair coding models know: exec_command, write_stdin
-- (luagent.tools.unified_exec).
function tools.unified_exec(box, opts)
  return require("luagent.tools.unified_exec").tools(box, opts)
end

local SHELLS = {plain = true, unified = true, native = true}
local EDITS = {plain = true, native = true}

-- A copy of tool offered only on these wires (the model adapters' names).
local function only_on(tool, wires)
  tool.only = wires
  return tool
end

-- The shell tools of opts.shell: plain (run_shell), unified (exec_command,
-- write_stdin), native (each family's own: Responses' shell, Anthropic's
-- bash, run_shell on Chat Completions).
local function shell_tools(box, shell, opts)
  if shell == "unified" then return tools.unified_exec(box, opts) end
  if shell == "plain" then return {tools.run_shell(box, opts)} end
  local shells = require "luagent.tools.shells"
  return {shells.shell(box, opts), shells.bash(box, opts), only_on(tools.run_shell(box, opts), {openai = true})}
end

-- The built-in tools by name: name -> function(box, opts) returning the
-- tools it adds (exec_command comes with write_stdin, its other half).
local function editing(name) return function(box) return {require("luagent.tools.editing")[name](box)} end end
local function native_shell(name) return function(box, opts) return {require("luagent.tools.shells")[name](box, opts)} end end
tools.BUILT_IN = {
  run_python = function(box, opts) return {tools.run_python(box, opts)} end,
  run_shell = function(box, opts) return {tools.run_shell(box, opts)} end,
  read_file = function(box) return {tools.read_file(box)} end,
  write_file = function(box) return {tools.write_file(box)} end,
  list_files = function(box) return {tools.list_files(box)} end,
  view_image = function(box) return {tools.view_image(box)} end,
  exec_command = function(box, opts) return tools.unified_exec(box, opts) end,
  apply_patch = editing("apply_patch"), edit_file = editing("edit_file"),
  shell = native_shell("shell"), bash = native_shell("bash"),
}
tools.BUILT_IN.write_stdin = tools.BUILT_IN.exec_command

local function sorted_names(t)
  local names = {}
  for k in pairs(t) do names[#names + 1] = k end
  table.sort(names)
  return names
end

-- A list of tool names from opts (add or drop): each checked against known.
local function names_in(list, key, known)
  if list == nil then return {} end
  if type(list) ~= "table" then list = {list} end
  local names = sorted_names(known)
  for i, name in ipairs(list) do
    if not known[name] then
      error(errors.new("config", ("tools.standard: %s[%d] '%s' is not a %s%s; the names are %s"):format(key, i,
        tostring(name), key == "add" and "built-in tool" or "tool of the set",
        options.suggest(tostring(name), names), table.concat(names, ", "))), 3)
    end
  end
  return list
end

-- The set with opts.add's built-ins added (once each) and opts.drop's left out.
local function add_and_drop(list, box, opts)
  local have = {}
  for _, tool in ipairs(list) do have[tool.name] = true end
  for _, name in ipairs(names_in(opts.add, "add", tools.BUILT_IN)) do
    if not have[name] then
      for _, tool in ipairs(tools.BUILT_IN[name](box, opts)) do
        if not have[tool.name] then list[#list + 1], have[tool.name] = tool, true end
      end
    end
  end
  local drop = {}
  for _, name in ipairs(names_in(opts.drop, "drop", have)) do drop[name] = true end
  local kept = {}
  for _, tool in ipairs(list) do if not drop[tool.name] then kept[#kept + 1] = tool end end
  return kept
end

-- The usual set for a code-running agent. opts.shell: "plain" (run_shell,
-- the default), "unified" (exec_command and write_stdin: long commands
-- polled, interactive programs driven) or "native" (the model family's own
-- shell tool). opts.edit: "plain" (write_file, the default) or "native"
-- (Responses' apply_patch, Anthropic's text editor, both as functions on
-- Chat Completions). opts.add: more built-ins by name; opts.drop: names left out.
function tools.standard(box, opts)
  opts = opts or {}
  options.check(opts, "luagent.SandboxToolOptions", "tools.standard")
  local shell, edit = opts.shell or "plain", opts.edit or "plain"
  if not SHELLS[shell] then
    error(("tools.standard: shell must be \"plain\", \"unified\" or \"native\", got %s"):format(tostring(shell)), 2)
  end
  if not EDITS[edit] then
    error(("tools.standard: edit must be \"plain\" or \"native\", got %s"):format(tostring(edit)), 2)
  end
  local list = {tools.run_python(box, opts)}
  for _, tool in ipairs(shell_tools(box, shell, opts)) do list[#list + 1] = tool end
  list[#list + 1] = tools.read_file(box)
  if edit == "native" then
    local editing_tools = require "luagent.tools.editing"
    list[#list + 1] = editing_tools.apply_patch(box)
    list[#list + 1] = editing_tools.edit_file(box)
  else
    list[#list + 1] = tools.write_file(box)
  end
  list[#list + 1] = tools.list_files(box)
  list[#list + 1] = tools.view_image(box)
  return add_and_drop(list, box, opts)
end

-- The tools of an MCP server (luagent.mcp): tools.mcp{command = {...}} or
-- tools.mcp{url = "http://host/mcp"}, with only, prefix, ... -> list | nil, err
function tools.mcp(opts)
  return require("luagent.mcp").tools(opts)
end

-- Checks a tool table's shape; raises naming what is wrong.
function tools.check(tool, where)
  where = where or "tool"
  if type(tool) ~= "table" then error(where .. " must be a table {name, description, parameters, handler}", 3) end
  if type(tool.name) ~= "string" or not tool.name:match("^[%w_%-]+$") then
    error(where .. ": name must be letters, digits, _ or -", 3)
  end
  if type(tool.handler) ~= "function" then error(where .. " '" .. tool.name .. "' has no handler function", 3) end
  if tool.parameters ~= nil and type(tool.parameters) ~= "table" then
    error(where .. " '" .. tool.name .. "': parameters must be a JSON Schema table", 3)
  end
  return tool
end

return tools

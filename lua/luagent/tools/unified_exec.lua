-- luagent.tools.unified_exec: the exec tool pair coding models are trained
-- on (Codex's exec_command and write_stdin). exec_command starts a command
-- and returns what it printed within yield_time_ms; a command still running
-- then keeps running as a session the model polls and types into with
-- write_stdin. A command that ends within the yield returns as run_shell's
-- would, with no session.
--
--   unified_exec.tools(box [, {max_sessions, timeout}]) -> {exec_command, write_stdin}
--
-- Sessions are box:spawn processes (with tty = true: a pseudo-terminal), so
-- they run as the sandbox user under its limits and their trees are killed
-- when the box closes. At most max_sessions (default 8) run per box: a new
-- one past the cap ends the least recently used, and its output says so.
-- Each call is one tool step in the trace: the command or the keys sent, and
-- what came back.
local errors = require "luagent.errors"
local sched = require "luagent.sched"
local common = require "luagent.tools.common"

local unified = {}

local DEFAULT_SESSIONS = 8
local YIELD = {exec = 10000, write = 250, min = 0, max = 30000} -- milliseconds (0: what came so far)
local DEFAULT_TOKENS = 10000
local BYTES_PER_TOKEN = 4 -- what max_output_tokens allows, counted as bytes
local MAX_TOKENS = 100000

-- The sessions of each box, weakly keyed: a box's end ends them.
local per_box = setmetatable({}, {__mode = "k"})

local function sessions_of(box)
  local s = per_box[box]
  if not s then
    s = {list = {}, next_id = 1}
    per_box[box] = s
  end
  return s
end

local fail, checked, schema = common.fail, common.checked, common.schema

local function clamp_yield(ms, default)
  ms = math.tointeger(ms) or (type(ms) == "number" and math.floor(ms)) or default
  return math.min(YIELD.max, math.max(YIELD.min, ms))
end

-- Bytes kept of a long output: its head and its tail, the middle named.
local function capped(text, tokens)
  tokens = math.tointeger(tokens) or DEFAULT_TOKENS
  local limit = math.max(1, math.min(tokens, MAX_TOKENS)) * BYTES_PER_TOKEN
  if #text <= limit then return text, false end
  local half = limit // 2
  return ("%s\n[... %d bytes left out ...]\n%s"):format(text:sub(1, half), #text - 2 * half, text:sub(-half)), true
end

-- The text the model reads after a call: how long it took, whether the
-- process ended (its exit code) or still runs (its session id), its output.
local function report(o)
  local lines = {("Wall time: %.3f seconds"):format(o.wall)}
  if o.evicted then
    lines[#lines + 1] = ("Session %d (the least recently used) was ended: at most %d sessions run at once")
      :format(o.evicted, o.max_sessions)
  end
  if o.result then
    local r = o.result
    local how = r.timed_out and " (stopped: it ran past its timeout)" or r.oom_killed
      and " (killed: it used more memory than the sandbox has)" or ""
    lines[#lines + 1] = ("Process exited with code %d%s"):format(r.exit_code, how)
  else
    lines[#lines + 1] = ("Process running with session ID %d"):format(o.id)
  end
  local text, cut = capped(o.output, o.max_output_tokens)
  if cut then lines[#lines + 1] = ("Output was %d bytes; its middle is left out"):format(#o.output) end
  lines[#lines + 1] = "Output:"
  lines[#lines + 1] = text
  return table.concat(lines, "\n")
end

local function joined(stdout, stderr)
  if stderr == nil or stderr == "" then return stdout or "" end
  return (stdout or "") .. (stdout ~= "" and not stdout:find("\n$") and "\n" or "") .. stderr
end

-- What a session printed until it ends or yield_ms pass: output, result | nil.
local function collect(box, session, yield_ms)
  local proc = session.proc
  local r, err = proc:wait(yield_ms / 1000)
  if r then
    sessions_of(box).list[session.id] = nil
    return joined(r.stdout, r.stderr), r
  end
  if err.kind ~= "timeout" then error(errors.from(err), 0) end
  local out, stderr = proc:read()
  if out == nil then error(errors.from(stderr), 0) end
  return joined(out, stderr), nil
end

-- Room for one more session: ended ones are forgotten, then the least
-- recently used is ended. Returns the id it ended, or nil.
local function make_room(box, max)
  local s, count, oldest = sessions_of(box), 0, nil
  for id, session in pairs(s.list) do
    if not session.proc:running() then
      session.proc:close()
      s.list[id] = nil
    else
      count = count + 1
      if not oldest or session.used < oldest.used then oldest = session end
    end
  end
  if count < max or not oldest then return nil end
  oldest.proc:close()
  s.list[oldest.id] = nil
  return oldest.id
end

local function exec_command(box, opts)
  local max = opts.max_sessions
  return {
    name = "exec_command",
    description = "Run a shell command (sh -c) in the sandbox, in /workspace. It returns what the command printed "
      .. "within yield_time_ms; a command still running then goes on as a session: read its output and type into it "
      .. "with write_stdin. Use tty = true for interactive programs (a Python REPL, prompts, pagers).",
    parameters = schema({
      cmd = {type = "string", description = "The command line."},
      workdir = {type = "string", description = "The folder to run it in (default: /workspace)."},
      tty = {type = "boolean", description = "Run it under a terminal (default: false)."},
      yield_time_ms = {type = "integer", description = "How long to wait for output before returning (default 10000)."},
      max_output_tokens = {type = "integer", description = "The most output to return (default 10000 tokens)."},
    }, {"cmd"}),
    box = box,
    handler = function(args)
      if type(args.cmd) ~= "string" or args.cmd == "" then fail("cmd must be a command line (a string)") end
      local evicted = make_room(box, max)
      local started = sched.now()
      local proc = checked(box:spawn(args.cmd, {tty = args.tty == true, stdin = args.tty ~= true or nil,
                                                cwd = args.workdir, timeout = opts.timeout}))
      local s = sessions_of(box)
      local session = {id = s.next_id, proc = proc, used = started, tty = args.tty == true}
      s.next_id = s.next_id + 1
      s.list[session.id] = session
      local output, result = collect(box, session, clamp_yield(args.yield_time_ms, YIELD.exec))
      return report{wall = sched.now() - started, id = session.id, result = result, output = output,
                    max_output_tokens = args.max_output_tokens, evicted = evicted, max_sessions = max}
    end,
  }
end

local function write_stdin(box)
  return {
    name = "write_stdin",
    description = "Type characters into a session exec_command left running (or send none, to read what it printed "
      .. "since). Returns what came within yield_time_ms. \"\\u0003\" is Ctrl-C, \"\\u0004\" Ctrl-D (end of input).",
    parameters = schema({
      session_id = {type = "integer", description = "The session's ID, from exec_command."},
      chars = {type = "string", description = "The characters to send (default: none)."},
      yield_time_ms = {type = "integer", description = "How long to wait for output before returning (default 250)."},
      max_output_tokens = {type = "integer", description = "The most output to return (default 10000 tokens)."},
    }, {"session_id"}),
    box = box,
    handler = function(args)
      local id = math.tointeger(args.session_id)
      local session = id and sessions_of(box).list[id]
      if not session then
        fail(("there is no session %s running: it ended (its output was returned then) or never was"):format(
          tostring(args.session_id)))
      end
      local started = sched.now()
      session.used = started
      local chars = args.chars or ""
      if type(chars) ~= "string" then fail("chars must be a string") end
      local ok, err = true, nil
      if chars == "\3" and not session.tty then -- no terminal to turn Ctrl-C into SIGINT: sent as the signal
        ok, err = session.proc:signal("INT")
      elseif chars == "\4" and not session.tty then
        ok, err = session.proc:close_stdin()
      elseif chars ~= "" then
        ok, err = session.proc:write(chars)
      end
      if not ok and err.kind ~= "io" then error(errors.from(err), 0) end
      local output, result = collect(box, session, clamp_yield(args.yield_time_ms, YIELD.write))
      return report{wall = sched.now() - started, id = id, result = result, output = output,
                    max_output_tokens = args.max_output_tokens}
    end,
  }
end

function unified.tools(box, opts)
  opts = opts or {}
  local max = opts.max_sessions or DEFAULT_SESSIONS
  if not (math.type(max) == "integer" and max >= 1) then
    error("tools: max_sessions must be a whole number >= 1 (sessions of exec_command at once), got " .. tostring(max), 3)
  end
  local o = {max_sessions = max, timeout = opts.timeout}
  return {exec_command(box, o), write_stdin(box)}
end

return unified

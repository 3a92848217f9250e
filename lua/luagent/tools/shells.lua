-- luagent.tools.shells: the shell tools of the model families, answered
-- from the sandbox (their place beside the editors: luagent.tools.editing).
--
--   shell(box [, {timeout}])  OpenAI Responses' own `shell` tool type: a call's
--                             commands run one by one through box:exec; its
--                             shell_call_output lists each one's stdout,
--                             stderr and outcome (exit code, or timeout)
--   bash(box [, {timeout}])   Anthropic's own bash_20250124: one bash process
--                             that keeps its variables and folder between
--                             calls; restart = true starts a new one
local errors = require "luagent.errors"
local sys = require "luagent.sys"
local sched = require "luagent.sched"
local common = require "luagent.tools.common"

local shells = {}

local DEFAULT_TIMEOUT = 120 -- seconds a bash command may run

local fail, checked, schema = common.fail, common.checked, common.schema

local function cut(text, limit)
  if not limit or #text <= limit then return text end
  local half = limit // 2
  return text:sub(1, half) .. ("\n[... %d bytes left out ...]\n"):format(#text - 2 * half) .. text:sub(-half)
end

-- ---- shell (Responses) ----

function shells.shell(box, opts)
  opts = opts or {}
  return {
    name = "shell",
    description = "Run shell commands in the sandbox, in /workspace, one after another.",
    parameters = schema({
      commands = {type = "array", items = {type = "string"}, description = "The command lines, run in order."},
      timeout_ms = {type = "integer", description = "Milliseconds each may run."},
      max_output_length = {type = "integer", description = "Bytes of output kept per command."}}, {"commands"}),
    native = {openai_responses = {type = "shell"}},
    only = {openai_responses = true},
    box = box,
    handler = function(args)
      if type(args.commands) ~= "table" or #args.commands == 0 then fail("commands must be a list of command lines") end
      local timeout = math.tointeger(args.timeout_ms) and args.timeout_ms / 1000 or opts.timeout
      local limit = math.tointeger(args.max_output_length)
      local output, text = {}, {}
      for i, command in ipairs(args.commands) do
        local r = checked(box:exec(tostring(command), {timeout = timeout}))
        local outcome = r.timed_out and {type = "timeout"} or {type = "exit", exit_code = r.exit_code}
        output[i] = {stdout = cut(r.stdout, limit), stderr = cut(r.stderr, limit), outcome = outcome}
        text[i] = ("$ %s\n%s%s(%s)"):format(command, output[i].stdout, output[i].stderr,
          r.timed_out and "timed out" or ("exit code " .. r.exit_code))
        if r.timed_out then break end
      end
      return {text = table.concat(text, "\n"), native = {output = output, max_output_length = limit}}
    end,
  }
end

-- ---- bash (Anthropic) ----

-- The persistent bash of each box, weakly keyed.
local sessions = setmetatable({}, {__mode = "k"})

local function start_bash(box)
  local proc = checked(box:spawn({"bash", "--noprofile", "--norc"}, {stdin = true}))
  sessions[box] = proc
  return proc
end

local function stop_bash(box)
  local proc = sessions[box]
  sessions[box] = nil
  if proc then proc:close() end
end

-- Runs command in the box's bash: stdout, stderr, exit code | raises.
local function run_in_bash(box, command, timeout)
  local proc = sessions[box]
  local note = ""
  if proc and not proc:running() then
    note, proc = "(the bash session had ended; a new one was started)\n", nil
  end
  proc = proc or start_bash(box)
  local marker = "__luagent_done_" .. sys.random_hex(8)
  local ok, err = proc:write(command .. "\nprintf '\\n" .. marker .. " %d\\n' \"$?\"\n")
  if not ok then stop_bash(box); error(errors.from(err), 0) end
  local out, errs, deadline = {}, {}, sched.now() + timeout
  while true do
    local stdout, stderr = proc:read(math.max(0.05, deadline - sched.now()))
    if stdout == nil then stop_bash(box); error(errors.from(stderr), 0) end
    out[#out + 1], errs[#errs + 1] = stdout, stderr
    local all = table.concat(out)
    local body, code = all:match("^(.-)\n?" .. marker .. " (%d+)\n")
    if body then return note .. body, table.concat(errs), tonumber(code) end
    if not proc:running() then stop_bash(box); return note .. all, table.concat(errs), nil end
    if sched.now() >= deadline then
      stop_bash(box)
      fail(("the command did not end within %d s and was stopped; the bash session was restarted (its variables "
        .. "and folder are gone)\n%s"):format(timeout, all))
    end
  end
end

function shells.bash(box, opts)
  opts = opts or {}
  local timeout = opts.timeout or DEFAULT_TIMEOUT
  return {
    name = "bash",
    description = "Run a command in a bash shell in the sandbox; the shell keeps its state between calls.",
    parameters = schema({
      command = {type = "string", description = "The command to run."},
      restart = {type = "boolean", description = "Start a new shell."}}),
    native = {anthropic = {type = "bash_20250124", name = "bash"}},
    only = {anthropic = true},
    box = box,
    handler = function(args)
      if args.restart then
        stop_bash(box)
        return "The bash session was restarted."
      end
      if type(args.command) ~= "string" or args.command == "" then fail("command is required (or restart = true)") end
      local stdout, stderr, code = run_in_bash(box, args.command, timeout)
      local text = stdout .. (stderr ~= "" and ((stdout ~= "" and "\n" or "") .. stderr) or "")
      if code == nil then text = text .. "\n(the shell exited; the next command starts a new one)" end
      if code and code ~= 0 then text = text .. ("\n(exit code %d)"):format(code) end
      return text ~= "" and text or "(no output)"
    end,
  }
end

return shells

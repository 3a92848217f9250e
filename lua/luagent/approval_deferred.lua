-- luagent.approval_deferred: approvals that wait for a person who is not at a
-- terminal (agent.new{approve = "defer"}). The first tool call that needs a
-- decision stops the run: runs/<id>/waiting.json says what it waits for
-- ({run_id, agent, turn, call = {id, tool, arguments}}), the run ends with an
-- error value of kind "waiting" (status waiting, exit 3) naming the commands.
-- `luagent approve RUN [--deny CALL --why TEXT]` writes the decision to
-- runs/<id>/approvals.jsonl, and `luagent run --resume RUN` goes on: the
-- journal brings the run back to that call (its id is the journaled one), and
-- the decision recorded for it answers.
--
--   deferred.decide(agent_run, call, turn, approved, refused) -> decision   (raises "waiting")
--   deferred.main(args) -> exit status   `luagent approve`
local errors = require "luagent.errors"
local fs = require "luagent.fs"
local json = require "luagent.json"
local context = require "luagent.context"

local deferred = {}

local WAITING, DECISIONS = "waiting.json", "approvals.jsonl"

-- The decisions recorded for a run folder: call id -> {decision, why}.
local function decisions_of(dir)
  local found = {}
  for line in (fs.read(dir .. "/" .. DECISIONS) or ""):gmatch("[^\n]+") do
    local ok, d = pcall(json.decode, line)
    if ok and type(d) == "table" and type(d.id) == "string" then found[d.id] = d end
  end
  return found
end

function deferred.decide(run, call, turn, approved, refused)
  local r = context.current()
  local dir = r:dir()
  local d = decisions_of(dir)[call.id]
  if d and d.decision == "approved" then return approved("luagent approve", call.arguments, call.arguments) end
  if d and d.decision == "denied" then
    return refused("luagent approve", d.why or "a person said no",
      "Not run: a person refused this call" .. (d.why and (": " .. d.why) or "."))
  end
  -- how it goes on: `luagent run --resume` for the command line's run; a run
  -- of an eval goes on with the eval's --resume (its settings are the eval's)
  local go_on = r == context.default() and ("luagent run --resume " .. dir)
    or "luagent eval SPEC --resume (the eval it is a run of)"
  local waiting = {run_id = r.id, agent = run.agent.name, turn = turn, go_on = go_on,
                   call = {id = call.id, tool = call.name, arguments = call.arguments}}
  fs.write(dir .. "/" .. WAITING, json.encode(waiting, {indent = 2}) .. "\n")
  r.waiting = waiting
  error(errors.new("waiting", ("the run waits for a person to approve %s (call %s, turn %d of %s): luagent approve %s "
    .. "(or --deny %s --why TEXT), then %s"):format(call.name, call.id, turn, run.agent.name, dir, call.id, go_on),
    {waiting = waiting}), 0)
end

-- ---- luagent approve RUN [--deny CALL --why TEXT] ----

local USAGE = "usage: luagent approve RUN [--deny CALL --why TEXT]"

local function usage(message)
  io.stderr:write("luagent: ", message, "\n", USAGE, "\n")
  return 2
end

-- RUN: a run folder, or an id under the runs folder.
local function run_dir(name)
  local st = fs.stat(name)
  if st and st.type == "directory" then return name end
  local under = context.runs_root() .. "/" .. name
  st = fs.stat(under)
  if st and st.type == "directory" then return under end
  return nil
end

local function parse(args)
  local o = {}
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "--deny" or a == "--why" then
      if not args[i + 1] then return nil, a .. " needs a value" end
      o[a:sub(3)] = args[i + 1]
      i = i + 2
    elseif a:match("^%-") then
      return nil, "unknown option '" .. a .. "'"
    elseif o.run then
      return nil, "one RUN at a time"
    else
      o.run, i = a, i + 1
    end
  end
  if not o.run then return nil, "approve needs a RUN (its folder, or its id)" end
  if o.why and not o.deny then return nil, "--why goes with --deny CALL" end
  return o
end

function deferred.main(args)
  local o, why = parse(args)
  if not o then return usage(why) end
  local dir = run_dir(o.run)
  if not dir then return usage(("no run '%s' (looked in %s)"):format(o.run, context.runs_root())) end
  local text = fs.read(dir .. "/" .. WAITING)
  local ok, waiting = pcall(json.decode, text or "")
  if not (text and ok and type(waiting) == "table" and type(waiting.call) == "table") then
    io.stderr:write(("luagent: the run %s waits for no approval\n"):format(dir))
    return 2
  end
  local call = waiting.call
  if o.deny and o.deny ~= call.id then
    io.stderr:write(("luagent: the run %s waits for the call %s (%s), not %s\n"):format(dir, call.id, call.tool, o.deny))
    return 2
  end
  local decision = {id = call.id, tool = call.tool, decision = o.deny and "denied" or "approved", why = o.why,
                    time = os.time()}
  assert(fs.append(dir .. "/" .. DECISIONS, json.encode(decision) .. "\n"))
  fs.remove(dir .. "/" .. WAITING)
  print(("%s %s (call %s, turn %d of %s); go on with: %s"):format(o.deny and "denied" or "approved", call.tool, call.id,
    waiting.turn or 0, waiting.agent or "the agent", waiting.go_on or ("luagent run --resume " .. dir)))
  return 0
end

return deferred

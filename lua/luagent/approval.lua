-- luagent.approval: whether an agent's tool call may run, and who said so.
--
--   agent.new{approve = function(call, ctx) return true end, ...}
--       true: run it; false, "reason": do not (the model reads the reason as the
--       tool's result); a table: run it with these arguments instead
--   agent.new{approve = "ask", ...}     a person answers on the terminal (/dev/tty)
--   agent.new{approve = "defer", ...}   the run stops, waiting: a person answers later with
--       `luagent approve RUN [--deny CALL --why TEXT]` and `luagent run --resume RUN` goes on
--       (luagent.approval_deferred)
--   a tool's needs_approval = true | false | function(args, ctx) -> bool
--
-- Which calls ask: a tool's needs_approval decides for its calls (a function
-- per call). A tool without one asks when the agent has `approve` and no tool
-- of the agent says needs_approval (so `approve` alone asks about every call,
-- and marking some tools narrows it to those). A tool with needs_approval in an
-- agent without `approve` asks the person ("ask"), so a dangerous tool is safe
-- in any agent.
--
-- Who answers, in order: "always" (a person said [a]lways for this tool in this
-- agent run); the recording, with --replay (the recorded decision answers, by =
-- "replay"); the approve function; for "ask": --yes approves, no terminal
-- refuses ("approval needed but no terminal: rerun with --yes or in a
-- terminal"), else the person: the tool and its arguments (pretty JSON), then
-- `[y]es / [n]o / [e]dit / [a]lways for this tool`. "n REASON" gives the model
-- the reason; "e" opens the arguments in $EDITOR (then $VISUAL, vi) in a temp
-- file, and asks again while they are not a JSON object. Input is read from
-- /dev/tty, so stdin may be redirected; the loop keeps running meanwhile.
--
-- Every decision is an `approval` event (tool, arguments, decision = "approved"
-- | "refused" | "changed" | "error", by = "function" | "person" | "--yes" |
-- "always" | "replay" | "no terminal", reason, changed_arguments), and with
-- --record a line of the recording (luagent.model.recording.add_approval).
--
--   approval.check(spec, tools)                   raises on a wrong approve or needs_approval (agent.new)
--   approval.decide(run, call, tool, turn) -> nil | decision
--       nil: the call needs no approval; decision = {approved = true, arguments, changed, by}
--       | {approved = false, reason, message (what the model reads), by}. An approve or
--       needs_approval function that raises (or returns something else) raises one error
--       naming the agent and the tool, after its event.
local json = require "luagent.json"
local errors = require "luagent.errors"
local context = require "luagent.context"

local approval = {}

local NO_TERMINAL = "approval needed but no terminal: rerun with --yes or in a terminal"

function approval.check(spec, tools)
  local a = spec.approve
  if a ~= nil and a ~= "ask" and a ~= "defer" and type(a) ~= "function" then
    error(errors.new("config", "agent.new: approve must be a function(call, ctx), \"ask\" or \"defer\", got "
      .. tostring(a)), 3)
  end
  for i, tool in ipairs(tools) do
    local n = tool.needs_approval
    if n ~= nil and type(n) ~= "boolean" and type(n) ~= "function" then
      error(("agent.new: tools[%d] '%s': needs_approval must be true, false or a function(args, ctx)"):format(
        i, tool.name), 3)
    end
  end
end

-- ---- the run's state: always, replayed decisions ----

local states = setmetatable({}, {__mode = "k"}) -- recipe run -> {replayed, used, warned}

local function recipe_run()
  return context.current()
end

local function state_of(r)
  local s = states[r]
  if not s then
    s = {used = {}}
    if r.replaying then s.replayed = r.replaying.approvals end
    states[r] = s
  end
  return s
end

local function same_arguments(a, b)
  return json.encode(a or {}) == json.encode(b or {})
end

local function replayed(call)
  local s = state_of(recipe_run())
  for i, entry in ipairs(s.replayed or {}) do
    if not s.used[i] and entry.tool == call.name and same_arguments(entry.arguments, call.arguments) then
      s.used[i] = true
      return entry
    end
  end
  return nil
end

-- ---- decisions ----

local function approved(by, arguments, original)
  local changed = arguments ~= original and not same_arguments(arguments, original)
  return {approved = true, by = by, arguments = arguments, changed = changed}
end

local function refused(by, reason, message)
  return {approved = false, by = by, reason = reason, message = message or ("Not run: the call was refused: " .. reason)}
end

-- A recorded decision (trace event or recording line) as a decision again.
local function from_entry(entry, call)
  if entry.decision == "refused" then
    return refused("replay", entry.reason or "refused", entry.message)
  end
  local args = entry.decision == "changed" and entry.changed_arguments or call.arguments
  local d = approved("replay", args, call.arguments)
  d.always = entry.always
  return d
end

-- ---- asking a person ----

local tty = {}

function tty.available()
  local f = io.open("/dev/tty", "r")
  if not f then return false end
  f:close()
  return true
end

function tty.say(text)
  local f = io.open("/dev/tty", "w")
  if f then
    f:write(text)
    f:close()
  end
end

-- Runs a shell line with the terminal; its stdout, and whether it succeeded.
local function shell(line, ...)
  local process = require "luagent.process"
  local proc <close>, err = process.spawn{argv = {"/bin/sh", "-c", line, "luagent", ...},
                                          stdin = "null", stdout = "pipe", stderr = "inherit"}
  if not proc then return nil, err.message end
  local out = {}
  while true do
    local piece = proc:read("stdout")
    if not piece then break end
    out[#out + 1] = piece
  end
  local code = proc:wait()
  return table.concat(out), code == 0 and "ok" or ("exit code " .. tostring(code))
end

-- One line typed at the terminal, or nil at its end.
function tty.read_line()
  local out, status = shell('IFS= read -r line </dev/tty || exit 1; printf "%s\\n" "$line"')
  if status ~= "ok" then return nil end
  return (out:gsub("\n$", ""))
end

-- The text after a person edited it in their editor, or nil, why.
function tty.edit(text)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  local _, status = shell('exec ${EDITOR:-${VISUAL:-vi}} "$1" </dev/tty >/dev/tty 2>&1', path)
  local edited
  f = io.open(path, "r")
  if f then
    edited = f:read("a")
    f:close()
  end
  os.remove(path)
  if status ~= "ok" then return nil, "the editor failed (" .. tostring(status) .. ")" end
  return edited
end

local function pretty(args)
  local ok, text = pcall(json.encode, args or {}, {indent = 2})
  return ok and text or tostring(args)
end

local function edited_arguments(text)
  local value, err = json.decode(text or "")
  if value == nil then return nil, "not valid JSON: " .. (err and err.message or "empty") end
  if type(value) ~= "table" or json.is_array(value) then return nil, "the arguments must be a JSON object" end
  return value
end

local function ask_person(run, call, turn)
  tty.say(("\n%s wants to call %s (turn %d) with:\n%s\n"):format(run.agent.name, call.name, turn, pretty(call.arguments)))
  local draft = pretty(call.arguments)
  while true do
    tty.say("[y]es / [n]o / [e]dit / [a]lways for this tool (n REASON tells the model why): ")
    local line = tty.read_line()
    if not line then return refused("person", "no answer at the terminal") end
    local word, rest = line:match("^%s*(%S*)%s*(.-)%s*$")
    word = word:lower()
    if word == "y" or word == "yes" then
      return approved("person", call.arguments, call.arguments)
    elseif word == "n" or word == "no" then
      if rest ~= "" then return refused("person", rest) end
      return refused("person", "the person at the terminal said no",
                     "Not run: the person at the terminal refused this call.")
    elseif word == "a" or word == "always" then
      local d = approved("person", call.arguments, call.arguments)
      d.always = true
      return d
    elseif word == "e" or word == "edit" then
      local text, why = tty.edit(draft)
      local args
      if text then
        draft = text
        args, why = edited_arguments(text)
      end
      if args then
        tty.say("edited:\n" .. pretty(args) .. "\n")
        return approved("person", args, call.arguments)
      end
      tty.say(("The edited arguments cannot be used: %s. Edit again, or answer y or n.\n"):format(why))
    else
      tty.say("Please answer y, n, e or a.\n")
    end
  end
end

local function ask(run, call, turn)
  if require("luagent.host").yes then return approved("--yes", call.arguments, call.arguments) end
  if not tty.available() then
    local s = state_of(recipe_run())
    if not s.warned then
      s.warned = true
      io.stderr:write(("luagent: %s (%s refused)\n"):format(NO_TERMINAL, call.name))
    end
    return refused("no terminal", NO_TERMINAL, "Not run: " .. NO_TERMINAL .. ".")
  end
  -- one question on the terminal at a time, whichever agent or run asks
  while tty.busy do require("luagent.sched").sleep(0.05) end
  tty.busy = true
  local ok, d = pcall(ask_person, run, call, turn)
  tty.busy = false
  if not ok then error(d, 0) end
  return d
end

-- ---- the approve function ----

local function copy(v)
  if type(v) ~= "table" or v == json.null then return v end
  local out = setmetatable({}, getmetatable(v))
  for k, item in pairs(v) do out[k] = copy(item) end
  return out
end

local function from_function(call, ok, answer, reason)
  if answer == true then return approved("function", call.arguments, call.arguments) end
  if answer == false then return refused("function", reason ~= nil and tostring(reason) or "refused by the approve function") end
  if type(answer) == "table" and not json.is_array(answer) then return approved("function", answer, call.arguments) end
  return nil, ("approve returned %s; it must return true, false [, reason] or a table of changed arguments"):format(
    ok and tostring(answer) or "nothing")
end

-- ---- deciding ----

local function event(run, call, turn, d, err)
  local ev = {type = "approval", turn = turn, id = call.id, tool = call.name, arguments = call.arguments, by = d and d.by,
              decision = err and "error" or (d.approved and (d.changed and "changed" or "approved") or "refused"),
              reason = d and d.reason, changed_arguments = d and d.changed and d.arguments or nil,
              always = d and d.always or nil, error = err and err.message}
  run:emit(ev)
  return ev
end

local function record(ev)
  local r = recipe_run()
  if not r.record or r.replaying then return end
  require("luagent.model.recording").add_approval(r.transport, {
    tool = ev.tool, arguments = ev.arguments, decision = ev.decision, by = ev.by, reason = ev.reason,
    changed_arguments = ev.changed_arguments, always = ev.always})
end

-- Raises the failure of a function the run called, after its event and the agent's end.
local function failed(run, call, turn, what, err)
  if type(err) == "table" and err.kind == "cancelled" then error(err, 0) end
  err = errors.wrap(err, ("agent %s: %s for the tool %s"):format(run.agent.name, what, call.name))
  event(run, call, turn, nil, err)
  run:result("error", nil, err)
  error(err, 0)
end

local function needed(run, tool, call, ctx)
  local n = tool.needs_approval
  if n == nil then
    if run.agent.approve == nil then return false end
    for _, t in ipairs(run.agent.tools) do
      if t.needs_approval ~= nil then return false end
    end
    return true
  end
  if type(n) == "function" then
    local ok, answer = pcall(n, copy(call.arguments), ctx)
    if not ok then return nil, answer end
    return answer and true or false
  end
  return n
end

function approval.decide(run, call, tool, turn)
  local ctx = {agent = run.agent, agent_run = run, run = run, turn = turn, tool = tool}
  local need, err = needed(run, tool, call, ctx)
  if need == nil then failed(run, call, turn, "needs_approval raised", err) end
  if not need then return nil end
  run.always = run.always or {}
  local d
  if run.always[call.name] then
    d = approved("always", call.arguments, call.arguments)
  else
    local entry = replayed(call)
    if entry then d = from_entry(entry, call) end
  end
  local approve = run.agent.approve or "ask"
  if not d and approve == "defer" then
    d = require("luagent.approval_deferred").decide(run, call, turn, approved, refused)
  elseif not d and approve == "ask" then
    d = ask(run, call, turn)
  elseif not d then
    local results = table.pack(pcall(approve, {id = call.id, name = call.name, arguments = copy(call.arguments)}, ctx))
    if not results[1] then failed(run, call, turn, "the approve function raised", results[2]) end
    local why
    d, why = from_function(call, results.n > 1, results[2], results[3])
    if not d then failed(run, call, turn, "the approve function failed", why) end
  end
  if d.always then run.always[call.name] = true end
  record(event(run, call, turn, d))
  return d
end

return approval

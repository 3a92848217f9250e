-- luagent.checks.trajectory (internal; luagent.checks gives its helpers):
-- checks on the path a run took, read from its trace (run.trace, read once
-- per run; run.events when a caller gives the events themselves).
--
--   used_tool(run, name), not_used_tool(run, name)   tool_call events by tool name
--   tool_order(run, {"a", "b"})   these calls in this order, others may come between
--                                 (score: the share of the list found in order)
--   max_turns(run, n)             model turns of every agent of the run (agent_turn events)
--   max_commands(run, n)          sandbox commands (sandbox_exec events: exec and python)
--   no_failed_command(run [, kind])   no command failed (with that kind): see FAILURES
--   max_cost(run, dollars)        what the run's model calls cost, a cached call at what it
--                                 cost when it was stored, so a cached rerun judges alike
-- Each returns {passed, score, note}; a trace that cannot be read fails the
-- check saying so. A wrong argument (not a name, not a number) raises.
local trace = require "luagent.trace"
local text = require "luagent.text"
local verdict = require "luagent.checks.verdict"

local trajectory = {}

local pass, fail = verdict.pass, verdict.fail

local read = setmetatable({}, {__mode = "k"}) -- run -> {events} | {error}

-- The run's events, or nil, why.
function trajectory.events(run)
  if type(run.events) == "table" then return run.events end
  local got = read[run]
  if not got then
    local path = type(run.trace) == "string" and run.trace or (run.dir and run.dir .. "/trace.jsonl")
    local events, err
    if path then events, err = trace.read(path, {partial = true}) end
    if events then got = {events = events}
    else got = {error = "the run's trace cannot be read: " .. (err and err.message or "the run has no trace")} end
    read[run] = got
  end
  return got.events, got.error
end

-- fn(events) -> verdict, over the run's events; a trace that cannot be read fails.
local function over_events(run, name, fn)
  verdict.run(run, name)
  local events, why = trajectory.events(run)
  if not events then return fail(why) end
  return fn(events)
end

local function tool_calls(events)
  local names = {}
  for _, ev in ipairs(events) do
    if ev.type == "tool_call" and type(ev.name) == "string" then names[#names + 1] = ev.name end
  end
  return names
end

-- The names used, each once, in order of first use.
local function distinct(names)
  local seen, out = {}, {}
  for _, n in ipairs(names) do
    if not seen[n] then seen[n], out[#out + 1] = true, n end
  end
  return out
end

local function count(list, name)
  local n = 0
  for _, v in ipairs(list) do if v == name then n = n + 1 end end
  return n
end

local function plural(n, one) return ("%d %s%s"):format(n, one, n == 1 and "" or "s") end

local function need_name(name, fn)
  if type(name) ~= "string" or name == "" then
    error(("checks.%s(run, name): name must be a tool's name, e.g. \"run_python\""):format(fn), 3)
  end
end

local function need_count(n, fn, what)
  if math.type(n) ~= "integer" or n < 0 then
    error(("checks.%s(run, n): n must be a whole number >= 0 (%s)"):format(fn, what), 3)
  end
end

function trajectory.used_tool(run, name)
  need_name(name, "used_tool")
  return over_events(run, "used_tool", function(events)
    local calls = tool_calls(events)
    local n = count(calls, name)
    if n > 0 then return pass(("used %s (%s)"):format(name, plural(n, "call"))) end
    return fail(("never used %s (tools used: %s)"):format(name, verdict.join(distinct(calls))))
  end)
end

function trajectory.not_used_tool(run, name)
  need_name(name, "not_used_tool")
  return over_events(run, "not_used_tool", function(events)
    local n = count(tool_calls(events), name)
    if n == 0 then return pass(("did not use %s"):format(name)) end
    return fail(("used %s (%s), which it should not"):format(name, plural(n, "call")))
  end)
end

function trajectory.tool_order(run, names)
  verdict.list(names, "tool_order", "names")
  return over_events(run, "tool_order", function(events)
    local calls = tool_calls(events)
    local found = 0
    for _, call in ipairs(calls) do
      if call == names[found + 1] then found = found + 1 end
      if found == #names then break end
    end
    local order = table.concat(names, " then ")
    if found == #names then return pass("called " .. order) end
    local shown = #calls > 12 and table.concat(calls, ", ", 1, 12) .. ", ..." or verdict.join(calls)
    return fail(("not %s: %s (calls: %s)"):format(order, found == 0 and ("no call of " .. names[1])
      or ("no %s after %s"):format(names[found + 1], names[found]), shown), found / #names)
  end)
end

function trajectory.max_turns(run, n)
  need_count(n, "max_turns", "the most model turns the run may take")
  return over_events(run, "max_turns", function(events)
    local turns = 0
    for _, ev in ipairs(events) do if ev.type == "agent_turn" then turns = turns + 1 end end
    if turns <= n then return pass(("%s (at most %d)"):format(plural(turns, "turn"), n)) end
    return fail(("%s, more than %d"):format(plural(turns, "turn"), n), n / turns)
  end)
end

local function commands(events)
  local list = {}
  for _, ev in ipairs(events) do if ev.type == "sandbox_exec" then list[#list + 1] = ev end end
  return list
end

function trajectory.max_commands(run, n)
  need_count(n, "max_commands", "the most sandbox commands the run may run")
  return over_events(run, "max_commands", function(events)
    local ran = #commands(events)
    if ran <= n then return pass(("%s (at most %d)"):format(plural(ran, "command"), n)) end
    return fail(("%s, more than %d"):format(plural(ran, "command"), n), n / ran)
  end)
end

-- How a command failed (a sandbox_exec event), or nil: it ran and exited 0.
trajectory.FAILURES = {"error", "timed_out", "oom_killed", "killed", "exit"}
local function failure_of(ev)
  if ev.error ~= nil and ev.error ~= false then return "error", tostring(ev.error) end
  for _, kind in ipairs({"timed_out", "oom_killed", "killed"}) do
    if ev[kind] == true then return kind, kind:gsub("_", " ") end
  end
  if math.type(ev.exit_code) == "integer" and ev.exit_code ~= 0 then return "exit", "exit " .. ev.exit_code end
  return nil
end

function trajectory.no_failed_command(run, kind)
  if kind ~= nil then
    local known = false
    for _, k in ipairs(trajectory.FAILURES) do known = known or k == kind end
    if not known then
      error(("checks.no_failed_command(run [, kind]): kind must be one of %s (or nothing: any), got %s")
        :format(table.concat(trajectory.FAILURES, ", "), tostring(kind)), 2)
    end
  end
  return over_events(run, "no_failed_command", function(events)
    local ran, failed = commands(events), {}
    for _, ev in ipairs(ran) do
      local how, why = failure_of(ev)
      if how and (kind == nil or how == kind) then
        failed[#failed + 1] = ("`%s`: %s"):format(text.excerpt(ev.command or "?", 60, "flat"), why)
      end
    end
    local which = kind and (" with " .. kind) or ""
    if #failed == 0 then return pass(("no command failed%s (%s)"):format(which, plural(#ran, "command"))) end
    local shown = #failed > 3 and table.concat(failed, "; ", 1, 3) .. "; ..." or table.concat(failed, "; ")
    return fail(("%s of %d failed%s: %s"):format(plural(#failed, "command"), #ran, which, shown))
  end)
end

function trajectory.max_cost(run, dollars)
  if type(dollars) ~= "number" or dollars ~= dollars or dollars < 0 then
    error("checks.max_cost(run, dollars): dollars must be a number >= 0, e.g. 0.05", 2)
  end
  return over_events(run, "max_cost", function(events)
    local cost, calls = 0, 0
    for _, ev in ipairs(events) do
      if ev.type == "model_response" then
        calls = calls + 1
        local c = ev.cached and ev.saved_cost or ev.cost
        if type(c) ~= "number" then
          return fail(("the cost of model call %d (%s) is not known: a model without prices"):format(calls,
            tostring(ev.model)))
        end
        cost = cost + c
      end
    end
    local said = ("$%.4f over %s"):format(cost, plural(calls, "model call"))
    if cost <= dollars then return pass(("%s (at most $%.4f)"):format(said, dollars)) end
    return fail(("%s, more than $%.4f"):format(said, dollars), dollars / cost)
  end)
end

return trajectory

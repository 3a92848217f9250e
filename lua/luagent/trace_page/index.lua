-- luagent.trace_page.index (internal): the one pass over a trace's events
-- that the page is built from: the agents (name, model, instructions, task,
-- turns, end), which tool result belongs to which call, the sandbox commands
-- run inside a tool call, the model responses an agent turn already shows,
-- the run's totals, the timeline's bars and the counts for the filter.
--
--   index.build(events) -> ix
--     ix.start, ix.finish       run_start, run_end (or nil)
--     ix.agents[key], ix.agent_list   {key, n, name, model, start, finish, instructions, turns,
--                               last_text, last_turn (the text and index of its last agent_turn)}
--     ix.agent_of[i]            the agent of event i (events of an agent carry agent and run)
--     ix.result_of[i]           call index -> result index; ix.paired[j]: result j is shown with its call
--     ix.execs_of[i]            call index -> {sandbox_exec indices}; ix.attached[j]: exec j is shown in its call
--     ix.outputs_of[i]          call index -> {sandbox_output indices} (a command's output as it came), attached too
--     ix.response_of[i]         agent_turn index -> the model_response just before it; ix.folded[j]: that response
--     ix.totals                 calls, live, cached, input, output, cached_tokens, cost, cost_unknown, saved,
--                               tool_calls, tool_errors, execs, exec_time, problems
--     ix.bars                   {lane, start, stop, class, title, target}   (seconds since the run's start)
--     ix.lanes                  {{key, label, agent}} in order of first use
--     ix.span                   seconds from the run's start to its last event
--     ix.final                  the last agent_end that has an output
local json = require "luagent.json"
local f = require "luagent.trace_page.format"

local index = {}

local function agent_key(ev)
  local agent_run = ev.agent_run or ev.run -- run: its name in traces written before
  if ev.agent == nil and agent_run == nil then return nil end
  return tostring(agent_run or "") .. "\0" .. tostring(ev.agent or "")
end

-- The system prompt of a model request body (Chat Completions, Responses or Anthropic), or nil.
local function system_text(body)
  if type(body) ~= "table" then return nil end
  if type(body.instructions) == "string" then return body.instructions end
  if body.system ~= nil then return f.text_of(body.system) end
  local first = type(body.messages) == "table" and body.messages[1]
  if type(first) == "table" and (first.role == "system" or first.role == "developer") then return f.text_of(first.content) end
  return nil
end

-- Is this event a problem, and how bad: "bad" | "warn" | nil.
function index.problem(ev)
  local t = ev.type
  if t == "tool_result" then return ev.is_error == true and "bad" or nil
  elseif t == "model_error" or t == "agent_limit" then return "bad"
  elseif t == "model_retry" or t == "agent_reminder" then return "warn"
  elseif t == "sandbox_exec" then
    if ev.timed_out == true or ev.oom_killed == true or f.str(ev.error) then return "bad" end
    if f.num(ev.exit_code) and ev.exit_code ~= 0 or ev.truncated == true then return "warn" end
  elseif t == "sandbox_close" then return f.str(ev.error) and "bad" or nil
  elseif t == "agent_end" then
    if ev.stopped_by == "error" or f.str(ev.error) then return "bad" end
    if ev.stopped_by ~= "answer" or (type(ev.missing_outputs) == "table" and #ev.missing_outputs > 0) then return "warn" end
  elseif t == "run_end" then return ev.status ~= "ok" and "bad" or nil
  elseif f.str(ev.error) and t ~= "run_start" then return "bad"
  end
  return nil
end

function index.build(events)
  local ix = {agents = {}, agent_list = {}, agent_of = {}, result_of = {}, paired = {}, execs_of = {}, outputs_of = {},
              attached = {},
              response_of = {}, folded = {}, bars = {}, lanes = {}, lane_of = {}, span = 0,
              totals = {calls = 0, live = 0, cached = 0, input = 0, output = 0, cached_tokens = 0, cost = 0,
                        saved = 0, tool_calls = 0, tool_errors = 0, execs = 0, exec_time = 0, problems = 0,
                        estimated = false}}
  local T = ix.totals
  local open_calls, open_count = {}, 0     -- agent key .. call id -> call index
  local active = {}                        -- agents started and not ended
  local responses = 0

  local function lane(key, label, agent)
    if not ix.lane_of[key] then
      ix.lanes[#ix.lanes + 1] = {key = key, label = label, agent = agent}
      ix.lane_of[key] = #ix.lanes
    end
    return key
  end
  local function bar(lane_key, ev, class, title, target)
    local stop, took = f.num(ev.t), f.num(ev.duration)
    if not stop or not took then return end
    ix.bars[#ix.bars + 1] = {lane = lane_key, start = math.max(0, stop - took), stop = stop, class = class,
                             title = title, target = target}
  end

  for i, ev in ipairs(events) do
    local t = ev.type
    local key = agent_key(ev)
    local a = key and ix.agents[key]
    if key and not a then
      a = {key = key, n = #ix.agent_list, name = f.str(ev.agent) or "agent", turns = 0}
      ix.agents[key] = a
      ix.agent_list[#ix.agent_list + 1] = a
    end
    ix.agent_of[i] = a
    if f.num(ev.t) and ev.t > ix.span then ix.span = ev.t end
    if index.problem(ev) then T.problems = T.problems + 1 end

    if t == "run_start" then ix.start = ix.start or ev
    elseif t == "run_end" then ix.finish = ev
    elseif t == "agent_start" and a then
      a.start, a.model, a.task = ev, f.str(ev.model), ev.task
      a.instructions = f.str(ev.instructions)
      active[key] = a
    elseif t == "agent_end" and a then
      a.finish = ev
      active[key] = nil
      if ev.output ~= nil and ev.output ~= json.null then ix.final = ev end
    elseif t == "model_request" then
      local only, n = nil, 0
      for _, candidate in pairs(active) do only, n = candidate, n + 1 end
      if n == 1 and not only.instructions then only.instructions = system_text(ev.body) end
    elseif t == "model_response" then
      responses = responses + 1
      T.calls = T.calls + 1
      if ev.cached then T.cached = T.cached + 1 else T.live = T.live + 1 end
      local u = type(ev.usage) == "table" and ev.usage or {}
      T.input, T.output = T.input + (f.num(u.input_tokens) or 0), T.output + (f.num(u.output_tokens) or 0)
      T.cached_tokens = T.cached_tokens + (f.num(u.cached_tokens) or 0)
      if u.estimated then T.estimated = true end
      if f.num(ev.cost) then T.cost = T.cost + ev.cost elseif not ev.cached then T.cost_unknown = true end
      T.saved = T.saved + (f.num(ev.saved_cost) or 0)
      local nxt = events[i + 1]
      if nxt and nxt.type == "agent_turn" then
        ix.folded[i], ix.response_of[i + 1] = true, ev
      else
        bar(lane("model:", "model calls", nil), ev, ev.cached and "b-cached" or "b-model",
          ("%s: %s"):format(f.str(ev.model) or "model", f.secs(ev.duration)), i)
      end
    elseif t == "agent_turn" and a then
      a.turns = math.max(a.turns, f.num(ev.turn) or 0)
      a.last_text, a.last_turn = f.str(ev.text), i
      bar(lane(key .. "\0model", "model", a), ev, ev.cached and "b-cached" or "b-model",
        ("%s, turn %s: model %s"):format(a.name, tostring(ev.turn), ev.cached and "(from the cache)" or f.secs(ev.duration)), i)
    elseif t == "tool_call" then
      T.tool_calls = T.tool_calls + 1
      open_calls[(key or "") .. tostring(ev.id)] = i
      open_count = open_count + 1
    elseif t == "tool_result" then
      if ev.is_error == true then T.tool_errors = T.tool_errors + 1 end
      local ck = (key or "") .. tostring(ev.id)
      local call = open_calls[ck]
      if call then
        open_calls[ck], open_count = nil, open_count - 1
        ix.result_of[call], ix.paired[i] = i, true
      end
      bar(lane((key or "") .. "\0tools", "tools", a), ev, ev.is_error == true and "b-bad" or "b-tool",
        ("%s: %s %s"):format(a and a.name or "tool", f.str(ev.name) or "?", f.secs(ev.duration)), call or i)
    elseif t == "sandbox_output" and open_count == 1 then
      local _, call = next(open_calls)
      ix.outputs_of[call] = ix.outputs_of[call] or {}
      table.insert(ix.outputs_of[call], i)
      ix.attached[i] = true
    elseif t == "sandbox_exec" then
      T.execs = T.execs + 1
      T.exec_time = T.exec_time + (f.num(ev.duration) or 0)
      local owner, owner_agent
      if open_count == 1 then
        local _, call = next(open_calls)
        owner, owner_agent = call, ix.agent_of[call]
        ix.execs_of[call] = ix.execs_of[call] or {}
        table.insert(ix.execs_of[call], i)
        ix.attached[i] = true
      end
      local lane_key = owner_agent and lane(owner_agent.key .. "\0sandbox", "sandbox", owner_agent)
        or lane("sandbox:" .. tostring(ev.session), "sandbox " .. tostring(ev.session):sub(1, 12), nil)
      bar(lane_key, ev, index.problem(ev) == "bad" and "b-bad" or "b-exec",
        ("sandbox %s: %s"):format(f.str(ev.kind) or "exec", f.secs(ev.duration)), owner or i)
    end
  end
  if responses == 0 then
    -- a trace without model_response events: the agents' own totals
    for _, a in ipairs(ix.agent_list) do
      local e = a.finish
      local u = e and type(e.usage) == "table" and e.usage or {}
      T.input, T.output = T.input + (f.num(u.input_tokens) or 0), T.output + (f.num(u.output_tokens) or 0)
      if e and f.num(e.cost) then T.cost = T.cost + e.cost elseif e then T.cost_unknown = true end
      T.calls = T.calls + a.turns
    end
  end
  if ix.finish and f.num(ix.finish.duration) and ix.finish.duration > ix.span then ix.span = ix.finish.duration end
  return ix
end

return index

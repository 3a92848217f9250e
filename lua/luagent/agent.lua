-- luagent.agent: the write-run-observe loop. What it does, as a recipe author
-- sees it, is written once, in `luagent help recipes` (with `help structured`
-- for answers that match a schema, `help approval` for calls that wait for a
-- yes, `help models` for compaction); agent.new{...}, agent:run(task), the
-- options and the result are in lua/meta/agent.lua.
--
-- Notes for whoever changes it: the loop below reads top to bottom in the
-- order of one turn (call the model, check the answer, run the tool calls,
-- feed the results back). An agent is a plain value: the same agent can run
-- twice at once, since everything a run of it changes lives in its AgentRun. Every
-- failure of a tool call becomes a result the model reads, except a
-- cancellation (Ctrl-C, SIGTERM, task:cancel()): raised, returned or
-- swallowed by a tool, it ends the run at once, raised from agent:run, with
-- no further model call.
local json = require "luagent.json"
local errors = require "luagent.errors"
local events = require "luagent.events"
local sched = require "luagent.sched"
local sys = require "luagent.sys"
local skills = require "luagent.skills"
local options = require "luagent.options"
local tools_mod = require "luagent.tools"
local structured = require "luagent.model.structured"
local approval = require "luagent.approval"
local compaction = require "luagent.compaction"
local journal = require "luagent.journal"
local context = require "luagent.context"

local agent = {}

local Agent = {}
Agent.__index = Agent

local DEFAULTS = {max_turns = 20, max_tool_output = 16000, reminders = 2}

function agent.new(spec)
  assert(type(spec) == "table", "agent.new{...}: expects a table")
  options.check(spec, "luagent.AgentSpec", "agent.new")
  local m = spec.model
  if type(m) ~= "table" or type(m.complete) ~= "function" then
    error("agent.new: 'model' must be a model (see luagent.model), got " .. type(m), 2)
  end
  local tools = {}
  for i, tool in ipairs(spec.tools or {}) do tools[i] = tools_mod.check(tool, ("tools[%d]"):format(i)) end
  local a = setmetatable({}, Agent)
  for k, v in pairs(spec) do a[k] = v end
  a.name = spec.name or "agent"
  a.tools = tools
  a.max_turns = spec.max_turns or DEFAULTS.max_turns
  a.max_tool_output = spec.max_tool_output or DEFAULTS.max_tool_output
  a.outputs = spec.outputs or {}
  if math.type(a.max_turns) ~= "integer" or a.max_turns < 1 then
    error(errors.new("config", ("agent.new: max_turns must be a whole number >= 1, got %s"):format(
      type(a.max_turns) == "string" and ("%q"):format(a.max_turns) or tostring(a.max_turns))), 2)
  end
  if spec.budget ~= nil and type(spec.budget) ~= "table" then
    error(errors.new("config", "agent.new: budget must be {tokens = n, cost = dollars}"), 2)
  end
  if spec.output ~= nil then
    a.output = structured.output(spec.output, "agent.new: output.", {{name = "read_output"}, table.unpack(tools)}, 3)
  end
  approval.check(spec, tools)
  -- the workspace of the first sandbox tool keeps long outputs and is checked for outputs
  if not a.workspace then
    for _, tool in ipairs(tools) do
      if tool.box then a.workspace = tool.box break end
    end
  end
  a.skills = skills.load(spec.skills, "agent.new: skills")
  if #a.skills > 0 and not a.workspace then
    error("agent.new: skills are staged into the sandbox the agent's tools work in: give it tools.standard(box)", 2)
  end
  return a
end

-- The skills are in the agent's sandbox before its first turn (once per box).
local staged_skills = setmetatable({}, {__mode = "k"}) -- box -> {name = true}

local function stage_skills(a)
  if #a.skills == 0 then return true end
  local done = staged_skills[a.workspace] or {}
  local todo = {}
  for _, s in ipairs(a.skills) do if not done[s.name] then todo[#todo + 1] = s end end
  local ok, err = skills.stage(a.workspace, todo)
  if not ok then return nil, err end
  for _, s in ipairs(todo) do done[s.name] = true end
  staged_skills[a.workspace] = done
  return true
end

-- ---- one run ----

local AgentRun = {}
AgentRun.__index = AgentRun

local function system_prompt(a)
  local text = a.instructions or "You are a helpful agent."
  if #a.outputs > 0 then
    text = text .. "\n\nBefore you give your final answer, these files must exist in the workspace: "
      .. table.concat(a.outputs, ", ") .. "."
  end
  local listed = skills.instructions(a.skills or {})
  if listed then text = text .. "\n\n" .. listed end
  return text
end

local function new_run(a, task, opts)
  opts = opts or {}
  local run = setmetatable({
    agent = a, id = sys.random_hex(4), turns = 0, started = sched.now(),
    usage = {input_tokens = 0, output_tokens = 0, cached_tokens = 0, cache_write_tokens = 0}, cost = 0,
    cost_known = true,
    full_outputs = {}, reminders = 0,
  }, AgentRun)
  if opts.messages then
    run.messages = {table.unpack(opts.messages)}
  else
    run.messages = {{role = "system", content = system_prompt(a)}}
  end
  if task then run.messages[#run.messages + 1] = {role = "user", content = task} end
  run.tools = {table.unpack(a.tools)}
  if a.max_tool_output then run.tools[#run.tools + 1] = run:read_output_tool() end
  -- what the run's model calls answered and its tools returned, for `luagent run --resume`
  run.journal = journal.of(context.current())
  run.jkey = run.journal and run.journal:agent(a.name)
  run.by_name = {}
  for _, tool in ipairs(run.tools) do
    run.by_name[tool.name] = tool
    -- a model's own tool form may be called by its own name (Anthropic's str_replace_based_edit_tool)
    for _, name in ipairs(tool.native_names or {}) do run.by_name[name] = run.by_name[name] or tool end
  end
  return run
end

function AgentRun:emit(ev)
  ev.agent = self.agent.name
  ev.agent_run = self.id -- beside run_id, the recipe run's
  events.emit(ev)
  if self.agent.on_step then self.agent.on_step(ev) end
end

-- The read_output tool, bound to this run's store of whole outputs.
function AgentRun:read_output_tool()
  local run = self
  return {
    name = "read_output",
    description = "Read more of a tool result that was cut because it was long: give the id the cut "
      .. "result named and an offset in characters.",
    parameters = {type = "object", properties = {
      id = {type = "string", description = "The id named in the cut result."},
      offset = {type = "integer", description = "Where to start, in characters from 0."},
      length = {type = "integer", description = "How many characters (default: as many as a result may hold)."}},
      required = {"id"}},
    handler = function(args)
      local full = run.full_outputs[args.id]
      if not full then error(errors.new("not_found", "no cut output has the id " .. tostring(args.id)), 0) end
      local offset = math.max(0, math.tointeger(args.offset) or 0)
      local length = math.min(math.tointeger(args.length) or run.agent.max_tool_output, run.agent.max_tool_output)
      local piece = full:sub(offset + 1, offset + length)
      return ("characters %d-%d of %d:\n%s"):format(offset, offset + #piece, #full, piece)
    end,
  }
end

-- Cuts a long result to head and tail, keeping the whole in the run and in
-- the workspace.
function AgentRun:cap(call_id, text)
  local max = self.agent.max_tool_output
  if not max or #text <= max then return text end
  self.full_outputs[call_id] = text
  local where = ""
  local box = self.agent.workspace
  if box and not box.closed then
    local path = ".luagent/outputs/" .. call_id .. ".txt"
    if box:put(path, text) then where = " It is saved in the workspace at " .. path .. "." end
  end
  local head, tail = text:sub(1, max * 6 // 10), text:sub(-(max * 3 // 10))
  return ("%s\n\n[... %d characters left out of %d.%s Read them with read_output(id = %q, offset = %d). ...]\n\n%s")
    :format(head, #text - #head - #tail, #text, where, call_id, #head, tail)
end

local function missing_required(parameters, args)
  local missing = {}
  for _, name in ipairs(type(parameters) == "table" and type(parameters.required) == "table" and parameters.required or {}) do
    if args[name] == nil then missing[#missing + 1] = name end
  end
  return #missing > 0 and missing or nil
end

local function tool_names(run)
  local names = {}
  for _, tool in ipairs(run.tools) do names[#names + 1] = tool.name end
  return table.concat(names, ", ")
end

-- A tool's return value as message content: text, or text and images.
local function as_content(value)
  if value == nil then return "(the tool returned nothing)" end
  if type(value) == "string" then return value end
  if type(value) == "table" and (value.text or value.images) then
    local parts = {{type = "text", text = value.text or ""}}
    for _, img in ipairs(value.images or {}) do parts[#parts + 1] = img end
    return parts
  end
  local ok, encoded = pcall(json.encode, value)
  return ok and encoded or tostring(value)
end

-- ---- approval (luagent.approval) ----

-- The decisions of a turn's calls, asked one at a time, in order; only calls
-- that would run ask (a known tool, arguments that can be used).
function AgentRun:approve_calls(calls, turn)
  local decisions = {}
  for i, call in ipairs(calls) do
    local tool = self.by_name[call.name]
    if tool and not call.arguments_error and not missing_required(tool.parameters, call.arguments) then
      decisions[i] = approval.decide(self, call, tool, turn)
    end
  end
  return decisions
end

-- A result of a call whose arguments the approver changed says so first.
local function changed_note(decision, content)
  if not (decision and decision.changed) then return content end
  local note = "(The arguments were changed before the call ran: " .. json.encode(decision.arguments) .. ")\n"
  if type(content) == "table" then
    content[1].text = note .. content[1].text
    return content
  end
  return note .. content
end

-- A handler's Lua error that does not say where it happened (an error
-- raised with level 0, or in a C function) gets the recipe's file:line: the
-- first frame outside luagent's own library.
local function where_it_failed(e)
  if type(e) ~= "string" or e:match("^[^%s:]+:%d+:") then return e end
  for level = 2, 30 do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    if info.currentline > 0 and info.what ~= "C" and not info.short_src:match("^lua/luagent/") then
      return ("%s:%d: %s"):format(info.short_src, info.currentline, e)
    end
  end
  return e
end

local function is_cancel(err)
  return type(err) == "table" and err.kind == "cancelled"
end

-- The cancellation a tool let through, returned (nil, err) or caught and
-- swallowed: the run is stopping (Ctrl-C, SIGTERM, task:cancel()), and no
-- tool result may hide it, nor may the model be asked again.
local function stopping(ok, value, err)
  if not ok and is_cancel(value) then return value end
  if ok and value == nil and is_cancel(err) then return err end
  return sched.cancelled()
end

-- Runs one tool call; whatever goes wrong becomes a result the model reads.
-- decision: the call's approval (luagent.approval), nil when it needed none.
function AgentRun:call_tool(call, turn, decision)
  local tool = self.by_name[call.name]
  local started = sched.now()
  self:emit({type = "tool_call", turn = turn, id = call.id, name = call.name, arguments = call.arguments or call.arguments_json})
  local content, is_error, native
  if not tool then
    content = ("Error: there is no tool named %q. The tools are: %s."):format(tostring(call.name), tool_names(self))
    is_error = true
  elseif call.arguments_error then
    content, is_error = ("Error: %s. You sent: %s\nCall %s again with a JSON object that matches its parameters.")
      :format(call.arguments_error, tostring(call.arguments_json), call.name), true
  elseif missing_required(tool.parameters, call.arguments) then
    content, is_error = ("Error: %s needs the argument(s) %s."):format(call.name,
      table.concat(missing_required(tool.parameters, call.arguments), ", ")), true
  elseif decision and not decision.approved then
    content, is_error = decision.message, true
  else
    local args = decision and decision.arguments or call.arguments
    local ok, value, err = xpcall(tool.handler, where_it_failed, args,
                                  {call_id = call.id, turn = turn, agent_run = self, run = self})
    local stop = stopping(ok, value, err)
    if stop then
      error(stop, 0)
    elseif ok then
      content = changed_note(decision, as_content(value))
      native = type(value) == "table" and value.native or nil -- the wire's own result shape (a Responses shell call's)
    else
      local message = type(value) == "table" and (value.message or json.encode(value)) or tostring(value)
      content, is_error = ("Error: the tool %s failed: %s"):format(call.name, message), true
    end
  end
  if type(content) == "string" then content = self:cap(call.id, content)
  elseif type(content) == "table" then content[1].text = self:cap(call.id, content[1].text) end
  self:emit({type = "tool_result", turn = turn, id = call.id, name = call.name, is_error = is_error or false,
             duration = sched.now() - started,
             content = type(content) == "string" and content or content[1].text})
  return {role = "tool", tool_call_id = call.id, name = call.name, content = content, is_error = is_error,
          native_output = native}
end

-- Runs a turn's tool calls, at once when there are several; results in call order.
function AgentRun:call_tools(calls, turn)
  return journal.call_tools(self, calls, turn, function() return self:run_tool_calls(calls, turn) end)
end

function AgentRun:run_tool_calls(calls, turn)
  local decisions = self:approve_calls(calls, turn)
  if #calls == 1 then return {self:call_tool(calls[1], turn, decisions[1])} end
  local tasks = {}
  for i, call in ipairs(calls) do
    tasks[i] = sched.spawn(function() return self:call_tool(call, turn, decisions[i]) end)
  end
  local results = {}
  for i, task in ipairs(tasks) do
    local message, err = task:wait()
    if message == nil then error(err, 0) end
    results[i] = message
  end
  return results
end

function AgentRun:over_budget()
  local b = self.agent.budget
  if not b then return nil end
  local tokens = self.usage.input_tokens + self.usage.output_tokens
  if b.tokens and tokens >= b.tokens then
    return ("the token budget is spent (%d of %d)"):format(tokens, b.tokens)
  end
  if b.cost and self.cost_known and self.cost >= b.cost then
    return ("the cost budget is spent ($%.4f of $%.4f)"):format(self.cost, b.cost)
  end
  return nil
end

-- Declared outputs not (yet) in the workspace, by shell glob.
function AgentRun:missing_outputs()
  local box, wanted = self.agent.workspace, self.agent.outputs
  if #wanted == 0 or not box or box.closed then return {} end
  local r = box:exec({"/bin/sh", "-c", 'for p in "$@"; do found=; for f in $p; do [ -s "$f" ] && found=1; done; '
    .. '[ -n "$found" ] || echo "$p"; done', "check", table.unpack(wanted)})
  local missing = {}
  for line in ((r and r.stdout) or ""):gmatch("[^\n]+") do missing[#missing + 1] = line end
  return missing
end

-- ---- structured answers (agent.new{output = ...}; luagent.model.structured) ----

-- "auto" while the agent has tools; the answer tool by name for the one call
-- that must give the answer (after a turn that ended in plain text).
function AgentRun:tool_choice(ntools)
  if self.force_answer then
    self.force_answer = false
    return {name = self.agent.output.name}
  end
  return ntools > 0 and "auto" or nil
end

-- The calls of a turn as the transcript keeps them: the answer tool's too.
local function calls_of(result)
  if not result.output_call then return result.tool_calls end
  local calls = {table.unpack(result.tool_calls)}
  calls[#calls + 1] = result.output_call
  return calls
end

-- Is this turn the model's answer (to check), rather than tool calls or text
-- where an answer tool was expected?
function AgentRun:is_answer(response)
  if #response.tool_calls > 0 then return false end
  if self.agent.output and response.output_by_tool then return response.output_call ~= nil end
  return true
end

-- {text, stopped_by} of an answer that may end the run, or nil when it went
-- back to the model with its errors.
function AgentRun:checked_answer(response)
  local out = self.agent.output
  if not out then return {text = response.text, stopped_by = "answer"} end
  if response.refusal and not response.output_json then return {text = response.refusal, stopped_by = "refused"} end
  local text = response.output_json or response.text
  local value, errs = structured.decode(out, text)
  if value == nil then
    self.invalid, self.invalid_text = errs, text
    self:reply_to_answer(response, structured.feedback(out, errs, response.output_call ~= nil))
    self:emit({type = "agent_invalid_output", turn = self.turns, errors = errs})
    return nil
  end
  self.value, self.invalid, self.invalid_text = value, nil, nil
  return {text = text, stopped_by = "answer"}
end

-- What the model reads after its answer: the answer tool's result when it
-- answered through one (a tool call needs its result), else a user message.
function AgentRun:reply_to_answer(response, text)
  local call = response.output_call
  if call then
    self.messages[#self.messages + 1] = {role = "tool", tool_call_id = call.id, name = call.name, content = text,
                                         is_error = true}
  else
    self.messages[#self.messages + 1] = {role = "user", content = text}
  end
end

-- An answer through the answer tool is taken: its call gets a result too,
-- so the transcript can be continued (run(task, {messages = transcript})).
function AgentRun:answer_taken(response)
  if response.output_call and self.value ~= nil then
    self.messages[#self.messages + 1] = {role = "tool", tool_call_id = response.output_call.id,
                                         name = response.output_call.name, content = "The answer was taken."}
  end
end

-- An answer tool called beside other tools is not taken: it was written
-- before their results.
function AgentRun:answer_not_taken(response)
  if not response.output_call then return end
  self:reply_to_answer(response, "Not taken: call " .. response.output_call.name
    .. " alone, once you have read the results of your other tool calls.")
end

-- A turn in plain text where the answer tool was expected: the next call must call it.
function AgentRun:ask_for_answer()
  self.force_answer = true
  self.messages[#self.messages + 1] = {role = "user",
    content = "Give your final answer now by calling the tool " .. self.agent.output.name .. "."}
end

function AgentRun:model_turn(turn)
  local a = self.agent
  local defs = {}
  for i, tool in ipairs(self.tools) do
    defs[i] = {name = tool.name, description = tool.description, parameters = tool.parameters, only = tool.only,
                native = tool.native}
  end
  local result, err = journal.complete(self, {
    messages = self.messages, tools = defs, tool_choice = self:tool_choice(#defs),
    temperature = a.temperature, max_tokens = a.max_tokens, stream = a.stream, on_delta = a.on_delta,
    retry = a.retry, turn = turn, agent = a.name, output = a.output,
    -- prompt caching: a provider that takes breakpoints (Anthropic) gets them on the
    -- tools, the instructions and the newest turn; prompt_cache = false: none
    cache_breakpoints = a.prompt_cache ~= false,
  }, turn)
  if not result then return nil, err end
  -- what the prompt will be next turn, as the provider counted it (luagent.compaction)
  self.last_prompt_tokens = (result.usage.input_tokens or 0) + (result.usage.output_tokens or 0)
  for k in pairs(self.usage) do self.usage[k] = self.usage[k] + (result.usage[k] or 0) end
  if result.cost then self.cost = self.cost + result.cost else self.cost_known = false end
  local calls = calls_of(result)
  -- provider_items: what the provider needs back verbatim (reasoning, thinking, phases)
  self.messages[#self.messages + 1] = {role = "assistant", content = result.text, tool_calls = calls,
                                       provider_items = result.provider_items}
  local names = {}
  for i, c in ipairs(calls) do names[i] = c.name end
  self:emit({type = "agent_turn", turn = turn, text = result.text, tool_calls = names, usage = result.usage,
             cost = result.cost, duration = result.duration, cached = result.cached, total_usage = self.usage,
             total_cost = self.cost_known and self.cost or nil})
  return result
end

function AgentRun:result(stopped_by, output, err)
  journal.finish(self)
  local result = {
    output = output, turns = self.turns, usage = self.usage, cost = self.cost_known and self.cost or nil,
    transcript = self.messages, stopped_by = stopped_by, error = err, duration = sched.now() - self.started,
    missing_outputs = self.missing, value = self.value, output_errors = self.invalid,
    compactions = self.compactions or 0,
  }
  if (stopped_by == "max_turns" or stopped_by == "budget") and self.agent.on_limit then
    result.output = self.agent.on_limit(result) or result.output
  end
  if result.missing_outputs == nil and stopped_by ~= "error" then result.missing_outputs = self:missing_outputs() end
  self:emit({type = "agent_end", stopped_by = stopped_by, turns = self.turns, usage = self.usage,
             cost = result.cost, output = result.output, missing_outputs = result.missing_outputs,
             error = err and err.message, duration = result.duration})
  return result
end

-- finish reasons of an answer that is not whole: "continue" (send it back,
-- the model goes on), else why it stopped (the run's stopped_by is the reason)
local CUT_OFF = {
  pause = "continue",
  length = "the answer was cut at the output token limit (max_tokens)",
  context_window = "the conversation no longer fits the model's context window",
}

local function last_text(messages)
  for i = #messages, 1, -1 do
    local m = messages[i]
    if m.role == "assistant" and type(m.content) == "string" and m.content ~= "" then return m.content end
  end
  return nil
end

function AgentRun:go()
  local a = self.agent
  local system = self.messages[1].role == "system" and self.messages[1].content or nil
  self:emit({type = "agent_start", task = self.messages[#self.messages].content, instructions = system,
             model = a.model.provider .. "/" .. tostring(a.model.model), max_turns = a.max_turns, budget = a.budget})
  while true do
    if self.turns >= a.max_turns then
      self:emit({type = "agent_limit", reason = ("max_turns (%d) reached"):format(a.max_turns)})
      if self.invalid then return self:result("invalid_output", self.invalid_text) end
      return self:result("max_turns", last_text(self.messages))
    end
    local spent = self:over_budget()
    if spent then
      self:emit({type = "agent_limit", reason = spent})
      return self:result("budget", last_text(self.messages))
    end
    local stop = sched.cancelled()
    if stop then error(stop, 0) end
    compaction.maybe(self)
    self.turns = self.turns + 1
    local response, err = self:model_turn(self.turns)
    if not response and is_cancel(err) then error(err, 0) end
    if not response then return self:result("error", last_text(self.messages), err) end
    local cut = CUT_OFF[response.finish_reason]
    if cut and #response.tool_calls == 0 then
      -- never taken as final: a paused turn goes back as it is and the model
      -- goes on; an answer cut by a limit stops the run, saying which
      if cut ~= "continue" then
        self:emit({type = "agent_limit", reason = cut})
        return self:result(response.finish_reason, response.text or last_text(self.messages))
      end
    elseif self:is_answer(response) then
      local answer = self:checked_answer(response)
      if answer then
        local missing = self:missing_outputs()
        if #missing == 0 or self.reminders >= DEFAULTS.reminders or answer.stopped_by == "refused" then
          self.missing = missing
          self:answer_taken(response)
          return self:result(answer.stopped_by, answer.text)
        end
        self.reminders = self.reminders + 1
        local note = "You have not saved these required files yet: " .. table.concat(missing, ", ")
          .. ". Save them in the workspace before you give your final answer."
        self:reply_to_answer(response, note)
        self:emit({type = "agent_reminder", turn = self.turns, missing = missing})
      end
    elseif #response.tool_calls > 0 then
      for _, message in ipairs(self:call_tools(response.tool_calls, self.turns)) do
        self.messages[#self.messages + 1] = message
      end
      self:answer_not_taken(response)
    else
      self:ask_for_answer()
    end
  end
end

-- agent:run(task [, {messages = earlier transcript}]) -> result
function Agent:run(task, opts)
  local ok, err = stage_skills(self)
  if not ok then error(errors.wrap(errors.from(err), "the agent's skills could not be staged"), 2) end
  return new_run(self, task, opts):go()
end

return agent

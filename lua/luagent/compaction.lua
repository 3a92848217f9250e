-- luagent.compaction: keeping a long agent run inside its model's context
-- window. Before each model call the agent asks compaction.maybe(run): when
-- the last call's prompt (input + output tokens, as the provider counted
-- them) reached `threshold` of the context window (the agent's
-- context_window, else the model table's), the transcript is compacted.
--
-- The policy, replaceable (agent option compaction = {policy = fn}): the
-- system prompt, the task (the first user message) and the last `keep_turns`
-- turns (an assistant message with the tool results that answer it) stay
-- whole; everything between is replaced by one user message holding a
-- summary that the same model writes from it, asked with `prompt` (the
-- model table's compaction.prompt: lua/luagent/model/models.yaml; a recipe
-- sets its own). The summary call is a model call like every other: traced,
-- recorded for --replay, answered by the cache. policy(messages, info) ->
-- new messages [, {replaced = N, summary = text}] | nil (keep them), info = {window, threshold, tokens,
-- keep_turns, model, summarize = function(old_messages) -> text | nil, err}.
--
-- Where the provider has its own mechanism (OpenAI's /responses/compact:
-- a wire with compact_body), the old part goes to it instead, and the
-- encrypted compaction it answers replaces those turns; native = false asks
-- for the summary call anyway. Anthropic's context management is not used.
--
-- Options (agent.new's compaction; false: never): threshold (0.8),
-- keep_turns (4), prompt, policy, native. The trace gets an
-- agent_compaction event: what was replaced (messages, tokens) by what (a
-- summary's size, or the provider's items) and what the call cost.
local families = require "luagent.model.families"
local json = require "luagent.json"
local content = require "luagent.model.content"

local compaction = {}

compaction.DEFAULTS = {threshold = 0.8, keep_turns = 4}

local function default_prompt()
  local table_prompt = (families.load().compaction or {}).prompt
  return table_prompt or "Summarise the work so far so that it can go on from the summary alone."
end

-- The window the run must stay in: the agent's context_window, else the model table's; nil: unknown.
local function window_of(run)
  local a = run.agent
  return a.context_window or (a.model.family and a.model.family.context_window)
end

-- Where the kept tail starts: the index of the keep_turns-th assistant message from the end.
local function tail_start(messages, first, keep_turns)
  local seen = 0
  for i = #messages, first, -1 do
    if messages[i].role == "assistant" then
      seen = seen + 1
      if seen == keep_turns then return i end
    end
  end
  return nil
end

-- The old part as text a model can summarise (images are named, not sent).
local function as_text(messages)
  local lines = {}
  for _, m in ipairs(messages) do
    local text = content.text_of(m.content or "")
    if m.role == "assistant" then
      for _, c in ipairs(m.tool_calls or {}) do
        text = text .. ("\n[called %s %s]"):format(c.name, c.arguments_json or json.encode(c.arguments or {}))
      end
    end
    if #content.images_of(m.content) > 0 then text = text .. "\n[an image]" end
    lines[#lines + 1] = ("%s: %s"):format(m.role == "tool" and ("tool result (" .. tostring(m.name) .. ")") or m.role,
                                          text)
  end
  return table.concat(lines, "\n\n")
end

-- The old part of the transcript and where the kept tail starts, or nil.
local function split(messages, keep_turns)
  local first = messages[1] and messages[1].role == "system" and 2 or 1
  local start = tail_start(messages, first + 1, keep_turns)
  if not start or start <= first + 1 then return nil end -- nothing old enough to replace
  return first, start, {table.unpack(messages, first + 1, start - 1)}
end

-- The provider's own compaction: system + task + its items + the last keep_turns turns.
function compaction.native_policy(messages, info)
  local task_at, start, old = split(messages, info.keep_turns)
  if not task_at then return nil end
  local r, err = info.model:complete{messages = old, compact = true, retry = info.retry}
  if not r then return nil, err end
  info.spent(r)
  local out = {table.unpack(messages, 1, task_at)}
  out[#out + 1] = {role = "user", content = "(the earlier turns, compacted by the provider)",
                   provider_items = r.provider_items}
  for i = start, #messages do out[#out + 1] = messages[i] end
  return out, {replaced = #old, native = true}
end

-- The default policy: system + task + summary + the last keep_turns turns.
function compaction.summarize_policy(messages, info)
  local task_at, start, old = split(messages, info.keep_turns) -- the first user message is the task
  if not task_at then return nil end
  local summary, err = info.summarize(old)
  if not summary then return nil, err end
  local out = {table.unpack(messages, 1, task_at)}
  out[#out + 1] = {role = "user", content = "A summary of the work so far (earlier turns were compacted to fit "
    .. "the context window):\n\n" .. summary}
  for i = start, #messages do out[#out + 1] = messages[i] end
  return out, {replaced = #old, summary = summary}
end

-- compaction.maybe(run) -> nothing; run.messages may be replaced. run.last_prompt_tokens: the last call's.
function compaction.maybe(run)
  local a = run.agent
  local opts = a.compaction
  if opts == false then return end
  opts = type(opts) == "table" and opts or {}
  local window = window_of(run)
  local tokens = run.last_prompt_tokens
  local threshold = opts.threshold or compaction.DEFAULTS.threshold
  if not window or not tokens or tokens < threshold * window then return end
  local spent = {cost = 0, input_tokens = 0, output_tokens = 0}
  local info = {window = window, threshold = threshold, tokens = tokens, model = a.model, retry = a.retry,
                keep_turns = opts.keep_turns or compaction.DEFAULTS.keep_turns}
  function info.spent(r)
    spent.cost = spent.cost + (r.cost or 0)
    spent.input_tokens = spent.input_tokens + (r.usage.input_tokens or 0)
    spent.output_tokens = spent.output_tokens + (r.usage.output_tokens or 0)
  end
  function info.summarize(old)
    local r, err = a.model:complete{messages = {
      {role = "system", content = opts.prompt or default_prompt()},
      {role = "user", content = as_text(old)}}, retry = a.retry, agent = a.name, turn = run.turns}
    if not r then return nil, err end
    info.spent(r)
    return r.text
  end
  local native = opts.native ~= false and a.model.api and a.model.api.compact_body
  local policy = opts.policy or (native and compaction.native_policy) or compaction.summarize_policy
  local before = #run.messages
  local new, detail = policy(run.messages, info)
  if type(new) ~= "table" then
    run:emit({type = "agent_compaction", turn = run.turns, tokens = tokens, window = window, done = false,
              error = detail and tostring(detail) or nil})
    return
  end
  run.messages = new
  run.compactions = (run.compactions or 0) + 1
  run.last_prompt_tokens = nil
  run:emit({type = "agent_compaction", turn = run.turns, tokens = tokens, window = window, done = true,
            messages_before = before, messages_after = #new,
            replaced = type(detail) == "table" and detail.replaced or nil,
            by = type(detail) == "table" and detail.native and "the provider's compaction" or "a summary",
            summary_chars = type(detail) == "table" and type(detail.summary) == "string" and #detail.summary or nil,
            cost = spent.cost, usage = {input_tokens = spent.input_tokens, output_tokens = spent.output_tokens}})
end

return compaction

-- luagent.trace_page.events (internal): one block of the trace page per
-- event, as a person reads the run: an agent's start with its instructions
-- and task, each model turn with its text as Markdown and its tokens and
-- cost, each tool call beside its result (run_python code highlighted, long
-- results folded, view_image images inline) with the sandbox commands it
-- ran, sandbox commands, retries, errors and limits. An event type the page
-- does not know is shown with its fields, never dropped; so is a known one
-- whose fields are not what the page expects.
--
--   events.render(ctx, i, ev) -> html | nil (nil: shown with another event: a tool result beside its call, ...)
--     ctx = {events, ix (luagent.trace_page.index), files (luagent.trace_page.files state)}
--   Each block: <div class="ev k-KIND [bad|warn] [pin]" id="eN"> ... </div>; KIND: model, tool, sandbox, agent,
--   run, other (the page's filter shows them by kind; pin: always shown).
local json = require "luagent.json"
local trace = require "luagent.trace"
local markdown = require "luagent.markdown"
local highlight = require "luagent.highlight"
local index = require "luagent.trace_page.index"
local files = require "luagent.trace_page.files"
local f = require "luagent.trace_page.format"

local events = {}

local escape = f.escape
local FOLD_LINES, FOLD_CHARS = 24, 2400     -- longer texts are folded, with a "show all" button

local function md(text)
  return '<div class="md">' .. markdown.html(text, {heading_offset = 2}) .. "</div>"
end

-- Preformatted text (already HTML), folded when long.
local function pre(html, raw, class)
  local lines = select(2, raw:gsub("\n", "")) + 1
  if lines > FOLD_LINES or #raw > FOLD_CHARS then
    return ('<pre class="%s fold">%s</pre><button class="more" type="button">show all (%s lines, %s)</button>'):format(
      class, html, f.count(lines), f.bytes(#raw))
  end
  return ('<pre class="%s">%s</pre>'):format(class, html)
end

local function code(text, lang)
  local html, known = highlight.html(text, lang)
  return pre(html, text, known and "code" or "plain")
end

local function agent_tag(a)
  if not a then return "" end
  return ('<span class="ag a%d">%s</span>'):format(a.n % 8, escape(a.name))
end

local function block(i, ev, kind, inner, extra)
  local problem = index.problem(ev)
  return ('<div class="ev k-%s%s%s" id="e%d" data-type="%s">%s</div>'):format(kind, problem and (" " .. problem) or "",
    extra and (" " .. extra) or "", i, escape(tostring(ev.type)), inner)
end

local function head(ctx, i, ev, html)
  return ('<div class="row"><a class="t" href="#e%d">%s</a>%s %s</div>'):format(i, f.secs(ev.t), agent_tag(ctx.ix.agent_of[i]),
    html)
end

local function flag(text, class)
  return ('<span class="flag %s">%s</span>'):format(class or "bad", escape(text))
end

local function usage_text(u, cost)
  if type(u) ~= "table" then return "" end
  local approx = u.estimated and "≈" or ""
  local parts = {("%s%s in · %s%s out"):format(approx, f.tokens(u.input_tokens), approx, f.tokens(u.output_tokens))}
  if (f.num(u.cached_tokens) or 0) > 0 then parts[#parts + 1] = f.tokens(u.cached_tokens) .. " cached" end
  if cost ~= nil then parts[#parts + 1] = f.money(cost) end
  return table.concat(parts, " · ")
end

-- ---- tool calls ----

local CODE_ARGS = {code = "python", command = "shell", cmd = "shell", script = "shell", sql = "sql", query = "sql"}
local TOOL_LANG = {run_python = "python", run_shell = "shell"}

local function arguments_html(name, args)
  if type(args) == "string" then
    local decoded = json.decode(args)
    if type(decoded) ~= "table" then return code(args, nil) end
    args = decoded
  end
  if type(args) ~= "table" then return code(tostring(args), nil) end
  local out, rest, n_rest = {}, {}, 0
  for k, v in pairs(args) do
    local lang = type(v) == "string" and (k == "code" and TOOL_LANG[name] or CODE_ARGS[k])
    if lang and (k == "code" or v:find("\n", 1, true)) then
      out[#out + 1] = {k, ('<div class="arg">%s</div>'):format(escape(k)) .. code(v, lang)}
    else
      rest[k], n_rest = v, n_rest + 1
    end
  end
  table.sort(out, function(a, b) return a[1] < b[1] end)
  local html = {}
  if n_rest > 0 then html[1] = code(json.encode(rest, {indent = 2}), "json") end
  for _, item in ipairs(out) do html[#html + 1] = item[2] end
  if #html == 0 then html[1] = '<p class="note">no arguments</p>' end
  return table.concat(html)
end

-- A sandbox command: what ran, how it ended; its command unless `shown` (the tool call's code) already shows it.
local function exec_row(ev, i, shown)
  local bits = {("sandbox %s"):format(escape(f.str(ev.kind) or "exec"))}
  if f.num(ev.exit_code) then bits[#bits + 1] = ("exit %d"):format(ev.exit_code) end
  bits[#bits + 1] = f.secs(ev.duration)
  if f.num(ev.stdout_bytes) then
    bits[#bits + 1] = ("out %s · err %s"):format(f.bytes(ev.stdout_bytes), f.bytes(ev.stderr_bytes))
  end
  local flags = {}
  if ev.timed_out == true then flags[#flags + 1] = flag("timed out") end
  if ev.oom_killed == true then flags[#flags + 1] = flag("killed: out of memory") end
  if ev.truncated == true then flags[#flags + 1] = flag("output cut", "warn") end
  if f.str(ev.error) then flags[#flags + 1] = flag(ev.error) end
  local command = f.str(ev.command) or ""
  local head_of = command:gsub("%.%.%.$", "")
  if shown and shown:sub(1, #head_of) == head_of then
    return ('<div class="exec" id="e%d">%s %s</div>'):format(i, table.concat(bits, " · "), table.concat(flags, " "))
  end
  return ('<div class="exec" id="e%d">%s %s<details><summary>command</summary>%s</details></div>'):format(i,
    table.concat(bits, " · "), table.concat(flags, " "), code(command, ev.kind == "python" and "python" or "shell"))
end

-- A command's output as it came (sandbox_output events), each piece with
-- its time after the call.
local function live_output(ctx, call, list)
  local lines = {}
  for _, k in ipairs(list or {}) do
    local e = ctx.events[k]
    local at = (f.num(e.t) and f.num(call.t)) and ("+%.2f s"):format(e.t - call.t) or "?"
    lines[#lines + 1] = ("%s %s\n%s"):format(at, f.str(e.stream) or "?", f.str(e.text) or "")
  end
  if #lines == 0 then return "" end
  local text = table.concat(lines, "\n")
  return ('<details class="live"><summary>output as it came (%d piece%s)</summary>%s</details>'):format(#lines,
    #lines == 1 and "" or "s", pre(escape(text), text, "out"))
end

local function tool_pair(ctx, i, call)
  local ix = ctx.ix
  local j = ix.result_of[i]
  local result = j and ctx.events[j]
  local name = f.str(call.name) or "?"
  local bits = {("<b>%s</b>"):format(escape(name))}
  if call.turn ~= nil then bits[#bits + 1] = "turn " .. escape(tostring(call.turn)) end
  if result then bits[#bits + 1] = f.secs(result.duration) end
  local res_html
  if not result then
    res_html = '<p class="note">no result in the trace (the run ended before the tool returned)</p>'
  else
    if result.is_error == true then bits[#bits + 1] = flag("error") end
    local content = f.text_of(result.content)
    res_html = pre(escape(content), content, "out")
    if name == "view_image" and result.is_error ~= true then
      local args = type(call.arguments) == "table" and call.arguments or json.decode(tostring(call.arguments))
      res_html = res_html .. files.image(ctx.files, type(args) == "table" and args.path or nil)
    end
  end
  local execs, extra = {}, {}
  local args = type(call.arguments) == "table" and call.arguments or {}
  local shown = f.str(args.code) or f.str(args.command)
  local problem = result and index.problem(result) or (not result and "warn") or nil
  for _, k in ipairs(ix.execs_of[i] or {}) do
    local e = ctx.events[k]
    execs[#execs + 1] = exec_row(e, k, shown)
    local p = index.problem(e)
    if p == "bad" or (p == "warn" and not problem) then problem = p end
  end
  if #execs > 0 then extra[#extra + 1] = "k-sandbox" end
  if problem then extra[#extra + 1] = problem end
  local inner = head(ctx, i, call, table.concat(bits, " · "))
    .. ('<div class="pair"><div class="call"><div class="lbl">call</div>%s</div>'
      .. '<div class="res"><div class="lbl">result</div>%s</div></div>'):format(arguments_html(name, call.arguments), res_html)
    .. (#execs > 0 and ('<div class="execs">%s</div>'):format(table.concat(execs)) or "")
    .. live_output(ctx, call, ix.outputs_of[i])
  return block(i, call, "tool", inner, #extra > 0 and table.concat(extra, " ") or nil)
end

-- ---- per type ----

local by_type = {}   -- event type -> function(ctx, i, ev) -> html | nil

function by_type.run_start(ctx, i, ev)
  return block(i, ev, "run", head(ctx, i, ev, ("run %s started%s"):format(escape(f.str(ev.run_id) or "?"),
    f.str(ev.replay) and (", replaying " .. escape(ev.replay)) or "")), "pin")
end

function by_type.run_end(ctx, i, ev)
  local text = ("run %s after %s"):format(escape(f.str(ev.status) or "?"), f.secs(ev.duration))
  if f.str(ev.error) then text = text .. code(ev.error, nil) end
  return block(i, ev, "run", head(ctx, i, ev, text), "pin")
end

function by_type.agent_start(ctx, i, ev)
  local a = ctx.ix.agent_of[i] or {}
  local bits = {"starts", escape(f.str(ev.model) or "?")}
  if f.num(ev.max_turns) then bits[#bits + 1] = ("up to %d turns"):format(ev.max_turns) end
  if type(ev.budget) == "table" then
    local b = {}
    if f.num(ev.budget.tokens) then b[#b + 1] = f.tokens(ev.budget.tokens) .. " tokens" end
    if f.num(ev.budget.cost) then b[#b + 1] = f.money(ev.budget.cost) end
    if #b > 0 then bits[#bits + 1] = "budget " .. table.concat(b, ", ") end
  end
  local inner = head(ctx, i, ev, table.concat(bits, " · "))
  if a.instructions then
    inner = inner .. '<details class="instr" open><summary>Instructions</summary>' .. md(a.instructions) .. "</details>"
  end
  if ev.task ~= nil and ev.task ~= json.null then
    inner = inner .. '<div class="task"><div class="lbl">Task</div>' .. md(f.text_of(ev.task)) .. "</div>"
  end
  return block(i, ev, "agent", inner, "pin")
end

-- A model's reasoning summary (Responses' reasoning summaries, Anthropic's
-- thinking), folded: the encrypted reasoning itself is never shown.
local function reasoning_html(resp)
  local text = f.str(resp.reasoning)
  if not text or text == "" then return "" end
  return '<details class="reasoning"><summary>Reasoning</summary>' .. md(text) .. "</details>"
end

function by_type.agent_turn(ctx, i, ev)
  local resp = ctx.ix.response_of[i] or {}
  local bits = {("<b>Turn %s</b>"):format(escape(tostring(ev.turn or "?")))}
  bits[#bits + 1] = ev.cached and "model: from the cache" or ("model " .. f.secs(ev.duration))
  if f.num(resp.attempts) and resp.attempts > 1 then bits[#bits + 1] = flag(resp.attempts .. " attempts", "warn") end
  bits[#bits + 1] = usage_text(ev.usage, ev.cost)
  if type(ev.total_usage) == "table" then
    bits[#bits + 1] = ('<span class="dim">so far %s tokens · %s</span>'):format(
      f.tokens((f.num(ev.total_usage.input_tokens) or 0) + (f.num(ev.total_usage.output_tokens) or 0)),
      ev.total_cost ~= nil and f.money(ev.total_cost) or "$?")
  end
  local inner = head(ctx, i, ev, table.concat(bits, " · ")) .. reasoning_html(resp)
  if f.str(ev.text) and ev.text ~= "" then inner = inner .. md(ev.text) end
  local calls = type(ev.tool_calls) == "table" and ev.tool_calls or {}
  if #calls > 0 then
    local names = {}
    for k, c in ipairs(calls) do names[k] = escape(f.str(type(c) == "table" and c.name or c) or "?") end
    inner = inner .. ('<div class="calls">→ %s</div>'):format(table.concat(names, ", "))
  elseif resp.finish_reason == "length" then
    inner = inner .. '<div class="calls">' .. flag("the answer was cut: max tokens", "warn") .. "</div>"
  end
  return block(i, ev, "model", inner, "turn")
end

function by_type.model_response(ctx, i, ev)
  if ctx.ix.folded[i] then return nil end
  local bits = {("model %s"):format(escape(f.str(ev.model) or "?")),
                ev.cached and "from the cache" or f.secs(ev.duration), usage_text(ev.usage, ev.cost)}
  if f.str(ev.finish_reason) then bits[#bits + 1] = escape(ev.finish_reason) end
  local inner = head(ctx, i, ev, table.concat(bits, " · ")) .. reasoning_html(ev)
  if f.str(ev.text) and ev.text ~= "" then inner = inner .. md(ev.text) end
  local calls = type(ev.tool_calls) == "table" and ev.tool_calls or {}
  for _, c in ipairs(calls) do
    if type(c) == "table" then
      inner = inner .. ('<div class="arg">→ %s</div>'):format(escape(f.str(c.name) or "?"))
        .. arguments_html(f.str(c.name), c.arguments or c.arguments_json)
    end
  end
  return block(i, ev, "model", inner, "turn")
end

function by_type.model_request(ctx, i, ev)
  local bits = {("request to %s/%s"):format(escape(f.str(ev.provider) or "?"), escape(f.str(ev.model) or "?"))}
  if ev.cached then bits[#bits + 1] = "answered from the cache"
  elseif f.num(ev.attempt) then bits[#bits + 1] = "attempt " .. ev.attempt end
  local body = type(ev.body) == "table" and ev.body or {}
  local messages = type(body.messages) == "table" and #body.messages or type(body.input) == "table" and #body.input
  if messages then bits[#bits + 1] = f.count(messages) .. " messages" end
  if ev.stream then bits[#bits + 1] = "streamed" end
  return block(i, ev, "model", head(ctx, i, ev, table.concat(bits, " · ")), "quiet")
end

function by_type.model_retry(ctx, i, ev)
  local err = type(ev.error) == "table" and ev.error or {}
  return block(i, ev, "model", head(ctx, i, ev, ("%s model %s: retry %s in %s after %s"):format(flag("retry", "warn"),
    escape(f.str(ev.model) or "?"), escape(tostring(ev.attempt or "?")), f.secs(ev.wait),
    escape(f.str(err.message) or f.str(ev.error) or "an error"))))
end

function by_type.model_error(ctx, i, ev)
  local err = type(ev.error) == "table" and ev.error or {}
  return block(i, ev, "model", head(ctx, i, ev, ("%s model %s, attempt %s: %s%s"):format(flag("error"),
    escape(f.str(ev.model) or "?"), escape(tostring(ev.attempt or "?")),
    f.str(err.kind) and (escape(err.kind) .. ": ") or "", escape(f.str(err.message) or f.str(ev.error) or "?"))))
end

function by_type.tool_call(ctx, i, ev)
  return tool_pair(ctx, i, ev)
end

function by_type.tool_result(ctx, i, ev)
  if ctx.ix.paired[i] then return nil end
  local content = f.text_of(ev.content)
  local inner = head(ctx, i, ev, ("result of <b>%s</b> (its call is not in the trace)%s"):format(
    escape(f.str(ev.name) or "?"), ev.is_error == true and (" " .. flag("error")) or ""))
  return block(i, ev, "tool", inner .. pre(escape(content), content, "out"))
end

function by_type.sandbox_output(ctx, i, ev)
  if ctx.ix.attached[i] then return nil end
  return block(i, ev, "sandbox", head(ctx, i, ev, ("sandbox %s %s: %s"):format(escape(f.str(ev.tool) or "?"),
    escape(f.str(ev.stream) or "?"), escape(f.str(ev.text) or ""))))
end

function by_type.sandbox_exec(ctx, i, ev)
  if ctx.ix.attached[i] then return nil end
  local row = exec_row(ev, i):gsub('^<div class="exec" id="e%d+">', '<div class="exec">')
  return block(i, ev, "sandbox", head(ctx, i, ev, ("sandbox %s"):format(escape((f.str(ev.session) or "?"):sub(1, 12))))
    .. row)
end

local function described(ctx, i, ev, kind, extra)
  return block(i, ev, kind, head(ctx, i, ev, escape(trace.describe(ev) or ev.type):gsub("^%s+", "")), extra)
end

function by_type.sandbox_open(ctx, i, ev) return described(ctx, i, ev, "sandbox") end
function by_type.network_rules(ctx, i, ev) return described(ctx, i, ev, "sandbox") end
function by_type.sandbox_fork(ctx, i, ev) return described(ctx, i, ev, "sandbox") end

-- every connection of a sandbox with network rules: refusals flagged, with why
function by_type.network(ctx, i, ev)
  local target = ("%s %s:%s"):format(f.str(ev.method) or "?", f.str(ev.host) or "?", tostring(ev.port or "?"))
  local text
  if ev.allowed == false then
    text = flag("refused") .. " network " .. escape(target) .. ": " .. escape(f.str(ev.reason) or "?")
  else
    local via = ev.tls_terminated and ", TLS ended at luagent" or ""
    local secrets = type(ev.secrets) == "table" and #ev.secrets > 0
      and (", secrets " .. escape(table.concat(ev.secrets, ", "))) or ""
    text = ("network %s (%s%s%s): %s up, %s down, %s ms%s"):format(escape(target),
      escape(f.str(ev.address) or "?"), via, secrets, tostring(ev.bytes_up or 0), tostring(ev.bytes_down or 0),
      tostring(ev.ms or 0), ev.error and (": " .. escape(f.str(ev.error) or "")) or "")
    if ev.error then text = flag(ev.limit or "cut") .. " " .. text end
  end
  return block(i, ev, "sandbox", head(ctx, i, ev, text))
end
function by_type.sandbox_close(ctx, i, ev)
  if f.str(ev.error) then return described(ctx, i, ev, "sandbox") end
  return block(i, ev, "sandbox", head(ctx, i, ev, ("sandbox %s removed"):format(escape(f.str(ev.session) or "?"))))
end
function by_type.agent_limit(ctx, i, ev)
  return block(i, ev, "agent", head(ctx, i, ev, flag("limit") .. " stopped: " .. escape(f.str(ev.reason) or "?")))
end
function by_type.agent_reminder(ctx, i, ev) return described(ctx, i, ev, "agent") end
function by_type.cache_live(ctx, i, ev) return described(ctx, i, ev, "model") end
function by_type.cache_summary(ctx, i, ev) return described(ctx, i, ev, "model") end

function by_type.agent_end(ctx, i, ev)
  local u = type(ev.usage) == "table" and ev.usage or {}
  local bits = {("stopped by <b>%s</b>"):format(escape(f.str(ev.stopped_by) or "?")),
                ("%s turns"):format(escape(tostring(ev.turns or "?"))), usage_text(u, ev.cost), f.secs(ev.duration)}
  local inner = head(ctx, i, ev, table.concat(bits, " · "))
  if type(ev.missing_outputs) == "table" and #ev.missing_outputs > 0 then
    local names = {}
    for k, name in ipairs(ev.missing_outputs) do names[k] = escape(tostring(name)) end
    inner = inner .. ('<p>%s %s</p>'):format(flag("missing outputs", "warn"), table.concat(names, ", "))
  end
  if f.str(ev.error) then inner = inner .. code(ev.error, nil) end
  local a = ctx.ix.agent_of[i]
  if a and a.last_text and ev.output == a.last_text then
    inner = inner .. ('<p class="dim">answer: the text of <a href="#e%d">its last turn</a></p>'):format(a.last_turn)
  elseif ev.output ~= nil and ev.output ~= json.null then
    local text = type(ev.output) == "table" and json.encode(ev.output, {indent = 2}) or tostring(ev.output)
    inner = inner .. '<div class="answer"><div class="lbl">Answer</div>'
      .. (type(ev.output) == "table" and code(text, "json") or md(text)) .. "</div>"
  end
  return block(i, ev, "agent", inner, "pin")
end

-- Any event: its type, its one-line description if it has one, and its fields.
local function generic(ctx, i, ev, why)
  local fields = {}
  for k, v in pairs(ev) do
    if k ~= "t" and k ~= "time" and k ~= "type" then fields[k] = v end
  end
  local line = trace.describe(ev)
  local inner = head(ctx, i, ev, ('<span class="type">%s</span> %s'):format(escape(tostring(ev.type)),
    line and escape(line:gsub("^%s+", "")) or ""))
  if why then inner = inner .. ('<p class="note">shown as it is: %s</p>'):format(escape(why)) end
  local ok, text = pcall(json.encode, fields, {indent = 2})
  inner = inner .. '<details><summary>fields</summary>' .. code(ok and text or tostring(text), "json") .. "</details>"
  return block(i, ev, "other", inner)
end

function events.render(ctx, i, ev)
  local fn = by_type[ev.type]
  if not fn then return generic(ctx, i, ev) end
  local ok, html = pcall(fn, ctx, i, ev)
  if ok then return html end
  return generic(ctx, i, ev, "the page could not read this " .. tostring(ev.type) .. " event (" .. tostring(html) .. ")")
end

return events

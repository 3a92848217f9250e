-- luagent.trace: a run's record. Every recipe run that calls a model, an
-- agent or a sandbox writes runs/<run-id>/trace.jsonl — one JSON line per
-- event (run start with its settings, model request and response with usage
-- and timing, tool call and result, sandbox command, errors, run end), with
-- secrets redacted — and shows one line per step on the terminal (-q: none;
-- --json: the events themselves, as JSON lines on stdout). luagent.run
-- subscribes it when a recipe run starts; it opens at the run's first event.
-- Several runs in one process (luagent eval) each have their own
-- (luagent.run); the functions below answer for the calling task's run
-- (luagent.context).
--
-- The functions: lua/meta/trace.lua. A run's files go to runs/<run-id>/ under
-- the current folder, or under $LUAGENT_RUNS_DIR.
--
-- Recording and replaying the model exchanges (--record / --replay) are model
-- transports: luagent.model.recording.
--
-- Every line is written and flushed whole, or the failure (a full disk) is
-- said on stderr at once, naming the file and how many whole lines it holds;
-- the run goes on (its outputs are still saved, the terminal view still
-- shows each step), no more lines are written, and the run ends with exit
-- status 1 (luagent.run).
local json = require "luagent.json"
local errors = require "luagent.errors"
local secrets = require "luagent.secrets"
local sched = require "luagent.sched"
local context = require "luagent.context"
local host = require "luagent.host"
local fs = require "luagent.fs"
local excerpt = require("luagent.text").excerpt

local trace = {}

-- ---- where a run's files go ----

trace.runs_root = context.runs_root

function trace.run_id()
  return context.current().id
end

-- Made on first use; a folder that cannot be made raises its error.
function trace.run_dir(sub)
  return context.current():dir(sub)
end

-- ---- making events safe to write ----

local MAX_STRING = 200000

-- Fields a provider sends encrypted or signed, to be passed back and never
-- read: the trace shows their size (they stay whole in recordings and the cache).
local OPAQUE = {encrypted_content = true, signature = true}

local function sanitize(v, seen)
  local t = type(v)
  if t == "string" then
    if #v > 4096 and (v:match("^data:image/") or v:match("^[%w+/=]+$")) then
      return ("[%d bytes of image or binary data]"):format(#v)
    end
    if #v > MAX_STRING then return v:sub(1, MAX_STRING) .. ("[... %d characters cut by the trace]"):format(#v - MAX_STRING) end
    return v
  elseif t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return tostring(v) end
    return v
  elseif t == "boolean" or t == "nil" then
    return v
  elseif t == "table" then
    if v == json.null then return v end
    seen = seen or {}
    if seen[v] then return "[cycle]" end
    seen[v] = true
    local out = json.is_array(v) and json.array{} or {}
    for k, item in pairs(v) do
      local key = (type(k) == "string" or math.type(k) == "integer") and k or tostring(k)
      if OPAQUE[key] and type(item) == "string" then
        out[key] = ("[%d bytes, %s: not shown]"):format(#item, key == "signature" and "signature" or "encrypted")
      else
        out[key] = sanitize(item, seen)
      end
    end
    seen[v] = nil
    return out
  elseif v == json.null then
    return v
  end
  return tostring(v)
end

-- The event as it may be shown or written: sanitised and redacted.
function trace.safe(ev)
  return secrets.redact_value(sanitize(ev))
end

function trace.encode(ev)
  return json.encode(trace.safe(ev))
end

-- ---- the terminal view: one line per step ----

local function k(n)
  if not n then return "?" end
  return n >= 1000 and ("%.1fk"):format(n / 1000) or tostring(n)
end

local function first_line(text, max)
  return excerpt(text or "", max or 90, "line")
end

local function money(c)
  return c and ("$%.4f"):format(c) or "$?"
end

local STDERR_LINES = 4

-- The last lines of a failed command's stderr in a tool result ("exit code N
-- ..." with N > 0, then "stderr:"), each on a line of its own: a Python
-- traceback's last lines say what went wrong. "" for anything else.
local function failed_stderr(content)
  if type(content) ~= "string" then return "" end
  local code = tonumber(content:match("^exit code (%d+)"))
  local err = content:match("\nstderr:\n(.*)$")
  if not code or code == 0 or not err then return "" end
  local lines = {}
  for line in err:gmatch("[^\n]+") do
    if line:match("%S") then lines[#lines + 1] = line end
  end
  local out = {}
  for i = math.max(1, #lines - STDERR_LINES + 1), #lines do
    out[#out + 1] = "\n              | " .. (#lines[i] > 160 and (lines[i]:sub(1, 157) .. "...") or lines[i])
  end
  return table.concat(out)
end

-- A one-line description of an event for people, or nil for quiet events.
function trace.describe(ev)
  local t = ev.type
  if t == "run_start" then
    return ("run %s%s"):format(ev.run_id, ev.replay and " (replaying " .. ev.replay .. ")" or "")
  elseif t == "agent_start" then
    return ("%s: %s, up to %d turns"):format(ev.agent, ev.model, ev.max_turns or 0)
  elseif t == "agent_turn" then
    local calls = #(ev.tool_calls or {}) > 0 and table.concat(ev.tool_calls, ", ") or "answers"
    local total = ev.total_usage and (ev.total_usage.input_tokens + ev.total_usage.output_tokens) or nil
    local took = ev.cached and "cached" or ("%5.1fs"):format(ev.duration or 0)
    local from_cache = ev.usage and (ev.usage.cached_tokens or 0) > 0
      and ("  (%s from the provider's cache)"):format(k(ev.usage.cached_tokens)) or ""
    return ("  turn %-2d model %s -> %-28s tokens %s  %s%s"):format(ev.turn, took, calls, k(total), money(ev.total_cost),
      from_cache)
  elseif t == "tool_result" then
    -- an error in full (its file:line), a result's first line
    local status = ev.is_error and ("error: " .. first_line(ev.content, 200)) or first_line(ev.content, 60)
    return ("  turn %-2d %-12s %5.1fs  %s"):format(ev.turn, ev.name, ev.duration or 0, status) .. failed_stderr(ev.content)
  elseif t == "sandbox_output" then
    local last = tostring(ev.text or ""):gsub("\r", ""):match("([^\n]*[^\n%s][^\n]*)\n*$")
    return last and ("  %-20s | %s"):format(tostring(ev.tool or "sandbox"), first_line(last, 100)) or nil
  elseif t == "mcp_progress" then
    return ("  turn %-2s %-12s  progress %s%s%s"):format(ev.turn or "-", ev.tool, tostring(ev.progress),
      ev.total and ("/" .. tostring(ev.total)) or "", ev.message and ("  " .. first_line(ev.message, 60)) or "")
  elseif t == "agent_reminder" then
    return ("  turn %-2d reminded the agent: missing %s"):format(ev.turn, table.concat(ev.missing or {}, ", "))
  elseif t == "approval" then
    local why = ev.error or (ev.by ~= "no terminal" and ev.reason)
    return ("  turn %-2d %-12s %s by %s%s"):format(ev.turn or 0, ev.tool, ev.decision, ev.by or "?",
      why and (": " .. first_line(why, 60)) or "")
  elseif t == "agent_invalid_output" then
    local e = (ev.errors or {})[1] or {}
    return ("  turn %-2d the answer does not match the schema: %s %s%s"):format(ev.turn or 0, e.path or "",
      first_line(e.message, 60), #(ev.errors or {}) > 1 and (" (+%d more)"):format(#ev.errors - 1) or "")
  elseif t == "agent_limit" then
    return "  stopped: " .. ev.reason
  elseif t == "agent_end" then
    local total = ev.usage and (ev.usage.input_tokens + ev.usage.output_tokens) or nil
    local cached = ev.usage and ev.usage.cached_tokens or 0
    return ("%s: %s after %d turns, %s tokens%s, %s, %.1fs%s"):format(ev.agent, ev.stopped_by, ev.turns or 0, k(total),
      cached > 0 and (" (%s input from the provider's cache)"):format(k(cached)) or "",
      money(ev.cost), ev.duration or 0, ev.error and (" - " .. first_line(ev.error)) or "")
  elseif t == "agent_compaction" then
    if not ev.done then return ("  turn %-2d compaction not done: %s"):format(ev.turn or 0, ev.error or "nothing to replace") end
    return ("  turn %-2d compacted: %s of %s tokens; %d messages -> %d (a %s-character summary, %s)"):format(ev.turn or 0,
      k(ev.tokens), k(ev.window), ev.messages_before or 0, ev.messages_after or 0, tostring(ev.summary_chars or "?"),
      money(ev.cost))
  elseif t == "model_note" then
    return ("  model %s: %s"):format(ev.model, first_line(ev.message, 160))
  elseif t == "model_retry" then
    return ("  model %s: retry %d in %.1fs after %s"):format(ev.model, ev.attempt, ev.wait or 0,
      first_line(ev.error and ev.error.message, 70))
  elseif t == "sandbox_open" then
    local net = type(ev.network) == "table" and ("network by rules: %d allowed, %d denied"):format(
      #(ev.network.allow or {}), #(ev.network.deny or {})) or ev.network and "the engine's whole network" or "no network"
    return ("sandbox %s ready (%s, %s memory, %s)"):format(ev.session, ev.image, ev.memory, net)
  elseif t == "sandbox_fork" then
    local n = tonumber(ev.n) or 0
    if ev.error then return ("sandbox %s could not fork: %s"):format(ev.session, first_line(ev.error, 160)) end
    return ("sandbox %s forked into %d session%s (%s%s): %.1f MB copied in %d ms"):format(ev.session, n,
      n == 1 and "" or "s", table.concat(type(ev.sessions) == "table" and ev.sessions or {}, ", "),
      (tonumber(ev.pooled) or 0) > 0 and ("; %d from a warm pool"):format(ev.pooled) or "",
      (tonumber(ev.bytes) or 0) / 1e6, tonumber(ev.ms) or 0)
  elseif t == "network" then
    -- the live view shows what went wrong; the trace page lists every connection
    if ev.allowed == false then
      return ("  network: refused %s %s:%s: %s"):format(ev.method or "?", ev.host or "?", tostring(ev.port or "?"),
        first_line(ev.reason, 120))
    elseif ev.error then
      return ("  network: %s %s:%s ended: %s"):format(ev.method or "?", ev.host or "?", tostring(ev.port or "?"),
        first_line(ev.error, 120))
    end
    return nil
  elseif t == "network_rules" then
    local list = type(ev.rules) == "table" and ev.rules or {ev.rules}
    local texts = {}
    for i, r in ipairs(list) do texts[i] = tostring(r) end
    return ("  network: sandbox %s rules changed: %s %s"):format(ev.session or "?", ev.change or "?",
      table.concat(texts, ", "))
  elseif t == "sandbox_close" and ev.error then
    return ("sandbox %s could not be removed: %s ('luagent sandbox prune' removes it)"):format(ev.session,
      first_line(ev.error, 80))
  elseif t == "cache_live" then
    return ("%s from cache; live from %s: %s"):format(ev.cached, ev.live_from, ev.reason)
  elseif t == "run_resumed" then
    local turns = tonumber(ev.turns) or 0
    return ("%s: resumed, %d turn%s answered from the journal%s; live from here"):format(
      tostring(ev.agent or "agent"):gsub("#%d+$", ""), turns, turns == 1 and "" or "s",
      ev.checkpoint and ("; the workspace from " .. tostring(ev.checkpoint)) or "")
  elseif t == "cache_summary" then
    return ("%d model call%s: %d from cache, %d live, %s saved%s"):format(ev.calls, ev.calls == 1 and "" or "s",
      ev.hits, ev.live, money(ev.saved_cost), ev.saved_unknown and " (more: some prices are unknown)" or "")
  elseif t == "run_end" then
    return ("run %s %s in %.1fs; trace: %s%s"):format(ev.run_id, ev.status, ev.duration or 0, ev.trace or "?",
      ev.trace_error and (" (incomplete: " .. ev.trace_error .. ")") or "")
  end
  return nil
end

-- ---- the trace file and the terminal view ----

function trace.read(path, opts)
  local text, err = fs.read(path)
  if not text then return nil, err end
  local list, n = {}, 0
  for line in text:gmatch("[^\n]+") do
    n = n + 1
    local ev = json.decode(line)
    if type(ev) ~= "table" or type(ev.type) ~= "string" then
      local message = ("%s:%d: not a trace event (a JSON object with a \"type\")"):format(path, n)
      if opts and opts.partial then return list, {line = n, message = message} end
      return errors.fail("json", message, {path = path, line = n})
    end
    list[#list + 1] = ev
  end
  return list
end

function trace.path()
  local t = context.current().trace
  return t and t.path
end

local Trace = {}
Trace.__index = Trace

-- trace.open{t0 = loop.now() at the run's start, quiet, json, settings, record, replay, run}:
-- the trace of `run` (default: the calling task's run), <its folder>/trace.jsonl | nil, err.
function trace.open(opts)
  local r = opts.run or context.current()
  local ok, dir = pcall(r.dir, r)
  if not ok then return nil, errors.wrap(dir, "cannot write the trace in " .. r:_folder()) end
  local path = dir .. "/trace.jsonl"
  local file, why = io.open(path, "a")
  if not file then return errors.fail("io", ("cannot write the trace %s: %s"):format(path, why), {path = path}) end
  return setmetatable({file = file, path = path, run_id = r.id, run = r, opts = opts, t0 = opts.t0 or sched.now(),
                       lines = 0}, Trace)
end

-- run_start, to every subscriber of the run's events (this trace too), at
-- `time` (the first event's).
function Trace:start(time)
  local o, r = self.opts, self.run
  r:emit({type = "run_start", time = time, run_id = self.run_id, recipe = r.recipe, args = r.args,
          settings = o.settings, version = host.version, record = o.record, replay = o.replay})
end

-- A line that could not be written: said at once; no more lines are written.
function Trace:_failed(why)
  local message = ("cannot write the trace %s: %s; it holds the first %d event%s (whole lines; a cut last line "
    .. "is not one of them)"):format(self.path, tostring(why), self.lines, self.lines == 1 and "" or "s")
  self.failure = errors.new("io", message, {path = self.path, lines = self.lines})
  io.stderr:write("luagent: ", message, ". The run goes on; it will end with exit status 1.\n")
end

-- The line and its newline, written and flushed: true | nil, why.
local function put(file, line)
  local ok, why = file:write(line, "\n")
  if ok then ok, why = file:flush() end
  return ok, why
end

-- One event: a line in the file; on stdout with --json, else a line for
-- people on stderr (none with -q).
function Trace:write(ev)
  if self.closed then return end
  ev.t = sched.now() - self.t0
  local safe = trace.safe(ev)
  local line = json.encode(safe)
  if not self.failure then
    local ok, why = put(self.file, line)
    if ok then self.lines = self.lines + 1 else self:_failed(why) end
  end
  if self.opts.json then
    io.stdout:write(line, "\n")
    io.stdout:flush()
  elseif not self.opts.quiet then
    local text = trace.describe(safe)
    if text then io.stderr:write(text, "\n") end
  end
end

-- run_end (status "ok" | "failed" | "incomplete" | "interrupted"), then the file is closed.
-- A trace that could not be written makes an "ok" run "failed"; returns
-- t.failure (nil when every line was written).
function Trace:finish(status, message)
  if self.closed then return self.failure end
  status = status or "ok"
  if self.failure and status == "ok" then status, message = "failed", self.failure.message end
  self.run:emit({type = "run_end", run_id = self.run_id, status = status, error = message,
                 duration = sched.now() - self.t0, trace = self.path, waiting = rawget(self.run, "waiting"),
                 trace_error = self.failure and ("cut after line " .. self.lines) or nil})
  self.closed = true
  local ok, why = self.file:close()
  if not ok and not self.failure then self:_failed(why) end
  return self.failure
end

return trace

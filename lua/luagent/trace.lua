-- luagent.trace: a run's record. Every recipe run that calls a model, an
-- agent or a sandbox writes runs/<run-id>/trace.jsonl — one JSON line per
-- event (run start with its settings, model request and response with usage
-- and timing, tool call and result, sandbox command, errors, run end), with
-- secrets redacted — and shows one line per step on the terminal (-q: none;
-- --json: the events themselves, as JSON lines on stdout).
--
--   luagent run recipe.lua --record rec.jsonl   saves the model exchanges
--   luagent run recipe.lua --replay rec.jsonl   answers every model call from them,
--                                               without network, and stops with a
--                                               diff the moment a request differs
--                                               (timings tools report excepted)
--
--   trace.run_id(), trace.run_dir("output")     where this run's files go
--   (runs/ under the current folder, or $LUAGENT_RUNS_DIR)
local json = require "luagent.json"
local events = require "luagent.events"
local secrets = require "luagent.secrets"
local fs = require "luagent.fs"
local sys = require "luagent.sys"
local loop = require "luagent.loop"
local host = require "luagent.host"

local trace = {}

local state = {started = false}

-- ---- where a run's files go ----

local function recipe_name()
  return ((host.script or "repl"):match("([^/]+)%.lua$") or "run"):gsub("[^%w_-]", "_")
end

function trace.runs_root()
  return os.getenv("LUAGENT_RUNS_DIR") or "runs"
end

function trace.run_id()
  if not state.run_id then
    state.run_id = os.date("!%Y%m%d-%H%M%S") .. "-" .. recipe_name() .. "-" .. sys.random_hex(2)
  end
  return state.run_id
end

function trace.run_dir(sub)
  local dir = trace.runs_root() .. "/" .. trace.run_id()
  if sub and sub ~= "" then dir = dir .. "/" .. sub end
  local ok, err = fs.mkdir(dir)
  if not ok then error("cannot create the run folder: " .. err.message, 2) end
  return dir
end

-- ---- making events safe to write ----

local MAX_STRING = 200000

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
      out[key] = sanitize(item, seen)
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
  text = tostring(text or ""):match("^%s*([^\n]*)") or ""
  max = max or 90
  return #text > max and text:sub(1, max - 3) .. "..." or text
end

local function money(c)
  return c and ("$%.4f"):format(c) or "$?"
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
    return ("  turn %-2d model %5.1fs -> %-28s tokens %s  %s"):format(ev.turn, ev.duration or 0, calls, k(total),
      money(ev.total_cost))
  elseif t == "tool_result" then
    local status = ev.is_error and ("error: " .. first_line(ev.content, 60)) or first_line(ev.content, 60)
    return ("  turn %-2d %-12s %5.1fs  %s"):format(ev.turn, ev.name, ev.duration or 0, status)
  elseif t == "agent_reminder" then
    return ("  turn %-2d reminded the agent: missing %s"):format(ev.turn, table.concat(ev.missing or {}, ", "))
  elseif t == "agent_limit" then
    return "  stopped: " .. ev.reason
  elseif t == "agent_end" then
    local total = ev.usage and (ev.usage.input_tokens + ev.usage.output_tokens) or nil
    return ("%s: %s after %d turns, %s tokens, %s, %.1fs%s"):format(ev.agent, ev.stopped_by, ev.turns or 0, k(total),
      money(ev.cost), ev.duration or 0, ev.error and (" - " .. first_line(ev.error)) or "")
  elseif t == "model_retry" then
    return ("  model %s: retry %d in %.1fs after %s"):format(ev.model, ev.attempt, ev.wait or 0,
      first_line(ev.error and ev.error.message, 70))
  elseif t == "sandbox_open" then
    return ("sandbox %s ready (%s, %s memory, %s)"):format(ev.session, ev.image, ev.memory,
      ev.network and "network on" or "no network")
  elseif t == "sandbox_close" and ev.error then
    return ("sandbox %s could not be removed: %s ('luagent sandbox prune' removes it)"):format(ev.session,
      first_line(ev.error, 80))
  elseif t == "run_end" then
    return ("run %s %s in %.1fs; trace: %s"):format(ev.run_id, ev.status, ev.duration or 0, ev.trace or "?")
  end
  return nil
end

-- ---- recording and replaying model exchanges ----

local function url_endpoint(url)
  return (url:match("(/[%w_.-]+)$") or url)
end

local KEPT_HEADERS = {["content-type"] = true, ["retry-after"] = true, ["retry-after-ms"] = true}

function trace.recorder(path, inner)
  local file = assert(io.open(path, "w"))
  file:write(json.encode({luagent_recording = 1, version = host.version}), "\n")
  file:flush()
  return function(request)
    local chunks = {}
    local copy = {}
    for key, value in pairs(request) do copy[key] = value end
    if request.on_chunk then
      copy.on_chunk = function(c)
        chunks[#chunks + 1] = c
        return request.on_chunk(c)
      end
    end
    local res, err = inner(copy)
    local entry = {endpoint = url_endpoint(request.url), body = json.decode(request.body or "") or request.body,
                   stream = request.on_chunk ~= nil}
    if res then
      local headers = {}
      for name, value in pairs(res.headers or {}) do if KEPT_HEADERS[name] then headers[name] = value end end
      entry.response = {status = res.status, headers = headers, body = request.on_chunk and table.concat(chunks) or res.body}
    else
      entry.error = {kind = err.kind, message = err.message, status = err.status}
    end
    file:write(json.encode(secrets.redact_value(entry)), "\n")
    file:flush()
    return res, err
  end
end

local function short(v)
  local text = type(v) == "string" and ("%q"):format(v) or (type(v) == "table" and json.encode(v) or tostring(v))
  return #text > 160 and text:sub(1, 157) .. "..." or text
end

-- The places where two JSON values differ, as "path: recorded X, now Y" lines.
function trace.diff(recorded, now, path, out)
  out = out or {}
  path = path or "request"
  if #out >= 8 then return out end
  if type(recorded) == "table" and type(now) == "table" then
    local keys = {}
    for key in pairs(recorded) do keys[key] = true end
    for key in pairs(now) do keys[key] = true end
    local sorted = {}
    for key in pairs(keys) do sorted[#sorted + 1] = key end
    table.sort(sorted, function(a, b) return tostring(a) < tostring(b) end)
    for _, key in ipairs(sorted) do
      local sub = math.type(key) == "integer" and ("%s[%d]"):format(path, key) or path .. "." .. tostring(key)
      trace.diff(recorded[key], now[key], sub, out)
    end
  elseif recorded ~= now then
    out[#out + 1] = ("  %s\n    recorded: %s\n    now:      %s"):format(path, short(recorded), short(now))
  end
  return out
end

local MISMATCH_MT = {__tostring = function(e) return e.message end}

local ENDPOINT_PROVIDERS = {["/completions"] = "openai", ["/responses"] = "openai_responses",
                            ["/messages"] = "anthropic"}

-- The provider a recording was made with, from its first exchange.
function trace.recorded_provider(path)
  local file = io.open(path, "r")
  if not file then return nil end
  for line in file:lines() do
    local entry = json.decode(line)
    if type(entry) == "table" and entry.endpoint then
      file:close()
      return ENDPOINT_PROVIDERS[entry.endpoint]
    end
  end
  file:close()
  return nil
end

-- What a replayed request is compared by: the request with the timings tools
-- report ("took 1.23 s") blanked, as they differ from run to run.
function trace.replay_key(body)
  return (json.encode(body):gsub("took [%d%.]+ s", "took ? s"))
end

function trace.replayer(path)
  local file, err = io.open(path, "r")
  if not file then error("--replay: cannot open " .. path .. ": " .. tostring(err), 0) end
  local entries = {}
  for line in file:lines() do
    local entry = json.decode(line)
    if type(entry) == "table" and entry.endpoint then entries[#entries + 1] = entry end
  end
  file:close()
  local used = {}
  return function(request)
    local body = json.decode(request.body or "") or request.body
    local wanted = trace.replay_key(body)
    local first_unused
    for i, entry in ipairs(entries) do
      if not used[i] then
        first_unused = first_unused or entry
        if entry.endpoint == url_endpoint(request.url) and trace.replay_key(entry.body) == wanted then
          used[i] = true
          if entry.error then return nil, setmetatable(entry.error, MISMATCH_MT) end
          local res = entry.response
          if request.on_chunk then
            for i2 = 1, #res.body, 65536 do
              if request.on_chunk(res.body:sub(i2, i2 + 65535)) == false then break end
            end
            return {status = res.status, headers = res.headers or {}, body = ""}
          end
          return {status = res.status, headers = res.headers or {}, body = res.body}
        end
      end
    end
    local message
    if first_unused then
      message = ("replay: this model request differs from the recording in %s:\n%s\n"
        .. "(the recipe, its settings or its prompts changed since the recording; record again with --record)")
        :format(path, table.concat(trace.diff(first_unused.body, body), "\n"))
    else
      message = ("replay: the recording %s has no more model exchanges, but the run made another request"):format(path)
    end
    error(setmetatable({kind = "replay_mismatch", message = message}, MISMATCH_MT), 0)
  end
end

-- ---- starting a run's trace ----

function trace.path()
  return state.path
end

-- Starts this run's trace: the file, the terminal view, record/replay.
-- Called by luagent at the run's first event; safe to call again.
function trace.start(opts)
  if state.started then return end
  state.started = true
  opts = opts or {}
  state.t0 = loop.now()
  local model = require "luagent.model"
  if opts.replay then model.transport = trace.replayer(opts.replay)
  elseif opts.record then model.transport = trace.recorder(opts.record, model.transport) end
  local dir = trace.run_dir()
  state.path = dir .. "/trace.jsonl"
  local file = assert(io.open(state.path, "a"))
  local closed = false
  events.subscribe(function(ev)
    if closed then return end
    ev.t = loop.now() - state.t0
    local safe = trace.safe(ev)
    local line = json.encode(safe)
    file:write(line, "\n")
    file:flush()
    if opts.json then
      io.stdout:write(line, "\n")
      io.stdout:flush()
    elseif not opts.quiet then
      local text = trace.describe(safe)
      if text then io.stderr:write(text, "\n") end
    end
  end)
  events.emit({type = "run_start", run_id = trace.run_id(), recipe = host.script, args = host.args,
               settings = opts.settings, version = host.version, record = opts.record, replay = opts.replay})
  luagent.at_exit(function(status, message)
    events.emit({type = "run_end", run_id = trace.run_id(), status = status or "ok", error = message,
                 duration = loop.now() - state.t0, trace = state.path})
    closed = true
    file:close()
  end, {last = true})
end

return trace

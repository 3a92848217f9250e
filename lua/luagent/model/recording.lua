-- luagent.model.recording: recording a run's model exchanges and replaying
-- them, as model transports (functions with luagent.http.request's shape).
-- A recipe run chooses one when it starts (luagent.run, --record / --replay).
--
--   recording.recorder(path, inner) -> transport | nil, err   inner's exchanges, also written to path
--   recording.replayer(path) -> transport | nil, err          answers from path, without network;
--       a request the recording does not have raises a replay_mismatch error with a diff
--   recording.transport{record | replay} -> transport, replaying   what a run starts with (luagent.run);
--       raises a string (it runs while the library loads) when the file cannot be used
--   recording.recorded_provider(path) -> "openai" | "openai_responses" | "anthropic" | nil
--   recording.diff(recorded, now) -> {"path: recorded X, now Y" lines}   (luagent.diff.values)
--   recording.add_approval(transport, decision)   an approval decision (luagent.approval) as a
--       line {"approval": {...}} of the file the recorder `transport` writes; nothing otherwise
--   recording.approvals(path) -> {decision, ...}  the approval lines of a recording, in order
--
-- A recording is JSON lines: a header, then one {endpoint, body, stream,
-- response = {status, headers, body} | error = {kind, message, status}} per
-- exchange, keys redacted. Requests are compared with the timings tools
-- report ("took 1.23 s") blanked, as they differ from run to run.
local json = require "luagent.json"
local errors = require "luagent.errors"
local secrets = require "luagent.secrets"
local diff = require "luagent.diff"

local recording = {}

local function url_endpoint(url)
  return (url:match("(/[%w_.-]+)$") or url)
end

local KEPT_HEADERS = {["content-type"] = true, ["retry-after"] = true, ["retry-after-ms"] = true}

local function entry_of(request, res, err, chunks)
  local entry = {endpoint = url_endpoint(request.url), body = json.decode(request.body or "") or request.body,
                 stream = request.on_chunk ~= nil}
  if res then
    local headers = {}
    for name, value in pairs(res.headers or {}) do if KEPT_HEADERS[name] then headers[name] = value end end
    entry.response = {status = res.status, headers = headers, body = request.on_chunk and table.concat(chunks) or res.body}
  else
    entry.error = {kind = err.kind, message = err.message, status = err.status}
  end
  return secrets.redact_value(entry)
end

local files = setmetatable({}, {__mode = "k"}) -- recorder transport -> its file

function recording.recorder(path, inner)
  local file, why = io.open(path, "w")
  if not file then return errors.fail("io", "--record: cannot create " .. why, {path = path}) end
  file:write(json.encode({luagent_recording = 1, version = require("luagent.host").version}), "\n")
  file:flush()
  local transport = function(request)
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
    file:write(json.encode(entry_of(request, res, err, chunks)), "\n")
    file:flush()
    return res, err
  end
  files[transport] = file
  return transport
end

function recording.add_approval(transport, decision)
  local file = files[transport]
  if not file then return end
  file:write(json.encode({approval = secrets.redact_value(decision)}), "\n")
  file:flush()
end

function recording.approvals(path)
  local list = {}
  local file = io.open(path, "r")
  if not file then return list end
  for line in file:lines() do
    local entry = line:find('"approval"', 1, true) and json.decode(line)
    if type(entry) == "table" and type(entry.approval) == "table" then list[#list + 1] = entry.approval end
  end
  file:close()
  return list
end

-- The places where two requests differ, as "path: recorded X, now Y" lines.
function recording.diff(recorded, now)
  local out = {}
  for _, d in ipairs(diff.values(recorded, now, {root = "request"})) do
    out[#out + 1] = ("  %s\n    recorded: %s\n    now:      %s"):format(d.path, diff.short(d.a), diff.short(d.b))
  end
  return out
end

-- The exchanges of a recording file, or nil, err.
local function entries_of(path)
  local file, why = io.open(path, "r")
  if not file then return errors.fail("not_found", "--replay: cannot open " .. why, {path = path}) end
  local entries = {}
  for line in file:lines() do
    local entry = json.decode(line)
    if type(entry) == "table" and entry.endpoint then entries[#entries + 1] = entry end
  end
  file:close()
  return entries
end

local ENDPOINT_PROVIDERS = {["/completions"] = "openai", ["/responses"] = "openai_responses",
                            ["/messages"] = "anthropic"}

-- The provider a recording was made with, from its first exchange.
function recording.recorded_provider(path)
  local entries = entries_of(path)
  local first = entries and entries[1]
  return first and ENDPOINT_PROVIDERS[first.endpoint] or nil
end

-- What a replayed request is compared by.
function recording.replay_key(body)
  return (json.encode(body):gsub("took [%d%.]+ s", "took ? s"))
end

local function answer(request, entry)
  if entry.error then return nil, errors.from(entry.error) end
  local res = entry.response
  if request.on_chunk then
    for i = 1, #res.body, 65536 do
      if request.on_chunk(res.body:sub(i, i + 65535)) == false then break end
    end
    return {status = res.status, headers = res.headers or {}, body = ""}
  end
  return {status = res.status, headers = res.headers or {}, body = res.body}
end

local function mismatch(path, first_unused, body)
  local message
  if first_unused then
    message = ("this model request differs from the recording %s in:\n%s\n"
      .. "(the recipe, its settings or its prompts changed since the recording; record again with --record)")
      :format(path, table.concat(recording.diff(first_unused.body, body), "\n"))
  else
    message = ("the recording %s has no more model exchanges, but the run made another request"):format(path)
  end
  return errors.new("replay_mismatch", message, {path = path})
end

function recording.replayer(path)
  local entries, err = entries_of(path)
  if not entries then return nil, err end
  local used = {}
  return function(request)
    local body = json.decode(request.body or "") or request.body
    local wanted = recording.replay_key(body)
    local first_unused
    for i, entry in ipairs(entries) do
      if not used[i] then
        first_unused = first_unused or entry
        if entry.endpoint == url_endpoint(request.url) and recording.replay_key(entry.body) == wanted then
          used[i] = true
          return answer(request, entry)
        end
      end
    end
    -- the run cannot go on as recorded: it stops here, with the diff
    error(mismatch(path, first_unused, body), 0)
  end
end

-- The transport a run with --record or --replay starts with, wrapping
-- `inner` when recording; and the path being replayed (nil when recording).
function recording.transport(opts, inner)
  local transport, err
  if opts.replay then transport, err = recording.replayer(opts.replay)
  else transport, err = recording.recorder(opts.record, inner) end
  if not transport then error(err.message, 0) end
  return transport, opts.replay
end

return recording

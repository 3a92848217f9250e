-- luagent.model.recording: recording a run's model exchanges and replaying
-- them, as model transports (functions with luagent.http.request's shape).
-- A recipe run chooses one when it starts (luagent.run, --record / --replay).
--
--   recording.recorder(path, inner [, recipe]) -> transport | nil, err   inner's exchanges, also
--       written to path (the header names the recipe); a line that cannot be written is said on
--       stderr at once and kept in recorder_failure(transport) for the run's end
--   recording.replayer(rec | path [, recipe]) -> transport | nil, err   answers from a recording
--       (loaded, or loaded from path), without network; a request the recording does not have
--       raises a replay_mismatch error with a diff
--   recording.load(path [, recipe]) -> rec | nil, err   the file, read and checked whole, once:
--       rec = {path, header, entries, approvals (its approval decisions, in order), provider (the
--       one it was made with: "openai" | "openai_responses" | "anthropic" | nil)}
--   recording.transport{record | replay, recipe} -> transport, replaying   what a run starts with
--       (luagent.run); replaying: the loaded recording (nil when recording), which the run keeps
--       (run.replaying), so the provider and the approval decisions come from the one load;
--       raises a string (it runs while the library loads) when the file cannot be used
--   recording.diff(recorded, now) -> {"path: recorded X, now Y" lines}   (luagent.diff.values)
--   recording.add_approval(transport, decision)   an approval decision (luagent.approval) as a
--       line {"approval": {...}} of the file the recorder `transport` writes; nothing otherwise
--
-- A recording is JSON lines: a header {luagent_recording = 1, version, recipe}, then one
-- {endpoint, body, stream, response = {status, headers, body} | error = {kind, message,
-- status}} per exchange, keys redacted. Requests are compared with the timings tools
-- report ("took 1.23 s") blanked, as they differ from run to run.
--
-- A replay checks the whole file before the run starts: a file that is not a
-- recording (no header), one damaged at line N (not JSON, not an exchange, a
-- cut last line) and one recorded for another recipe (the header's recipe
-- name) are refused, each with its own message (kind "config"; `luagent run`
-- exits 2). "no more exchanges" is said only of a whole recording.
local json = require "luagent.json"
local errors = require "luagent.errors"
local secrets = require "luagent.secrets"
local diff = require "luagent.diff"
local handle = require "luagent.handle"

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

-- The name a recording knows a recipe by: its file name without ".lua".
local function recipe_name(recipe)
  return recipe and (recipe:match("([^/]+)%.lua$") or recipe:match("([^/]+)$")) or nil
end

local failures = setmetatable({}, {__mode = "k"}) -- recorder transport -> its first write failure
local writers = setmetatable({}, {__mode = "k"}) -- recorder transport -> its checked line writer

-- The first line a recorder could not write, as an error value, or nil.
function recording.recorder_failure(transport)
  return failures[transport]
end

function recording.recorder(path, inner, recipe)
  local file, why = io.open(path, "w")
  if not file then return errors.fail("io", "--record: cannot create " .. why, {path = path}) end
  local building <close> = handle.guard(file, io.close) -- closed unless the recorder is made
  local lines = 0
  local transport
  -- every line written and flushed whole, or said at once (the run goes on, and ends with status 1)
  local function put(line)
    if failures[transport] then return end
    local ok, werr = file:write(line, "\n")
    if ok then ok, werr = file:flush() end
    if ok then
      lines = lines + 1
      return
    end
    local message = ("--record: cannot write %s: %s; the recording holds its first %d line%s, the rest is lost")
      :format(path, tostring(werr), lines, lines == 1 and "" or "s")
    failures[transport] = errors.new("io", message, {path = path})
    io.stderr:write("luagent: ", message, "\n")
  end
  transport = function(request)
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
    put(json.encode(entry_of(request, res, err, chunks)))
    return res, err
  end
  put(json.encode({luagent_recording = 1, version = require("luagent.host").version, recipe = recipe_name(recipe)}))
  if failures[transport] then return nil, failures[transport] end
  writers[transport] = put
  return building:built(transport)
end

-- An approval decision (luagent.approval) as a line of the recording, so
-- --replay answers with it instead of asking.
function recording.add_approval(transport, decision)
  local put = writers[transport]
  if put then put(json.encode({approval = secrets.redact_value(decision)})) end
end

-- The places where two requests differ, as "path: recorded X, now Y" lines.
function recording.diff(recorded, now)
  local out = {}
  for _, d in ipairs(diff.values(recorded, now, {root = "request"})) do
    out[#out + 1] = ("  %s\n    recorded: %s\n    now:      %s"):format(d.path, diff.short(d.a), diff.short(d.b))
  end
  return out
end

local function damaged(path, n, why)
  return errors.fail("config", ("--replay: %s is damaged at line %d: %s; record it again with --record")
    :format(path, n, why), {path = path, line = n})
end

local function is_exchange(entry)
  return type(entry) == "table" and type(entry.endpoint) == "string" and type(entry.body) ~= "nil"
    and (type(entry.response) == "table" or type(entry.error) == "table")
end

local ENDPOINT_PROVIDERS = {["/completions"] = "openai", ["/responses"] = "openai_responses",
                            ["/messages"] = "anthropic"}

-- recording.load(path [, recipe]) -> rec | nil, err   the whole file checked: a header first,
-- then only whole exchanges and approval decisions; with `recipe`, recorded for it.
function recording.load(path, recipe)
  local file, why = io.open(path, "rb")
  if not file then return errors.fail("not_found", "--replay: cannot open " .. why, {path = path}) end
  local text, rerr = file:read("a")
  file:close()
  if not text then return errors.fail("io", ("--replay: cannot read %s: %s"):format(path, rerr), {path = path}) end
  local header, entries, approvals, n = nil, {}, {}, 0
  for line, newline in text:gmatch("([^\n]*)(\n?)") do
    if line == "" and newline == "" then break end -- the end of the text
    n = n + 1
    local entry = json.decode(line)
    if n == 1 then
      if type(entry) ~= "table" or entry.luagent_recording == nil then
        return errors.fail("config", ("--replay: %s is not a luagent recording (its first line is not a recording "
          .. "header); make one with luagent run RECIPE --record FILE"):format(path), {path = path})
      end
      header = entry
    elseif entry == nil and newline == "" then
      return damaged(path, n, "its last line is cut (the recording run did not finish writing it)")
    elseif entry == nil then
      return damaged(path, n, "the line is not JSON")
    elseif is_exchange(entry) then
      entries[#entries + 1] = entry
    elseif type(entry) == "table" and type(entry.approval) == "table" then
      approvals[#approvals + 1] = entry.approval
    else
      return damaged(path, n, "the line is not a model exchange {endpoint, body, response | error} or an approval")
    end
  end
  if not header then
    return errors.fail("config", ("--replay: %s is not a luagent recording (it is empty); make one with "
      .. "luagent run RECIPE --record FILE"):format(path), {path = path})
  end
  local wanted = recipe_name(recipe)
  if wanted and type(header.recipe) == "string" and header.recipe ~= wanted then
    return errors.fail("config", ("--replay: %s was recorded for the recipe %s, not %s: replay it with %s.lua, "
      .. "or record %s.lua with --record"):format(path, header.recipe, wanted, header.recipe, wanted),
      {path = path, recorded_recipe = header.recipe, recipe = wanted})
  end
  -- the provider it was made with, from its first exchange
  local provider = entries[1] and ENDPOINT_PROVIDERS[entries[1].endpoint] or nil
  return {path = path, header = header, entries = entries, approvals = approvals, provider = provider}
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

local function mismatch(path, first_unused, body, count)
  local message
  if first_unused then
    message = ("this model request differs from the recording %s in:\n%s\n"
      .. "(the recipe, its settings or its prompts changed since the recording; record again with --record)")
      :format(path, table.concat(recording.diff(first_unused.body, body), "\n"))
  else
    message = ("the recording %s has no more model exchanges (all %d were used), but the run made another request")
      :format(path, count)
  end
  return errors.new("replay_mismatch", message, {path = path})
end

function recording.replayer(rec, recipe)
  if type(rec) == "string" then
    local err
    rec, err = recording.load(rec, recipe)
    if not rec then return nil, err end
  end
  local entries, path, used = rec.entries, rec.path, {}
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
    error(mismatch(path, first_unused, body, #entries), 0)
  end
end

-- The transport a run with --record or --replay starts with, wrapping
-- `inner` when recording; and the path being replayed (nil when recording).
function recording.transport(opts, inner)
  local transport, rec, err
  if opts.replay then
    rec, err = recording.load(opts.replay, opts.recipe)
    transport = rec and recording.replayer(rec)
  else
    transport, err = recording.recorder(opts.record, inner, opts.recipe)
  end
  if not transport then error(err.message, 0) end
  return transport, rec
end

return recording

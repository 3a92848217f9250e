-- luagent.cache: the model-call cache. A run with the cache on answers a
-- model request it has seen before from disk instead of the provider; only
-- complete, successful answers are stored.
--
-- The functions and the handle's methods: lua/meta/cache.lua. A key is the
-- sha256 of the canonical JSON of {v, provider, base_url, body}: the body
-- without stream/stream_options, with tool timings ("took 1.2 s") blanked as
-- replay does (luagent.model.recording), never a key or a header. A missing,
-- torn or corrupt entry is a miss; a failed write is one warning on stderr
-- per handle, never a failure. At the first miss after hits, the run says
-- where and why it went live. A run that called no model (the scripted
-- driver's replies never reach the cache) says at its end, once, that
-- nothing was stored.
--
-- Files: DIR/<2 hex>/<key>.json (one entry each), DIR/runs/<recipe>.json (the
-- ordered keys of the recipe's last run, for "live from turn N: why").
-- Several runs or processes may share a folder: every write is a whole file
-- renamed into place, so a reader sees an old entry, a new one, or none.
local json = require "luagent.json"
local fs = require "luagent.fs"
local sys = require "luagent.sys"
local errors = require "luagent.errors"
local events = require "luagent.events"
local context = require "luagent.context"
local secrets = require "luagent.secrets"
local recording = require "luagent.model.recording"
local why = require "luagent.cache.why"

local cache = {}

local VERSION = 1
local MODES = {on = true, refresh = true}

local Cache = {}
Cache.__index = Cache

function Cache:__tostring()
  return ("model-call cache %s (%s)"):format(self.dir, self.mode)
end

local function recipe_name(recipe)
  return ((recipe or "repl"):match("([^/]+)%.lua$") or "run"):gsub("[^%w_-]", "_")
end

-- The keys of the recipe's last run, in call order ({} when none or unreadable).
local function previous_keys(path)
  local text = fs.read(path)
  local doc = text and json.decode(text)
  if type(doc) ~= "table" or type(doc.keys) ~= "table" then return {} end
  local keys = {}
  for i, key in ipairs(doc.keys) do keys[i] = type(key) == "string" and key:match("^%x+$") and key or false end
  return keys
end

function cache.open(opts)
  if type(opts) ~= "table" or type(opts.dir) ~= "string" or opts.dir == "" then
    error("cache.open{dir, mode}: 'dir' (a folder) is required", 2)
  end
  local mode = opts.mode or "on"
  if not MODES[mode] then error(("cache.open: mode must be \"on\" or \"refresh\", got %s"):format(tostring(mode)), 2) end
  local dir = opts.dir:gsub("(.)/+$", "%1")
  local st = fs.stat(dir)
  if st and st.type ~= "directory" then
    return errors.fail("config", ("the model-call cache folder %s is not a folder: set cache.dir or LUAGENT_CACHE "
      .. "to a folder"):format(dir), {path = dir})
  end
  local order = dir .. "/runs/" .. recipe_name(opts.recipe) .. ".json"
  return setmetatable({
    dir = dir, mode = mode, salt = opts.salt, order_path = order, previous = previous_keys(order), keys = json.array{},
    stats = {calls = 0, hits = 0, live = 0, misses = 0, corrupt = 0, saved_cost = 0, saved_unknown = false},
  }, Cache)
end

-- ---- keys and entries ----

-- A salt (an eval's epoch after the first) keeps repeats of one request
-- apart; without one, keys are those of every other run.
function Cache.key(self, request)
  local body = {}
  for k, v in pairs(request.body) do
    if k ~= "stream" and k ~= "stream_options" then body[k] = v end
  end
  local normalized = json.decode(recording.replay_key(body))
  local canonical = json.encode({v = VERSION, provider = request.provider, base_url = request.base_url,
                                 body = normalized, salt = self.salt})
  return sys.sha256(canonical), normalized
end

local function entry_path(self, key)
  return ("%s/%s/%s.json"):format(self.dir, key:sub(1, 2), key)
end

local function valid_calls(calls)
  if type(calls) ~= "table" then return false end
  for _, c in ipairs(calls) do
    if type(c) ~= "table" or type(c.name) ~= "string" or type(c.arguments_json) ~= "string"
      or (c.id ~= nil and type(c.id) ~= "string") then
      return false
    end
  end
  return true
end

-- Is this decoded file a whole entry for `key`?
local function valid(entry, key)
  if type(entry) ~= "table" or entry.v ~= VERSION or entry.key ~= key then return false end
  local r = entry.result
  return type(r) == "table" and type(r.usage) == "table" and type(r.finish_reason) == "string"
    and (r.text == nil or type(r.text) == "string") and valid_calls(r.tool_calls)
end

function Cache:get(key)
  local text = fs.read(entry_path(self, key))
  if not text then return nil end
  local entry = json.decode(text)
  if not valid(entry, key) then
    self.stats.corrupt = self.stats.corrupt + 1
    return nil
  end
  return entry
end

-- One warning per handle: the run goes on without storing.
local function warn(self, err)
  if self.warned then return end
  self.warned = true
  io.stderr:write(("luagent: warning: the model-call cache cannot write in %s (%s); this run goes on without "
    .. "storing answers (free some space, or point cache.dir / LUAGENT_CACHE elsewhere)\n")
    :format(self.dir, err and err.message or "?"))
end

-- Writes a whole file atomically in a folder made on demand.
local function write(self, path, text)
  local folder = path:match("^(.*)/[^/]*$")
  local ok, err = fs.mkdir(folder)
  if ok then ok, err = fs.write(path, text) end
  if not ok then warn(self, err) end
  return ok
end

function Cache:put(key, entry)
  local ok, text = pcall(json.encode, secrets.redact_value(entry))
  if not ok then return nil end -- a value JSON cannot hold: nothing to store
  return write(self, entry_path(self, key), text)
end

-- ---- the model call path ----

-- This run's keys in call order (false for a call that failed), for the
-- next run's "live from turn N: why".
local function save_order(self)
  write(self, self.order_path, json.encode({v = VERSION, keys = json.array(self.keys)}))
end

-- A hit extends the run of consecutive agent turns served from the cache.
local function note_hit(self, turn)
  local seg = self.segment
  if turn and seg and seg.last == turn - 1 and turn > 1 then
    seg.last, seg.count = turn, seg.count + 1
  else
    self.segment = turn and {first = turn, last = turn, count = 1} or nil
  end
end

-- The first miss after hits: one cache_live event saying where and why.
local function went_live(self, look, req)
  self.reported = true
  local hits, seg, turn = self.stats.hits, self.segment, req.turn
  local cached
  if turn and seg and seg.count == hits and seg.last == turn - 1 then
    cached = seg.first == seg.last and ("turn %d"):format(seg.first) or ("turns %d-%d"):format(seg.first, seg.last)
  else
    cached = ("%d model call%s"):format(hits, hits == 1 and "" or "s")
  end
  local where = turn and ("turn %d"):format(turn) or ("model call %d"):format(look.position)
  if turn and req.agent and cached:match("model call") then where = where .. " of " .. tostring(req.agent) end
  local before = self.previous[look.position]
  local old = before and self:get(before)
  events.emit({type = "cache_live", cached = cached, live_from = where, turn = turn, agent = req.agent,
               reason = old and why.changed(old.request, look.request) or "the request changed"})
end

function Cache:lookup(m, req, body)
  local key, normalized = self:key({provider = m.provider, base_url = m.base_url, body = body})
  local position = #self.keys + 1
  self.keys[position] = key
  local look = {key = key, request = normalized, position = position}
  local s = self.stats
  s.calls = s.calls + 1
  if self.mode == "on" then look.entry = self:get(key) end
  if look.entry then
    s.hits = s.hits + 1
    if look.entry.cost then s.saved_cost = s.saved_cost + look.entry.cost else s.saved_unknown = true end
    note_hit(self, req.turn)
    return look
  end
  s.live = s.live + 1
  if self.mode == "on" then
    s.misses = s.misses + 1
    if s.hits > 0 and not self.reported then went_live(self, look, req) end
  end
  self.segment = nil
  return look
end

function Cache:stored(look, result)
  local calls = {}
  for i, c in ipairs(result.tool_calls or {}) do
    calls[i] = {id = c.id, name = c.name, arguments_json = c.arguments_json or json.encode(c.arguments or {})}
  end
  self:put(look.key, {
    v = VERSION, key = look.key, created = os.time(), provider = result.provider, model = result.model,
    request = look.request, cost = result.cost, duration = result.duration,
    result = {text = result.text, tool_calls = json.array(calls), finish_reason = result.finish_reason,
              usage = result.usage, model = result.model, provider_items = result.provider_items,
              commentary = result.commentary, reasoning_summary = result.reasoning_summary},
  })
end

-- A failed live call leaves no entry: its place in the order stays, empty.
function Cache:failed(look)
  self.keys[look.position] = false
end

-- A run that called no model stores nothing: said once, on the run's
-- stdout (its stdout.txt under luagent eval), so that the cache switched on
-- under the scripted driver (its replies never reach the cache) is not
-- silently empty.
local function say_nothing_stored(self)
  local run = self.run
  if not run or self.said_nothing then return end
  self.said_nothing = true
  local replies = type(run.stats) == "table" and run.stats.model_calls or 0
  if replies > 0 then
    run:print(("The model-call cache stored nothing: the scripted driver made this run's %d repl%s without calling "
      .. "a model (only a model's answers are cached)."):format(replies, replies == 1 and "y" or "ies"))
  else
    run:print("The model-call cache stored nothing: this run called no model.")
  end
end

function Cache:finish()
  local s = self.stats
  if s.calls == 0 then
    say_nothing_stored(self)
    return nil
  end
  save_order(self)
  return {type = "cache_summary", calls = s.calls, hits = s.hits, live = s.live, saved_cost = s.saved_cost,
          saved_unknown = s.saved_unknown or nil, mode = self.mode, dir = self.dir}
end

-- ---- switching it on ----

function cache.dir_for(settings, recipe_dir)
  local set = type(settings) == "table" and type(settings.cache) == "table" and settings.cache.dir
  if type(set) == "string" and set ~= "" then return set end
  local env = os.getenv("LUAGENT_CACHE")
  if env and env ~= "" then return env end
  return recipe_dir and recipe_dir .. "/.luagent/cache" or ".luagent/cache"
end

-- Opens the run's cache (run.cache) in `mode`; raises what cannot be used.
function cache.for_run(run, mode, dir)
  local h, err = cache.open{dir = dir or cache.dir_for(run.settings, run.recipe_dir), mode = mode, recipe = run.recipe,
                            salt = run.cache_salt}
  if not h then error(err, 0) end
  h.run = run
  run.cache = h
  return h
end

local YAML_MODES = {[true] = "on", on = "on", refresh = "refresh", [false] = false, off = false}

-- `cache:` at the top of a recipe's YAML (luagent.config): true | "refresh" |
-- false, or {mode = true | refresh | false, dir = ...} (dir relative to the
-- YAML's folder; a table without mode switches nothing on). It switches the
-- cache on for the calls after it, unless the command line said --cache,
-- --cache=refresh or --no-cache.
function cache.from_config(value, file)
  local run = context.current()
  if run.cache_option ~= nil or run.cache then return end
  local mode, dir = value, nil
  if type(value) == "table" then
    mode = value.mode
    if mode == nil then return end
    if type(value.dir) == "string" then
      dir = value.dir
      if not dir:match("^/") then dir = (file:match("^(.*)/[^/]*$") or ".") .. "/" .. dir end
    end
  end
  if YAML_MODES[mode] == nil then
    error(errors.new("config", ("%s: cache: must be true, false or refresh, got %s"):format(file, tostring(mode)),
                     {path = file}), 0)
  end
  if YAML_MODES[mode] then cache.for_run(run, YAML_MODES[mode], dir) end
end

-- ---- stats and clear (luagent cache stats|clear) ----

local ENTRY = "^(%x%x)/(%x+)%.json$"

-- Our files in dir: {path, kind = "entry" | "order" | "temp", size}.
local function files_of(dir)
  local list, err = fs.walk(dir)
  if not list then
    if err.kind == "not_found" then return {} end
    return nil, err
  end
  local out = {}
  for _, e in ipairs(list) do
    if e.type == "file" then
      local kind
      if e.path:match(ENTRY) then kind = "entry"
      elseif e.path:match("^runs/[%w_-]+%.json$") then kind = "order"
      elseif e.path:match("^%x%x/%x+%.json%.tmp%-%w+$") or e.path:match("^runs/[%w_-]+%.json%.tmp%-%w+$") then
        kind = "temp"
      end
      if kind then out[#out + 1] = {path = e.path, kind = kind, size = e.size} end
    end
  end
  return out
end

function cache.stats(dir)
  local files, err = files_of(dir)
  if not files then return nil, err end
  local r = {dir = dir, entries = 0, bytes = 0, by_model = {}, unreadable = 0}
  for _, f in ipairs(files) do
    if f.kind == "entry" then
      local text = fs.read(dir .. "/" .. f.path)
      local entry = text and json.decode(text)
      if type(entry) == "table" and entry.v == VERSION then
        r.entries, r.bytes = r.entries + 1, r.bytes + f.size
        local created = math.type(entry.created) and entry.created or nil
        if created then
          r.oldest = math.min(r.oldest or created, created)
          r.newest = math.max(r.newest or created, created)
        end
        local name = tostring(entry.model or "?")
        local by = r.by_model[name] or {entries = 0, bytes = 0}
        by.entries, by.bytes = by.entries + 1, by.bytes + f.size
        r.by_model[name] = by
      else
        r.unreadable = r.unreadable + 1
      end
    end
  end
  return r
end

local function remove_empty(dir)
  local names = fs.list(dir)
  if names and #names == 0 then fs.remove(dir) end
end

function cache.clear(dir, opts)
  local older_than = opts and opts.older_than
  local files, err = files_of(dir)
  if not files then return nil, err end
  local cutoff = older_than and sys.time() - older_than
  local r = {removed = 0, bytes = 0, kept = 0}
  local folders = {}
  for _, f in ipairs(files) do
    local path = dir .. "/" .. f.path
    local st = fs.stat(path)
    if st and (not cutoff or st.mtime < cutoff) then
      local ok, rerr = fs.remove(path)
      if not ok then return nil, rerr end
      if f.kind == "entry" then r.removed, r.bytes = r.removed + 1, r.bytes + f.size end
      folders[path:match("^(.*)/[^/]*$")] = true
    elseif f.kind == "entry" then
      r.kept = r.kept + 1
    end
  end
  for folder in pairs(folders) do remove_empty(folder) end
  return r
end

return cache

-- luagent.eval.width: how many runs of an eval go at once with
-- `concurrency: auto` (or --concurrency auto): as many as the engines and the
-- host allow, fewer while the engine is slow, more again when it recovers.
--
--   width.ceiling{set, cores, runs} -> max, why
--       the most runs at once: the capacities of the engines (URL#N of
--       LUAGENT_ENGINES; set: luagent.sandbox.engine_set's, default the
--       configured one) less the sessions warm pools on them keep, 4 per core of
--       the host (cores: default the ones this process may use), the runs to make
--   w = width.new{max, start, ceiling = fn() -> max}   start: min(2, max)
--   w:observe(ev)      an event of a run: sandbox_open (open_s: how long the open
--                      took, queued_s: how long it waited for room on an engine)
--                      or sandbox_exec (duration)
--   w:finished()       a run ended
--   w:allowed() -> n   runs that may go at once now (the width, never above the ceiling)
--   w.width; w.history = {{width, why}, ...}; w.on_change = fn(old, new, why)
--
-- Measured, not guessed: the figures of the first runs (the mean of the first
-- BASE opens; each command's first run) are the engine's speed when it is not
-- loaded; a moving average (EWMA) of the later ones, as a ratio to those, is
-- compared with it. An open that waited for room, or an average above SLOW
-- times the first figures (and FLOOR seconds above them: noise in small
-- figures is not a slow engine),
-- halves the width (at least 1); a run that ends while neither holds widens it
-- by one (up to the ceiling). After a change, the next change waits for the
-- runs at the new width to report (as many opens as the width): on 2 cores and
-- CPU-bound runs, each step up shows in the commands' figures before the next.
local width = {}

local BASE = 3          -- samples that make the first figures
local ALPHA = 0.3       -- weight of a new sample in the moving average
local SLOW = 1.5        -- this many times the first figures is slow...
local FLOOR = 0.2       -- ...when also this many seconds above them
local QUEUED = 0.05     -- an open that waited longer than this for room queued
local PER_CORE = 4      -- runs per core at most (a run mostly waits on its model)

local Width = {}
Width.__index = Width

-- The cores this process may run on (Cpus_allowed_list), else the online ones, else 1.
function width.cores()
  local fs = require "luagent.fs"
  local status = fs.read("/proc/self/status") or ""
  local list = status:match("Cpus_allowed_list:%s*([%d,%-]+)") or (fs.read("/sys/devices/system/cpu/online") or "")
  local n = 0
  for a, b in list:gmatch("(%d+)%-?(%d*)") do n = n + (b ~= "" and tonumber(b) - tonumber(a) + 1 or 1) end
  return math.max(1, n)
end

-- Room on the engines of `set` for runs: their capacities less what pools keep; nil: no limit.
local function engine_room(set)
  local total = 0
  for _, m in ipairs(set.members) do
    if not m.capacity then return nil end
    total = total + m.capacity
  end
  local ok, pools = pcall(require, "luagent.sandbox.pool")
  for _, p in ipairs(ok and pools.list() or {}) do
    if p.set and p.set.key == set.key and not p.closed then total = total - (p.size or 0) end
  end
  return math.max(1, total)
end

function width.ceiling(opts)
  opts = opts or {}
  local set = opts.set
  if set == nil then set = require("luagent.sandbox.engine_set").configured() end
  local cores = opts.cores or width.cores()
  local max, why = PER_CORE * cores, ("%d cores x %d"):format(cores, PER_CORE)
  local room = set and engine_room(set)
  if room and room < max then max, why = room, ("the engines' capacity, %d"):format(room) end
  if opts.runs and opts.runs < max then max, why = math.max(1, opts.runs), ("%d runs"):format(opts.runs) end
  return max, why
end

function width.new(o)
  local max = math.max(1, o.max or 1)
  local w = setmetatable({max = max, ceiling = o.ceiling, width = math.min(max, o.start or 2), history = {},
                          stats = {open = {n = 0, keys = {}, count = 0}, exec = {n = 0, keys = {}, count = 0}},
                          opens_since = 0, queued = false, on_change = o.on_change}, Width)
  w.history[1] = {width = w.width, why = "start"}
  return w
end

function Width:limit()
  local c = self.ceiling and self.ceiling() or self.max
  return math.max(1, math.min(self.max, c))
end

function Width:allowed()
  return math.max(1, math.min(self.width, self:limit()))
end

function Width:set(n, why)
  local old = self.width
  if n == old then return end
  self.width, self.opens_since, self.queued = n, 0, false
  self.history[#self.history + 1] = {width = n, why = why}
  if self.on_change then self.on_change(old, n, why) end
end

-- Feeds one figure: `seconds` that `key` took ("open", or a command's text),
-- of kind "open" | "exec". The first figures of a key are its baseline (the
-- mean of the first BASE opens; a command's first run); a later one goes into
-- the kind's moving averages as a ratio to it and as the seconds above it.
local MAX_KEYS = 500

function Width:sample(kind, key, seconds)
  local s = self.stats[kind]
  local b = s.keys[key]
  local need = kind == "open" and BASE or 1
  if not b then
    if s.count >= MAX_KEYS then return end
    b = {n = 0, sum = 0}
    s.keys[key], s.count = b, s.count + 1
  end
  if b.n < need then
    b.n, b.sum = b.n + 1, b.sum + seconds
    b.base = b.sum / b.n
    return
  end
  if b.base < 0.01 then return end -- too small to tell load from noise
  local ratio, excess = seconds / b.base, seconds - b.base
  s.n = s.n + 1
  s.ratio = s.ratio and ALPHA * ratio + (1 - ALPHA) * s.ratio or ratio
  s.excess = s.excess and ALPHA * excess + (1 - ALPHA) * s.excess or excess
  s.base, s.last = b.base, seconds
end

-- "opens take ..." when kind's moving average is slow against the first figures.
function Width:slow(kind)
  local s = self.stats[kind]
  if not s.ratio then return nil end
  if s.ratio > SLOW and s.excess > FLOOR then
    return ("%s take %.1fx as long as in the first runs (%.2f s more on average)"):format(
      kind == "open" and "opens" or "commands", s.ratio, s.excess)
  end
end

local function settled(self) return self.opens_since >= self.width end

function Width:shrink(why)
  if not settled(self) then return end
  self:set(math.max(1, (self.width + 1) // 2), why)
end

function Width:observe(ev)
  if ev.type == "sandbox_open" then
    self.opens_since = self.opens_since + 1
    if type(ev.queued_s) == "number" and ev.queued_s > QUEUED then
      self.queued = true
      self:shrink(("an open waited %.2f s for room on an engine"):format(ev.queued_s))
      return
    end
    if type(ev.open_s) == "number" then self:sample("open", "open", ev.open_s) end
  elseif ev.type == "sandbox_exec" and type(ev.duration) == "number" and ev.command then
    self:sample("exec", ev.kind .. ":" .. tostring(ev.command), ev.duration)
  else
    return
  end
  local why = self:slow("open") or self:slow("exec")
  if why then self:shrink(why) end
end

function Width:finished()
  if self.queued or self:slow("open") or self:slow("exec") then return end
  if self.width < self:limit() and settled(self) then
    self:set(self.width + 1, "the engine keeps up")
  end
end

return width

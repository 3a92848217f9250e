-- luagent.sandbox.pool: a warm pool — sessions started ahead of time, their
-- supervisor up and nothing staged, so that sandbox.open takes one in about a
-- millisecond instead of starting one (a container start, ~100-300 ms here).
-- The facade (luagent.sandbox) makes pools and asks them at every open:
--
--   pool.key(set, spec) -> string      what two opens must share to share a pool: the
--       session spec without its per-session parts (id, the session label) and its
--       per-open parts (staged, restore), and the engines (set.key)
--   pool.new{set, spec, size, option, wait, key} -> p | nil, err
--       size sessions of spec on the engines of `set` (luagent.sandbox.engine_set), each
--       placed like any session: on the least loaded engine with room (made by that
--       engine's backend); wait = true: returns once all of them are
--       up (else they start in the background). err: the engines cannot hold them (their
--       capacities or their memory: kind "config", naming `option`), or (wait) a session
--       could not start; nothing is left running then. key: pool.key(set, spec) when the
--       caller has it already (an open computes it once)
--   pool.take(key) -> session | nil            a started, never-used session of the spec of
--       this key, never handed out twice; the pool refills in the background (a refill
--       waits for room when every engine is at its capacity)
--   pool.has(key) -> boolean                   some open pool keeps the spec of this key
--   pool.list() -> {p, ...}                    the open pools
--   pool.drain_all()                           every pool closed (the process's end)
--   p:close() -> true | nil, err               drained: its sessions that were not handed
--       out are removed (also with <close>); idempotent; waits for sessions still starting
--   p:wait() -> true | nil, err                until it is full again
--   p:stats() -> {size, ready, starting, taken, failures}
--
-- Ownership: a pool's sessions carry the labels of any session of this
-- process (luagent=1, the owner's pid, start time and host: the sweep and
-- `luagent sandbox prune` find them) plus luagent.pool=<pool id>. Docker
-- cannot relabel a container, so a session keeps that label after it is
-- handed out; it is then the box's, owned by the same process, and the pool
-- never touches it again. Idle sessions are removed when the pool is
-- drained (its run's end, an error, Ctrl-C: exit hooks) and, after a crash,
-- by the next sweep (their owner is dead).
local errors = require "luagent.errors"
local sched = require "luagent.sched"
local sys = require "luagent.sys"
local engines = require "luagent.sandbox.engine_set"
local handle = require "luagent.handle"

local pool = {}

-- Consecutive failed starts after which a pool stops filling (opens go cold
-- and show the error themselves).
local MAX_FAILURES = 3

local Pool = {}
Pool.__index = Pool

local open_pools = {} -- key -> {p, ...} in the order they were made

-- ---- the key ----

local PER_OPEN = {id = true, staged = true, restore = true, capacity_wait = true}
local PER_SESSION_LABELS = {["luagent.session"] = true, ["luagent.pool"] = true}

local function canonical(v, out)
  local t = type(v)
  if t == "table" then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    out[#out + 1] = "{"
    for _, k in ipairs(keys) do
      out[#out + 1] = ("%q="):format(tostring(k))
      canonical(v[k], out)
      out[#out + 1] = ","
    end
    out[#out + 1] = "}"
  elseif t == "number" then
    out[#out + 1] = ("%.17g"):format(v) -- 1 and 1.0 are one number
  elseif t == "string" then
    out[#out + 1] = ("%q"):format(v)
  else
    out[#out + 1] = tostring(v)
  end
end

function pool.key(set, spec)
  local trimmed, labels = {}, {}
  for k, v in pairs(spec) do
    if not PER_OPEN[k] then trimmed[k] = v end
  end
  for k, v in pairs(spec.labels or {}) do
    if not PER_SESSION_LABELS[k] then labels[k] = v end
  end
  trimmed.labels, trimmed.engines = labels, set.key
  local out = {}
  canonical(trimmed, out)
  return table.concat(out)
end

-- ---- capacity ----

-- What the engines can hold (luagent.sandbox.engine_set.check_pool: their
-- capacities and memory), less what the other pools on them keep (each
-- session may use its whole memory cgroup).
local function check_capacity(set, spec, size, option, self)
  local others = {}
  for _, list in pairs(open_pools) do
    for _, p in ipairs(list) do
      if p ~= self then others[#others + 1] = {set = p.set, size = p.size, memory = p.template.limits.memory} end
    end
  end
  return engines.check_pool(set, spec, size, option, others)
end

-- ---- filling ----

local function session_spec(p)
  local spec = {}
  for k, v in pairs(p.template) do spec[k] = v end
  spec.id, spec.staged, spec.restore = sys.random_hex(6), {}, nil
  spec.labels = {}
  for k, v in pairs(p.template.labels) do spec.labels[k] = v end
  spec.labels["luagent.session"], spec.labels["luagent.pool"] = spec.id, p.id
  return spec
end

-- A started, warm session | nil, err; a session that fails on the way, or
-- whose start is cancelled (Ctrl-C), is removed (luagent.handle's guard).
local function start_one(p)
  local session, err = engines.create(p.set, session_spec(p),
                                      {wait = math.huge, stop = function() return p.closed or p.stopped end})
  if not session then return nil, err end
  local building <close> = handle.guard(session, session.remove)
  local up
  up, err = session:start()
  if up then up, err = session:warm() end
  if not up then return nil, err end
  return building:built()
end

-- Starts one session and keeps it ready; what it made is removed when it
-- fails, is cancelled (Ctrl-C) or the pool closed meanwhile.
local function fill_one(p)
  local ok, session, err = pcall(start_one, p)
  if not ok then session, err = nil, errors.from(session) end
  p.starting = p.starting - 1
  if sched.cancelled() then p.stopped = true end -- only the process stopping cancels a start (Ctrl-C)
  if session and p.closed then
    session:remove()
  elseif session then
    p.ready[#p.ready + 1] = session
    p.failures = 0
  elseif not (p.closed or p.stopped) then
    p.failures, p.error = p.failures + 1, err
    if p.failures == MAX_FAILURES and not p.wait_fill then
      io.stderr:write(("luagent: the sandbox pool %s stopped starting sessions after %d failures (%s); "
        .. "sandbox.open starts them cold\n"):format(p.id, MAX_FAILURES, tostring(err)))
    end
  end
  return session ~= nil
end

local function track(p, fn, ...)
  local task
  task = sched.spawn_in(nil, function(...)
    local result = fn(...)
    p.tasks[task] = nil
    return result
  end, ...)
  p.tasks[task] = true
  return task
end

-- Waits for the tasks running now (starts, removals).
function Pool:_settle()
  local running = {}
  for task in pairs(self.tasks) do running[#running + 1] = task end
  for _, task in ipairs(running) do task:wait() end
end

-- Starts sessions until it is full; not once the process is stopping (its
-- starts were cancelled: one begun then could outlast the grace period).
function Pool:_refill()
  while not (self.closed or self.stopped) and self.failures < MAX_FAILURES and #self.ready + self.starting < self.size do
    self.starting = self.starting + 1
    track(self, function()
      local made = fill_one(self)
      if not made then self:_refill() end -- tried again until MAX_FAILURES in a row
      return made
    end)
  end
end

-- ---- making, taking ----

-- The pool is known (pool.has) before anything waits, so opens running at
-- the same time do not make a second one; a pool that cannot be is closed.
function pool.new(o)
  local key = o.key or pool.key(o.set, o.spec)
  local p = setmetatable({
    id = sys.random_hex(6), key = key, set = o.set, template = o.spec, size = o.size,
    ready = {}, starting = 0, taken = 0, failures = 0, handed = {}, tasks = {}, closed = false,
    wait_fill = o.wait,
  }, Pool)
  open_pools[key] = open_pools[key] or {}
  table.insert(open_pools[key], p)
  -- usable while it fills (opens at the same time take from it), and closed
  -- (drained) on every way out before it is built: a failure, Ctrl-C
  local building <close> = handle.guard(p)
  local ok, err = check_capacity(o.set, o.spec, o.size, o.option, p)
  if ok then
    p:_refill()
    if o.wait then ok, err = p:wait() end
  end
  p.wait_fill = nil
  if not ok then
    if err.kind == "config" then return nil, err end
    return nil, errors.wrap(err, "the sandbox pool could not start its sessions")
  end
  return building:built()
end

-- A ready session whose supervisor died while it waited is removed, and the
-- next one is taken.
function Pool:_take()
  while #self.ready > 0 do
    local session = table.remove(self.ready, 1)
    -- a cluster's warm pod is claimed by a label patch first (another process may take it)
    local claimed = session:alive() and (not session.claim or session:claim())
    if claimed == true then
      self.handed[session.id], self.taken = true, self.taken + 1
      self:_refill()
      return session
    elseif claimed == "taken" then
      session:forget() -- another process's now: let go of it, never remove it
    else
      track(self, function() return session:remove() end)
    end
  end
  self:_refill()
  return nil
end

function pool.take(key)
  local list = open_pools[key]
  for _, p in ipairs(list or {}) do
    local session = p:_take()
    if session then return session end
  end
  return nil
end

function pool.has(key)
  return open_pools[key] ~= nil
end

function Pool:wait()
  while true do
    if self.closed then return errors.fail("closed", ("the sandbox pool %s is closed"):format(self.id)) end
    if #self.ready >= self.size then return true end
    if next(self.tasks) == nil then
      if self.failures >= MAX_FAILURES then return nil, self.error end
      if self.stopped then return errors.fail("cancelled", "the sandbox pool stopped: the run is stopping") end
      self:_refill()
    end
    self:_settle()
  end
end

function Pool:stats()
  return {size = self.size, ready = #self.ready, starting = self.starting, taken = self.taken,
          failures = self.failures}
end

-- ---- draining ----

local STRAY_RECHECK = 0.5 -- seconds; an engine finishes a container create in well under that

-- Containers and volumes of this pool the engines have that were never
-- handed out: a start cancelled (Ctrl-C) after the engine made its container
-- but before its answer came.
function Pool:_strays()
  for _, m in ipairs(self.set.members) do
    local client = m.engine.client -- an engine never connected has none of them
    if client then m.engine.kind.pool_strays(client, self.id, self.handed) end
  end
end

function Pool:_drain()
  self:_settle() -- each start removes what it made
  local removals = {}
  for i, session in ipairs(self.ready) do
    removals[i] = sched.spawn(function() return session:remove() end)
  end
  self.ready = {}
  local failure
  for _, task in ipairs(removals) do
    local ok, err = task:wait()
    failure = failure or (not ok and err)
  end
  self:_strays()
  if self.stopped then
    -- a start cancelled by Ctrl-C had its create request cut at our end; the
    -- engine may still be making that container: look again once it is done
    pcall(sched.sleep, STRAY_RECHECK)
    self:_strays()
  end
  if failure then return nil, errors.wrap(failure, "a session of the sandbox pool could not be removed") end
  return true
end

function Pool:close()
  if not self.closed then
    self.closed = true
    local list = open_pools[self.key]
    for i = #(list or {}), 1, -1 do
      if list[i] == self then table.remove(list, i) end
    end
    if list and #list == 0 then open_pools[self.key] = nil end
    self.draining = sched.spawn(function() return self:_drain() end)
  end
  return self.draining:wait()
end

Pool.__close = Pool.close

function Pool:__tostring()
  return ("sandbox pool %s (%s, %d of %d ready%s)"):format(self.id, self.template.image, #self.ready, self.size,
    self.closed and ", closed" or "")
end

function pool.list()
  local all = {}
  for _, list in pairs(open_pools) do
    for _, p in ipairs(list) do all[#all + 1] = p end
  end
  return all
end

function pool.drain_all()
  local all = pool.list()
  local failure
  for _, p in ipairs(all) do
    local ok, err = p:close()
    failure = failure or (not ok and err)
  end
  if failure then return nil, failure end
  return true
end

return pool

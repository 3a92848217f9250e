-- luagent.sandbox.engine_set: the Docker engines sessions are made on — which
-- ones (a set), where the next session goes (placement), and which answer
-- (health). One client per engine for the whole process, connected when
-- first needed (engine.connect negotiates the API version).
--
--   engines.set(opts [, option]) -> set | nil, err    the engines of sandbox.open's or sandbox.pool's
--       options: opts.engine (a client), opts.docker_host (one address), opts.engines (a list:
--       luagent.sandbox.engine_config), else LUAGENT_ENGINES, else the default engine (DOCKER_HOST,
--       else /var/run/docker.sock). A list that is not well formed raises when it is an option
--       (naming `option`), and is nil, err (kind config) when it comes from LUAGENT_ENGINES.
--   engines.configured() -> set | nil, err            LUAGENT_ENGINES or the default (the CLI's)
--   set.key, set.members = {{engine = e, capacity = N | nil, entry}}, set.option
--   engines.client(set) -> client | nil, err          the first engine that answers
--   engines.sweep(set)                                 leftovers.sweep on every engine that answers
--   engines.create(set, backend, spec [, {wait, stop}]) -> session | nil, err
--       a session (backend.create) on the least loaded engine with room that has the image
--       (see Placement); session.engine names the engine, session.queued_s the seconds it
--       waited for room
--   engines.lost(session, err)                         a session's engine did not answer: marked down
--   engines.check_pool(set, spec, size, option, others) -> true | nil, err   can the engines hold a
--       pool of size sessions of spec beside the other pools ({set, size, memory} each)?
--   engines.status(set, image) -> {row, ...}           each engine: address, capacity, load, ok,
--       err, version, api, image (image.status), sessions (luagent sandboxes it has),
--       runtimes ({names, default}: GET /info's Runtimes and DefaultRuntime)
--   engines.runtimes_text(row) -> "runc (default), runsc"   a row's runtimes as doctor and ls print them
--
-- Placement: the load of an engine is the sessions this process has on it
-- (open boxes and pooled sessions, counted from creation to removal). A
-- session goes to the engine with the lowest load / capacity (capacity: the
-- entry's, else the largest in the set, else 1) among those that answer,
-- have room (load < capacity) and have the image; when none with room has
-- it, to the least loaded with room, and the image is copied there from an
-- engine that has it (luagent.image.copy: GET /images/NAME/get into a
-- temporary file, POST /images/load from it; streamed, never whole in
-- memory). When every engine is full, the open waits for a session to close,
-- up to opts.wait seconds (sandbox.open's capacity_wait; said once on
-- stderr), then fails with kind "capacity"; opts.stop() -> true ends the
-- wait too (a pool that closed).
--
-- Runtimes: a session runs under sandbox.open's runtime, else its engine
-- entry's (runtime = NAME), else the engine's default. Before a container
-- is made, the engine's GET /info must list it (asked once per engine, and
-- again while it is missing); else the open fails with kind config naming
-- the runtime, the engine, what it has and how to add one. A runtime whose
-- path is runsc (also the engine's default) is gVisor: spec.gvisor. The set's key
-- holds each entry's runtime, so a pool never serves another runtime.
--
-- Health: an engine that does not answer (connect, a ping every few seconds
-- while placing, a create that finds it gone, a session's call) is marked
-- down: new sessions go to the others (said once), and it is asked again
-- DOWN_RETRY seconds later. When every engine is down each is asked again
-- at once, and the open fails with their errors. Sessions already on a down
-- engine fail their calls with kind docker_unreachable naming it
-- (luagent.sandbox.recovery). A TLS or configuration error is not a down
-- engine: the open fails with it.
local errors = require "luagent.errors"
local sched = require "luagent.sched"
local sys = require "luagent.sys"
local engine_config = require "luagent.sandbox.engine_config"
local leftovers = require "luagent.sandbox.leftovers"
local recovery = require "luagent.sandbox.recovery"
local handle = require "luagent.handle"
local kinds = require "luagent.sandbox.engine_kinds"

local engines = {}

local DEFAULT_SOCKET = "unix:///var/run/docker.sock"
-- How long an engine marked down is left alone before it is asked again.
local DOWN_RETRY = 15
-- An engine that has not been heard from for this long is pinged before a
-- session is placed on it.
local HEALTH = 5
-- How long "the image is not there" is believed.
local NEGATIVE_FOR = 10
-- How often a wait for room looks again.
local POLL = 0.1

local known = {} -- key -> engine record, for the whole process
local by_client = setmetatable({}, {__mode = "k"}) -- a client given as opts.engine -> its record

local function await(task)
  return recovery.await(task)
end

local function say(line)
  io.stderr:write("luagent: ", line, "\n")
end

-- ---- the set ----

-- An engine: its kind (luagent.sandbox.engine_kinds: a Docker engine or a
-- Kubernetes cluster), how to connect (connect: its engine_config entry),
-- its client once connected, this process's sessions there (load), what is
-- known of its images, and whether it is down.
local function new_record(kind, key, address, connect, client)
  return {kind = kind, key = key, address = address, connect = connect, client = client, load = 0, images = {},
          copying = {}, checked = client and sched.now() or 0}
end

local function record(kind, key, address, connect)
  known[key] = known[key] or new_record(kind, key, address, connect)
  return known[key]
end

local function entry_record(entry)
  local tls = entry.tls
  local tls_key = tls == nil and "env" or tls == false and "plain"
    or table.concat({tls.ca_file, tls.cert_file or "", tls.key_file or ""}, "|")
  return record(kinds.of_entry(entry), entry.host .. "|" .. tls_key, entry.host, entry)
end

local function make_set(members, option)
  local keys = {}
  for i, m in ipairs(members) do
    keys[i] = m.engine.key .. "#" .. tostring(m.capacity or "") .. "@" .. tostring(m.entry.runtime or "")
  end
  return {key = table.concat(keys, ","), members = members, option = option}
end

local function one(host)
  return make_set({{engine = record(kinds.docker, (host or DEFAULT_SOCKET) .. "|env", host or DEFAULT_SOCKET,
                                    {host = host}),
                    entry = {host = host or DEFAULT_SOCKET}}}, host and "docker_host" or "DOCKER_HOST")
end

local function listed(entries, option)
  local members = {}
  for i, entry in ipairs(entries) do
    members[i] = {engine = entry_record(entry), capacity = entry.capacity, entry = entry}
  end
  return make_set(members, option)
end

local function from_env()
  local list = sys.getenv("LUAGENT_ENGINES")
  if not list or not list:match("%S") then return nil end
  local entries, err = engine_config.parse(list, "LUAGENT_ENGINES")
  if not entries then return nil, err end
  return listed(entries, "LUAGENT_ENGINES")
end

function engines.configured()
  local set, err = from_env()
  if set or err then return set, err end
  return one(sys.getenv("DOCKER_HOST"))
end

function engines.set(opts, option)
  opts = opts or {}
  option = option or "sandbox.open"
  if opts.engine then
    local address = opts.engine.endpoint.description
    by_client[opts.engine] = by_client[opts.engine]
      or new_record(kinds.of_client(opts.engine), "client:" .. address, address, nil, opts.engine)
    local e = by_client[opts.engine]
    return make_set({{engine = e, entry = {host = e.address}}}, option .. ": engine")
  end
  if opts.docker_host then return one(opts.docker_host) end
  if opts.engines ~= nil then
    local entries, err = engine_config.parse(opts.engines, option .. ": engines")
    if not entries then error(err.message, 3) end
    return listed(entries, option .. ": engines")
  end
  return engines.configured()
end

-- ---- health ----

local FATAL = {config = true, tls = true, docker = true, kubernetes = true}

local function connect_error(e, err)
  err = errors.from(err)
  if FATAL[err.kind] then
    local from = e.connect and e.connect.tls_from
    if from and err.kind == "tls" or from and err.kind == "config" then
      err = errors.new(err.kind, ("%s (TLS: %s)"):format(err.message, from), err)
    end
    return err, true
  end
  if not err.message:find(e.address, 1, true) then err = e.kind.unreachable(e.address, err) end
  return err, false
end

-- Marks e down (again: it is said once until it answers).
local function mark_down(e, err)
  e.down = {err = err, retry_at = sched.now() + DOWN_RETRY, said = e.down and e.down.said}
end

-- e's client when it answers; nil, err, fatal (a TLS or configuration
-- error: no other engine helps) when not. force: ask a down engine anyway.
local function usable(e, force)
  if e.down and not force and sched.now() < e.down.retry_at then return nil, e.down.err end
  if not e.client then
    e.connecting = e.connecting or sched.spawn(function() return e.kind.connect(e.connect) end)
    local task = e.connecting
    local client, err = await(task)
    if e.connecting == task then e.connecting = nil end
    if not client then
      local fatal
      err, fatal = connect_error(e, err)
      if not fatal then mark_down(e, err) end
      return nil, err, fatal
    end
    e.client = e.client or client
    e.address, e.checked = e.client.endpoint.description, sched.now()
  elseif e.down or sched.now() - e.checked > HEALTH then
    local lost = e.kind.lost(e.client)
    if lost then
      mark_down(e, lost)
      return nil, lost
    end
    e.checked = sched.now()
  end
  if e.down and e.down.said then say(("%s answers again"):format(e.kind.what(e.address))) end
  e.down = nil
  return e.client
end

-- Once per engine and process (leftovers.sweep does nothing after its
-- first time): an engine swept already is not asked again, so an open from
-- the warm pool makes no request here.
function engines.sweep(set)
  for _, m in ipairs(set.members) do
    local e = m.engine
    if not e.swept then
      local client = usable(e)
      if client then
        leftovers.sweep(client, e.kind)
        e.swept = true
      end
    end
  end
end

function engines.lost(session, err)
  local e = session and session.engine_record
  if e and err and recovery.unreachable(err) then mark_down(e, err) end
end

-- ---- placement ----

local function has_image(e, name)
  local knows = e.images[name]
  if knows == true then return true end
  if knows and sched.now() < knows then return false end
  local there = e.kind.has_image(e.client, name)
  e.images[name] = there or sched.now() + NEGATIVE_FOR
  return there
end

local function loads(set)
  local parts = {}
  for _, m in ipairs(set.members) do
    parts[#parts + 1] = m.engine.down and ("%s does not answer"):format(m.engine.address)
      or ("%s holds %d of %s"):format(m.engine.address, m.engine.load, m.capacity or "no limit")
  end
  return table.concat(parts, ", ")
end

-- A down engine left alone now: the others are asked first.
local function resting(e)
  return e.down ~= nil and sched.now() < e.down.retry_at
end

-- The members that answer (not in `skip`); nil, err when none does. An
-- engine newly found down is said once (with others to go to).
local function answering(set, skip)
  local up, failures, rested = {}, {}, {}
  for _, m in ipairs(set.members) do
    if resting(m.engine) and not skip[m.engine] then
      rested[#rested + 1] = m
    elseif not skip[m.engine] then
      local client, err, fatal = usable(m.engine)
      if fatal then return nil, err end
      if client then up[#up + 1] = m else failures[#failures + 1] = err end
    end
  end
  if #up == 0 then -- every engine is down: each is asked again now
    for _, m in ipairs(rested) do
      local client, err, fatal = usable(m.engine, true)
      if fatal then return nil, err end
      if client then up[#up + 1] = m else failures[#failures + 1] = err end
    end
  end
  if #up > 0 then
    for _, m in ipairs(set.members) do
      local down = m.engine.down
      if down and not down.said and #set.members > 1 then
        down.said = true
        say(("%s. New sessions go to the other engines; it is asked again every %d s")
          :format((down.err.message:gsub("[%.%s]*$", "")), DOWN_RETRY))
      end
    end
    return up
  end
  if #failures == 1 then return nil, failures[1] end
  local why = {}
  for i, err in ipairs(failures) do why[i] = err.message end
  return errors.fail(failures[1].kind, ("no engine (%s) answers: %s"):format(set.option, table.concat(why, "; ")))
end

-- Picks and reserves (load + 1) the member for a session of `name`.
local function pick(up, name)
  local weight = 1
  for _, m in ipairs(up) do weight = math.max(weight, m.capacity or 0) end
  local with = {}
  for _, m in ipairs(up) do
    with[m] = (not m.capacity or m.engine.load < m.capacity) and has_image(m.engine, name)
  end
  -- no yield from here on: what is chosen is reserved before another task looks
  local best, best_with
  for _, m in ipairs(up) do
    if not m.capacity or m.engine.load < m.capacity then
      local score = m.engine.load / (m.capacity or weight)
      local better = not best or (with[m] and not best_with)
        or (with[m] == best_with and score < best.engine.load / (best.capacity or weight))
      if better then best, best_with = m, with[m] end
    end
  end
  if best then best.engine.load = best.engine.load + 1 end
  return best
end

local function place(set, name, opts, skip)
  local wait = opts.wait or 0
  local deadline = sched.now() + wait
  local waiting, queued_at = false, nil
  while true do
    local up, err = answering(set, skip)
    if not up then return nil, err end
    local m = pick(up, name)
    if m then return m, queued_at and sched.now() - queued_at or 0 end
    queued_at = queued_at or sched.now()
    if opts.stop and opts.stop() then return errors.fail("closed", "stopped while waiting for room on an engine") end
    if sched.now() >= deadline then
      return errors.fail("capacity", ("every engine (%s) that answers is at its capacity: %s%s; close a "
        .. "session, or raise a capacity (URL#N)"):format(set.option, loads(set),
        waiting and (", after waiting %d s (sandbox.open's capacity_wait)"):format(wait) or ""), {engines = loads(set)})
    end
    if not waiting and wait < math.huge then
      waiting = true
      say(("every engine that answers is at its capacity (%s): waiting up to %d s for a session to close "
        .. "(sandbox.open's capacity_wait)"):format(loads(set), wait))
    end
    sched.sleep(POLL)
  end
end

-- The image on m's engine: there, copied from another engine that has it,
-- or (none has it) left to backend.create to say it is missing.
local function ensure_image(set, m, name)
  local e = m.engine
  if has_image(e, name) then return true end
  if not e.kind.copy_image then return true end -- a cluster's nodes pull it themselves
  local source
  for _, other in ipairs(set.members) do
    if other ~= m and other.engine.kind == e.kind and usable(other.engine) and has_image(other.engine, name) then
      source = other.engine
      break
    end
  end
  if not source then return true end
  if not e.copying[name] then
    e.copying[name] = sched.spawn(function()
      say(("copying the image %s from the Docker engine at %s to the one at %s"):format(name, source.address, e.address))
      local started = sched.now()
      local bytes, err = e.kind.copy_image(source.client, e.client, name)
      e.copying[name] = nil
      if not bytes then return nil, err end
      e.images[name] = true
      say(("copied %s (%.1f MB) in %.1f s"):format(name, bytes / 1e6, sched.now() - started))
      return true
    end)
  end
  return await(e.copying[name])
end

local function release(e)
  e.load = e.load - 1
end

-- ---- runtimes ----

local function naming(err, e)
  err = errors.from(err)
  if err.message:find(e.address, 1, true) then return err end
  return errors.wrap(err, "on " .. e.kind.what(e.address))
end

-- e's runtimes (kind.runtimes: {names = {sorted}, default = NAME, gvisor =
-- {NAME = true}}); asked again while a runtime looked for is missing (a
-- daemon.json reloaded, a RuntimeClass made).
local function runtimes(e, fresh)
  if e.runtimes and not fresh then return e.runtimes end
  local have, err = e.kind.runtimes(e.client)
  if not have then return nil, err end
  e.runtimes = have
  return have
end

local function lists(known_runtimes, name)
  for _, n in ipairs(known_runtimes.names) do
    if n == name then return true end
  end
  return false
end

-- true when e can run the runtime; else an error of kind config saying
-- what it has and how to add one, before any container is made.
local function has_runtime(e, name, from)
  local have, err = runtimes(e)
  if have and not lists(have, name) then have, err = runtimes(e, true) end
  if not have then return nil, naming(err, e) end
  if lists(have, name) then return true end
  return nil, e.kind.missing_runtime(e.address, name, have, from)
end

-- The session counts on e until it is removed.
local function attach(session, e)
  session.engine, session.engine_record = e.address, e
  local remove, released = session.remove, false
  session.remove = function(self)
    local ok, err = remove(self)
    if ok and not released then
      released = true
      release(e)
    end
    return ok, err
  end
  return session
end

-- Is the runtime (nil: the engine's default) gVisor's runsc?
local function is_gvisor(e, runtime)
  local have = runtimes(e)
  local name = runtime or (have and have.default)
  return have ~= nil and name ~= nil and have.gvisor[name] == true
end

-- spec as it is, or a copy that names the engine entry's runtime, and
-- says whether it is gVisor (spec.gvisor: the backend caps pids inside)
local function with_runtime(spec, runtime, gvisor)
  if spec.runtime == runtime and (spec.gvisor or false) == gvisor then return spec end
  local copy = {}
  for k, v in pairs(spec) do copy[k] = v end
  copy.runtime, copy.gvisor = runtime, gvisor or nil
  return copy
end

function engines.create(set, spec, opts)
  opts = opts or {}
  local skip = {}
  while true do
    local m, err = place(set, spec.image, opts, skip)
    if not m then return nil, err end
    local queued = err
    local e, session = m.engine, nil
    -- the room placed is held until a session takes it: every other way out gives it back
    local held <close> = handle.guard(e, release)
    local there
    there, err = ensure_image(set, m, spec.image)
    local runtime = spec.runtime or m.entry.runtime
    if there and runtime then
      there, err = has_runtime(e, runtime, spec.runtime and "runtime" or set.option .. ": " .. m.entry.where .. ": runtime")
    end
    if there then session, err = e.kind.backend.create(e.client, with_runtime(spec, runtime, is_gvisor(e, runtime))) end
    if session then
      session.queued_s = queued
      return held:built(attach(session, e))
    end
    if not recovery.unreachable(err) or #set.members == 1 then
      return nil, #set.members == 1 and err or naming(err, e)
    end
    mark_down(e, err)
    skip[e] = true
  end
end

function engines.client(set)
  local up, err = answering(set, {})
  if not up then return nil, err end
  return up[1].engine.client
end

-- ---- capacity of a pool ----

local function gib(bytes)
  return ("%.2f GiB"):format(bytes / 1024 ^ 3)
end

local function shares(a, b)
  for _, x in ipairs(a.members) do
    for _, y in ipairs(b.members) do
      if x.engine == y.engine then return true end
    end
  end
  return false
end

function engines.check_pool(set, spec, size, option, others)
  local up, err = answering(set, {})
  if not up then return nil, err end
  local memory, slots, limited, rows = 0, 0, true, {}
  for _, m in ipairs(up) do
    local bytes, ierr = m.engine.kind.memory(m.engine.client)
    if not bytes then return nil, naming(ierr, m.engine) end
    memory = memory + bytes
    if m.capacity then slots = slots + m.capacity else limited = false end
    rows[#rows + 1] = ("%s: capacity %s, %s"):format(m.engine.address, m.capacity or "none", gib(bytes))
  end
  local held_memory, held = 0, 0
  for _, p in ipairs(others) do
    if shares(set, p.set) then
      held_memory, held = held_memory + p.size * p.memory, held + p.size
    end
  end
  local need = size * spec.limits.memory
  local where = #up == 1 and ("%s holds"):format(up[1].engine.kind.what(up[1].engine.address))
    or "the engines hold together"
  local skipped = #up < #set.members and ("; %d of the engines did not answer"):format(#set.members - #up) or ""
  if memory > 0 and need + held_memory > memory then
    return errors.fail("config", ("%s = %d: %d sessions of %s each (memory + tmp_size + workspace_size) need %s, "
      .. "more than %s (%s%s%s): make it smaller, or give each session less memory")
      :format(option, size, size, gib(spec.limits.memory), gib(need), where, #up == 1 and gib(memory)
              or table.concat(rows, "; "), held_memory > 0 and (", of which other pools keep " .. gib(held_memory)) or "",
              skipped), {option = option})
  end
  if limited and size + held > slots then
    return errors.fail("config", ("%s = %d: more sessions than the capacity of %s (%s%s%s): make it smaller, or "
      .. "raise a capacity (URL#N)"):format(option, size, #up == 1 and up[1].engine.kind.what(up[1].engine.address)
      or "its engines", #up == 1 and up[1].capacity or (slots .. " in all: " .. table.concat(rows, "; ")),
      held > 0 and (", of which other pools keep " .. held) or "", skipped), {option = option})
  end
  return true
end

-- ---- what doctor and ls show ----

-- "runc (default), runsc" from a status row's runtimes ("?" when unknown)
function engines.runtimes_text(row)
  local have = row.runtimes
  if not have then return "?" end
  local names = {}
  for i, n in ipairs(have.names) do names[i] = n == have.default and n .. " (default)" or n end
  return table.concat(names, ", ")
end

function engines.status(set, ref)
  local rows = {}
  for i, m in ipairs(set.members) do
    local e = m.engine
    local row = {address = e.address, capacity = m.capacity, load = e.load, entry = m.entry}
    local client, err = usable(e, true)
    if client then
      row.address, row.ok, row.kind = client.endpoint.description, true, e.kind.name
      local about = e.kind.describe(client, ref)
      row.version, row.api, row.image = about.version, about.api, about.image
      row.runtimes = runtimes(e, true)
      local list = leftovers.list(client, e.kind)
      row.sandboxes = list
      row.sessions = 0
      for _, c in ipairs(list or {}) do
        if c.state == "running" and not c.rescue_of then row.sessions = row.sessions + 1 end
      end
      row.client = client
    else
      row.err = err
    end
    rows[i] = row
  end
  return rows
end

return engines

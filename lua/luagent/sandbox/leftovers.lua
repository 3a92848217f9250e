-- luagent.sandbox.leftovers: removing the sandboxes whose owner is gone
-- (luagent.sandbox.owner: who that is) — after rescuing the outputs they hold.
--
--   leftovers.list(client)            -> {{id, name, session, state, status, image, created, owner_pid, alive,
--                                          run, save = {from, to, required}, outputs}} | nil, err
--       outputs: "none" (no save spec), "saved" (its run wrote them home), "unsaved", "mirrored"
--       (kept in memory and stopped: only what the outputs mirror brought home is left), or "lost"
--       (the workspace was in memory and the container stopped: nothing is left to rescue)
--   leftovers.prune(client [, {all, confirm, say}]) -> removed, kept | nil, err
--       all = true: every luagent sandbox, and the supervisor volumes no session uses.
--       confirm(c, why) -> boolean: may a sandbox whose outputs are unsaved and could not be
--       rescued (or whose run is still alive, with all) be removed? Without it, such a
--       sandbox is kept. say(line): what was rescued, lost or kept (default: stderr).
--   leftovers.sweep(client)           -> once per process and engine, before its first session there: prune
--
-- A session is a container and its workspace volume on the local engine
-- (luagent.sandbox.docker_backend), both labelled luagent=1 with the owner's pid,
-- process start time and host name. A crashed run (kill -9, a lost engine)
-- leaves them behind; the next run's sweep, or `luagent sandbox prune`,
-- removes them — and first brings the outputs of a session opened with
-- save = {from, to, required} home into `to` (luagent.sandbox.rescue),
-- saying so; what cannot be rescued is named. The volume holding the
-- supervisor binary (one per build, luagent-supervisor-<sha>) is shared by
-- sessions and kept; prune --all removes those not in use (a session that
-- finds its own gone fills it again).
local errors = require "luagent.errors"
local json = require "luagent.json"
local outputs = require "luagent.outputs"
local owner = require "luagent.sandbox.owner"
local rescue = require "luagent.sandbox.rescue"
local kinds = require "luagent.sandbox.engine_kinds"

local leftovers = {}
local LABELS, WORKSPACE_LABEL = owner.LABELS, "luagent.workspace"

local function save_spec(labels)
  local from, to = labels[LABELS.save_from], labels[LABELS.save_to]
  if not (from and to) then return nil end
  local required = json.decode(labels[LABELS.save_required] or "[]")
  return {from = from, to = to, required = type(required) == "table" and required or {}}
end

-- Did the run write its outputs home? Its manifest (beside `to`) says so.
local function saved(save, run)
  local m = outputs.read_manifest(save.to)
  return m ~= nil and m.run_id == run and (m.error == nil or m.error == json.null)
end

local function outputs_state(c, labels)
  if not c.save or c.state == "created" then return "none" end -- a session that never started made nothing
  if saved(c.save, c.run) then return "saved" end
  if labels[WORKSPACE_LABEL] == "memory" and c.state ~= "running" then
    -- the stop emptied the workspace; what the mirror brought home is all there is
    return rescue.mirrored_files(c) and "mirrored" or "lost"
  end
  return "unsaved"
end

-- kind: the engine's (luagent.sandbox.engine_kinds); by default the client's.
function leftovers.list(client, kind)
  kind = kind or kinds.of_client(client)
  local found, err = kind.sandboxes(client)
  if not found then return nil, err end
  local out = {}
  for _, c in ipairs(found) do
    local labels = c.labels
    local alive = c.alive -- the kind's own word (a cluster: its Lease), else the owner's pid on this host
    if alive == nil then alive = owner.alive(labels) end
    local item = {
      id = c.id, name = c.name, session = labels["luagent.session"],
      state = c.state, status = c.status, image = c.image, created = c.created,
      owner_pid = tonumber(labels["luagent.owner.pid"]), alive = alive,
      run = labels[LABELS.run], save = save_spec(labels), rescue_of = labels[owner.RESCUE_LABEL],
    }
    item.outputs = outputs_state(item, labels)
    out[#out + 1] = item
  end
  table.sort(out, function(a, b) return (a.created or 0) < (b.created or 0) end)
  return out
end

local function say_stderr(line)
  io.stderr:write("luagent: ", line, "\n")
end

-- The outputs of c, rescued (or found lost) before it goes: true when it
-- may be removed, else false, why (or false, nil when another process is
-- rescuing them, which is left to it).
local function rescue_first(client, kind, c, opts)
  local say = opts.say or say_stderr
  if c.alive then return false, ("its run %s is still running (pid %s)"):format(c.run or "?", c.owner_pid or "?") end
  local outcome, err = rescue.outputs(client, kind, c)
  if outcome == "busy" then
    say(("sandbox %s: %s; left to it"):format(c.session or c.name, err))
    return false, nil
  end
  if outcome then
    say(outcome)
    return true
  end
  return false, "they could not be rescued: " .. err.message
end

function leftovers.prune(client, opts, kind)
  opts = opts or {}
  kind = kind or kinds.of_client(client)
  local all = opts.all
  local function remove(c) return kind.remove_sandbox(client, c) end
  local list, err = leftovers.list(client, kind)
  if not list then return nil, err end
  local removed, kept, busy = {}, {}, {}
  for _, c in ipairs(list) do -- rescues another process is doing
    if c.rescue_of and c.alive then busy[c.rescue_of] = true end
  end
  for _, c in ipairs(list) do
    if c.rescue_of then
      if not c.alive then remove(c) end -- a rescuer that died: its claim goes
    elseif (all or not c.alive) and not busy[c.session] then
      local ok, why = true, nil
      if c.outputs == "unsaved" or c.outputs == "mirrored" or c.outputs == "lost" then
        ok, why = rescue_first(client, kind, c, opts)
      end
      if not ok and why and opts.confirm and opts.confirm(c, why) then ok = true end
      if ok then
        if remove(c) then removed[#removed + 1] = c end
      elseif why then
        kept[#kept + 1] = c
        c.why = why
        if not opts.confirm then
          (opts.say or say_stderr)(("kept sandbox %s: it holds unsaved outputs of run %s (%s -> %s), and %s; "
            .. "'luagent sandbox prune' asks before removing it"):format(c.session or c.name, c.run or "?",
            c.save.from, c.save.to, why))
        end
      end
    end
  end
  kind.prune_rest(client, all, owner.alive) -- what else the kind keeps (volumes, leases)
  return removed, kept
end

local swept = {} -- engine address -> true

-- Leftovers of crashed runs go before this process adds its own sessions
-- to an engine (once per engine); a sweep that fails is said, and the run
-- goes on.
function leftovers.sweep(client, kind)
  local address = client.endpoint.description
  if swept[address] then return end
  swept[address] = true
  local ok, err = pcall(leftovers.prune, client, nil, kind)
  if not ok then
    err = errors.from(err)
    if err.kind == "cancelled" then error(err, 0) end
    say_stderr("sweeping the leftover sandboxes of earlier runs failed: " .. err.message)
  end
end

return leftovers

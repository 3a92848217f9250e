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
local docker = require "luagent.sandbox.docker_backend"
local owner = require "luagent.sandbox.owner"
local rescue = require "luagent.sandbox.rescue"

local leftovers = {}
local LABELS, WORKSPACE_LABEL = owner.LABELS, docker.LABELS.workspace

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

local LUAGENT_ONLY = {filters = {label = {"luagent=1"}}}

function leftovers.list(client)
  local found, err = client:call("GET", "/containers/json", nil,
    {query = {all = 1, filters = LUAGENT_ONLY.filters}})
  if not found then return nil, errors.from(err) end
  local out = {}
  for _, c in ipairs(found) do
    local labels = c.Labels or {}
    local item = {
      id = c.Id, name = (c.Names and c.Names[1] or ""):gsub("^/", ""), session = labels["luagent.session"],
      state = c.State, status = c.Status, image = c.Image, created = c.Created,
      owner_pid = tonumber(labels["luagent.owner.pid"]), alive = owner.alive(labels),
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
local function rescue_first(client, c, opts)
  local say = opts.say or say_stderr
  if c.alive then return false, ("its run %s is still running (pid %s)"):format(c.run or "?", c.owner_pid or "?") end
  local outcome, err = rescue.outputs(client, c)
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

local function remove(client, c)
  return docker.remove(client, c.id, c.session)
end

function leftovers.prune(client, opts)
  opts = opts or {}
  local all = opts.all
  local list, err = leftovers.list(client)
  if not list then return nil, err end
  local removed, kept, busy = {}, {}, {}
  for _, c in ipairs(list) do -- rescues another process is doing
    if c.rescue_of and c.alive then busy[c.rescue_of] = true end
  end
  for _, c in ipairs(list) do
    if c.rescue_of then
      if not c.alive then remove(client, c) end -- a rescuer that died: its claim goes
    elseif (all or not c.alive) and not busy[c.session] then
      local ok, why = true, nil
      if c.outputs == "unsaved" or c.outputs == "mirrored" or c.outputs == "lost" then
        ok, why = rescue_first(client, c, opts)
      end
      if not ok and why and opts.confirm and opts.confirm(c, why) then ok = true end
      if ok then
        if remove(client, c) then removed[#removed + 1] = c end
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
  -- volumes whose container is already gone
  local vols = client:call("GET", "/volumes", nil, {query = LUAGENT_ONLY})
  for _, v in ipairs(vols and vols.Volumes or {}) do
    if all or not owner.alive(v.Labels or {}) then docker.remove_volume(client, v.Name) end
  end
  if all then -- shared: a volume some session mounts is refused by the engine, and kept
    local shared = client:call("GET", "/volumes", nil, {query = {filters = {name = {"luagent-supervisor-"}}}})
    for _, v in ipairs(shared and shared.Volumes or {}) do
      if v.Name:match("^luagent%-supervisor%-%x+$") then client:call("DELETE", "/volumes/" .. v.Name) end
    end
  end
  return removed, kept
end

local swept = {} -- engine address -> true

-- Leftovers of crashed runs go before this process adds its own sessions
-- to an engine (once per engine); a sweep that fails is said, and the run
-- goes on.
function leftovers.sweep(client)
  local address = client.endpoint.description
  if swept[address] then return end
  swept[address] = true
  local ok, err = pcall(leftovers.prune, client)
  if not ok then
    err = errors.from(err)
    if err.kind == "cancelled" then error(err, 0) end
    say_stderr("sweeping the leftover sandboxes of earlier runs failed: " .. err.message)
  end
end

return leftovers

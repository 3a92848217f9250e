-- luagent.sandbox.leftovers: who owns a sandbox, and removing those whose
-- owner is gone.
--
--   leftovers.owner_labels()          -> the labels every session of this process carries
--   leftovers.owner_alive(labels)     -> is the luagent process that made them still running?
--   leftovers.list(client)            -> {{id, name, session, state, status, image, created, owner_pid, alive}} | nil, err
--   leftovers.prune(client [, {all}]) -> the removed ones | nil, err   (all = true: every luagent sandbox,
--                                       and the supervisor volumes no session uses)
--   leftovers.sweep(client)           -> once per process, before its first session: prune
--
-- A session is a container and its workspace volume on the local engine
-- (luagent.sandbox.docker), both labelled luagent=1 with the owner's pid,
-- process start time and host name. A crashed run leaves them behind; the
-- next run's sweep, or `luagent sandbox prune`, removes them. The volume
-- holding the supervisor binary (one per build, luagent-supervisor-<sha>) is
-- shared by sessions and kept; prune --all removes those not in use (a
-- session that finds its own gone fills it again).
local sys = require "luagent.sys"
local errors = require "luagent.errors"
local docker = require "luagent.sandbox.docker"

local leftovers = {}

function leftovers.owner_labels()
  local pid = sys.pid()
  return {
    ["luagent"] = "1",
    ["luagent.owner.pid"] = tostring(pid),
    ["luagent.owner.start"] = tostring(sys.process_start(pid) or 0),
    ["luagent.owner.host"] = sys.hostname(),
  }
end

-- A sandbox made on another host is assumed alive: we cannot tell.
function leftovers.owner_alive(labels)
  if labels["luagent.owner.host"] ~= sys.hostname() then return true end
  local start = sys.process_start(tonumber(labels["luagent.owner.pid"]) or -1)
  return start ~= nil and tostring(start) == labels["luagent.owner.start"]
end

local LUAGENT_ONLY = {filters = {label = {"luagent=1"}}}

function leftovers.list(client)
  local found, err = client:call("GET", "/containers/json", nil,
    {query = {all = 1, filters = LUAGENT_ONLY.filters}})
  if not found then return nil, errors.from(err) end
  local out = {}
  for _, c in ipairs(found) do
    local labels = c.Labels or {}
    out[#out + 1] = {
      id = c.Id, name = (c.Names and c.Names[1] or ""):gsub("^/", ""), session = labels["luagent.session"],
      state = c.State, status = c.Status, image = c.Image, created = c.Created,
      owner_pid = tonumber(labels["luagent.owner.pid"]), alive = leftovers.owner_alive(labels),
    }
  end
  table.sort(out, function(a, b) return (a.created or 0) < (b.created or 0) end)
  return out
end

function leftovers.prune(client, opts)
  local all = opts and opts.all
  local list, err = leftovers.list(client)
  if not list then return nil, err end
  local removed = {}
  for _, c in ipairs(list) do
    if (all or not c.alive) and docker.remove(client, c.id, c.session) then removed[#removed + 1] = c end
  end
  -- volumes whose container is already gone
  local vols = client:call("GET", "/volumes", nil, {query = LUAGENT_ONLY})
  for _, v in ipairs(vols and vols.Volumes or {}) do
    if all or not leftovers.owner_alive(v.Labels or {}) then docker.remove_volume(client, v.Name) end
  end
  if all then -- shared: a volume some session mounts is refused by the engine, and kept
    local shared = client:call("GET", "/volumes", nil, {query = {filters = {name = {"luagent-supervisor-"}}}})
    for _, v in ipairs(shared and shared.Volumes or {}) do
      if v.Name:match("^luagent%-supervisor%-%x+$") then client:call("DELETE", "/volumes/" .. v.Name) end
    end
  end
  return removed
end

local swept = false

-- Leftovers of crashed runs go before this process adds its own sessions.
function leftovers.sweep(client)
  if swept then return end
  swept = true
  leftovers.prune(client)
end

return leftovers

-- luagent.sandbox.docker_engine: a Docker engine as a place for sessions —
-- the engine kind luagent.sandbox.engine_set asks when a member of a set is
-- a unix:// or tcp:// address (the other kind: luagent.sandbox.k8s_engine).
-- The contract is luagent.SandboxEngineKind (lua/meta/sandbox_backend.lua);
-- sessions themselves are made by its backend, luagent.sandbox.docker_backend.
local engine = require "luagent.engine_client"
local errors = require "luagent.errors"
local image = require "luagent.image"

local kind = {name = "docker", unreachable_kind = "docker_unreachable"}

kind.backend = require "luagent.sandbox.docker_backend"

-- "the Docker engine at unix:///var/run/docker.sock"
function kind.what(address)
  return "the Docker engine at " .. address
end

-- entry: an engine_config entry ({host, tls, tls_from}), or {host = nil}: DOCKER_HOST's
function kind.connect(entry)
  return engine.connect{host = entry.host, tls = entry.tls}
end

-- An error that says the engine at address does not answer (err: why).
function kind.unreachable(address, err)
  return errors.new("docker_unreachable", ("the Docker engine at %s does not answer: %s"):format(address, err.message),
                    {endpoint = address, cause = err})
end

-- A docker_unreachable error when the engine does not answer (its socket's
-- file gone, or no answer to a ping in 5 s), else nil.
kind.lost = kind.backend.lost

function kind.has_image(client, name)
  return client:call("GET", "/images/" .. name .. "/json") ~= nil
end

-- Streams the image from one engine to another (luagent.image.copy): bytes | nil, err.
function kind.copy_image(from, to, name)
  return image.copy(from, to, name)
end

-- {names = {sorted}, default = NAME, gvisor = {NAME = true}} from GET /info:
-- a runtime whose path ends in runsc is gVisor.
function kind.runtimes(client)
  local info, err = client:call("GET", "/info")
  if not info then return nil, errors.from(err) end
  local names, gvisor = {}, {}
  for name, about in pairs(type(info.Runtimes) == "table" and info.Runtimes or {}) do
    names[#names + 1] = name
    local path = type(about) == "table" and about.path or nil
    if type(path) == "string" and path:match("runsc$") then gvisor[name] = true end
  end
  table.sort(names)
  return {names = names, default = info.DefaultRuntime, gvisor = gvisor}
end

-- The error for a runtime the engine lacks, saying how to add one.
function kind.missing_runtime(address, name, have, from)
  return errors.new("config", ("%s = %q: the Docker engine at %s has no runtime %q (it has %s; default %s). "
    .. "Register it in the engine's daemon.json, e.g. {\"runtimes\": {%q: {\"path\": \"/usr/bin/%s\"}}} "
    .. "(gVisor: apt-get install runsc; runtimeArgs [\"--platform=ptrace\"] where KVM is missing), then reload the "
    .. "engine (SIGHUP to dockerd, or systemctl reload docker)"):format(from, name, address, name,
    table.concat(have.names, ", "), tostring(have.default), name, name),
    {runtime = name, engine = address, runtimes = have.names})
end

-- The memory the engine's machine has: bytes | nil, err.
function kind.memory(client)
  local info, err = client:call("GET", "/info")
  if not info then return nil, errors.from(err) end
  return tonumber(info.MemTotal) or 0
end

-- What doctor and ls say of it: {version, api, image = image.status}.
function kind.describe(client, ref)
  return {version = (client:call("GET", "/version") or {}).Version, api = client.server_version,
          image = image.status(client, ref)}
end

-- ---- leftovers (luagent.sandbox.leftovers) ----

local LUAGENT_ONLY = {filters = {label = {"luagent=1"}}}

-- Every luagent sandbox on the engine: {{id, name, state, status, image, created, labels}} | nil, err.
function kind.sandboxes(client)
  local found, err = client:call("GET", "/containers/json", nil, {query = {all = 1, filters = LUAGENT_ONLY.filters}})
  if not found then return nil, errors.from(err) end
  local out = {}
  for i, c in ipairs(found) do
    out[i] = {id = c.Id, name = (c.Names and c.Names[1] or ""):gsub("^/", ""), state = c.State, status = c.Status,
              image = c.Image, created = c.Created, labels = c.Labels or {}}
  end
  return out
end

function kind.remove_sandbox(client, c)
  return kind.backend.remove(client, c.id, c.session)
end

-- After a prune: workspace volumes whose container is gone (of a dead owner,
-- or all), and with all the supervisor volumes no session mounts (the
-- engine refuses to remove one in use).
function kind.prune_rest(client, all, owner_alive)
  local vols = client:call("GET", "/volumes", nil, {query = LUAGENT_ONLY})
  for _, v in ipairs(vols and vols.Volumes or {}) do
    if all or not owner_alive(v.Labels or {}) then kind.backend.remove_volume(client, v.Name) end
  end
  if all then
    local shared = client:call("GET", "/volumes", nil, {query = {filters = {name = {"luagent-supervisor-"}}}})
    for _, v in ipairs(shared and shared.Volumes or {}) do
      if v.Name:match("^luagent%-supervisor%-%x+$") then client:call("DELETE", "/volumes/" .. v.Name) end
    end
  end
end

-- Containers and volumes of a pool that were never handed out (a start
-- cancelled after the engine made the container but before its answer came).
function kind.pool_strays(client, pool_id, handed)
  local filters = {label = {"luagent.pool=" .. pool_id}}
  for _, c in ipairs(client:call("GET", "/containers/json", nil, {query = {all = 1, filters = filters}}) or {}) do
    local id = (c.Labels or {})["luagent.session"]
    if not handed[id] then kind.backend.remove(client, c.Id, id) end
  end
  local vols = client:call("GET", "/volumes", nil, {query = {filters = filters}})
  for _, v in ipairs(vols and vols.Volumes or {}) do
    if not handed[(v.Labels or {})["luagent.session"]] then kind.backend.remove_volume(client, v.Name) end
  end
end

-- ---- rescue (luagent.sandbox.rescue) ----

-- Two processes never rescue one session at once: the rescuer claims it
-- with a container named after the session (the engine refuses a second).
-- lock | nil, why (a string: another has it) | nil, err
function kind.rescue_claim(client, c, labels)
  local created, err = client:call("POST", "/containers/create", {Image = c.image, Entrypoint = {"/nothing"},
    Labels = labels, NetworkDisabled = true, HostConfig = {NetworkMode = "none"}},
    {query = {name = "luagent-" .. c.session .. "-rescue"}})
  if created then return created.Id end
  if err.kind == "conflict" then return nil, "another luagent is rescuing its outputs" end
  return nil, errors.wrap(err, "claiming the sandbox for the rescue failed")
end

function kind.rescue_release(client, lock)
  client:call("DELETE", "/containers/" .. lock, nil, {query = {force = 1}})
end

-- The leftover as the backend sees it: info | nil, err; whether its
-- workspace still holds what its commands wrote; its session, adopted.
function kind.inspect(client, c)
  local info, err = client:call("GET", "/containers/" .. c.id .. "/json")
  if not info then return nil, errors.from(err) end
  return info
end
function kind.workspace_kept(info)
  return kind.backend.workspace_kept(info)
end
function kind.adopt(client, info, limits)
  return kind.backend.adopt(client, info, limits)
end

return kind

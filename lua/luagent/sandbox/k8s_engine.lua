-- luagent.sandbox.k8s_engine: a Kubernetes cluster as a place for sessions —
-- the engine kind luagent.sandbox.engine_set asks when a member of a set is
-- a k8s:// address (luagent.sandbox.engine_config). The contract is
-- luagent.SandboxEngineKind (lua/meta/sandbox_backend.lua); sessions are
-- made by its backend, luagent.sandbox.k8s_backend.
--
-- The client is luagent.kube.client's, connected with the user's kubeconfig
-- (luagent.kube.config: the entry's context, else the current one), with
-- client.namespace the entry's namespace (else the context's) and
-- client.entry the engine_config entry (ttl, pull).
local errors = require "luagent.errors"
local dates = require "luagent.dates"
local kube_config = require "luagent.kube.config"
local kube = require "luagent.kube.client"
local pod = require "luagent.sandbox.k8s_pod"
local lease = require "luagent.sandbox.k8s_lease"
local quantity = require "luagent.sandbox.k8s_quantity"

local kind = {name = "k8s", unreachable_kind = "cluster_unreachable"}

kind.backend = require "luagent.sandbox.k8s_backend"
local backend = kind.backend

function kind.what(address)
  return "the Kubernetes cluster at " .. address
end

function kind.connect(entry)
  local conn, err = kube_config.load(entry.context)
  if not conn then return nil, err end
  conn.namespace = entry.namespace or conn.namespace
  local client
  client, err = kube.connect(conn)
  if not client then return nil, err end
  client.kind, client.namespace, client.entry = "k8s", conn.namespace, entry
  client.endpoint.description = entry.host or client.endpoint.description
  return client
end

function kind.unreachable(address, err)
  return errors.new("cluster_unreachable", ("the Kubernetes cluster at %s does not answer: %s")
    :format(address, err.message), {endpoint = address, cause = err})
end

kind.lost = backend.lost

-- A cluster's nodes pull images themselves: whether one can is said by the
-- pod's status (luagent.sandbox.k8s_backend), not known before.
function kind.has_image()
  return true
end

-- The RuntimeClasses: {names, default = "runc", gvisor = {NAME = true}} (a
-- handler named runsc or gvisor is gVisor). "runc" stands for the nodes'
-- default runtime, a pod without runtimeClassName (luagent.sandbox.k8s_pod).
function kind.runtimes(client)
  local list, err = client:call("GET", "/apis/node.k8s.io/v1/runtimeclasses")
  if not list then return nil, errors.from(err) end
  local names, gvisor = {"runc"}, {}
  for _, rc in ipairs(list.items or {}) do
    names[#names + 1] = rc.metadata.name
    if rc.handler == "runsc" or rc.handler == "gvisor" then gvisor[rc.metadata.name] = true end
  end
  table.sort(names)
  return {names = names, default = "runc", gvisor = gvisor}
end

function kind.missing_runtime(address, name, have, from)
  return errors.new("config", ("%s = %q: the Kubernetes cluster at %s has no RuntimeClass %q (it has %s). Make one "
    .. "whose handler is a runtime its nodes' containerd knows, e.g. `kubectl apply -f -` of {apiVersion: "
    .. "node.k8s.io/v1, kind: RuntimeClass, metadata: {name: %s}, handler: %s} (gVisor: runsc registered in "
    .. "containerd's CRI config)"):format(from, name, address, name,
    #have.names > 0 and table.concat(have.names, ", ") or "none", name, name),
    {runtime = name, engine = address, runtimes = have.names})
end

-- The nodes' allocatable memory together; 0 (not known) when luagent may not list nodes.
function kind.memory(client)
  local nodes = client:call("GET", "/api/v1/nodes")
  local total = 0
  for _, n in ipairs(nodes and nodes.items or {}) do
    total = total + (quantity.bytes(((n.status or {}).allocatable or {}).memory) or 0)
  end
  return total
end

function kind.describe(client)
  local v = client:call("GET", "/version") or {}
  return {version = v.gitVersion, api = "v1"}
end

-- ---- leftovers (luagent.sandbox.leftovers) ----

local function pods(client, selector)
  local list, err = client:call("GET", backend.ns_path(client, "/pods"), nil, {query = {labelSelector = selector}})
  if not list then return nil, errors.from(err) end
  return list.items or {}
end

-- A pod is alive when the Lease that owns it is renewed (or its holder, a
-- process of this host, runs).
local function owners_alive(client)
  local list = client:call("GET", "/apis/coordination.k8s.io/v1/namespaces/" .. client.namespace .. "/leases", nil,
                           {query = {labelSelector = "luagent=1"}})
  local alive = {}
  for _, item in ipairs(list and list.items or {}) do alive[item.metadata.name] = lease.alive(item) end
  return alive
end

local function state_of(p)
  local cs = backend.container_status(p)
  if p.status.phase == "Running" and cs and cs.state and cs.state.running then return "running" end
  if p.status.phase == "Pending" then return "created" end
  return (p.status.phase or "unknown"):lower()
end

function kind.sandboxes(client)
  local items, err = pods(client, "luagent=1")
  if not items then return nil, err end
  local alive, out = owners_alive(client), {}
  for _, p in ipairs(items) do
    local owner = (p.metadata.ownerReferences or {})[1]
    out[#out + 1] = {id = p.metadata.name, name = p.metadata.name, state = state_of(p),
                     status = p.status.reason or p.status.phase, image = p.spec.containers[1].image,
                     created = dates.parse(p.metadata.creationTimestamp), labels = pod.labels_of(p.metadata),
                     alive = owner and alive[owner.name] == true or false}
  end
  return out
end

function kind.remove_sandbox(client, c)
  local done, err = client:call("DELETE", backend.pod_path(client, c.id), nil, {query = {gracePeriodSeconds = 0}})
  if not done and err.kind ~= "not_found" then return nil, err end
  return true
end

-- After a prune: stale Leases (their pods go with them), dead rescuers'
-- claims, and with all the supervisor's ConfigMaps when no pod is left.
function kind.prune_rest(client, all)
  for _, name in ipairs(lease.stale(client)) do lease.delete(client, name) end
  local claims = client:call("GET", backend.ns_path(client, "/configmaps"), nil,
                             {query = {labelSelector = "luagent.rescue"}})
  for _, cm in ipairs(claims and claims.items or {}) do
    if not require("luagent.sandbox.owner").alive(pod.labels_of(cm.metadata)) then
      client:call("DELETE", backend.ns_path(client, "/configmaps/" .. cm.metadata.name))
    end
  end
  if all and #(pods(client, "luagent=1") or {1}) == 0 then
    client:call("DELETE", backend.ns_path(client, "/configmaps"), nil, {query = {labelSelector = "luagent.supervisor=1"}})
  end
end

function kind.pool_strays(client, pool_id, handed)
  for _, p in ipairs(pods(client, "luagent.pool=" .. pool_id) or {}) do
    if not handed[pod.labels_of(p.metadata)["luagent.session"]] then kind.remove_sandbox(client, {id = p.metadata.name}) end
  end
end

-- ---- rescue (luagent.sandbox.rescue) ----

-- A ConfigMap named after the session is the claim (the API server refuses a second).
function kind.rescue_claim(client, c, labels)
  local name = pod.name(c.session) .. "-rescue"
  local made, err = client:call("POST", backend.ns_path(client, "/configmaps"), {apiVersion = "v1", kind = "ConfigMap",
    metadata = {name = name, labels = {["luagent"] = "1", ["luagent.rescue"] = c.session},
                annotations = {[pod.ANNOTATION] = require("luagent.json").encode(labels)}}})
  if made then return name end
  if err.kind == "conflict" then return nil, "another luagent is rescuing its outputs" end
  return nil, errors.wrap(err, "claiming the sandbox for the rescue failed")
end

function kind.rescue_release(client, lock)
  client:call("DELETE", backend.ns_path(client, "/configmaps/" .. lock))
end

function kind.inspect(client, c)
  local p, err = client:call("GET", backend.pod_path(client, c.id))
  if not p then return nil, errors.from(err) end
  return p
end

kind.workspace_kept = backend.workspace_kept
kind.adopt = backend.adopt

return kind

-- luagent.sandbox.k8s_pod: a session spec (luagent.sandbox.spec) as the
-- Kubernetes objects that hold it — a pure function of the spec, so the
-- lockdown can be read and tested as JSON (tests/lua/k8s_pod_spec.lua).
-- luagent.sandbox.k8s_backend sends them; sandbox/KUBERNETES.md explains
-- each choice.
--
--   pod.name(id) -> "luagent-<id>"
--   pod.manifest(spec, o) -> Pod
--       o = {namespace, configmap (the supervisor's ConfigMap), lease = {name, uid} | nil,
--            ttl = seconds (activeDeadlineSeconds), pull_policy, name (default pod.name(spec.id))}
--   pod.labels_of(metadata) -> {name = value}   every label the session was given, read back
--   pod.supervisor_configmap(name, binary, labels) -> ConfigMap
--   pod.network_policy(namespace) -> NetworkPolicy    deny-all for luagent.network=none pods
--   pod.lease(name, holder, seconds, labels) -> Lease
--   pod.quantity_cpu(cpus) -> "1500m"
--
-- Labels: Kubernetes allows only short names and values of letters, digits
-- and -_. in labels, and a session's labels hold paths and JSON (its save
-- spec), so every label goes into one annotation (ANNOTATION, JSON), and
-- those that are valid label pairs also into metadata.labels, where a
-- selector finds them (luagent=1, luagent.session, luagent.pool, ...).
local json = require "luagent.json"
local sys = require "luagent.sys"
local supervisor = require "luagent.sandbox.supervisor"

local pod = {}

pod.ANNOTATION = "luagent.dev/labels"
pod.NETWORK_LABEL = "luagent.network"
pod.CONTAINER = "sandbox"
pod.POLICY = "luagent-deny-all"

function pod.name(id)
  return "luagent-" .. id
end

-- A label name (no prefix) or value Kubernetes accepts: up to 63 of
-- [A-Za-z0-9-_.], starting and ending with a letter or digit (a value may be empty).
local function valid_name(s)
  return #s <= 63 and s:match("^[%w][%w%-_.]*$") ~= nil and s:match("[%w]$") ~= nil
end

local function valid_label(k, v)
  return valid_name(k) and (v == "" or valid_name(v))
end

local function metadata_labels(labels, network)
  local out = {}
  for k, v in pairs(labels) do
    if valid_label(k, v) then out[k] = v end
  end
  out[pod.NETWORK_LABEL] = network and "open" or "none"
  return out
end

function pod.labels_of(metadata)
  local all = json.decode((metadata.annotations or {})[pod.ANNOTATION] or "")
  if type(all) == "table" then return all end
  return metadata.labels or {}
end

function pod.quantity_cpu(cpus)
  return ("%dm"):format(math.max(1, math.floor(cpus * 1000 + 0.5)))
end

-- "K=V" entries as the Pod's env list.
local function env_list(env)
  local out = {}
  for i, entry in ipairs(env or {}) do
    local k, v = entry:match("^([^=]*)=(.*)$")
    out[i] = {name = k or entry, value = v or ""}
  end
  return json.array(out)
end

-- An emptyDir in memory capped at size, or on disk without a cap (size false).
local function empty_dir(size)
  if not size then return {} end
  return {medium = "Memory", sizeLimit = tostring(math.floor(size))}
end

-- The sandbox container: the supervisor is PID 1 as uid 0 with only the four
-- capabilities it needs (sandbox/supervisor/DESIGN.md); commands run under it
-- as spec.uid:gid with none. Memory is requested as it is capped (files kept
-- in memory included): the scheduler places a pod by what it may really
-- use. CPU is capped at cpus (a CFS quota, as on Docker) but requested at
-- CPU_REQUEST: a sandbox mostly waits for its model, and a request of whole
-- cores would fit a handful of sessions on a node that can run dozens.
local CPU_REQUEST = 0.1
local EPHEMERAL_STORAGE, EPHEMERAL_REQUEST = "256Mi", "16Mi"

local function container(spec, o)
  local limits = {memory = tostring(math.floor(spec.limits.memory)), cpu = pod.quantity_cpu(spec.limits.cpus)}
  local requests = {memory = limits.memory, cpu = pod.quantity_cpu(math.min(spec.limits.cpus, o.cpu_request or CPU_REQUEST))}
  -- The root is read-only and the workspace in memory: what the node's disk
  -- gets is logs and, with writable_root, the root's writes. A disk
  -- workspace (workspace_size = false) is uncapped, as on Docker.
  if spec.mounts.workspace.size then
    limits["ephemeral-storage"] = EPHEMERAL_STORAGE
    requests["ephemeral-storage"] = EPHEMERAL_REQUEST
  end
  return {
    name = pod.CONTAINER, image = spec.image, imagePullPolicy = o.pull_policy or "IfNotPresent",
    command = {supervisor.PATH, "init"}, args = json.array({}), workingDir = spec.workdir, env = env_list(spec.env),
    stdin = false, tty = false,
    securityContext = {
      runAsUser = 0, runAsGroup = 0, runAsNonRoot = false, privileged = false,
      allowPrivilegeEscalation = false, readOnlyRootFilesystem = not spec.writable_root,
      capabilities = {drop = {"ALL"}, add = {"SETUID", "SETGID", "KILL", "SETPCAP"}},
    },
    resources = {limits = limits, requests = requests},
    volumeMounts = {
      {name = "workspace", mountPath = spec.mounts.workspace.target},
      {name = "tmp", mountPath = spec.mounts.tmp.target},
      {name = "skills", mountPath = "/skills"}, -- root's: the supervisor makes it 0755 (luagent.skills)
      {name = "supervisor", mountPath = supervisor.HOME, readOnly = true},
    },
  }
end

function pod.manifest(spec, o)
  local metadata = {
    name = o.name or pod.name(spec.id), namespace = o.namespace,
    labels = metadata_labels(spec.labels, spec.network),
    annotations = {[pod.ANNOTATION] = json.encode(spec.labels)},
  }
  if o.lease then
    metadata.ownerReferences = {{apiVersion = "coordination.k8s.io/v1", kind = "Lease", name = o.lease.name,
                                 uid = o.lease.uid}}
  end
  return {
    apiVersion = "v1", kind = "Pod", metadata = metadata,
    spec = {
      restartPolicy = "Always", -- PID 1 dying restarts the container; the emptyDirs survive it
      automountServiceAccountToken = false, enableServiceLinks = false,
      hostNetwork = false, hostPID = false, hostIPC = false, shareProcessNamespace = false,
      terminationGracePeriodSeconds = 2, -- the supervisor ends commands itself
      activeDeadlineSeconds = o.ttl, -- a last resort: nothing outlives a killed luagent by more
      runtimeClassName = spec.runtime ~= "runc" and spec.runtime or nil, -- runc: the nodes' default
      securityContext = {seccompProfile = {type = "RuntimeDefault"}},
      containers = {container(spec, o)},
      volumes = {
        {name = "workspace", emptyDir = empty_dir(spec.mounts.workspace.size)},
        {name = "tmp", emptyDir = empty_dir(spec.mounts.tmp.size)},
        {name = "skills", emptyDir = empty_dir(16 * 1024 * 1024)},
        {name = "supervisor", configMap = {name = o.configmap, defaultMode = 365}}, -- 0555: root's, read-only
      },
    },
  }
end

-- The supervisor binary, one immutable ConfigMap per namespace and build.
function pod.supervisor_configmap(name, binary, labels)
  return {apiVersion = "v1", kind = "ConfigMap", immutable = true,
          metadata = {name = name, labels = labels},
          binaryData = {["luagent-supervisor"] = sys.base64(binary)}}
end

-- No ingress, no egress for pods labelled luagent.network=none (held only
-- where the cluster's network plugin enforces NetworkPolicy).
function pod.network_policy(namespace)
  return {apiVersion = "networking.k8s.io/v1", kind = "NetworkPolicy",
          metadata = {name = pod.POLICY, namespace = namespace, labels = {["luagent"] = "1"}},
          spec = {podSelector = {matchLabels = {[pod.NETWORK_LABEL] = "none"}},
                  policyTypes = {"Ingress", "Egress"}, ingress = json.array({}), egress = json.array({})}}
end

-- A Lease a luagent process renews while it has sessions in the namespace;
-- its pods name it as their owner, so deleting it (a clean exit, or the
-- sweep finding it stale) has the garbage collector delete them.
function pod.lease(name, holder, seconds, labels, now_text)
  return {apiVersion = "coordination.k8s.io/v1", kind = "Lease",
          metadata = {name = name, labels = labels},
          spec = {holderIdentity = holder, leaseDurationSeconds = seconds, acquireTime = now_text,
                  renewTime = now_text}}
end

return pod

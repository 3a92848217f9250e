-- The Pod a session is on Kubernetes (luagent.sandbox.k8s_pod), as JSON:
-- the lockdown sandbox/KUBERNETES.md promises, point by point, from the same
-- session spec a Docker container is made of. No cluster is asked (the
-- kubernetes phase of tests/run runs sessions on a real one).
local t = require "helper"
local pod = require "luagent.sandbox.k8s_pod"
local specs = require "luagent.sandbox.spec"
local json = require "luagent.json"

local function session_spec(opts)
  return specs.session_spec(specs.settings(opts or {}), {})
end

local function manifest(opts, extra)
  local o = {namespace = "ns", configmap = "luagent-supervisor-0123456789abcdef", ttl = 86400,
             lease = {name = "luagent-host-1-2", uid = "u-1"}}
  for k, v in pairs(extra or {}) do o[k] = v end
  -- through JSON, as the API server reads it
  return json.decode(json.encode(pod.manifest(session_spec(opts), o)))
end

local function sandbox_container(p)
  t.eq(#p.spec.containers, 1, "one container")
  return p.spec.containers[1]
end

local function volume(p, name)
  for _, v in ipairs(p.spec.volumes) do
    if v.name == name then return v end
  end
end

t.test("the supervisor is PID 1 as uid 0 with exactly four capabilities, and nothing else is granted", function()
  local c = sandbox_container(manifest())
  t.same(c.command, {"/run/luagent/luagent-supervisor", "init"})
  local sc = c.securityContext
  t.eq(sc.runAsUser, 0)
  t.eq(sc.runAsNonRoot, false)
  t.eq(sc.privileged, false)
  t.eq(sc.allowPrivilegeEscalation, false, "no_new_privs")
  t.eq(sc.readOnlyRootFilesystem, true)
  t.same(sc.capabilities, {drop = {"ALL"}, add = {"SETUID", "SETGID", "KILL", "SETPCAP"}})
end)

t.test("no token, no service links, no host namespaces, the runtime's seccomp profile, a deadline", function()
  local p = manifest()
  t.eq(p.spec.automountServiceAccountToken, false)
  t.eq(p.spec.enableServiceLinks, false)
  t.eq(p.spec.hostNetwork, false)
  t.eq(p.spec.hostPID, false)
  t.eq(p.spec.hostIPC, false)
  t.eq(p.spec.shareProcessNamespace, false)
  t.eq(p.spec.securityContext.seccompProfile.type, "RuntimeDefault")
  t.eq(p.spec.activeDeadlineSeconds, 86400)
  t.eq(p.spec.restartPolicy, "Always", "a dead PID 1 restarts the container; the emptyDirs outlive it")
  t.eq(p.spec.runtimeClassName, nil, "the cluster's default runtime unless one is asked for")
  t.eq(manifest({runtime = "runsc"}).spec.runtimeClassName, "runsc")
end)

t.test("memory limit = memory + tmp_size + workspace_size, requested as capped; CPU capped at cpus, requested at 0.1",
  function()
  local c = sandbox_container(manifest({memory = "1g", tmp_size = "64m", workspace_size = "256m", cpus = 1.5}))
  t.eq(c.resources.limits.memory, tostring(1024 * 1024 * 1024 + 64 * 1024 * 1024 + 256 * 1024 * 1024))
  t.eq(c.resources.requests.memory, c.resources.limits.memory, "placed by the memory it may really use")
  t.eq(c.resources.limits.cpu, "1500m")
  t.eq(c.resources.requests.cpu, "100m", "a sandbox mostly waits: whole cores requested would leave nodes idle")
  t.eq(sandbox_container(manifest({cpus = 0.05})).resources.requests.cpu, "50m", "never more than its cap")
end)

t.test("ephemeral storage is capped while the workspace is in memory, and not for a disk workspace", function()
  local c = sandbox_container(manifest({}))
  t.eq(c.resources.limits["ephemeral-storage"], "256Mi", "logs and a writable root's writes on the node's disk")
  t.eq(c.resources.requests["ephemeral-storage"], "16Mi")
  local disk = sandbox_container(manifest({workspace_size = false}))
  t.eq(disk.resources.limits["ephemeral-storage"], nil, "a disk workspace is uncapped, as on Docker")
end)

t.test("the workspace and /tmp are emptyDirs in memory capped at their sizes; the supervisor read-only", function()
  local p = manifest({tmp_size = "64m", workspace_size = "256m"})
  t.same(volume(p, "workspace").emptyDir, {medium = "Memory", sizeLimit = tostring(256 * 1024 * 1024)})
  t.same(volume(p, "tmp").emptyDir, {medium = "Memory", sizeLimit = tostring(64 * 1024 * 1024)})
  t.same(volume(p, "supervisor").configMap, {name = "luagent-supervisor-0123456789abcdef", defaultMode = 365})
  local mounts = {}
  for _, m in ipairs(sandbox_container(p).volumeMounts) do mounts[m.name] = m end
  t.eq(mounts.workspace.mountPath, "/workspace")
  t.eq(mounts.tmp.mountPath, "/tmp")
  t.eq(mounts.supervisor.readOnly, true, "uid 1000 cannot replace what root runs")
  t.same(volume(manifest({workspace_size = false}), "workspace").emptyDir, {}, "an uncapped disk workspace")
end)

t.test("writable_root, env and the working directory come from the spec", function()
  local c = sandbox_container(manifest({writable_root = true, env = {A = "1", B = "x=y"}, workdir = "/workspace"}))
  t.eq(c.securityContext.readOnlyRootFilesystem, false)
  local env = {}
  for _, e in ipairs(c.env) do env[e.name] = e.value end
  t.eq(env.A, "1")
  t.eq(env.B, "x=y", "split at the first =")
  t.eq(c.workingDir, "/workspace")
end)

t.test("labels: every one in the annotation, the valid ones selectable; the network label; the Lease owns it",
  function()
  local spec = session_spec({save = {from = "output", to = "/tmp/some run/out"}, labels = {team = "a b", ok = "yes"}})
  local p = json.decode(json.encode(pod.manifest(spec, {namespace = "ns", configmap = "c", ttl = 60,
                                                        lease = {name = "l", uid = "u"}})))
  t.eq(p.metadata.name, "luagent-" .. spec.id)
  t.eq(p.metadata.labels.luagent, "1")
  t.eq(p.metadata.labels["luagent.session"], spec.id)
  t.eq(p.metadata.labels.ok, "yes")
  t.eq(p.metadata.labels.team, nil, "a value with a space is no label value")
  t.eq(p.metadata.labels["luagent.save.to"], nil, "a path is no label value")
  t.eq(p.metadata.labels["luagent.network"], "none")
  t.same(pod.labels_of(p.metadata), spec.labels, "read back whole")
  t.same(p.metadata.ownerReferences, {{apiVersion = "coordination.k8s.io/v1", kind = "Lease", name = "l", uid = "u"}})
  for k, v in pairs(p.metadata.labels) do
    t.ok(#k <= 63 and k:match("^[%w][%w%-_.]*[%w]$"), "label name " .. k)
    t.ok(v == "" or #v <= 63 and v:match("^[%w][%w%-_.]*[%w]$") or v:match("^[%w]$"), "label value " .. v)
  end
  t.eq(manifest({network = true}).metadata.labels["luagent.network"], "open")
end)

t.test("the deny-all NetworkPolicy selects the sessions without network and allows nothing", function()
  local np = json.decode(json.encode(pod.network_policy("ns")))
  t.same(np.spec.podSelector, {matchLabels = {["luagent.network"] = "none"}})
  t.same(np.spec.policyTypes, {"Ingress", "Egress"})
  t.same(np.spec.ingress, {})
  t.same(np.spec.egress, {})
  t.eq(json.encode(np.spec.egress), "[]", "an empty list (deny), not a missing one")
end)

t.test("the supervisor's ConfigMap is immutable and holds the binary", function()
  local cm = pod.supervisor_configmap("luagent-supervisor-x", "\0\1binary", {luagent = "1"})
  t.eq(cm.immutable, true)
  t.eq(cm.binaryData["luagent-supervisor"], luagent.sys.base64("\0\1binary"))
end)

return t.done()

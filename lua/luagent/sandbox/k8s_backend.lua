-- luagent.sandbox.k8s_backend: the sandbox backend on a Kubernetes cluster.
-- A session is a Pod (luagent.sandbox.k8s_pod builds it from the same
-- session spec a Docker container is made of): the supervisor is its PID 1,
-- from an immutable ConfigMap; `serve` runs in it through the API server's
-- exec (a WebSocket: luagent.engine_stream.supervisor with websocket = true),
-- and every command, python cell, file, pack and the egress relay ride that
-- channel exactly as on Docker (luagent.sandbox.session, whose hooks this
-- module fills in). There is no archive API: files go in through the
-- supervisor's `unpack` (a tar streamed to its stdin) and its `put`.
-- sandbox/KUBERNETES.md is the design; errors: when the API server does not
-- answer, kind "cluster_unreachable"; a refusal, kind "kubernetes".
--
-- Faults: a pod that cannot be scheduled (the scheduler's words, kind
-- capacity), an image the node cannot pull (kind not_found), a container
-- that cannot start (kind kubernetes) end the open; a container that died
-- under a command (OOM-killed, killed) is restarted by its kubelet with the
-- workspace kept (emptyDirs outlive it), and a pod that is gone (evicted,
-- deleted, past its deadline) is made again and staged again: either way the
-- call returns sandbox_restarted with the reason the pod's status gives.
local engine_stream = require "luagent.engine_stream"
local urlencode = require("luagent.engine_client").urlencode
local errors = require "luagent.errors"
local sched = require "luagent.sched"
local tar = require "luagent.tar"
local supervisor = require "luagent.sandbox.supervisor"
local recovery = require "luagent.sandbox.recovery"
local sessions = require "luagent.sandbox.session"
local pod = require "luagent.sandbox.k8s_pod"
local lease = require "luagent.sandbox.k8s_lease"
local quantity = require "luagent.sandbox.k8s_quantity"

local k8s = {}

k8s.LABELS = {workspace = "luagent.workspace", user = "luagent.user", claimed = "luagent.claimed"}
local TTL = 86400          -- activeDeadlineSeconds unless the engine says (k8s://...?ttl=)
local START_TIMEOUT = 600  -- seconds for a pod to run (an image pull on a fresh node takes a while)
local RESTART_WAIT = 120   -- seconds for a restarted container to run again (the kubelet backs off 10, 20, 40 s)
local POLL = 0.1
local UNPACK_CHUNK = 1024 * 1024

---@class luagent.K8sSession: luagent.SessionBase
local Session = sessions.class()
k8s.Session = Session
Session.engine_name = "the Kubernetes API server"
Session.workspace_kept_text = "the workspace is kept: the pod's emptyDirs outlive its container"

local function ns_path(client, rest)
  return "/api/v1/namespaces/" .. client.namespace .. rest
end

local function pod_path(client, name)
  return ns_path(client, "/pods/" .. name)
end

-- ---- what a namespace needs once: the supervisor's ConfigMap, the policy ----

local prepared = setmetatable({}, {__mode = "k"}) -- client -> {configmap = name, policy = true | err}

local function configmap_name()
  return supervisor.volume() -- luagent-supervisor-<sha16>: one per build
end

local function ensure_configmap(client)
  local name = configmap_name()
  if client:call("GET", ns_path(client, "/configmaps/" .. name)) then return name end
  local made, err = client:call("POST", ns_path(client, "/configmaps"),
    pod.supervisor_configmap(name, supervisor.entry().data, {["luagent"] = "1", ["luagent.supervisor"] = "1"}))
  if made or err.kind == "conflict" then return name end
  return nil, errors.wrap(err, "making the sandbox supervisor's ConfigMap " .. name)
end

-- The deny-all policy for the sessions without network: true, or the error a
-- session without network gets (no sandbox is opened without its policy:
-- the admin applies it, KUBERNETES.md). A user who may not create policies
-- but finds it there is fine.
local function ensure_policy(client)
  local base = "/apis/networking.k8s.io/v1/namespaces/" .. client.namespace .. "/networkpolicies"
  local made, err = client:call("POST", base, pod.network_policy(client.namespace))
  if made or err.kind == "conflict" or client:call("GET", base .. "/" .. pod.POLICY) then return true end
  return errors.new("config", ("namespace %s has no NetworkPolicy %s and luagent cannot make it (%s): a sandbox "
    .. "without network is not opened without it; have the cluster's admin apply it (luagent help kubernetes shows "
    .. "it), or give sandbox.open network = true"):format(client.namespace, pod.POLICY, err.message))
end

local function prepare(client)
  local p = prepared[client]
  if p and p.done then return p end
  if p and p.task then p.task:wait() return prepared[client] end
  p = {}
  prepared[client] = p
  p.task = sched.spawn(function()
    local name, err = ensure_configmap(client)
    if not name then p.err = err return end
    p.configmap = name
    p.policy = ensure_policy(client)
  end)
  p.task:wait()
  p.task, p.done = nil, p.err == nil
  if not p.done then prepared[client] = nil end
  return p
end

-- ---- creating ----

local function new_session(client, spec, name, created)
  return setmetatable({
    id = spec.id, client = client, container = name, spec = spec, workspace = spec.mounts.workspace.target,
    uid = spec.uid, gid = spec.gid, python_lost = false, removed = false, closing = false, restarts = 0,
    put_via = "supervisor", nproc_cap = true, restart_count = 0, replaced = 0,
    drop_env = "KUBERNETES_", -- the API server's address, which the kubelet gives every container
    resource_version = created and created.metadata.resourceVersion,
  }, Session)
end

local function make_pod(client, spec, name)
  local p = prepare(client)
  if p.err then return nil, p.err end
  if not spec.network and p.policy ~= true then return nil, p.policy end
  local owned, err = lease.ensure(client)
  if not owned then return nil, err end
  local entry = client.entry or {}
  local body = pod.manifest(spec, {namespace = client.namespace, configmap = p.configmap, lease = owned,
                                   ttl = entry.ttl or TTL, pull_policy = entry.pull, name = name})
  local created
  created, err = client:call("POST", ns_path(client, "/pods"), body)
  if not created then return nil, errors.wrap(err, "making the sandbox pod " .. name) end
  return created
end

function k8s.create(client, spec)
  spec.labels[k8s.LABELS.workspace] = spec.mounts.workspace.size and "memory" or "disk"
  spec.labels[k8s.LABELS.user] = ("%d:%d"):format(spec.uid, spec.gid)
  local name = pod.name(spec.id)
  local created, err = make_pod(client, spec, name)
  if not created then return nil, err end
  return new_session(client, spec, name, created)
end

-- A leftover pod's session (its object `info`), for the rescue of its outputs.
function k8s.adopt(client, info, limits)
  local labels = pod.labels_of(info.metadata)
  local uid, gid = (labels[k8s.LABELS.user] or "1000:1000"):match("^(%d+):(%d+)$")
  local target = "/workspace"
  for _, m in ipairs(((info.spec.containers or {})[1] or {}).volumeMounts or {}) do
    if m.name == "workspace" then target = m.mountPath end
  end
  local spec = {id = labels["luagent.session"], image = info.spec.containers[1].image, labels = labels,
                uid = tonumber(uid) or 1000, gid = tonumber(gid) or 1000, staged = {}, engine_grace = 0,
                mounts = {workspace = {target = target, size = labels[k8s.LABELS.workspace] ~= "disk"}},
                max_extract = limits.max_extract, max_extract_entries = limits.max_extract_entries}
  local session = new_session(client, spec, info.metadata.name)
  session:_serve(true)
  return session
end

-- ---- the pod's state ----

local function container_status(p)
  for _, cs in ipairs(p.status and p.status.containerStatuses or {}) do
    if cs.name == pod.CONTAINER then return cs end
  end
end

local function condition(p, kind)
  for _, c in ipairs(p.status and p.status.conditions or {}) do
    if c.type == kind then return c end
  end
end

local PULL_FAILED = {ErrImagePull = true, ImagePullBackOff = true, ErrImageNeverPull = true, InvalidImageName = true}
local START_FAILED = {CreateContainerConfigError = true, CreateContainerError = true, RunContainerError = true,
                      CrashLoopBackOff = true}

-- "running" | "waiting" | nil, err: what the pod says of a start.
local function start_state(self, p)
  local cs = container_status(p)
  if p.metadata.deletionTimestamp then return nil, errors.new("kubernetes", "the pod is being deleted") end
  if p.status.phase == "Failed" or p.status.phase == "Succeeded" then
    return nil, errors.new("kubernetes", ("the pod ended (%s: %s)"):format(p.status.reason or p.status.phase,
      p.status.message or "no message"))
  end
  if cs and cs.state and cs.state.running then return "running" end
  local waiting = cs and cs.state and cs.state.waiting
  if waiting and PULL_FAILED[waiting.reason] then
    return nil, errors.new("not_found", ("the sandbox image %s cannot be pulled by the cluster's node (%s: %s); push it "
      .. "to a registry the nodes can reach and name it by that reference (luagent help kubernetes)")
      :format(self.spec.image, waiting.reason, waiting.message or ""), {image = self.spec.image})
  end
  if waiting and START_FAILED[waiting.reason] then
    return nil, errors.new("kubernetes", ("its container cannot start (%s: %s)"):format(waiting.reason,
      waiting.message or ""))
  end
  local scheduled = condition(p, "PodScheduled")
  if scheduled and scheduled.status == "False" and scheduled.reason == "Unschedulable" then
    return "unschedulable", scheduled.message
  end
  return "waiting"
end

-- Does any node have the memory and CPU the pod asks for at all (nil: the
-- nodes cannot be listed)? A pod no node can hold never runs: no use waiting.
local function fits_some_node(client, spec)
  local nodes = client:call("GET", "/api/v1/nodes", nil, {timeout = 10})
  if not nodes then return nil end
  for _, n in ipairs(nodes.items or {}) do
    local a = (n.status or {}).allocatable or {}
    if (quantity.bytes(a.memory) or 0) >= spec.limits.memory and (quantity.cpus(a.cpu) or 0) >= spec.limits.cpus then
      return true
    end
  end
  return false
end

local function unschedulable_error(self, why)
  return errors.new("capacity", ("no node of the Kubernetes cluster has room for sandbox pod %s: %s (it asks for "
    .. "%d MiB of memory and %s of CPU: memory + tmp_size + workspace_size, and cpus)"):format(self.container, why,
    self.spec.limits.memory // (1024 * 1024), pod.quantity_cpu(self.spec.limits.cpus)), {scheduler = why})
end

-- Waits until the pod's container runs: true | nil, err. A pod the
-- scheduler cannot place fails at once when no node could ever hold it, and
-- else waits up to the open's capacity_wait for room (other pods end, a node
-- is added), saying so once, then fails with the scheduler's words.
function Session:_wait_running(limit)
  local deadline = sched.now() + (limit or START_TIMEOUT)
  local unschedulable_since
  while true do
    local p, err = self.client:call("GET", pod_path(self.client, self.container), nil, {timeout = 10})
    if not p then return nil, err end
    local state, why = start_state(self, p)
    if state == "running" then
      self.restart_count = (container_status(p) or {}).restartCount or 0
      return true
    end
    if not state then return nil, errors.wrap(why, ("sandbox pod %s"):format(self.container)) end
    if state == "unschedulable" and not unschedulable_since then
      unschedulable_since = sched.now()
      if fits_some_node(self.client, self.spec) == false then return nil, unschedulable_error(self, why) end
      io.stderr:write(("luagent: sandbox pod %s waits for room on the cluster (%s); up to %d s (sandbox.open's "
        .. "capacity_wait)\n"):format(self.container, why, self.spec.capacity_wait or 0))
    end
    if state == "unschedulable" and sched.now() - unschedulable_since >= (self.spec.capacity_wait or 0) then
      return nil, unschedulable_error(self, why)
    end
    if sched.now() >= deadline then
      return errors.fail("timeout", ("sandbox pod %s did not run within %d s (%s)"):format(self.container,
        limit or START_TIMEOUT, why or (p.status.phase or "no status")))
    end
    sched.sleep(POLL)
  end
end

-- ---- starting ----

-- The options of an exec WebSocket running argv in the sandbox container
-- (as its user, root: the supervisor's serve and egress relay).
function Session:_exec_stream_options(argv)
  local q = {"container=" .. pod.CONTAINER, "stdin=true", "stdout=true", "stderr=true", "tty=false"}
  for _, a in ipairs(argv) do q[#q + 1] = "command=" .. urlencode(a) end
  local path = pod_path(self.client, self.container) .. "/exec?" .. table.concat(q, "&")
  return self.client:stream_options(path, {timeout = 15})
end

function Session:_start_supervisor()
  local channel, err = engine_stream.supervisor(self:_exec_stream_options(supervisor.serve_argv(self)))
  if not channel then return nil, errors.from(err) end
  return supervisor.over(channel)
end

function Session:start()
  local ok, err = self:_wait_running()
  if not ok then return nil, err end
  self:_serve()
  return self:_stage()
end

function Session:stage(staged, restore)
  self.spec.staged, self.spec.restore = staged, restore
  return self:_stage()
end

-- ---- a warm pool's: claimed by a label patch on the pod's resourceVersion ----

-- Two luagent processes never take the same warm pod: the claim is a PATCH
-- that names the resourceVersion read just before, so the API server
-- refuses (409) a second claim, or any change made in between (the kubelet
-- updating the status: read again, and tried again while it is unclaimed).
-- true: ours; "taken": another's (let go of, never removed); false: unusable.
function Session:claim()
  local me = lease.ensure(self.client)
  for _ = 1, 5 do
    local p = self.client:call("GET", pod_path(self.client, self.container))
    if not p or p.metadata.deletionTimestamp then return false end
    if (p.metadata.labels or {})[k8s.LABELS.claimed] then return "taken" end
    local patched, err = self.client:call("PATCH", pod_path(self.client, self.container),
      {metadata = {resourceVersion = p.metadata.resourceVersion,
                   labels = {[k8s.LABELS.claimed] = me and me.name or "1"}}}, {patch = "merge"})
    if patched then return true end
    if err.kind ~= "conflict" then return false end
  end
  return false
end

-- ---- files: a tar streamed into the supervisor's unpack ----

-- Sends the tar of entries to a spawned `luagent-supervisor unpack`, one
-- write request at a time (each answered once its bytes are in the pipe):
-- never a whole file in memory.
local function stream_tar(ex, job, reader)
  while true do
    local chunk, rerr = reader:read(UNPACK_CHUNK)
    if rerr then return nil, errors.from(rerr) end
    local w = chunk and {target = job.id, data = chunk} or {target = job.id}
    local ok, err = ex:send(chunk and "write" or "eof", w)
    if ok then ok, err = ex:wait(w) end
    if not ok then return nil, err end
    local r = ex:result(w)
    if r.exit_code ~= 0 then return nil, errors.new("io", "staging into the sandbox failed: " .. (r.failure or "?")) end
    if not chunk then return true end
  end
end

function Session:put(entries)
  local reader, err = tar.stream(entries, {uid = self.uid, gid = self.gid})
  if not reader then return nil, errors.wrap(errors.from(err), "staging into the sandbox failed") end
  local ex
  ex, err = self:_ready()
  if not ex then reader:close() return nil, err end
  local job = {argv = {supervisor.PATH, "unpack", self.workspace}, env = {}, cwd = self.workspace, stdin = true,
               timeout = 3600, max_output = 65536}
  local ok
  ok, err = ex:send("spawn", job)
  if ok then ok, err = stream_tar(ex, job, reader) end
  reader:close()
  if ok then ok, err = ex:wait(job) end
  if not ok then
    ex:kill(job)
    return nil, errors.wrap(err, "staging into the sandbox failed")
  end
  local r = ex:result(job)
  if r.exit_code == 0 then return true end
  local said = (r.stdout .. r.stderr):gsub("%s+$", "")
  return errors.fail(r.exit_code == 1 and "bad_entry" or "io", "staging into the sandbox failed: " .. said)
end

-- ---- what the session hooks ask ----

-- A cluster_unreachable error when the API server does not answer GET
-- /version in 5 s, else nil.
function k8s.lost(client)
  local ok, err = client:call("GET", "/version", nil, {timeout = 5})
  if ok or not (recovery.unreachable(err) or err.kind == "timeout" or err.kind == "network" or err.kind == "connect") then
    return nil
  end
  if err.kind == "cluster_unreachable" then return err end
  return errors.new("cluster_unreachable", ("the Kubernetes API server at %s does not answer: %s")
    :format(client.endpoint.description, err.message), {endpoint = client.endpoint.description})
end

function Session:_engine_lost()
  return k8s.lost(self.client)
end

function Session:_engine_gone()
  return self.engine_unreachable and self:_engine_lost() or nil
end

function Session:_stopped()
  local p = self.client:call("GET", pod_path(self.client, self.container), nil, {timeout = 5})
  local cs = p and container_status(p)
  if not p then return nil end
  if cs and cs.state and cs.state.running and (cs.restartCount or 0) == self.restart_count then return nil end
  local last = cs and (cs.lastState or {}).terminated
  if last and last.reason == "OOMKilled" then return recovery.oom_killed_text(self) end
  return "its container stopped"
end

function Session:_remove_objects()
  local done, err = self.client:call("DELETE", pod_path(self.client, self.container), nil,
                                     {query = {gracePeriodSeconds = 0}})
  if not done and err.kind ~= "not_found" then return nil, err end
  return true
end

-- What ended a container, from its lastState.terminated.
local function termination_text(t)
  if not t then return "its container was restarted" end
  if t.reason == "OOMKilled" then return "its container passed its memory limit and was OOM-killed" end
  return ("its container ended (%s, exit code %s%s) and was restarted by its kubelet"):format(t.reason or "?",
    tostring(t.exitCode), t.signal and (", signal " .. t.signal) or "")
end

-- The pod is gone for good (evicted, deleted, past its deadline): a new one
-- takes its place, staged again.
function Session:_replace(why)
  self.replaced = self.replaced + 1
  self:_remove_objects()
  local name = ("%s-r%d"):format(pod.name(self.id), self.replaced)
  local created, err = make_pod(self.client, self.spec, name)
  if not created then return nil, err end
  self.container = name
  local ok
  ok, err = self:_wait_running()
  if not ok then return nil, err end
  return {restarted = true, reset = true, why = why,
          done = "a new pod was made in its place, and the workspace was reset to what sandbox.open staged",
          reset_why = ("sandbox session %s's pod was gone (%s) and a new one was made; its workspace started again "
            .. "from what sandbox.open staged"):format(self.id, why)}
end

local function gone_reason(p)
  if not p then return "the pod was deleted" end
  if p.metadata.deletionTimestamp then return "the pod was deleted" end
  if p.status.phase == "Failed" or p.status.phase == "Succeeded" then
    return ("the pod ended: %s%s"):format(p.status.reason or p.status.phase,
      p.status.message and (": " .. p.status.message) or "")
  end
end

-- The status a kubelet reports lags the container by up to a second (its
-- relist): a container that just died (under gVisor an OOM ends the whole
-- sandbox) can still show as running with the restart count it had. Once a
-- start of the supervisor failed in it, the next revive waits for the
-- kubelet to see the end (the count moves, or the state leaves running).
function Session:_wait_kubelet_saw_end(seen)
  local deadline = sched.now() + RESTART_WAIT
  while sched.now() < deadline do
    local p, err = self.client:call("GET", pod_path(self.client, self.container), nil, {timeout = 10})
    if not p then return nil, err end
    local cs = container_status(p) or {}
    if gone_reason(p) or (cs.restartCount or 0) ~= seen or not (cs.state and cs.state.running) then return true end
    sched.sleep(POLL)
  end
  return true -- still running as it was: the start is tried again as it is
end

-- attempt: 1 for the first try of a recovery, more after a supervisor that
-- could not start (luagent.sandbox.recovery).
function Session:_revive(attempt)
  local seen = self.restart_count
  if (attempt or 1) > 1 then
    local ok, err = self:_wait_kubelet_saw_end(seen)
    if not ok then return nil, err end
  end
  local p, err = self.client:call("GET", pod_path(self.client, self.container), nil, {timeout = 10})
  if not p and err.kind ~= "not_found" then return nil, err end
  local gone = gone_reason(p)
  if gone then return self:_replace(gone) end
  local ok
  ok, err = self:_wait_running(RESTART_WAIT)
  if not ok then return nil, err end
  if self.restart_count == seen then return {restarted = false} end
  local last = (container_status(self.client:call("GET", pod_path(self.client, self.container)) or {}) or {})
  last = (last.lastState or {}).terminated
  return {restarted = true, reset = false, oom_killed = last and last.reason == "OOMKilled",
          why = termination_text(last)}
end

-- ---- helpers for luagent.sandbox.k8s_engine ----

k8s.pod_path = pod_path
k8s.ns_path = ns_path
k8s.container_status = container_status

function k8s.workspace_kept(info)
  return info.status ~= nil and info.status.phase == "Running" and not info.metadata.deletionTimestamp
end

return k8s

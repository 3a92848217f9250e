-- luagent.sandbox.k8s_lease: the Lease a luagent process holds in each
-- namespace where it has sandbox pods (coordination.k8s.io/v1). Every pod it
-- makes there names the Lease as its owner (luagent.sandbox.k8s_pod), so
-- the cluster's garbage collector deletes the pods once the Lease is gone.
-- The process renews it every RENEW seconds from a background task while it
-- runs and deletes it at a clean exit; a process that dies (kill -9, a lost
-- machine) stops renewing, and the next luagent's sweep deletes a Lease
-- whose renewTime is older than its leaseDurationSeconds (or at once, when
-- its holder is a dead process of this host) — and with it its pods.
-- Each pod's activeDeadlineSeconds bounds what is left when nothing sweeps.
--
--   lease.ensure(client) -> {name, uid} | nil, err    this process's Lease in client's namespace
--   lease.release_all()                                 deletes them (the process's end)
--   lease.stale(client) -> {name, ...}                  Leases of luagent processes that are gone
--   lease.alive(item) -> boolean                        a Lease object is renewed (or its holder lives)
local errors = require "luagent.errors"
local sched = require "luagent.sched"
local sys = require "luagent.sys"
local dates = require "luagent.dates"
local owner = require "luagent.sandbox.owner"
local pod = require "luagent.sandbox.k8s_pod"

local lease = {}

lease.DURATION = 60 -- seconds a Lease is trusted after its last renewal
local RENEW = 20

local held = {} -- "server|namespace" -> {client, name, uid, task}

local function path(client, name)
  return "/apis/coordination.k8s.io/v1/namespaces/" .. client.namespace .. "/leases" .. (name and "/" .. name or "")
end

-- luagent-<host>-<pid>-<start>, as a Kubernetes name (lower case, [a-z0-9-], 63 at most).
local function my_name()
  local labels = owner.labels()
  local host = labels["luagent.owner.host"]:lower():gsub("[^a-z0-9]+", "-"):gsub("^%-+", ""):gsub("%-+$", "")
  local tail = ("-%s-%s"):format(labels["luagent.owner.pid"], labels["luagent.owner.start"])
  return ("luagent-" .. host):sub(1, 63 - #tail):gsub("%-+$", "") .. tail
end

-- A MicroTime, as Lease times are written
local function now_text()
  return os.date("!%Y-%m-%dT%H:%M:%S.000000Z")
end

local function renew(client, name)
  return client:call("PATCH", path(client, name), {spec = {renewTime = now_text()}}, {patch = "merge", timeout = 10})
end

-- Renews every RENEW seconds; a renewal that fails is tried again at the next
-- turn (the Lease holds for DURATION). A background task: the run does not wait for it.
local function keep(h)
  h.task = sched.spawn(function()
    while not h.released do
      sched.sleep(RENEW)
      if not h.released then renew(h.client, h.name) end
    end
  end)
  h.task:background()
end

local function create(client, name)
  local labels = owner.labels()
  local body = pod.lease(name, ("%s pid %s"):format(labels["luagent.owner.host"], labels["luagent.owner.pid"]),
                         lease.DURATION, {["luagent"] = "1", ["luagent.owner.pid"] = labels["luagent.owner.pid"],
                                          ["luagent.owner.start"] = labels["luagent.owner.start"]}, now_text())
  body.metadata.annotations = {[pod.ANNOTATION] = require("luagent.json").encode(labels)}
  local made, err = client:call("POST", path(client), body)
  if made then return made end
  if err.kind ~= "conflict" then return nil, errors.wrap(err, "making this process's Lease " .. name) end
  local found = client:call("GET", path(client, name)) -- ours already (another client of this process)
  if found then renew(client, name) end
  return found, not found and err or nil
end

function lease.ensure(client)
  local key = client.endpoint.server .. "|" .. client.namespace
  local h = held[key]
  if h and not h.released then
    if h.making then h.making:wait() end
    if h.uid then return {name = h.name, uid = h.uid} end
  end
  h = {client = client, name = my_name()}
  held[key] = h
  h.making = sched.spawn(function()
    local made, err = create(client, h.name)
    if made then h.uid = made.metadata.uid else h.err = err end
  end)
  h.making:wait()
  h.making = nil
  if not h.uid then
    held[key] = nil
    return nil, h.err
  end
  keep(h)
  return {name = h.name, uid = h.uid}
end

-- The pods go with it (the garbage collector); only called once they are removed.
function lease.release_all()
  for key, h in pairs(held) do
    h.released = true
    if h.task then h.task:cancel() end
    if h.uid then h.client:call("DELETE", path(h.client, h.name), nil, {timeout = 10}) end
    held[key] = nil
  end
end

function lease.alive(item)
  local labels = pod.labels_of(item.metadata or {})
  if labels["luagent.owner.host"] == sys.hostname() then return owner.alive(labels) end
  local spec = item.spec or {}
  local renewed = dates.parse(spec.renewTime)
  return renewed == nil or os.time() - renewed <= (spec.leaseDurationSeconds or lease.DURATION)
end

function lease.stale(client)
  local list = client:call("GET", path(client), nil, {query = {labelSelector = "luagent=1"}})
  local out = {}
  for _, item in ipairs(list and list.items or {}) do
    if not lease.alive(item) then out[#out + 1] = item.metadata.name end
  end
  return out
end

function lease.delete(client, name)
  return client:call("DELETE", path(client, name), nil, {query = {propagationPolicy = "Background"}})
end

return lease

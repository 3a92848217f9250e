-- luagent.sandbox.spec: sandbox.open's options, checked and made into the
-- one session spec a backend turns into a running session (luagent.sandbox
-- hands it to the backend; the spec's fields are what every backend reads:
-- image, labels, env, user, limits, network, runtime, mounts, staged, restore).
-- Bad options raise naming them ("sandbox.open: memory = ..."), before any
-- engine is asked; so does a host secret in env: API keys never enter a
-- sandbox.
local defaults = require "luagent.sandbox.defaults"
local egress = require "luagent.sandbox.egress"
local errors = require "luagent.errors"
local options = require "luagent.options"
local manifest = require "luagent.manifest"
local network_rules = require "luagent.sandbox.network_rules"
local owner = require "luagent.sandbox.owner"
local secrets = require "luagent.secrets"
local sys = require "luagent.sys"

local spec = {}

local SIZE_UNITS = {[""] = 1, b = 1, k = 1024, m = 1024 ^ 2, g = 1024 ^ 3, t = 1024 ^ 4}

function spec.parse_size(value, field)
  if math.type(value) == "integer" and value > 0 then return value end
  local number, unit = tostring(value):lower():match("^%s*([%d%.]+)%s*([bkmgt]?)b?%s*$")
  local n = tonumber(number)
  if not n or n <= 0 then
    error(("sandbox.open: %s = %q is not a size (use bytes, or e.g. '512m', '2g')"):format(field, tostring(value)), 3)
  end
  return math.floor(n * SIZE_UNITS[unit])
end

-- Raises "sandbox.open: <what is wrong>" at the caller of the function that checks.
local function check(cond, fmt, ...)
  if not cond then error("sandbox.open: " .. fmt:format(...), 3) end
end
spec.check = check

-- Host secrets never enter a sandbox: not through env, staged text, put,
-- stdin, nor a command (every key luagent knows: the environment's, the
-- models', credential-like settings). The recipe's own text raises...
function spec.refuse_secret(text, what, level)
  local name = secrets.find(text)
  if name then
    error(("sandbox: %s carries the value of %s; API keys never enter a sandbox"):format(what, name), level + 1)
  end
end

-- ...text a model wrote (commands, code) gets an error value it can read.
function spec.secret_error(text, what)
  local name = secrets.find(text)
  if not name then return nil end
  return errors.new("refused", ("the %s contains the value of %s, and API keys never enter the sandbox")
    :format(what, name))
end

-- env = {NAME = value} checked: {NAME = "value"} and the sorted "NAME=value" list.
function spec.checked_env(env, what)
  local keys, map, list = {}, {}, {}
  for k in pairs(env or {}) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do
    local v = env[k]
    check(type(k) == "string" and k:match("^[%a_][%w_]*$"), "%s key %s is not a variable name", what, tostring(k))
    check(type(v) == "string" or type(v) == "number" or type(v) == "boolean", "%s.%s must be a string", what, k)
    v = tostring(v)
    spec.refuse_secret(v, what .. "." .. k, 4)
    map[k], list[#list + 1] = v, k .. "=" .. v
  end
  return map, list
end

-- Numerical libraries start a thread per host core, not per CPU the sandbox
-- may use: with cpus = 1 on a many-core host, numpy's BLAS used 2-2.7x the
-- CPU for nothing (bench/SCALE.md). Unless the recipe says otherwise, they
-- get as many threads as the sandbox has CPUs.
local THREAD_VARIABLES = {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"}

local function with_thread_defaults(env, cpus)
  local out = {}
  for k, v in pairs(env or {}) do out[k] = v end
  for _, name in ipairs(THREAD_VARIABLES) do
    if out[name] == nil then out[name] = tostring(math.max(1, math.ceil(cpus))) end
  end
  return out
end

-- The options over sandbox.defaults, checked, with what they imply made
-- (sizes in bytes, compiled network rules, the environment as a list).
function spec.settings(opts)
  local o = {}
  for k, v in pairs(defaults) do o[k] = v end
  for k, v in pairs(opts) do o[k] = v end
  check(type(o.image) == "string" and o.image ~= "", "image must be an image name")
  o.memory_bytes = spec.parse_size(o.memory, "memory")
  o.tmp_bytes = spec.parse_size(o.tmp_size, "tmp_size")
  o.workspace_bytes = o.workspace_size and spec.parse_size(o.workspace_size, "workspace_size") or false
  check(type(o.cpus) == "number" and o.cpus > 0, "cpus must be a positive number (got %s)", tostring(o.cpus))
  check(math.type(o.pids) == "integer" and o.pids > 0, "pids must be a positive integer (got %s)", tostring(o.pids))
  o.network_rules = nil
  if type(o.network) == "table" then
    local rules, why = network_rules.compile(o.network, {parse_size = spec.parse_size})
    check(rules, "%s", why or "network: bad rules")
    o.network_rules, o.network = rules, false -- the container keeps no network: egress goes through luagent
  end
  check(type(o.network) == "boolean", "network must be true, false or a table of rules {allow = {...}}")
  check(type(o.timeout) == "number" and o.timeout > 0, "timeout must be seconds > 0")
  check(type(o.engine_grace) == "number" and o.engine_grace >= 0, "engine_grace must be seconds >= 0")
  check(type(o.capacity_wait) == "number" and o.capacity_wait >= 0, "capacity_wait must be seconds >= 0")
  check(type(o.user) == "string" and o.user:match("^%d+:%d+$"), "user must be 'uid:gid' (got %s)", tostring(o.user))
  check(tonumber(o.user:match("^(%d+)")) ~= 0, "user = %q: commands never run as root (uid 0): the sandbox "
    .. "supervisor runs as root to keep PID 1 out of their reach", o.user)
  check(o.cap_add == nil, "cap_add is not supported: commands run with no capability at all (the supervisor "
    .. "drops them), so added ones would reach only the supervisor")
  check(o.command == nil, "command is not supported: the container's command is the sandbox supervisor "
    .. "(start long-lived processes with box:spawn)")
  check(o.runtime == nil or type(o.runtime) == "string" and o.runtime:match("^[%w][%w._/-]*$"),
    "runtime = %s: name a runtime the Docker engine lists (`luagent doctor` shows them), e.g. \"runsc\" for gVisor",
    tostring(o.runtime))
  check(not o.pool or math.type(o.pool) == "integer" and o.pool >= 0,
    "pool = %s: say how many sessions like this one to keep started (a whole number; 0: none)", tostring(o.pool))
  -- a key no option has is a typo (memroy = "768m" would have opened 512m)
  options.check(opts, "luagent.SandboxPoolOptions", "sandbox.open")
  local env = with_thread_defaults(o.env, o.cpus)
  if o.network_rules then
    for k, v in pairs(o.network_rules:env(egress.wants_bundle(o.network_rules) and egress.CA_BUNDLE or nil)) do
      if env[k] == nil then env[k] = v end
    end
  end
  o.env_list = select(2, spec.checked_env(env, "env"))
  check(o.save == nil or type(o.save) == "table" and type(o.save.from) == "string" and type(o.save.to) == "string"
    and (o.save.required == nil or type(o.save.required) == "table"),
    "save must be {from = a workspace folder, to = a host folder, required = {globs}, mirror = true}")
  if o.save then
    local name, why = manifest.workspace_path(o.save.from, defaults.workdir)
    check(name and name ~= "", "save.from = %q: %s", o.save.from, why or "name a folder of the workspace")
  end
  return o
end

-- The one description of a session a backend turns into a running one.
function spec.session_spec(o, staged)
  local id = sys.random_hex(6)
  local labels = owner.labels(o.save)
  labels["luagent.session"] = id
  for k, v in pairs(o.labels or {}) do labels[k] = tostring(v) end
  return {
    id = id, image = o.image, command = o.command, labels = labels, env = o.env_list,
    user = o.user, uid = tonumber(o.user:match("^(%d+)")), gid = tonumber(o.user:match(":(%d+)$")),
    workdir = o.workdir,
    -- files in /tmp and a tmpfs workspace are charged to the memory cgroup
    limits = {memory = o.memory_bytes + o.tmp_bytes + (o.workspace_bytes or 0), cpus = o.cpus, pids = o.pids},
    network = o.network, writable_root = o.writable_root, runtime = o.runtime,
    mounts = {workspace = {target = defaults.workdir, size = o.workspace_bytes},
              tmp = {target = "/tmp", size = o.tmp_bytes}},
    staged = staged, restore = o.restore,
    max_extract = o.max_extract, max_extract_entries = o.max_extract_entries, engine_grace = o.engine_grace,
    capacity_wait = o.capacity_wait, -- a cluster: how long an unschedulable pod may wait for room
  }
end

return spec

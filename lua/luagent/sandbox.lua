-- luagent.sandbox: locked-down Docker sessions for running an agent's code.
--
--   local sandbox = require "luagent.sandbox"
--   local box <close> = assert(sandbox.open{
--     image = "luagent-sandbox:latest", memory = "512m", cpus = 1, pids = 256,
--     network = false, env = {}, timeout = 120, max_output = 1048576,
--     manifest = {["input/data.csv"] = sandbox.file("data.csv")},
--   })
--   local r = box:exec("python3 -c 'print(1)'")     -- or an argv table; opts {timeout, stdin, env, cwd, max_output}
--   -- r = {stdout, stderr, exit_code, timed_out, oom_killed, truncated, duration, restarted}
--   box:put("notes.txt", "text"); box:get("notes.txt")
--   box:extract("output", "runs/1/output")         -- safe: nothing lands outside the folder
--   box:snapshot("ws.tar"); sandbox.open{restore = "ws.tar"}
--   box:python("import pandas as pd; df = pd.read_csv('input/data.csv')")  -- state persists
--   box:python("len(df)")                          -- {stdout = "8760\n", ...}
--
-- Commands run through a small runner started once per session inside the
-- container (sandbox/runner.py, over one attach connection): a command costs a
-- fork there, not a Docker exec. Images without python3, remote engines, or
-- runner = false use one Docker exec per command instead; results are alike.
--
-- Safe by default: no network; memory capped with swap equal to memory; CPU
-- quota; pids limit; every capability dropped; no-new-privileges; uid 1000;
-- read-only root with a writable /workspace (a per-session volume) and a
-- size-capped /tmp; an init process as PID 1; only the env the recipe passes.
-- Each relaxation is an explicit option (network = true, writable_root = true,
-- cap_add = {...}, user = "0:0").
local engine = require "luagent.engine"
local engine_io = require "luagent.engine_io"
local manifest = require "luagent.manifest"
local json = require "luagent.json"
local sys = require "luagent.sys"
local fs = require "luagent.fs"
local tar = require "luagent.tar"
local loop = require "luagent.loop"
local events = require "luagent.events"

local sandbox = {file = manifest.file, dir = manifest.dir, text = manifest.text}

-- Sessions a recipe forgot to close are closed when the run ends.
local luagent_global = package.loaded["luagent"]
local registered = false

sandbox.IMAGE = "luagent-sandbox:latest"
sandbox.WORKSPACE = "/workspace"

sandbox.defaults = {
  image = sandbox.IMAGE, memory = "512m", cpus = 1, pids = 256, network = false,
  user = "1000:1000", workdir = sandbox.WORKSPACE, tmp_size = "256m",
  timeout = 120, max_output = 1024 * 1024, runner = true,
  -- what extract() and snapshot() may write on the host: a sandbox can make
  -- a terabyte sparse file for free
  max_extract = 2 * 1024 ^ 3, max_extract_entries = 20000,
}

-- Kills every process of one exec: each carries LUAGENT_EXEC=<token> in its
-- environment (children inherit it), so double-forked and setsid'd children
-- are found too. Stopped first, so a fork bomb cannot outrun the kill.
local KILL_SCRIPT = [[
t="LUAGENT_EXEC=$1"
for round in 1 2 3 4 5 6 7 8 9 10; do
  pids=""
  for f in $(grep -lsxzF "$t" /proc/[0-9]*/environ); do p=${f#/proc/}; pids="$pids ${p%/environ}"; done
  [ -z "$pids" ] && exit 0
  kill -STOP $pids 2>/dev/null
  kill -KILL $pids 2>/dev/null
done
exit 1
]]

-- The body of POST /exec/ID/start for an attached, non-tty exec.
local RUN_BODY = '{"Detach":false,"Tty":false}'

local Box = {}
Box.__index = Box

-- ---- the engine, shared by every session of this process ----

local shared = {client = nil, swept = false}

-- The engine client: opts.engine, a fresh one for opts.docker_host, else
-- the process-wide one for DOCKER_HOST (connected once).
function sandbox.engine(opts)
  if opts and opts.engine then return opts.engine end
  if opts and opts.docker_host then return engine.connect({host = opts.docker_host}) end
  if shared.client then return shared.client end
  local client, err = engine.connect()
  if not client then return nil, err end
  shared.client = client
  return client
end

-- ---- ownership labels, leftovers ----

local function owner_labels()
  local pid = sys.pid()
  return {
    ["luagent"] = "1",
    ["luagent.owner.pid"] = tostring(pid),
    ["luagent.owner.start"] = tostring(sys.process_start(pid) or 0),
    ["luagent.owner.host"] = sys.hostname(),
  }
end

-- Is the luagent process that made these labels still running? A sandbox made
-- on another host is assumed alive: we cannot tell.
function sandbox.owner_alive(labels)
  if labels["luagent.owner.host"] ~= sys.hostname() then return true end
  local start = sys.process_start(tonumber(labels["luagent.owner.pid"]) or -1)
  return start ~= nil and tostring(start) == labels["luagent.owner.start"]
end

-- Every luagent sandbox the engine knows: {id, name, session, state, image, created, owner_pid, alive}.
function sandbox.list(client)
  local found, err = client:call("GET", "/containers/json", nil,
    {query = {all = 1, filters = {label = {"luagent=1"}}}})
  if not found then return nil, err end
  local out = {}
  for _, c in ipairs(found) do
    local labels = c.Labels or {}
    out[#out + 1] = {
      id = c.Id, name = (c.Names and c.Names[1] or ""):gsub("^/", ""), session = labels["luagent.session"],
      state = c.State, status = c.Status, image = c.Image, created = c.Created,
      owner_pid = tonumber(labels["luagent.owner.pid"]), alive = sandbox.owner_alive(labels),
    }
  end
  table.sort(out, function(a, b) return (a.created or 0) < (b.created or 0) end)
  return out
end

local function remove_session(client, container, session)
  local ok, err = true, nil
  if container then
    local done, e = client:call("DELETE", "/containers/" .. container, nil, {query = {force = 1, v = 1}})
    if not done and e.kind ~= "not_found" then ok, err = false, e end
  end
  if session then
    local done, e = client:call("DELETE", "/volumes/luagent-" .. session .. "-workspace", nil, {query = {force = 1}})
    if not done and e.kind ~= "not_found" and ok then ok, err = false, e end
  end
  return ok, err
end

-- Removes sandboxes (and their volumes) whose owner is gone; all of them with {all = true}.
function sandbox.prune(client, opts)
  local all = opts and opts.all
  local list, err = sandbox.list(client)
  if not list then return nil, err end
  local removed = {}
  for _, c in ipairs(list) do
    if all or not c.alive then
      if remove_session(client, c.id, c.session) then removed[#removed + 1] = c end
    end
  end
  -- volumes whose container is already gone
  local vols = client:call("GET", "/volumes", nil, {query = {filters = {label = {"luagent=1"}}}})
  for _, v in ipairs(vols and vols.Volumes or {}) do
    if all or not sandbox.owner_alive(v.Labels or {}) then
      client:call("DELETE", "/volumes/" .. v.Name, nil, {query = {force = 1}})
    end
  end
  return removed
end

-- ---- options ----

local SIZE_UNITS = {[""] = 1, b = 1, k = 1024, m = 1024 ^ 2, g = 1024 ^ 3, t = 1024 ^ 4}

function sandbox.parse_size(value, field)
  if math.type(value) == "integer" and value > 0 then return value end
  local number, unit = tostring(value):lower():match("^%s*([%d%.]+)%s*([bkmgt]?)b?%s*$")
  local n = tonumber(number)
  if not n or n <= 0 then
    error(("sandbox.open: %s = %q is not a size (use bytes, or e.g. '512m', '2g')"):format(field, tostring(value)), 3)
  end
  return math.floor(n * SIZE_UNITS[unit])
end

local function check(cond, fmt, ...)
  if not cond then error("sandbox.open: " .. fmt:format(...), 3) end
end

-- Host secrets never enter a sandbox: not through env, staged text, put,
-- stdin, nor a command (every key luagent knows: the environment's, the
-- models', credential-like settings).
local secrets = require "luagent.secrets"

local function refuse_secret(text, what, level)
  local name = secrets.find(text)
  if name then
    error(("sandbox: %s carries the value of %s; API keys never enter a sandbox"):format(what, name), level + 1)
  end
end

-- For text a model wrote (commands, code): an error value it can read.
local function secret_error(text, what)
  local name = secrets.find(text)
  if not name then return nil end
  return {kind = "refused", message = ("refused: the %s contains the value of %s, and API keys never enter the "
    .. "sandbox"):format(what, name)}
end

local function env_list(env, what)
  local list = {}
  local keys = {}
  for k in pairs(env or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local v = env[k]
    check(type(k) == "string" and k:match("^[%a_][%w_]*$"), "%s key %s is not a variable name", what, tostring(k))
    check(type(v) == "string" or type(v) == "number" or type(v) == "boolean", "%s.%s must be a string", what, k)
    v = tostring(v)
    refuse_secret(v, what .. "." .. k, 4)
    list[#list + 1] = k .. "=" .. v
  end
  return list
end

local function settings(opts)
  local o = {}
  for k, v in pairs(sandbox.defaults) do o[k] = v end
  for k, v in pairs(opts) do o[k] = v end
  check(type(o.image) == "string" and o.image ~= "", "image must be an image name")
  o.memory_bytes = sandbox.parse_size(o.memory, "memory")
  o.tmp_bytes = sandbox.parse_size(o.tmp_size, "tmp_size")
  check(type(o.cpus) == "number" and o.cpus > 0, "cpus must be a positive number (got %s)", tostring(o.cpus))
  check(math.type(o.pids) == "integer" and o.pids > 0, "pids must be a positive integer (got %s)", tostring(o.pids))
  check(type(o.network) == "boolean", "network must be true or false")
  check(type(o.timeout) == "number" and o.timeout > 0, "timeout must be seconds > 0")
  o.env_list = env_list(o.env, "env")
  return o
end

local function container_spec(o, labels, volume)
  local host_config = {
    Memory = o.memory_bytes, MemorySwap = o.memory_bytes,
    NanoCpus = math.floor(o.cpus * 1e9), PidsLimit = o.pids,
    NetworkMode = o.network and "bridge" or "none",
    CapDrop = {"ALL"}, CapAdd = o.cap_add,
    SecurityOpt = {"no-new-privileges:true"},
    ReadonlyRootfs = not o.writable_root,
    Tmpfs = {["/tmp"] = ("rw,noexec,nosuid,nodev,size=%d"):format(o.tmp_bytes)},
    Init = true,
    Mounts = {{Type = "volume", Source = volume, Target = sandbox.WORKSPACE}},
  }
  return {
    Image = o.image, Cmd = o.command or {"sleep", "infinity"}, User = o.user, WorkingDir = o.workdir,
    Env = json.array(o.env_list), Labels = labels, Tty = false, OpenStdin = false,
    NetworkDisabled = not o.network, HostConfig = host_config,
  }
end

-- ---- opening ----

local open_boxes = setmetatable({}, {__mode = "v"})

local function explain_create_failure(err, image)
  if err.kind == "not_found" and (err.engine_message or ""):find("image", 1, true) then
    err.message = ("the sandbox image %s is not there: build it with 'luagent sandbox build' (%s)")
      :format(image, err.engine_message)
  end
  return err
end

function sandbox.open(opts)
  opts = opts or {}
  check(type(opts) == "table", "expects a table of options")
  local o = settings(opts)
  local entries, err = manifest.entries(opts.manifest)
  if not entries then return nil, err end
  for _, e in ipairs(entries) do
    if e.data then refuse_secret(e.data, "manifest entry '" .. e.name .. "'", 2) end
  end
  if opts.restore and not fs.exists(opts.restore) then
    return nil, {kind = "not_found", message = "sandbox.open: restore file " .. opts.restore .. " does not exist"}
  end
  local client
  client, err = sandbox.engine(opts)
  if not client then return nil, err end
  if not shared.swept then -- leftovers of crashed runs go before we add ours
    shared.swept = true
    sandbox.prune(client)
  end
  local session = sys.random_hex(6)
  local labels = owner_labels()
  labels["luagent.session"] = session
  for k, v in pairs(o.labels or {}) do labels[k] = tostring(v) end
  local volume = "luagent-" .. session .. "-workspace"
  local box = setmetatable({
    session = session, client = client, image = o.image, workdir = o.workdir, volume = volume, memory = o.memory,
    timeout = o.timeout, max_output = o.max_output, user = o.user, max_extract = o.max_extract,
    max_extract_entries = o.max_extract_entries, save = o.save,
    uid = tonumber(o.user:match("^(%d+)")) or 0, gid = tonumber(o.user:match(":(%d+)$")) or 0,
    oom_seen = 0, closed = false, next_id = 0, use_runner = o.runner and client.endpoint.unix_socket ~= nil,
    kernel_token = sys.random_hex(8),
  }, Box)
  local created
  local volume_spec = {Name = volume, Labels = labels}
  if o.workspace_size then
    volume_spec.DriverOpts = {type = "tmpfs", device = "tmpfs",
      o = ("size=%d,uid=%d,gid=%d"):format(sandbox.parse_size(o.workspace_size, "workspace_size"), box.uid, box.gid)}
  end
  created, err = client:call("POST", "/volumes/create", volume_spec)
  if created then
    created, err = client:call("POST", "/containers/create", container_spec(o, labels, volume),
      {query = {name = "luagent-" .. session}})
  end
  if not created then
    remove_session(client, nil, session)
    return nil, explain_create_failure(err, o.image)
  end
  box.container = created.Id
  open_boxes[session] = box
  if not registered and luagent_global then
    registered = true
    luagent_global.at_exit(sandbox.close_all)
  end
  local ok
  ok, err = client:call("POST", "/containers/" .. box.container .. "/start")
  if ok and #entries > 0 then ok, err = box:_put_entries(entries) end
  if ok and opts.restore then ok, err = box:_restore(opts.restore) end
  if not ok then
    box:close()
    return nil, err
  end
  events.emit({type = "sandbox_open", session = session, image = o.image, memory = o.memory, cpus = o.cpus,
               pids = o.pids, network = o.network, staged = #entries})
  return box
end

-- Closes every session still open (the run is ending).
function sandbox.close_all()
  for _, box in pairs(open_boxes) do box:close() end
end

-- ---- a session ----

function Box:__tostring()
  return ("sandbox %s (%s%s)"):format(self.session, self.image, self.closed and ", closed" or "")
end

local function check_open(self)
  if self.closed then error("this sandbox session is closed", 3) end
end

function Box:_archive_options(path, extra)
  return self.client:options("/containers/" .. self.container .. "/archive" .. engine.query_string({path = path}), extra)
end

function Box:_put_entries(entries)
  local ok, err = engine_io.put_archive(self:_archive_options(sandbox.WORKSPACE,
    {entries = entries, uid = self.uid, gid = self.gid, timeout = 3600}))
  if not ok then err.message = "staging into the sandbox failed: " .. err.message end
  return ok, err
end

local function workspace_name(path)
  local name, why = manifest.workspace_path(path, sandbox.WORKSPACE)
  if not name then error(("sandbox: %s: %s"):format(path, why), 3) end
  return name
end

-- box:put(path, data [, {mode}]) -> true | nil, err
function Box:put(path, data, opts)
  check_open(self)
  local name = workspace_name(path)
  assert(type(data) == "string", "box:put(path, data): data must be a string")
  refuse_secret(data, "box:put " .. path, 2)
  return self:_put_entries({{name = name, data = data, mode = opts and opts.mode}})
end

local function full_path(name)
  return name == "" and sandbox.WORKSPACE or sandbox.WORKSPACE .. "/" .. name
end

-- box:get(path [, {max_bytes}]) -> content | nil, err
function Box:get(path, opts)
  check_open(self)
  local name = workspace_name(path)
  local content, err = engine_io.read_file(self:_archive_options(full_path(name),
    {max_bytes = opts and opts.max_bytes or 64 * 1024 * 1024, timeout = 600}))
  if not content and err.kind == "not_found" then err.message = "no such file in the workspace: " .. name end
  return content, err
end

-- box:extract(workspace_path, host_dir [, {max_bytes, max_entries}]) -> {files, refused, bytes} | nil, err
-- Entries over the limits (sandbox.open's max_extract, max_extract_entries)
-- are refused and reported, like links that would leave host_dir.
function Box:extract(path, host_dir, opts)
  check_open(self)
  opts = opts or {}
  local name = workspace_name(path)
  local strip = name == "" and "workspace" or name:match("([^/]+)$")
  local report, err = engine_io.get_archive(self:_archive_options(full_path(name),
    {dest = host_dir, strip = strip, timeout = 3600, max_bytes = opts.max_bytes or self.max_extract,
     max_entries = opts.max_entries or self.max_extract_entries}))
  if not report and err.kind == "not_found" then err.message = "no such path in the workspace: " .. name end
  return report, err
end

-- box:snapshot(host_tar) -> bytes | nil, err   the whole workspace as a tar
function Box:snapshot(host_tar)
  check_open(self)
  return engine_io.save_archive(self:_archive_options(sandbox.WORKSPACE,
    {path = host_tar, timeout = 3600, max_bytes = self.max_extract}))
end

-- Restores a snapshot: extracted safely on the host first (refusing what
-- could escape), then staged like a folder.
function Box:_restore(host_tar)
  local dir, err = fs.temp_dir("luagent-restore")
  if not dir then return nil, err end
  local report
  report, err = tar.extract(host_tar, dir, {strip = "workspace", max_bytes = self.max_extract,
                                            max_entries = self.max_extract_entries})
  local ok = report ~= nil
  if ok then
    self.restored = report
    local entries = {}
    for _, e in ipairs(fs.walk(dir) or {}) do
      local full = dir .. "/" .. e.path
      if e.type == "directory" then entries[#entries + 1] = {name = e.path, dir = true}
      elseif e.type == "file" then entries[#entries + 1] = {name = e.path, file = full}
      end
    end
    if #entries > 0 then ok, err = self:_put_entries(entries) end
  end
  fs.remove(dir)
  return ok, err
end

-- ---- exec ----

-- A short command the session runs for itself (kill, OOM check): argv, no
-- stdin, output capped small. Returns exit_code, stdout or nil, err.
function Box:_internal(argv, timeout)
  local created, err = self.client:call("POST", "/containers/" .. self.container .. "/exec", {
    AttachStdout = true, AttachStderr = true, Tty = false, Cmd = argv,
  })
  if not created then return nil, err end
  local stream = engine_io.exec_start(self.client:options("/exec/" .. created.Id .. "/start",
    {body = RUN_BODY, max_output = 65536}))
  if not stream:wait(timeout or 10) then
    stream:abort()
    return nil, {kind = "timeout", message = "internal command timed out"}
  end
  local out
  out, err = stream:result()
  if not out then return nil, err end
  local info = self.client:call("GET", "/exec/" .. created.Id .. "/json")
  return info and info.ExitCode or nil, out.stdout .. out.stderr
end

-- Restarts the container: kills every process in it; the workspace volume stays.
function Box:_restart()
  local ok, err = self.client:call("POST", "/containers/" .. self.container .. "/restart", nil, {query = {t = 0}})
  self.python_lost = true
  if ok then
    local counter = self:_oom_counter()
    self.oom_seen = counter or 0
  end
  return ok, err
end

-- The kernel's count of OOM kills in the session's memory cgroup.
function Box:_oom_counter()
  local code, out = self:_internal({"/bin/sh", "-c",
    "cat /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null || cat /sys/fs/cgroup/memory.events"})
  if code ~= 0 or not out then return nil end
  return tonumber(out:match("oom_kill (%d+)"))
end

-- Stops a timed-out exec: kill its process tree; if that cannot be done (the
-- pids cap is exhausted) or its output stays open, restart the container.
-- Returns true when it had to restart.
function Box:_stop_exec(token, stream)
  local code = self:_internal({"/bin/sh", "-c", KILL_SCRIPT, "luagent-kill", token}, 10)
  if code == 0 and stream:wait(3) then return false end
  stream:abort()
  self:_restart()
  return true
end

local function is_not_running(err)
  return err.kind == "conflict" and (err.engine_message or ""):find("not running", 1, true)
end

local function exec_argv(cmd)
  if type(cmd) == "string" then return {"/bin/sh", "-c", cmd} end
  if type(cmd) == "table" and #cmd > 0 then
    local argv = {}
    for i, a in ipairs(cmd) do argv[i] = tostring(a) end
    return argv
  end
  error("box:exec(cmd): cmd must be a string (run by sh -c) or an argv table", 3)
end

-- The session's runner channel, started on first use (once, even when
-- several tasks ask at the same time). nil when this session runs without one.
function Box:_channel()
  if not self.use_runner then return nil end
  if self.channel and self.channel:alive() then return self.channel end
  if not self.channel_starting then
    self.channel_starting = loop.spawn(function()
      local created, err = self.client:call("POST", "/containers/" .. self.container .. "/exec", {
        AttachStdin = true, AttachStdout = true, AttachStderr = true, Tty = false,
        Cmd = {"python3", "-c", sys.asset("sandbox/runner.py")},
      })
      local ch
      if created then
        ch, err = engine_io.runner{unix_socket = self.client.endpoint.unix_socket,
          path = "/v" .. self.client.version .. "/exec/" .. created.Id .. "/start", body = RUN_BODY}
      end
      if not ch then
        self.use_runner = false -- e.g. no python3 in the image: one Docker exec per command
        self.runner_error = err
      end
      -- a runner started after another one died has a fresh interpreter
      if self.channel then self.python_lost = true end
      self.channel = ch
    end)
  end
  local starting = self.channel_starting
  starting:wait()
  if self.channel_starting == starting then self.channel_starting = nil end
  return self.channel
end

local function new_id(self)
  self.next_id = self.next_id + 1
  return self.next_id
end

-- Sends one message to the runner and waits for command `id` to end, killing
-- it when `timeout` passes. Returns the channel result and how it ended.
function Box:_runner_call(ch, id, message, payload, timeout, max_output)
  local ok, err = ch:send(id, json.encode(message) .. "\n" .. (payload or ""), max_output)
  if not ok then return nil, err end
  local finished
  finished, err = ch:wait(id, timeout)
  if finished == nil then return nil, err end
  local timed_out, restarted = not finished, false
  if timed_out then
    ch:send(0, json.encode({op = "kill", id = id}) .. "\n")
    if not ch:wait(id, 5) then
      -- the runner cannot stop it (or is stuck): restart the container
      restarted = true
      self:_restart()
    end
  end
  return ch:result(id), nil, timed_out, restarted
end

local function runner_result(r, started, timed_out, restarted)
  local flags = r.flags or ""
  local stderr = r.stderr
  if r.failure then stderr = r.failure .. "\n" .. stderr end
  return {
    stdout = r.stdout, stderr = stderr, exit_code = r.exit_code or 137,
    timed_out = timed_out, oom_killed = flags:find("o", 1, true) ~= nil, truncated = r.truncated,
    duration = loop.now() - started, stdout_bytes = r.stdout_bytes, stderr_bytes = r.stderr_bytes,
    restarted = restarted, state_lost = flags:find("r", 1, true) ~= nil,
  }
end

function Box:_exec_runner(ch, argv, opts, started)
  local env = {}
  for k, v in pairs(opts.env or {}) do env[k] = tostring(v) end
  local id = new_id(self)
  local r, err, timed_out, restarted = self:_runner_call(ch, id,
    {op = "run", id = id, argv = argv, env = env, cwd = opts.cwd or self.workdir,
     token = sys.random_hex(8), size = opts.stdin and #opts.stdin or 0},
    opts.stdin, opts.timeout or self.timeout, opts.max_output or self.max_output)
  if not r then return nil, err end
  return runner_result(r, started, timed_out, restarted)
end

local function command_text(cmd)
  local text = type(cmd) == "table" and table.concat(cmd, " ") or tostring(cmd)
  return #text > 300 and text:sub(1, 297) .. "..." or text
end

local function emit_exec(self, kind, what, result, err)
  events.emit({type = "sandbox_exec", session = self.session, kind = kind, command = command_text(what),
               exit_code = result and result.exit_code, duration = result and result.duration,
               timed_out = result and result.timed_out, oom_killed = result and result.oom_killed,
               truncated = result and result.truncated, stdout_bytes = result and result.stdout_bytes,
               stderr_bytes = result and result.stderr_bytes, error = err and err.message})
  return result, err
end

-- box:exec(cmd [, {timeout, stdin, env, cwd, max_output}]) -> result | nil, err
--   result = {stdout, stderr, exit_code, timed_out, oom_killed, truncated, duration,
--             stdout_bytes, stderr_bytes, restarted}
function Box:exec(cmd, opts)
  return emit_exec(self, "exec", cmd, self:_exec(cmd, opts))
end

function Box:_exec(cmd, opts)
  check_open(self)
  opts = opts or {}
  local argv = exec_argv(cmd)
  env_list(opts.env, "exec env") -- refuses host secrets
  local refused = secret_error(table.concat(argv, " "), "command") or secret_error(opts.stdin, "input")
  if refused then return nil, refused end
  local started = loop.now()
  local ch = self:_channel()
  if ch then
    local result, err = self:_exec_runner(ch, argv, opts, started)
    if result or err.kind ~= "runner" then return result, err end
    -- the runner died under this command: it will be restarted for the next one
    return nil, err
  end
  return self:_exec_docker(argv, opts, started)
end

-- box:python(code [, {timeout, max_output}]) -> result | nil, err
-- Runs code in the session's persistent interpreter: variables and imports
-- stay for the next call; the value of a final expression is printed.
-- result: like exec's (exit_code 0, or 1 after an exception, whose traceback
-- is in stderr), plus state_lost = true when an earlier call was killed
-- (timeout, OOM) and this one started from a fresh interpreter.
function Box:python(code, opts)
  -- one call at a time: each waits for the one before, so its timeout counts
  -- only its own running time
  local before = self.python_last
  local this = loop.spawn(function()
    if before then before:wait() end
    return self:_python(code, opts)
  end)
  self.python_last = this
  return emit_exec(self, "python", code, this:wait())
end

function Box:_python(code, opts)
  check_open(self)
  assert(type(code) == "string", "box:python(code): code must be a string")
  local refused = secret_error(code, "code")
  if refused then return nil, refused end
  opts = opts or {}
  local started = loop.now()
  local ch = self:_channel()
  if not ch then
    -- no runner: each call is a fresh interpreter
    local result, err = self:_exec_docker({"python3", "-c", code}, opts, started)
    if result then result.persistent = false end
    return result, err
  end
  local id = new_id(self)
  local r, err, timed_out, restarted = self:_runner_call(ch, id,
    {op = "python", id = id, token = self.kernel_token, size = #code},
    code, opts.timeout or self.timeout, opts.max_output or self.max_output)
  if not r then return nil, err end
  local result = runner_result(r, started, timed_out, restarted)
  result.persistent = true
  if self.python_lost then
    result.state_lost, self.python_lost = true, false
  end
  if restarted then self.python_lost = true end -- the container restart took the interpreter with it
  return result
end

-- One Docker exec per command: for images without python3 and remote engines.
function Box:_exec_docker(argv, opts, started)
  if opts.stdin then
    local name = ".luagent/stdin-" .. sys.random_hex(6)
    local ok, err = self:put(name, opts.stdin)
    if not ok then return nil, err end
    argv = {"/bin/sh", "-c", 'f=$1; shift; exec 0<"$f"; rm -f "$f"; exec "$@"', "luagent-stdin",
            sandbox.WORKSPACE .. "/" .. name, table.unpack(argv)}
  end
  local token = sys.random_hex(8)
  local env = env_list(opts.env, "exec env")
  table.insert(env, 1, "LUAGENT_EXEC=" .. token)
  local spec = {AttachStdout = true, AttachStderr = true, Tty = false, Cmd = argv, Env = env,
                WorkingDir = opts.cwd or self.workdir}
  local created, err = self.client:call("POST", "/containers/" .. self.container .. "/exec", spec)
  if not created and is_not_running(err) then
    -- the container died (its init was killed): bring it back once
    local restarted = self:_restart()
    if restarted then created, err = self.client:call("POST", "/containers/" .. self.container .. "/exec", spec) end
  end
  if not created then return nil, err end
  local stream = engine_io.exec_start(self.client:options("/exec/" .. created.Id .. "/start",
    {body = RUN_BODY, max_output = opts.max_output or self.max_output}))
  local timeout = opts.timeout or self.timeout
  local timed_out, restarted = false, false
  if not stream:wait(timeout) then
    timed_out = true
    restarted = self:_stop_exec(token, stream)
  end
  local out
  out, err = stream:result()
  if not out then return nil, err end
  local info = self.client:call("GET", "/exec/" .. created.Id .. "/json")
  local exit_code = info and info.ExitCode
  if type(exit_code) ~= "number" then exit_code = timed_out and 137 or -1 end
  local oom_killed = false
  if exit_code == 137 and not timed_out then
    local counter = self:_oom_counter()
    oom_killed = counter ~= nil and counter > self.oom_seen
    if counter then self.oom_seen = counter end
  end
  return {
    stdout = out.stdout, stderr = out.stderr, exit_code = exit_code,
    timed_out = timed_out, oom_killed = oom_killed, truncated = out.truncated,
    duration = loop.now() - started, stdout_bytes = out.stdout_bytes, stderr_bytes = out.stderr_bytes,
    restarted = restarted,
  }
end

-- ---- closing ----

-- box:close() -> true | nil, err   removes the container and its workspace volume
-- With sandbox.open{save = {from = "output", to = dir, required = {...}}} the
-- results are brought home here if the recipe did not do it itself, so an
-- error or Ctrl-C does not lose what the agent already produced. A removal
-- that fails is kept for close_all to retry, and said on the terminal.
function Box:close()
  if self.closed and not self.close_error then return true end
  if not self.closed then
    if self.save and not self.saved then
      local ok, err = pcall(require("luagent.outputs").collect, self, self.save.from, self.save.to,
                            {required = self.save.required})
      if not ok then io.stderr:write("luagent: could not save the sandbox's outputs: ", tostring(err), "\n") end
    end
    self.closed = true
    if self.channel then self.channel:close() end
  end
  local ok, err = remove_session(self.client, self.container, self.session)
  self.close_error = not ok and err or nil
  if ok then open_boxes[self.session] = nil end
  events.emit({type = "sandbox_close", session = self.session, error = err and err.message})
  return ok, err
end

Box.__close = Box.close
Box.__gc = Box.close

return sandbox

-- luagent.sandbox: locked-down sessions for running an agent's code.
--
-- sandbox.open{...} -> box, the box's methods (exec, python, spawn, put, get,
-- extract, snapshot, fork, close), sandbox.pool{...}: the options and results are in
-- lua/meta/sandbox.lua; `luagent help sandboxes` says what they do.
--
-- This module is the part recipes see: it checks options, builds one session
-- spec and hands it to a backend (luagent.sandbox.docker_backend on a Docker engine,
-- luagent.sandbox.k8s_backend on a Kubernetes cluster:
-- luagent.sandbox.engine_set picks which of the `engines`), and checks the
-- arguments of the box's methods. Leftovers of crashed runs:
-- luagent.sandbox.leftovers. Warm pools: luagent.sandbox.pool.
-- A box opened with save = {from, to, required} mirrors its outputs home
-- after every command (luagent.sandbox.mirror; save.mirror = false: not).
--
-- Safe by default: no network; memory capped with swap equal to memory; CPU
-- quota; pids limit; no-new-privileges; read-only root with a writable
-- /workspace (a per-session tmpfs volume of workspace_size: a writer gets
-- ENOSPC) and a size-capped /tmp; only the env the recipe passes. The sandbox
-- supervisor (sandbox/supervisor/DESIGN.md) is PID 1 and runs every command
-- as uid 1000 (user) with no capability, each under its own subreaper: what a
-- command starts is killed (and counted) when it ends or times out, and
-- nothing it does can signal, trace or replace PID 1 or the supervisor.
-- Relaxations are explicit options (network = true, writable_root = true,
-- workspace_size = false: an uncapped disk volume); what would hand the
-- supervisor's powers to commands (a root user, cap_add) is refused.
--
-- Memory: files in /tmp and in a tmpfs workspace live in RAM and are charged
-- to the sandbox's memory cgroup, so its limit is memory + tmp_size +
-- workspace_size: commands get `memory`, and a writer filling the workspace
-- or /tmp gets ENOSPC, not an OOM kill (commands may use the part of the
-- workspace and /tmp that files do not).
--
-- Errors: bad options and bad arguments raise, naming them, and so does a
-- host secret passed in env, staged text or put; every other failure is
-- `nil, err` (a luagent.errors value), e.g. kind "closed" for a box that was
-- closed, "refused" for a command or code carrying a host secret.
local manifest = require "luagent.manifest"
local errors = require "luagent.errors"
local options = require "luagent.options"
local fs = require "luagent.fs"
local events = require "luagent.events"
local sched = require "luagent.sched"
local context = require "luagent.context"
local leftovers = require "luagent.sandbox.leftovers"
local pools = require "luagent.sandbox.pool"
local mirrors = require "luagent.sandbox.mirror"
local engines = require "luagent.sandbox.engine_set"
local owner = require "luagent.sandbox.owner"
local defaults = require "luagent.sandbox.defaults"
local excerpt = require("luagent.text").excerpt
local size_text = require("luagent.text").size
local handle = require "luagent.handle"
local command = require "luagent.sandbox.command"
local egress = require "luagent.sandbox.egress"
local forks = require "luagent.sandbox.fork"
local specs = require "luagent.sandbox.spec"

local sandbox = {file = manifest.file, dir = manifest.dir, text = manifest.text}

sandbox.IMAGE = defaults.image
sandbox.WORKSPACE = defaults.workdir

-- what every open starts from (a recipe may change them: the same table
-- the leftovers' rescue reads)
sandbox.defaults = defaults

-- sandbox.engine([{engine, docker_host, engines}]) -> client | nil, err
-- The first engine that answers of those sessions are made on.
function sandbox.engine(opts)
  opts = opts or {}
  local set, err = engines.set({engine = opts.engine, docker_host = opts.docker_host,
                                engines = opts.engines or sandbox.defaults.engines}, "sandbox.engine")
  if not set then return nil, err end
  return engines.client(set)
end
sandbox.owner_alive = owner.alive
sandbox.list = leftovers.list
sandbox.prune = leftovers.prune

local Box = {}
Box.__index = Box

local refuse_secret, secret_error, checked_env = specs.refuse_secret, specs.secret_error, specs.checked_env
local settings, session_spec, check = specs.settings, specs.session_spec, specs.check
sandbox.parse_size = specs.parse_size

-- ---- opening and closing ----

-- Every open box, held until it is closed: a box the recipe forgot is
-- removed when the run that opened it ends (luagent.run: an exit hook of
-- that run), never from a finalizer; what is still open when the process's
-- own run ends is removed then (close_all). run -> {session -> box}
local open_boxes = {}
local hooked = false

-- What is still open when the process's own run ends is closed then.
local function hook_default()
  local default = context.default()
  if not hooked and default then
    hooked = true
    default:at_exit(sandbox.close_all)
  end
end

local function close_boxes(r)
  for _, box in pairs(open_boxes[r] or {}) do box:close() end
  if open_boxes[r] and next(open_boxes[r]) == nil then open_boxes[r] = nil end
end

local function remember(box)
  local r, default = context.current(), context.default()
  hook_default()
  if not open_boxes[r] then
    open_boxes[r] = {}
    if r ~= default then r:at_exit(function() close_boxes(r) end) end
  end
  open_boxes[r][box.session] = box
  box._open_boxes = open_boxes[r]
end

-- The spec a pool keeps: without the labels of this open's save spec (its
-- run and folders), which are each open's own — a pooled session is
-- started before they are known, so it never carries them (its outputs come
-- home through the mirror, never a rescue).
local OPEN_LABELS = {}
for _, label in pairs(owner.LABELS) do OPEN_LABELS[label] = true end
local function pool_spec(spec)
  local copy, labels = {}, {}
  for k, v in pairs(spec) do copy[k] = v end
  for k, v in pairs(spec.labels) do
    if not OPEN_LABELS[k] then labels[k] = v end
  end
  copy.labels = labels
  return copy
end

-- A session from a warm pool of this spec, or nil. open{pool = N} makes
-- that pool when there is none yet (this open starts cold, and the pool
-- lives until the process ends). The pool key is computed once per open.
local function from_pool(set, o, spec)
  spec = pool_spec(spec)
  local key = pools.key(set, spec)
  local session = pools.take(key)
  if session or not o.pool or o.pool == 0 or pools.has(key) then return session end
  hook_default() -- drained by close_all
  local made, err = pools.new{set = set, spec = spec, size = o.pool, key = key,
                              option = "sandbox.open: pool"}
  if not made then return nil, err end
  return nil
end

-- network = true: said once per process, because the sandbox then has the
-- engine's whole network (rules are the way to give it some of it).
local warned_network = false
local function warn_network_once()
  if warned_network then return end
  warned_network = true
  io.stderr:write("luagent: warning: network = true gives the sandbox the Docker engine's whole network; "
    .. "network = {allow = {...}} gives it only what the rules allow (luagent help network)\n")
end

-- What the manifest stages must fit the workspace: said before any session
-- opens (the engine would say "no space left on device" half way), naming
-- the setting to raise.
local function check_staged_size(o, staged)
  if not o.workspace_bytes then return true end
  local total, sizes = manifest.size(staged)
  if total <= o.workspace_bytes then return true end
  local largest = {}
  for i = 1, math.min(3, #sizes) do largest[i] = ("%s %s"):format(sizes[i].name, size_text(sizes[i].bytes)) end
  local need = math.ceil(total * 1.25 / 1024 ^ 3 * 10) / 10
  return errors.fail("too_large", ("sandbox.open: the manifest stages %s (%s) but the workspace holds %s "
    .. "(workspace_size = %s); raise workspace_size (e.g. workspace_size = \"%sg\", which the sandbox's memory "
    .. "limit then includes), or workspace_size = false for an uncapped disk workspace"):format(size_text(total),
    table.concat(largest, ", "), size_text(o.workspace_bytes), tostring(o.workspace_size), need),
    {staged_bytes = total, workspace_bytes = o.workspace_bytes})
end

-- sandbox.open(opts) -> box | nil, err
function sandbox.open(opts)
  opts = opts or {}
  check(type(opts) == "table", "expects a table of options")
  local o = settings(opts)
  local staged, err = manifest.entries(opts.manifest)
  if not staged then return nil, err end
  local fits
  fits, err = check_staged_size(o, staged)
  if not fits then return nil, err end
  for _, e in ipairs(staged) do
    if e.data then refuse_secret(e.data, "manifest entry '" .. e.name .. "'", 2) end
  end
  local spec = session_spec(o, staged)
  if o.network == true then warn_network_once() end
  if o.restore and not fs.exists(o.restore) then
    return errors.fail("not_found", "sandbox.open: restore file " .. o.restore .. " does not exist", {path = o.restore})
  end
  local opened_at = sched.now()
  local set
  set, err = engines.set(o, "sandbox.open")
  if not set then return nil, err end
  engines.sweep(set)
  local session
  session, err = from_pool(set, o, spec)
  if err then return nil, err end
  local pooled = session ~= nil
  if not session then
    session, err = engines.create(set, spec, {wait = o.capacity_wait})
    if not session then return nil, err end
  end
  local box = setmetatable({
    session = session.id, image = o.image, memory = o.memory, timeout = o.timeout, max_output = o.max_output,
    workdir = o.workdir, user = o.user, max_extract = o.max_extract, max_extract_entries = o.max_extract_entries,
    save = o.save, container = session.container, volume = session.volume, _session = session,
    pooled = pooled, engine = session.engine, _open_options = opts,
  }, Box)
  -- born closed (luagent.handle): until it is built, every way out of this
  -- function removes its session, and its methods refuse it
  local building <close> = handle.building(box)
  remember(box) -- before it starts: a start interrupted before the guard's close is cleaned up too
  local ok
  if pooled then ok, err = session:stage(spec.staged, spec.restore) else ok, err = session:start() end
  if not ok then
    engines.lost(session, err) -- an engine that went away gets no new session for a while
    return nil, err
  end
  box.started, box.restored = true, session.restored
  if o.network_rules then
    box.egress, err = egress.start(session, o.network_rules)
    if not box.egress then return nil, err end
  end
  if o.save and o.save.mirror ~= false then
    box.mirror = mirrors.new{session = session, box = box, from = manifest.workspace_path(o.save.from, sandbox.WORKSPACE),
                             to = o.save.to, max_bytes = o.max_extract, max_entries = o.max_extract_entries}
  end
  events.emit({type = "sandbox_open", session = session.id, image = o.image, memory = o.memory, cpus = o.cpus,
               pids = o.pids, network = o.network_rules and o.network_rules:describe() or o.network, staged = #staged,
               pooled = pooled or nil, engine = session.engine, open_s = sched.now() - opened_at,
               queued_s = session.queued_s})
  return building:built()
end

local POOL_OPTIONS = {size = true, image = true, memory = true, cpus = true, pids = true, network = true,
  user = true, workdir = true, tmp_size = true, workspace_size = true, timeout = true, max_output = true,
  max_extract = true, max_extract_entries = true, env = true, labels = true, writable_root = true, engine = true,
  docker_host = true, engines = true, runtime = true,
  manifest = true, restore = true, save = true, command = true, cap_add = true}

-- sandbox.pool{size = N, ...sandbox.open's options} -> pool | nil, err
-- Keeps N started, never-used sessions of the spec these options make;
-- sandbox.open with options that make the same spec takes one (manifest,
-- restore, save, timeout and max_output are each open's own and do not
-- matter). Returns once all N are up; the pool is drained when the run that
-- made it ends, or by pool:close() / <close>.
function sandbox.pool(opts)
  if type(opts) ~= "table" then error("sandbox.pool: expects a table of options {size = N, ...sandbox.open's}", 2) end
  local names = {}
  for k in pairs(POOL_OPTIONS) do names[#names + 1] = k end
  table.sort(names)
  for k in pairs(opts) do
    if not POOL_OPTIONS[k] then
      error(("sandbox.pool: unknown option '%s' (the options are %s)"):format(tostring(k), table.concat(names, ", ")), 2)
    end
  end
  if math.type(opts.size) ~= "integer" or opts.size < 1 then
    error(("sandbox.pool: size = %s: say how many sessions to keep started (a whole number, 1 or more)")
      :format(tostring(opts.size)), 2)
  end
  local ok, o = pcall(settings, opts)
  if not ok then error((tostring(o):gsub("sandbox%.open: ", "sandbox.pool: ", 1)), 2) end
  local set, err = engines.set(o, "sandbox.pool")
  if not set then return nil, err end
  engines.sweep(set)
  hook_default() -- close_all drains every pool, even one interrupted while it starts
  local warm
  warm, err = pools.new{set = set, spec = pool_spec(session_spec(o, {})), size = opts.size,
                        option = "sandbox.pool: size", wait = true}
  if not warm then return nil, err end
  context.current():at_exit(function() warm:close() end)
  return warm
end

-- Closes every box still open, of every run, and drains every warm pool.
function sandbox.close_all()
  local runs = {}
  for r in pairs(open_boxes) do runs[#runs + 1] = r end
  for _, r in ipairs(runs) do close_boxes(r) end
  pools.drain_all()
  if package.loaded["luagent.sandbox.k8s_lease"] then require("luagent.sandbox.k8s_lease").release_all() end
end

function Box:__tostring()
  return ("sandbox %s (%s%s)"):format(self.session, self.image, self.closed and ", closed" or "")
end

-- box:close() -> true | nil, err   removes the container and its workspace volume
-- With sandbox.open{save = {from = "output", to = dir, required = {...}}} the
-- results are brought home here if the recipe did not do it itself, so an
-- error or Ctrl-C does not lose what the agent already produced (and what
-- the mirror copied counts when the sandbox cannot be read). A removal
-- that fails is kept for close_all to retry, and said on the terminal. A
-- box that was never built (born closed: its start failed) only has its
-- session removed: it made nothing, and its error is the one said.
-- Said now, or, when the box closes because the recipe failed (its <close>
-- got the error), at the run's end: after the error that caused it.
local function say(line, after_error)
  if not after_error then return io.stderr:write(line, "\n") end
  context.current():at_exit(function() io.stderr:write(line, "\n") end)
end

-- The outputs brought home on close (sandbox.open's save); what failed said.
local function save_on_close(self, after_error)
  local ok, report, err = pcall(require("luagent.outputs").collect, self, self.save.from, self.save.to,
                                {required = self.save.required, quiet = after_error or nil})
  if not (ok and report) then
    say("luagent: could not save the sandbox's outputs: " .. tostring(ok and err or report), after_error)
  elseif after_error and report.error then
    say(("luagent: after that error, the outputs in %s were not all saved (%s); %s lists what was saved")
      :format(self.save.from, report.error, require("luagent.outputs").manifest_path(self.save.to)), after_error)
  end
end

function Box:close(after_error)
  if self.removed then return true end
  if not self.closed then
    if self.save and not self.saved then save_on_close(self, after_error ~= nil) end
    self.closed = true
  end
  if self.mirror then self.mirror:close() end
  if self.egress then self.egress:close() end
  local ok, err = self._session:remove()
  local said = self.close_error and err and self.close_error.message == err.message -- close_all's try again
  self.close_error = err
  if ok then
    self.removed = true
    self._open_boxes[self.session] = nil
  end
  if self.started and not said then
    events.emit({type = "sandbox_close", session = self.session, error = err and err.message})
  end
  if not ok then return nil, err end
  return true
end

Box.__close = Box.close

-- ---- a session's methods ----

local function closed(self)
  if self.closed then return errors.new("closed", ("the sandbox session %s is closed"):format(self.session)) end
end

local function workspace_name(path, level)
  if type(path) ~= "string" then error("sandbox: path must be a string", level + 1) end
  local name, why = manifest.workspace_path(path, sandbox.WORKSPACE)
  if not name then error(("sandbox: %s: %s"):format(path, why), level + 1) end
  return name
end

local function exec_argv(cmd, method)
  if type(cmd) == "string" then return {"/bin/sh", "-c", cmd} end
  if type(cmd) == "table" and #cmd > 0 then
    local argv = {}
    for i, a in ipairs(cmd) do argv[i] = tostring(a) end
    return argv
  end
  error(("box:%s(cmd): cmd must be a string (run by sh -c) or an argv table"):format(method), 3)
end

-- opts.stdin: the command's input, a string; box:spawn also takes true (an
-- open stdin, written with proc:write). A wrong type is the caller's mistake.
local function checked_stdin(stdin, method)
  if stdin == nil or type(stdin) == "string" or (stdin == true and method == "spawn") then return stdin end
  local given = type(stdin) == "boolean" and tostring(stdin) or "a " .. type(stdin)
  local hint = method == "spawn" and " or true (an open stdin, written with proc:write)"
  local after = method == "exec" and "; for an open stdin to write to, use box:spawn(cmd, {stdin = true})" or ""
  error(("box:%s(cmd, opts): opts.stdin must be a string (the command's input)%s, not %s%s")
    :format(method, hint or "", given, after), 3)
end

local function command_text(cmd)
  return excerpt(type(cmd) == "table" and table.concat(cmd, " ") or cmd, 300)
end

local function emit_exec(self, kind, what, result, err)
  events.emit(command.traced({type = "sandbox_exec", session = self.session, kind = kind,
                              command = command_text(what), error = err and err.message}, result))
  return result, err
end

-- A command ended (a result: it ran): the box's outputs are mirrored home
-- before its caller sees the result (luagent.sandbox.mirror). A command that
-- did not run, or whose engine went away, has nothing to mirror.
local function mirrored(self, result, err)
  if result and self.mirror then self.mirror:sync() end
  return result, err
end

local function checked_on_output(fn, method)
  if fn ~= nil and type(fn) ~= "function" then
    error(("box:%s: on_output must be a function(text, stream) called as the output comes, got %s")
      :format(method, type(fn)), 3)
  end
  return fn
end

-- A job's on_output raised while the command ran: its error, raised now
-- that the command ended.
local function after_output(job, ...)
  if job.on_output_error ~= nil then error(job.on_output_error, 0) end
  return ...
end

-- box:exec: the result is luagent.ExecResult (lua/meta/sandbox.lua), made by
-- luagent.sandbox.command. opts.on_output(text, stream): called with each
-- piece of output as it comes ("stdout" or "stderr"), while the command runs.
function Box:exec(cmd, opts)
  opts = options.check(opts or {}, "luagent.ExecOptions", "box:exec")
  local argv = exec_argv(cmd, "exec")
  local env = checked_env(opts.env, "exec env") -- refuses host secrets
  checked_stdin(opts.stdin, "exec")
  local on_output = checked_on_output(opts.on_output, "exec")
  local err = closed(self) or secret_error(table.concat(argv, " "), "command") or secret_error(opts.stdin, "input")
  if err then return emit_exec(self, "exec", cmd, nil, err) end
  local job = {argv = argv, env = env, cwd = opts.cwd or self.workdir, stdin = opts.stdin,
               timeout = opts.timeout or self.timeout, max_output = opts.max_output or self.max_output,
               on_output = on_output}
  return after_output(job, mirrored(self, emit_exec(self, "exec", cmd, self._session:exec(job))))
end

-- tty, cols, rows of box:spawn: checked; the size as the supervisor takes it.
local function checked_tty(opts)
  if opts.tty ~= nil and type(opts.tty) ~= "boolean" then
    error("box:spawn: tty must be true or false (a pseudo-terminal for the process), got " .. type(opts.tty), 3)
  end
  for _, name in ipairs{"cols", "rows"} do
    local v = opts[name]
    if v ~= nil and not (math.type(v) == "integer" and v >= 1 and v <= 9999) then
      error(("box:spawn: %s must be a whole number 1..9999 (the terminal's size), got %s"):format(name, tostring(v)), 3)
    end
    if v ~= nil and not opts.tty then error(("box:spawn: %s is the size of a terminal: set tty = true too"):format(name), 3) end
  end
  return opts.tty == true
end

-- box:spawn(cmd [, {timeout, stdin, env, cwd, max_output, tty, cols, rows}]) -> process | nil, err
-- Starts a long-lived process (a server) that outlives the call; its whole
-- tree stays under the supervisor. process:read([seconds]) -> stdout, stderr
-- (since the last read), :wait([seconds]) -> result, :signal("TERM"),
-- :kill(), :close() (kills it; also <close>). Every process still running
-- is killed when the box closes. timeout (none by default) kills it after
-- that long; max_output caps what is kept unread per stream. tty = true:
-- its stdin, stdout and stderr are one pseudo-terminal (cols x rows, 80 x 24
-- by default; proc:resize), its stdin open for proc:write (Ctrl-C is
-- "\3"), and everything it prints comes as stdout.
function Box:spawn(cmd, opts)
  opts = options.check(opts or {}, "luagent.SpawnOptions", "box:spawn")
  local argv = exec_argv(cmd, "spawn")
  local env = checked_env(opts.env, "spawn env")
  checked_stdin(opts.stdin, "spawn")
  local tty = checked_tty(opts)
  local err = closed(self) or secret_error(table.concat(argv, " "), "command") or secret_error(opts.stdin, "input")
  if err then return nil, err end
  events.emit({type = "sandbox_spawn", session = self.session, command = command_text(cmd)})
  local proc
  local stdin = opts.stdin
  if tty and stdin == nil then stdin = true end
  if tty and not (env and env.TERM) then -- what `docker exec -t` says too
    env = env or {}
    env.TERM = "xterm"
  end
  proc, err = self._session:spawn({argv = argv, env = env, cwd = opts.cwd or self.workdir, stdin = stdin,
    timeout = opts.timeout, max_output = opts.max_output or self.max_output, tty = tty or nil,
    cols = tty and opts.cols or nil, rows = tty and opts.rows or nil}, command_text(cmd))
  if proc and self.mirror then
    local wait = proc.wait -- its end, once seen, is mirrored like a command's
    proc.wait = function(p, seconds)
      local ended = p.result ~= nil
      local result, werr = wait(p, seconds)
      if ended then return result, werr end
      return mirrored(self, result, werr)
    end
  end
  return proc, err
end

-- box:python(code [, {timeout, max_output}]) -> result | nil, err
-- Runs code in the session's persistent interpreter: variables and imports
-- stay for the next call; the value of a final expression is printed. Calls
-- run one at a time, in call order; a call's timeout counts only its own
-- running time.
-- result: like exec's (exit_code 0, or 1 after an exception, whose traceback
-- is in stderr), plus persistent and state_lost = true when an earlier call
-- was killed (timeout, OOM) and this one started from a fresh interpreter.
function Box:python(code, opts)
  if type(code) ~= "string" then error("box:python(code): code must be a string", 2) end
  opts = options.check(opts or {}, "luagent.PythonOptions", "box:python")
  local on_output = checked_on_output(opts.on_output, "python")
  local err = closed(self) or secret_error(code, "code")
  if err then return emit_exec(self, "python", code, nil, err) end
  local job = {timeout = opts.timeout or self.timeout, max_output = opts.max_output or self.max_output,
               on_output = on_output}
  return after_output(job, mirrored(self, emit_exec(self, "python", code, self._session:python(code, job))))
end

-- box:put(path, data [, {mode}]) -> true | nil, err
-- One file's way in or out, traced: which path served it (the supervisor,
-- or the engine's archive endpoint) and how long it took.
local function emit_file(self, op, name, bytes, started, via, err)
  events.emit({type = "sandbox_file", session = self.session, op = op, path = name, bytes = bytes, via = via,
               duration = sched.now() - started, error = err and err.message})
end

-- An agent's skill's file under /skills (luagent.skills): true | nil, err.
function Box:_put_skill_file(path, data, mode)
  local err = closed(self)
  if err then return nil, err end
  refuse_secret(data, "skill file " .. path, 2)
  local started = sched.now()
  local ok
  ok, err = self._session:put_skill_file(path, data, mode)
  emit_file(self, "skill", path, #data, started, "supervisor", err)
  return ok, err
end

function Box:put(path, data, opts)
  local name = workspace_name(path, 2)
  if type(data) ~= "string" then error("box:put(path, data): data must be a string", 2) end
  refuse_secret(data, "box:put " .. path, 2)
  local err = closed(self)
  if err then return nil, err end
  local started = sched.now()
  local ok, via
  ok, err, via = self._session:put_file(name, data, opts and opts.mode)
  emit_file(self, "put", name, #data, started, via, err)
  return ok, err
end

-- box:get(path [, {max_bytes}]) -> content | nil, err
function Box:get(path, opts)
  local name = workspace_name(path, 2)
  local err = closed(self)
  if err then return nil, err end
  local started = sched.now()
  local content, via
  content, err, via = self._session:read_file(name, opts)
  emit_file(self, "get", name, content and #content, started, via, err)
  if content == nil and err.kind == "not_found" then
    err = errors.new("not_found", "no such file in the workspace: " .. name, {path = name, cause = err})
  end
  return content, err
end

-- box:extract(workspace_path, host_dir [, {max_bytes, max_entries}]) -> {files, refused, bytes} | nil, err
-- Entries over the limits (sandbox.open's max_extract, max_extract_entries)
-- are refused and reported, like links that would leave host_dir.
function Box:extract(path, host_dir, opts)
  local name = workspace_name(path, 2)
  if type(host_dir) ~= "string" then error("box:extract(path, host_dir): host_dir must be a string", 2) end
  local err = closed(self)
  if err then return nil, err end
  local report
  report, err = self._session:extract(name, host_dir, opts or {})
  if not report and err.kind == "not_found" then
    err = errors.new("not_found", "no such path in the workspace: " .. name, {path = name, cause = err})
  end
  return report, err
end

-- box:snapshot(host_tar) -> bytes | nil, err   the whole workspace as a tar
function Box:snapshot(host_tar)
  if type(host_tar) ~= "string" then error("box:snapshot(host_tar): host_tar must be a string", 2) end
  local err = closed(self)
  if err then return nil, err end
  return self._session:snapshot(host_tar)
end

-- box:restore(host_tar) -> true | nil, err   a tar made by box:snapshot staged into
-- the workspace (as sandbox.open{restore = ...} does), over what is there
function Box:restore(host_tar)
  if type(host_tar) ~= "string" then error("box:restore(host_tar): host_tar must be a string", 2) end
  local err = closed(self)
  if err then return nil, err end
  if not fs.exists(host_tar) then
    return errors.fail("not_found", "box:restore: no such file " .. host_tar, {path = host_tar})
  end
  return self._session:_restore(host_tar)
end

-- box:fork(n [, opts]) -> {box, ...} | nil, err   n sessions of this spec, each with a
-- copy of its /workspace and /tmp (luagent.sandbox.fork; opts: sandbox.open's, on top)
function Box:fork(n, opts)
  return forks.run(self, n, opts, sandbox)
end

-- sandbox.fork(box, n [, opts]): the same
function sandbox.fork(box, n, opts)
  if getmetatable(box) ~= Box then error("sandbox.fork(box, n [, opts]): box must be a box of sandbox.open", 2) end
  return forks.run(box, n, opts, sandbox)
end

-- ---- the network rules of a live session (network = {allow = ...}) ----

-- box:network() -> {rules, connections, open, allowed, denied, bytes_up, bytes_down, recent} | nil
-- nil for a box without rules (network = false: none; true: the engine's whole network).
function Box:network()
  return self.egress and self.egress:status() or nil
end

local function change_rules(self, verdict, list)
  local method = "box:" .. verdict
  if not self.egress then
    error(method .. ": this sandbox has no network rules (open it with network = {allow = {...}})", 3)
  end
  if self.closed then return nil, closed(self) end
  local ok, why = self.egress:change(verdict, list, method)
  if not ok then error(method .. ": " .. why, 3) end
  return true
end

-- box:allow{rules} / box:deny{rules} -> true   for the connections made from now on; deny wins
function Box:allow(list) return change_rules(self, "allow", list) end
function Box:deny(list) return change_rules(self, "deny", list) end

return sandbox

---@meta _
-- The low-level modules under the recipe API: the event loop, host facts,
-- the event bus, recipe runs as values, manifests, tar files and the two
-- Docker layers. Each is
-- marked "low-level: recipes normally do not need this": the recipe API
-- (luagent.sandbox, .model, .agent, ...) is built on them and is what a
-- recipe uses. They are not fields of the `luagent` class; reach one with
-- require and name its type for the editor:
--
--   ---@type luagent.tar
--   local tar = require "luagent.tar"
--
-- LuaLS annotations: definitions only.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

-- ---- luagent.loop ----

---low-level: recipes normally do not need this (use luagent.spawn, luagent.sleep, ...).
---luagent.loop: tasks and the scheduler (src/lua_loop.c).
---@class luagent.loop
local loop = {}

---Runs fn(...) as a task (luagent.spawn).
---@param fn fun(...): ...
---@param ... any
---@return luagent.Task
function loop.spawn(fn, ...) end

---Yields to other tasks for that long (luagent.sleep).
---@param seconds number
function loop.sleep(seconds) end

---Lets other ready tasks run (luagent.yield).
function loop.yield() end

---Monotonic seconds (luagent.now).
---@return number
function loop.now() end

---The task running now, or nil outside a task.
---@return luagent.Task?
function loop.current() end

---The context of the task running now: the value it was spawned with by
---`loop.spawn_in`, or inherited from the task that spawned it; nil outside a
---task or when it has none. luagent.run keeps a recipe run there.
---@return any
function loop.context() end

---Runs fn(...) as a task whose context is `ctx` (nil: none); the tasks it
---spawns inherit it.
---@param ctx any
---@param fn fun(...): ...
---@param ... any
---@return luagent.Task
function loop.spawn_in(ctx, fn, ...) end

---Was the running task asked to stop (Ctrl-C, SIGTERM, task:cancel(), its
---main task failing)? Its "cancelled" error, or nil. It stays set after a
---wait raised the cancellation once, so code that caught it can still tell
---the run is stopping (the agent and model calls check it).
---@return luagent.Error? err kind "cancelled"
function loop.cancelled() end

-- ---- luagent.sys ----

---low-level: recipes normally do not need this.
---luagent.sys: small facts about the host process (src/lua_sys.c).
---@class luagent.sys
local sys = {}

---This process's id.
---@return integer
function sys.pid() end

---Is that process still there?
---@param pid integer
---@return boolean
function sys.alive(pid) end

---An environment variable, or nil.
---@param name string
---@return string?
function sys.getenv(name) end

---Is the file descriptor a terminal?
---@param fd integer
---@return boolean
function sys.isatty(fd) end

---@return string
function sys.hostname() end

---Wall-clock seconds since the epoch (with fraction).
---@return number
function sys.time() end

---Runs a host program (no shell). output = stdout and stderr, or shown live with inherit.
---@param argv string[]
---@param opts? {inherit?: boolean}
---@return integer exit_code
---@return string output
function sys.execute(argv, opts) end

---A process's start time (clock ticks since boot), which with the pid names
---a process even after pid reuse; nil when it is gone.
---@param pid integer
---@return integer?
function sys.process_start(pid) end

---n random bytes from the kernel, as hex.
---@param n integer
---@return string
function sys.random_hex(n) end

---Peak resident memory of this process, in bytes.
---@return integer
function sys.maxrss() end

---@param data string
---@return string hex digest
function sys.sha256(data) end

---The digest of a file, read in chunks.
---@param path string
---@return string? hex
---@return integer|luagent.Error size_or_err
function sys.sha256_file(path) end

---A file embedded in the binary ("sandbox/Dockerfile", "lua/meta/luagent.lua"), or nil.
---@param name string
---@return string?
function sys.asset(name) end

---Standard base64.
---@param bytes string
---@return string
function sys.base64(bytes) end

-- ---- luagent.events ----

---low-level: recipes normally do not need this (agent.new{on_step = ...} and
---the trace show every step).
---luagent.events: the bus every model call, agent step and sandbox command
---is emitted on (lua/luagent/events.lua).
---@class luagent.events
local events = {}

---Calls fn(ev, run) for every event; returns fn, for unsubscribe. Called
---inside a run that luagent.run started (an eval's run), it sees that run's
---events only; elsewhere every run's (`run` says whose).
---@param fn fun(ev: luagent.Event, run: luagent.Run)
---@return function
function events.subscribe(fn) end

---@param fn function
function events.unsubscribe(fn) end

---Sends an event to the calling task's run: its subscribers (its trace
---first), then the process-wide ones (ev.time is set). Same as
---`luagent.run.current():emit(ev)`.
---@param ev luagent.Event
function events.emit(ev) end

-- ---- luagent.run ----

---What a run's model calls came to, counted from its model_response events.
---@class luagent.RunStats
---@field model_calls integer
---@field cached_calls integer answered from the model-call cache
---@field live_calls integer
---@field saved_cost number dollars the cached answers would have cost
---@field cost number dollars
---@field input_tokens integer
---@field output_tokens integer

---The last agent that finished in the run (its agent_end event).
---@class luagent.RunFinal
---@field output string? the final answer
---@field stopped_by "answer"|"max_turns"|"budget"|"error"
---@field usage luagent.Usage
---@field cost number?
---@field turns integer

---@class luagent.RunOptions
---@field recipe string the recipe file (loaded fresh by execute)
---@field settings? table the run's settings, already merged (what --set gives `luagent run`)
---@field dir? string the run's folder (default runs/<id>, or under $LUAGENT_RUNS_DIR)
---@field id? string the run's id (default "<UTC time>-<recipe name>-<4 hex>")
---@field args? string[] luagent.args for the recipe (execute's arguments replace them)
---@field quiet? boolean no terminal lines for its events
---@field json? boolean its events as JSON lines on stdout
---@field record? string save its model exchanges to this file
---@field replay? string answer its model calls from this recording
---@field cache? any the model-call cache handle (luagent.cache), or nil
---@field transport? fun(request: table): table?, luagent.Error? its model transport (default model.transport)
---@field capture? boolean the recipe's print and io.write go to <dir>/stdout.txt

---What r:execute() returns.
---@class luagent.RunResult
---@field status "ok"|"failed"|"interrupted"
---@field error luagent.Error? why it failed (a raised string becomes kind "error")
---@field traceback string? where the recipe raised
---@field final luagent.RunFinal?
---@field stats luagent.RunStats
---@field dir string the run's folder
---@field trace string? its trace file, if it wrote one

---low-level: recipes normally do not need this (`luagent run` makes a
---recipe's run; luagent eval makes many).
---luagent.run: a recipe run as a value (lua/luagent/run.lua). Several runs
---live in one process; each has its own settings, folder, trace, exit hooks,
---sandboxes and model transport, and what a recipe does (luagent.settings,
---luagent.config, luagent.run_dir, luagent.at_exit, events, sandboxes,
---model calls) reaches the run of the task doing it.
---
---    local r = assert(run.new{recipe = "recipes/energy_anomaly.lua", settings = {...},
---                             dir = "evals/e1/runs/a/1", quiet = true, capture = true})
---    local result = r:execute()   -- {status, error, final, stats, dir, trace}
---@class luagent.run
local run = {}

---The run of the calling task, or the process's default run (the one
---`luagent run RECIPE` started; a bare one in the REPL and CLI commands).
---@return luagent.Run
function run.current() end

---A run of a recipe file, started: its transport chosen (record, replay), its
---trace subscribed (the trace opens at its first event). A recording that
---cannot be used is `nil, err` (kind "config"); bad options raise.
---@param opts luagent.RunOptions
---@return luagent.Run? run
---@return luagent.Error? err
function run.new(opts) end

---Where run folders go: $LUAGENT_RUNS_DIR, else "runs".
---@return string
function run.runs_root() end

---@class luagent.Run
---@field id string e.g. "20260130-120000-energy_anomaly-3f2a"
---@field settings table its settings (luagent.settings inside it)
---@field args string[] luagent.args inside it
---@field recipe string? the recipe file
---@field recipe_dir string? the recipe's folder; luagent.config reads from here
---@field transport fun(request: table): table?, luagent.Error? its model transport
---@field replaying string|false|nil the recording it replays
---@field cache any the model-call cache handle, or nil
---@field stats luagent.RunStats
---@field final luagent.RunFinal?
---@field result luagent.RunResult? once executed
local RecipeRun = {}

---The run's folder, or a folder inside it; made on first use (raises if it
---cannot be made).
---@param sub? string e.g. "output"
---@return string path
function RecipeRun:dir(sub) end

---Gives an event to the run's subscribers (its trace first), then to the
---process-wide ones (what luagent.events.emit does inside the run).
---@param ev luagent.Event
function RecipeRun:emit(ev) end

---Calls fn(ev, run) for every event of this run; returns fn.
---@param fn fun(ev: luagent.Event, run: luagent.Run)
---@return function
function RecipeRun:subscribe(fn) end

---@param fn function
function RecipeRun:unsubscribe(fn) end

---Runs `fn(status, message)` when this run ends, newest first; `{last =
---true}` puts it after the others. luagent.at_exit registers here.
---@param fn fun(status: "ok"|"failed"|"interrupted", message: string?)
---@param opts? {last?: boolean}
function RecipeRun:at_exit(fn, opts) end

---Runs the recipe (loaded fresh, with globals of its own; its folder is
---searched first for modules) as a task in this run, with `...` as its
---arguments; then its exit hooks (its sandboxes are closed there), then
---run_end. A failing recipe is `status = "failed"`, never an error here; a
---caller cancelled meanwhile (Ctrl-C) waits for the run to end, then
---raises the cancellation (r.result has the run's result). Once per run.
---@param ... string
---@return luagent.RunResult
function RecipeRun:execute(...) end

-- ---- luagent.manifest ----

---low-level: recipes normally do not need this (use sandbox.file, sandbox.dir,
---sandbox.text and sandbox.open{manifest = ...}).
---luagent.manifest: what is staged into a workspace (lua/luagent/manifest.lua).
---@class luagent.manifest
local manifest = {}

---@param path string
---@return luagent.ManifestSource
function manifest.file(path) end

---@param path string
---@param opts? {exclude?: string[]}
---@return luagent.ManifestSource
function manifest.dir(path, opts) end

---@param text string
---@return luagent.ManifestSource
function manifest.text(text) end

---The manifest as tar entries, checked and sorted by workspace path.
---@param m luagent.Manifest?
---@return luagent.TarEntry[]? entries
---@return luagent.Error? err
function manifest.entries(m) end

---"/workspace/a/./b/" -> "a/b"; nil and why for a path leaving the workspace.
---@param path string
---@param root? string default "/workspace"
---@return string? name
---@return string? why
function manifest.workspace_path(path, root) end

---A glob ("*.pyc", "data/**/tmp", "?x") as an anchored Lua pattern.
---@param glob string
---@return string
function manifest.glob_pattern(glob) end

-- ---- luagent.tar ----

---One entry of a tar to write: {name, file = host_path} | {name, data [, mode]}
---| {name, dir = true} | {name, symlink = target}.
---@class luagent.TarEntry
---@field name string
---@field file string?
---@field data string?
---@field mode integer?
---@field dir boolean?
---@field symlink string?

---low-level: recipes normally do not need this (box:snapshot, box:extract).
---luagent.tar: tar files on the host, never whole in memory (src/lua_tar.c).
---@class luagent.tar
local tar = {}

---Writes a tar file (parent folders are added).
---@param tar_path string
---@param entries luagent.TarEntry[]
---@param opts? {uid?: integer, gid?: integer}
---@return integer? bytes
---@return luagent.Error? err
function tar.write(tar_path, entries, opts) end

---Extracts safely: absolute names, "..", links leaving dest, devices and
---fifos are refused and listed; nothing is written outside dest.
---@param tar_path string
---@param dest string
---@param opts? {strip?: string, max_bytes?: integer, max_entries?: integer}
---@return luagent.ExtractReport? report
---@return luagent.Error? err
function tar.extract(tar_path, dest, opts) end

-- ---- luagent.engine ----

---low-level: recipes normally do not need this (luagent.sandbox uses it).
---luagent.engine: the Docker Engine API client, JSON calls in Lua (lua/luagent/engine.lua).
---@class luagent.engine
---@field MAX_API string the newest API version it speaks
---@field MIN_API string the oldest it accepts
local engine = {}

---Connects (DOCKER_HOST or /var/run/docker.sock) and negotiates the API version.
---@param opts? {host?: string, timeout?: number}
---@return luagent.engine.Client? client
---@return luagent.Error? err kind "docker_unreachable" or "docker"
function engine.connect(opts) end

---Percent-encodes a string for a URL.
---@param s any
---@return string
function engine.urlencode(s) end

---"?a=1&b=2" from a table (tables as JSON, booleans as 1/0), "" for nil.
---@param query table?
---@return string
function engine.query_string(query) end

---The error value of an engine's error answer (not_found, conflict, docker).
---@param res luagent.HttpResponse
---@param what string
---@return luagent.Error
function engine.error_from_response(res, what) end

---A connection to one Docker engine.
---@class luagent.engine.Client
---@field endpoint luagent.engine_io.Endpoint
---@field version string the API version spoken
---@field server_version string the engine's own
---@field base_url string
local Client = {}

---A JSON call: decoded JSON (or true for an empty answer) | nil, err.
---@param method string
---@param path string
---@param body any encoded as JSON
---@param opts? {query?: table, timeout?: number}
---@return any? value
---@return luagent.Error? err
function Client:call(method, path, body, opts) end

---Options for luagent.engine_io's streaming calls to `path`, merged with extra.
---@param path string
---@param extra? table
---@return table
function Client:options(path, extra) end

-- ---- luagent.engine_io ----

---@class luagent.engine_io.Endpoint
---@field unix_socket string?
---@field url string
---@field ca_file string?
---@field cert_file string?
---@field key_file string?
---@field description string

---low-level: recipes normally do not need this (luagent.sandbox uses it).
---luagent.engine_io: the raw streaming half of the Docker client, in C
---(src/lua_engine_io.c): exec output, archives, the supervisor channel.
---@class luagent.engine_io
local engine_io = {}

---The engine's address from DOCKER_HOST & co.
---@param docker_host? string
---@return luagent.engine_io.Endpoint? endpoint
---@return luagent.Error? err
function engine_io.endpoint(docker_host) end

---POST /exec/ID/start: opts are http options + max_output (bytes per stream).
---@param opts table
---@return luagent.engine_io.ExecStream
function engine_io.exec_start(opts) end

---Streams tar entries into a container (opts.entries, opts.uid/gid).
---@param opts table
---@return true? ok
---@return luagent.Error? err
function engine_io.put_archive(opts) end

---Extracts a container path safely into opts.dest (strip, max_bytes, max_entries).
---@param opts table
---@return luagent.ExtractReport? report
---@return luagent.Error? err
function engine_io.get_archive(opts) end

---Saves a container path's raw tar into opts.path (at most opts.max_bytes).
---@param opts table
---@return integer? bytes
---@return luagent.Error? err
function engine_io.save_archive(opts) end

---The first file of a container path's archive, at most opts.max_bytes.
---@param opts table
---@return string? content
---@return luagent.Error? err
function engine_io.read_file(opts) end

---A hijacked attach to an exec of `luagent-supervisor serve` in a session
---(sandbox/supervisor/DESIGN.md) over the engine's socket, TCP or TLS; returns once it
---said it is ready ("R 2"). Before the engine let the attach through, err's kind is
---docker_unreachable, tls, docker, network or protocol; afterwards runner.
---@param opts table client:options("/exec/ID/start", {body, timeout, connect_timeout}) (or unix_socket, path)
---@return luagent.engine_io.SupervisorChannel? channel
---@return luagent.Error? err
function engine_io.supervisor(opts) end

---The error value for a Docker engine error response: kind not_found (404),
---conflict (409) or docker, with the engine's own message read from the body.
---@param status integer the HTTP status
---@param body string the response body ({"message": "..."} or text)
---@param what string? what was being done ("POST /containers/create"), put before the message
---@return luagent.Error err fields status, engine_message
function engine_io.engine_error(status, body, what) end

---@class luagent.engine_io.ExecOutput
---@field stdout string
---@field stderr string
---@field truncated boolean
---@field stdout_bytes integer
---@field stderr_bytes integer

---The output of one Docker exec.
---@class luagent.engine_io.ExecStream
local ExecStream = {}

---true when the command's output ended, false if the seconds passed first (yields).
---@param seconds? number
---@return boolean
function ExecStream:wait(seconds) end

---The output (after wait returned true, or abort).
---@return luagent.engine_io.ExecOutput? output
---@return luagent.Error? err
function ExecStream:result() end

---Stops reading; result() then gives the output so far.
function ExecStream:abort() end

---Closes the stream (also __close and __gc).
function ExecStream:close() end

---@class luagent.engine_io.SupervisorResult: luagent.engine_io.ExecOutput
---@field done boolean the supervisor said it ended
---@field exit_code integer?
---@field flags string? letters: k killed on request, t timed out, o OOM-killed, r interpreter restarted
---@field killed integer? processes of it killed when it ended
---@field timed_out boolean?
---@field oom_killed boolean?
---@field failure string? why it could not start
---@field report luagent.ExtractReport? a pack extracted into a folder
---@field saved integer? a pack saved into a file: its bytes
---@field sink_error string? a pack whose stream was refused or cut

---The channel to a session's supervisor: many commands over one connection.
---@class luagent.engine_io.SupervisorChannel
local SupervisorChannel = {}

---Sends a request: op "run" | "spawn" ({argv, env = {"K=v"}, cwd, stdin,
---timeout}), "python" ({code, timeout}), "pack" ({path, max_bytes,
---max_entries}), "kill" | "signal" ({signal}) of an earlier id. opts:
---{max_output, extract = {dest, strip, max_bytes, max_entries, limit} |
---save = {path, limit}} (where a pack's tar goes).
---@param op string
---@param id integer
---@param fields? table
---@param opts? table
---@return true? ok
---@return luagent.Error? err
function SupervisorChannel:send(op, id, fields, opts) end

---true (ended) | false (time passed, or output came with on_output) | nil, err (supervisor gone).
---@param id integer
---@param seconds? number
---@param on_output? boolean
---@return boolean? ended
---@return luagent.Error? err
function SupervisorChannel:wait(id, seconds, on_output) end

---What command id printed since the last take.
---@param id integer
---@return string stdout
---@return string stderr
function SupervisorChannel:take(id) end

---Its result; forgets the id.
---@param id integer
---@return luagent.engine_io.SupervisorResult
function SupervisorChannel:result(id) end

---@return boolean alive
---@return string? reason
function SupervisorChannel:alive() end

function SupervisorChannel:close() end

-- ---- luagent.dates ----

---low-level: recipes normally do not need this.
---luagent.dates: calendar arithmetic without the local time zone (lua/luagent/dates.lua).
---@class luagent.dates
local dates = {}

---Days since 1970-01-01 of a civil date.
---@param y integer
---@param m integer
---@param d integer
---@return integer
function dates.days_from_civil(y, m, d) end

---Seconds since the epoch of an HTTP date or an RFC 3339 time, or nil.
---@param text string
---@return number?
function dates.parse(text) end

-- ---- luagent.process ----

---low-level: recipes normally do not need this (a recipe runs its code in a
---sandbox; `luagent run --watch` and stdio servers start host processes).
---luagent.process: child processes of the host, with pipes, process groups
---and waits that yield to other tasks (src/lua_process.c).
---@class luagent.process
local process = {}

---@alias luagent.process.Stdio "pipe"|"null"|"inherit"

---@class luagent.process.SpawnOptions
---@field argv string[] the program (a path, or a name looked up in PATH) and its arguments; no shell
---@field env? table<string, string> the whole environment of the child (nil: inherit this one)
---@field cwd? string its folder (nil: this process's)
---@field stdin? luagent.process.Stdio default "inherit"
---@field stdout? luagent.process.Stdio default "inherit"
---@field stderr? luagent.process.Stdio default "inherit"
---@field new_group? boolean the child leads a new process group: kill and close reach all it started

---Starts a program. A missing program is nil, err (kind not_found, err.program names it).
---@param opts luagent.process.SpawnOptions
---@return luagent.process.Process? proc
---@return luagent.Error? err
function process.spawn(opts) end

---This process's environment, e.g. to give a child one more variable.
---@return table<string, string>
function process.environ() end

---A running (or ended) child process. close() kills it (and its group) if
---it still runs, closes the pipes and reaps it; tasks waiting on it wake
---with nil, err (kind closed). Also __close and __gc.
---@class luagent.process.Process
local Process = {}

---Writes every byte to the child's stdin (yields while the pipe is full).
---@param data string
---@return true? ok
---@return luagent.Error? err kind io when the child closed its stdin
function Process:write(data) end

---The child reads end-of-file on its stdin.
function Process:close_stdin() end

---What the child wrote (at most max bytes, default 65536); nil at end-of-file.
---@param stream "stdout"|"stderr"
---@param max? integer
---@return string? data
---@return luagent.Error? err
function Process:read(stream, max) end

---Waits for the end: its exit code (128 + N when signal N ended it) and the
---signal, or nil, err (kind timeout) when `timeout` seconds passed first.
---@param timeout? number
---@return integer? exit_code
---@return integer|luagent.Error|nil signal_or_err
function Process:wait(timeout) end

---Sends a signal ("TERM" by default, "INT", "KILL", ... or a number); to the
---whole group with new_group. false when no process was there.
---@param sig? string|integer
---@return boolean
function Process:kill(sig) end

---@return integer
function Process:pid() end

function Process:close() end

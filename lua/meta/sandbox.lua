---@meta luagent.sandbox
-- luagent.sandbox: locked-down Docker sessions for running an agent's code
-- (lua/luagent/sandbox.lua). LuaLS annotations: definitions only.
--
--   local box <close> = assert(sandbox.open{memory = "1g", cpus = 1,
--     manifest = {["input/data.csv"] = sandbox.file("data.csv")}})
--   local r = box:exec("wc -l input/data.csv", {timeout = 30})
--   local server <close> = assert(box:spawn("python3 -m http.server 8000"))
--   box:python("import pandas as pd; df = pd.read_csv('input/data.csv')")
--   box:extract("output", luagent.run_dir("output"))
--
-- Safe by default: no network (rules give it some: luagent help network);
-- memory capped (swap equal to memory); a CPU quota; a pids cap;
-- no-new-privileges; a read-only root with a writable /workspace (capped:
-- workspace_size) and a capped /tmp; only the environment the recipe passes
-- (host API keys are refused). The sandbox supervisor is PID 1 and runs
-- every command as uid 1000 with no capability, under its own subreaper:
-- what a command leaves running is killed (and counted) when it ends or
-- times out, and no command can signal, trace or replace PID 1 or the
-- supervisor.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---What `sandbox.file`, `sandbox.dir` and `sandbox.text` make: one manifest source.
---@class luagent.ManifestSource
---@field kind "file"|"dir"|"text"
---@field path string? the host path (file, dir)
---@field exclude string[]? globs left out of a folder (dir)
---@field text string? the content (text)

---Workspace path (relative, or absolute under /workspace) -> what to stage
---there; a plain string is staged as text.
---@alias luagent.Manifest table<string, luagent.ManifestSource|string>

---@class luagent.SandboxSave
---@field from string the workspace folder, e.g. "output"
---@field to string the host folder, e.g. luagent.run_dir("output")
---@field required? string[] globs that must be there (reported as missing otherwise)
---@field mirror? boolean default true: after every command, what changed under `from` is copied to `to`
---(whole files only), so the host holds what the agent saved even if the sandbox is lost later

---What a box's outputs mirror has done (box.mirror, with save = {...}).
---@class luagent.SandboxMirror
---@field files table<string, {size: integer, sha256: string, turn: integer?, command: integer, time: integer}>
---the copies on the host, by path relative to `to`: made after agent turn `turn` (when an agent ran the
---command) and the box's `command`-th command
---@field counts {passes: integer, lists: integer, packs: integer, copied: integer, busy: integer, unsteady: integer}
---passes (one per command), listings, packs (one per changed file, or one per folder when many changed), files
---copied, and files left for a later pass: open for writing (busy), changed while copied (unsteady)

---Options of sandbox.open; every one has a safe default (sandbox.defaults).
---@class luagent.SandboxOptions
---@field image? string default "luagent-sandbox:latest"
---@field memory? string|integer "512m" (default), "1g", or bytes, for commands; swap is capped at the same. The
---memory cgroup holds memory + tmp_size + workspace_size, since files in /tmp and the workspace live in RAM
---@field cpus? number CPU quota, default 1
---@field pids? integer process cap, default 256
---@field network? boolean|luagent.NetworkRules default false: no network at all (only loopback); a table of rules:
---still no interface but loopback, and what the rules allow goes out through luagent, which decides each
---connection on the host (luagent help network); true: the engine's whole bridge network (warned once per process)
---@field env? table<string, string|number|boolean> the only environment commands see (API keys are refused)
---@field timeout? number default seconds for a command, 120
---@field max_output? integer bytes kept per stream of a command (default 1 MiB); the middle is cut
---@field manifest? luagent.Manifest files, folders and texts staged before the session starts
---@field restore? string a tar made by box:snapshot, staged into the workspace
---@field save? luagent.SandboxSave results brought home on close, even after an error or Ctrl-C, and
---mirrored home after every command (save.mirror)
---@field labels? table<string, string> extra container labels
---@field user? string "uid:gid" commands run as, default "1000:1000" (uid 0 is refused)
---@field workdir? string default "/workspace"
---@field tmp_size? string|integer size of /tmp, default "256m"
---@field workspace_size? string|integer|false the workspace's cap, default "512m" (a tmpfs: a writer gets
---ENOSPC; emptied if the container must restart); false: an uncapped disk volume
---@field writable_root? boolean default false: the root filesystem is read-only
---@field max_extract? integer bytes extract and snapshot may write on the host (default 2 GiB)
---@field max_extract_entries? integer entries extract may write (default 20000)
---@field engine_grace? number seconds bringing outputs home (save, extract, snapshot) waits for a Docker engine that
---went away, default 30; commands never wait (they fail at once with kind docker_unreachable)
---@field engine? luagent.engine_client.Client a Docker engine client to use
---@field docker_host? string an engine address (else DOCKER_HOST or the local socket)
---@field engines? (string|luagent.SandboxEngine)[]|string the Docker engines sessions are spread over
---("unix:///var/run/docker.sock#8", "tcp://HOST:2376#4", or one string of them separated by commas; else
---sandbox.defaults.engines, else LUAGENT_ENGINES, else the default engine): the session goes to the least loaded
---one with room that has the image (copied there when none with room has it); malformed entries raise
---@field runtime? string the engine runtime the session runs under (HostConfig.Runtime; default: the engine
---entry's runtime, else the engine's default), e.g. "runsc" for gVisor (sandbox/GVISOR.md says what changes);
---one the engine does not list fails the open (kind config) before any container is made
---@field capacity_wait? number seconds an open waits for room when every engine is at its capacity (default
---3600), then nil, err of kind "capacity"; 0: fail at once
---@field pool? integer keep this many sessions like this one started (a warm pool, made by the first such
---open, which starts cold, and drained when the process ends): later opens of the same spec take one. 0: none.
---A recipe wires it to a setting (`pool = cfg.sandbox.pool`) so `--set sandbox.pool=4` and evals can turn it on

---sandbox.open's `network` as rules (YAML: `sandbox.network`, passed by the recipe as
---`network = cfg.sandbox.network`). A rule is a host name ("api.example.com"; "*.example.com": every name
---under it, not the name itself; "*": every name), an IP address or a CIDR ("10.0.0.5", "10.0.0.0/8",
---"[fd00::1]", "fd00::/8"), each with an optional ":port" (":*": every port; bracket IPv6 with a port:
---"[fd00::1]:5432"). Nothing is allowed by default, and deny wins. A name is resolved on the host, and the
---address it resolves to must be public or named by an address rule (loopback, private, link-local,
---unique-local... are refused otherwise, checked when the socket opens). A bad rule, secret, ca_file or an
---unknown key raises from sandbox.open naming the field, before any session opens.
---@class luagent.NetworkRules
---@field allow? string[]|string rules the sandbox may reach; without a port: 80 and 443
---@field deny? string[]|string rules it may not, whatever allow says; without a port: every port
---@field secrets? table<string, luagent.NetworkSecret> environment variable name -> the secret: the sandbox gets a
---per-session placeholder in that variable, and luagent puts the value in the request head only towards its hosts
---@field hosts? table<string, string> pins a name to an address, like curl --resolve ({["db.internal"] =
---"10.0.0.5"}); the pinned address is checked like a resolved one
---@field ca_file? string a PEM file of CA certificates: trusted for upstream TLS luagent makes (secret hosts) and
---added to the sandbox's CA bundle (for tunnelled clients)
---@field max_connections? integer connections at once, default 64; one more is refused (403)
---@field max_bytes? string|integer bytes both ways over every connection of the session ("100m", "1g"); the
---connection that passes it is cut and later ones are refused

---One secret of network.secrets: its value never enters the sandbox, the trace or the outputs.
---@class luagent.NetworkSecret
---@field hosts string[] the host names ("api.example.com", "*.example.com") it may be sent to; each must be
---allowed by network.allow; TLS to them ends at luagent, with the session's CA
---@field value string the value, e.g. os.getenv("GITHUB_TOKEN") (nil raises: is the variable set?); at least 8
---bytes. Whatever comes back from its hosts has the value replaced by the placeholder
---@field headers? string[] header names the placeholder may also stand in, beside Authorization, X-Api-Key,
---Api-Key, X-Auth-Token, X-Access-Token, Private-Token, X-Goog-Api-Key and Cookie (anywhere else it is refused)

---One connection of a sandbox with rules: a trace event of type "network" (and box:network().recent).
---@class luagent.NetworkEvent
---@field type "network"
---@field session string the session id
---@field host string? the host the client asked for (absent when the request could not be read)
---@field port integer?
---@field method string? "CONNECT", "GET", ... (inside a tunnel whose TLS ends at luagent: the inner request's)
---@field path string? the request's path, when luagent could read it
---@field address string? the address connected to
---@field allowed boolean
---@field rule string? the rule that allowed or denied it
---@field reason string? why it was refused (the line the client got in the 403's body)
---@field status integer? the refusal's HTTP status: 403, 400 (malformed request), 431 (a head over 64 KiB), 501 (a
---transfer coding other than chunked), 502 (upstream unreachable, or an answer that could not be searched for secrets)
---@field bytes_up integer? bytes from the sandbox upstream
---@field bytes_down integer? bytes from upstream to the sandbox
---@field ms integer how long the connection lasted
---@field tls_terminated boolean? TLS ended at luagent (a host with secrets)
---@field secrets string[]? the names of the secrets put into its request head (never their values)
---@field secret_refused string? the name of the secret whose placeholder made it refused
---@field limit "max_connections"|"max_bytes"? the limit that refused or cut it
---@field error string? what ended a connection that was allowed
---@field dropped_bytes integer? bytes the client sent past its one request (never forwarded)
---@field values_returned integer? times a secret's value came back and was replaced by its placeholder

---The rules of a live session as plain data (box:network().rules, the sandbox_open event): no secret value.
---@class luagent.NetworkRulesNow
---@field allow string[]
---@field deny string[]
---@field hosts table<string, string>
---@field secrets table<string, {hosts: string[], headers: string}> by name: the hosts each may go to, and the
---headers it may stand in
---@field ca_file string?
---@field max_connections integer
---@field max_bytes integer?

---What box:network() returns.
---@class luagent.NetworkStatus
---@field rules luagent.NetworkRulesNow the rules as they are now
---@field connections integer connections the sandbox made
---@field open integer connections open now
---@field allowed integer
---@field denied integer
---@field bytes_up integer over every connection
---@field bytes_down integer
---@field recent luagent.NetworkEvent[] the last 20 connections, newest first
---@field lost string? why the relay stopped, if it did

---One Docker engine of `engines`, in its long form.
---@class luagent.SandboxEngine
---@field host string unix:///path/to/docker.sock or tcp://HOST:PORT
---@field capacity? integer at most this many sessions of this process there (none: no limit)
---@field runtime? string the runtime of this engine's sessions unless sandbox.open names one (e.g. "runsc")
---@field tls? string|{ca: string, cert?: string, key?: string}|boolean a tcp:// engine's TLS: a folder holding
---ca.pem, cert.pem and key.pem, the files, true (DOCKER_CERT_PATH's) or false (plain TCP); none:
---DOCKER_TLS_VERIFY/DOCKER_CERT_PATH decide

---Options of sandbox.pool: sandbox.open's (those that make the session spec must match an open's for it to
---take a pooled session; manifest, restore, save, timeout and max_output are each open's own), and size.
---@class luagent.SandboxPoolOptions: luagent.SandboxOptions
---@field size integer how many started, never-used sessions to keep (1 or more)

---Options of box:exec.
---@class luagent.ExecOptions
---@field timeout? number seconds; past it the command and every process it started are stopped
---@field stdin? string bytes given to the command's standard input
---@field env? table<string, string|number|boolean> extra environment (API keys are refused)
---@field cwd? string working directory (default /workspace)
---@field max_output? integer bytes kept per stream
---@field on_output? fun(text: string, stream: "stdout"|"stderr") called with the output as it comes, while it runs
---  (an error it raises is raised once the command ended)

---Options of box:spawn: box:exec's, but timeout has no default (none: it runs
---until killed, or until the box closes) and max_output caps what is kept unread.
---stdin = true keeps its standard input open: process:write(data) streams to it,
---process:close_stdin() ends it (a string: those bytes, then end-of-file).
---tty = true: its stdin, stdout and stderr are one pseudo-terminal (TERM=xterm,
---cols x rows, 80 x 24 unless given; process:resize), its stdin open for
---process:write ("\3" is Ctrl-C, close_stdin sends Ctrl-D), all output as stdout.
---@class luagent.SpawnOptions: luagent.ExecOptions
---@field stdin? string|true
---@field tty? boolean a pseudo-terminal (default false: pipes)
---@field cols? integer the terminal's columns, 1..9999 (tty only)
---@field rows? integer the terminal's rows, 1..9999 (tty only)

---Options of box:python.
---@class luagent.PythonOptions
---@field timeout? number seconds
---@field max_output? integer bytes kept per stream
---@field on_output? fun(text: string, stream: "stdout"|"stderr") called with the output as it comes

---What a command did (box:exec, box:python).
---@class luagent.ExecResult
---@field stdout string its standard output (first and last halves when cut)
---@field stderr string its standard error (first and last halves when cut)
---@field exit_code integer 0 for success; 137 when killed
---@field timed_out boolean stopped because it ran past its timeout
---@field oom_killed boolean killed for using more memory than the sandbox has (any command shape: sh -c, argv, python)
---@field killed integer how many processes it left running (background jobs, double forks) were killed when it ended
---@field truncated boolean the output was longer than max_output and its middle is left out
---@field duration number seconds it took
---@field stdout_bytes integer? how many bytes it wrote to stdout in all
---@field stderr_bytes integer? how many bytes it wrote to stderr in all
---@field restarted boolean? always false: a session that had to restart says so with a "sandbox_restarted" error
---@field state_lost boolean? box:python: the interpreter was restarted before this call (variables are gone)
---@field persistent boolean? box:python: the call ran in the persistent interpreter

---One file box:extract (or tar.extract) wrote.
---@class luagent.ExtractedFile
---@field path string relative to the host folder
---@field size integer bytes

---One entry box:extract (or tar.extract) refused to write.
---@class luagent.RefusedEntry
---@field name string the entry's name in the archive
---@field reason string why (absolute, "..", a link leaving the folder, a device, over a limit, ...)

---What box:extract wrote, and what it refused.
---@class luagent.ExtractReport
---@field files luagent.ExtractedFile[]
---@field refused luagent.RefusedEntry[]
---@field bytes integer bytes written

---A luagent sandbox the engine knows (sandbox.list).
---@class luagent.SandboxInfo
---@field id string container id
---@field name string container name
---@field session string? the session id
---@field state string "running", "exited", ...
---@field status string the engine's words ("Up 2 minutes")
---@field image string
---@field created integer seconds since the epoch
---@field owner_pid integer? the luagent process that made it
---@field alive boolean is that process still running? (leftovers are not)
---@field run string? the run that opened it (with a save spec)
---@field save luagent.SandboxSave? its sandbox.open save spec (`to` made absolute)
---@field outputs "none"|"saved"|"unsaved"|"lost" its save spec's outputs: none, saved home by its run, unsaved,
---or lost (its workspace was in memory and its container stopped)
---@field rescue_of string? set on the claim a rescuer makes: the session it rescues
---@field why string? (prune's kept list) why it was kept

---@class luagent.sandbox
local sandbox = {}

---The default image, "luagent-sandbox:latest".
sandbox.IMAGE = "luagent-sandbox:latest"
---The workspace folder inside a session, "/workspace".
sandbox.WORKSPACE = "/workspace"
---The defaults sandbox.open starts from (a recipe may change them).
---@type luagent.SandboxOptions
sandbox.defaults = {}

---Stages a host file (checked before anything starts).
---@param path string host path
---@return luagent.ManifestSource
function sandbox.file(path) end

---Stages a host folder; `exclude` globs are left out ("*.pyc", "__pycache__").
---@param path string host path
---@param opts? {exclude?: string[]}
---@return luagent.ManifestSource
function sandbox.dir(path, opts) end

---Stages a text.
---@param text string
---@return luagent.ManifestSource
function sandbox.text(text) end

---Starts a session: its own container and workspace volume, locked down,
---with the manifest staged. Options that are wrong raise; failures (no
---Docker engine, a missing image, a manifest file that is not there) return
---nil, err. Close it with box:close() or `local box <close> = ...`.
---@param opts? luagent.SandboxOptions
---@return luagent.Box? box
---@return luagent.Error? err
function sandbox.open(opts) end

---Keeps `size` sessions of the spec these options make started, their
---supervisor up and nothing staged: sandbox.open with options that make the
---same spec takes one (≈ 1 ms, plus staging its manifest) and the pool
---starts another in the background; a session is never handed out twice;
---an open of another spec starts cold. Returns once all are up. The pool is
---drained (its idle sessions removed) when the run that made it ends — also
---on an error or Ctrl-C — or by pool:close(); a crashed process's are
---removed by the next run's sweep or `luagent sandbox prune`. Bad options
---raise naming them; a pool the engine cannot hold (size x memory +
---tmp_size + workspace_size over the engine's memory), an image that is not
---there, an engine that does not answer: nil, err, and nothing left running.
---With several engines (`engines`) its sessions are placed like any
---session's, and it may not hold more than their capacities.
---@param opts luagent.SandboxPoolOptions
---@return luagent.SandboxPool? pool
---@return luagent.Error? err
function sandbox.pool(opts) end

---box:fork(n, opts) for a box (see there).
---@param box luagent.Box
---@param n integer
---@param opts? luagent.SandboxOptions
---@return luagent.Box[]? forks
---@return luagent.Error? err
function sandbox.fork(box, n, opts) end

---Closes every session still open, and drains every warm pool (luagent does
---this when the run ends).
function sandbox.close_all() end

---Every luagent sandbox the engine knows, oldest first.
---@param client luagent.engine_client.Client
---@return luagent.SandboxInfo[]? list
---@return luagent.Error? err
function sandbox.list(client) end

---Removes sandboxes (and their volumes) whose luagent process is gone; all of
---them with `{all = true}`. The unsaved outputs of a sandbox opened with
---save = {...} are rescued first into its run's folder (said through
---`say`, default stderr); one whose outputs could not be rescued (or, with
---all, whose run still goes) is removed only when `confirm(info, why)` says
---so, else kept. Returns what it removed and what it kept.
---@param client luagent.engine_client.Client
---@param opts? {all?: boolean, confirm?: fun(info: luagent.SandboxInfo, why: string): boolean, say?: fun(line: string)}
---@return luagent.SandboxInfo[]? removed
---@return luagent.SandboxInfo[]|luagent.Error kept_or_err
function sandbox.prune(client, opts) end

---Is the luagent process that made a sandbox with these labels still running?
---@param labels table<string, string>
---@return boolean
function sandbox.owner_alive(labels) end

---A Docker engine client sessions use: opts.engine, else the first engine
---that answers of opts.docker_host, opts.engines (sandbox.defaults.engines,
---LUAGENT_ENGINES), else the default one (one client per engine, made once).
---@param opts? {engine?: luagent.engine_client.Client, docker_host?: string, engines?: (string|luagent.SandboxEngine)[]|string}
---@return luagent.engine_client.Client? client
---@return luagent.Error? err
function sandbox.engine(opts) end

---A size ("512m", "2g", bytes) in bytes; raises naming `field` when it is not one.
---@param value string|integer
---@param field string
---@return integer
function sandbox.parse_size(value, field) end

---A sandbox session (made by sandbox.open). Paths are workspace paths
---(relative, or absolute under /workspace); a path leaving the workspace
---raises. After close, methods return nil, err (kind "closed").
---@class luagent.Box
---@field session string the session id (in container and volume names)
---@field container string the container id
---@field image string
---@field workdir string
---@field memory string|integer
---@field timeout number default seconds for a command
---@field max_output integer
---@field closed boolean
---@field restored luagent.ExtractReport? what sandbox.open{restore = ...} staged
---@field pooled boolean the session came from a warm pool (sandbox.pool, open's `pool`)
---@field mirror luagent.SandboxMirror? its outputs mirror (save = {...}, unless save.mirror = false)
---@field engine string the address of the Docker engine the session is on (unix://... or tcp://...)
local Box = {}

---Runs a command: a string runs under `sh -c`, a table is an argv. A command
---past its timeout is stopped with every process it started.
---@param cmd string|string[]
---@param opts? luagent.ExecOptions
---@return luagent.ExecResult? result
---@return luagent.Error? err
function Box:exec(cmd, opts) end

---Runs Python code in the session's persistent interpreter: variables and
---imports stay for the next call; the value of a final expression is printed.
---exit_code is 1 after an exception (its traceback is in stderr).
---@param code string
---@param opts? luagent.PythonOptions
---@return luagent.ExecResult? result
---@return luagent.Error? err
function Box:python(code, opts) end

---Starts a long-lived process (a server, a watcher) that outlives the call.
---Its whole tree stays the sandbox's: kill() or close() ends all of it, and
---every process still running is killed when the box closes.
---@param cmd string|string[]
---@param opts? luagent.SpawnOptions
---@return luagent.SandboxProcess? process
---@return luagent.Error? err
function Box:spawn(cmd, opts) end

---Writes a file into the workspace (folders are made).
---@param path string
---@param data string
---@param opts? {mode?: integer}
---@return true? ok
---@return luagent.Error? err
function Box:put(path, data, opts) end

---Reads a file from the workspace (at most max_bytes, 64 MiB by default).
---@param path string
---@param opts? {max_bytes?: integer}
---@return string? content
---@return luagent.Error? err
function Box:get(path, opts) end

---Copies a workspace folder (or file) into a host folder, safely: absolute
---names, "..", links leaving the folder, devices and entries over the limits
---are refused and reported; nothing lands outside host_dir. What is over
---the limits is refused in the sandbox without being read (a 1 TiB sparse
---file costs nothing), and what could not be brought back (unreadable,
---special files) is in report.refused with the reason.
---@param path string workspace path, e.g. "output"
---@param host_dir string
---@param opts? {max_bytes?: integer, max_entries?: integer}
---@return luagent.ExtractReport? report
---@return luagent.Error? err
function Box:extract(path, host_dir, opts) end

---Saves the whole workspace as a tar file (sandbox.open{restore = tar} brings it back).
---All of it or an error: over max_extract (kind too_large), or naming what
---could not be saved (a fifo, an unreadable file).
---@param host_tar string
---@return integer? bytes
---@return luagent.Error? err
function Box:snapshot(host_tar) end

---Stages a tar made by box:snapshot into the workspace, over what is there (as
---sandbox.open{restore = tar} does at the start): what a resumed run's box gets back.
---@param host_tar string
---@return true? ok
---@return luagent.Error? err
function Box:restore(host_tar) end

---n new sessions of this box's spec, each starting with a copy of its /workspace and /tmp (the
---sandbox user's HOME: pip --user, caches): opened like sandbox.open with the options this box
---was opened with (not its manifest, restore or save) and opts on top, all at once, from a warm
---pool of that spec when there is one. The copy is read once from this box's supervisor and
---written into every fork at once, streamed through the host (never on its disk), checked on the
---way like an extraction (nothing through a link or out of the folder). Not copied: the python
---interpreter (a fork's box:python starts clean), running processes, sockets and fifos, what a
---writable_root session wrote elsewhere. Errors: what this box holds over a fork's workspace_size
---or tmp_size (kind too_large, before anything opens), a file over max_extract (too_large), a
---closed box (closed), a fork that cannot open (its error, naming which): every fork opened is
---closed then. Traced as a `sandbox_fork` event. n not a whole number >= 1 raises.
---@param n integer
---@param opts? luagent.SandboxOptions without manifest and restore
---@return luagent.Box[]? forks
---@return luagent.Error? err
function Box:fork(n, opts) end

---The network of a box opened with rules (network = {allow = ...}): the rules, the counters and the last
---connections. nil for a box without rules (network = false or true).
---@return luagent.NetworkStatus?
function Box:network() end

---Adds allow rules to a live session, for the connections made from now on (deny still wins: allow never
---undoes a deny). Traced as a `network_rules` event. Raises on a bad rule, naming it
---(`box:allow[1] = "...": ...`), and on a box without rules.
---@param rules string[]|string
---@return true? ok
---@return luagent.Error? err kind "closed" after close
function Box:allow(rules) end

---Adds deny rules to a live session (for example: tighten after a dependency install), for the connections
---made from now on. Traced as a `network_rules` event; raises like box:allow.
---@param rules string[]|string
---@return true? ok
---@return luagent.Error? err kind "closed" after close
function Box:deny(rules) end

---Removes the container and its workspace volume; with `save` set, brings the
---results home first (outputs.collect; what the mirror copied counts when the
---sandbox cannot be read). Safe to call twice. A sandbox whose outputs could not be
---read for want of the Docker engine is kept (nil, err saying so): the next
---run, or `luagent sandbox prune`, rescues them into its run's folder.
---@return true? ok
---@return luagent.Error? err
function Box:close() end

---A process started by box:spawn. After close (its own or the box's), its
---methods return nil, err (kind "closed"); close is idempotent, also <close>.
---@class luagent.SandboxProcess
---@field id integer its id in the session
---@field command string the command, shortened
local Process = {}

---What it printed since the last read ("" when nothing); with seconds, waits
---that long at most for something to read.
---@param seconds? number
---@return string? stdout
---@return string|luagent.Error stderr_or_err
function Process:read(seconds) end

---Its end: the result (what it printed and no read took yet, exit code,
---killed, ...); with seconds, nil, err of kind "timeout" if it still runs then.
---@param seconds? number
---@return luagent.ExecResult? result
---@return luagent.Error? err
function Process:wait(seconds) end

---Sends a signal to its process group: a number or a name ("TERM", "INT", "HUP", ...).
---@param sig integer|string
---@return true? ok
---@return luagent.Error? err
function Process:signal(sig) end

---A terminal's new size (box:spawn(cmd, {tty = true})): its programs get SIGWINCH.
---Raises for a process without a terminal, or a size outside 1..9999.
---@param cols integer
---@param rows integer
---@return true? ok
---@return luagent.Error? err
function Process:resize(cols, rows) end

---Kills its whole tree now; wait() then gives the result (exit code 137 when
---its main process still ran; killed counts the others).
---@return true? ok
---@return luagent.Error? err
function Process:kill() end

---Writes to its standard input (box:spawn(cmd, {stdin = true})): returns once
---the process's pipe took the bytes, so a process that reads slowly holds its
---writer back. Writes from several tasks go whole, in call order. err kinds: io
---(it ended, or closed its stdin), refused (the data holds an API key), closed.
---Raises after close_stdin, or when it was started without stdin = true.
---@param data string
---@return true? ok
---@return luagent.Error? err
function Process:write(data) end

---Ends its standard input: it reads end-of-file after what was written.
---Idempotent; true for a process that ended or has no open stdin.
---@return true? ok
---@return luagent.Error? err
function Process:close_stdin() end

---Still running (not ended, not closed)?
---@return boolean
function Process:running() end

---Kills it if it still runs; the handle is closed.
---@return true
function Process:close() end

---A warm pool (made by sandbox.pool). Also `local pool <close> = ...`.
---@class luagent.SandboxPool
---@field id string in the label luagent.pool=<id> its sessions carry (also after hand-out)
---@field size integer
local Pool = {}

---Drains it: the sessions it did not hand out are removed (those still
---starting when they are up). Idempotent; handed-out boxes are not touched.
---@return true? ok
---@return luagent.Error? err
function Pool:close() end

---Waits until it is full again (after hand-outs); nil, err when sessions
---keep failing to start, or the pool is closed.
---@return true? ok
---@return luagent.Error? err
function Pool:wait() end

---How it stands.
---@return {size: integer, ready: integer, starting: integer, taken: integer, failures: integer}
function Pool:stats() end

return sandbox

---@meta luagent.sandbox_backend
-- The contracts behind a box, for whoever writes a sandbox backend (recipes
-- never need them): what a backend makes (a session), what runs commands in
-- it (its supervisor), and the raw result the supervisor gives. A backend
-- declares its session class as `---@class X: luagent.SandboxSession`, and
-- tests/lua/sandbox_backend_spec.lua checks that it has every method below.
-- The nouns (src/DESIGN.md, "Names"): a box is what a recipe holds; a session
-- is a backend's sandbox behind it (a container, a pod); the supervisor is the
-- program in the session that runs every command, and the host's handle on it;
-- its channel is the byte stream between them; the kernel is the one
-- persistent Python interpreter it keeps.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---A backend: makes sessions from a session spec (luagent.sandbox builds the spec).
---@class luagent.SandboxBackend
local SandboxBackend = {}

---The session exists (removable); nothing runs in it yet.
---@param client luagent.engine_client.Client the engine or cluster to make it on
---@param spec table the session spec
---@return luagent.SandboxSession? session
---@return luagent.Error? err
function SandboxBackend.create(client, spec) end

---An engine kind: what luagent.sandbox.engine_set asks of a place sessions go — a Docker
---engine (luagent.sandbox.docker_engine) or a Kubernetes cluster (luagent.sandbox.k8s_engine);
---luagent.sandbox.engine_kinds picks one by the address. tests/lua/sandbox_backend_spec.lua
---checks that each has every function below.
---@class luagent.SandboxEngineKind
---@field name "docker"|"k8s"
---@field backend luagent.SandboxBackend the backend that makes its sessions
---@field copy_image? fun(from: table, to: table, name: string): integer?, luagent.Error? images between two engines
local SandboxEngineKind = {}

---How messages name it: "the Docker engine at ADDRESS", "the Kubernetes cluster at ADDRESS".
---@param address string
---@return string
function SandboxEngineKind.what(address) end

---Connects (and checks that it answers) from an engine_config entry.
---@param entry table
---@return luagent.engine_client.Client? client
---@return luagent.Error? err
function SandboxEngineKind.connect(entry) end

---The error saying it does not answer (docker_unreachable, cluster_unreachable).
---@param address string
---@param err luagent.Error why
---@return luagent.Error
function SandboxEngineKind.unreachable(address, err) end

---An error when it does not answer a short call (a ping), else nil.
---@param client table
---@return luagent.Error?
function SandboxEngineKind.lost(client) end

---Has it the image (a cluster's nodes pull: always true)?
---@param client table
---@param name string
---@return boolean
function SandboxEngineKind.has_image(client, name) end

---Its runtimes: {names = {sorted}, default = NAME|nil, gvisor = {NAME = true}}.
---@param client table
---@return table? runtimes
---@return luagent.Error? err
function SandboxEngineKind.runtimes(client) end

---The config error for a runtime it lacks, saying how to add one.
---@param address string
---@param name string
---@param have table its runtimes
---@param from string the option that asked for it
---@return luagent.Error
function SandboxEngineKind.missing_runtime(address, name, have, from) end

---Bytes of memory it has for sessions (0: not known).
---@param client table
---@return number? bytes
---@return luagent.Error? err
function SandboxEngineKind.memory(client) end

---What doctor and `sandbox ls` say of it: {version, api, image = image.status | nil}.
---@param client table
---@param ref string the sandbox image
---@return table
function SandboxEngineKind.describe(client, ref) end

---Every luagent sandbox it holds: {{id, name, state, status, image, created, labels, alive?}}.
---@param client table
---@return table[]? sandboxes
---@return luagent.Error? err
function SandboxEngineKind.sandboxes(client) end

---Removes one of them (a sandboxes() row).
---@param client table
---@param c table
---@return true? ok
---@return luagent.Error? err
function SandboxEngineKind.remove_sandbox(client, c) end

---After a prune: what else it keeps for sessions (workspace volumes, Leases, rescue claims).
---@param client table
---@param all boolean
---@param owner_alive fun(labels: table): boolean
function SandboxEngineKind.prune_rest(client, all, owner_alive) end

---Removes a pool's sessions that were never handed out.
---@param client table
---@param pool_id string
---@param handed table<string, true> session ids handed out
function SandboxEngineKind.pool_strays(client, pool_id, handed) end

---Claims a leftover for a rescue: a lock, or nil and why (a string: another process has it).
---@param client table
---@param c table a sandboxes() row
---@param labels table the rescuer's owner labels
---@return any lock
---@return string|luagent.Error|nil why
function SandboxEngineKind.rescue_claim(client, c, labels) end

---@param client table
---@param lock any
function SandboxEngineKind.rescue_release(client, lock) end

---The leftover's object as the backend reads it.
---@param client table
---@param c table
---@return table? info
---@return luagent.Error? err
function SandboxEngineKind.inspect(client, c) end

---Does the leftover's workspace still hold what its commands wrote?
---@param info table
---@return boolean
function SandboxEngineKind.workspace_kept(info) end

---A session of the leftover (its supervisor started), for the rescue.
---@param client table
---@param info table
---@param limits {max_extract: integer, max_extract_entries: integer}
---@return luagent.SandboxSession
function SandboxEngineKind.adopt(client, info, limits) end

---A job: what one command runs.
---@class luagent.SandboxJob
---@field argv string[] the command line
---@field env? table<string, string> extra environment
---@field cwd? string
---@field stdin? string|true its input (then end-of-file), or true: kept open (a spawn)
---@field timeout? number seconds (0 or nil: none)
---@field max_output? integer bytes kept per stream

---A sandbox a backend made: a container (Docker), a pod (Kubernetes).
---@class luagent.SandboxSession
---@field id string the session id
---@field container string the container (or pod) name
---@field volume string? the workspace volume, where the backend has one
---@field restored luagent.ExtractReport? what a restore staged
---@field workspace_reset string? why the workspace was emptied since the open, or nil
---@field supervisor luagent.SandboxSupervisor? the live supervisor, once up
local SandboxSession = {}

---Started, the manifest staged, a snapshot restored.
---@return true? ok
---@return luagent.Error? err
function SandboxSession:start() end

---Runs a command to its end.
---@param job luagent.SandboxJob
---@return luagent.ExecResult? result
---@return luagent.Error? err
function SandboxSession:exec(job) end

---Python code in the persistent interpreter where there is one; one call at a time, in call order.
---@param code string
---@param opts {timeout?: number, max_output?: integer}
---@return luagent.ExecResult? result
---@return luagent.Error? err
function SandboxSession:python(code, opts) end

---A process that outlives the call (box:spawn).
---@param job luagent.SandboxJob
---@return luagent.SandboxProcess? process
---@return luagent.Error? err
function SandboxSession:spawn(job) end

---Tar entries (luagent.tar), names relative to the workspace.
---@param entries table[]
---@return true? ok
---@return luagent.Error? err
function SandboxSession:put(entries) end

---One file of the workspace.
---@param name string
---@param opts {max_bytes?: integer}
---@return string? content
---@return luagent.Error? err
---@return "supervisor"|"archive" via which way it came (traced as sandbox_file events)
function SandboxSession:read_file(name, opts) end

---One file into the workspace (box:put).
---@param name string
---@param data string
---@param mode? integer
---@return true? ok
---@return luagent.Error? err
---@return "supervisor"|"archive" via which way it went
function SandboxSession:put_file(name, data, mode) end

---A file or folder of the workspace into a host folder, safely.
---@param name string
---@param host_dir string
---@param opts {max_bytes?: integer, max_entries?: integer}
---@return luagent.ExtractReport? report
---@return luagent.Error? err
function SandboxSession:extract(name, host_dir, opts) end

---The workspace as a tar file on the host.
---@param host_tar string
---@return integer? bytes
---@return luagent.Error? err
function SandboxSession:snapshot(host_tar) end

---The live supervisor (a fork streams the workspace through it).
---@return luagent.SandboxSupervisor? supervisor
---@return luagent.Error? err
function SandboxSession:ready() end

---Removed; idempotent; a failed removal is tried again.
---@return true? ok
---@return luagent.Error? err
function SandboxSession:remove() end

---A warm pool's: waits until commands can run (the supervisor is up).
---@return true? ok
---@return luagent.Error? err
function SandboxSession:warm() end

---A warm pool's: still up and never used since warm.
---@return boolean
function SandboxSession:alive() end

---A warm pool's, where other processes could take the same session (a cluster's warm pod):
---claims it for this process: true; "taken" when another did first (the pool lets go of it and
---never removes it); false when it cannot be used. Optional: a session without it is this
---process's alone.
---@return boolean|"taken"
function SandboxSession:claim() end

---A warm pool's: stages what the open that takes it asks (and what a restart stages again).
---@param staged table
---@param restore? table
---@return true? ok
---@return luagent.Error? err
function SandboxSession:stage(staged, restore) end

---The host's handle on a session's supervisor (luagent.sandbox.supervisor):
---requests as src/core/supervisor_ops.def declares them, over its channel.
---@class luagent.SandboxSupervisor
local SandboxSupervisor = {}

---false, why: it died (the session restarts it).
---@return boolean alive
---@return string? why
function SandboxSupervisor:alive() end

---Sends a job as an answered op of the declaration ("run", "spawn", "python", "pack", "list",
---"read", "put", "watch"); sets job.id.
---@param op string
---@param job table
---@return true? ok
---@return luagent.Error? err
function SandboxSupervisor:send(op, job) end

---true: it ended; false: seconds passed (with on_output: or output came).
---@param job table
---@param seconds? number
---@param on_output? fun()
---@return boolean? ended
---@return luagent.Error? err
function SandboxSupervisor:wait(job, seconds, on_output) end

---The output since the last take.
---@param job table
---@return string stdout
---@return string stderr
function SandboxSupervisor:take(job) end

---@param job table
---@return true? ok
---@return luagent.Error? err
function SandboxSupervisor:kill(job) end

---@param job table
---@param signo integer
---@return true? ok
---@return luagent.Error? err
function SandboxSupervisor:signal(job, signo) end

---The job's raw result, once it ended; the job is forgotten.
---@param job table
---@return luagent.SupervisorResult
function SandboxSupervisor:result(job) end

---The last result's mark: the change generation of the folder a `watch` named, or nil.
---@return integer?
function SandboxSupervisor:mark() end

function SandboxSupervisor:close() end

---What the supervisor says of a command that ended (its X frame and what came before);
---luagent.sandbox.command turns it into a luagent.ExecResult.
---@class luagent.SupervisorResult
---@field stdout string kept up to max_output (head and tail when cut)
---@field stderr string
---@field exit_code integer
---@field timed_out boolean
---@field oom_killed boolean
---@field killed integer processes it left that were killed
---@field truncated boolean
---@field stdout_bytes integer
---@field stderr_bytes integer
---@field state_lost boolean python: the interpreter was restarted before this call
---@field failure string? why it could not start or finish ("cannot run python3", ...)
---@field mark integer? a watched folder's change generation
---@field report luagent.ExtractReport? a pack extracted on the host
---@field saved integer? a pack saved as a file: its bytes
---@field sink_error luagent.Error? why the pack's extraction or file failed

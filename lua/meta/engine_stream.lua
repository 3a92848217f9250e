---@meta luagent.engine_stream
-- luagent.engine_stream, a low-level module: recipes normally do not need it (the
-- recipe API, luagent.sandbox, .model, .agent, ..., is built on it). It is
-- not a field of the `luagent` class. LuaLS annotations: definitions only.
-- LuaLS takes one module per file: `---@meta luagent.engine_stream` above makes
-- `require "luagent.engine_stream"` give the types of the table returned below.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---@class luagent.engine_stream.Endpoint
---@field unix_socket string?
---@field url string
---@field ca_file string?
---@field cert_file string?
---@field key_file string?
---@field description string

---low-level: recipes normally do not need this (luagent.sandbox uses it).
---luagent.engine_stream: the raw streaming half of the Docker client, in C
---(src/lua/lua_engine_stream.c): exec output, archives, the supervisor channel.
---@class luagent.engine_stream
---@field SUPERVISOR_OPS table<string, {answered: boolean, fields: string[], required: table<string, boolean>}> the
---supervisor protocol's operations as src/core/supervisor_ops.def declares them (luagent.sandbox.supervisor builds its
---requests from it)
local engine_stream = {}

---The engine's address from DOCKER_HOST & co.
---@param docker_host? string
---@return luagent.engine_stream.Endpoint? endpoint
---@return luagent.Error? err
function engine_stream.endpoint(docker_host) end

---POST /exec/ID/start: opts are http options + max_output (bytes per stream).
---@param opts table
---@return luagent.engine_stream.ExecStream
function engine_stream.exec_start(opts) end

---Streams tar entries into a container (opts.entries, opts.uid/gid).
---@param opts table
---@return true? ok
---@return luagent.Error? err
function engine_stream.put_archive(opts) end

---Extracts a container path safely into opts.dest (strip, max_bytes, max_entries).
---@param opts table
---@return luagent.ExtractReport? report
---@return luagent.Error? err
function engine_stream.get_archive(opts) end

---Saves a container path's raw tar into opts.path (at most opts.max_bytes).
---@param opts table
---@return integer? bytes
---@return luagent.Error? err
function engine_stream.save_archive(opts) end

---The first file of a container path's archive, at most opts.max_bytes.
---@param opts table
---@return string? content
---@return luagent.Error? err
function engine_stream.read_file(opts) end

---Where the supervisor channel connects: a Docker exec's start (client:options("/exec/ID/start", ...)),
---or with websocket = true a Kubernetes exec (src/core/kube_exec.h).
---@class luagent.engine_stream.SupervisorOptions
---@field url string? http(s)://host[:port]/vX/exec/ID/start, or with websocket the exec's
---https://API/api/v1/namespaces/NS/pods/POD/exec?container=C&command=...&stdin=true&stdout=true&stderr=true
---@field unix_socket string? connect through this socket (with url, or path)
---@field path string? with unix_socket: the request's path (url = "http://localhost" .. path)
---@field body string? Docker's start body ('{"Detach":false,"Tty":false}'); a websocket sends none
---@field websocket boolean? a Kubernetes exec: GET upgraded to a WebSocket speaking v5.channel.k8s.io or
---v4.channel.k8s.io (channel 0 stdin, 1 stdout, 2 stderr, 3 the Status that says how it ended)
---@field headers table<string, string>? with websocket: more request headers ({Authorization = "Bearer ..."})
---@field ca_file string?
---@field cert_file string?
---@field key_file string?
---@field ca_pem string? the CA as PEM text (a kubeconfig's certificate-authority-data, decoded)
---@field cert_pem string? our certificate as PEM text (client-certificate-data)
---@field key_pem string? its key as PEM text (client-key-data)
---@field insecure boolean? skip the peer's certificate checks
---@field connect_timeout number? seconds for the connection and the TLS handshake (10)
---@field timeout number? seconds for serve to say it is ready, "R 2" (15)

---A hijacked attach to an exec of `luagent-supervisor serve` in a session
---(sandbox/supervisor/DESIGN.md) over the engine's socket, TCP or TLS — or, with
---opts.websocket, a Kubernetes exec of it over the API server's WebSocket; returns once it
---said it is ready ("R 2"). Before the engine let the attach through, err's kind is
---docker_unreachable or cluster_unreachable (no connection), tls, docker or kubernetes (the
---upgrade refused: the engine's own words, err.status its HTTP status), network or
---protocol; afterwards supervisor_lost (for a Kubernetes exec, its reason says how the exec
---ended: the Status's message).
---@param opts luagent.engine_stream.SupervisorOptions
---@return luagent.engine_stream.SupervisorChannel? channel
---@return luagent.Error? err
function engine_stream.supervisor(opts) end

---The host's side of a sandbox's egress relay (`luagent-supervisor egress PORT`):
---connections the sandbox makes to its proxy port, decided by luagent.sandbox.egress and
---spliced here in C (src/lua/lua_egress.c lists the handle's methods). Returns once the
---relay said it listens. opts.ca = true: a per-session CA for TLS ending at luagent.
---@param opts table client:options("/exec/ID/start", {body, timeout, ca})
---@return table? egress
---@return luagent.Error? err
function engine_stream.egress(opts) end

---The error value for a Docker engine error response: kind not_found (404),
---conflict (409) or docker, with the engine's own message read from the body.
---@param status integer the HTTP status
---@param body string the response body ({"message": "..."} or text)
---@param what string? what was being done ("POST /containers/create"), put before the message
---@return luagent.Error err fields status, engine_message
function engine_stream.engine_error(status, body, what) end

---@class luagent.engine_stream.ExecOutput
---@field stdout string
---@field stderr string
---@field truncated boolean
---@field stdout_bytes integer
---@field stderr_bytes integer

---The output of one Docker exec.
---@class luagent.engine_stream.ExecStream
local ExecStream = {}

---true when the command's output ended, false if the seconds passed first (yields).
---@param seconds? number
---@return boolean
function ExecStream:wait(seconds) end

---The output (after wait returned true, or abort).
---@return luagent.engine_stream.ExecOutput? output
---@return luagent.Error? err
function ExecStream:result() end

---Stops reading; result() then gives the output so far.
function ExecStream:abort() end

---Closes the stream (also __close and __gc).
function ExecStream:close() end

---@class luagent.engine_stream.SupervisorResult: luagent.engine_stream.ExecOutput
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
---@class luagent.engine_stream.SupervisorChannel
local SupervisorChannel = {}

---Sends a request: op "run" | "spawn" ({argv, env = {"K=v"}, cwd, stdin,
---timeout}), "python" ({code, timeout}), "pack" ({path, max_bytes,
---max_entries}), "list" ({path, max_entries}), "read" ({path, max_bytes}: the file as
---stdout), "put" ({path, data, mode}), "write" | "eof" ({target, data}),
---"kill" | "signal" ({signal}) of an earlier id. opts:
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

---What command id printed since the last fresh, without taking it from its
---result (the first call starts keeping it and returns "", ""); wait(id, s,
---true) then wakes on fresh output. Past 1 MiB unread per stream the excess
---is dropped, said in the text.
---@param id integer
---@return string stdout
---@return string stderr
function SupervisorChannel:fresh(id) end

---Its result; forgets the id.
---@param id integer
---@return luagent.engine_stream.SupervisorResult
function SupervisorChannel:result(id) end

---@return boolean alive
---@return string? reason
function SupervisorChannel:alive() end

function SupervisorChannel:close() end

return engine_stream

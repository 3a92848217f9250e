---@meta luagent.errors
-- luagent.errors: the one error value every layer returns, and the catalogue
-- of its kinds (lua/luagent/errors.lua, src/lua/lua_errors.c).
--
-- Every expected failure, in C and in Lua, is `nil, err` with `err` one of
-- these; `tostring(err)` reads "kind: message". Misuse (a wrong argument
-- type) raises instead, naming the argument. LuaLS annotations: definitions only.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---Every kind in errors.KINDS (keep this list in step with lua/luagent/errors.lua).
---@alias luagent.ErrorKind
---| "io"                 # reading or writing a host file failed (disk full, a broken pipe, ...)
---| "not_found"          # a file, path, container, image or recording that does not exist
---| "permission"         # the operating system refused access to a file
---| "exists"             # something is already there where a new one was to be made
---| "not_a_file"         # a folder or a special file where a regular file was expected
---| "too_large"          # over a size limit (max_bytes, max_extract, a response body cap)
---| "tool"               # a tool could not do what the model asked
---| "mcp"                # an MCP server exited, or refused a request (a JSON-RPC error)
---| "tar"                # a tar archive that is damaged or breaks the extraction rules
---| "bad_entry"          # a manifest or tar entry that cannot be staged (bad path, missing source)
---| "json"               # text that is not valid JSON
---| "yaml"               # text that is not valid YAML (the message names file, line and column)
---| "config"             # a setting or option that is missing or wrong; the message says which
---| "timeout"            # no answer in time (a call's timeout or idle timeout) - retryable
---| "connect"            # the server could not be reached (refused, unknown host) - retryable
---| "network"            # the connection broke while talking to the server - retryable
---| "tls"                # the TLS handshake or the certificate check failed
---| "protocol"           # the peer broke its protocol (HTTP, the exec stream, the supervisor channel)
---| "bad_url"            # a URL that is malformed or of an unsupported scheme
---| "aborted"            # a transfer stopped on purpose (a callback said stop)
---| "auth"               # the provider refused the API key (HTTP 401/403)
---| "rate_limit"         # the provider asked to slow down (HTTP 429); retry_after says how long - retryable
---| "quota"              # the account has no credit or quota left
---| "server"             # the provider failed (HTTP 5xx, an overloaded error) - retryable
---| "bad_request"        # the provider refused the request as malformed (HTTP 4xx)
---| "bad_response"       # the provider's answer could not be understood (bad JSON, a cut stream)
---| "invalid_output"     # a structured answer that does not match its schema; err.errors says where
---| "replay_mismatch"    # a replayed run made a request the recording does not have
---| "docker"             # the Docker engine refused or failed a call; the message has its words
---| "docker_unreachable" # the Docker engine does not answer at its socket or address - retryable
---| "capacity" # no engine has room: each holds its capacity (URL#N), or no node of a cluster fits the pod - retryable
---| "kubernetes" # the Kubernetes API server refused or failed a call; the message has its words
---| "cluster_unreachable" # the Kubernetes API server does not answer at its address - retryable
---| "conflict"           # the engine says the object is in the wrong state (HTTP 409)
---| "supervisor_lost"    # the channel to a sandbox's supervisor ended (sessions report sandbox_restarted) - retryable
---| "sandbox_restarted"  # the sandbox's supervisor or container died; the session is back, its Python state lost
---| "refused"            # refused by a safety rule (an API key in a command, a path leaving the workspace)
---| "egress_lost"        # a sandbox's egress relay ended; luagent starts it again - retryable
---| "denied"             # a sandbox's network rules refused a connection
---| "incomplete"         # the run finished, but its outputs are not all known to be on the host: exit 1
---| "usage"              # the command line asks for what the recipe cannot take (--set of the wrong shape): exit 2
---| "waiting"            # the run stopped to wait for a person (approve = "defer"): luagent approve RUN; exit 3
---| "closed"             # the sandbox session or handle was already closed
---| "build"              # building the sandbox image failed
---| "cancelled"          # the run is stopping (Ctrl-C, SIGTERM) or the task was cancelled
---| "deadlock"           # a task waits for something that can never happen
---| "error"              # a raised error that was not a luagent error value (its text is the message)

---An error value. `kind` and `message` are always there; the detail fields
---are set by the layer that knows them.
---@class luagent.Error
---@field kind luagent.ErrorKind what went wrong, from the catalogue: policies decide on it alone
---@field message string what failed and what to do; `tostring(err)` is "kind: message"
---@field status integer? HTTP status (a provider's answer, the Docker engine's, a cut stream)
---@field retry_after number? seconds the server asked to wait (Retry-After, rate-limit reset headers)
---@field attempts integer? how many attempts luagent.retry.call made before giving up
---@field path string? the host path (luagent.fs)
---@field file string? the file a YAML error is in
---@field line integer? 1-based line of a YAML error
---@field column integer? 1-based column of a YAML error
---@field position integer? 1-based byte offset of a JSON error
---@field provider string? the model provider ("openai", "openai_responses", "anthropic", "fallback", ...)
---@field model string? the model name
---@field type string? the provider's error type
---@field code string? the provider's error code (e.g. "insufficient_quota")
---@field provider_message string? the provider's own words
---@field errors luagent.Error[]? every model's error (model.fallback)
---@field engine_message string? the Docker engine's own words
---@field endpoint string? the Docker engine that could not be reached
---@field key string? the manifest entry at fault
---@field cause luagent.Error? the error errors.wrap wrapped
---@field [string] any other details

---One line of the catalogue.
---@class luagent.ErrorKindInfo
---@field retry boolean can trying again help?
---@field about string what the kind means

---@class luagent.errors
local errors = {}

---kind -> {retry, about}: every kind an error value may have.
---@type table<luagent.ErrorKind, luagent.ErrorKindInfo>
errors.KINDS = {}

---Old names of kinds, accepted for one release where a kind is named: `runner` is now `supervisor_lost`.
---@type table<string, luagent.ErrorKind>
errors.ALIASES = {}

---The catalogue's name for `kind`: an old name's new one, anything else as it is.
---@param kind string
---@return string
function errors.canonical(kind) end

---The metatable every error value shares (C and Lua made).
---@type table
errors.metatable = {}

---A new error value; `fields` are copied into it. An unknown kind raises.
---@param kind luagent.ErrorKind
---@param message string
---@param fields? table details: status, path, retry_after, ...
---@return luagent.Error
function errors.new(kind, message, fields) end

---`nil, errors.new(kind, message, fields)`, for `return errors.fail(...)`.
---@param kind luagent.ErrorKind
---@param message string
---@param fields? table
---@return nil
---@return luagent.Error
function errors.fail(kind, message, fields) end

---Is `v` a luagent error value (made in C or in Lua)?
---@param v any
---@return boolean
function errors.is(v) end

---Any error (an error value, a plain {kind, message} table, a raised string)
---as an error value; a known kind is kept, anything else becomes kind "error".
---@param v any
---@return luagent.Error
function errors.from(v) end

---The same error with "what: " before its message (a new value; the old one
---is kept as `cause`).
---@param err any
---@param what string
---@return luagent.Error
function errors.wrap(err, what) end

---Can trying again help? (from the catalogue)
---@param err any
---@return boolean
function errors.retryable(err) end

return errors

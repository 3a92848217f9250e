-- luagent.errors: the one error value every layer returns, and the catalogue
-- of its kinds.
--
--   local errors = require "luagent.errors"
--   return nil, errors.new("not_found", "no such file: data.csv", {path = "data.csv"})
--   tostring(err) reads "kind: message". The functions: lua/meta/errors.lua.
--
-- Every expected failure, in C and in Lua, is `nil, err` with err one of
-- these (kind, message, and details such as status, path, retry_after);
-- misuse (a wrong argument type) raises, naming the argument. Policies —
-- retry, model fallback, the agent loop, eval checks — decide on `kind` alone.
local core = require "luagent.errors.core"

local errors = {}

local MT = core.metatable
MT.__name = "luagent.error"
errors.metatable = MT

-- kind -> {retry = can trying again help?, about = what it means}
errors.KINDS = {
  -- files, archives, data
  io = {retry = false, about = "reading or writing a host file failed (disk full, a broken pipe, ...)"},
  not_found = {retry = false, about = "a file, path, container, image or recording that does not exist"},
  permission = {retry = false, about = "the operating system refused access to a file"},
  exists = {retry = false, about = "something is already there where a new one was to be made"},
  not_a_file = {retry = false, about = "a folder or a special file where a regular file was expected"},
  too_large = {retry = false, about = "over a size limit (max_bytes, max_extract, a response body cap)"},
  tar = {retry = false, about = "a tar archive that is damaged or breaks the extraction rules"},
  bad_entry = {retry = false, about = "a manifest or tar entry that cannot be staged (bad path, missing source)"},
  json = {retry = false, about = "text that is not valid JSON"},
  yaml = {retry = false, about = "text that is not valid YAML (the message names file, line and column)"},
  config = {retry = false, about = "a setting or option that is missing or wrong; the message says which"},
  -- HTTP transport
  timeout = {retry = true, about = "no answer in time (a call's timeout or idle timeout)"},
  connect = {retry = true, about = "the server could not be reached (refused, unknown host)"},
  network = {retry = true, about = "the connection broke while talking to the server"},
  tls = {retry = false, about = "the TLS handshake or the certificate check failed"},
  protocol = {retry = false, about = "the peer broke its protocol (HTTP, the exec stream, the supervisor channel)"},
  bad_url = {retry = false, about = "a URL that is malformed or of an unsupported scheme"},
  aborted = {retry = false, about = "a transfer stopped on purpose (a callback said stop)"},
  -- model providers
  auth = {retry = false, about = "the provider refused the API key (HTTP 401/403)"},
  rate_limit = {retry = true, about = "the provider asked to slow down (HTTP 429); retry_after says how long"},
  quota = {retry = false, about = "the account has no credit or quota left"},
  server = {retry = true, about = "the provider failed (HTTP 5xx, an overloaded error)"},
  bad_request = {retry = false, about = "the provider refused the request as malformed (HTTP 4xx)"},
  bad_response = {retry = false, about = "the provider's answer could not be understood (bad JSON, a cut stream)"},
  invalid_output = {retry = false, about = "a structured answer that does not match its schema; err.errors says where"},
  replay_mismatch = {retry = false, about = "a replayed run made a request the recording does not have"},
  -- Docker, Kubernetes and sandboxes
  docker = {retry = false, about = "the Docker engine refused or failed a call; the message has its words"},
  docker_unreachable = {retry = true, about = "the Docker engine does not answer at its socket or address"},
  capacity = {retry = true, about = "no engine has room: each holds its capacity (URL#N), or no node of a cluster fits the pod"},
  kubernetes = {retry = false, about = "the Kubernetes API server refused or failed a call; the message has its words"},
  cluster_unreachable = {retry = true, about = "the Kubernetes API server does not answer at its address"},
  conflict = {retry = false, about = "the engine says the object is in the wrong state (HTTP 409)"},
  supervisor_lost = {retry = true,
                     about = "the channel to a sandbox's supervisor ended (sessions report sandbox_restarted)"},
  sandbox_restarted = {retry = false, about = "the sandbox's supervisor or container died; the session is back, "
    .. "its Python state lost: the call may have run in part"},
  refused = {retry = false, about = "refused by a safety rule (an API key in a command, a path leaving the workspace)"},
  egress_lost = {retry = true, about = "a sandbox's egress relay (its way out, by network rules) ended; luagent starts "
    .. "it again"},
  incomplete = {retry = false, about = "the run finished, but what it made is not all known to be on the host (its "
    .. "sandbox could not be read at the end); it says what was saved and when"},
  usage = {retry = false, about = "the command line asks for what the recipe cannot take (a --set of the wrong "
    .. "shape): luagent says so and exits 2"},
  waiting = {retry = false, about = "the run stopped to wait for a person (approve = \"defer\"): luagent approve RUN, "
    .. "then luagent run --resume RUN; exit 3"},
  denied = {retry = false, about = "a sandbox's network rules refused a connection (the reason names the rule)"},
  closed = {retry = false, about = "the sandbox session or handle was already closed"},
  build = {retry = false, about = "building the sandbox image failed"},
  -- tasks
  cancelled = {retry = false, about = "the run is stopping (Ctrl-C, SIGTERM) or the task was cancelled"},
  deadlock = {retry = false, about = "a task waits for something that can never happen"},
  -- agents
  tool = {retry = false, about = "a tool could not do what the model asked; the agent shows the model why"},
  mcp = {retry = false, about = "an MCP server exited, or refused a request (a JSON-RPC error); the message names it"},
  -- anything else
  error = {retry = false, about = "a raised error that was not a luagent error value (its text is the message)"},
}

-- Old names of kinds, accepted for one release wherever a kind is named
-- (errors.new, a retry policy's `on`, errors.canonical); values carry the new one.
errors.ALIASES = {runner = "supervisor_lost"}

-- The catalogue's name for kind (an alias's new name; anything else as it is).
function errors.canonical(kind)
  return errors.ALIASES[kind] or kind
end

local function check_kind(kind, level)
  if type(kind) ~= "string" or not errors.KINDS[kind] then
    error(("errors.new: unknown error kind %s (see luagent.errors.KINDS)"):format(tostring(kind)), level + 1)
  end
end

-- errors.new(kind, message [, fields]) -> err   fields are copied into it
function errors.new(kind, message, fields)
  kind = errors.canonical(kind)
  check_kind(kind, 2)
  local err = {}
  for k, v in pairs(fields or {}) do err[k] = v end
  err.kind, err.message = kind, tostring(message or kind)
  return setmetatable(err, MT)
end

-- errors.fail(kind, message [, fields]) -> nil, err   for `return errors.fail(...)`
function errors.fail(kind, message, fields)
  kind = errors.canonical(kind)
  check_kind(kind, 2)
  return nil, errors.new(kind, message, fields)
end

function errors.is(v)
  return getmetatable(v) == MT
end

-- Any error (an error value, a plain {kind, message} table, a string) as an
-- error value; a known kind is kept.
function errors.from(v)
  if errors.is(v) then return v end
  if type(v) == "table" then
    local kind = errors.KINDS[v.kind] and v.kind or "error"
    local fields = {}
    for k, item in pairs(v) do fields[k] = item end
    return errors.new(kind, v.message or tostring(v.kind or "error"), fields)
  end
  return errors.new("error", tostring(v))
end

-- The same error with "what: " before its message (a new value; the old one
-- is kept as `cause`).
function errors.wrap(err, what)
  err = errors.from(err)
  local fields = {}
  for k, v in pairs(err) do fields[k] = v end
  fields.cause = err
  return errors.new(err.kind, what .. ": " .. err.message, fields)
end

function errors.retryable(err)
  local entry = type(err) == "table" and errors.KINDS[err.kind]
  return entry and entry.retry or false
end

return errors

---@meta luagent.engine_client
-- luagent.engine_client, a low-level module: recipes normally do not need it (the
-- recipe API, luagent.sandbox, .model, .agent, ..., is built on it). It is
-- not a field of the `luagent` class. LuaLS annotations: definitions only.
-- LuaLS takes one module per file: `---@meta luagent.engine_client` above makes
-- `require "luagent.engine_client"` give the types of the table returned below.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---low-level: recipes normally do not need this (luagent.sandbox uses it).
---luagent.engine_client: the Docker Engine API client, JSON calls in Lua (lua/luagent/engine_client.lua).
---@class luagent.engine_client
---@field MAX_API string the newest API version it speaks
---@field MIN_API string the oldest it accepts
local engine_client = {}

---Connects (DOCKER_HOST or /var/run/docker.sock) and negotiates the API version.
---opts.tls: a tcp:// host's TLS files ({ca_file, cert_file, key_file}) or false
---(plain TCP), in place of DOCKER_TLS_VERIFY/DOCKER_CERT_PATH.
---@param opts? {host?: string, timeout?: number, tls?: {ca_file: string, cert_file?: string, key_file?: string}|false}
---@return luagent.engine_client.Client? client
---@return luagent.Error? err kind "docker_unreachable", "docker", "tls", or "config" (a TLS file missing)
function engine_client.connect(opts) end

---Percent-encodes a string for a URL.
---@param s any
---@return string
function engine_client.urlencode(s) end

---"?a=1&b=2" from a table (tables as JSON, booleans as 1/0), "" for nil.
---@param query table?
---@return string
function engine_client.query_string(query) end

---The error value of an engine's error answer (not_found, conflict, docker).
---@param res luagent.HttpResponse
---@param what string
---@return luagent.Error
function engine_client.error_from_response(res, what) end

---A connection to one Docker engine.
---@class luagent.engine_client.Client
---@field endpoint luagent.engine_stream.Endpoint
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

---Options for luagent.engine_stream's streaming calls to `path`, merged with extra.
---@param path string
---@param extra? table
---@return table
function Client:options(path, extra) end

return engine_client

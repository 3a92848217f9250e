---@meta luagent.kube.client
-- luagent.kube.client, a low-level module: recipes normally do not need it (a
-- Kubernetes sandbox backend is built on it). LuaLS annotations: definitions only.
-- LuaLS takes one module per file: `---@meta luagent.kube.client` above makes
-- `require "luagent.kube.client"` give the types of the table returned below.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---low-level: recipes normally do not need this (a Kubernetes backend uses it).
---luagent.kube.client: the Kubernetes API client, JSON calls in Lua over luagent.http
---(lua/luagent/kube/client.lua). Errors: not_found (404), conflict (409, err.reason
---"AlreadyExists" or "Conflict"), kubernetes (any other refusal, with the API server's
---words), cluster_unreachable, tls, timeout.
---@class luagent.kube.client
---@field CONNECT_TIMEOUT number seconds: GET /version at connect, and connecting for any call (5)
---@field CALL_TIMEOUT number seconds: a call without opts.timeout (60)
---@field WATCH_TIMEOUT number seconds: a watch without opts.timeout (60)
local kube = {}

---Connects: the first connect to a (server, credentials) asks GET /version (5 s); later
---ones reuse its answer and its request options (so curl reuses its connections).
---Raises when conn is not a connection.
---@param conn luagent.kube.Connection from luagent.kube.config.load
---@return luagent.kube.Client? client
---@return luagent.Error? err kind "cluster_unreachable", "tls", "kubernetes" (e.g. 401) or "timeout"
function kube.connect(conn) end

---The error value of an error answer, read from its Status body: kind not_found (404),
---conflict (409) or kubernetes; status, reason, api_message, causes; the message
---"WHAT: the API server of k8s://CONTEXT (SERVER) says: MESSAGE [causes] (REASON, HTTP N)."
---@param res luagent.HttpResponse
---@param what string e.g. "GET /api/v1/namespaces/NS/pods/NAME"
---@param client? luagent.kube.Client names the endpoint (and its credentials, for a 401)
---@return luagent.Error
function kube.error_from_response(res, what, client) end

---Where a client talks to.
---@class luagent.kube.Endpoint
---@field description string "k8s://CONTEXT (https://HOST:PORT)"
---@field server string
---@field namespace string the context's
---@field context string

---Options of client:call.
---@class luagent.kube.CallOptions
---@field query? table|string the query, a table (luagent.engine_client.query_string) or the text after "?"
---@field timeout? number seconds (default kube.CALL_TIMEOUT)
---@field patch? "merge"|"json"|"strategic" a PATCH body's type (default "merge")

---A watch event.
---@class luagent.kube.WatchEvent
---@field type "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"
---@field object table

---A connection to one cluster, as one context sees it.
---@class luagent.kube.Client
---@field conn luagent.kube.Connection
---@field endpoint luagent.kube.Endpoint
---@field server_version string the API server's gitVersion
local KubeClient = {}

---A JSON call: body (a table) is sent as JSON (a PATCH as opts.patch says), the answer
---decoded (true for an empty one). Failures: nil, err (see the module).
---@param method string
---@param path string e.g. "/api/v1/namespaces/NS/configmaps"
---@param body? table|string
---@param opts? luagent.kube.CallOptions
---@return any? value
---@return luagent.Error? err
function KubeClient:call(method, path, body, opts) end

---Watches path (a collection; query with e.g. fieldSelector, labelSelector) and calls
---on_event(event) for each event, the current objects first as ADDED; returns the event
---at which on_event returned true. A watch the server ends is started again from the last
---resourceVersion seen, until opts.timeout (default kube.WATCH_TIMEOUT): then nil, err of
---kind timeout. An ERROR event is an error as kube.error_from_response reads it.
---@param path string
---@param query? table
---@param on_event fun(event: luagent.kube.WatchEvent): boolean?
---@param opts? {timeout?: number}
---@return luagent.kube.WatchEvent? event
---@return luagent.Error? err
function KubeClient:watch(path, query, on_event, opts) end

---The options a WebSocket stream (a pod's exec) needs: {url = server .. path, the TLS
---options (ca_pem or ca_file, cert_pem or cert_file, key_pem or key_file, insecure),
---headers = {Authorization = "Bearer ..."} with a token, websocket = true}, merged with
---extra (its headers added to these).
---@param path string with its query, e.g. "/api/v1/namespaces/NS/pods/NAME/exec?command=..."
---@param extra? table
---@return table
function KubeClient:stream_options(path, extra) end

return kube

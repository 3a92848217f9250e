---@meta luagent.kube.config
-- luagent.kube.config, a low-level module: recipes normally do not need it (a
-- Kubernetes sandbox backend is built on it). LuaLS annotations: definitions only.
-- LuaLS takes one module per file: `---@meta luagent.kube.config` above makes
-- `require "luagent.kube.config"` give the types of the table returned below.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---low-level: recipes normally do not need this (a Kubernetes backend uses it).
---luagent.kube.config: the user's kubeconfig read as kubectl reads it (lua/luagent/kube/config.lua):
---KUBECONFIG (a colon-separated list, merged: the first file naming an entry wins, current-context
---from the first file setting one) or ~/.kube/config; with neither, the in-cluster config of a pod.
---@class luagent.kube.config
---@field IN_CLUSTER_DIR string where a pod's service account token, ca.crt and namespace are
local config = {}

---TLS settings of a connection, as luagent.http takes them: PEM text (from a kubeconfig's
---*-data fields, decoded in memory, never written to disk) or file names (absolute).
---@class luagent.kube.Tls
---@field ca_pem? string
---@field ca_file? string
---@field cert_pem? string
---@field cert_file? string
---@field key_pem? string
---@field key_file? string
---@field insecure? boolean insecure-skip-tls-verify

---A resolved connection: what luagent.kube.client.connect takes.
---@class luagent.kube.Connection
---@field context string the context's name ("in-cluster" in a pod)
---@field cluster? string the cluster entry's name
---@field user? string the user entry's name (nil: the context names none)
---@field server string "https://HOST:PORT", without a trailing slash
---@field namespace string the context's namespace, else "default"
---@field tls luagent.kube.Tls
---@field token? string a bearer token (from `token`, or `tokenFile` read when loaded)
---@field source string which file(s) the context, cluster and user came from
---@field files string[] the kubeconfig files read, in order (empty in a pod)
---@field ca_from string where the CA comes from ("certificate-authority-data of cluster X in FILE", ...)
---@field auth_from string which credentials, from where ("client certificate of user X in FILE", ...)

---Options of config.load, for tests.
---@class luagent.kube.LoadOptions
---@field env? table<string, string> read these in place of the environment (KUBECONFIG, HOME, KUBERNETES_SERVICE_HOST, ...)
---@field root? string a folder standing for / when looking for the in-cluster files

---Loads the connection of a context (nil: the current context). Failures: nil, err of kind
---"config", whose message names the file (and line) and the field (err.file, err.field):
---unsupported credentials (exec, auth-provider, username/password, impersonation), a context,
---cluster or user that is not there (the ones there listed), a file a field names that cannot be
---read, *-data that is not base64 PEM, no kubeconfig at all (where it looked).
---@param context? string
---@param opts? luagent.kube.LoadOptions
---@return luagent.kube.Connection? conn
---@return luagent.Error? err
function config.load(context, opts) end

---The bytes of base64 text (whitespace ignored), or nil when it is not base64.
---@param text string
---@return string?
function config.base64_decode(text) end

return config

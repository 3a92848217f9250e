---@meta luagent.http
-- luagent.http: HTTP requests over libcurl (src/lua/lua_http.c). A request
-- yields inside a task, so many run at once. HTTP error statuses are
-- responses, not errors: policy is the caller's. LuaLS annotations: definitions only.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---What http.request takes.
---@class luagent.HttpRequest
---@field url string
---@field method? string default "GET"
---@field headers? table<string, string>
---@field body? string
---@field body_file? string send this file as the body
---@field timeout? number seconds for the whole transfer
---@field connect_timeout? number seconds
---@field idle_timeout? number seconds without a byte
---@field unix_socket? string talk over this socket
---@field insecure? boolean skip the TLS certificate check
---@field ca_file? string
---@field cert_file? string
---@field key_file? string
---@field decompress? boolean
---@field max_body? integer bytes kept at most (too_large past it)
---@field on_chunk? fun(chunk: string): boolean? a 2xx body streamed chunk by chunk (not kept); return false to stop

---What http.request returns.
---@class luagent.HttpResponse
---@field status integer
---@field headers table<string, string> lower-case names
---@field body string (empty when streamed to on_chunk; an error body is always kept)
---@field elapsed number seconds

---A server-sent event.
---@class luagent.SseEvent
---@field event string?
---@field data string
---@field id string?
---@field retry integer?

---@class luagent.http
local http = {}

---Makes a request. Failures: nil, err with kind timeout, connect, tls,
---network, protocol, aborted, too_large, io, bad_url or cancelled.
---@param req luagent.HttpRequest
---@return luagent.HttpResponse? response
---@return luagent.Error? err
function http.request(req) end

---An on_chunk function that parses server-sent events and calls
---on_event(ev) for each; on_event returning false stops the stream.
---@param on_event fun(ev: luagent.SseEvent): boolean?
---@return fun(chunk: string): boolean? on_chunk
---@return luagent.SseParser parser
function http.sse(on_event) end

---A bare server-sent-events parser.
---@return luagent.SseParser
function http.sse_parser() end

---@class luagent.SseParser
local SseParser = {}

---Feeds bytes; returns the events they completed.
---@param chunk string
---@return luagent.SseEvent[]
function SseParser:feed(chunk) end

---Is the input cut inside an event?
---@return boolean
function SseParser:pending() end

---Frees the parser; later feed/pending calls raise "sse parser is closed". Idempotent.
function SseParser:close() end

return http

---@meta luagent.http_head
-- luagent.http_head, a low-level module: recipes normally do not need it. What
-- a peer's HTTP head says, in its one canonical form (src/core/http_head.c):
-- the parsers sandbox egress judges requests with, for the rules, pins and specs.
-- LuaLS annotations: definitions only.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---low-level: recipes normally do not need this.
---luagent.http_head: HTTP heads and hosts parsed once, canonically (src/lua/lua_http_head.c).
---@class luagent.http_head
---@field HEAD_MAX integer the longest head taken (65536 bytes), however it arrives
local http_head = {}

---A request head as the proxy parsed it.
---@class luagent.HttpRequest
---@field method string
---@field version "HTTP/1.0"|"HTTP/1.1"
---@field form "absolute"|"authority"|"origin" http://host/path, CONNECT host:port, /path
---@field connect boolean a CONNECT
---@field host string? the target's canonical host (absolute and authority form)
---@field port integer? the target's port
---@field family integer? 0 a DNS name, 4 or 6 an IP address
---@field literal boolean? the target is an IP address
---@field path string? origin form as it goes upstream ("/" when empty)
---@field headers {name: string, value: string, lower: string}[] in order, values without surrounding blanks
---@field host_header {host: string, port: integer}? the Host field, canonical
---@field body "none"|"length"|"chunked" how the body is framed
---@field length integer? Content-Length

---The canonical form of a host: a lower-case DNS name by the host name grammar
---(no final dot; IDN as punycode), or an IP address as inet_ntop writes it.
---Anything else (NUL, userinfo, percent-escapes, "/?#\", spaces, non-ASCII,
---an IPv4 address spelled as hex, octal or fewer parts) is refused naming it.
---@param text string
---@return string? canonical
---@return integer|luagent.Error family_or_err 0 a name, 4 or 6 an address
function http_head.host(text) end

---"host[:port]" ("[v6]:port"); default_port nil or 0: the port is required.
---@param text string
---@param default_port? integer
---@return string? host
---@return integer|luagent.Error port_or_err
---@return integer? family
function http_head.authority(text, default_port) end

---Parses a request head (through its blank line): "proxy" (absolute form or
---CONNECT) or "origin" (inside a tunnel). err.kind "protocol", err.status 400,
---431 (too large, too many fields) or 501 (a transfer coding other than chunked).
---@param head string
---@param kind? "proxy"|"origin"
---@return luagent.HttpRequest? request
---@return luagent.Error? err
function http_head.parse_request(head, kind) end

---The proxy's refusal: an HTTP/1.1 response whose body is one line "luagent: reason".
---@param status integer
---@param reason string
---@return string
function http_head.refusal(status, reason) end

return http_head

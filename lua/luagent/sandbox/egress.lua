-- luagent.sandbox.egress: a sandbox's way out, by rule.
--
--   egress.start(session, rules) -> eg | nil, err   the relay started in the session, listening
--   eg:status() -> {rules, connections, open, allowed, denied, bytes_up, bytes_down, recent}
--   eg:change("allow" | "deny", list, field) -> true | nil, why
--   eg:close()
--
-- The container has no network (NetworkMode none). `luagent-supervisor egress`
-- listens on the sandbox's loopback (network_rules.PROXY_PORT) and relays each
-- connection here (luagent.engine_stream.egress); this module reads what the
-- client asks — an HTTP proxy request in absolute form or a CONNECT — decides
-- by the rules (luagent.sandbox.network_rules), makes the upstream connection
-- from the host (every address it connects to checked in C when the socket
-- opens: public, or named by an address rule) and splices the two. A
-- CONNECT to a name must open with a TLS ClientHello whose server name is
-- that name. For a host a secret is bound to, TLS ends here with the
-- session's CA, the placeholder in the request head is replaced with the
-- value, and the request goes on over TLS verified against the system's
-- CAs (and network.ca_file). Every connection is one trace event of type
-- "network"; a refusal is an HTTP 403 whose body is one line saying why.
local engine_stream = require "luagent.engine_stream"
local errors = require "luagent.errors"
local events = require "luagent.events"
local fs = require "luagent.fs"
local http_head = require "luagent.http_head"
local sched = require "luagent.sched"
local secrets = require "luagent.secrets"
local supervisor = require "luagent.sandbox.supervisor"
local network_rules = require "luagent.sandbox.network_rules"

local egress = {}

local START_BODY = '{"Detach":false,"Tty":false}'
local RECENT = 20          -- connections box:network() lists
local HEAD_SECONDS = 30    -- a client gets this long to send its request head
egress.CA_BUNDLE = "/tmp/.luagent/ca-bundle.pem"
-- where Debian-based images (and the sandbox image) keep their CA bundle
local IMAGE_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
local SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"

local Egress = {}
Egress.__index = Egress

-- ---- requests ----
-- A request head is parsed once, in C, where its bytes are (egress:head, src/core/http_head.c):
-- the table has its canonical host and port, the origin-form path, the headers and the body's
-- framing. Everything below decides on that table and builds the upstream head from it.

-- The Host header must name the target (domain fronting over plain HTTP).
local function host_matches(r, host, port)
  local h = r.host_header
  if not h then return true end -- HTTP/1.0 without one (the parser refuses HTTP/1.1 without)
  if h.host ~= host or h.port ~= port then
    return nil, ("the Host header names %s:%d but the request goes to %s:%d"):format(h.host, h.port, host, port)
  end
  return true
end

-- Hop-by-hop fields (RFC 9110 7.6.1) and the framing, which the proxy writes itself.
local DROPPED = {connection = true, ["keep-alive"] = true, ["proxy-connection"] = true,
                 ["proxy-authorization"] = true, te = true, trailer = true, upgrade = true,
                 ["transfer-encoding"] = true, ["content-length"] = true}

-- The head as it goes upstream: origin form, the body framed as egress:splice sends it, one
-- request per connection; to a host whose TLS ends here, an identity-encoded answer (which
-- egress:splice can search for a secret's value).
local function rewrite(r, terminated)
  local listed = {}
  for _, h in ipairs(r.headers) do
    if h.lower == "connection" then
      for token in h.value:gmatch("[^,%s]+") do listed[token:lower()] = true end
    end
  end
  local out = {("%s %s %s\r\n"):format(r.method, r.path, r.version)}
  for _, h in ipairs(r.headers) do
    if not DROPPED[h.lower] and not listed[h.lower] and not (terminated and h.lower == "accept-encoding") then
      out[#out + 1] = h.name .. ": " .. h.value .. "\r\n"
    end
  end
  if terminated then out[#out + 1] = "Accept-Encoding: identity\r\n" end
  if r.body == "length" then out[#out + 1] = ("Content-Length: %d\r\n"):format(r.length)
  elseif r.body == "chunked" then out[#out + 1] = "Transfer-Encoding: chunked\r\n" end
  out[#out + 1] = "Connection: close\r\n\r\n"
  return table.concat(out)
end

local function replace_plain(text, needle, value)
  local i, j = text:find(needle, 1, true)
  while i do
    text = text:sub(1, i - 1) .. value .. text:sub(j + 1)
    i, j = text:find(needle, i + #value, true)
  end
  return text
end

-- ---- one connection ----


function Egress:_record(ev)
  local owner = self.owner or self -- a connection's view writes its counters to the egress itself
  if ev.started then ev.ms = ev.ms or math.floor((sched.now() - ev.started) * 1000) end
  ev.started = nil
  ev.type = "network"
  ev.session = self.session_id
  if ev.allowed then owner.allowed = owner.allowed + 1 else owner.denied = owner.denied + 1 end
  table.insert(owner.recent, 1, ev)
  if #owner.recent > RECENT then table.remove(owner.recent) end
  self.emit(ev)
end

-- Refuses the connection with an HTTP error (through TLS when it ends here).
function Egress:_refuse(conn, ev, status, reason, rule)
  ev.allowed, ev.reason, ev.rule = false, reason, rule or ev.rule
  ev.status = status
  self.handle:reply(conn, http_head.refusal(status, reason), true)
  self:_record(ev)
end

-- Where a placeholder may stand: in a header a credential belongs in, of a
-- request to one of its secret's hosts, over TLS that ended here. Anywhere else
-- (the request target, another header, another host, plain HTTP) the request
-- is refused, so that nothing but those headers ever carries a value upstream
-- and an upstream that quotes the target back (a 404 page) has nothing to quote.
function Egress:_placeholder_allowed(s, host, over_tls, header)
  local bound = false
  for _, b in ipairs(self.rules:secrets_for(host)) do bound = bound or b.name == s.name end
  if not bound then
    return nil, ("the request carries the placeholder of secret %s, which may only go to its own hosts, not %s")
      :format(s.name, host)
  end
  if not over_tls then
    return nil, ("secret %s is only sent over HTTPS; this request to %s is plain HTTP"):format(s.name, host)
  end
  if not header or not s.headers[header.lower] then
    return nil, ("the placeholder of secret %s is in %s; luagent puts a secret only into the headers %s "
      .. "(network.secrets.%s.headers names others)"):format(s.name, header and "the header " .. header.name
      or "the request target", s.header_list, s.name)
  end
  return true
end

-- The request's placeholders replaced by their values where they may stand:
-- the names injected | nil, why, the secret refused.
function Egress:_secrets(r, host, over_tls)
  local injected, seen = {}, {}
  for _, s in ipairs(self.rules.secrets) do
    if r.path:find(s.placeholder, 1, true) then
      return nil, select(2, self:_placeholder_allowed(s, host, over_tls, nil)), s.name
    end
    for _, h in ipairs(r.headers) do
      if h.name:find(s.placeholder, 1, true) then
        return nil, ("the placeholder of secret %s is a header's name"):format(s.name), s.name
      end
      if h.value:find(s.placeholder, 1, true) then
        local ok, why = self:_placeholder_allowed(s, host, over_tls, h)
        if not ok then return nil, why, s.name end
        h.value = replace_plain(h.value, s.placeholder, s.value)
        if not seen[s.name] then injected[#injected + 1], seen[s.name] = s.name, true end
      end
    end
  end
  return injected
end

-- What a response from a host whose TLS ends here may not carry back: every
-- secret's value, replaced by its placeholder (egress:splice's scrub).
function Egress:_scrub()
  local list = {}
  for _, s in ipairs(self.rules.secrets) do list[#list + 1] = {s.value, s.placeholder} end
  return list
end

-- Connects upstream for r (verdict from the rules): address | nil, err. libcurl
-- gets the canonical host and the pinned address, never request text.
function Egress:_connect(conn, r, verdict, tls)
  return self.handle:connect(conn, {
    host = r.host, port = r.port, tls = tls, pin = self.rules:pinned(r.host),
    policy = self.rules:address_policy(), need_rule = verdict.literal == true,
    ca_file = self.upstream_ca, label = (r.family == 6 and "[%s]:%d" or "%s:%d"):format(r.host, r.port),
  })
end

-- CONNECT: the tunnel answers 200 only once upstream is there; a name must
-- be the ClientHello's server name; TLS ends here for a host with secrets.
function Egress:_tunnel(conn, r, verdict, ev)
  local h = self.handle
  local terminate = not verdict.literal and #self.rules:secrets_for(r.host) > 0
  local address, err = self:_connect(conn, r, verdict, terminate)
  if not address then
    return self:_refuse(conn, ev, err.kind == "denied" and 403 or 502, err.message)
  end
  ev.address = address
  h:reply(conn, "HTTP/1.1 200 Connection established\r\n\r\n")
  if not verdict.literal then
    local sni, why = h:hello(conn, HEAD_SECONDS)
    local refused = sni == nil and ("the tunnel to %s did not start with TLS (%s)"):format(r.host, tostring(why.message))
      or sni == false and ("the TLS hello names no server; the tunnel is to %s"):format(r.host)
      or sni ~= r.host and ("the TLS hello names %s but the tunnel is to %s (domain fronting is refused)")
        :format(sni, r.host)
    if refused then
      ev.allowed, ev.reason = false, refused
      h:reply(conn, "", true)
      return self:_record(ev)
    end
  end
  if not terminate then return self:_splice(conn, ev, "") end
  local ok, terr = h:terminate(conn, r.host)
  if not ok then
    ev.allowed, ev.reason = false, terr.message
    h:reply(conn, "", true)
    return self:_record(ev)
  end
  ev.tls_terminated = true
  local inner, herr = h:head(conn, HEAD_SECONDS, "origin")
  if not inner then
    if herr.kind == "protocol" then return self:_refuse(conn, ev, herr.status, herr.message) end
    ev.allowed, ev.reason = false, "no request came through the tunnel (" .. herr.message .. ")"
    h:reply(conn, "", true)
    return self:_record(ev)
  end
  local okhost, mismatch = host_matches(inner, r.host, r.port)
  if not okhost then return self:_refuse(conn, ev, 403, mismatch) end
  local injected, serr, secret = self:_secrets(inner, r.host, true)
  if not injected then
    ev.secret_refused = secret
    return self:_refuse(conn, ev, 403, serr)
  end
  ev.secrets = injected
  ev.method, ev.path = inner.method, inner.path
  return self:_splice(conn, ev, rewrite(inner, true), {exchange = true, scrub = self:_scrub()})
end

-- A plain HTTP proxy request.
function Egress:_forward(conn, r, verdict, ev)
  local okhost, herr = host_matches(r, r.host, r.port)
  if not okhost then return self:_refuse(conn, ev, 403, herr) end
  local injected, serr, secret = self:_secrets(r, r.host, false)
  if not injected then
    ev.secret_refused = secret
    return self:_refuse(conn, ev, 403, serr)
  end
  local address, err = self:_connect(conn, r, verdict, false)
  if not address then return self:_refuse(conn, ev, err.kind == "denied" and 403 or 502, err.message) end
  ev.address, ev.path = address, r.path
  return self:_splice(conn, ev, rewrite(r, false), {exchange = true})
end

-- opts: egress:splice's (exchange: one request and its response; scrub: the values
-- a response may not carry back).
function Egress:_splice(conn, ev, first, opts)
  ev.allowed = true
  local stats = self.handle:splice(conn, first, opts)
  ev.bytes_up, ev.bytes_down = stats.up, stats.down
  if (stats.dropped or 0) > 0 then ev.dropped_bytes = stats.dropped end
  if (stats.replaced or 0) > 0 then ev.values_returned = stats.replaced end
  if stats.error then
    ev.error = stats.error
    if stats.kind == "max_bytes" then ev.limit = "max_bytes" end
    if stats.kind == "refused" then ev.status = 502 end
  end
  self:_record(ev)
end

-- Refusals that come before the rules: limits.
function Egress:_limited()
  if self.open > self.rules.max_connections then
    return ("more than %d connections at once (network.max_connections)"):format(self.rules.max_connections)
  end
  local max = self.rules.max_bytes
  local c = self.handle:counters()
  if max and c.bytes_up + c.bytes_down >= max then
    return ("network.max_bytes (%d bytes) is used up"):format(max), "max_bytes"
  end
  return nil
end

function Egress:_serve(conn)
  local ev = {started = sched.now()}
  local r, err = self.handle:head(conn, HEAD_SECONDS, "proxy")
  if not r then
    if err.kind == "protocol" then return self:_refuse(conn, ev, err.status, err.message) end
    if err.kind ~= "closed" then self:_refuse(conn, ev, 400, "no request head (" .. err.message .. ")") end
    return
  end
  ev.host, ev.port, ev.method = r.host, r.port, r.method
  local limited, limit = self:_limited()
  if limited then
    ev.limit = limit or "max_connections"
    return self:_refuse(conn, ev, 403, limited)
  end
  local verdict = self.rules:decide(r.host, r.port)
  ev.rule = verdict.rule
  if not verdict.allowed then return self:_refuse(conn, ev, 403, verdict.reason, verdict.rule) end
  if r.connect then return self:_tunnel(conn, r, verdict, ev) end
  return self:_forward(conn, r, verdict, ev)
end

-- A connection is served through a view of the egress whose handle is the
-- relay it came from: after a relaunch, ids of the old relay never reach
-- the new one's connections.
function Egress:_handle(conn, h)
  self.open = self.open + 1
  local view = setmetatable({handle = h, owner = self}, {__index = self})
  local ok, err = pcall(view._serve, view, conn)
  self.open = self.open - 1
  if not ok and not self.closed and h == self.handle then
    io.stderr:write("luagent: sandbox egress: a connection failed: ", tostring(err), "\n")
  end
  if not self.closed then pcall(h.forget, h, conn) end
end

-- ---- the relay ----

-- `luagent-supervisor egress PORT` as root in the sandbox, its stdin and
-- stdout the relay's stream: a Docker exec's hijacked start, or the stream a
-- backend makes for a command (a Kubernetes exec WebSocket: _exec_stream_options).
local function open_relay(session, want_ca)
  local argv = {supervisor.PATH, "egress", tostring(network_rules.PROXY_PORT)}
  local opts, err
  if session._exec_stream_options then
    opts = session:_exec_stream_options(argv)
  else
    local client = session.client
    local created
    created, err = client:call("POST", "/containers/" .. session.container .. "/exec", {
      AttachStdin = true, AttachStdout = true, AttachStderr = true, Tty = false, User = "0", Cmd = argv,
    })
    if not created then return nil, errors.from(err) end
    opts = client:options("/exec/" .. created.Id .. "/start", {body = START_BODY})
  end
  opts.ca = want_ca
  local h
  h, err = engine_stream.egress(opts)
  if not h then return nil, errors.from(err) end
  return h
end

-- The bundle the sandbox trusts: its image's own CAs, network.ca_file's
-- (an internal CA its clients meet through tunnels) and the session's.
function Egress:_stage_bundle()
  local pem = (self.rules.ca_file and fs.read(self.rules.ca_file) or "") .. "\n" .. (self.handle:ca_pem() or "")
  local script = ("mkdir -p /tmp/.luagent && { cat %s 2>/dev/null; cat; } > %s"):format(IMAGE_BUNDLE, egress.CA_BUNDLE)
  local r, err = self.session:exec({argv = {"sh", "-c", script}, env = {}, cwd = "/tmp", stdin = pem, timeout = 30,
                                    max_output = 4096})
  if not r then return nil, err end
  if r.exit_code ~= 0 then
    return errors.fail("error", "the session's CA bundle could not be written to " .. egress.CA_BUNDLE .. ": "
      .. (r.stderr or ""))
  end
  return true
end

-- What verifies upstream TLS: the host's CAs and network.ca_file.
local function upstream_bundle(rules)
  if not rules.ca_file then return nil end
  local dir = fs.temp_dir("luagent-egress")
  if not dir then return rules.ca_file end
  local path = dir .. "/ca-bundle.pem"
  fs.write(path, (fs.read(SYSTEM_BUNDLE) or "") .. "\n" .. (fs.read(rules.ca_file) or ""))
  return path, dir
end

-- The relay died (its container restarted, or it was killed): a new one, and
-- the CA bundle again (a restarted container's /tmp is empty). Tries for
-- RELAY_PATIENCE seconds, while the session recovers; connections made
-- meanwhile are refused by the sandbox's own loopback (nothing listens).
local RELAY_PATIENCE = 60

function Egress:_relaunch(why)
  local deadline = sched.now() + RELAY_PATIENCE
  local err
  while not self.closed and sched.now() < deadline do
    local h
    h, err = open_relay(self.session, #self.rules.secrets > 0)
    if h and self.closed then h:close() return false end
    if h then
      local old = self.handle
      self.handle = h
      if old then old:close() end
      if self.rules.max_bytes then h:limit{max_bytes = math.max(1, self.rules.max_bytes - self.spent)} end
      local ok = true
      if egress.wants_bundle(self.rules) then ok, err = self:_stage_bundle() end
      if ok then
        self.relaunches = self.relaunches + 1
        self.emit({type = "network_relay", session = self.session_id, restarted = true, why = why})
        return true
      end
    end
    sched.sleep(0.5)
  end
  self.lost = err or why
  self.emit({type = "network_relay", session = self.session_id, restarted = false, why = why,
             error = err and tostring(err.message or err) or nil})
  return false
end

function Egress:_accept_loop()
  while not self.closed do
    local h = self.handle
    local conn, err = h:accept()
    if conn then
      sched.spawn(function() self:_handle(conn, h) end):background()
    elseif self.closed then
      return
    else
      local c = h:counters()
      self.spent = self.spent + c.bytes_up + c.bytes_down
      if not self:_relaunch(err and err.message or "the relay ended") then return end
    end
  end
end

-- Does the sandbox get a CA bundle of its own (the CA variables point at it)?
function egress.wants_bundle(rules)
  return #rules.secrets > 0 or rules.ca_file ~= nil
end

-- egress.start(session, rules) -> eg | nil, err
function egress.start(session, rules)
  local want_ca = #rules.secrets > 0
  local h, err = open_relay(session, want_ca)
  if not h then return nil, errors.wrap(err, "the sandbox's egress relay could not start") end
  if rules.max_bytes then h:limit{max_bytes = rules.max_bytes} end
  for _, s in ipairs(rules.secrets) do secrets.add(s.value, s.name) end
  local upstream_ca, temp_dir = upstream_bundle(rules)
  local self = setmetatable({
    session = session, session_id = session.id, rules = rules, handle = h, upstream_ca = upstream_ca,
    temp_dir = temp_dir, open = 0, allowed = 0, denied = 0, recent = {}, emit = events.emit, spent = 0,
    relaunches = 0,
  }, Egress)
  if egress.wants_bundle(rules) then
    local ok
    ok, err = self:_stage_bundle()
    if not ok then
      self:close()
      return nil, err
    end
  end
  -- background: a box left open must not keep its run from ending (and so
  -- from closing the box)
  self.acceptor = sched.spawn(function() self:_accept_loop() end):background()
  return self
end

function Egress:status()
  local c = self.handle and self.handle:counters() or {}
  local recent = {}
  for i, ev in ipairs(self.recent) do recent[i] = ev end
  return {rules = self.rules:describe(), connections = c.connections or 0, open = self.open,
          allowed = self.allowed, denied = self.denied, bytes_up = c.bytes_up or 0, bytes_down = c.bytes_down or 0,
          recent = recent, lost = self.lost and tostring(self.lost) or nil}
end

function Egress:change(verdict, list, field)
  local ok, why = self.rules:change(verdict, list, field)
  if not ok then return nil, why end
  self.emit({type = "network_rules", session = self.session_id, change = verdict, rules = list})
  return true
end

function Egress:close()
  if self.closed then return end
  self.closed = true
  if self.handle then self.handle:close() end
  if self.acceptor then self.acceptor:cancel() end
  if self.temp_dir then fs.remove(self.temp_dir) end
end

return egress

-- luagent.sandbox.network_rules: what a sandbox may reach.
--
--   local rules, why = network_rules.compile(spec [, {parse_size = fn}])
--   rules:decide(host, port)   -> verdict {allowed, rule, reason, literal}
--   rules:address_policy()     -> {{cidr, allow, ports}} for the check made when a socket opens
--   rules:pinned(host)         -> the address `hosts` pins host to, or nil
--   rules:secrets_for(host)    -> {{name, placeholder, value}} of the secrets bound to host
--   rules:placeholders_in(text)-> {name, ...} of the secrets whose placeholder text holds
--   rules:change("allow" | "deny", list, field) -> true | nil, why   (box:allow / box:deny)
--   rules:env(ca_bundle)       -> {NAME = value} the sandbox's environment gets
--   rules:describe()           -> the rules as plain data, no secret value in it
--
-- A rule is a host name ("api.example.com", "*.example.com": every name under
-- it, not the name itself; "*": every name), an IP address or a CIDR
-- ("10.0.0.5", "10.0.0.0/8", "[fd00::1]", "fd00::/8"), each with an optional
-- ":port" (":*" every port; an IPv6 address with a port is bracketed:
-- "[fd00::1]:5432", "[fd00::/8]:443"). An allow rule without a port allows 80
-- and 443; a deny rule without one covers every port. Deny wins; nothing is
-- allowed by default. A name rule never matches an IP literal: an address rule
-- alone allows connections to that literal, and names the addresses a name
-- may resolve to beyond public ones (loopback, private, link-local... are
-- refused otherwise: src/core/netaddr.c checks the address a socket is opened
-- for). The decisions on names are made here; the address is checked in C,
-- at the moment of connecting, with address_policy().
local sys = require "luagent.sys"
local fs = require "luagent.fs"
local http_head = require "luagent.http_head"

local network_rules = {}

-- Where the sandbox's proxy listens (inside the sandbox, on its loopback).
network_rules.PROXY_PORT = 3128
network_rules.DEFAULT_MAX_CONNECTIONS = 64
local ALLOW_DEFAULT_PORTS = {80, 443}

local Rules = {}
Rules.__index = Rules

-- ---- parsing ----

local function parse_port(text)
  if text == "*" then return "*" end
  local n = text:match("^%d+$") and tonumber(text)
  if not n or n < 1 or n > 65535 then return nil end
  return n
end

-- An address or CIDR (sys.cidr: the C parser, the one the connect check uses).
local function parse_address(text)
  local canonical, family, prefix = sys.cidr(text)
  if not canonical then return nil, type(family) == "table" and family.message or tostring(family) end
  return {kind = "address", cidr = canonical, family = family, prefix = prefix}
end

-- Splits "host:port" forms; returns host part, port text (nil: none).
local function split_port(text)
  local bracketed, rest = text:match("^%[([^%]]*)%](.*)$")
  if bracketed then
    if rest == "" then return bracketed, nil, true end
    local port = rest:match("^:(.+)$")
    if not port then return nil, "after ']' only ':port' may follow" end
    return bracketed, port, true
  end
  local _, colons = text:gsub(":", "")
  if colons >= 2 then return text, nil, true end -- a bare IPv6 address or CIDR: no port
  local host, port = text:match("^(.-):([^:]*)$")
  if host then return host, port end
  return text, nil
end

-- A name rule's name is canonical by the same parser as the requests it judges
-- (src/core/http_head.c): what it refuses names the part that is wrong.
local function parse_name(host)
  if host == "*" then return {kind = "name", any = true} end
  local wildcard = host:match("^%*%.(.+)$")
  if host:find("*", 1, true) and not (wildcard and not wildcard:find("*", 1, true)) then
    return nil, "a wildcard may only be the first label ('*.example.com')"
  end
  local name, family = http_head.host(wildcard or host)
  if not name then return nil, "not a host name, an IP address or a CIDR: " .. family.message end
  if family ~= 0 then return nil, "an address where a host name belongs" end
  return {kind = "name", name = name, wildcard = wildcard ~= nil}
end

-- One rule's text -> a rule, or nil, why.
local function parse_rule(text, default_ports)
  if type(text) ~= "string" or text == "" then return nil, "a rule is a string like 'api.example.com:443'" end
  local host, port_text, ipv6 = split_port(text)
  if not host then return nil, port_text end
  local rule, why
  if ipv6 or host:match("^[%d./]+$") then
    rule, why = parse_address(host)
  else
    rule, why = parse_name(host)
  end
  if not rule then return nil, why end
  if port_text then
    local port = parse_port(port_text)
    if not port then return nil, ("port %q is not a number from 1 to 65535 (or '*')"):format(port_text) end
    rule.ports = port ~= "*" and {port} or nil
  else
    rule.ports = default_ports
  end
  rule.text = text
  return rule
end

-- ---- matching ----

local function covers_port(rule, port)
  if not rule.ports then return true end
  for _, p in ipairs(rule.ports) do
    if p == port then return true end
  end
  return false
end

local function matches_name(rule, host)
  if rule.kind ~= "name" then return false end
  if rule.any then return true end
  if rule.wildcard then return #host > #rule.name and host:sub(-#rule.name - 1) == "." .. rule.name end
  return host == rule.name
end

local function is_literal(host)
  return host:find(":", 1, true) ~= nil or host:match("^[%d.]+$") ~= nil
end

-- The first rule of list for host on port (nil: on any port).
local function first_match(list, host, port)
  for _, rule in ipairs(list) do
    if matches_name(rule, host) and (port == nil or covers_port(rule, port)) then return rule end
  end
  return nil
end

-- rules:decide(host, port) -> {allowed, rule, reason, literal}
-- For an IP literal the verdict is the address check's (made when the
-- socket opens, with need_rule): literal = true, allowed = true here.
function Rules:decide(host, port)
  host = tostring(host):lower():gsub("%.$", "")
  if is_literal(host) then return {allowed = true, literal = true} end
  local denied = first_match(self.deny, host, port)
  if denied then
    return {allowed = false, rule = denied.text, reason = ("%s:%d is denied by rule '%s'"):format(host, port, denied.text)}
  end
  local allowed = first_match(self.allow, host, port)
  if allowed then return {allowed = true, rule = allowed.text} end
  return {allowed = false, reason = ("no rule allows %s:%d"):format(host, port)}
end

function Rules:address_policy()
  local out = {}
  for _, verdict in ipairs({"deny", "allow"}) do
    for _, rule in ipairs(self[verdict]) do
      if rule.kind == "address" then
        out[#out + 1] = {cidr = rule.cidr, allow = verdict == "allow", ports = rule.ports, text = rule.text}
      end
    end
  end
  return out
end

function Rules:pinned(host)
  return self.hosts[tostring(host):lower():gsub("%.$", "")]
end

-- ---- secrets ----

local function secret_covers(secret, host)
  for _, rule in ipairs(secret.rules) do
    if matches_name(rule, host) then return true end
  end
  return false
end

function Rules:secrets_for(host)
  host = tostring(host):lower():gsub("%.$", "")
  local out = {}
  for _, s in ipairs(self.secrets) do
    if secret_covers(s, host) then out[#out + 1] = {name = s.name, placeholder = s.placeholder, value = s.value} end
  end
  return out
end

function Rules:placeholders_in(text)
  local names = {}
  for _, s in ipairs(self.secrets) do
    if text:find(s.placeholder, 1, true) then names[#names + 1] = s.name end
  end
  return names
end

-- ---- compiling ----

local function compile_list(list, field, default_ports)
  if list == nil then return {} end
  if type(list) == "string" then list = {list} end
  if type(list) ~= "table" then return nil, ("%s must be a list of rules like {'api.example.com:443'}"):format(field) end
  local out = {}
  for i, text in ipairs(list) do
    local rule, why = parse_rule(text, default_ports)
    if not rule then return nil, ("%s[%d] = %q: %s"):format(field, i, tostring(text), why) end
    out[#out + 1] = rule
  end
  return out
end

local function compile_hosts(hosts)
  local out = {}
  if hosts == nil then return out end
  if type(hosts) ~= "table" then return nil, "network.hosts must be {['name'] = 'address'}" end
  for name, address in pairs(hosts) do
    local n = type(name) == "string" and parse_name(name)
    if not n or n.any or n.wildcard then
      return nil, ("network.hosts: %q is not a host name (no wildcards: it pins one name)"):format(tostring(name))
    end
    local a = type(address) == "string" and not address:find("/", 1, true)
      and parse_address(address:match("^%[(.*)%]$") or address)
    if not a then
      return nil, ("network.hosts[%q] = %q: pin a name to an IP address, like '127.0.0.1'"):format(name, tostring(address))
    end
    out[n.name] = a.cidr:gsub("/%d+$", "")
  end
  return out
end

-- The headers a secret's placeholder may stand in (and so its value go upstream
-- in) unless the secret names others with `headers`.
network_rules.SECRET_HEADERS = {"Authorization", "X-Api-Key", "Api-Key", "X-Auth-Token", "X-Access-Token",
                                "Private-Token", "X-Goog-Api-Key", "Cookie"}
-- A value shorter than this could not be told apart from ordinary text in what comes back.
local MIN_SECRET_BYTES = 8
local SECRET_KEYS = {hosts = true, value = true, headers = true}

local function secret_headers(field, list)
  local names, set = {}, {}
  for _, h in ipairs(network_rules.SECRET_HEADERS) do names[#names + 1], set[h:lower()] = h, true end
  if list == nil then return names, set end
  if type(list) ~= "table" then return nil, field .. ".headers must be a list of header names, like {'X-Token'}" end
  for i, h in ipairs(list) do
    if type(h) ~= "string" or not h:match("^[!#$%%&'*+.^_`|~0-9A-Za-z-]+$") then
      return nil, ("%s.headers[%d] = %q: not a header name"):format(field, i, tostring(h))
    end
    if not set[h:lower()] then names[#names + 1], set[h:lower()] = h, true end
  end
  return names, set
end

local function compile_secret(self, name, spec)
  local field = "network.secrets." .. tostring(name)
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
    return nil, ("network.secrets: %q is not an environment variable name"):format(tostring(name))
  end
  if type(spec) ~= "table" then return nil, field .. " must be {hosts = {'api.example.com'}, value = ...}" end
  if type(spec.hosts) ~= "table" or #spec.hosts == 0 then
    return nil, field .. ".hosts: a secret needs the hosts it may be sent to, e.g. hosts = {'api.example.com'}"
  end
  for k in pairs(spec) do
    if not SECRET_KEYS[k] then return nil, ("%s.%s is not a setting (hosts, value, headers)"):format(field, tostring(k)) end
  end
  if type(spec.value) ~= "string" or spec.value == "" then
    return nil, field .. ".value is " .. (spec.value == nil and "nil (is the environment variable set?)" or "empty")
  end
  if #spec.value < MIN_SECRET_BYTES then
    return nil, ("%s.value is %d bytes: a secret of fewer than %d could not be told apart from ordinary text in "
      .. "what comes back"):format(field, #spec.value, MIN_SECRET_BYTES)
  end
  local names, set = secret_headers(field, spec.headers)
  if not names then return nil, set end
  local s = {name = name, value = spec.value, hosts = {}, rules = {}, headers = set,
             header_list = table.concat(names, ", ")}
  for i, host in ipairs(spec.hosts) do
    local rule = type(host) == "string" and parse_name(host)
    if not rule or rule.any then
      return nil, ("%s.hosts[%d] = %q: name a host ('api.example.com' or '*.example.com')"):format(field, i, tostring(host))
    end
    local probe = rule.wildcard and ("luagent-check." .. rule.name) or rule.name
    if not first_match(self.allow, probe, nil) then
      return nil, ("%s.hosts[%d] = %q: the host is not allowed; add it to network.allow"):format(field, i, host)
    end
    s.hosts[#s.hosts + 1], s.rules[#s.rules + 1] = host, rule
  end
  -- the sandbox sees only this: a value that means nothing anywhere else
  s.placeholder = "luagent-secret-" .. name:lower():gsub("_", "-") .. "-" .. sys.random_hex(16)
  return s
end

local function compile_secrets(self, secrets)
  self.secrets = {}
  if secrets == nil then return true end
  if type(secrets) ~= "table" then return nil, "network.secrets must be {NAME = {hosts = {...}, value = ...}}" end
  local names = {}
  for name in pairs(secrets) do names[#names + 1] = tostring(name) end
  table.sort(names)
  for _, name in ipairs(names) do
    local s, why = compile_secret(self, name, secrets[name])
    if not s then return nil, why end
    self.secrets[#self.secrets + 1] = s
  end
  return true
end

local function check_ca_file(path)
  if path == nil then return true end
  if type(path) ~= "string" then return nil, "network.ca_file must be the path of a PEM file of CA certificates" end
  local text = fs.read(path)
  if not text then return nil, ("network.ca_file = %q: no such file"):format(path) end
  if not text:find("-----BEGIN CERTIFICATE-----", 1, true) then
    return nil, ("network.ca_file = %q: not a PEM file of certificates (no BEGIN CERTIFICATE line)"):format(path)
  end
  return true
end

local KNOWN = {allow = true, deny = true, secrets = true, hosts = true, ca_file = true, max_connections = true,
               max_bytes = true}

local function check_limits(spec, opts)
  local max = spec.max_connections or network_rules.DEFAULT_MAX_CONNECTIONS
  if math.type(max) ~= "integer" or max < 1 then
    return nil, ("network.max_connections = %s: a whole number of connections at once, at least 1"):format(tostring(max))
  end
  local bytes = nil
  if spec.max_bytes ~= nil then
    local ok, parsed = pcall(opts.parse_size or tonumber, spec.max_bytes, "network.max_bytes")
    if not ok or type(parsed) ~= "number" then
      return nil, ("network.max_bytes = %q: a size like '100m' or '2g'"):format(tostring(spec.max_bytes))
    end
    bytes = parsed
  end
  return max, bytes
end

-- network_rules.compile(spec [, opts]) -> rules | nil, why (why names the field)
function network_rules.compile(spec, opts)
  opts = opts or {}
  if type(spec) ~= "table" then return nil, "network must be true, false or a table of rules {allow = {...}}" end
  for k in pairs(spec) do
    if not KNOWN[k] then
      return nil, ("network.%s is not a setting (allow, deny, secrets, hosts, ca_file, max_connections, max_bytes)")
        :format(tostring(k))
    end
  end
  local self = setmetatable({}, Rules)
  local why
  self.allow, why = compile_list(spec.allow, "network.allow", ALLOW_DEFAULT_PORTS)
  if not self.allow then return nil, why end
  self.deny, why = compile_list(spec.deny, "network.deny", nil)
  if not self.deny then return nil, why end
  self.hosts, why = compile_hosts(spec.hosts)
  if not self.hosts then return nil, why end
  local ok
  ok, why = check_ca_file(spec.ca_file)
  if not ok then return nil, why end
  self.ca_file = spec.ca_file
  self.max_connections, self.max_bytes = check_limits(spec, opts)
  if not self.max_connections then return nil, self.max_bytes end
  ok, why = compile_secrets(self, spec.secrets)
  if not ok then return nil, why end
  return self
end

-- rules:change("allow" | "deny", list, field) -> true | nil, why
function Rules:change(verdict, list, field)
  local added, why = compile_list(list, field, verdict == "allow" and ALLOW_DEFAULT_PORTS or nil)
  if not added then return nil, why end
  for _, rule in ipairs(added) do table.insert(self[verdict], rule) end
  return true
end

-- ---- what the sandbox gets ----

-- The variables curl, pip, Python (urllib, requests), git and npm read.
function Rules:env(ca_bundle)
  local proxy = ("http://127.0.0.1:%d"):format(network_rules.PROXY_PORT)
  local no_proxy = "localhost,127.0.0.1,::1"
  local env = {
    HTTP_PROXY = proxy, HTTPS_PROXY = proxy, http_proxy = proxy, https_proxy = proxy,
    NO_PROXY = no_proxy, no_proxy = no_proxy,
    npm_config_proxy = proxy, npm_config_https_proxy = proxy,
  }
  for _, s in ipairs(self.secrets) do env[s.name] = s.placeholder end
  if ca_bundle then
    for _, name in ipairs({"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT",
                           "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO"}) do
      env[name] = ca_bundle
    end
  end
  return env
end

local function texts(list)
  local out = {}
  for _, rule in ipairs(list) do out[#out + 1] = rule.text end
  return out
end

function Rules:describe()
  local secrets = {}
  for _, s in ipairs(self.secrets) do secrets[s.name] = {hosts = s.hosts, headers = s.header_list} end
  local hosts = {}
  for k, v in pairs(self.hosts) do hosts[k] = v end
  return {allow = texts(self.allow), deny = texts(self.deny), hosts = hosts, secrets = secrets,
          ca_file = self.ca_file, max_connections = self.max_connections, max_bytes = self.max_bytes}
end

return network_rules

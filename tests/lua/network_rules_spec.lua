-- The rules of sandbox egress (luagent.sandbox.network_rules): what
-- a rule text means, deny winning, nothing allowed by default, names never
-- matching IP literals, secrets and their placeholders, the environment the
-- sandbox gets, and one error naming the field for every malformed setting —
-- raised by sandbox.open before any session opens.
local t = require "helper"
local rules_mod = require "luagent.sandbox.network_rules"
local egress = require "luagent.sandbox.egress"
local http_head = require "luagent.http_head"
local sandbox = require "luagent.sandbox"

local function compile(spec)
  return assert(rules_mod.compile(spec))
end

t.test("names, wildcards and ports: an allow without a port means 80 and 443; deny wins; nothing by default", function()
  local r = compile{allow = {"api.example.com", "*.pkgs.example:8443", "*"}, deny = {"evil.pkgs.example", "ads.example.com"}}
  t.ok(r:decide("api.example.com", 443).allowed, "443")
  t.ok(r:decide("API.Example.com.", 80).allowed, "80, case and the final dot do not matter")
  t.eq(r:decide("api.example.com", 443).rule, "api.example.com", "the rule that allowed it")
  t.ok(r:decide("a.b.pkgs.example", 8443).allowed, "a wildcard covers every level under it")
  t.eq(r:decide("evil.pkgs.example", 8443).allowed, false, "deny wins over a wildcard allow")
  t.match(r:decide("evil.pkgs.example", 8443).reason, "denied by rule 'evil.pkgs.example'")
  t.eq(r:decide("ads.example.com", 12345).allowed, false, "a deny without a port covers every port")
  local none = compile{allow = {"api.example.com"}}
  t.eq(none:decide("api.example.com", 22).allowed, false, "not another port")
  t.eq(none:decide("pkgs.example", 8443).allowed, false, "a wildcard does not cover its own base name")
  t.eq(none:decide("other.example", 443).reason, "no rule allows other.example:443")
  t.eq(compile{}:decide("example.com", 443).allowed, false, "no rules: nothing")
end)

t.test("IP literals are the address rules' alone, checked when the socket opens", function()
  local r = compile{allow = {"*", "10.0.0.0/8:5432", "[fd00::1]:443", "192.168.1.5"}, deny = {"10.9.0.0/16"}}
  local v = r:decide("10.1.2.3", 5432)
  t.ok(v.literal and v.allowed, "a literal is left to the address check (need_rule)")
  t.ok(r:decide("::1", 80).literal, "IPv6 too")
  local policy = r:address_policy()
  t.eq(#policy, 4, "every address rule, denies first")
  t.same(policy[1], {cidr = "10.9.0.0/16", allow = false, ports = nil, text = "10.9.0.0/16"})
  t.same(policy[2], {cidr = "10.0.0.0/8", allow = true, ports = {5432}, text = "10.0.0.0/8:5432"})
  t.same(policy[3].ports, {443}, "[v6]:port")
  t.same(policy[4].ports, {80, 443}, "an allow without a port")
end)

t.test("hosts pins a name to an address; secrets get placeholders, never their values, in the environment", function()
  local r = compile{allow = {"api.example.com"}, hosts = {["API.example.com"] = "127.0.0.1"},
                    secrets = {GITHUB_TOKEN = {hosts = {"api.example.com"}, value = "ghp-the-real-value-123"}}}
  t.eq(r:pinned("api.example.com"), "127.0.0.1")
  local env = r:env(egress.CA_BUNDLE)
  t.match(env.GITHUB_TOKEN, "^luagent%-secret%-github%-token%-%x+$", "a placeholder")
  t.eq(env.HTTPS_PROXY, "http://127.0.0.1:3128"); t.eq(env.http_proxy, "http://127.0.0.1:3128")
  t.eq(env.NO_PROXY, "localhost,127.0.0.1,::1")
  for _, name in ipairs{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT", "NODE_EXTRA_CA_CERTS",
                        "GIT_SSL_CAINFO"} do
    t.eq(env[name], egress.CA_BUNDLE, name)
  end
  for k, v in pairs(env) do t.no_match(v, "real%-value", "no value in " .. k) end
  t.eq(r:secrets_for("api.example.com")[1].value, "ghp-the-real-value-123", "the host side has it")
  t.eq(#r:secrets_for("other.example.com"), 0)
  t.same(r:placeholders_in("Authorization: Bearer " .. env.GITHUB_TOKEN), {"GITHUB_TOKEN"})
  t.no_match(require("luagent.json").encode(r:describe()), "real%-value", "describe() has no value")
  local other = compile{allow = {"api.example.com"},
                        secrets = {GITHUB_TOKEN = {hosts = {"api.example.com"}, value = "v-1234567"}}}
  t.ok(other:env().GITHUB_TOKEN ~= env.GITHUB_TOKEN, "each session has its own placeholder")
end)

t.test("live changes: box:allow adds, box:deny tightens, and a bad rule is refused naming it", function()
  local r = compile{allow = {"api.example.com"}}
  assert(r:change("deny", {"api.example.com:443"}, "box:deny"))
  t.eq(r:decide("api.example.com", 443).allowed, false, "tightened")
  t.ok(r:decide("api.example.com", 80).allowed, "the other port still")
  assert(r:change("allow", {"files.example.com"}, "box:allow"))
  t.ok(r:decide("files.example.com", 443).allowed, "added")
  local ok, why = r:change("allow", {"a.*.com"}, "box:allow")
  t.eq(ok, nil); t.match(why, "^box:allow%[1%] = \"a%.%*%.com\": a wildcard may only be the first label")
end)

-- what a malformed setting gets: one line naming the field
-- luacheck: push ignore 631 (the expected messages are long)
local BAD = {
  {{allow = {"api.*.example.com"}}, 'network.allow%[1%] = "api%.%*%.example%.com": a wildcard may only be the first label'},
  {{allow = {"ok.example", "x.example:70000"}}, 'network.allow%[2%] = "x%.example:70000": port "70000" is not a number from 1 to 65535'},
  {{allow = {"x.example:0"}}, 'port "0" is not a number'},
  {{deny = {"10.0.0.1/8"}}, 'network.deny%[1%] = "10%.0%.0%.1/8": 10%.0%.0%.1/8: bits set below the prefix; did you mean 10%.0%.0%.0/8%?'},
  {{allow = {"300.1.1.1"}}, 'network.allow%[1%] = "300%.1%.1%.1":'},
  {{allow = {"bad_host!"}}, "not a host name, an IP address or a CIDR"},
  {{allow = "api.example.com:x"}, 'port "x"'},
  {{allow = {"a.example"}, secrets = {T = {value = "secret-1234"}}}, "network%.secrets%.T%.hosts: a secret needs the hosts"},
  {{allow = {"a.example"}, secrets = {T = {hosts = {"a.example"}}}}, "network%.secrets%.T%.value is nil %(is the environment variable set%?%)"},
  {{allow = {"a.example"}, secrets = {T = {hosts = {"b.example"}, value = "secret-1234"}}}, 'network%.secrets%.T%.hosts%[1%] = "b%.example": the host is not allowed; add it to network%.allow'},
  {{allow = {"a.example"}, secrets = {["1BAD"] = {hosts = {"a.example"}, value = "v"}}}, "is not an environment variable name"},
  {{ca_file = "/nonexistent/ca.pem"}, 'network%.ca_file = "/nonexistent/ca%.pem": no such file'},
  {{ca_file = "/etc/hostname"}, "not a PEM file of certificates"},
  {{hosts = {["*.example.com"] = "127.0.0.1"}}, "no wildcards"},
  {{hosts = {["a.example"] = "a.example"}}, "pin a name to an IP address"},
  {{max_connections = 0}, "network%.max_connections = 0"},
  {{max_bytes = "lots"}, 'network%.max_bytes = "lots": a size'},
  {{alow = {"a.example"}}, "network%.alow is not a setting"},
}
-- luacheck: pop

t.test("every malformed setting: one error naming the field, raised by sandbox.open before a session opens", function()
  for _, case in ipairs(BAD) do
    local ok, why = rules_mod.compile(case[1], {parse_size = sandbox.parse_size})
    t.eq(ok, nil, case[2])
    t.match(why or "", case[2])
  end
  local ok, err = pcall(sandbox.open, {network = {allow = {"api.*.com"}}, docker_host = "unix:///nonexistent.sock"})
  t.eq(ok, false)
  t.match(tostring(err), "sandbox%.open: network%.allow%[1%] = \"api%.%*%.com\": a wildcard may only be the first label",
          "raised before the engine is asked (it does not exist)")
  ok, err = pcall(sandbox.open, {network = "yes"})
  t.eq(ok, false)
  t.match(tostring(err), "network must be true, false or a table of rules")
end)

t.test("proxy request heads: absolute form, CONNECT, and what is refused", function()
  local function parse(head) return http_head.parse_request(head, "proxy") end
  local r = assert(parse("GET http://API.example.com:8080/x?y=1 HTTP/1.1\r\nHost: api.example.com:8080\r\n\r\n"))
  t.eq(r.host, "api.example.com"); t.eq(r.port, 8080); t.eq(r.path, "/x?y=1"); t.eq(r.body, "none")
  t.same(r.host_header, {host = "api.example.com", port = 8080})
  r = assert(parse("CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n"))
  t.ok(r.connect); t.eq(r.host, "::1"); t.eq(r.port, 443); t.eq(r.family, 6); t.ok(r.literal)
  t.eq(assert(parse("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")).port, 80)
  r = assert(parse("POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\nContent-Length: 12\r\n\r\n"))
  t.eq(r.body, "length"); t.eq(r.length, 12)
  local refused = {
    {"GET /relative HTTP/1.1\r\nHost: x\r\n\r\n", 400, "names its target in full"},
    {"GET https://example.com/ HTTP/1.1\r\n\r\n", 400, "https:// through the proxy: use CONNECT"},
    {"GET http://example.com/ HTTP/1.1\r\nBad Header: x\r\n\r\n", 400, "not a token"},
    {"CONNECT example.com HTTP/1.1\r\n\r\n", 400, "no port"},
    {"SSH-2.0-OpenSSH\r\n\r\n", 400, "not an HTTP request line"},
    {"POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "both"},
    {"POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "chunked alone"},
  }
  for _, case in ipairs(refused) do
    local ok, err = parse(case[1])
    t.eq(ok, nil, case[3]); t.eq(err.kind, "protocol"); t.eq(err.status, case[2], case[3]); t.match(err.message, case[3])
  end
end)

-- The one canonical form of a host (src/core/http_head.c): what the rules judge, what
-- libcurl connects to, and what a ClientHello's name is compared with.
local CANONICAL = {
  {"API.Example.COM.", "api.example.com", 0}, {"xn--bcher-kva.example", "xn--bcher-kva.example", 0},
  {"1.2.3.4", "1.2.3.4", 4}, {"[2001:DB8::1]", "2001:db8::1", 6}, {"::ffff:127.0.0.1", "::ffff:127.0.0.1", 6},
}
local NOT_A_HOST = {
  {"evil.test\0.example.test", "NUL"}, {"x@uploads.example.test", "userinfo"}, {"evil%2etest", "percent"},
  {"evil.test/.example.test", "'/'"}, {"evil.test?.a", "'?'"}, {"evil.test#.a", "'#'"}, {"evil\\.a", "'\\'"},
  {"\xc3\xa9vil.example", "non%-ASCII"}, {"evil test", "space"}, {"under_score.example", "no host name has"},
  {"0x0b000001", "IPv4"}, {"184549377", "IPv4"}, {"11.1", "IPv4"}, {"013.0.0.1", "IPv4"}, {"a.b.1", "IPv4"},
  {"a..b", "empty label"}, {("a"):rep(64) .. ".b", "63"}, {"[fe80::1%eth0]", "zone"},
}

t.test("hosts: one canonical form, and every other spelling refused naming the part", function()
  for _, case in ipairs(CANONICAL) do
    local name, family = http_head.host(case[1])
    t.eq(name, case[2], case[1]); t.eq(family, case[3], case[1])
  end
  for _, case in ipairs(NOT_A_HOST) do
    local name, err = http_head.host(case[1])
    t.eq(name, nil, case[1]); t.match(err.message, case[2], case[1])
  end
  t.eq(select(2, http_head.authority("example.com", 80)), 80)
  t.eq(select(2, http_head.authority("example.com:8443", 80)), 8443)
end)

t.test("rules are canonical by the same parser; mapped address rules are the IPv4 blocks they reach", function()
  local r = compile{allow = {"API.Example.com.:443", "::ffff:10.0.0.0/104", "[::ffff:127.0.0.1]:8080"}}
  t.ok(r:decide("api.example.com", 443).allowed)
  t.same(r:address_policy()[1].cidr, "10.0.0.0/8")
  t.same(r:address_policy()[2].cidr, "127.0.0.1/32")
  local _, why = rules_mod.compile{allow = {"under_score.example"}}
  t.match(why, 'network%.allow%[1%] = "under_score%.example": not a host name.*no host name has')
  _, why = rules_mod.compile{allow = {"0x7f000001"}}
  t.match(why, "IPv4 address in a form other than four decimal octets")
  r = compile{allow = {"a.example"}, hosts = {["a.example"] = "::ffff:127.0.0.1"}}
  t.eq(r:pinned("a.example"), "127.0.0.1", "a pin to a mapped address is the IPv4 address it reaches")
end)

t.test("a secret's headers: the usual credential headers, and more by name; short values refused", function()
  local r = compile{allow = {"api.example.com"}, secrets = {
    T = {hosts = {"api.example.com"}, value = "0123456789abcdef", headers = {"X-Custom-Token"}}}}
  local s = r.secrets[1]
  t.ok(s.headers.authorization and s.headers["x-api-key"] and s.headers["x-custom-token"])
  t.match(r:describe().secrets.T.headers, "Authorization, X%-Api%-Key.*X%-Custom%-Token$")
  local _, why = rules_mod.compile{allow = {"a.example"}, secrets = {T = {hosts = {"a.example"}, value = "short"}}}
  t.match(why, "network%.secrets%.T%.value is 5 bytes")
  _, why = rules_mod.compile{allow = {"a.example"}, secrets = {T = {hosts = {"a.example"}, value = "0123456789",
                                                                    headers = {"bad header"}}}}
  t.match(why, 'network%.secrets%.T%.headers%[1%] = "bad header": not a header name')
  _, why = rules_mod.compile{allow = {"a.example"}, secrets = {T = {hosts = {"a.example"}, value = "0123456789",
                                                                    header = {"X"}}}}
  t.match(why, "network%.secrets%.T%.header is not a setting")
end)

t.done()

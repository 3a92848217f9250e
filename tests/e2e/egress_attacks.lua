-- Sandbox egress as an attacker tries it: a prompt-injected agent with code execution in a
-- sandbox that has network rules. Run by tests/e2e/egress_attacks_test.sh inside a network
-- namespace of its own (see there: the names, the canary, the upstreams). Each class of the
-- proxy's defects gets several spellings, and each test asserts on what reached the canary or
-- the upstream, not only on the status the sandbox saw.
--   1. the host judged is the host reached (one canonical host, refused before any DNS query)
--   2. address rules match what an address reaches (mapped IPv6, 0.0.0.0, ::)
--   3. a secret's value never comes back into the sandbox (echoes, 404s, chunks, gzip)
--   4. one request per connection (pipelining, CL + TE, bytes past the body)
--   5. a hostile head costs the event loop nothing worth measuring
--   6. a ClientHello names one server, and carries no encrypted_client_hello
package.path = "tests/lua/?.lua;" .. package.path
local t = require "helper"
local sandbox = require "luagent.sandbox"
local json = require "luagent.json"
local fs = require "luagent.fs"
local sys = require "luagent.sys"

local DIR = assert(os.getenv("ATTACK_DIR"), "run by tests/e2e/egress_attacks_test.sh")
local U = json.decode(assert(fs.read(DIR .. "/upstreams.json")))
local CLIENT = assert(fs.read("tests/egress_attack_client.py"))
local TOKEN = "tok-" .. sys.random_hex(16)   -- a secret's value: it must never reach the sandbox
local SLOPPY_TOKEN = "sloppy-" .. sys.random_hex(16)

local function stats()
  local r = assert(luagent.http.request{url = ("http://127.0.0.1:%d/_stats"):format(U.http), timeout = 10})
  return json.decode(r.body)
end

local function open(network)
  return assert(sandbox.open{memory = "256m", timeout = 60, network = network,
                              manifest = {["attack.py"] = sandbox.text(CLIENT)}})
end

local n = 0
-- attack(box, mode, bytes [, host, port [, wait]]) -> what came back (the client's stdout)
local function attack(box, mode, bytes, host, port, wait)
  n = n + 1
  local file = ("payload-%d"):format(n)
  assert(box:put(file, bytes))
  local argv = {"python3", "/workspace/attack.py", mode, "/workspace/" .. file}
  if host then argv[#argv + 1], argv[#argv + 2] = host, tostring(port) end
  if wait then argv[#argv + 1], argv[#argv + 2] = "--wait", tostring(wait) end
  local r = assert(box:exec(argv, {timeout = 60}))
  return r.stdout .. (r.exit_code ~= 0 and ("\n<client exit " .. r.exit_code .. ": " .. r.stderr .. ">") or "")
end

local function status(answer)
  return tonumber(answer:match("^HTTP/1%.[01] (%d%d%d)"))
end

-- Runs fn and gives the longest time the event loop went without running a 5 ms ticker.
local function loop_held(fn)
  local worst, last, running = 0, luagent.now(), true
  local ticker = luagent.spawn(function()
    while running do
      luagent.sleep(0.005)
      local now = luagent.now()
      worst, last = math.max(worst, now - last), now
    end
  end)
  local out = fn()
  running = false
  ticker:wait()
  return worst, out
end

-- Each attack against the canary: refused with the status, and nothing reached the canary
-- (field: "connections", or "bytes" where the proxy connects before it can judge).
local function refused_all(box, cases, want, field)
  for _, case in ipairs(cases) do
    local before = stats().canary
    local answer = attack(box, case.mode or "raw", case.bytes, case.host, case.port)
    local after = stats().canary
    t.eq(after[field or "connections"], before[field or "connections"],
      case.what .. ": nothing may reach the canary (it saw " .. json.encode(after.seen) .. ")")
    if want then t.eq(status(answer), want, case.what .. ": " .. answer:sub(1, 300)) end
  end
end

local function get(target, host)
  return ("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: attack\r\n\r\n"):format(target, host)
end

-- ---- 1. the host judged is the host reached ----

local names = open{allow = {"*.example.test"}, deny = {"uploads.example.test"}}

t.test("request text the rules and libcurl would read differently is refused with a 400, before any DNS query", function()
  refused_all(names, {
    {what = "a NUL in an absolute-form host", bytes = get("http://evil.test\0.example.test/", "evil.test\0.example.test")},
    {what = "a NUL in a CONNECT target", bytes = "CONNECT evil.test\0.example.test:80 HTTP/1.1\r\nHost: x\r\n\r\n"},
    {what = "userinfo naming a denied host", bytes = get("http://x@uploads.example.test/", "uploads.example.test")},
    {what = "userinfo with a password", bytes = get("http://a.example.test:pw@evil.test/", "evil.test")},
    {what = "a percent-escaped slash", bytes = get("http://evil.test%2f.example.test/", "evil.test%2f.example.test")},
    {what = "a percent-escaped NUL", bytes = get("http://evil.test%00.example.test/", "evil.test%00.example.test")},
    {what = "a slash in a CONNECT target", bytes = "CONNECT evil.test/.example.test:80 HTTP/1.1\r\n\r\n"},
    {what = "a question mark in a CONNECT target", bytes = "CONNECT evil.test?.example.test:80 HTTP/1.1\r\n\r\n"},
    {what = "a hash in a CONNECT target", bytes = "CONNECT evil.test#.example.test:80 HTTP/1.1\r\n\r\n"},
    {what = "a backslash in the host", bytes = get("http://evil.test\\.example.test/", "evil.test\\.example.test")},
    {what = "a non-ASCII host", bytes = get("http://\xc3\xa9vil.example.test/", "\xc3\xa9vil.example.test")},
    {what = "a tab in the host", bytes = "CONNECT evil.test\t.example.test:80 HTTP/1.1\r\n\r\n"},
    {what = "an empty label", bytes = get("http://evil..example.test/", "evil..example.test")},
    {what = "a label of 64 bytes", bytes = get("http://" .. ("a"):rep(64) .. ".example.test/", ("a"):rep(64) .. ".example.test")},
  }, 400)
end)

t.test("an IPv4 address spelled as a name is refused, not matched by a name rule", function()
  local star <close> = open{allow = {"*"}}
  refused_all(star, {
    {what = "hex", bytes = get("http://0x0b000001/", "0x0b000001")},
    {what = "one decimal number", bytes = get("http://184549377/", "184549377")},
    {what = "a short form", bytes = get("http://11.1/", "11.1")},
    {what = "an octal octet", bytes = get("http://013.0.0.1/", "013.0.0.1")},
    {what = "a hex octet", bytes = get("http://0xb.0.0.1/", "0xb.0.0.1")},
    {what = "userinfo before an address", bytes = get("http://x@11.0.0.1/", "11.0.0.1")},
    {what = "CONNECT to hex", bytes = "CONNECT 0x0b000001:443 HTTP/1.1\r\n\r\n"},
    {what = "a name ending in a number", bytes = get("http://evil.test.1/", "evil.test.1")},
  }, 400)
end)

t.test("a secret bound to a wildcard makes TLS only to a host the rules judged", function()
  local wild <close> = open{allow = {"*.example.test"},
                            secrets = {WILD = {hosts = {"*.example.test"}, value = "wild-" .. sys.random_hex(16)}}}
  refused_all(wild, {
    {what = "a slash in a CONNECT target", bytes = "CONNECT evil.test/.example.test:443 HTTP/1.1\r\n\r\n"},
    {what = "a NUL in a CONNECT target", bytes = "CONNECT evil.test\0.example.test:443 HTTP/1.1\r\n\r\n"},
  }, 400)
end)

t.test("the canonical host is what the rules judge: case and one final dot are the same name", function()
  local before = stats().canary.connections
  local answer = attack(names, "raw", get("http://UPLOADS.Example.Test./", "uploads.example.test"))
  t.eq(status(answer), 403, answer:sub(1, 200))
  t.match(answer, "denied by rule 'uploads%.example%.test'")
  t.eq(stats().canary.connections, before)
end)

-- ---- 2. addresses by what they reach ----

t.test("deny rules on addresses hold for mapped IPv6, 0.0.0.0 and ::", function()
  local addr <close> = open{allow = {"0.0.0.0/0:*", "[::/0]:*", "*.example.test:*"},
                            deny = {"127.0.0.0/8", "169.254.0.0/16", "10.0.0.0/8"},
                            hosts = {["pinned.example.test"] = "::ffff:127.0.0.1"}}
  refused_all(addr, {
    {what = "[::ffff:127.0.0.1]", bytes = get("http://[::ffff:127.0.0.1]:8079/", "[::ffff:127.0.0.1]:8079")},
    {what = "[::ffff:7f00:1]", bytes = get("http://[::ffff:7f00:1]:8079/", "[::ffff:7f00:1]:8079")},
    {what = "metadata as [::ffff:169.254.169.254]", bytes = get("http://[::ffff:169.254.169.254]/", "[::ffff:169.254.169.254]")},
    {what = "[::ffff:10.1.2.3]", bytes = get("http://[::ffff:10.1.2.3]/", "[::ffff:10.1.2.3]")},
    {what = "0.0.0.0", bytes = get("http://0.0.0.0:8079/", "0.0.0.0:8079")},
    {what = "[::]", bytes = get("http://[::]:8079/", "[::]:8079")},
    {what = "IPv4-compatible [::127.0.0.1]", bytes = get("http://[::127.0.0.1]:8079/", "[::127.0.0.1]:8079")},
    {what = "NAT64 [64:ff9b::7f00:1]", bytes = get("http://[64:ff9b::7f00:1]:8079/", "[64:ff9b::7f00:1]:8079")},
    {what = "a name pinned to ::ffff:127.0.0.1", bytes = get("http://pinned.example.test:8079/", "pinned.example.test:8079")},
    {what = "a name whose address is ::ffff:127.0.0.1",
     bytes = get("http://mapped.example.test:8079/", "mapped.example.test:8079")},
    {what = "CONNECT [::ffff:127.0.0.1]", bytes = "CONNECT [::ffff:127.0.0.1]:8079 HTTP/1.1\r\n\r\n"},
  }, 403)
  -- and what the rules allow still works: a public address
  local answer = attack(addr, "raw", get("http://[2600:1::1]:8079/", "[2600:1::1]:8079"), nil, nil, 2)
  t.ok(stats().canary.connections > 0, "the allowed public address was reached: " .. answer:sub(1, 200))
end)

-- ---- 3. and 4.: secrets, reflection and one request per connection ----

local tls = open{
  allow = {"api.example.test:" .. U.https, "sloppy.example.test:" .. U.sloppy, "sloppy.example.test:" .. U.sloppy_tls,
           "127.0.0.1:" .. U.https, "127.0.0.1:" .. U.sloppy, "127.0.0.1:" .. U.sloppy_tls},
  hosts = {["api.example.test"] = "127.0.0.1", ["sloppy.example.test"] = "127.0.0.1"},
  ca_file = U.ca_file,
  secrets = {API_TOKEN = {hosts = {"api.example.test"}, value = TOKEN},
             SLOPPY_TOKEN = {hosts = {"sloppy.example.test"}, value = SLOPPY_TOKEN}},
}
local API = ("https://api.example.test:%d"):format(U.https)

local function curl(args)
  local r = assert(tls:exec("curl -sS -m 20 -i --suppress-connect-headers " .. args .. " 2>&1", {timeout = 60}))
  return r.stdout
end

t.test("a secret's host that echoes the request gives back the placeholder, never the value", function()
  local out = curl("-H \"Authorization: Bearer $API_TOKEN\" " .. API .. "/echo")
  t.match(out, "^HTTP/1%.1 200", out:sub(1, 300))
  t.ok(not out:find(TOKEN, 1, true), "the value came back: " .. out:sub(1, 400))
  t.match(out, "Bearer luagent%-secret%-api%-token%-%x+", "the placeholder stands where the value was")
  t.match(out, "X%-Echo%-Authorization: Bearer luagent%-secret", "in the response's head too")
  out = curl("-H \"Authorization: Bearer $API_TOKEN\" " .. API .. "/auth")
  t.match(out, "authorization sha256 " .. sys.sha256("Bearer " .. TOKEN), "the upstream still got the value")
end)

t.test("the value split across chunks, one byte each, is replaced too", function()
  for _, size in ipairs{1, 3, 7} do
    local out = curl(("-H \"Authorization: Bearer $API_TOKEN\" '%s/echo?chunk=%d'"):format(API, size))
    t.match(out, "^HTTP/1%.1 200", out:sub(1, 200))
    t.ok(not out:find(TOKEN, 1, true), "chunks of " .. size .. ": the value came back")
    t.match(out, "luagent%-secret%-api%-token", "chunks of " .. size)
  end
end)

t.test("a compressed answer from a secret's host is refused, saying why", function()
  local out = curl("--compressed -H \"Authorization: Bearer $API_TOKEN\" '" .. API .. "/echo?gzip=1'")
  t.ok(not out:find(TOKEN, 1, true), "the value came back through gzip")
  t.match(out, "^HTTP/1%.1 502", out:sub(1, 300))
  t.match(out, "gzip")
end)

t.test("a placeholder outside the headers a credential belongs in is refused, in the path above all", function()
  local before = stats().paths
  local out = curl(API .. "/$API_TOKEN")
  t.ok(not out:find(TOKEN, 1, true), "the value came back in a 404")
  t.match(out, "^HTTP/1%.1 403", out:sub(1, 300))
  t.match(out, "request target")
  out = curl("-H \"X-Note: $API_TOKEN\" " .. API .. "/echo")
  t.ok(not out:find(TOKEN, 1, true), "the value came back from an X-Note header")
  t.match(out, "^HTTP/1%.1 403", out:sub(1, 300))
  t.match(out, "X%-Note")
  t.eq(stats().paths["/echo"], before["/echo"], "neither reached the upstream")
end)

local function sloppy_seen(before)
  local list = stats().sloppy
  local out = {}
  for i = #before + 1, #list do out[#out + 1] = list[i].method .. " " .. list[i].target .. " " .. list[i].body end
  return out
end

local SLOPPY = ("sloppy.example.test:%d"):format(U.sloppy)
local function post(path, extra, body)
  return ("POST http://%s%s HTTP/1.1\r\nHost: %s\r\n%s\r\n%s"):format(SLOPPY, path, SLOPPY, extra, body)
end
local SMUGGLED = "GET /smuggled HTTP/1.1\r\nHost: evil.test\r\n\r\n"

t.test("one request per connection over plain HTTP: nothing pipelined or smuggled reaches the upstream", function()
  local cases = {
    {what = "two requests in one write", bytes = get("http://" .. SLOPPY .. "/first", SLOPPY) .. SMUGGLED,
     want = 200, seen = {"GET /first "}},
    {what = "a body longer than its Content-Length", bytes = post("/cl", "Content-Length: 5\r\n", "hello" .. SMUGGLED),
     want = 200, seen = {"POST /cl hello"}},
    {what = "a chunked body, then a request", bytes = post("/chunked", "Transfer-Encoding: chunked\r\n",
      "5\r\nhello\r\n3;ext=1\r\n wo\r\n0\r\nTrailer: x\r\n\r\n" .. SMUGGLED), want = 200, seen = {"POST /chunked hello wo"}},
    {what = "a request after the answer began", mode = "later",
     bytes = get("http://" .. SLOPPY .. "/first", SLOPPY) .. "\0\0SPLIT\0\0" .. SMUGGLED, want = 200, seen = {"GET /first "}},
    {what = "Content-Length and Transfer-Encoding", bytes = post("/clte",
      "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n" .. SMUGGLED), want = 400, seen = {}},
    {what = "two Content-Length values", bytes = post("/cl2", "Content-Length: 5\r\nContent-Length: 50\r\n",
      "hello" .. SMUGGLED), want = 400, seen = {}},
    {what = "a list in Content-Length", bytes = post("/cl3", "Content-Length: 5, 50\r\n", "hello"), want = 400, seen = {}},
    {what = "a Transfer-Encoding other than chunked", bytes = post("/te", "Transfer-Encoding: gzip, chunked\r\n",
      "0\r\n\r\n"), want = 501, seen = {}},
    {what = "Transfer-Encoding: xchunked", bytes = post("/te2", "Transfer-Encoding: xchunked\r\n", "0\r\n\r\n"),
     want = 501, seen = {}},
    -- the head goes before the body is read: the upstream sees it, and the connection end where the
    -- body stops being chunked
    {what = "a chunk size that is not hex", bytes = post("/badchunk", "Transfer-Encoding: chunked\r\n",
      "5x\r\nhello\r\n0\r\n\r\n" .. SMUGGLED), seen = {"POST /badchunk "}},
    {what = "a folded header line", bytes = ("GET http://%s/fold HTTP/1.1\r\nHost: %s\r\nX-A: a\r\n b\r\n\r\n")
      :format(SLOPPY, SLOPPY), want = 400, seen = {}},
    {what = "a bare CR in a header", bytes = ("GET http://%s/cr HTTP/1.1\r\nHost: %s\r\nX-A: a\rGET /smuggled\r\n\r\n")
      :format(SLOPPY, SLOPPY), want = 400, seen = {}},
    {what = "bare LF line ends", bytes = ("GET http://%s/lf HTTP/1.1\nHost: %s\n\n"):format(SLOPPY, SLOPPY), seen = {}},
    {what = "a NUL in a header value", bytes = ("GET http://%s/nul HTTP/1.1\r\nHost: %s\r\nX-A: a\0b\r\n\r\n")
      :format(SLOPPY, SLOPPY), want = 400, seen = {}},
    {what = "a space before the colon", bytes = ("GET http://%s/sp HTTP/1.1\r\nHost: %s\r\nContent-Length : 5\r\n\r\nhello")
      :format(SLOPPY, SLOPPY), want = 400, seen = {}},
  }
  for _, case in ipairs(cases) do
    local before = stats().sloppy
    local answer = attack(tls, case.mode or "raw", case.bytes)
    if case.want then t.eq(status(answer), case.want, case.what .. ": " .. answer:sub(1, 300)) end
    t.same(sloppy_seen(before), case.seen, case.what)
  end
end)

t.test("one request per connection inside a tunnel whose TLS ends at luagent", function()
  local host, port = "sloppy.example.test", U.sloppy_tls
  local hdr = ("Host: %s:%d\r\nAuthorization: Bearer %%s\r\n"):format(host, port)
  local cases = {
    {what = "two requests in one write", bytes = ("GET /tls-first HTTP/1.1\r\n" .. hdr .. "\r\n"
      .. "GET /tls-second HTTP/1.1\r\n" .. hdr .. "\r\n"), seen = {"GET /tls-first "}},
    {what = "a second request a moment later", bytes = ("GET /tls-first HTTP/1.1\r\n" .. hdr .. "\r\n\0\0SPLIT\0\0"
      .. "GET /tls-second HTTP/1.1\r\n" .. hdr .. "\r\n"), seen = {"GET /tls-first "}},
    {what = "Content-Length and Transfer-Encoding", bytes = ("POST /tls-clte HTTP/1.1\r\n" .. hdr
      .. "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /tls-second HTTP/1.1\r\n" .. hdr .. "\r\n"),
     seen = {}},
  }
  local placeholder = tls:exec("printf %s \"$SLOPPY_TOKEN\"").stdout
  for _, case in ipairs(cases) do
    local before = stats().sloppy
    local answer = attack(tls, "tls", case.bytes:gsub("%%s", placeholder), host, port)
    t.same(sloppy_seen(before), case.seen, case.what .. ": " .. answer:sub(1, 200))
    t.ok(not answer:find(SLOPPY_TOKEN, 1, true), case.what .. ": the value came back")
  end
end)

-- ---- 5. a hostile head ----

t.test("a long run of blanks in a header value costs the event loop nothing worth measuring", function()
  local held, answer = loop_held(function()
    return attack(names, "raw", "GET http://nowhere.test/ HTTP/1.1\r\nHost: nowhere.test\r\nX-Pad: x"
      .. (" "):rep(60000) .. "y\r\n\r\n")
  end)
  t.eq(status(answer), 403, "parsed, then judged: " .. answer:sub(1, 200))
  t.lt(held, 1.0, "the longest the loop was held, in seconds")
end)

t.test("a 1 MiB head sent at once is refused as too large, and the loop is not held", function()
  for _, fill in ipairs{"a", " ", "x: y\r\n"} do
    local held, answer = loop_held(function()
      return attack(names, "raw", "GET http://nowhere.test/ HTTP/1.1\r\nHost: nowhere.test\r\nX-Pad: "
        .. fill:rep((1 << 20) // #fill) .. "\r\n\r\n")
    end)
    t.eq(status(answer), 431, ("%q: %s"):format(fill, answer:sub(1, 200)))
    t.lt(held, 1.0, ("%q: the longest the loop was held, in seconds"):format(fill))
  end
end)

-- ---- 6. one server name ----

local function u16(v) return string.char(v >> 8 & 255, v & 255) end
local function vec16(s) return u16(#s) .. s end
local function ext(kind, data) return u16(kind) .. vec16(data) end
local function sni(list)
  local entries = {}
  for _, name in ipairs(list) do entries[#entries + 1] = "\0" .. vec16(name) end
  return ext(0, vec16(table.concat(entries)))
end
local function client_hello(extensions)
  local body = u16(0x0303) .. ("\1"):rep(32) .. "\0" .. vec16(u16(0x1301) .. u16(0xc02f)) .. "\1\0"
    .. vec16(table.concat(extensions))
  local handshake = "\1" .. string.char(0, #body >> 8, #body & 255) .. body
  return "\22\3\1" .. vec16(handshake)
end

t.test("a ClientHello with two server names, two server_name extensions or encrypted_client_hello is refused", function()
  refused_all(names, {
    {what = "two names in one list", mode = "hello", host = "hello.example.test", port = 443,
     bytes = client_hello{sni{"hello.example.test", "evil.test"}}},
    {what = "two server_name extensions", mode = "hello", host = "hello.example.test", port = 443,
     bytes = client_hello{sni{"hello.example.test"}, sni{"evil.test"}}},
    {what = "encrypted_client_hello", mode = "hello", host = "hello.example.test", port = 443,
     bytes = client_hello{sni{"hello.example.test"}, ext(0xfe0d, ("\0"):rep(40))}},
  }, nil, "bytes")
  -- the plain hello passes: the canary gets it (the test's control)
  local before = stats().canary.bytes
  attack(names, "hello", client_hello{sni{"hello.example.test"}}, "hello.example.test", 443, 2)
  t.ok(stats().canary.bytes > before, "a hello naming the host alone goes through")
end)

tls:close()
names:close()
t.done()

-- needs: docker
-- Sandbox egress by rule, with the real engine and upstreams on this
-- machine's loopback only (tests/net_upstreams.py: HTTP, HTTPS with a test CA,
-- header echo, a package index serving a wheel built offline, TCP and UDP echo).
-- The container keeps NetworkMode none: everything goes through the supervisor's
-- egress relay and the host's proxy, which decides by the rules. Allowed and
-- denied requests from curl and python3, pip install from the index, secrets
-- injected over HTTPS with the value absent from the sandbox, and every escape
-- attempt the issue lists, each failing.
local t = require "helper"
local sandbox = require "luagent.sandbox"
local json = require "luagent.json"
local fs = require "luagent.fs"
local process = require "luagent.process"
local sys = require "luagent.sys"
local events = require "luagent.events"

local work = assert(fs.temp_dir("luagent-network-spec"))

-- ---- the upstreams ----

local function start_upstreams()
  local proc = assert(process.spawn{argv = {"python3", "tests/net_upstreams.py", "--dir", work},
                                    stdin = "pipe", stdout = "pipe", stderr = "null"})
  local out = ""
  repeat
    local chunk = proc:read("stdout")
    out = out .. (chunk or "")
  until out:find("ready\n", 1, true) or not chunk
  assert(out:find("ready", 1, true), "the upstreams started")
  return proc, json.decode(assert(fs.read(work .. "/upstreams.json")))
end

local upstreams_proc, U = start_upstreams()
local CA = assert(fs.read(U.ca_file))
local PIN = {["api.test.example"] = "127.0.0.1", ["pkgs.test.example"] = "127.0.0.1",
             ["other.test.example"] = "127.0.0.1"}

local function stats()
  local r = assert(luagent.http.request{url = ("http://127.0.0.1:%d/_stats"):format(U.http), timeout = 10})
  return json.decode(r.body)
end

-- every network event of the run, in order
local seen = {}
events.subscribe(function(ev)
  if ev.type:match("^network") then seen[#seen + 1] = ev end
end)
-- The last network event for host. A connection's event comes when it ends,
-- which may be a moment after the client has its answer: waits up to 5 s for
-- one newer than the last asked for.
local asked = 0
local function last_event(host)
  local deadline = luagent.now() + 5
  repeat
    for i = #seen, asked + 1, -1 do
      if seen[i].type == "network" and (not host or seen[i].host == host) then
        asked = i
        return seen[i]
      end
    end
    luagent.sleep(0.02)
  until luagent.now() > deadline
  for i = #seen, 1, -1 do
    if seen[i].type == "network" and (not host or seen[i].host == host) then return seen[i] end
  end
end

local function sh(box, command, timeout)
  return assert(box:exec(command, {timeout = timeout or 60}))
end

-- one box for the common cases: loopback upstreams are named by address rules
local TOKEN = "tok-" .. sys.random_hex(12) -- the secret's value: it must never reach the sandbox
local box = assert(sandbox.open{memory = "512m", pids = 256, timeout = 120, network = {
  allow = {"api.test.example:" .. U.http, "api.test.example:" .. U.https, "pkgs.test.example:" .. U.http,
           "pkgs.test.example:" .. U.https, "other.test.example:" .. U.http, "other.test.example:" .. U.https,
           "localhost:" .. U.http, "127.0.0.1:" .. U.http, "127.0.0.1:" .. U.https},
  deny = {"denied.test.example"},
  hosts = PIN, ca_file = U.ca_file,
  secrets = {API_TOKEN = {hosts = {"api.test.example"}, value = TOKEN},
             OTHER_TOKEN = {hosts = {"pkgs.test.example"}, value = "other-" .. sys.random_hex(12)}},
}, manifest = {["ca.pem"] = sandbox.text(CA)}})

local HTTP = ("http://api.test.example:%d"):format(U.http)
local HTTPS_PKGS = ("https://pkgs.test.example:%d"):format(U.https)   -- a secret is bound to it: TLS ends at luagent
local HTTPS_OTHER = ("https://other.test.example:%d"):format(U.https) -- no secret: tunnelled untouched

t.test("an allowed HTTP request from curl and python3 urllib, and a denied one gets a 403 with its reason", function()
  local r = sh(box, "curl -sS -m 20 " .. HTTP .. "/hello")
  t.eq(r.exit_code, 0, r.stderr)
  t.eq(r.stdout, ("hello from upstream http api.test.example:%d\n"):format(U.http))
  local ev = last_event("api.test.example")
  t.eq(ev.allowed, true); t.eq(ev.address, "127.0.0.1"); t.eq(ev.rule, "api.test.example:" .. U.http)
  t.ok(ev.bytes_down > 0 and ev.bytes_up > 0, "bytes each way"); t.ok(ev.ms >= 0, "a duration")
  r = sh(box, ("python3 -c \"import urllib.request as u; print(u.urlopen('%s/hello', timeout=20).read().decode())\"")
    :format(HTTP))
  t.match(r.stdout, "^hello from upstream http")
  r = sh(box, ("curl -sS -m 20 -w '%%{http_code}' http://nowhere.test.example:%d/hello"):format(U.http))
  t.eq(r.stdout, ("luagent: no rule allows nowhere.test.example:%d\n403"):format(U.http), "a one-line reason")
  ev = last_event("nowhere.test.example")
  t.eq(ev.allowed, false); t.eq(ev.reason, ("no rule allows nowhere.test.example:%d"):format(U.http))
  r = sh(box, ("curl -sS -m 20 -w '%%{http_code}' http://denied.test.example:%d/"):format(U.http))
  t.match(r.stdout, "denied by rule 'denied%.test%.example'.*403$")
end)

t.test("HTTPS through CONNECT: the tunnel is byte-exact TLS the sandbox verifies itself", function()
  local r = sh(box, "curl -sS -m 20 --cacert /workspace/ca.pem " .. HTTPS_OTHER .. "/bytes/3000000 | sha256sum")
  local pattern = {}
  for i = 0, 255 do pattern[#pattern + 1] = string.char(i) end
  pattern = table.concat(pattern)
  local expect = sys.sha256(pattern:rep(3000000 // 256 + 1):sub(1, 3000000))
  t.eq(r.stdout:match("^%x+"), expect, "3 MB through the tunnel, byte-exact: " .. r.stderr)
  local ev = last_event("other.test.example")
  t.eq(ev.method, "CONNECT"); t.eq(ev.allowed, true); t.ok(ev.bytes_down > 3000000, "counted")
end)

t.test("pip install from an index through the proxy (HTTP and HTTPS)", function()
  local r = sh(box, ("pip install --no-cache-dir --target /tmp/pkgs --trusted-host pkgs.test.example "
    .. "--index-url http://pkgs.test.example:%d/simple/ "
    .. "luagent-probe && PYTHONPATH=/tmp/pkgs python3 -c 'import luagent_probe; print(luagent_probe.hello())'")
    :format(U.http), 120)
  t.eq(r.exit_code, 0, r.stdout .. r.stderr)
  t.match(r.stdout, "hello from luagent%-probe")
  -- tunnelled: pip verifies the index's own certificate (the test CA: network.ca_file is in the
  -- sandbox's bundle too)
  r = sh(box, ("pip install --no-cache-dir --target /tmp/pkgs2 --index-url "
    .. "%s/simple/ luagent-probe"):format(HTTPS_OTHER), 120)
  t.eq(r.exit_code, 0, r.stdout .. r.stderr)
  -- TLS ending at luagent: pip trusts the session CA through PIP_CERT, luagent verifies the index
  r = sh(box, ("pip install --no-cache-dir --target /tmp/pkgs3 --index-url %s/simple/ luagent-probe"):format(HTTPS_PKGS), 120)
  t.eq(r.exit_code, 0, r.stdout .. r.stderr)
  t.eq(last_event("pkgs.test.example").tls_terminated, true)
  t.ok((stats().paths["/files/" .. U.wheel] or 0) >= 3, "the wheel was fetched from the index three times")
end)

t.test("a secret: the sandbox holds a placeholder, the upstream gets the value over TLS, nothing else sees it", function()
  local r = sh(box, ("curl -sS -m 20 -H \"Authorization: Bearer $API_TOKEN\" https://api.test.example:%d/auth")
    :format(U.https))
  t.eq(r.exit_code, 0, r.stderr)
  t.eq(r.stdout, "authorization sha256 " .. sys.sha256("Bearer " .. TOKEN) .. "\n", "the upstream got the value")
  local ev = last_event("api.test.example")
  t.eq(ev.tls_terminated, true); t.same(ev.secrets, {"API_TOKEN"})
  -- python requests-style clients trust the session CA through the bundle variables
  r = sh(box, ("python3 -c \"import os,urllib.request as u; q=u.Request('https://api.test.example:%d/auth', "
    .. "headers={'Authorization': 'Bearer '+os.environ['API_TOKEN']}); print(u.urlopen(q, timeout=20).read().decode())\"")
    :format(U.https))
  t.eq(r.stdout, "authorization sha256 " .. sys.sha256("Bearer " .. TOKEN) .. "\n\n", r.stderr)
  -- the value is nowhere in the sandbox: environment, files, processes
  r = sh(box, "echo $API_TOKEN; cat /proc/1/environ /proc/self/environ 2>/dev/null | tr '\\0' '\\n' | grep -c API_TOKEN")
  t.match(r.stdout, "^luagent%-secret%-api%-token%-%x+\n")
  -- a scan for the value, which the scan's own text holds only in two halves (a command
  -- holding it whole is refused before it runs, as it should be)
  local half = #TOKEN // 2
  box:put("scan.py", ([[
import os
value = %q + %q
found = []
for top in ("/workspace", "/tmp", "/etc", "/proc"):
    for root, dirs, files in os.walk(top):
        if top == "/proc" and root != "/proc":
            dirs[:] = []
            files = [f for f in files if f in ("environ", "cmdline")]
        elif top == "/proc":
            dirs[:] = [d for d in dirs if d.isdigit()]
            files = []
        for name in files:
            try:
                with open(os.path.join(root, name), "rb") as f:
                    if value.encode() in f.read(): found.append(os.path.join(root, name))
            except OSError:
                pass
print("found", found)
]]):format(TOKEN:sub(1, half), TOKEN:sub(half + 1)))
  r = sh(box, "python3 /workspace/scan.py")
  t.eq(r.stdout, "found []\n", "no file or process of the sandbox holds the value")
end)

t.test("a placeholder sent anywhere else is refused and reported", function()
  -- plain HTTP to a host the secret is not bound to
  local r = sh(box, ("curl -sS -m 20 -w '%%{http_code}' -H \"Authorization: Bearer $API_TOKEN\" "
    .. "http://other.test.example:%d/echo"):format(U.http))
  t.match(r.stdout, "placeholder of secret API_TOKEN, which may only go to its own hosts.*403$")
  t.eq(last_event("other.test.example").secret_refused, "API_TOKEN")
  -- plain HTTP to its own host: never in clear
  r = sh(box, ("curl -sS -m 20 -w '%%{http_code}' -H \"Authorization: Bearer $API_TOKEN\" %s/echo"):format(HTTP))
  t.match(r.stdout, "secret API_TOKEN is only sent over HTTPS.*403$")
  -- over TLS to a host bound to another secret
  r = sh(box, ("curl -sS -m 20 -w '%%{http_code}' -H \"Authorization: Bearer $API_TOKEN\" %s/echo")
    :format(HTTPS_PKGS))
  t.match(r.stdout, "placeholder of secret API_TOKEN.*not pkgs%.test%.example.*403$")
  t.eq(stats().paths["/echo"] or 0, 0, "none of them reached an upstream")
end)

t.test("the value never enters the trace", function()
  local trace = fs.read(luagent.run_dir() .. "/trace.jsonl") or ""
  t.ok(#trace > 0, "a trace")
  t.ok(not trace:find(TOKEN, 1, true), "no value in the trace")
  t.match(trace, '"type":"network"', "network events are in it")
end)

-- ---- escapes that must fail ----

t.test("no way around the proxy: direct IPs, DNS, UDP, IPv6, unset proxy variables", function()
  local script = [[
import socket, sys
def attempt(what, fn):
    try:
        fn(); print(what, "OPEN")
    except Exception as e:
        print(what, "blocked", type(e).__name__)
def tcp(host, port, family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM); s.settimeout(3); s.connect((host, port))
attempt("tcp-host-ip", lambda: tcp("172.17.0.1", PORT))
attempt("tcp-public", lambda: tcp("1.1.1.1", 443))
attempt("dns", lambda: socket.getaddrinfo("api.test.example", 80))
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
    s.sendto(b"x", ("172.17.0.1", UDP)); s.recvfrom(10)
attempt("udp", udp)
attempt("ipv6-public", lambda: tcp("2001:db8::1", 443, socket.AF_INET6))
attempt("loopback-upstream", lambda: tcp("127.0.0.1", PORT))
]]
  script = script:gsub("PORT", tostring(U.http)):gsub("UDP", tostring(U.udp_echo))
  box:put("escape.py", script)
  local r = sh(box, "python3 /workspace/escape.py")
  for _, what in ipairs{"tcp-host-ip", "tcp-public", "dns", "udp", "ipv6-public", "loopback-upstream"} do
    t.ok(r.stdout:find(what .. " blocked", 1, true), what .. ": " .. r.stdout)
  end
  r = sh(box, ("env -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY curl -sS -m 5 %s/hello; echo rc=$?")
    :format(HTTP))
  t.no_match(r.stdout, "hello from upstream", "without the proxy variables: nothing")
  t.eq(stats().udp_echo or 0, 0, "no UDP datagram reached the host")
end)

t.test("CONNECT to a denied host, a TLS hello naming another host, a Host header naming another host", function()
  local r = sh(box, ("curl -sS -m 20 https://denied.test.example:%d/ 2>&1; echo rc=$?"):format(U.https))
  t.match(r.stdout, "403"); t.eq(last_event("denied.test.example").allowed, false)
  -- domain fronting: CONNECT names an allowed host, the hello another one
  r = sh(box, ("curl -sS -m 20 --cacert /workspace/ca.pem --connect-to pkgs.test.example:%d:other.test.example:%d "
    .. "https://pkgs.test.example:%d/hello; echo rc=$?"):format(U.https, U.https, U.https))
  t.no_match(r.stdout, "hello from upstream")
  local ev = last_event("other.test.example")
  t.eq(ev.allowed, false); t.match(ev.reason, "TLS hello names pkgs%.test%.example but the tunnel is to other%.test%.example")
  r = sh(box, ("curl -sS -m 20 -w '%%{http_code}' -H 'Host: denied.test.example' %s/hello"):format(HTTP))
  t.match(r.stdout, "the Host header names denied%.test%.example:80 but the request goes to api%.test%.example:%d+.*403$")
end)

t.test("names pinned or resolving to private or loopback addresses are refused unless an address rule names them", function()
  local b <close> = assert(sandbox.open{memory = "256m", network = {
    allow = {"private.test.example:80", "localhost:" .. U.https, "ok.test.example:" .. U.http, "127.0.0.1:" .. U.http},
    hosts = {["private.test.example"] = "10.11.12.13", ["ok.test.example"] = "127.0.0.1"}}})
  local r = sh(b, "curl -sS -m 20 -w '%{http_code}' http://private.test.example/")
  t.match(r.stdout, "10%.11%.12%.13 is a private address and no address rule allows it.*403$")
  -- localhost is in NO_PROXY: this curl is told to use the proxy for it anyway
  sh(b, ("curl -sS -m 20 -k --noproxy '' https://localhost:%d/ 2>&1; echo"):format(U.https))
  local ev = last_event("localhost")
  t.ok(ev and ev.allowed == false, "refused")
  t.match(ev and ev.reason or "", "is a loopback address and no address rule allows it")
  r = sh(b, ("curl -sS -m 20 http://ok.test.example:%d/hello"):format(U.http))
  t.match(r.stdout, "hello from upstream", "a loopback address named by an address rule (and port) is allowed")
  r = sh(b, ("curl -sS -m 20 --noproxy '' -w '%%{http_code}' http://127.0.0.1:%d/hello"):format(U.https))
  t.match(r.stdout, "no address rule allows 127%.0%.0%.1:" .. U.https, "an IP literal on a port no rule names")
end)

t.test("200 connections at once: the limit refuses with its name, nothing hangs", function()
  -- each request is held 3 s upstream, so they overlap however slowly xargs starts them
  local b <close> = assert(sandbox.open{memory = "512m", pids = 512, network = {
    allow = {"api.test.example:" .. U.http, "127.0.0.1:" .. U.http}, hosts = PIN, max_connections = 32}})
  local r = sh(b, ("seq 200 | xargs -P 200 -I{} curl -s -m 30 -o /dev/null -w '%%{http_code}\\n' %s/slow/3 | sort | uniq -c")
    :format(HTTP), 120)
  local ok, refused = tonumber(r.stdout:match("(%d+) 200")) or 0, tonumber(r.stdout:match("(%d+) 403")) or 0
  t.eq(ok + refused, 200, "every request answered: " .. r.stdout)
  t.ok(ok >= 32 and refused > 0, "some allowed, the rest refused: " .. r.stdout)
  local found
  for _, ev in ipairs(seen) do
    if ev.limit == "max_connections" then found = ev end
  end
  t.match(found and found.reason or "", "more than 32 connections at once %(network%.max_connections%)")
end)

t.test("a 1 GiB download over max_bytes is cut, and the event names the limit", function()
  local b <close> = assert(sandbox.open{memory = "512m", network = {
    allow = {"api.test.example:" .. U.http, "127.0.0.1:" .. U.http}, hosts = PIN, max_bytes = "20m"}})
  local r = sh(b, ("curl -sS -m 60 -o /dev/null -w '%%{size_download}' %s/bytes/1073741824; echo ' rc='$?"):format(HTTP), 120)
  local got = tonumber(r.stdout:match("^(%d+)")) or 0
  t.ok(got <= 21 * 1024 * 1024, "cut near 20 MiB: " .. r.stdout)
  t.no_match(r.stdout, "rc=0", "curl saw the cut")
  local ev = last_event("api.test.example")
  t.eq(ev.limit, "max_bytes"); t.match(ev.error, "network%.max_bytes")
  r = sh(b, ("curl -sS -m 20 -w '%%{http_code}' %s/hello"):format(HTTP))
  t.match(r.stdout, "network%.max_bytes %(%d+ bytes%) is used up.*403$", "the next connection is refused")
  local net = b:network()
  t.ok(net.bytes_down >= 20 * 1024 * 1024, "counted"); t.ok(net.denied >= 1)
end)

t.test("box:deny tightens a live session, box:allow opens one more host; each change is traced", function()
  local r = sh(box, "curl -sS -m 20 " .. HTTP .. "/hello")
  t.match(r.stdout, "hello from upstream")
  assert(box:deny{"api.test.example"})
  r = sh(box, ("curl -sS -m 20 -w '%%{http_code}' %s/hello"):format(HTTP))
  t.match(r.stdout, "denied by rule 'api%.test%.example'.*403$")
  t.raises(function() box:allow{"bad.*.example"} end, "box:allow%[1%] = \"bad%.%*%.example\"")
  local changes = 0
  for _, ev in ipairs(seen) do changes = changes + (ev.type == "network_rules" and 1 or 0) end
  t.eq(changes, 1, "one network_rules event")
  local net = box:network()
  t.same(net.rules.deny, {"denied.test.example", "api.test.example"})
  t.ok(#net.recent > 0 and net.recent[1].host == "api.test.example", "the last connection first")
  t.eq(net.rules.secrets.API_TOKEN.hosts[1], "api.test.example")
  t.no_match(json.encode(net), TOKEN, "no value in box:network()")
end)

t.test("the relay killed from outside comes back: the next connections work, and it is traced", function()
  local before = box:network().connections
  -- as root, through the engine (nothing in the sandbox can reach the relay: it runs as root)
  local script = "'for p in /proc/[0-9]*; do [ ${p#/proc/} != $$ ] && grep -q egress $p/cmdline 2>/dev/null && "
    .. "kill -9 ${p#/proc/}; done' >/dev/null 2>&1"
  local kill = ("docker exec -u 0 %s sh -c %s"):format(box.container, script)
  if t.engine == "k8s" then -- a pod: the cluster's exec (its user is the container's, root)
    local ns = t.k8s_namespace
    kill = ("tests/k8s.sh kubectl -n %s exec %s -- sh -c %s"):format(ns, box.container, script)
  end
  os.execute(kill)
  local r, deadline
  deadline = luagent.now() + 20
  repeat
    luagent.sleep(0.3)
    r = sh(box, ("curl -sS -m 10 http://other.test.example:%d/hello 2>&1"):format(U.http))
  until r.stdout:find("hello from upstream", 1, true) or luagent.now() > deadline
  t.match(r.stdout, "hello from upstream", "after the relay came back")
  local relaunched
  for _, ev in ipairs(seen) do if ev.type == "network_relay" and ev.restarted then relaunched = ev end end
  t.ok(relaunched, "a network_relay event")
  t.ok(box:network().connections >= 1 and box:network().allowed > 0, "counting goes on: " .. before)
end)

t.test("the trace page lists the connections, refusals flagged with why", function()
  local dir = luagent.run_dir()
  local page = assert(require("luagent.trace_page").write(dir .. "/trace.jsonl", work .. "/page.html"))
  local html = assert(fs.read(page))
  t.match(html, "refused")
  t.match(html, "no rule allows nowhere%.test%.example")
  t.match(html, "network GET api%.test%.example:" .. U.http)
  t.match(html, "TLS ended at luagent, secrets API_TOKEN")
  t.ok(not html:find(TOKEN, 1, true), "no value on the page")
end)

t.test("the rules from a recipe's YAML (sandbox.network), lists and a pinned host as YAML writes them", function()
  local dir = work .. "/yaml-recipe"
  assert(fs.mkdir(dir))
  assert(fs.write(dir .. "/r.yaml", ([[
sandbox:
  network:
    allow: ["api.test.example:%d", "127.0.0.1:%d"]
    hosts: {api.test.example: 127.0.0.1}
]]):format(U.http, U.http)))
  assert(fs.write(dir .. "/r.lua", ([[
local cfg = luagent.config("r.yaml")
local box <close> = assert(luagent.sandbox.open{network = cfg.sandbox.network, memory = "256m"})
io.write(box:exec("curl -sS -m 20 http://api.test.example:%d/hello").stdout)
]]):format(U.http)))
  local proc = assert(process.spawn{argv = {t.env("LUAGENT"), "run", "-q", dir .. "/r.lua"}, stdout = "pipe",
                                    stderr = "null"})
  local out = ""
  repeat local chunk = proc:read("stdout"); out = out .. (chunk or "") until not chunk
  t.eq(proc:wait(60), 0, out)
  t.match(out, "hello from upstream http api%.test%.example")
end)

t.test("network = true warns once that the sandbox has the engine's whole network", function()
  local out = fs.temp_dir("luagent-network-warn")
  -- said before the engine is asked: the warning does not depend on the engine's bridge
  local open_close = 'local b = require("luagent.sandbox").open{network = true, memory = "128m"} if b then b:close() end\n'
  assert(fs.write(out .. "/r.lua", open_close .. open_close))
  local proc = assert(process.spawn{argv = {t.env("LUAGENT"), "run", "-q", out .. "/r.lua"}, stdout = "null", stderr = "pipe"})
  local err = ""
  repeat local chunk = proc:read("stderr"); err = err .. (chunk or "") until not chunk
  proc:wait()
  local _, n = err:gsub("the Docker engine's whole network", "")
  t.eq(n, 1, "one warning line: " .. err)
  fs.remove(out)
end)

box:close()
upstreams_proc:close_stdin()
upstreams_proc:wait(10)
fs.remove(work)
t.done()

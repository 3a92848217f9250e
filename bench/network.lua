-- bench/network: what sandbox egress by rule costs, measured in one
-- run against the real engine and loopback upstreams (tests/net_upstreams.py),
-- the host's direct way measured alongside as the baseline, alternating:
--   download     100 MB (/bytes/104857600) with curl -o /dev/null: on the host
--                straight to 127.0.0.1, and in a sandbox through its proxy (the
--                supervisor's egress relay, the host's proxy, the upstream); over
--                HTTP and over HTTPS (a CONNECT tunnel, the sandbox's curl verifying
--                the fixture's CA itself), and over HTTPS to a host a secret is bound to
--                (TLS ends at luagent: the body decoded, searched for the secret's
--                value and framed again); curl's own time_total, MB/s (10^6 bytes).
--   requests     200 small GETs (/hello) one after another from one process: python3
--                urllib (a new connection each, as most scripts do) and one curl with
--                200 URLs (one kept-alive connection), ms per request, and what the
--                proxy adds.
--   commands     box:exec{"true"} and a box:python cell in a session with rules next
--                to one without (network = false).
-- Aims (the issue's): proxied throughput at least half the direct one; under 2 ms
-- added per request; commands costing no more with rules. A benchmark, not a
-- test: it prints figures and never fails on time.
local measure = require "measure"
local median, timed = measure.median, measure.timed
local sandbox, sys, fs, json = luagent.sandbox, luagent.sys, luagent.fs, luagent.json
local process = require "luagent.process"
local runs = tonumber(luagent.settings.runs) or 30         -- per-command rounds
local rounds = tonumber(luagent.settings.rounds) or 5      -- download and request rounds
local SIZE = tonumber(luagent.settings.size) or 104857600  -- bytes per download
local N = tonumber(luagent.settings.requests) or 200       -- requests per round

-- ---- the upstreams (they exit when our end of their stdin closes) ----
local work = assert(fs.temp_dir("luagent-bench-network"))
local upstreams = assert(process.spawn{argv = {"python3", "tests/net_upstreams.py", "--dir", work},
                                       stdin = "pipe", stdout = "pipe", stderr = "null"})
local said = ""
repeat
  local chunk = upstreams:read("stdout")
  said = said .. (chunk or "")
until said:find("ready\n", 1, true) or not chunk
assert(said:find("ready", 1, true), "the upstreams did not start")
local U = json.decode(assert(fs.read(work .. "/upstreams.json")))

-- the sandbox reaches the upstreams by name (its NO_PROXY lists 127.0.0.1), pinned to loopback
local NAME = "other.test.example" -- in the server certificate's SANs; no secret bound: HTTPS is tunnelled untouched
local SECRET_HOST = "pkgs.test.example" -- a secret is bound to it: TLS ends at luagent
local ruled = assert(sandbox.open{network = {
  allow = {NAME .. ":" .. U.http, NAME .. ":" .. U.https, SECRET_HOST .. ":" .. U.https, "127.0.0.1:" .. U.http,
           "127.0.0.1:" .. U.https},
  hosts = {[NAME] = "127.0.0.1", [SECRET_HOST] = "127.0.0.1"}, ca_file = U.ca_file,
  secrets = {BENCH_TOKEN = {hosts = {SECRET_HOST}, value = "bench-" .. sys.random_hex(16)}},
}, manifest = {["ca.pem"] = sandbox.text(assert(fs.read(U.ca_file)))}})
local plain = assert(sandbox.open{network = false})

-- each gives the command's stdout, or nil and why it failed
local function host_run(argv)
  local code, out = sys.execute(argv)
  if code ~= 0 then return nil, ("exit %d: %s"):format(code, out) end
  return out
end

local function box_run(argv)
  local r = assert(ruled:exec(argv, {timeout = 120}))
  if r.exit_code ~= 0 then
    local lost = (ruled:network() or {}).lost
    return nil, ("exit %d: %s%s%s"):format(r.exit_code, r.stdout, r.stderr, lost and ("; the relay is lost: " .. lost) or "")
  end
  return r.stdout
end

-- A failed transfer is counted and told, not fatal: the other figures still come.
local function failed(row, why)
  row.failures = (row.failures or 0) + 1
  why = why:gsub("%s+$", ""):gsub("\n", " | ")
  row.why = #why > 300 and why:sub(1, 150) .. " ... " .. why:sub(-150) or why
end
local function failures(row)
  return row.failures and ("   (%d failed; the last: %s)"):format(row.failures, row.why) or ""
end

-- ---- 1. the download ----
local CURL = {"curl", "-sS", "-o", "/dev/null", "-w", "%{time_total} %{size_download}\n"}
local function curl(extra)
  return table.move(extra, 1, #extra, #CURL + 1, table.move(CURL, 1, #CURL, 1, {}))
end
local path = "/bytes/" .. SIZE
local downloads = {
  {label = "HTTP, host direct", run = host_run,
   argv = curl{"--noproxy", "*", ("http://127.0.0.1:%d%s"):format(U.http, path)}},
  {label = "HTTP, sandbox via proxy", run = box_run,
   argv = curl{("http://%s:%d%s"):format(NAME, U.http, path)}},
  {label = "HTTPS, host direct", run = host_run,
   argv = curl{"--noproxy", "*", "--cacert", U.ca_file, "--resolve", ("%s:%d:127.0.0.1"):format(NAME, U.https),
               ("https://%s:%d%s"):format(NAME, U.https, path)}},
  {label = "HTTPS, sandbox tunnel", run = box_run,
   argv = curl{"--cacert", "/workspace/ca.pem", ("https://%s:%d%s"):format(NAME, U.https, path)}},
  {label = "HTTPS, host direct", run = host_run,
   argv = curl{"--noproxy", "*", "--cacert", U.ca_file, "--resolve", ("%s:%d:127.0.0.1"):format(SECRET_HOST, U.https),
               ("https://%s:%d%s"):format(SECRET_HOST, U.https, path)}},
  {label = "HTTPS, TLS ends at luagent", run = box_run, -- the sandbox trusts the session CA (CURL_CA_BUNDLE)
   argv = curl{("https://%s:%d%s"):format(SECRET_HOST, U.https, path)}},
}
for _, d in ipairs(downloads) do d.rates, d.walls = {}, {} end
for i = 1, rounds + 1 do
  for _, d in ipairs(downloads) do
    local out, why
    local wall = timed(function() out, why = d.run(d.argv) end)
    local took, got = (out or ""):match("^(%S+) (%d+)")
    if not out or tonumber(got) ~= SIZE then
      failed(d, why or ("%s bytes of %d"):format(tostring(got), SIZE))
    elseif i > 1 then -- one warm-up round
      table.insert(d.rates, SIZE / tonumber(took) / 1e6)
      table.insert(d.walls, wall)
    end
  end
end
-- the ceiling under the proxy: the bytes go to the relay through the engine's exec
-- stream, whose own speed is measured with the docker CLI, the same bytes into `cat`
local stream_rates = {}
for i = 1, rounds + 1 do
  local ok = true
  local wall = timed(function()
    ok = os.execute(("head -c %d /dev/zero | docker exec -i %s sh -c 'cat > /dev/null'"):format(SIZE, ruled.container))
  end)
  if ok and i > 1 then table.insert(stream_rates, SIZE / wall / 1e6) end
end

print(("download of %.1f MB (curl -o /dev/null: MB/s by its time_total; wall: around the command),"
  .. " medians of %d, alternating"):format(SIZE / 1e6, rounds))
for k, d in ipairs(downloads) do
  if #d.rates > 0 then
    local rate, base = median(d.rates), downloads[k - 1] and #downloads[k - 1].rates > 0 and median(downloads[k - 1].rates)
    local ratio = k % 2 == 0 and base and ("   %.2fx the direct throughput"):format(rate / base) or ""
    print(("  %-24s %8.1f MB/s   wall %7.1f ms%s%s"):format(d.label, rate, median(d.walls) * 1000, ratio, failures(d)))
  else
    print(("  %-24s no transfer completed%s"):format(d.label, failures(d)))
  end
end
if #stream_rates > 0 and #downloads[2].rates > 0 then
  local stream = median(stream_rates)
  print(("  the engine's exec stream   %8.1f MB/s   (docker exec -i, the same bytes into cat): the proxy is %.2fx of it")
    :format(stream, median(downloads[2].rates) / stream))
end

-- ---- 2. small requests ----
-- python3 urllib, a new connection per request; "direct" ignores any proxy the environment names
local LOOP = [[
import sys, time, urllib.request as u
url, n, how = sys.argv[1], int(sys.argv[2]), sys.argv[3]
op = u.build_opener(u.ProxyHandler({})) if how == "direct" else u.build_opener()
op.open(url, timeout=20).read()
t = time.perf_counter()
for _ in range(n):
    op.open(url, timeout=20).read()
print(time.perf_counter() - t)
]]
local function curl_many(url, extra)
  local argv = {"curl", "-sS", "-w", "%{time_total}\n", table.unpack(extra)}
  for _ = 1, N do argv[#argv + 1] = "-o"; argv[#argv + 1] = "/dev/null"; argv[#argv + 1] = url end
  return argv
end
local function curl_total(out) -- the sum of the transfers' times (without curl's start)
  local sum, n = 0, 0
  for t in out:gmatch("%S+") do sum, n = sum + tonumber(t), n + 1 end
  return n == N and sum or nil
end
local direct_url = ("http://127.0.0.1:%d/hello"):format(U.http)
local proxied_url = ("http://%s:%d/hello"):format(NAME, U.http)
local requests = {
  {label = "python3 urllib", rows = {
    {label = "host direct", run = host_run, argv = {"python3", "-c", LOOP, direct_url, tostring(N), "direct"}},
    {label = "sandbox via proxy", run = box_run, argv = {"python3", "-c", LOOP, proxied_url, tostring(N), "env"}},
  }},
  {label = "curl, 200 URLs (keep-alive)", rows = {
    {label = "host direct", run = host_run, argv = curl_many(direct_url, {"--noproxy", "*"}), total = curl_total},
    {label = "sandbox via proxy", run = box_run, argv = curl_many(proxied_url, {}), total = curl_total},
  }},
}
print(("%d small requests (/hello) one after another from one process: ms per request, medians of %d rounds,"
  .. " alternating"):format(N, rounds))
for _, group in ipairs(requests) do
  for _, row in ipairs(group.rows) do row.per = {} end
  for i = 1, rounds + 1 do
    for _, row in ipairs(group.rows) do
      local out, why = row.run(row.argv)
      local total = out and (row.total and row.total(out) or tonumber(out:match("%S+")))
      if not total then failed(row, why or ("no time in " .. tostring(out)))
      elseif i > 1 then table.insert(row.per, total / N) end
    end
  end
  local direct, proxied = group.rows[1], group.rows[2]
  if #direct.per > 0 and #proxied.per > 0 then
    local d, p = median(direct.per), median(proxied.per)
    print(("  %-28s host direct %6.3f ms, sandbox via proxy %6.3f ms: +%.3f ms per request%s%s")
      :format(group.label, d * 1000, p * 1000, (p - d) * 1000, failures(direct), failures(proxied)))
  else
    print(("  %-28s no figure%s%s"):format(group.label, failures(direct), failures(proxied)))
  end
end

-- ---- 3. commands with rules and without ----
assert(ruled:python("x = 0")); assert(plain:python("x = 0"))
local commands = {
  {label = "box:exec{'true'}", run = function(b) assert(b:exec({"true"}).exit_code == 0) end},
  {label = "box:python('x += 1')", run = function(b) assert(b:python("x += 1").exit_code == 0) end},
}
print(("per command, a session with rules vs one with network = false: medians of %d, alternating"):format(runs))
for _, cmd in ipairs(commands) do
  local without, with = {}, {}
  for i = 1, runs + 3 do
    -- which goes first alternates too
    local a, b
    if i % 2 == 0 then
      a, b = timed(function() cmd.run(plain) end), timed(function() cmd.run(ruled) end)
    else
      b, a = timed(function() cmd.run(ruled) end), timed(function() cmd.run(plain) end)
    end
    if i > 3 then without[#without + 1], with[#with + 1] = a, b end -- three warm-up rounds
  end
  local p, w = median(without), median(with)
  print(("  %-22s %6.2f ms without rules, %6.2f ms with: %+.2f ms (%.2fx)"):format(cmd.label, p * 1000, w * 1000,
    (w - p) * 1000, w / p))
end

ruled:close()
plain:close()
upstreams:close_stdin()
upstreams:wait(10)
upstreams:close()
fs.remove(work)

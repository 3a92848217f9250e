-- bench/sandbox: what running a command in a sandbox costs, measured in one
-- run against the real engine, alternating the ways so they share conditions:
--   luagent box:exec       through the session's runner (a fork in the container)
--   luagent, runner off    one Docker exec per command: create + start
--                          (demultiplexed, capped) + inspect
--   bare Engine API        those three requests with plain http.request
--   docker exec (CLI)      the docker command line, one process per call
--   docker run --rm        a fresh container per call (the naive way)
-- and a session's open (volume + create + start) and close (remove).
-- Goal: luagent within 1.2x of the bare API, a multiple faster than the CLI.
-- (The runner goes below the bare API: it never pays for a Docker exec.)
-- A benchmark, not a test: it prints figures and never fails on time.
local sandbox, http, sys = luagent.sandbox, luagent.http, luagent.sys
local runs = tonumber(luagent.settings.runs) or 30

local function median(xs)
  table.sort(xs)
  local n = #xs
  return n % 2 == 1 and xs[(n + 1) // 2] or (xs[n // 2] + xs[n // 2 + 1]) / 2
end

local function timed(fn)
  local started = luagent.now()
  fn()
  return luagent.now() - started
end

local box = assert(sandbox.open{})
local plain = assert(sandbox.open{runner = false})
local client = assert(sandbox.engine())

local function bare_exec(argv)
  local created = assert(client:call("POST", "/containers/" .. box.container .. "/exec",
    {AttachStdout = true, AttachStderr = true, Cmd = argv}))
  local res = assert(http.request(client:options("/exec/" .. created.Id .. "/start",
    {method = "POST", body = '{"Detach":false,"Tty":false}', headers = {["content-type"] = "application/json"}})))
  assert(res.status == 200)
  local info = assert(client:call("GET", "/exec/" .. created.Id .. "/json"))
  assert(info.ExitCode == 0)
end

local function cli(argv)
  local code, out = sys.execute(argv)
  if code ~= 0 then error(table.concat(argv, " ") .. ": " .. out) end
end

local commands = {
  {label = "true", argv = {"true"}},
  {label = "python3 -c pass", argv = {"python3", "-c", "pass"}},
}
local ways = {
  {label = "luagent box:exec", run = function(argv) assert(box:exec(argv).exit_code == 0) end},
  {label = "luagent, runner off", run = function(argv) assert(plain:exec(argv).exit_code == 0) end},
  {label = "bare Engine API", run = bare_exec},
  {label = "docker exec (CLI)", run = function(argv) cli({"docker", "exec", box.container, table.unpack(argv)}) end},
  {label = "docker run --rm", run = function(argv)
    cli({"docker", "run", "--rm", "--network", "none", sandbox.IMAGE, table.unpack(argv)}) end, runs = 5},
}

print(("per-exec latency, median of %d runs (docker run --rm: 5), same session, alternating"):format(runs))
for _, cmd in ipairs(commands) do
  local times = {}
  for w in ipairs(ways) do times[w] = {} end
  for i = 1, runs + 3 do
    for w, way in ipairs(ways) do
      if i <= (way.runs or runs) + 3 then
        local took = timed(function() way.run(cmd.argv) end)
        if i > 3 then table.insert(times[w], took) end -- three warm-up rounds
      end
    end
  end
  local bare, docker_cli = median(times[3]), median(times[4])
  print(("  %s"):format(cmd.label))
  for w, way in ipairs(ways) do
    local m = median(times[w])
    print(("    %-20s %8.1f ms   %5.2fx the bare API   %5.2fx the CLI"):format(way.label, m * 1000, m / bare, m / docker_cli))
  end
end
box:close()
plain:close()

local opens, closes = {}, {}
for _ = 1, math.min(runs, 10) do
  local s
  table.insert(opens, timed(function() s = assert(sandbox.open{}) end))
  table.insert(closes, timed(function() assert(s:close()) end))
end
print(("session open (volume + create + start): %.1f ms, close (remove): %.1f ms (medians of %d)")
  :format(median(opens) * 1000, median(closes) * 1000, #opens))

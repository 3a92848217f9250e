-- bench/k8s: a session on the Kubernetes test cluster beside one on the local
-- Docker engine, in one run, alternating so they share conditions: a cold
-- open (+ the first command), an open from a warm pool, box:exec{'true'}, a
-- box:python cell, a 10 MB put and get. Needs the cluster (tests/k8s.sh start;
-- eval "$(tests/k8s.sh env)" sets LUAGENT_TEST_K8S); skipped without it.
-- Aims (the issue's): exec within 3x of Docker's; an open from the pool under
-- 50 ms. A benchmark, not a test: it prints figures and never fails on time.
local measure = require "measure"
local median, timed = measure.median, measure.timed
local sandbox = luagent.sandbox
local runs = tonumber(luagent.settings.runs) or 30

local cluster = os.getenv("LUAGENT_TEST_K8S")
if not cluster or cluster == "" then
  print("skipped: no test cluster (tests/k8s.sh start; eval \"$(tests/k8s.sh env)\"; bench/run k8s)")
  return
end
local ENGINES = {docker = "unix:///var/run/docker.sock", k8s = cluster}
local ORDER = {"docker", "k8s"}

local boxes = {}
for _, name in ipairs(ORDER) do boxes[name] = assert(sandbox.open{engines = {ENGINES[name]}}) end

-- rows[label][engine] = {seconds...}; each round runs every row on both, alternating
local function measure_rows(rows, n)
  for _, row in ipairs(rows) do row.times = {docker = {}, k8s = {}} end
  for i = 1, n + 3 do
    for _, row in ipairs(rows) do
      if i <= (row.runs or n) + 3 then
        for _, name in ipairs(ORDER) do
          local took = timed(function() row.run(boxes[name]) end)
          if i > 3 then table.insert(row.times[name], took) end
        end
      end
    end
  end
end

local function print_rows(rows)
  for _, row in ipairs(rows) do
    local d, k = median(row.times.docker), median(row.times.k8s)
    print(("  %-22s Docker %8.2f ms   Kubernetes %8.2f ms   %5.2fx"):format(row.label, d * 1000, k * 1000, k / d))
  end
end

local big = ("0123456789abcdef"):rep(10 * 1024 * 1024 // 16)
for _, b in pairs(boxes) do assert(b:python("x = 0")) end
local rows = {
  {label = "box:exec{'true'}", run = function(b) assert(b:exec({"true"}).exit_code == 0) end},
  {label = "box:python('x += 1')", run = function(b) assert(b:python("x += 1").exit_code == 0) end},
  {label = "box:put 10 MB", run = function(b) assert(b:put("bench/big.bin", big)) end, runs = 10},
  {label = "box:get 10 MB", run = function(b) assert(#assert(b:get("bench/big.bin")) == #big) end, runs = 10},
}
measure_rows(rows, runs)
print(("one session on each, medians of %d (10 MB: 10), alternating; the last column Kubernetes / Docker"):format(runs))
print_rows(rows)
for _, b in pairs(boxes) do b:close() end

-- Opens: cold, and from a warm pool on each engine (full before each open).
local n = math.min(runs, 8)
local pools, opens = {}, {}
for _, name in ipairs(ORDER) do
  pools[name] = assert(sandbox.pool{size = 2, engines = {ENGINES[name]}, labels = {["luagent.bench"] = name}})
  opens[name] = {cold = {}, pool = {}, first = {}}
end
for _ = 1, n do
  for _, name in ipairs(ORDER) do
    local s
    table.insert(opens[name].cold, timed(function()
      s = assert(sandbox.open{engines = {ENGINES[name]}, labels = {["luagent.bench"] = "cold"}})
    end))
    table.insert(opens[name].first, opens[name].cold[#opens[name].cold] + timed(function() assert(s:exec({"true"})) end))
    s:close()
    assert(pools[name]:wait())
    table.insert(opens[name].pool, timed(function()
      s = assert(sandbox.open{engines = {ENGINES[name]}, labels = {["luagent.bench"] = name}})
    end))
    assert(s.pooled, "the pool did not hand out")
    s:close()
  end
end
for _, p in pairs(pools) do p:close() end
print(("session open, medians of %d, alternating:"):format(n))
for _, name in ipairs(ORDER) do
  local o = opens[name]
  print(("  %-11s cold %8.1f ms (+ the first command %8.1f ms)   from the pool %7.2f ms"):format(
    name == "k8s" and "Kubernetes" or "Docker", median(o.cold) * 1000, median(o.first) * 1000, median(o.pool) * 1000))
end

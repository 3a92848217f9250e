-- bench/iterate: the edit -> rerun loop of the energy recipe, driven over the
-- OpenAI wire format by tests/fake_provider.py (a test double standing in for
-- a model), with the model-call cache on:
--   1. the first run (every model call live, every line of code really runs in a sandbox)
--   2. the same run again: every model call from the cache; the sandbox work still runs
--   3. after an edit of the task prompt: which calls went live again
-- Each model call takes LATENCY seconds (--set latency=S, default 1.5: the
-- fake provider waits that long, as a real model would think), so the
-- figures show what the cache saves. Figures only; it never fails on time.
local sys, fs = luagent.sys, luagent.fs
package.path = "tests/lua/?.lua;recipes/?.lua;" .. package.path
local fake = require "fake_provider_client"
local steps = require "energy_anomaly_steps"

local bin = assert(fs.realpath(sys.getenv("LUAGENT_BIN") or "./luagent"))
local work = assert(fs.temp_dir("luagent-bench-iterate"))
local queue = fake.queue("iterate")
local latency = tonumber(luagent.settings.latency) or 1.5

-- the analysis as an OpenAI model would send it: one tool call a turn, then the answer
local function script()
  local list = {}
  for i, name in ipairs({"inspect", "baseline", "detect", "plot", "report"}) do
    list[i] = {hang = latency, text = "Step: " .. name,
               tool_calls = {{id = "call_" .. name, name = "run_python", arguments = {code = steps[name]}}}}
  end
  list[#list + 1] = {hang = latency, text = "The anomaly is in the report.",
                     usage = {input_tokens = 5000, output_tokens = 30}}
  return list
end

local function run(extra)
  local argv = {"env", "LUAGENT_RUNS_DIR=" .. work .. "/runs", bin, "run", "-q", "recipes/energy_anomaly.lua", "--cache",
                "--set", "model.provider=openai",
                "--set", "model.base_url=" .. fake.base_url(queue, "openai"), "--set", "cache.dir=" .. work .. "/cache"}
  for _, a in ipairs(extra or {}) do argv[#argv + 1] = a end
  local before = #fake.requests(queue)
  local started = luagent.now()
  local code, out = sys.execute(argv)
  local took = luagent.now() - started
  if code ~= 0 then error("the energy recipe failed:\n" .. out) end
  return took, #fake.requests(queue) - before
end

fake.script(queue, script())
local first, live1 = run()
local cached, live2 = run()
fake.script(queue, script())
local task = "Find the anomaly event in the building's hourly energy data and save the three outputs."
local edited, live3 = run({"--set", "task=" .. task})

print(("the energy recipe over the fake provider (6 model calls of %.1f s each, 5 sandbox steps), cache on")
  :format(latency))
print(("  first run                   %6.2f s   %d live model calls"):format(first, live1))
print(("  rerun, nothing changed      %6.2f s   %d live model calls   %.2fx the first run's time"):format(cached, live2,
  cached / first))
print(("  rerun after editing 'task'  %6.2f s   %d live model calls (the task is in the first request,"):format(edited,
  live3))
print("                                        so every call after it is new)")
fs.remove(work)

-- bench/journal: what the run's journal (luagent run --resume) costs on the
-- energy recipe, driven over the OpenAI wire format by tests/fake_provider.py
-- (a test double standing in for a model, answering at once): the same run
-- with the journal and its workspace checkpoints, and without them
-- (LUAGENT_NO_JOURNAL=1), interleaved, --set runs=N each (default 7). Prints
-- the medians, their ratio, and the bytes the journal and the checkpoints
-- wrote. Figures only; it never fails on time.
local sys, fs = luagent.sys, luagent.fs
package.path = "tests/lua/?.lua;recipes/?.lua;bench/?.lua;" .. package.path
local fake = require "fake_provider_client"
local steps = require "energy_anomaly_steps"
local measure = require "measure"

local bin = assert(fs.realpath(sys.getenv("LUAGENT_BIN") or "./luagent"))
local work = assert(fs.temp_dir("luagent-bench-journal"))
local runs = tonumber(luagent.settings.runs) or 7

-- the analysis as an OpenAI model would send it: one tool call a turn, then the answer
local function script()
  local list = {}
  for i, name in ipairs({"inspect", "baseline", "detect", "plot", "report"}) do
    list[i] = {text = "Step: " .. name,
               tool_calls = {{id = "call_" .. name, name = "run_python", arguments = {code = steps[name]}}}}
  end
  list[#list + 1] = {text = "The anomaly is in the report.", usage = {input_tokens = 5000, output_tokens = 30}}
  return list
end

-- One run: its wall time, and the run folder's journal and checkpoint files.
local function run(journal)
  local queue = fake.queue("journal")
  fake.script(queue, script())
  local dir = work .. "/" .. queue
  local argv = {"env", "LUAGENT_RUNS_DIR=" .. dir, "LUAGENT_NO_JOURNAL=" .. (journal and "0" or "1"), bin, "run", "-q",
                "recipes/energy_anomaly.lua", "--set", "model.provider=openai",
                "--set", "model.base_url=" .. fake.base_url(queue, "openai")}
  local code, out
  local took = measure.timed(function() code, out = sys.execute(argv) end)
  if code ~= 0 then error("the energy recipe failed:\n" .. out) end
  local folder = dir .. "/" .. assert(fs.list(dir))[1]
  local text = fs.read(folder .. "/journal.jsonl") or ""
  local _, checkpoints = text:gsub('"checkpoint":"', "")
  local last = text:match('.*"checkpoint":"([^"]+)"')
  local tar = last and fs.stat(folder .. "/" .. last)
  return took, #text, checkpoints, tar and tar.size or 0
end

local with, without, jbytes, cbytes, taken = {}, {}, 0, 0, 0
for i = 1, runs do
  without[i] = run(false)
  local took, journal_bytes, checkpoints, tar_size = run(true)
  with[i], jbytes, taken, cbytes = took, journal_bytes, checkpoints, tar_size
end
local a, b = measure.median(without), measure.median(with)
print(("the energy recipe over the fake provider (6 model calls answered at once, 5 sandbox steps), %d runs each")
  :format(runs))
print(("  without the journal (LUAGENT_NO_JOURNAL=1)   median %6.3f s"):format(a))
print(("  with the journal and checkpoints             median %6.3f s   %.3fx"):format(b, b / a))
print(("  a run wrote: journal.jsonl %d bytes; %d workspace checkpoints of about %d bytes each (the last kept),"
  .. " %d bytes in all"):format(jbytes, taken, cbytes, jbytes + taken * cbytes))
fs.remove(work)

-- Scripts the fake provider (a test double) for tests/e2e/resume_test.sh: the
-- energy recipe's work in five model turns, each command self-contained (a
-- resumed run's Python starts afresh), two of them appending to
-- output/count.txt so that a command run twice shows.
--   luagent run -q tests/e2e/resume_fake.lua -- QUEUE [hang | hang-first]  -> the base URL
-- With "hang", the fourth request hangs (the test kills the run there) and
-- the turns after it are the next steps of the queue; "hang-first": only a hang.
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local queue, hang = ...

local LOAD = [[
import pandas as pd
df = pd.read_csv("input/building_energy.csv", parse_dates=["timestamp"])
]]
local function call(id, name, args) return {id = id, name = name, arguments = args} end
local steps = {
  {text = "A look first.", tool_calls = {call("c1", "run_shell", {command = "mkdir -p output; echo turn1 >> output/count.txt; "
    .. "head -3 input/building_energy.csv"})}},
  {text = "The anomalies.", tool_calls = {call("c2", "run_python", {code = LOAD .. [[
base = df.groupby(df.timestamp.dt.hour).energy_kwh.transform("median")
odd = df[df.energy_kwh > 1.5 * base]
odd.to_csv("output/anomalies.csv", index=False)
print(len(odd), "unusual hours")
]]})}},
  {text = "Counting again.", tool_calls = {call("c3", "run_shell",
    {command = "echo turn3 >> output/count.txt; wc -l output/anomalies.csv"})}},
  {text = "The chart and the report.", tool_calls = {call("c4", "run_python", {code = LOAD .. [[
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
odd = pd.read_csv("output/anomalies.csv")
fig, ax = plt.subplots()
ax.plot(df.timestamp, df.energy_kwh)
fig.savefig("output/energy.png")
counted = open("output/count.txt").read().split()
open("output/report.md", "w").write(f"# Report\n\n{len(odd)} unusual hours; count.txt: {counted}\n")
print("saved")
]]})}},
  {text = "The anomaly is in output/anomalies.csv; the chart and the report are saved."},
}
if hang == "hang" then table.insert(steps, 4, {hang = 120, text = "never seen"}) end
if hang == "hang-first" then steps = {{hang = 120, text = "never seen"}} end
fake.script(queue, steps)
print(fake.base_url(queue, "openai"))

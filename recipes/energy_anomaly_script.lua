-- energy_anomaly_script: the scripted driver of the energy recipe, used when
-- no model is configured. It is not a model: it replays the tool calls a
-- capable model makes on this task (inspect, baseline, detect, plot, look at
-- the chart, report), each of which really runs in the sandbox, and writes
-- its final answer from what the last step printed.
local model = require "luagent.model"
local json = require "luagent.json"
local steps = require "energy_anomaly_steps"

local PLAN = {
  {text = "I'll start by loading the data and checking its shape, period and ranges.",
   call = "run_python", args = {code = steps.inspect}},
  {text = "Next, a baseline: what this building normally uses at each hour of the week for the weather.",
   call = "run_python", args = {code = steps.baseline}},
  {text = "Now I look for hours far from that baseline and group them into events.",
   call = "run_python", args = {code = steps.detect}},
  {text = "A chart of the whole period and of the event.", call = "run_python", args = {code = steps.plot}},
  {text = "Let me check the chart.", call = "view_image", args = {path = "output/energy.png"}},
  {text = "Finally, the report.", call = "run_python", args = {code = steps.report}},
}

local steps_done = require("luagent.script").steps_done

local function summary_of(messages)
  for i = #messages, 1, -1 do
    local text = model.text_of(messages[i].content)
    local found = messages[i].role == "tool" and text:match("SUMMARY ([^\n]*)")
    if found then return json.decode(found) end
  end
  return nil
end

local function final_answer(messages)
  local s = summary_of(messages)
  if s == json.null then
    return "I found no anomaly: no hour is more than 4 typical deviations away from the expected load. "
      .. "The report is in output/report.md."
  elseif type(s) ~= "table" then
    return "The analysis did not finish (a step failed; see the transcript). Whatever was saved is in output/."
  end
  return ("The anomaly runs from %s to %s: %d unusual hours, %+d kWh against the expected load%s. "
    .. "The hours are in output/anomalies.csv, the chart in output/energy.png and the write-up in output/report.md.")
    :format(s.start, s["end"], s.hours, s.excess_kwh, s.events > 1 and (" (%d smaller events too)"):format(s.events - 1) or "")
end

-- The scripted driver, with the model interface (complete{messages, tools}).
return function()
  return model.scripted(function(request)
    local step = PLAN[steps_done(request.messages) + 1]
    if not step then return {text = final_answer(request.messages)} end
    return {text = step.text, tool_calls = {{name = step.call, arguments = step.args}}}
  end, {name = "scripted-energy-analyst"})
end

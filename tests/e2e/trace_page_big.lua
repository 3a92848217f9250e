-- Writes a synthetic trace of about N events (default 5000) as a run folder
-- for the trace page's size and speed checks (tests/e2e/trace_page_big_test.sh):
--   luagent run tests/e2e/trace_page_big.lua DIR [N]   -> DIR/trace.jsonl, DIR/output/
-- Two agents take turns; each turn is a model request and response, the
-- agent's turn, a run_python call with its sandbox command and its result.
-- Every 50th turn has a model retry first, every 40th a tool error, every
-- 97th a command that timed out; results are 4 to 60 lines long.
local json, fs = luagent.json, luagent.fs
local dir, n = ...
assert(dir, "usage: trace_page_big.lua DIR [N]")
n = tonumber(n) or 5000
assert(fs.mkdir(dir .. "/output"))
assert(fs.write(dir .. "/output/report.md", "# Report\n\nSynthetic.\n"))

local lines, t, count = {}, 0, 0
-- One event, after the one before by the time a model call or a command took (else 0.01 s)
local function emit(ev)
  t = t + ((ev.type == "model_response" or ev.type == "sandbox_exec") and ev.duration or 0.01)
  ev.t, ev.time = t, 1780000000 + t
  lines[#lines + 1] = json.encode(ev)
  count = count + 1
end

local AGENTS = {{name = "analyst", run = "a1b2c3d4"}, {name = "reviewer", run = "e5f6a7b8"}}
emit({type = "run_start", run_id = "20260101-000000-big-0000", recipe = "tests/e2e/trace_page_big.lua",
      settings = {model = {provider = "openai", name = "gpt-4o-mini"}, limits = {max_turns = 500}}, args = {},
      version = "test"})
emit({type = "sandbox_open", session = "feedbeef0001", image = "luagent-sandbox:latest", memory = "1g", cpus = 1,
      network = false, staged = 1})
for _, a in ipairs(AGENTS) do
  emit({type = "agent_start", agent = a.name, run = a.run, model = "openai/gpt-4o-mini", max_turns = 500,
        instructions = "You are the **" .. a.name .. "**. Work in small steps:\n\n1. look\n2. compute\n3. report",
        task = "Find the anomaly in `input/data.csv`."})
  a.usage = {input_tokens = 0, output_tokens = 0, cached_tokens = 0}
end

local turn = 0
while count + 4 < n do
  turn = turn + 1
  local a = AGENTS[turn % 2 + 1]
  local k = turn // 2 + 1
  if turn % 50 == 0 then
    emit({type = "model_retry", provider = "openai", model = "gpt-4o-mini", attempt = 1, wait = 0.5,
          error = {kind = "rate_limit", message = "openai gpt-4o-mini: rate limited (HTTP 429)"}})
  end
  emit({type = "model_request", provider = "openai", model = "gpt-4o-mini", attempt = 1, stream = false,
        url = "http://127.0.0.1:1/v1/chat/completions",
        body = {model = "gpt-4o-mini", messages = {{role = "system", content = "..."}, {role = "user", content = "..."}}}})
  local usage = {input_tokens = 1000 + turn, output_tokens = 40 + turn % 17, cached_tokens = 0}
  for key in pairs(a.usage) do a.usage[key] = a.usage[key] + usage[key] end
  local text = ("Step %d: I check **part %d** of the data with `pandas`.\n\n- rows %d to %d\n- then the mean"):format(
    k, k, k * 100, k * 100 + 99)
  local code = ("import pandas as pd\ndf = pd.read_csv('input/data.csv')\npart = df.iloc[%d:%d]\n"
    .. "print(part.describe())  # summary\nprint(\"mean\", part.energy.mean())"):format(k * 100, k * 100 + 100)
  local call = {id = "call_" .. turn, name = "run_python", arguments = {code = code}}
  emit({type = "model_response", provider = "openai", model = "gpt-4o-mini", attempts = 1, duration = 0.8,
        usage = usage, cost = 0.0002, finish_reason = "tool_calls", text = text, tool_calls = {call}})
  emit({type = "agent_turn", agent = a.name, run = a.run, turn = k, text = text, tool_calls = {"run_python"},
        usage = usage, cost = 0.0002, duration = 0.8, total_usage = a.usage, total_cost = 0.0002 * k})
  emit({type = "tool_call", agent = a.name, run = a.run, turn = k, id = call.id, name = "run_python",
        arguments = call.arguments})
  local timed_out = turn % 97 == 0
  emit({type = "sandbox_exec", session = "feedbeef0001", kind = "python", command = code:sub(1, 300),
        exit_code = timed_out and 137 or 0, duration = timed_out and 30 or 0.3, timed_out = timed_out,
        oom_killed = false, truncated = false, stdout_bytes = 900, stderr_bytes = 0})
  local out = {"exit code 0 (took 0.30 s)", "stdout:"}
  for row = 1, 4 + turn % 57 do out[#out + 1] = ("row %4d  %8.2f  %8.2f  <ok>"):format(row, row * 1.5, row * 0.25) end
  local is_error = turn % 40 == 0
  emit({type = "tool_result", agent = a.name, run = a.run, turn = k, id = call.id, name = "run_python",
        is_error = is_error, duration = timed_out and 30 or 0.3,
        content = is_error and "Error: the tool run_python failed: the sandbox is busy" or table.concat(out, "\n")})
end
for _, a in ipairs(AGENTS) do
  emit({type = "agent_end", agent = a.name, run = a.run, stopped_by = "answer", turns = turn // 2, usage = a.usage,
        cost = 0.0002 * turn / 2, duration = t, output = "The anomaly is **BIG-TRACE-ANSWER** at row 4200."})
end
emit({type = "sandbox_close", session = "feedbeef0001"})
emit({type = "run_end", run_id = "20260101-000000-big-0000", status = "ok", duration = t + 0.1})
assert(fs.write(dir .. "/trace.jsonl", table.concat(lines, "\n") .. "\n"))
print(count)

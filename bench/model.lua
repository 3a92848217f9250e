-- bench/model: luagent's own cost per model call, against tests/fake_provider.py
-- (a test double of the providers, started by bench/run), next to curl making
-- the same requests in the same run; and the time to take in a 1 MB streamed
-- answer. The fake server's own time is in every figure alike, so compare
-- the columns, not the absolute numbers. A benchmark: it never fails on time.
local measure = require "measure"
local timed = measure.timed
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local model, http, json, sys, fs = luagent.model, luagent.http, luagent.json, luagent.sys, luagent.fs
local calls = tonumber(luagent.settings.calls) or 1000

local messages = {{role = "system", content = "You are terse."}, {role = "user", content = "Say hi."}}
local reply = {text = "Hi.", usage = {input_tokens = 20, output_tokens = 2}}

local function steps(n, step)
  local list = {}
  for i = 1, n do list[i] = step end
  return list
end

-- 1. through luagent.model
local q = fake.queue("bench")
fake.script(q, steps(calls, reply))
local m = model.openai{model = "gpt-4o-mini", base_url = fake.base_url(q, "openai"), api_key = "sk-bench-not-a-key"}
local t_model = timed(function()
  for _ = 1, calls do assert(m:complete{messages = messages}) end
end)

-- 2. plain luagent.http.request with the same body
local q2 = fake.queue("bench-http")
fake.script(q2, steps(calls, reply))
local body = json.encode({model = "gpt-4o-mini", messages = messages})
local url = fake.base_url(q2, "openai") .. "/chat/completions"
local t_http = timed(function()
  for _ = 1, calls do
    local res = assert(http.request{method = "POST", url = url, body = body,
      headers = {["content-type"] = "application/json", authorization = "Bearer sk-bench-not-a-key"}})
    assert(res.status == 200)
  end
end)

-- 3. one curl process making the same requests over one kept-alive connection
local q3 = fake.queue("bench-curl")
fake.script(q3, steps(calls, reply))
local dir = assert(fs.temp_dir("luagent-bench-model"))
assert(fs.write(dir .. "/body.json", body))
local config = {}
for i = 1, calls do
  config[#config + 1] = ('url = "%s/chat/completions"\ndata = "@%s/body.json"\nheader = "content-type: application/json"\n'
    .. 'header = "authorization: Bearer sk-bench-not-a-key"\noutput = "/dev/null"\n'):format(fake.base_url(q3, "openai"), dir)
  if i < calls then config[#config + 1] = "next\n" end
end
assert(fs.write(dir .. "/curl.cfg", table.concat(config)))
local t_curl = timed(function()
  local code, out = sys.execute({"curl", "-s", "-K", dir .. "/curl.cfg"})
  assert(code == 0, "curl failed: " .. out)
end)

print(("per-call time over %d sequential calls against the fake provider"):format(calls))
print(("  %-34s %7.3f ms"):format("curl (one process, keep-alive)", t_curl / calls * 1000))
print(("  %-34s %7.3f ms   %.2fx curl"):format("luagent.http.request", t_http / calls * 1000, t_http / t_curl))
print(("  %-34s %7.3f ms   %.2fx curl"):format("luagent model:complete", t_model / calls * 1000, t_model / t_curl))
print(("  the model layer (request, JSON, parse, retry, events) adds %.3f ms a call"):format((t_model - t_http) / calls * 1000))

-- 4. a 1 MB answer streamed in small events: fetched once, then parsed from
-- memory, so the figure is luagent's alone (the fake server is slow to produce it)
local big = ("The quick brown fox jumps over the lazy dog. "):rep(23302):sub(1, 1024 * 1024)
local q4 = fake.queue("bench-stream")
fake.script(q4, {{text = big, chunk = 64}})
local recorded = {}
local t_transfer = timed(function()
  assert(http.request{method = "POST", url = fake.base_url(q4, "openai") .. "/chat/completions",
    headers = {["content-type"] = "application/json"},
    body = json.encode({model = "gpt-4o-mini", messages = messages, stream = true,
                        stream_options = {include_usage = true}}),
    on_chunk = function(c) recorded[#recorded + 1] = c end})
end)
local wire_bytes = table.concat(recorded)
local replay = function(request)
  for i = 1, #wire_bytes, 16384 do request.on_chunk(wire_bytes:sub(i, i + 16383)) end
  return {status = 200, headers = {}, body = ""}
end
local sm = model.openai{model = "gpt-4o-mini", base_url = "http://replayed.invalid/v1", api_key = "sk-bench-not-a-key"}
local deltas, result = 0, nil
local saved_transport = model.use_transport(replay)
local t_parse = timed(function()
  result = assert(sm:complete{messages = messages, stream = true, on_delta = function() deltas = deltas + 1 end})
end)
model.use_transport(saved_transport)
assert(result.text == big, "the streamed text came back whole")
print(("a 1 MB answer in %d streamed events (%.1f MB of SSE)"):format(deltas, #wire_bytes / 1e6))
print(("  %-34s %7.1f ms   (the fake server producing it)"):format("receiving it over HTTP", t_transfer * 1000))
print(("  %-34s %7.1f ms   %.0f MB/s of SSE, %.2f us an event"):format("parsing and assembling it", t_parse * 1000,
  #wire_bytes / 1e6 / t_parse, t_parse / deltas * 1e6))
fs.remove(dir)

-- 3. prompt caching: the energy recipe's instructions and task, over 12 turns
-- of tool calls with the results an analysis prints, as Anthropic bills them
-- (the fake counts 4 characters a token and accounts cache reads and writes
-- the way the service does), with and without the agent's breakpoints
local cfg = assert(luagent.yaml.load(assert(fs.read("recipes/energy_anomaly.yaml"))))
local function energy_run(prompt_cache)
  local qc = fake.queue("bench-cache")
  local script = {}
  for i = 1, 12 do
    script[i] = {tool_calls = {{id = "toolu_b" .. i, name = "run_python", arguments = {code = "print(df.describe())"}}},
                 count_tokens = true, usage = {output_tokens = 120}}
  end
  script[13] = {text = "The anomaly ran from day 41 to day 43.", count_tokens = true}
  fake.script(qc, script)
  local output = ("timestamp  energy_kwh  outdoor_temp_c\n" .. ("2024-03-01 00:00  41.2  3.1\n"):rep(40))
  local tool = {name = "run_python", description = "Run Python code in the sandbox; variables persist.",
                parameters = {type = "object", properties = {code = {type = "string"}}, required = {"code"}},
                handler = function() return output end}
  local a = luagent.agent.new{name = "energy", instructions = cfg.instructions, tools = {tool}, max_turns = 20,
    prompt_cache = prompt_cache,
    model = model.anthropic{model = "claude-sonnet-4-5", base_url = fake.base_url(qc, "anthropic"),
                            api_key = "sk-bench-not-a-key"}}
  return a:run(cfg.task)
end
local with, without = energy_run(true), energy_run(false)
local function billed(r)
  local u = r.usage
  return u.input_tokens - u.cached_tokens - u.cache_write_tokens, u.cached_tokens, u.cache_write_tokens
end
print("prompt caching: the energy recipe's prompt over 13 turns, as Anthropic bills it (claude-sonnet-4-5 prices)")
for _, row in ipairs{{"with breakpoints", with}, {"without", without}} do
  local fresh, read, written = billed(row[2])
  print(("  %-18s input %7d tokens: %7d fresh, %7d read from the cache, %6d written   $%.4f"):format(row[1],
    row[2].usage.input_tokens, fresh, read, written, row[2].cost))
end
print(("  with caching the run costs %.2fx what it costs without"):format(with.cost / without.cost))

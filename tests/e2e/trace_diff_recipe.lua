-- A small agent run without a sandbox, driven by the fake provider
-- (tests/fake_provider.py, a test double), for `luagent trace diff`:
--   luagent run tests/e2e/trace_diff_recipe.lua --set base_url=URL [--set instructions=...]
-- It writes the final answer to output/report.md, a fixed output/data.csv
-- and a manifest.json listing them ({files = {{path, size, sha256}}}, the
-- format luagent.outputs writes).
local agent, model, fs, sys, json = luagent.agent, luagent.model, luagent.fs, luagent.sys, luagent.json
local s = luagent.settings

local m = model.openai{model = "gpt-4o-mini", base_url = assert(s.base_url, "--set base_url=..."),
                       api_key = "sk-fake-key-for-tests", retry = luagent.retry.none, timeout = 60}
local multiply = {
  name = "multiply", description = "Multiplies two numbers",
  parameters = {type = "object", properties = {a = {type = "number"}, b = {type = "number"}}, required = {"a", "b"}},
  -- a timing as tools report one ("took N s"), from the environment so runs differ in it
  handler = function(args) return ("%s (took %s s)"):format(args.a * args.b, os.getenv("TOOK_SECONDS") or "0.01") end,
}
local calculator = agent.new{
  name = "calculator",
  instructions = s.instructions or "Multiply with the tool; answer with the number.",
  model = m, tools = {multiply}, max_turns = 5,
}
local r = calculator:run("What is 6 * 7?")
local out = luagent.run_dir("output")
assert(fs.write(out .. "/report.md", "# Report\n\n" .. tostring(r.output) .. "\n\nDone.\n"))
assert(fs.write(out .. "/data.csv", "x,y\n1,2\n"))
local files = {}
for _, name in ipairs({"data.csv", "report.md"}) do
  local digest, size = sys.sha256_file(out .. "/" .. name)
  files[#files + 1] = {path = "output/" .. name, size = size, sha256 = digest}
end
assert(fs.write(luagent.run_dir() .. "/manifest.json", json.encode({run_id = luagent.run_id(), files = files})))
print(r.output)

-- bench/eval: an eval of 32 runs of the energy recipe (its scripted driver:
-- no model; every step really runs in a sandbox) with `--concurrency auto`
-- against the fixed widths 1, 2, 4 and 8: the wall time and the peak RSS of
-- each `luagent eval` (GNU time -v, the child's), as ratios against width 1
-- in the same run, and the widths auto went through. Figures only; it never
-- fails on time. --set runs=N (default 32), --set widths=1,2,4,8.
local sys, fs = luagent.sys, luagent.fs

local bin = assert(fs.realpath(sys.getenv("LUAGENT_BIN") or "./luagent"))
local recipes = assert(fs.realpath("recipes"))
local work = assert(fs.temp_dir("luagent-bench-eval"))
local runs = tonumber(luagent.settings.runs) or 32
local widths = {}
for w in tostring(luagent.settings.widths or "1,2,4,8"):gmatch("%d+") do widths[#widths + 1] = w end
widths[#widths + 1] = "auto"

if not fs.exists(recipes .. "/eval_data") then
  assert(sys.execute({bin, "run", "-q", recipes .. "/energy_eval_data.lua", recipes .. "/eval_data"}) == 0)
end
local inputs = 0
for _, name in ipairs(assert(fs.list(recipes .. "/eval_data"))) do
  if name:match("%.csv$") then inputs = inputs + 1 end
end
local epochs = math.max(1, runs // inputs)
local spec = work .. "/bench.eval.yaml"
assert(fs.write(spec, ("name: bench\nrecipe: %s/energy_anomaly.lua\ncheck: %s/energy_anomaly_check.lua\n"
  .. "variants:\n  scripted: {model.provider: scripted}\ninputs:\n  - glob: %s/eval_data/*.csv\n    setting: input\n"
  .. "epochs: %d\ncache: false\n"):format(recipes, recipes, recipes, epochs)))

-- One eval at `width`: seconds, peak RSS (KB), the runs that passed, auto's widths.
local function eval_at(width)
  local dir = work .. "/evals-" .. width
  local code, out = sys.execute({"env", "LUAGENT_EVALS_DIR=" .. dir, "/usr/bin/time", "-v", bin, "eval", spec,
                                 "--concurrency", width})
  if code ~= 0 then error(("luagent eval --concurrency %s failed:\n%s"):format(width, out)) end
  local wall = out:match("Elapsed %(wall clock%) time %(h:mm:ss or m:ss%): ([%d:.]+)")
  local seconds = 0
  for part in wall:gmatch("[%d.]+") do seconds = seconds * 60 + tonumber(part) end
  local rss = tonumber(out:match("Maximum resident set size %(kbytes%): (%d+)"))
  local passed = 0
  local results = fs.list(dir)[1] and fs.read(dir .. "/" .. fs.list(dir)[1] .. "/results.jsonl") or ""
  for _ in results:gmatch('"passed":true') do passed = passed + 1 end
  local seen = {}
  for w in out:gmatch("%[(%d+) at a time%]") do seen[#seen + 1] = w end
  return seconds, rss, passed, seen
end

print(("an eval of %d runs of the energy recipe (scripted driver, %d inputs x %d epochs), cache off, on %d cores")
  :format(inputs * epochs, inputs, epochs, require("luagent.eval.width").cores()))
print("  width    wall      x width 1   peak RSS   x width 1   passed")
local base_wall, base_rss
for _, width in ipairs(widths) do
  local seconds, rss, passed, seen = eval_at(width)
  base_wall, base_rss = base_wall or seconds, base_rss or rss
  print(("  %-6s %7.1f s   %6.2fx    %7.1f MB   %6.2fx     %d/%d"):format(width, seconds, seconds / base_wall,
    rss / 1024, rss / base_rss, passed, inputs * epochs))
  if width == "auto" and #seen > 0 then
    print("         auto's width after each run: " .. table.concat(seen, " "))
  end
end
fs.remove(work)

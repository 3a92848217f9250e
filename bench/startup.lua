-- bench/startup: median wall time of `luagent run` on an empty recipe next to
-- bare `lua5.4 -e ''`, measured in the same run, alternating, and their ratio.
-- Goal: within 2x of lua5.4. A benchmark, not a test: it never fails on time.
local measure = require "measure"
local median = measure.median
local sys, fs = luagent.sys, luagent.fs
local runs = tonumber(luagent.settings.runs) or 300

local dir = assert(fs.temp_dir("luagent-bench"))
local empty = dir .. "/empty.lua"
assert(fs.write(empty, ""))
local luagent_bin = assert(fs.realpath(sys.getenv("LUAGENT_BIN") or "./luagent"))

local commands = {
  {name = "luagent run empty.lua", argv = {luagent_bin, "run", empty}},
  {name = "lua5.4 -e ''", argv = {"lua5.4", "-e", ""}},
}

local times = {{}, {}}
for i = 1, runs + 10 do
  for c, cmd in ipairs(commands) do
    local started = luagent.now()
    local code, out = sys.execute(cmd.argv)
    local took = luagent.now() - started
    if code ~= 0 then error(cmd.name .. " failed: " .. out) end
    if i > 10 then times[c][#times[c] + 1] = took end -- the first runs warm the caches
  end
end
fs.remove(dir)

local ours, bare = median(times[1]), median(times[2])
print(("startup (median of %d runs each, alternating)"):format(runs))
print(("  %-24s %7.3f ms"):format(commands[1].name, ours * 1000))
print(("  %-24s %7.3f ms"):format(commands[2].name, bare * 1000))
print(("  ratio                    %7.2fx   (goal: within 2x)"):format(ours / bare))

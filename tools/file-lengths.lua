-- file-lengths: finds files of luagent's code longer than the limit the
-- project set itself (650 lines): a file that long does more than one job.
--
--   lua5.4 tools/file-lengths.lua [LIMIT]      (LIMIT defaults to 650)
--
-- Code is every file git tracks under src, lua, sandbox, tests, tools, bench
-- and recipes whose name ends in .c, .h, .lua, .py, .sh or .mjs, plus the
-- extension-less scripts tests/run and bench/run. Generated files are not
-- code to keep short: those under build/ (never tracked), and a file whose
-- first line says "generated" (tests/fixtures/ holds golden pages, not code,
-- and is left out). Prose (.md) and data (.yaml, .json, .csv) are left out.
--
-- Prints each file over the limit, one a line ("src/lua/lua_egress.c: 968
-- lines (the limit is 650)"), and exits 1; prints nothing and exits 0 when
-- there is none.
local limit = tonumber((...)) or 650

local CODE = {c = true, h = true, lua = true, py = true, sh = true, mjs = true}
local SCRIPTS = {["tests/run"] = true, ["bench/run"] = true}
local TOPS = {src = true, lua = true, sandbox = true, tests = true, tools = true, bench = true, recipes = true}

local function is_code(path)
  local top = path:match("^([^/]+)/")
  if not top or not TOPS[top] or path:match("^tests/fixtures/") then return false end
  local ext = path:match("%.([%w]+)$")
  return SCRIPTS[path] or (ext and CODE[ext]) or false
end

local function count(path)
  local f = io.open(path)
  if not f then return nil end
  local first, n = f:read("l"), 0
  if first then
    n = 1
    for _ in f:lines() do n = n + 1 end
  end
  f:close()
  return n, first
end

local list = assert(io.popen("git ls-files"))
local over = {}
for path in list:lines() do
  if is_code(path) then
    local n, first = count(path)
    if n and n > limit and not (first or ""):lower():find("generated", 1, true) then
      over[#over + 1] = ("%s: %d lines (the limit is %d)"):format(path, n, limit)
    end
  end
end
list:close()
for _, line in ipairs(over) do print(line) end
os.exit(#over == 0 and 0 or 1)

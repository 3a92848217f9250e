-- symbol-cycles: finds files of a C program that call each other, from the
-- object files' own symbol tables (nm), so a call through a header of
-- another name, a forward declaration or an `extern` counts as well as an
-- include.
--
--   lua5.4 tools/symbol-cycles.lua FILE.o ...
--
-- File A depends on file B when A.o has an undefined symbol that B.o
-- defines. Prints each cycle found, one a line ("a.c -> b.c -> a.c"), and
-- exits 1; prints nothing and exits 0 when there is none.
--
-- The one exception: a unit split across files on purpose says so in the
-- header comment of each of its .c files with a line
--     one unit: sched.c sched_task.c
-- and those files count as one node. The source of FILE.o is looked up
-- beside the object's name: the .d file make writes names it first.
local objects = {...}
if #objects == 0 then
  io.stderr:write("usage: lua5.4 tools/symbol-cycles.lua FILE.o ...\n")
  os.exit(2)
end

local function lines_of(cmd)
  local p = assert(io.popen(cmd))
  local out = {}
  for line in p:lines() do out[#out + 1] = line end
  p:close()
  return out
end

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- The .c file an object was built from: the first prerequisite of its .d file, else NAME.o's NAME.c.
local function source_of(obj)
  local d = io.open((obj:gsub("%.o$", ".d")))
  if d then
    local text = d:read("a")
    d:close()
    local src = text:match("^[^:]+:%s*(%S+%.c)")
    if src then return src end
  end
  return (obj:match("([^/]+)%.o$") or obj) .. ".c"
end

-- The unit a source declares itself part of ("one unit: a.c b.c"), else its own name.
local function unit_of(src)
  local name = src:match("([^/]+)$")
  local f = io.open(src)
  if not f then return name end
  local head = f:read(4096) or ""
  f:close()
  local files = head:match("one unit:%s*([%w_%.%s]-)%s*\n")
  if files then
    local parts = {}
    for part in files:gmatch("[%w_%.]+%.c") do parts[#parts + 1] = part end
    table.sort(parts)
    for _, p in ipairs(parts) do if p == name then return table.concat(parts, "+") end end
  end
  return name
end

local defined_by, needs, node_of = {}, {}, {}
for _, obj in ipairs(objects) do
  local node = unit_of(source_of(obj))
  node_of[obj] = node
  needs[node] = needs[node] or {}
  for _, line in ipairs(lines_of("nm -P --defined-only " .. shell_quote(obj))) do
    local sym, kind = line:match("^(%S+) (%a)")
    -- globals only: lower-case kinds are local to the object
    if sym and kind:match("%u") then defined_by[sym] = node end
  end
end
for _, obj in ipairs(objects) do
  for _, line in ipairs(lines_of("nm -P --undefined-only " .. shell_quote(obj))) do
    local sym = line:match("^(%S+)")
    if sym then needs[node_of[obj]][sym] = true end
  end
end

local edges, nodes = {}, {}
for node, syms in pairs(needs) do
  nodes[#nodes + 1] = node
  local set = {}
  for sym in pairs(syms) do
    local to = defined_by[sym]
    if to and to ~= node then set[to] = true end
  end
  local list = {}
  for to in pairs(set) do list[#list + 1] = to end
  table.sort(list)
  edges[node] = list
end
table.sort(nodes)

local cycles = dofile((arg and arg[0] or "tools/symbol-cycles.lua"):gsub("[^/]*$", "") .. "cycles.lua")
local found = cycles(nodes, edges)

for _, cycle in ipairs(found) do print(cycle) end
os.exit(#found == 0 and 0 or 1)

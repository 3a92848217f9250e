-- supervisor-ops: finds requests to the sandbox supervisor that name an
-- operation its one declaration, src/core/supervisor_ops.def, does not have.
--
--   lua5.4 tools/supervisor-ops.lua [DEF [LUA_DIR]]
--       (DEF defaults to src/core/supervisor_ops.def, LUA_DIR to lua)
--
-- The C side needs no such check: the supervisor's dispatch table names
-- op_NAME for every declared op (a missing handler does not compile, an
-- undeclared one is an unused function, an error under -Werror), and the
-- host encodes only what the table declares. The Lua side names ops as
-- strings: every literal first argument of a `:send(`, `:_run(` or
-- `channel:send(` call under LUA_DIR/luagent/sandbox and LUA_DIR/luagent/mcp
-- must be a declared op.
--
-- Prints each problem, one a line ("lua/luagent/sandbox/mirror.lua:121: op
-- 'wath' is not declared in src/core/supervisor_ops.def (run, spawn, ...)"),
-- and exits 1; prints nothing and exits 0 when there is none.
local def_path = select(1, ...) or "src/core/supervisor_ops.def"
local lua_dir = select(2, ...) or "lua"

local function read(path)
  local f = io.open(path)
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text
end

local def = assert(read(def_path), "cannot read " .. def_path)
local declared, names = {}, {}
for name in def:gmatch("\nSV_OP%((%w+),") do
  declared[name] = true
  names[#names + 1] = name
end
if #names == 0 then
  print(def_path .. ": no SV_OP line")
  os.exit(1)
end

local problems = {}
local function scan(path)
  local text = read(path)
  if not text then return end
  local line = 1
  for l in (text .. "\n"):gmatch("([^\n]*)\n") do
    for op in l:gmatch(":_?[%w_]*send%(%s*\"(%w+)\"") do
      if not declared[op] then
        problems[#problems + 1] = ("%s:%d: op '%s' is not declared in %s (%s)")
          :format(path, line, op, def_path, table.concat(names, ", "))
      end
    end
    for op in l:gmatch(":_run%(%s*\"(%w+)\"") do
      if not declared[op] then
        problems[#problems + 1] = ("%s:%d: op '%s' is not declared in %s (%s)")
          :format(path, line, op, def_path, table.concat(names, ", "))
      end
    end
    line = line + 1
  end
end

for _, folder in ipairs({"/luagent/sandbox", "/luagent/mcp"}) do
  local list = io.popen(("find %q -name '*.lua' 2>/dev/null | LC_ALL=C sort"):format(lua_dir .. folder))
  for path in list:lines() do scan(path) end
  list:close()
end
scan(lua_dir .. "/luagent/sandbox.lua")

for _, p in ipairs(problems) do print(p) end
os.exit(#problems == 0 and 0 or 1)

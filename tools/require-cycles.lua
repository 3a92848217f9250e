-- require-cycles: finds Lua modules of luagent that require each other, and
-- library modules that reach up into the run or the command line.
--
--   lua5.4 tools/require-cycles.lua [DIR]      (DIR defaults to lua)
--
-- Every `require "luagent.x"` counts, wherever it is written: a require
-- inside a function is a cycle hidden, not removed. Module luagent.a.b is
-- DIR/luagent/a/b.lua (luagent itself: DIR/luagent/init.lua); requires of
-- modules that are not files there (the C modules) are left out.
--
-- The layers, bottom up: library modules (everything else), then the
-- modules that run recipes and hold the current run (luagent.run,
-- luagent.run.*, luagent.eval, luagent.eval.*, and luagent.checks.graded,
-- which runs a grader as a small run of its own, with luagent.checks, which
-- offers it), then the command line
-- (luagent, luagent.cli.*). A module may require its own layer or a lower
-- one, never a higher one: a library module learns the current run from
-- luagent.context, a leaf. Reading the `luagent` global (init.lua's table)
-- is reaching into the command line as well: only the cli layer does.
--
-- Prints each problem found, one a line ("luagent.a -> luagent.b ->
-- luagent.a", "luagent.trace requires luagent.run (a library module reaches
-- up into the run layer)", "luagent.outputs reads the luagent global (a
-- library module reaches up into the cli layer)"), and exits 1; prints
-- nothing and exits 0 when there is none.
local dir = (...) or "lua"

local function read(path)
  local f = io.open(path)
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text
end

local function file_of(module)
  if module == "luagent" then return dir .. "/luagent/init.lua" end
  return dir .. "/" .. module:gsub("%.", "/") .. ".lua"
end

local function module_of(path)
  local rel = path:sub(#dir + 2):gsub("%.lua$", "")
  if rel == "luagent/init" then return "luagent" end
  return (rel:gsub("/", "."))
end

local LAYERS = {library = 1, run = 2, cli = 3}
local function layer_of(module)
  if module == "luagent" or module:match("^luagent%.cli%f[%.%z]") then return "cli" end
  if module:match("^luagent%.run%f[%.%z]") or module:match("^luagent%.eval%f[%.%z]")
    or module == "luagent.checks" or module == "luagent.checks.graded" then return "run" end
  return "library"
end

-- A file's code without its comments (a require in a comment does not
-- count), and that code with its strings emptied (`bare`: for names).
local function scan(text)
  local code, bare, i, n = {}, {}, 1, #text
  local function keep(s, as_bare)
    code[#code + 1], bare[#bare + 1] = s, as_bare or s
  end
  local function long_end(from, eq) -- where the long bracket closing "]" .. eq .. "]" ends
    local _, e = text:find("]" .. eq .. "]", from, true)
    return e or n
  end
  while i <= n do
    local c, eq = text:sub(i, i), nil
    if text:sub(i, i + 1) == "--" then
      eq = text:match("^%[(=*)%[", i + 2)
      i = (eq and long_end(i + 4 + #eq, eq) or text:find("\n", i, true) or n) + 1
      if not eq then keep("\n") end
    elseif c == "[" and text:match("^%[=*%[", i) then
      eq = text:match("^%[(=*)%[", i)
      local e = long_end(i + 2 + #eq, eq)
      keep(text:sub(i, e), '""')
      i = e + 1
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n and text:sub(j, j) ~= c and text:sub(j, j) ~= "\n" do
        j = j + (text:sub(j, j) == "\\" and 2 or 1)
      end
      keep(text:sub(i, j), '""')
      i = j + 1
    else
      local j = text:find("[%-%[\"']", i + 1) or n + 1
      keep(text:sub(i, j - 1))
      i = j
    end
  end
  return table.concat(code), table.concat(bare)
end

local files = {}
local p = assert(io.popen("find '" .. dir .. "/luagent' -name '*.lua' | LC_ALL=C sort"))
for path in p:lines() do files[#files + 1] = path end
p:close()

local edges, modules, problems = {}, {}, {}
for _, path in ipairs(files) do
  local from = module_of(path)
  modules[#modules + 1] = from
  local set, list = {}, {}
  local code, bare = scan(read(path))
  if layer_of(from) ~= "cli" and bare:find("%f[%w_.]luagent%f[^%w_]") then
    problems[#problems + 1] = ("%s reads the luagent global (a %s module reaches up into the cli layer)"):format(
      from, layer_of(from))
  end
  for to in code:gmatch("require%s*%(?%s*[\"']([%w_%.]+)[\"']") do
    if to ~= from and not set[to] and read(file_of(to)) then
      set[to] = true
      list[#list + 1] = to
    end
  end
  table.sort(list)
  edges[from] = list
  for _, to in ipairs(list) do
    if LAYERS[layer_of(to)] > LAYERS[layer_of(from)] then
      problems[#problems + 1] = ("%s requires %s (a %s module reaches up into the %s layer)"):format(
        from, to, layer_of(from), layer_of(to))
    end
  end
end

local cycles = dofile((arg and arg[0] or "tools/require-cycles.lua"):gsub("[^/]*$", "") .. "cycles.lua")
for _, cycle in ipairs(cycles(modules, edges)) do problems[#problems + 1] = cycle end

for _, line in ipairs(problems) do print(line) end
os.exit(#problems == 0 and 0 or 1)

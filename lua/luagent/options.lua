-- luagent.options: an options table checked against its declaration, the
-- one in lua/meta (a ---@class and its ---@field lines, read from the copy
-- embedded in the binary): a key the class does not declare is a typo,
-- refused with the list of the known ones and a "did you mean".
--
--   options.check(tbl, class, where)   raises an error of kind config; returns tbl
--   options.fields(class) -> {name...} sorted    the declared keys (a parent class's too)
--   options.suggest(word, known) -> " (did you mean 'x'?)" | ""
--
-- One source: a field added to lua/meta is a known option at once, and an
-- option the code takes must be declared there (the tests see to it).
local errors = require "luagent.errors"
local sys = require "luagent.sys"

local options = {}

local META_DIR = "lua/meta/"
local classes -- name -> {fields = {name = true}, parent = name | nil}

-- Every ---@class of the embedded lua/meta files, with its ---@field names.
local function read_classes()
  classes = {}
  for _, name in ipairs(sys.assets()) do
    if name:sub(1, #META_DIR) == META_DIR and name:match("%.lua$") then
      local current
      for line in (sys.asset(name) or ""):gmatch("[^\n]+") do
        local class, parent = line:match("^%-%-%-@class ([%w_.]+)%s*:?%s*([%w_.]*)")
        if class then
          current = {fields = {}, parent = parent ~= "" and parent or nil}
          classes[class] = current
        elseif current then
          local field = line:match("^%-%-%-@field ([%w_]+)")
          if field then current.fields[field] = true
          elseif not line:match("^%-%-%-") then current = nil end
        end
      end
    end
  end
end

local function collect(class, into, depth)
  local c = classes[class]
  if not c or depth > 8 then return end
  for k in pairs(c.fields) do into[k] = true end
  if c.parent then collect(c.parent, into, depth + 1) end
end

function options.fields(class)
  if not classes then read_classes() end
  local set, list = {}, {}
  collect(class, set, 0)
  for k in pairs(set) do list[#list + 1] = k end
  table.sort(list)
  return list, set
end

-- Edit distance, for "did you mean": short words only.
local function distance(a, b)
  if math.abs(#a - #b) > 2 then return 3 end
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = {[0] = i}
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

function options.suggest(word, known)
  local best, best_d = nil, 3
  for _, k in ipairs(known) do
    local d = distance(word, k)
    if d < best_d or (d == best_d and best and #k < #best) then best, best_d = k, d end
  end
  return best and (" (did you mean '%s'?)"):format(best) or ""
end

function options.check(tbl, class, where)
  if type(tbl) ~= "table" then return tbl end
  local known, set = options.fields(class)
  if #known == 0 then return tbl end -- (a build without the meta files: nothing to check against)
  local unknown = {}
  for k in pairs(tbl) do
    if type(k) == "string" and not set[k] then unknown[#unknown + 1] = k end
  end
  if #unknown == 0 then return tbl end
  table.sort(unknown)
  local k = unknown[1]
  -- an error value (kind config): luagent prints it with the recipe's line, no traceback
  error(errors.new("config", ("%s: '%s' is not an option%s; the options are: %s"):format(where, k,
    options.suggest(k, known), table.concat(known, ", ")), {option = k}), 0)
end

return options

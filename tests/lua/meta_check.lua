-- meta_check: does every public function have a LuaLS annotation in lua/meta?
-- Used by meta_spec.lua; small on purpose.
--
--   check.missing(text, "sandbox", sandbox_module)  -> {"new_function", ...}
--   check.stale(text, "sandbox", sandbox_module)    -> {"removed_function", ...}
--   check.source_methods(source, into)              -> {Class = {method = true}}
local check = {}

-- Is `owner.name` / `owner:name` declared in the annotation text?
function check.declared(text, owner, name, is_function)
  if text:find("function " .. owner .. "." .. name .. "(", 1, true)
    or text:find("function " .. owner .. ":" .. name .. "(", 1, true) then
    return true
  end
  if is_function then return false end
  -- a value: `owner.name = ...` or a `---@field name` of the class
  return text:find("\n" .. owner .. "." .. name .. " =", 1, true) ~= nil
    or text:find("---@field " .. name .. "[?%s]") ~= nil
end

-- The public names (not starting with "_") of a table that `text` does not
-- declare on `owner`, sorted. Functions need `function owner.name(`; other
-- values may be a `---@field` instead. `skip(name, value)` leaves some out.
function check.missing(text, owner, tbl, skip)
  local missing = {}
  for name, value in pairs(tbl) do
    if type(name) == "string" and name:sub(1, 1) ~= "_" and not (skip and skip(name, value))
      and not check.declared(text, owner, name, type(value) == "function") then
      missing[#missing + 1] = name
    end
  end
  table.sort(missing)
  return missing
end

-- The functions `text` declares on `owner` that `tbl` does not have (stale
-- annotations), sorted. `owner` is a plain identifier.
function check.stale(text, owner, tbl)
  local stale = {}
  for name in text:gmatch("\nfunction " .. owner .. "[.:]([%a_][%w_]*)%s*%(") do
    if tbl[name] == nil then stale[#stale + 1] = name end
  end
  table.sort(stale)
  return stale
end

-- The public methods Lua source defines on capitalised locals (classes):
-- `function Box:exec(` -> into.Box.exec = true.
function check.source_methods(source, into)
  into = into or {}
  for class, method in source:gmatch("\nfunction (%u[%w_]*)[:.](%a[%w_]*)%s*%(") do
    into[class] = into[class] or {}
    into[class][method] = true
  end
  return into
end

-- The methods of a userdata's or table's class (its metatable's __index).
function check.methods_of(value)
  local mt = getmetatable(value)
  local index = type(mt) == "table" and mt.__index
  local methods = {}
  if type(index) == "table" then
    for name, fn in pairs(index) do
      if type(fn) == "function" then methods[name] = fn end
    end
  end
  return methods
end

return check

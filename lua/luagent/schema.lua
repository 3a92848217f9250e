-- luagent.schema: JSON Schema, the subset the model providers accept for
-- structured answers and tool arguments, written as plain Lua tables.
--
-- The functions (check, problems, validate, describe, strict_ok): lua/meta/schema.lua.
--
-- The subset: type (a name, or a list of names: {"string", "null"} is how a
-- value may be null), properties, required, additionalProperties, items, enum,
-- const, anyOf, $ref into $defs (or "#"), minLength, maxLength, minimum,
-- maximum, exclusiveMinimum, exclusiveMaximum, multipleOf, minItems, maxItems,
-- and the annotations (title, description, default, examples, ...). pattern
-- and format are accepted and left to the provider: they are not checked here.
-- Other keywords (a typo like "propertes", oneOf, nullable, ...) are refused,
-- naming the keyword. A value decoded from JSON keeps its array mark, so [] and
-- {} differ; an empty Lua table matches both an object and an array.
local json = require "luagent.json"
local excerpt = require("luagent.text").excerpt

local schema = {}

local TYPES = {string = true, number = true, integer = true, boolean = true, object = true, array = true, null = true}
local TYPE_LIST = "string, number, integer, boolean, object, array, null"

-- keyword -> what its value must be (the checker of it, below)
local KEYWORDS = {
  type = "type", properties = "schemas_by_name", required = "names", additionalProperties = "schema_or_boolean",
  items = "schema", enum = "list", const = "any", anyOf = "schema_list",
  ["$defs"] = "schemas_by_name", definitions = "schemas_by_name", ["$ref"] = "ref",
  minLength = "count", maxLength = "count", minItems = "count", maxItems = "count",
  minimum = "number", maximum = "number", exclusiveMinimum = "number", exclusiveMaximum = "number",
  multipleOf = "positive", pattern = "string", format = "string",
  title = "string", description = "string", ["$comment"] = "string", ["$schema"] = "string", ["$id"] = "string",
  default = "any", examples = "list", deprecated = "boolean", readOnly = "boolean", writeOnly = "boolean",
}

local REFUSED = {
  nullable = "is not JSON Schema: write type = {\"string\", \"null\"} (a list of types) for a value that may be null",
  oneOf = "is not in the subset the providers accept for structured answers: use anyOf",
  allOf = "is not in the subset the providers accept for structured answers: merge the schemas into one",
  ["not"] = "is not in the subset the providers accept for structured answers",
  prefixItems = "is not in the subset the providers accept: use items (one schema for every item)",
  patternProperties = "is not in the subset the providers accept: list the properties",
}

-- ---- what a value is ----

local function is_list(t)
  if type(t) ~= "table" then return false end
  if json.is_array(t) then return true end
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n == #t
end

-- The JSON type of a Lua value: "object", "array", "empty" (an unmarked {}), ...
local function json_type(v)
  local t = type(v)
  if v == json.null then return "null" end
  if t == "string" or t == "boolean" then return t end
  if t == "number" then
    if math.type(v) == "integer" or (v == math.floor(v) and v == v and v ~= math.huge and v ~= -math.huge) then
      return "integer"
    end
    return "number"
  end
  if t == "table" then
    if json.is_array(v) then return "array" end
    if next(v) == nil then return "empty" end
    return is_list(v) and "array" or "object"
  end
  return t
end

local function type_matches(name, actual)
  if name == actual then return true end
  if name == "number" and actual == "integer" then return true end
  if actual == "empty" and (name == "object" or name == "array") then return true end
  return false
end

local function short(v)
  if v == json.null then return "null" end
  local ok, encoded = pcall(json.encode, v)
  return excerpt(ok and encoded or tostring(v), 60)
end

local A = {string = "a string", number = "a number", integer = "an integer", boolean = "a boolean",
           object = "an object", array = "an array", null = "null", empty = "an empty table"}

local function same(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then
    if type(a) == "number" and type(b) == "number" then return a == b end
    return a == b
  end
  if json.is_array(a) ~= json.is_array(b) and (next(a) ~= nil or next(b) ~= nil) then return false end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

-- ---- checking a schema (misuse raises) ----

local check_schema -- (s, where, root, out)

local function name_list(value)
  local names = {}
  for _, v in ipairs(value) do names[#names + 1] = ("%q"):format(v) end
  return table.concat(names, ", ")
end

-- Resolves a "$ref" ("#" or "#/$defs/name") against the root schema.
local function resolve(root, ref)
  if ref == "#" then return root end
  local node = root
  for part in ref:gmatch("/([^/]*)") do
    part = part:gsub("~1", "/"):gsub("~0", "~")
    if type(node) ~= "table" then return nil end
    node = node[part]
  end
  return type(node) == "table" and node or nil
end

local checks = {}

function checks.type(v, where, out)
  local names = type(v) == "table" and v or {v}
  if type(v) == "table" and (not is_list(v) or #v == 0) then
    out[#out + 1] = where .. ": must be a type name or a non-empty list of them (" .. TYPE_LIST .. ")"
    return
  end
  for _, name in ipairs(names) do
    if not TYPES[name] then
      out[#out + 1] = ("%s: %s is not a JSON type (%s)"):format(where, short(name), TYPE_LIST)
    end
  end
end

function checks.schemas_by_name(v, where, out, root)
  if type(v) ~= "table" or (next(v) ~= nil and is_list(v)) then
    out[#out + 1] = where .. ": must map names to schemas, e.g. {name = {type = \"string\"}}"
    return
  end
  for name, sub in pairs(v) do
    if type(name) ~= "string" then
      out[#out + 1] = ("%s: the key %s is not a name"):format(where, short(name))
    else
      check_schema(sub, where .. "." .. name, root, out)
    end
  end
end

function checks.names(v, where, out)
  if not is_list(v) then
    out[#out + 1] = where .. ": must be a list of property names, e.g. {\"name\", \"kind\"}"
    return
  end
  for i, name in ipairs(v) do
    if type(name) ~= "string" then out[#out + 1] = ("%s[%d]: must be a property name (a string)"):format(where, i) end
  end
end

function checks.schema_or_boolean(v, where, out, root)
  if type(v) ~= "boolean" then check_schema(v, where, root, out) end
end

function checks.schema(v, where, out, root)
  if is_list(v) and next(v) ~= nil then
    out[#out + 1] = where .. ": must be one schema (every item matches it), not a list of schemas"
    return
  end
  check_schema(v, where, root, out)
end

function checks.schema_list(v, where, out, root)
  if not is_list(v) or #v == 0 then
    out[#out + 1] = where .. ": must be a non-empty list of schemas"
    return
  end
  for i, sub in ipairs(v) do check_schema(sub, ("%s[%d]"):format(where, i), root, out) end
end

function checks.list(v, where, out)
  if not is_list(v) or #v == 0 then out[#out + 1] = where .. ": must be a non-empty list of values" end
end

function checks.any() end

function checks.ref(v, where, out, root)
  if type(v) ~= "string" or v:sub(1, 1) ~= "#" then
    out[#out + 1] = where .. ": must point into this schema, like \"#/$defs/item\" or \"#\""
  elseif not resolve(root, v) then
    out[#out + 1] = ("%s: %q points at nothing in this schema"):format(where, v)
  end
end

function checks.count(v, where, out)
  if math.type(v) ~= "integer" or v < 0 then out[#out + 1] = where .. ": must be an integer >= 0" end
end

function checks.number(v, where, out)
  if type(v) ~= "number" then out[#out + 1] = where .. ": must be a number" end
end

function checks.positive(v, where, out)
  if type(v) ~= "number" or v <= 0 then out[#out + 1] = where .. ": must be a number > 0" end
end

function checks.string(v, where, out)
  if type(v) ~= "string" then out[#out + 1] = where .. ": must be a string" end
end

function checks.boolean(v, where, out)
  if type(v) ~= "boolean" then out[#out + 1] = where .. ": must be true or false" end
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

check_schema = function(s, where, root, out)
  if type(s) ~= "table" or (next(s) ~= nil and is_list(s)) then
    out[#out + 1] = where .. ": must be a schema (a table like {type = \"string\"}), got " .. short(s)
    return
  end
  for _, key in ipairs(sorted_keys(s)) do
    local kind = KEYWORDS[key]
    local at = where .. "." .. tostring(key)
    if kind then
      checks[kind](s[key], at, out, root)
    elseif REFUSED[key] then
      out[#out + 1] = at .. ": " .. REFUSED[key]
    else
      out[#out + 1] = ("%s: unknown keyword %s (the keywords luagent knows are listed in luagent.schema)"):format(
        at, short(key))
    end
  end
  if type(s.properties) == "table" and is_list(s.required) then
    local unknown = {}
    for _, name in ipairs(s.required) do
      if type(name) == "string" and s.properties[name] == nil then unknown[#unknown + 1] = name end
    end
    if #unknown > 0 then
      out[#out + 1] = ("%s.required: names %s, which properties does not have"):format(where, name_list(unknown))
    end
  end
end

function schema.problems(s, where)
  local out = {}
  check_schema(s, where or "schema", s, out)
  return out
end

function schema.check(s, where)
  local problems = schema.problems(s, where)
  if #problems == 0 then return s end
  local more = #problems > 1 and (" (and %d more: %s)"):format(#problems - 1, table.concat(problems, "; ", 2)) or ""
  error(problems[1] .. more, 2)
end

-- ---- validating a value ----

local validate -- (s, v, path, root, errs, depth)

local MAX_ERRORS = 20

local function add(errs, path, message)
  if #errs < MAX_ERRORS then errs[#errs + 1] = {path = path, message = message} end
end

local function check_type(s, v, path, errs)
  if s.type == nil then return true end
  local names = type(s.type) == "table" and s.type or {s.type}
  local actual = json_type(v)
  for _, name in ipairs(names) do
    if type_matches(name, actual) then return true end
  end
  local wanted = {}
  for i, name in ipairs(names) do wanted[i] = A[name] or name end
  add(errs, path, ("expected %s, got %s (%s)"):format(table.concat(wanted, " or "), A[actual] or actual, short(v)))
  return false
end

local function check_object(s, v, path, root, errs, depth)
  for _, name in ipairs(type(s.required) == "table" and s.required or {}) do
    if v[name] == nil then add(errs, path, ("missing the required property %q"):format(name)) end
  end
  local props = type(s.properties) == "table" and s.properties or {}
  for _, key in ipairs(sorted_keys(v)) do
    local at = path .. "." .. tostring(key)
    if props[key] ~= nil then
      validate(props[key], v[key], at, root, errs, depth)
    elseif s.additionalProperties == false then
      add(errs, path, ("has the property %q, which the schema does not allow (it allows %s)"):format(
        tostring(key), #sorted_keys(props) > 0 and name_list(sorted_keys(props)) or "none"))
    elseif type(s.additionalProperties) == "table" then
      validate(s.additionalProperties, v[key], at, root, errs, depth)
    end
  end
end

local function check_array(s, v, path, root, errs, depth)
  local n = #v
  if s.minItems and n < s.minItems then add(errs, path, ("has %d items, fewer than minItems %d"):format(n, s.minItems)) end
  if s.maxItems and n > s.maxItems then add(errs, path, ("has %d items, more than maxItems %d"):format(n, s.maxItems)) end
  if type(s.items) == "table" then
    for i = 1, n do validate(s.items, v[i], ("%s[%d]"):format(path, i - 1), root, errs, depth) end
  end
end

local function check_string(s, v, path, errs)
  local n = utf8.len(v) or #v
  if s.minLength and n < s.minLength then
    add(errs, path, ("is %d characters long, shorter than minLength %d"):format(n, s.minLength))
  end
  if s.maxLength and n > s.maxLength then
    add(errs, path, ("is %d characters long, longer than maxLength %d"):format(n, s.maxLength))
  end
end

local function check_number(s, v, path, errs)
  if s.minimum and v < s.minimum then add(errs, path, ("%s is less than the minimum %s"):format(short(v), short(s.minimum))) end
  if s.maximum and v > s.maximum then add(errs, path, ("%s is more than the maximum %s"):format(short(v), short(s.maximum))) end
  if s.exclusiveMinimum and v <= s.exclusiveMinimum then
    add(errs, path, ("%s must be more than %s (exclusiveMinimum)"):format(short(v), short(s.exclusiveMinimum)))
  end
  if s.exclusiveMaximum and v >= s.exclusiveMaximum then
    add(errs, path, ("%s must be less than %s (exclusiveMaximum)"):format(short(v), short(s.exclusiveMaximum)))
  end
  if s.multipleOf then
    local q = v / s.multipleOf
    if math.abs(q - math.floor(q + 0.5)) > 1e-9 then
      add(errs, path, ("%s is not a multiple of %s"):format(short(v), short(s.multipleOf)))
    end
  end
end

local function check_choices(s, v, path, root, errs, depth)
  if s.enum then
    local found = false
    for _, option in ipairs(s.enum) do if same(option, v) then found = true break end end
    if not found then
      local options = {}
      for i, option in ipairs(s.enum) do options[i] = short(option) end
      add(errs, path, ("expected one of %s, got %s"):format(table.concat(options, ", "), short(v)))
    end
  end
  if s.const ~= nil and not same(s.const, v) then
    add(errs, path, ("expected %s, got %s"):format(short(s.const), short(v)))
  end
  if s.anyOf then
    local reasons = {}
    for i, sub in ipairs(s.anyOf) do
      local sub_errs = {}
      validate(sub, v, path, root, sub_errs, depth)
      if #sub_errs == 0 then return end
      reasons[#reasons + 1] = ("(%d) %s"):format(i, sub_errs[1].message)
    end
    add(errs, path, "matches none of the anyOf choices: " .. table.concat(reasons, "; "))
  end
end

validate = function(s, v, path, root, errs, depth)
  if depth > 200 then
    add(errs, path, "is nested too deeply (or the schema's $ref loops)")
    return
  end
  if type(s) ~= "table" then return end
  if s["$ref"] then
    local target = resolve(root, s["$ref"])
    if target then validate(target, v, path, root, errs, depth + 1) end
  end
  if not check_type(s, v, path, errs) then return end
  local t = json_type(v)
  if t == "object" or (t == "empty" and s.type ~= "array") then check_object(s, v, path, root, errs, depth + 1) end
  if t == "array" or (t == "empty" and s.type == "array") then check_array(s, v, path, root, errs, depth + 1) end
  if t == "string" then check_string(s, v, path, errs) end
  if t == "number" or t == "integer" then check_number(s, v, path, errs) end
  check_choices(s, v, path, root, errs, depth + 1)
end

function schema.validate(s, value)
  local errs = {}
  validate(s, value, "$", s, errs, 0)
  if #errs == 0 then return true end
  return false, errs
end

function schema.describe(errs)
  local lines = {}
  for i, e in ipairs(errs) do lines[i] = ("- %s: %s"):format(e.path, e.message) end
  return table.concat(lines, "\n")
end

-- ---- strict mode ----

local function strict_ok(s, seen)
  if type(s) ~= "table" or seen[s] then return true end
  seen[s] = true
  local is_object = s.type == "object" or s.properties ~= nil
  if is_object then
    if s.additionalProperties ~= false then return false end
    local required = {}
    for _, name in ipairs(type(s.required) == "table" and s.required or {}) do required[name] = true end
    for name in pairs(s.properties or {}) do if not required[name] then return false end end
  end
  for _, key in ipairs({"properties", "$defs", "definitions"}) do
    for _, sub in pairs(type(s[key]) == "table" and s[key] or {}) do
      if not strict_ok(sub, seen) then return false end
    end
  end
  for _, sub in ipairs(type(s.anyOf) == "table" and s.anyOf or {}) do
    if not strict_ok(sub, seen) then return false end
  end
  return strict_ok(s.items, seen)
end

function schema.strict_ok(s)
  return strict_ok(s, {})
end

return schema

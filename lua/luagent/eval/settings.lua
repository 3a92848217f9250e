-- luagent.eval.settings: settings maps of an eval spec (a variant, an input,
-- a --set) checked against the recipe's defaults, and turned into the nested
-- table a run gets as its settings.
--
--   local defaults = settings.defaults(recipe_path)
--     -> {file, name, value, positions, missing} | nil, err
--     The recipe's settings are the keys of the YAML beside it: recipe foo.lua
--     reads foo.yaml (a key with an empty value, `input:`, counts).
--   settings.check(map, positions, defaults, line, report) -> nested table
--     map: a settings map from the spec (dotted keys nest: "model.temperature");
--     positions: yaml.load's positions of the spec (nil: `line` for every key);
--     report(line, path, message) raises the caller's error. A key is known
--     when every part of it is a key of the defaults; under a default that is
--     empty (null) any shape goes. A value must have the default's type (a map
--     for a map, a number for a number, ...); a null value is refused.
--   settings.leaves(nested, fn)    fn(path, value, parent, key) for each non-table value
--   settings.suggest(word, known)  -> " (did you mean 'x'?)" | ""
local json = require "luagent.json"
local yaml = require "luagent.yaml"
local fs = require "luagent.fs"

local settings = {}

local function is_map(v) return type(v) == "table" and not json.is_array(v) end

local function split(key)
  local parts = {}
  for part in key:gmatch("[^.]+") do parts[#parts + 1] = part end
  return parts
end

local function sorted_keys(set)
  local keys = {}
  for k in pairs(set) do if type(k) == "string" then keys[#keys + 1] = k end end
  table.sort(keys)
  return keys
end

-- "did you mean": the one edit distance, luagent.options'
settings.suggest = require("luagent.options").suggest

-- How a value reads in a message: "a map", "a list", "a string", "a number", "true".
local function kind_of(v)
  if is_map(v) then return "a map" end
  if type(v) == "table" then return "a list" end
  if type(v) == "boolean" then return "a boolean" end
  return "a " .. type(v)
end

function settings.defaults(recipe)
  local file = recipe:gsub("%.lua$", "") .. ".yaml"
  local name = file:match("[^/]+$")
  local st = fs.stat(file)
  if not st then return {file = file, name = name, value = {}, positions = {}, missing = true} end
  local value, positions = yaml.load_file(file, {positions = true})
  if value == nil then return nil, positions end
  if not is_map(value) then value, positions = {}, {} end
  return {file = file, name = name, value = value, positions = positions}
end

-- The keys the defaults have at `node` (a map), for messages.
local function known_here(defaults, node)
  return sorted_keys(defaults.positions[node] or {})
end

local function describe_known(defaults, node, prefix)
  if defaults.missing then
    return ("the recipe has no %s beside it, so it has no settings to set"):format(defaults.name)
  end
  local keys = known_here(defaults, node)
  if #keys == 0 then return ("%s has no keys under %s"):format(defaults.name, prefix) end
  return ("%s has %s%s"):format(defaults.name, prefix == "" and "" or prefix .. ": ", table.concat(keys, ", "))
end

-- Checks value (at path, given as parts) against the default at that place
-- (dnode: a default map, or nil where any shape goes); returns it expanded.
local check_map

local function check_value(value, vpos, parts, dnode, free, ctx)
  local path = table.concat(parts, ".")
  if value == nil then ctx.report(ctx.line, path, "no value (null): give one, or leave the key out") end
  local d = not free and dnode or nil
  if is_map(value) then
    if free or d == nil then return check_map(value, vpos, parts, nil, true, ctx) end
    if not is_map(d) then
      ctx.report(ctx.line, path, ("expected %s like the recipe's default (%s), got a map"):format(kind_of(d), d))
    end
    return check_map(value, vpos, parts, d, false, ctx)
  end
  if d ~= nil and kind_of(d) ~= kind_of(value) then
    local shown = is_map(d) and ("a map with " .. table.concat(known_here(ctx.defaults, d), ", "))
      or (type(d) == "table" and "a list") or tostring(d)
    ctx.report(ctx.line, path, ("expected %s like the recipe's default (%s), got %s"):format(kind_of(d), shown,
      kind_of(value)))
  end
  return value
end

-- A key of a settings map: its parts walked through the defaults.
local function check_key(key, value, vpos, prefix, dnode, free, ctx)
  local parts = {}
  for _, p in ipairs(prefix) do parts[#parts + 1] = p end
  local node = dnode
  local own = split(key)
  if #own == 0 then ctx.report(ctx.line, key, "an empty setting name") end
  for i, part in ipairs(own) do
    parts[#parts + 1] = part
    if not free then
      local here = ctx.defaults.positions[node] or {}
      if here[part] == nil then
        local prefix_text = table.concat(parts, ".", 1, #parts - 1)
        ctx.report(ctx.line, table.concat(parts, "."), ("not a setting of the recipe (%s)%s"):format(
          describe_known(ctx.defaults, node, prefix_text), settings.suggest(part, known_here(ctx.defaults, node))))
      end
      local d = node[part]
      if d == nil then
        free = true
      elseif i < #own then
        if not is_map(d) then
          ctx.report(ctx.line, table.concat(parts, "."), ("%s is %s in the recipe's defaults, not a map"):format(
            table.concat(parts, "."), kind_of(d)))
        end
        node = d
      else
        node = d
      end
    end
  end
  return parts, check_value(value, vpos, parts, node, free, ctx)
end

-- Puts value at parts (relative to prefix, which `out` already stands for).
local function put(out, parts, from, value)
  local node = out
  for i = from, #parts - 1 do
    if not is_map(node[parts[i]]) then node[parts[i]] = {} end
    node = node[parts[i]]
  end
  local last = parts[#parts]
  if is_map(value) and is_map(node[last]) then
    for k, v in pairs(value) do node[last][k] = v end
  else
    node[last] = value
  end
end

check_map = function(map, mpos, prefix, dnode, free, ctx)
  local out = {}
  local here = mpos and mpos[map] or {}
  -- every key, those with a null value too, in the order of the file
  local keys = {}
  for k in pairs(here) do keys[#keys + 1] = k end
  for k in pairs(map) do if here[k] == nil then keys[#keys + 1] = k end end
  local function place(k) return here[k] and (here[k].line * 100000 + here[k].col) or math.huge end
  table.sort(keys, function(a, b)
    if place(a) ~= place(b) then return place(a) < place(b) end
    return tostring(a) < tostring(b)
  end)
  for _, key in ipairs(keys) do
    local saved = ctx.line
    if here[key] then ctx.line = here[key].line end
    if type(key) ~= "string" then ctx.report(ctx.line, tostring(key), "a setting name must be text") end
    local parts, value = check_key(key, map[key], mpos, prefix, dnode, free, ctx)
    put(out, parts, #prefix + 1, value)
    ctx.line = saved
  end
  return out
end

function settings.check(map, map_positions, defaults, line, report)
  local ctx = {defaults = defaults, report = report, line = line}
  return check_map(map, map_positions, {}, defaults.value, false, ctx)
end

function settings.leaves(nested, fn, prefix)
  local keys = sorted_keys(nested)
  for _, k in ipairs(keys) do
    local v = nested[k]
    local path = prefix and (prefix .. "." .. k) or k
    if is_map(v) then settings.leaves(v, fn, path) else fn(path, v, nested, k) end
  end
end

return settings

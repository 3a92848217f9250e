-- luagent.model.families: the model table — what each model family takes and
-- costs — read from lua/luagent/model/models.yaml (embedded in the binary;
-- its header explains every field). Request building (the token-limit field,
-- which sampling parameters go, reasoning) and costs (luagent.prices) read it.
--
-- A recipe overrides entries by model or family name (the model section's
-- `models:`), merged field by field over what the table says; an override of
-- a name the table does not know makes a family of its own.
local yaml = require "luagent.yaml"
local sys = require "luagent.sys"

local families = {}

families.ASSET = "lua/luagent/model/models.yaml"

local loaded -- the table, read once per process

function families.load()
  if not loaded then
    local text = assert(sys.asset(families.ASSET), "the model table is not embedded: " .. families.ASSET)
    loaded = assert(yaml.load(text, families.ASSET))
  end
  return loaded
end

-- A date or "-latest" at the end of a name names a snapshot of the same model.
local SNAPSHOT_SUFFIXES = {"%-%d%d%d%d%-%d%d%-%d%d$", "%-%d%d%d%d%d%d%d%d$", "%-latest$"}

local function names_of(name)
  local list = {name}
  for _, suffix in ipairs(SNAPSHOT_SUFFIXES) do
    local base = name:gsub(suffix, "")
    if base ~= name then list[#list + 1] = base end
  end
  return list
end

-- How well pattern matches name: nil (not), else a rank (an exact name beats any prefix, a longer prefix a shorter).
local function rank(pattern, name)
  if pattern == name then return math.huge end
  if pattern:sub(-1) == "*" and name:sub(1, #pattern - 1) == pattern:sub(1, -2) then return #pattern end
  return nil
end

local function best_family(name)
  local best, best_rank, best_key
  for key, family in pairs(families.load().families or {}) do
    for _, pattern in ipairs(family.match or {key}) do
      local r = rank(pattern, name)
      if r and (not best_rank or r > best_rank or (r == best_rank and key < best_key)) then
        best, best_rank, best_key = family, r, key
      end
    end
  end
  return best, best_key
end

-- Field by field: tables (prices) merge, anything else replaces.
local function merged(base, over)
  local out = {}
  for k, v in pairs(base or {}) do out[k] = v end
  for k, v in pairs(over or {}) do
    if type(v) == "table" and type(out[k]) == "table" then out[k] = merged(out[k], v) else out[k] = v end
  end
  return out
end

local function lookup(name, overrides)
  for _, candidate in ipairs(names_of(name)) do
    local family, key = best_family(candidate)
    local over = overrides and (overrides[candidate] or (key and overrides[key]))
    if family or over then return merged(family, over), key or candidate end
  end
  return false
end

-- Answers by overrides table (none: NO_OVERRIDES) and name: every model call
-- prices its answer, and a walk of the table costs ~10 us.
local NO_OVERRIDES = {}
local memo = setmetatable({}, {__mode = "k"})

-- families.lookup(name [, overrides]) -> entry, family key | nil
-- overrides: {NAME = {fields}} by model or family name (a recipe's model.models).
-- The entry is shared: read it, never change it.
function families.lookup(name, overrides)
  if type(name) ~= "string" or name == "" then return nil end
  local by_name = memo[overrides or NO_OVERRIDES]
  if not by_name then
    by_name = {}
    memo[overrides or NO_OVERRIDES] = by_name
  end
  local hit = by_name[name]
  if hit == nil then
    local entry, key = lookup(name, overrides)
    hit = entry and {entry, key} or false
    by_name[name] = hit
  end
  if not hit then return nil end
  return hit[1], hit[2]
end

-- The model a provider uses when none is named.
function families.default_model(provider)
  return (families.load().defaults or {})[provider]
end

-- Does this model, at this reasoning effort, take sampling parameters?
-- entry: a lookup's result (nil: unknown, which takes them); effort: the one asked for, or nil.
function families.takes_sampling(entry, effort)
  if not entry or entry.sampling == nil or entry.sampling == "yes" or entry.sampling == true then return true end
  if entry.sampling == "without_reasoning" then return (effort or entry.default_effort) == "none" end
  return false
end

return families

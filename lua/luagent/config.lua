-- luagent.config: a recipe's settings. The global has luagent.settings (the
-- --set values), luagent.config(file) and luagent.merge, which use this
-- module (loaded only when a run has --set or reads a config).
--
--   config.parse_settings{"a.b=3", "model.provider=anthropic"} -> {a = {b = 3}, model = {...}}
--   config.load(file, dir, settings) -> the YAML file (relative to dir) with settings on top;
--       its top-level `cache:` (true | refresh | false) switches the run's
--       model-call cache on when the command line said nothing (luagent.cache)
--   config.merge(base, over) -> base, with over's values merged in (tables key by key)
local errors = require "luagent.errors"

local config = {}

-- "a.b=3" settings from the command line, typed like YAML scalars
-- ("[1, 2]" and "{...}" as YAML). They are read while the library loads, so
-- a bad one raises a string: the host prints it as it is.
function config.parse_settings(raw)
  local yaml = require "luagent.yaml"
  local secrets = require "luagent.secrets"
  local settings = {}
  for _, kv in ipairs(raw) do
    local key, text = kv:match("^([^=]+)=(.*)$")
    local value
    if text:match("^%s*[%[{]") then
      local parsed, err = yaml.load(text, "--set " .. key)
      if parsed == nil then error(err.message, 0) end -- it names "--set KEY", line and column
      value = parsed
    else
      value = yaml.scalar(text)
    end
    local node = settings
    local parts = {}
    for part in key:gmatch("[^.]+") do parts[#parts + 1] = part end
    for i = 1, #parts - 1 do
      if type(node[parts[i]]) ~= "table" then node[parts[i]] = {} end
      node = node[parts[i]]
    end
    node[parts[#parts]] = value
    if type(value) == "string" and secrets.is_credential_name(parts[#parts]) then secrets.add(value, "--set " .. key) end
  end
  return settings
end

function config.merge(base, over)
  for k, v in pairs(over) do
    if type(v) == "table" and type(base[k]) == "table" and not (getmetatable(v) or getmetatable(base[k])) then
      config.merge(base[k], v)
    else
      base[k] = v
    end
  end
  return base
end

local function show(v)
  if type(v) == "string" then return v end
  return tostring(v)
end

local function field_names(t)
  local names = {}
  for k in pairs(t) do names[#names + 1] = tostring(k) end
  table.sort(names)
  if #names > 4 then names = {names[1], names[2], names[3], names[4], "..."} end
  return table.concat(names, ", ")
end

-- A --set of the wrong shape for the file is a usage error (exit 2), before
-- the recipe would trip over it: a scalar where the file has a table, a
-- table (a.b=...) where it has a scalar.
local function check_shapes(cfg, settings, file, prefix)
  for k, v in pairs(settings) do
    local key = prefix and (prefix .. "." .. tostring(k)) or tostring(k)
    local base = cfg[k]
    if type(base) == "table" and type(v) ~= "table" and next(base) ~= nil then
      local keys = {}
      for name in pairs(base) do keys[#keys + 1] = name end
      table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
      local first = keys[1]
      local example = math.type(first) and (key .. "=[...]") or (key .. "." .. tostring(first) .. "=...")
      error(errors.new("usage", ("--set %s=%s: %s is a table in %s (%s), not a single value; set one of its "
        .. "fields, e.g. --set %s"):format(key, show(v), key, file, field_names(base), example)), 0)
    elseif type(v) == "table" and base ~= nil and type(base) ~= "table" then
      error(errors.new("usage", ("--set %s...: %s is a %s in %s (%s), not a table of settings"):format(key, key,
        type(base), file, show(base))), 0)
    elseif type(v) == "table" and type(base) == "table" then
      check_shapes(base, v, file, key)
    end
  end
end

-- A missing or broken file raises its yaml or io error, its message led by
-- the file and line of the recipe that asked (luagent.config tail-calls this).
function config.load(file, dir, settings)
  local path = file
  if dir and not file:match("^/") then path = dir .. "/" .. file end
  local watchlist = package.loaded["luagent.watchlist"] -- `luagent run --watch` watches it
  if watchlist then watchlist.file(path) end
  local cfg, err = require("luagent.yaml").load_file(path)
  if cfg == nil then
    local caller = debug.getinfo(2, "Sl")
    if caller and caller.currentline > 0 then err = errors.wrap(err, caller.short_src .. ":" .. caller.currentline) end
    error(err, 0)
  end
  if type(cfg) == "table" and cfg.cache ~= nil then require("luagent.cache").from_config(cfg.cache, path) end
  if type(cfg) == "table" and settings then check_shapes(cfg, settings, file, nil) end
  return config.merge(cfg, settings)
end

return config

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
  return config.merge(cfg, settings)
end

return config

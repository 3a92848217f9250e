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
    elseif (type(base) == "number" or type(base) == "boolean") and type(v) == "string" then
      -- a word where the file has a number or a yes/no: refused now, not where the recipe trips over it
      error(errors.new("usage", ("--set %s=%s: %s is a %s in %s (%s), not text; give a %s, e.g. --set %s=%s")
        :format(key, v, key, type(base) == "number" and "number" or "true/false setting", file, show(base),
          type(base) == "number" and "number" or "true or false", key, show(base))), 0)
    end
  end
end

-- Every --set key under a section of the recipe's own YAML (the file beside
-- it, NAME.yaml for NAME.lua) is a setting there, as luagent eval checks a
-- variant's: a typo is a usage error (exit 2) with the keys there and a "did
-- you mean", before anything starts. A top-level key the file lacks is
-- refused only as a near miss of one it has (a recipe may read others from
-- luagent.settings itself). Under a setting the file leaves empty
-- (`base_url:`) or gives a list, any shape goes.
local function check_known(cfg, positions, settings, file, prefix)
  local here = positions[cfg] or {}
  for k, v in pairs(settings) do
    local key = prefix and (prefix .. "." .. tostring(k)) or tostring(k)
    if here[k] == nil then
      local known = {}
      for name in pairs(here) do if type(name) == "string" then known[#known + 1] = name end end
      table.sort(known)
      local suggestion = require("luagent.options").suggest(tostring(k), known)
      -- a top-level key the file lacks may be one the recipe reads itself (luagent.settings.base_url):
      -- refused only when it is a near miss of one the file has
      if prefix or suggestion ~= "" then
        error(errors.new("usage", ("--set %s: not a setting of the recipe (%s has %s%s)%s"):format(key,
          file:match("[^/]+$"), prefix and (prefix .. ": ") or "", table.concat(known, ", "), suggestion)), 0)
      end
    end
    local base = cfg[k]
    if type(v) == "table" and type(base) == "table" and next(base) ~= nil and base[1] == nil then
      check_known(base, positions, v, file, key)
    end
  end
end

-- The recipe's line that asked for the file ("recipes/x.lua:12"): the
-- first frame outside luagent's own library.
local function recipe_frame()
  for level = 2, 20 do
    local info = debug.getinfo(level, "Sl")
    if not info then return nil end
    if info.currentline > 0 and not info.short_src:match("^lua/luagent/") and info.what ~= "C" then
      return info.short_src .. ":" .. info.currentline
    end
  end
end

local function indent_of(line) return #line:match("^( *)") end
local function blank(line) return line:match("^%s*$") or line:match("^%s*#") end

-- A YAML error that indentation explains (libyaml often reports the line
-- after the mistake): the line whose indentation no line before it at that
-- depth has, among the error's line and the two before, named first.
local INDENT_ERRORS = {"did not find expected key", "mapping values are not allowed", "could not find expected ':'",
                       "did not find expected '-' indicator", "did not find expected node content"}

local function with_indent_hint(err, path)
  local about = false
  for _, text in ipairs(INDENT_ERRORS) do about = about or err.message:find(text, 1, true) ~= nil end
  local source = about and require("luagent.fs").read(path)
  if not source or not err.line then return err end
  local lines = {}
  for line in (source .. "\n"):gmatch("(.-)\r?\n") do lines[#lines + 1] = line end
  local seen, opener = {[0] = true}, nil
  for n = 1, math.min(err.line, #lines) do
    local line = lines[n]
    if not blank(line) then
      local depth = indent_of(line)
      local child_of_opener = opener and depth > indent_of(lines[opener]) and lines[opener]:match("[:|>]%s*$")
      if n >= err.line - 2 and not seen[depth] and not child_of_opener then
        return errors.new(err.kind, ("%s; line %d looks mis-indented (%d spaces, which no line above it at that level "
          .. "has): check the indentation"):format(err.message, n, depth), {file = err.file, line = n,
          column = depth + 1, cause = err})
      end
      seen[depth], opener = true, n
    end
  end
  return errors.new(err.kind, err.message .. "; check the indentation of the lines above it", {file = err.file,
    line = err.line, column = err.column, cause = err})
end

-- Is path the recipe's own YAML (NAME.yaml beside NAME.lua)?
local function own_yaml(path)
  local recipe = require("luagent.context").current().recipe
  return recipe ~= nil and (recipe:gsub("%.lua$", "") .. ".yaml") == path
end

-- A missing or broken file raises its yaml or io error, its message led by
-- the file and line of the recipe that asked (luagent.config tail-calls this).
function config.load(file, dir, settings)
  local path = file
  if dir and not file:match("^/") then path = dir .. "/" .. file end
  local watchlist = package.loaded["luagent.watchlist"] -- `luagent run --watch` watches it
  if watchlist then watchlist.file(path) end
  local cfg, err = require("luagent.yaml").load_file(path, {positions = true})
  if cfg == nil then
    if err.kind == "yaml" then err = with_indent_hint(err, path) end
    local caller = recipe_frame()
    if caller then err = errors.wrap(err, caller) end
    error(err, 0)
  end
  if type(cfg) == "table" and cfg.cache ~= nil then require("luagent.cache").from_config(cfg.cache, path) end
  if type(cfg) == "table" and settings then
    if own_yaml(path) then check_known(cfg, err, settings, file, nil) end
    check_shapes(cfg, settings, file, nil)
  end
  local merged = type(cfg) == "table" and config.merge(cfg, settings or {}) or cfg
  -- the recipe's skills are checked now, before its sandbox opens (luagent.skills)
  if type(merged) == "table" and own_yaml(path) and type(merged.skills) == "table" and #merged.skills > 0 then
    require("luagent.skills").load(merged.skills, file:match("[^/]+$") .. ": skills")
  end
  return merged
end

return config

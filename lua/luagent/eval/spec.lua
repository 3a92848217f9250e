-- luagent.eval.spec: an eval spec (YAML) read and checked whole before any run
-- starts.
--
-- spec.load(path, opts): lua/meta/eval.lua.
--
-- A bad spec is ONE error, kind "config", err.usage = true (exit 2), whose
-- message is "FILE:LINE: KEY: what is wrong (and what to do)" with err.file,
-- err.line, err.key: an unknown key, a missing recipe or check file, a
-- setting the recipe does not have (luagent.eval.settings: recipe foo.lua
-- has its settings in foo.yaml beside it), an empty list of inputs, a glob
-- that matches nothing, a value of the wrong type, a model setting that is
-- not one (a typo in the recipe's YAML model section, or in a variant's or a
-- --set's model settings over it: named by the file and line where it is
-- written). A bad --set is named "--set KEY=VALUE: ...".
--
-- The spec's keys (paths are relative to the spec's folder):
--   recipe       the recipe file (required)
--   name         names the eval's folder (default: the spec's file name)
--   variants     name -> settings map, applied like --set (default: one, "default")
--   inputs       list of settings maps ({input: a.csv}) or {glob: "data/*.csv", setting: input}
--                (default: one, "default"); a value naming a file or folder beside the spec
--                becomes its absolute path; an input is named by that file (without
--                extension), else by the file its `input` setting names, else input-N
--   epochs       runs of each variant x input (default 1)
--   concurrency  runs at once (default 2; --concurrency wins), or auto: as many as the
--                engines and the host allow, fewer while the engine slows (luagent.eval.width)
--   budget       {tokens, cost} for the whole eval: no run starts once it is spent
--   check        a Lua file returning function(run) -> {passed, score?, note?}
--                (luagent.checks has one-line checks for it)
--   grader       {model, rubric}: the model that luagent.checks.graded asks (model settings
--                over the recipe's model settings and --set's; never a variant's), and a
--                rubric: without a check, every run is graded by it
--   cache        true (default) | false | refresh
--
-- spec = {file, dir, name, recipe, defaults, variants = {{name, settings}}, inputs =
--   {{name, settings}}, epochs, concurrency, budget, check, check_file, cache = "on" |
--   "refresh" | nil, sets, grader = {model, rubric}}
local json = require "luagent.json"
local yaml = require "luagent.yaml"
local fs = require "luagent.fs"
local errors = require "luagent.errors"
local settings = require "luagent.eval.settings"
local config = require "luagent.config"
local model = require "luagent.model"
local checks = require "luagent.checks"
local options = require "luagent.options"

local spec = {}

local KEYS = {"budget", "cache", "check", "concurrency", "epochs", "grader", "inputs", "name", "recipe", "variants"}
local BUDGET_KEYS = {"cost", "tokens"}
local GLOB_KEYS = {"glob", "setting"}
local GRADER_KEYS = {"model", "rubric"}

local function is_map(v) return type(v) == "table" and not json.is_array(v) end

-- A deep copy of a map of settings ({} for anything else).
local function copy(v)
  if not is_map(v) then return {} end
  local out = {}
  for k, x in pairs(v) do out[k] = is_map(x) and copy(x) or x end
  return out
end
local function is_list(v) return type(v) == "table" and json.is_array(v) end

local function shown(v)
  if type(v) == "string" then return ("'%s'"):format(v) end
  if is_map(v) then return "a map" end
  if type(v) == "table" then return "a list" end
  return tostring(v)
end

-- Raises the one error of a bad spec; spec.load returns it.
local function fail(file, line, key, message)
  local where = line and ("%s:%d"):format(file, line) or file
  error(errors.new("config", ("%s: %s: %s"):format(where, key, message),
                   {file = file, line = line, key = key, usage = true, spec_error = true}), 0)
end

local function resolve(dir, path)
  if path:sub(1, 1) == "/" then return path end
  return dir .. "/" .. path
end

local function is_file(path)
  local st = fs.stat(path)
  return st ~= nil and st.type == "file"
end

-- A file or a folder (not the spec's own folder or its parent).
local function is_file_or_folder(value, path)
  local st = fs.stat(path)
  return st ~= nil and (st.type == "file" or (st.type == "directory" and not value:match("^%.%.?/*$")))
end

-- ---- the model settings, as a run sees them ----

-- A recipe gives its model section to luagent.model.from_or_scripted, which
-- refuses a key lua/meta does not declare (luagent.ModelConfig, and
-- luagent.RetryOptions under retry) in every run: the same check, made once
-- before any run starts.

-- The first key (sorted) the class does not declare, its did-you-mean and the declared keys | nil.
local function first_unknown(keys, class)
  local known, set = options.fields(class)
  if #known == 0 then return nil end -- (a build without the meta files: nothing to check against)
  local bad
  for k in pairs(keys) do
    if type(k) == "string" and not set[k] and (bad == nil or k < bad) then bad = k end
  end
  if bad then return bad, settings.suggest(bad, known), table.concat(known, ", ") end
end

-- The keys of m (and `also`'s: keys written with no value) -> the first
-- unknown one's path ("temprature", "retry.attempt") and the message | nil.
local function model_typo(m, also)
  if not is_map(m) then return nil end
  local keys = {}
  for k in pairs(m) do keys[k] = true end
  for k in pairs(also or {}) do keys[k] = true end
  local bad, hint, known = first_unknown(keys, "luagent.ModelConfig")
  if bad then
    return bad, ("not a setting of the model%s; the model settings are: %s; a field of the provider's request that "
      .. "is not an option here goes in model.extra"):format(hint, known)
  end
  if is_map(m.retry) then
    bad, hint, known = first_unknown(m.retry, "luagent.RetryOptions")
    if bad then
      return "retry." .. bad, ("not a setting of the retry policy%s; the retry settings are: %s"):format(hint, known)
    end
  end
end

local function split(key)
  local parts = {}
  for part in key:gmatch("[^.]+") do parts[#parts + 1] = part end
  return parts
end

-- The line where parts[i..] is written in map (a dotted key may stand for
-- several parts), or nil.
local function line_of(pos, map, parts, i)
  i = i or 1
  for k, p in pairs(pos[map] or {}) do
    local own = type(k) == "string" and split(k) or {}
    local same = #own > 0
    for n, part in ipairs(own) do same = same and parts[i + n - 1] == part end
    if same then
      local next_i = i + #own
      if next_i > #parts then return p.line end
      local line = is_map(map[k]) and line_of(pos, map[k], parts, next_i)
      if line then return line end
    end
  end
end

-- ---- the reader: one spec file, its positions, the recipe's defaults ----

local Reader = {}
Reader.__index = Reader

function Reader:fail(line, key, message) fail(self.file, line, key, message) end

-- The line of key in map (the map's own key line when key is not there).
function Reader:line(map, key, fallback)
  local here = self.pos[map]
  local p = here and here[key]
  return p and p.line or fallback or 1
end

function Reader:unknown_keys(map, allowed, prefix, fallback)
  local set = {}
  for _, k in ipairs(allowed) do set[k] = true end
  for k in pairs(self.pos[map] or {}) do
    if not set[k] then
      local key = prefix and (prefix .. "." .. tostring(k)) or tostring(k)
      self:fail(self:line(map, k, fallback), key, ("unknown key%s; %s has: %s"):format(
        settings.suggest(tostring(k), allowed), prefix or "a spec", table.concat(allowed, ", ")))
    end
  end
end

function Reader:integer(key, default)
  local v = self.root[key]
  if v == nil then return default end
  if math.type(v) ~= "integer" or v < 1 then
    self:fail(self:line(self.root, key), key, ("expected a whole number >= 1, got %s"):format(shown(v)))
  end
  return v
end

-- concurrency: a whole number >= 1, or auto (luagent.eval.width)
function Reader:concurrency()
  if self.root.concurrency == "auto" then return "auto" end
  local v = self.root.concurrency
  if v ~= nil and (math.type(v) ~= "integer" or v < 1) then
    self:fail(self:line(self.root, "concurrency"), "concurrency", ("expected a whole number >= 1 or auto, got %s")
      :format(shown(v)))
  end
  return v or 2
end

function Reader:string(key)
  local v = self.root[key]
  if v ~= nil and type(v) ~= "string" then
    self:fail(self:line(self.root, key), key, ("expected text, got %s"):format(shown(v)))
  end
  return v
end

function Reader:settings(map, line, key)
  return settings.check(map, self.pos, self.defaults, line, function(at, path, message)
    self:fail(at, key .. "." .. path, message)
  end)
end

-- The recipe's model section, then each variant's model settings over it,
-- then --set's: the first setting that is not the model's is the spec's error.
function Reader:model_settings(variants, sets, raw_sets)
  local d = self.defaults
  local base = is_map(d.value.model) and d.value.model or {}
  local path, message = model_typo(base, d.positions[base])
  if path then
    fail(d.file, line_of(d.positions, d.value, split("model." .. path)), "model." .. path, message)
  end
  for _, v in ipairs(variants) do
    path, message = model_typo(config.merge(copy(base), copy(v.settings.model)))
    if path then
      local raw = self.root.variants[v.name]
      self:fail(line_of(self.pos, raw, split("model." .. path)) or v.line, ("variants.%s.model.%s"):format(v.name, path),
        message)
    end
  end
  path, message = model_typo(config.merge(copy(base), copy(sets.model)))
  if path then
    local where = "--set"
    for _, kv in ipairs(raw_sets or {}) do
      local key = kv:match("^([^=]+)=") or kv
      if ("model." .. path .. "."):sub(1, #key + 1) == key .. "." then where = "--set " .. kv end
    end
    fail(where, nil, "model." .. path, message)
  end
end

-- ---- the parts of a spec ----

function Reader:recipe()
  local line = self:line(self.root, "recipe")
  local path = self:string("recipe")
  if not path or path == "" then
    self:fail(line, "recipe", "missing: name the recipe file, e.g. recipe: energy_anomaly.lua")
  end
  local full = resolve(self.dir, path)
  if not is_file(full) then
    self:fail(line, "recipe", ("no such file: %s (paths are relative to the spec's folder)"):format(full))
  end
  local defaults, err = settings.defaults(full)
  if not defaults then self:fail(line, "recipe", "its settings cannot be read: " .. err.message) end
  self.defaults = defaults
  return full
end

function Reader:check()
  local line = self:line(self.root, "check")
  local path = self:string("check")
  if path == nil then return nil end
  local full = resolve(self.dir, path)
  if not is_file(full) then
    self:fail(line, "check", ("no such file: %s (paths are relative to the spec's folder)"):format(full))
  end
  local chunk, err = loadfile(full, "t")
  if not chunk then self:fail(line, "check", err) end
  local ok, fn = pcall(chunk)
  if not ok then self:fail(line, "check", ("%s raised: %s"):format(path, errors.from(fn).message)) end
  if type(fn) ~= "function" then
    self:fail(line, "check", ("%s returned %s, not a function: end it with `return function(run) ... end`")
      :format(path, shown(fn)))
  end
  return fn, full
end

-- The grader: {model (settings for luagent.model.from), rubric | nil}. The
-- model is the recipe's model settings, --set's on top, the spec's on top of
-- those; one the spec names is made now, so a bad one stops the eval here.
function Reader:grader(sets)
  local g = self.root.grader
  local line = self:line(self.root, "grader")
  local defaults = self.defaults and self.defaults.value or {}
  local base = config.merge(config.merge({}, copy(defaults.model)), copy(sets.model))
  if g == nil then return {model = base} end
  if not is_map(g) then self:fail(line, "grader", ("expected a map {model, rubric}, got %s"):format(shown(g))) end
  self:unknown_keys(g, GRADER_KEYS, "grader", line)
  local m, rubric = g.model, g.rubric
  local mline = self:line(g, "model", line)
  if m ~= nil and not is_map(m) then
    self:fail(mline, "grader.model", ("expected a map of model settings, e.g. {provider: openai, model: gpt-4o-mini}, "
      .. "got %s"):format(shown(m)))
  end
  if rubric ~= nil and (type(rubric) ~= "string" or rubric:match("^%s*$")) then
    self:fail(self:line(g, "rubric", line), "grader.rubric", ("expected the rubric's text, got %s"):format(shown(rubric)))
  end
  local merged = config.merge(base, m or {})
  local made, err = model.from(merged)
  if not made then self:fail(mline, "grader.model", err.message) end
  return {model = merged, rubric = rubric}
end

function Reader:budget()
  local b = self.root.budget
  local line = self:line(self.root, "budget")
  if b == nil then return nil end
  if not is_map(b) then self:fail(line, "budget", ("expected a map {tokens, cost}, got %s"):format(shown(b))) end
  self:unknown_keys(b, BUDGET_KEYS, "budget", line)
  for _, k in ipairs(BUDGET_KEYS) do
    local v = b[k]
    if v ~= nil and (type(v) ~= "number" or v <= 0) then
      self:fail(self:line(b, k, line), "budget." .. k, ("expected a number > 0, got %s"):format(shown(v)))
    end
  end
  return {tokens = b.tokens, cost = b.cost}
end

function Reader:cache()
  local v = self.root.cache
  if v == nil or v == true then return "on" end
  if v == false then return nil end
  if v == "refresh" then return "refresh" end
  self:fail(self:line(self.root, "cache"), "cache", ("expected true, false or refresh, got %s"):format(shown(v)))
end

function Reader:name()
  local name = self:string("name") or self.file:match("([^/]+)$"):gsub("%.ya?ml$", ""):gsub("%.eval$", "")
  if not name:match("^[%w_][%w_.-]*$") then
    self:fail(self:line(self.root, "name"), "name", ("%s: use letters, digits, '_', '-' and '.' only"):format(
      shown(name)))
  end
  return name
end

-- A key present with no value (`variants:`), or a missing one: its value.
function Reader:present(key)
  return self.root[key] ~= nil or (self.pos[self.root] or {})[key] ~= nil
end

function Reader:variants()
  local line = self:line(self.root, "variants")
  local v = self.root.variants
  if not self:present("variants") then return {{name = "default", settings = {}}} end
  if not is_map(v) or next(self.pos[v] or {}) == nil then
    self:fail(line, "variants", ("expected a map of name -> settings with at least one variant, got %s")
      :format(v == nil and "nothing" or is_map(v) and "an empty map" or shown(v)))
  end
  local list = {}
  for name, p in pairs(self.pos[v]) do
    local key = "variants." .. tostring(name)
    if type(name) ~= "string" or not name:match("^[%w_][%w_.-]*$") then
      self:fail(p.line, key, "a variant's name names its folder: use letters, digits, '_', '-' and '.' only")
    end
    local map = v[name]
    if map ~= nil and not is_map(map) then
      self:fail(p.line, key, ("expected a map of settings (like --set, e.g. model.temperature: 0.5), got %s")
        :format(shown(map)))
    end
    list[#list + 1] = {name = name, line = p.line, col = p.col, settings = map and self:settings(map, p.line, key) or {}}
  end
  table.sort(list, function(a, b) return a.line < b.line or (a.line == b.line and a.col < b.col) end)
  return list
end

-- The files a glob (relative to the spec's folder) matches, sorted.
local function glob(dir, pattern)
  local first = pattern:find("[%*%?]")
  if not first then return is_file(resolve(dir, pattern)) and {resolve(dir, pattern)} or {} end
  local prefix = pattern:sub(1, first - 1):match("^(.*)/") or ""
  local rest = prefix == "" and pattern or pattern:sub(#prefix + 2)
  local root = (prefix == "" and pattern:sub(1, 1) == "/") and "/" or resolve(dir, prefix == "" and "." or prefix)
  local walked = fs.walk(root) or {}
  local lua_pattern = require("luagent.manifest").glob_pattern(rest)
  local out = {}
  for _, e in ipairs(walked) do
    if e.type == "file" and e.path:match(lua_pattern) then out[#out + 1] = (root:gsub("/%.?$", "")) .. "/" .. e.path end
  end
  table.sort(out)
  return out
end

local function stem(path) return ((path:gsub("/+$", "")):match("([^/]*)$"):gsub("(.)%.[^.]*$", "%1")) end

function Reader:glob_input(entry, line, key)
  self:unknown_keys(entry, GLOB_KEYS, key, line)
  local pattern, setting = entry.glob, entry.setting
  if type(pattern) ~= "string" or pattern == "" then
    self:fail(self:line(entry, "glob", line), key .. ".glob", ("expected a pattern like 'data/*.csv', got %s")
      :format(shown(pattern)))
  end
  if type(setting) ~= "string" or setting == "" then
    self:fail(self:line(entry, "setting", line), key .. ".setting",
      ("expected the setting each file is given as (e.g. setting: input), got %s"):format(shown(setting)))
  end
  local files = glob(self.dir, pattern)
  if #files == 0 then
    self:fail(self:line(entry, "glob", line), key .. ".glob", ("'%s' matches no file in %s"):format(pattern, self.dir))
  end
  local out = {}
  for _, f in ipairs(files) do
    local map = {[setting] = f}
    local checked = settings.check(map, nil, self.defaults, self:line(entry, "setting", line), function(at, path, msg)
      self:fail(at, key .. ".setting", ("%s: %s"):format(path, msg))
    end)
    out[#out + 1] = {name = stem(f), settings = checked}
  end
  return out
end

function Reader:input(entry, line, key)
  local checked = self:settings(entry, line, key)
  local name
  -- a value naming a file or folder beside the spec is given as its absolute path
  settings.leaves(checked, function(_, value, parent, k)
    if type(value) == "string" and value ~= "" and is_file_or_folder(value, resolve(self.dir, value)) then
      parent[k] = resolve(self.dir, value)
      name = name or stem(value)
    end
  end)
  -- else the file its input setting names (beside the recipe, say)
  if not name and type(checked.input) == "string" and stem(checked.input) ~= "" then name = stem(checked.input) end
  return {name = name, settings = checked}
end

function Reader:inputs()
  local line = self:line(self.root, "inputs")
  local v = self.root.inputs
  if not self:present("inputs") then return {{name = "default", settings = {}}} end
  if not is_list(v) or #v == 0 then
    self:fail(line, "inputs", ("expected a list with at least one input, e.g. - {input: data/a.csv} or "
      .. "- {glob: 'data/*.csv', setting: input}; got %s"):format(v == nil and "nothing"
      or is_list(v) and "an empty list" or shown(v)))
  end
  local list = {}
  for i, entry in ipairs(v) do
    local key, at = ("inputs[%d]"):format(i), self:line(v, i, line)
    if not is_map(entry) then
      self:fail(at, key, ("expected a map like {input: a.csv} or {glob: 'data/*.csv', setting: input}, got %s")
        :format(shown(entry)))
    end
    if entry.glob ~= nil or entry.setting ~= nil then
      for _, one in ipairs(self:glob_input(entry, at, key)) do list[#list + 1] = one end
    else
      list[#list + 1] = self:input(entry, at, key)
    end
  end
  -- names: the file's, else input-N; each one once (folder names)
  local seen = {}
  for i, input in ipairs(list) do
    local name = (input.name or ("input-" .. i)):gsub("[^%w_.-]", "_")
    if seen[name] then name = name .. "-" .. i end
    seen[name] = true
    input.name = name
  end
  return list
end

-- --set key=value (on top of every run), checked like a variant's settings.
local function command_line_settings(raw, defaults)
  local out = {}
  for _, kv in ipairs(raw or {}) do
    local key = kv:match("^([^=]+)=") or kv
    local ok, parsed = pcall(config.parse_settings, {kv})
    if not ok then fail("--set " .. kv, nil, key, errors.from(parsed).message) end
    local checked = settings.check(parsed, nil, defaults, nil, function(_, path, message)
      fail("--set " .. kv, nil, path, message)
    end)
    config.merge(out, checked)
  end
  return out
end

function spec.load(path, opts)
  opts = opts or {}
  local ok, result = pcall(function()
    local root, pos = yaml.load_file(path, {positions = true})
    if root == nil then error(errors.new("config", pos.message, {file = path, usage = true}), 0) end
    local dir = fs.realpath(path:match("^(.*)/[^/]*$") or ".") or "."
    local r = setmetatable({file = path, dir = dir, root = root, pos = pos}, Reader)
    if not is_map(root) then fail(path, 1, "(top)", "a spec is a map of keys: " .. table.concat(KEYS, ", ")) end
    r:unknown_keys(root, KEYS)
    local s = {file = path, dir = dir}
    s.recipe = r:recipe()
    s.defaults = r.defaults
    s.name = r:name()
    s.epochs = r:integer("epochs", 1)
    s.concurrency = opts.concurrency or r:concurrency()
    s.budget = r:budget()
    s.cache = r:cache()
    s.check, s.check_file = r:check()
    s.variants = r:variants()
    s.inputs = r:inputs()
    s.sets = command_line_settings(opts.sets, r.defaults)
    r:model_settings(s.variants, s.sets, opts.sets)
    s.grader = r:grader(s.sets)
    if not s.check and s.grader.rubric then s.check = checks.graded end
    return s
  end)
  if ok then return result end
  if errors.is(result) and result.usage then return nil, result end
  error(result, 0)
end

return spec

-- luagent: the global table every recipe sees.
--
--   luagent.spawn(fn, ...) -> task       luagent.sleep(seconds)
--   luagent.wait_all(tasks) -> results, errors
--   luagent.map(list, fn, {concurrency = 8}) -> results, errors
--   luagent.settings   (--set key=value, dotted keys nest, values typed like YAML)
--   luagent.args       (arguments after the recipe)
--   luagent.config(file) -> the YAML beside the recipe, with --set applied on top
--   luagent.http / json / yaml / fs / retry / model / sandbox / agent / tools / trace
--     (loaded on first use, so start-up stays fast)
local loop = require "luagent.loop"
local info = require "luagent.host"

local luagent = {
  version = info.version,
  spawn = loop.spawn,
  sleep = loop.sleep,
  yield = loop.yield,
  now = loop.now,
  args = info.args,
  recipe = info.script,
}

if info.script then
  luagent.recipe_dir = info.script:match("^(.*)/[^/]*$") or "."
end

local LAZY = {
  http = true, json = true, yaml = true, fs = true, sys = true, engine_io = true, engine = true, tar = true,
  errors = true,
  retry = true, model = true, sandbox = true, agent = true, tools = true, trace = true,
  manifest = true, outputs = true, events = true, dates = true,
}

setmetatable(luagent, {
  __index = function(t, name)
    if not LAZY[name] then return nil end
    local module = require("luagent." .. name)
    rawset(t, name, module)
    return module
  end,
})

-- Waits for every task. results[i] is task i's first result (nil if it
-- failed); errors is nil when all succeeded, else errors[i] = task i's error.
function luagent.wait_all(tasks)
  local results, errors = {}, nil
  for i, task in ipairs(tasks) do
    local value, err = task:wait()
    if value == nil and err ~= nil then
      errors = errors or {}
      errors[i] = err
    else
      results[i] = value
    end
  end
  return results, errors
end

local function is_cancel(err)
  return type(err) == "table" and err.kind == "cancelled"
end

-- Calls fn(item, i) for every item, at most `concurrency` at once.
-- Returns results (in list order) and errors (nil when none failed).
function luagent.map(list, fn, opts)
  local n = #list
  local concurrency = math.max(1, math.min((opts and opts.concurrency) or 8, n))
  local results, errors = {}, nil
  local next_index = 0
  local function worker()
    while true do
      next_index = next_index + 1
      local i = next_index
      if i > n then return end
      local ok, value = pcall(fn, list[i], i)
      if ok then
        results[i] = value
      elseif is_cancel(value) then
        error(value, 0)
      else
        errors = errors or {}
        errors[i] = value
      end
    end
  end
  local workers = {}
  for w = 1, concurrency do workers[w] = loop.spawn(worker) end
  for _, w in ipairs(workers) do
    local ok, err = w:wait()
    if ok == nil and err ~= nil then error(err, 0) end
  end
  return results, errors
end

-- "a.b=3" settings from the command line, typed like YAML scalars.
local function parse_settings(raw)
  local yaml = require "luagent.yaml"
  local settings = {}
  for _, kv in ipairs(raw) do
    local key, text = kv:match("^([^=]+)=(.*)$")
    local value
    if text:match("^%s*[%[{]") then
      local parsed, err = yaml.load(text, "--set " .. key)
      if parsed == nil then error(("--set %s: %s"):format(key, err.message), 0) end
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
    if type(value) == "string" and require("luagent.secrets").is_credential_name(parts[#parts]) then
      require("luagent.secrets").add(value, "--set " .. key)
    end
  end
  return settings
end

luagent.settings = #info.settings > 0 and parse_settings(info.settings) or {}

local function merge(base, over)
  for k, v in pairs(over) do
    if type(v) == "table" and type(base[k]) == "table" and not (getmetatable(v) or getmetatable(base[k])) then
      merge(base[k], v)
    else
      base[k] = v
    end
  end
  return base
end

-- Loads a YAML file (relative to the recipe's folder) with --set applied on
-- top. A missing or broken file stops the recipe with the file, line and column.
function luagent.config(file)
  local path = file
  if luagent.recipe_dir and not file:match("^/") then path = luagent.recipe_dir .. "/" .. file end
  local cfg, err = require("luagent.yaml").load_file(path)
  if cfg == nil then error(err.message, 2) end
  return merge(cfg, luagent.settings)
end

luagent.merge = merge

-- Functions run once when the run ends — normally, on an error or on Ctrl-C —
-- after every task has finished, newest first; `last = true` puts one after
-- all the others (the trace, which records what the others do). They get how
-- the run ended ("ok", "failed", "interrupted") and the error message, and
-- may wait (close sandboxes, flush traces).
local exit_hooks, last_hooks = {}, {}

function luagent.at_exit(fn, opts)
  if opts and opts.last then last_hooks[#last_hooks + 1] = fn else exit_hooks[#exit_hooks + 1] = fn end
end

-- Called by the host; each hook runs even if an earlier one failed.
function luagent._run_exit_hooks(status, message)
  local order = {}
  for i = #exit_hooks, 1, -1 do order[#order + 1] = exit_hooks[i] end
  for i = #last_hooks, 1, -1 do order[#order + 1] = last_hooks[i] end
  exit_hooks, last_hooks = {}, {}
  local failures = {}
  for _, hook in ipairs(order) do
    local ok, err = pcall(hook, status, message)
    if not ok then failures[#failures + 1] = tostring(type(err) == "table" and err.message or err) end
  end
  if #failures > 0 then error("while finishing the run: " .. table.concat(failures, "; "), 0) end
end

-- This run's id and folder (runs/<run-id>/...), made on first use.
function luagent.run_id() return require("luagent.trace").run_id() end
function luagent.run_dir(sub) return require("luagent.trace").run_dir(sub) end

-- The first event of a recipe run (a model call, an agent, a sandbox) starts
-- its trace and terminal view; a recipe that uses none of them writes none.
function luagent._on_first_event()
  if not info.script then return end
  require("luagent.trace").start{quiet = info.quiet, json = info.json, record = info.record, replay = info.replay,
                                 settings = luagent.settings}
end

return luagent

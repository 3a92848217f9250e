-- luagent meta [DIR]: editor help for a recipe folder. Writes the LuaLS
-- annotation files (lua/meta/*.lua, embedded in the binary) into
-- DIR/.luagent/meta/ and points DIR/.luarc.json at them, so an editor with
-- the Lua language server completes and type-checks a recipe.
--
-- An existing .luarc.json is never replaced: the missing entries are merged
-- into it (and said), or, when it cannot be read as JSON (comments), it is
-- left alone and what to add is printed (exit status 1).
local errors = require "luagent.errors"
local fs = require "luagent.fs"
local json = require "luagent.json"
local sys = require "luagent.sys"

local cli = {}

-- The annotation files, as embedded (tests/lua/meta_spec.lua checks this
-- list against lua/meta/).
cli.FILES = {
  "luagent.lua", "errors.lua", "sandbox.lua", "model.lua", "agent.lua", "tools.lua", "retry.lua",
  "trace.lua", "outputs.lua", "json.lua", "yaml.lua", "fs.lua", "http.lua", "diff.lua",
  "cache.lua", "eval.lua", "checks.lua", "schema.lua", "mcp.lua", "script.lua",
  -- the low-level modules, one file each
  "sched.lua", "sys.lua", "events.lua", "run.lua", "manifest.lua", "tar.lua", "engine_client.lua", "engine_stream.lua",
  "dates.lua", "process.lua", "context.lua", "http_head.lua", "kube_config.lua", "kube_client.lua",
  -- the contracts behind a box, for backends
  "sandbox_backend.lua",
}

cli.LIBRARY = ".luagent/meta"

local USAGE = [[
usage: luagent meta [DIR]
  writes LuaLS annotations for the luagent API into DIR/.luagent/meta/ and a
  .luarc.json in DIR pointing at them (DIR: the current folder by default)
]]

-- The settings luagent needs, as {dotted key, wanted value, is a list entry}.
local WANTED = {
  {"runtime.version", "Lua 5.4", false},
  {"workspace.library", cli.LIBRARY, true},
  {"diagnostics.globals", "luagent", true},
}

-- What a fresh .luarc.json holds (and what to add to one that cannot be merged).
local function fresh_config()
  return {
    runtime = {version = "Lua 5.4"},
    workspace = {library = json.array{cli.LIBRARY}},
    diagnostics = {globals = json.array{"luagent"}},
  }
end

-- Where a setting lives in a .luarc.json: nested ({"workspace": {"library": ...}}),
-- or flat ("workspace.library", "Lua.workspace.library"). Returns the table
-- holding it and its key there (the nested form when none exists yet).
local function locate(config, dotted)
  for _, flat in ipairs({dotted, "Lua." .. dotted}) do
    if config[flat] ~= nil then return config, flat end
  end
  local section, key = dotted:match("^([^.]+)%.(.+)$")
  if config[section] == nil then config[section] = {} end
  if type(config[section]) ~= "table" then return nil end
  return config[section], key
end

-- Adds what luagent needs to a decoded .luarc.json. Returns the changes
-- made ("added ..." lines), or nil and why it cannot.
function cli.merge(config)
  local changes = {}
  for _, want in ipairs(WANTED) do
    local dotted, value, is_list = want[1], want[2], want[3]
    local holder, key = locate(config, dotted)
    if not holder then return nil, dotted .. " is not where a setting can be added" end
    local current = holder[key]
    if is_list then
      if current == nil then
        holder[key] = json.array{value}
        changes[#changes + 1] = ('%s = ["%s"]'):format(dotted, value)
      elseif type(current) ~= "table" then
        return nil, dotted .. " is not a list"
      else
        local found = false
        for _, item in ipairs(current) do found = found or item == value end
        if not found then
          current[#current + 1] = value
          changes[#changes + 1] = ('"%s" added to %s'):format(value, dotted)
        end
      end
    elseif current == nil then
      holder[key] = value
      changes[#changes + 1] = ('%s = "%s"'):format(dotted, value)
    elseif current ~= value then
      io.stderr:write(('luagent meta: note: .luarc.json sets %s to "%s"; luagent runs %s\n')
        :format(dotted, tostring(current), value))
    end
  end
  return changes
end

-- "dir/name", or "name" in the current folder.
local function join(dir, name)
  return dir == "." and name or dir .. "/" .. name
end

local function write_annotations(dir)
  local target = join(dir, cli.LIBRARY)
  local ok, err = fs.mkdir(target)
  if not ok then return nil, err end
  for _, name in ipairs(cli.FILES) do
    local text = sys.asset("lua/meta/" .. name)
    if not text then return errors.fail("not_found", "lua/meta/" .. name .. " is not embedded in this luagent") end
    ok, err = fs.write(target .. "/" .. name, text)
    if not ok then return nil, err end
  end
  return target
end

local function save(path, config, said)
  local ok, err = fs.write(path, json.encode(config, {indent = 2}) .. "\n")
  if not ok then
    io.stderr:write("luagent meta: ", err.message, "\n")
    return 1
  end
  print(said)
  return 0
end

-- Writes or merges DIR/.luarc.json; returns the exit status.
local function configure(dir)
  local path = join(dir, ".luarc.json")
  local text = fs.read(path)
  if not text then
    return save(path, fresh_config(), "wrote " .. path)
  end
  local config = json.decode(text)
  local changes, why
  if type(config) == "table" and not json.is_array(config) then
    changes, why = cli.merge(config)
  else
    why = "it is not a JSON object (comments are not read here)"
  end
  if not changes then
    io.stderr:write(("luagent meta: %s is left as it is: %s. Add these settings to it:\n%s\n")
      :format(path, why, json.encode(fresh_config(), {indent = 2})))
    return 1
  end
  if #changes == 0 then
    print(path .. " already points at the annotations")
    return 0
  end
  return save(path, config, ("updated %s (its other settings kept): %s"):format(path, table.concat(changes, "; ")))
end

function cli.main(args)
  if args[1] == "-h" or args[1] == "--help" or args[1] == "help" then
    io.write(USAGE)
    return 0
  end
  if #args > 1 or (args[1] and args[1]:match("^%-")) then
    io.stderr:write(USAGE)
    return 2
  end
  local dir = args[1] or "."
  local target, err = write_annotations(dir)
  if not target then
    io.stderr:write("luagent meta: cannot write the annotations: ", err.message, "\n")
    return 1
  end
  print(("wrote %d annotation files to %s"):format(#cli.FILES, target))
  return configure(dir)
end

return cli

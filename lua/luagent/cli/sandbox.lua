-- luagent sandbox build [--offline | --online] [--force] | ls | prune [--all]
-- Each command returns its exit status, or nil and a luagent.errors value
-- that main prints (a usage error exits 2, any other 1).
local errors = require "luagent.errors"
local engine = require "luagent.engine"
local leftovers = require "luagent.sandbox.leftovers"
local image = require "luagent.image"

local cli = {}

local USAGE = [[
usage: luagent sandbox build [--offline | --online] [--force]   build luagent-sandbox:latest (skipped when up to date)
       luagent sandbox ls                                        list luagent sandboxes
       luagent sandbox prune [--all]                             remove those whose run is gone (--all: every one)]]

local function connect()
  local client, err = engine.connect()
  if not client then return nil, errors.from(err) end
  return client
end

-- The --flags after the command, each one of `allowed`.
local function flags(args, allowed)
  local set = {}
  for i = 2, #args do
    local name = args[i]:match("^%-%-([%w-]+)$")
    if not name or not allowed[name] then
      return errors.fail("config", ("unknown option '%s' for 'sandbox %s'"):format(args[i], args[1]), {usage = true})
    end
    set[name] = true
  end
  return set
end

local function build(args)
  local f, err = flags(args, {offline = true, online = true, force = true})
  if not f then return nil, err end
  local client
  client, err = connect()
  if not client then return nil, err end
  local result
  result, err = image.build(client, {offline = f.offline, online = f.online, force = f.force,
    say = function(line) print("  " .. line) end})
  if not result then return nil, errors.wrap(err, "building the sandbox image failed") end
  print(("%s: %s (recipe %s)"):format(image.REF, result, image.recipe_hash()))
  return 0
end

local function age(created)
  local seconds = os.time() - (created or os.time())
  if seconds < 120 then return seconds .. "s" end
  if seconds < 7200 then return seconds // 60 .. "m" end
  return seconds // 3600 .. "h"
end

local function ls(args)
  local ok, err = flags(args, {})
  if not ok then return nil, err end
  local client
  client, err = connect()
  if not client then return nil, err end
  local list
  list, err = leftovers.list(client)
  if not list then return nil, err end
  if #list == 0 then
    print("no luagent sandboxes")
    return 0
  end
  print(("%-14s %-22s %-8s %-8s %-12s %s"):format("SESSION", "NAME", "AGE", "OWNER", "STATE", "IMAGE"))
  for _, c in ipairs(list) do
    print(("%-14s %-22s %-8s %-8s %-12s %s"):format(c.session or "?", c.name, age(c.created),
      c.alive and tostring(c.owner_pid) or "gone", c.state or "?", c.image or "?"))
  end
  return 0
end

local function prune(args)
  local f, err = flags(args, {all = true})
  if not f then return nil, err end
  local client
  client, err = connect()
  if not client then return nil, err end
  local removed
  removed, err = leftovers.prune(client, {all = f.all})
  if not removed then return nil, err end
  for _, c in ipairs(removed) do print("removed " .. c.name) end
  print(("%d sandbox%s removed"):format(#removed, #removed == 1 and "" or "es"))
  return 0
end

function cli.main(args)
  local commands = {build = build, ls = ls, prune = prune}
  local command = commands[args[1] or ""]
  if not command then
    io.stderr:write(USAGE, "\n")
    return 2
  end
  local status, err = command(args)
  if status then return status end
  io.stderr:write("luagent: ", err.message, "\n")
  if err.usage then
    io.stderr:write(USAGE, "\n")
    return 2
  end
  return 1
end

return cli

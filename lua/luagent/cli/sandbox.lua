-- luagent sandbox build [--offline | --online] [--force] | ls | prune [--all]
local engine = require "luagent.engine"
local sandbox = require "luagent.sandbox"
local image = require "luagent.image"

local cli = {}

local USAGE = [[
usage: luagent sandbox build [--offline | --online] [--force]   build luagent-sandbox:latest (skipped when up to date)
       luagent sandbox ls                                        list luagent sandboxes
       luagent sandbox prune [--all]                             remove those whose run is gone (--all: every one)]]

local function connect()
  local client, err = engine.connect()
  if not client then io.stderr:write("luagent: ", err.message, "\n") end
  return client
end

local function flags(args, allowed)
  local set = {}
  for i = 2, #args do
    local name = args[i]:match("^%-%-([%w-]+)$")
    if not name or not allowed[name] then
      io.stderr:write(("luagent: unknown option '%s' for 'sandbox %s'\n%s\n"):format(args[i], args[1], USAGE))
      return nil
    end
    set[name] = true
  end
  return set
end

local function build(args)
  local f = flags(args, {offline = true, online = true, force = true})
  if not f then return 2 end
  local client = connect()
  if not client then return 1 end
  local result, err = image.build(client, {offline = f.offline, online = f.online, force = f.force,
    say = function(line) print("  " .. line) end})
  if not result then
    io.stderr:write("luagent: building the sandbox image failed: ", err.message, "\n")
    return 1
  end
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
  if not flags(args, {}) then return 2 end
  local client = connect()
  if not client then return 1 end
  local list, err = sandbox.list(client)
  if not list then
    io.stderr:write("luagent: ", err.message, "\n")
    return 1
  end
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
  local f = flags(args, {all = true})
  if not f then return 2 end
  local client = connect()
  if not client then return 1 end
  local removed, err = sandbox.prune(client, {all = f.all})
  if not removed then
    io.stderr:write("luagent: ", err.message, "\n")
    return 1
  end
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
  return command(args)
end

return cli

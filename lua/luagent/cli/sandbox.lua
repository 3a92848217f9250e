-- luagent sandbox build [--offline | --online] [--force] | ls | prune [--all] [--force]
-- Each command returns its exit status, or nil and a luagent.errors value
-- that main prints (a usage error exits 2, any other 1).
--
-- ls shows each sandbox's outputs (a session opened with save = {...}):
-- saved, unsaved (its run died before bringing them home), lost (kept in
-- memory, and the container stopped). prune first rescues unsaved outputs
-- into their run's folder (luagent.sandbox.leftovers), and asks on the
-- terminal (y/N) before removing a sandbox whose outputs could not be
-- rescued (or, with --all, whose run still goes); --force removes without
-- asking, and with no terminal to ask on it refuses: exit 1, saying so.
local errors = require "luagent.errors"
local engine = require "luagent.engine"
local leftovers = require "luagent.sandbox.leftovers"
local image = require "luagent.image"

local cli = {}

local USAGE = [[
usage: luagent sandbox build [--offline | --online] [--force]   build luagent-sandbox:latest (skipped when up to date)
       luagent sandbox ls                                        list luagent sandboxes
       luagent sandbox prune [--all] [--force]                   remove those whose run is gone, after rescuing their
                                                                 outputs (--all: every one; --force: without asking)]]

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

-- What ls says of a sandbox's outputs.
local function outputs_of(c)
  if c.outputs == "none" then return "-" end
  if c.outputs == "unsaved" and c.alive then return "not yet" end -- its run is still going
  return c.outputs
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
  local sessions, unsaved = {}, 0
  for _, c in ipairs(list) do
    if not c.rescue_of then sessions[#sessions + 1] = c end
    if not c.alive and c.outputs == "unsaved" then unsaved = unsaved + 1 end
  end
  if #sessions == 0 then
    print("no luagent sandboxes")
    return 0
  end
  local row = "%-14s %-22s %-8s %-8s %-12s %-8s %s"
  print(row:format("SESSION", "NAME", "AGE", "OWNER", "STATE", "OUTPUTS", "IMAGE"))
  for _, c in ipairs(sessions) do
    print(row:format(c.session or "?", c.name, age(c.created), c.alive and tostring(c.owner_pid) or "gone",
      c.state or "?", outputs_of(c), c.image or "?"))
  end
  if unsaved > 0 then
    print(("%d sandbox%s left by runs that are gone hold%s unsaved outputs: 'luagent sandbox prune' rescues them "
      .. "into their run folders"):format(unsaved, unsaved == 1 and "" or "es", unsaved == 1 and "s" or ""))
  end
  return 0
end

-- The person at the terminal says yes to question; nil when there is no
-- terminal (/dev/tty cannot be opened: no controlling terminal).
local function ask(question)
  local input = io.open("/dev/tty", "r")
  local output = input and io.open("/dev/tty", "w")
  if not output then
    if input then input:close() end
    return nil
  end
  output:write(question, " [y/N] ")
  output:flush()
  local answer = input:read("l") or ""
  input:close()
  output:close()
  return answer:match("^%s*[yY]") ~= nil
end

local function prune(args)
  local f, err = flags(args, {all = true, force = true})
  if not f then return nil, err end
  local client
  client, err = connect()
  if not client then return nil, err end
  local refused = 0
  local function confirm(c, why)
    if f.force then return true end
    local yes = ask(("sandbox %s holds unsaved outputs of run %s (%s -> %s), and %s. Remove it, and lose them?")
      :format(c.session or c.name, c.run or "?", c.save and c.save.from or "?", c.save and c.save.to or "?", why))
    if yes == nil then refused = refused + 1 end
    return yes
  end
  local removed, kept = leftovers.prune(client, {all = f.all, confirm = confirm, say = print})
  if not removed then return nil, kept end
  for _, c in ipairs(removed) do print("removed " .. c.name) end
  for _, c in ipairs(kept) do print(("kept %s: %s"):format(c.name, c.why)) end
  print(("%d sandbox%s removed"):format(#removed, #removed == 1 and "" or "es"))
  if refused > 0 then
    return nil, errors.new("refused", ("%d sandbox%s hold%s unsaved outputs that could not be rescued, and there is "
      .. "no terminal to ask on: nothing of them was removed; rerun with --force to remove them (and lose those "
      .. "outputs)"):format(refused, refused == 1 and "" or "es", refused == 1 and "s" or ""))
  end
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

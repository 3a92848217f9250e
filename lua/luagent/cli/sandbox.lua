-- luagent sandbox build [--offline | --online] [--force] | ls | prune [--all] [--force]
-- Each command returns its exit status, or nil and a luagent.errors value
-- that main prints (a usage error exits 2, any other 1).
--
-- ls shows each sandbox's outputs (a session opened with save = {...}):
-- saved, unsaved (its run died before bringing them home), mirrored (kept
-- in memory, and the container stopped: only what the outputs mirror brought
-- home during the run is left), lost (the same, with nothing brought home). prune first rescues unsaved outputs
-- into their run's folder (luagent.sandbox.leftovers), and asks on the
-- terminal (y/N) before removing a sandbox whose outputs could not be
-- rescued (or, with --all, whose run still goes); --force removes without
-- asking, and with no terminal to ask on it refuses: exit 1, saying so.
--
-- Every command goes over every engine sessions are made on (LUAGENT_ENGINES,
-- else the default one: luagent.sandbox.engine_set). ls shows each engine
-- (address, whether it answers, its Docker version, whether the sandbox
-- image is there, the luagent sandboxes running on it, its capacity, its runtimes) and
-- then the sandboxes of all, with their engine; prune prunes each engine
-- that answers and says which do not (exit 1); build makes the image where
-- it is missing or old: the first engine that needs it builds it (as with
-- one engine), the others get a copy from one that has it through the engine
-- API (luagent.image.copy), never a second build.
local errors = require "luagent.errors"
local engines = require "luagent.sandbox.engine_set"
local leftovers = require "luagent.sandbox.leftovers"
local image = require "luagent.image"

local cli = {}

local USAGE = [[
usage: luagent sandbox build [--offline | --online] [--force]   build luagent-sandbox:latest (skipped when up to date)
       luagent sandbox ls                                        list luagent sandboxes
       luagent sandbox prune [--all] [--force]                   remove those whose run is gone, after rescuing their
                                                                 outputs (--all: every one; --force: without asking)]]

-- The configured engines' status rows (luagent.sandbox.engine_set.status);
-- nil, err when none answers (the error of the only one, with one).
local function engine_rows()
  local set, err = engines.configured()
  if not set then return nil, err end
  local rows = engines.status(set, image.REF)
  for _, row in ipairs(rows) do
    if row.ok then return rows end
  end
  if #rows == 1 then return nil, errors.from(rows[1].err) end
  local why = {}
  for i, row in ipairs(rows) do why[i] = errors.from(row.err).message end
  return errors.fail("docker_unreachable", "no Docker engine of LUAGENT_ENGINES answers: " .. table.concat(why, "; "))
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

-- Builds on the first engine that needs it, or copies from one that has
-- an up-to-date image; returns what was done there | nil, err.
local function build_on(row, source, f)
  if source then
    print(("  copying %s from %s to %s"):format(image.REF, source.address, row.address))
    local bytes, err = image.copy(source.client, row.client, image.REF)
    if not bytes then return nil, err end
    return ("copied from %s (%.0f MB)"):format(source.address, bytes / 1e6)
  end
  return image.build(row.client, {offline = f.offline, online = f.online, force = f.force,
    say = function(line) print("  " .. line) end})
end

local function build(args)
  local f, err = flags(args, {offline = true, online = true, force = true})
  if not f then return nil, err end
  local rows
  rows, err = engine_rows()
  if not rows then return nil, err end
  local source, failed -- source: an engine whose image is up to date
  for _, row in ipairs(rows) do
    if not f.force and row.ok and row.image and row.image.up_to_date then source = source or row end
  end
  for _, row in ipairs(rows) do
    local result
    if not row.ok then
      err = errors.from(row.err)
    elseif row.image and row.image.up_to_date and not f.force then
      result = "up to date"
    else
      result, err = build_on(row, source ~= row and source or nil, f)
      if result then source = source or row end
    end
    if not result then
      local wrapped = errors.wrap(err, "building the sandbox image failed"
        .. (#rows > 1 and " on the Docker engine at " .. row.address or ""))
      failed = failed or wrapped
      if #rows > 1 then io.stderr:write("luagent: ", wrapped.message, "\n") end
    elseif #rows > 1 then
      print(("%s on %s: %s (recipe %s)"):format(image.REF, row.address, result, image.recipe_hash()))
    else
      print(("%s: %s (recipe %s)"):format(image.REF, result, image.recipe_hash()))
    end
  end
  if failed then return nil, failed end
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

-- One line per engine: what ls says of it.
local function engine_table(rows)
  local wide, version = #"ENGINE", #"DOCKER"
  for _, row in ipairs(rows) do
    wide, version = math.max(wide, #row.address), math.max(version, #(row.version or ""))
  end
  local row_format = "%-" .. wide .. "s %-5s %-" .. version .. "s %-8s %-9s %-9s %s"
  print(row_format:format("ENGINE", "STATE", "DOCKER", "IMAGE", "SESSIONS", "CAPACITY", "RUNTIMES"))
  for _, row in ipairs(rows) do
    local img = row.image and (row.image.present and (row.image.up_to_date and "present" or "old") or "missing") or "-"
    print(row_format:format(row.address, row.ok and "up" or "down", row.version or "-", img,
      row.ok and tostring(row.sessions) or "-", row.capacity and tostring(row.capacity) or "-",
      row.ok and engines.runtimes_text(row) or "-"))
  end
  for _, row in ipairs(rows) do
    if not row.ok then print(errors.from(row.err).message) end
  end
  print()
end

local function ls(args)
  local ok, err = flags(args, {})
  if not ok then return nil, err end
  local rows
  rows, err = engine_rows()
  if not rows then return nil, err end
  engine_table(rows)
  local sessions, unsaved = {}, 0
  for _, row in ipairs(rows) do
    for _, c in ipairs(row.sandboxes or {}) do
      if not c.rescue_of then
        c.engine = row.address
        sessions[#sessions + 1] = c
      end
      if not c.alive and c.outputs == "unsaved" then unsaved = unsaved + 1 end
    end
  end
  if #sessions == 0 then
    print("no luagent sandboxes")
    return 0
  end
  table.sort(sessions, function(a, b) return (a.created or 0) < (b.created or 0) end)
  local row = "%-14s %-22s %-8s %-8s %-12s %-8s %-24s %s"
  print(row:format("SESSION", "NAME", "AGE", "OWNER", "STATE", "OUTPUTS", "IMAGE", "ENGINE"))
  for _, c in ipairs(sessions) do
    print(row:format(c.session or "?", c.name, age(c.created), c.alive and tostring(c.owner_pid) or "gone",
      c.state or "?", outputs_of(c), c.image or "?", c.engine))
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
  local rows
  rows, err = engine_rows()
  if not rows then return nil, err end
  local refused = 0
  local function confirm(c, why)
    if f.force then return true end
    local yes = ask(("sandbox %s holds unsaved outputs of run %s (%s -> %s), and %s. Remove it, and lose them?")
      :format(c.session or c.name, c.run or "?", c.save and c.save.from or "?", c.save and c.save.to or "?", why))
    if yes == nil then refused = refused + 1 end
    return yes
  end
  local total, down = 0, {}
  for _, row in ipairs(rows) do
    local removed, kept
    if row.ok then removed, kept = leftovers.prune(row.client, {all = f.all, confirm = confirm, say = print}) end
    if removed then
      for _, c in ipairs(removed) do print("removed " .. c.name .. (#rows > 1 and " on " .. row.address or "")) end
      for _, c in ipairs(kept) do print(("kept %s: %s"):format(c.name, c.why)) end
      total = total + #removed
    elseif #rows == 1 then
      return nil, kept
    else
      down[#down + 1] = ("%s (%s)"):format(row.address, errors.from(kept or row.err).message)
    end
  end
  print(("%d sandbox%s removed"):format(total, total == 1 and "" or "es"))
  if refused > 0 then
    return nil, errors.new("refused", ("%d sandbox%s hold%s unsaved outputs that could not be rescued, and there is "
      .. "no terminal to ask on: nothing of them was removed; rerun with --force to remove them (and lose those "
      .. "outputs)"):format(refused, refused == 1 and "" or "es", refused == 1 and "s" or ""))
  end
  if #down > 0 then
    return nil, errors.new("docker_unreachable", ("not pruned, for the engine did not answer: %s; prune again once "
      .. "it is back"):format(table.concat(down, "; ")))
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

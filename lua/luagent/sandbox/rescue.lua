-- luagent.sandbox.rescue: bringing home the outputs of a leftover session,
-- one whose luagent run died (kill -9, a lost engine) before it saved them.
--
--   rescue.outputs(client, c) -> line | "busy", why | nil, err
--       c: a leftovers.list item with a save spec. line: what was done, said
--       to the user by the caller ("rescued 3 outputs of run R into DIR"); the
--       sandbox may go then. "busy": another luagent is rescuing it. nil, err:
--       they could not be rescued (err says why); the sandbox holds them still.
--
-- The outputs are extracted, like the run would have (luagent.outputs: safe
-- extraction, manifest.json beside the folder, required ones checked), into
-- the run's folder recorded in the session's labels at open. A workspace
-- kept in memory whose container stopped (the engine restarted) is empty:
-- those outputs are lost, and the line says so. A run folder that is gone
-- (removed by its owner) is not made again. Two processes never rescue one
-- session at once: the rescuer claims it with a container named after the
-- session (the engine refuses a second one); a rescuer that dies leaves that
-- claim, which the next prune removes.
local errors = require "luagent.errors"
local fs = require "luagent.fs"
local docker = require "luagent.sandbox.docker"
local outputs = require "luagent.outputs"

local rescue = {}

local function plural(n, word)
  return ("%d %s%s"):format(n, word, n == 1 and "" or "s")
end

local function claim(client, c)
  local leftovers = require "luagent.sandbox.leftovers"
  local labels = leftovers.owner_labels()
  labels[leftovers.RESCUE_LABEL] = c.session
  local created, err = client:call("POST", "/containers/create", {Image = c.image, Entrypoint = {"/nothing"},
    Labels = labels, NetworkDisabled = true, HostConfig = {NetworkMode = "none"}},
    {query = {name = "luagent-" .. c.session .. "-rescue"}})
  if created then return created.Id end
  if err.kind == "conflict" then return nil, "another luagent is rescuing its outputs" end
  return nil, errors.wrap(err, "claiming the sandbox for the rescue failed")
end

-- The leftover's session, driven like the run's own: the outputs of its
-- save spec extracted and written down.
local function bring_home(client, info, c)
  local defaults = require("luagent.sandbox").defaults
  local session = docker.adopt(client, info, defaults)
  local box = {
    session = session.id,
    extract = function(_, path, dir) return session:extract(path, dir, {}) end,
    exec = function(_, argv)
      return session:exec({argv = argv, env = {}, cwd = session.workspace, timeout = 60, max_output = 1048576})
    end,
  }
  local ok, err = fs.mkdir(c.save.to)
  local report
  if ok then
    report, err = outputs.collect(box, c.save.from, c.save.to, {required = c.save.required, run_id = c.run,
                                                                quiet = true})
  end
  session:forget()
  if not report then return nil, errors.from(err) end
  if report.error then return nil, errors.new("io", report.error) end
  local line = ("rescued %s of run %s into %s (sandbox %s, whose luagent process is gone)")
    :format(plural(#report.files, "output"), c.run, c.save.to, c.session)
  if #report.missing > 0 then line = line .. "; not in it, never saved: " .. table.concat(report.missing, ", ") end
  return line
end

function rescue.outputs(client, c)
  local run_folder = c.save.to:gsub("/[^/]+$", "")
  if not fs.exists(run_folder) then
    return ("the outputs of run %s are not rescued: its folder %s is gone (removed by its owner?)")
      :format(c.run, run_folder)
  end
  local info, err = client:call("GET", "/containers/" .. c.id .. "/json")
  if not info then return nil, errors.from(err) end
  if not docker.workspace_kept(info) then
    return ("the outputs of run %s (%s -> %s) are lost: sandbox %s kept its workspace in memory, and its container "
      .. "stopped (%s), which emptied it"):format(c.run, c.save.from, c.save.to, c.session, c.status or c.state)
  end
  local lock, why = claim(client, c)
  if not lock then
    if type(why) == "string" then return "busy", why end
    return nil, why
  end
  local ok, line, rerr = pcall(bring_home, client, info, c)
  client:call("DELETE", "/containers/" .. lock, nil, {query = {force = 1}})
  if not ok then error(line, 0) end -- a cancellation, or a bug: said as it is
  return line, rerr
end

return rescue

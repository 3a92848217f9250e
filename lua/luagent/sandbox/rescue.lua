-- luagent.sandbox.rescue: bringing home the outputs of a leftover session,
-- one whose luagent run died (kill -9, a lost engine) before it saved them.
--
--   rescue.outputs(client, kind, c) -> line | "busy", why | nil, err
--       c: a leftovers.list item with a save spec; kind: its engine's
--       (luagent.sandbox.engine_kinds). line: what was done, said
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
-- session at once: the rescuer claims it with an object named after the
-- session (kind.rescue_claim: the engine refuses a second one); a rescuer
-- that dies leaves that claim, which the next prune removes.
--
-- What the rescue adds to the outputs mirror (luagent.sandbox.mirror, which
-- copied the outputs home after every command the run finished): the last
-- state — what the agent wrote after the last mirror, e.g. in the command
-- the run died in — of a leftover whose workspace survived (on disk, or its
-- container still running). A workspace in memory whose container stopped
-- is lost, but what the mirror brought home stays, and the line says so.
-- Sessions taken from a warm pool carry no save spec in their labels (they
-- were started before it was known): no rescue finds their outputs, and
-- the mirror is what brings them home.
local errors = require "luagent.errors"
local fs = require "luagent.fs"
local outputs = require "luagent.outputs"
local owner = require "luagent.sandbox.owner"
local defaults = require "luagent.sandbox.defaults"

local rescue = {}

local function plural(n, word)
  return ("%d %s%s"):format(n, word, n == 1 and "" or "s")
end

local function claim(client, kind, c)
  local labels = owner.labels()
  labels[owner.RESCUE_LABEL] = c.session
  return kind.rescue_claim(client, c, labels)
end

-- The leftover's session, driven like the run's own: the outputs of its
-- save spec extracted and written down.
local function bring_home(client, kind, info, c)
  local session = kind.adopt(client, info, defaults)
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

-- "3 files, the last mirrored after turn 2", from the run's manifest, or nil.
function rescue.mirrored_files(c)
  local m = outputs.read_manifest(c.save.to)
  if not (m and m.run_id == c.run and type(m.files) == "table") then return nil end
  local count, last, prefix = 0, nil, c.save.from .. "/"
  for _, f in ipairs(m.files) do
    local path = type(f) == "table" and type(f.mirrored) == "table" and tostring(f.path) or ""
    local rel = path:sub(1, #prefix) == prefix and path:sub(#prefix + 1) or path:match("[^/]*$")
    if rel ~= "" and fs.exists(c.save.to .. "/" .. rel) then
      count = count + 1
      if not last or (tonumber(f.mirrored.command) or 0) > (tonumber(last.command) or 0) then last = f.mirrored end
    end
  end
  if count == 0 then return nil end
  local turn = tonumber(last.turn)
  return ("%d file%s, the last mirrored after %s"):format(count, count == 1 and "" or "s",
    turn and ("turn " .. turn) or ("command " .. tostring(last.command)))
end

function rescue.outputs(client, kind, c)
  local run_folder = c.save.to:gsub("/[^/]+$", "")
  if not fs.exists(run_folder) then
    return ("the outputs of run %s are not rescued: its folder %s is gone (removed by its owner?)")
      :format(c.run, run_folder)
  end
  local info, err = kind.inspect(client, c)
  if not info then return nil, err end
  if not kind.workspace_kept(info) then
    local why = ("sandbox %s kept its workspace in memory, and its container stopped (%s), which emptied it")
      :format(c.session, c.status or c.state)
    local mirrored = rescue.mirrored_files(c)
    if mirrored then
      return ("the outputs of run %s are those its mirror brought into %s during the run (%s); what it wrote later "
        .. "is lost: %s"):format(c.run, c.save.to, mirrored, why)
    end
    return ("the outputs of run %s (%s -> %s) are lost: %s"):format(c.run, c.save.from, c.save.to, why)
  end
  local lock, why = claim(client, kind, c)
  if not lock then
    if type(why) == "string" then return "busy", why end
    return nil, why
  end
  local ok, line, rerr = pcall(bring_home, client, kind, info, c)
  kind.rescue_release(client, lock)
  if not ok then error(line, 0) end -- a cancellation, or a bug: said as it is
  return line, rerr
end

return rescue

-- luagent.sandbox.owner: who owns a sandbox. Every session of this process
-- (and a rescue's claim) carries the owner's labels, so that the sweep and
-- `luagent sandbox prune` (luagent.sandbox.leftovers) can tell a crashed
-- run's sandboxes from a living one's. A leaf of the sandbox modules: the
-- facade, the leftovers and the rescue all use it, and it uses none of them.
--
--   owner.labels([save])     -> the labels every session of this process carries; with
--                               sandbox.open's save spec, also the run and that spec
--   owner.alive(labels)      -> is the luagent process that made them still running?
--   owner.RESCUE_LABEL       the label of a rescue's claim (its value: the session rescued)
--   owner.LABELS             the labels of the run that made a session and its save spec
-- Neutral: no backend's module (a Kubernetes backend would label its pods so too).
local sys = require "luagent.sys"
local json = require "luagent.json"
local fs = require "luagent.fs"
local manifest = require "luagent.manifest"
local context = require "luagent.context"

local owner = {}

owner.RESCUE_LABEL = "luagent.rescue"
owner.LABELS = {run = "luagent.run", save_from = "luagent.save.from", save_to = "luagent.save.to",
                save_required = "luagent.save.required"}
local LABELS = owner.LABELS

-- An absolute host path (a rescue may run in another folder).
local function absolute(path)
  if path:sub(1, 1) == "/" then return path end
  return (fs.realpath(".") or ".") .. "/" .. path:gsub("^%./", "")
end

function owner.labels(save)
  local pid = sys.pid()
  local labels = {
    ["luagent"] = "1",
    ["luagent.owner.pid"] = tostring(pid),
    ["luagent.owner.start"] = tostring(sys.process_start(pid) or 0),
    ["luagent.owner.host"] = sys.hostname(),
  }
  if type(save) == "table" and type(save.from) == "string" and type(save.to) == "string" then
    labels[LABELS.run] = context.current().id
    labels[LABELS.save_from] = manifest.workspace_path(save.from) or save.from
    labels[LABELS.save_to] = absolute(save.to)
    labels[LABELS.save_required] = json.encode(json.array(save.required or {}))
  end
  return labels
end

-- A sandbox made on another host is assumed alive: we cannot tell.
function owner.alive(labels)
  if labels["luagent.owner.host"] ~= sys.hostname() then return true end
  local start = sys.process_start(tonumber(labels["luagent.owner.pid"]) or -1)
  return start ~= nil and tostring(start) == labels["luagent.owner.start"]
end

return owner

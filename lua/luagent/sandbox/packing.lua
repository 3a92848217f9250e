-- luagent.sandbox.packing: reading what the supervisor's `pack` (a tar of a
-- workspace path, streamed over the session's channel) could not bring
-- back, for box:extract and box:snapshot.
--
--   packing.left_out(stderr) -> {{name, code, reason}}   pack's "<code> <len>:<path>\n" lines
--   packing.extract_report(raw, path) -> report | nil, err
--       the host extractor's report, with what pack left out added to refused
--   packing.snapshot_bytes(raw, max_bytes) -> bytes | nil, err
--       a snapshot is all of the workspace or an error naming what is missing
local errors = require "luagent.errors"

local packing = {}

-- What each left-out code means, in the words of luagent.tar's refusals.
packing.REASONS = {
  too_big = "larger than what the extraction limit still allows (left in the sandbox unread)",
  too_many = "more entries than the extraction limit allows (the rest of the folder was not read)",
  too_deep = "nested deeper than 4096 folders",
  special = "device, fifo or socket",
  unreadable = "the sandbox user cannot read it",
  changed = "it changed while it was read: the copy may be cut or padded with zeros",
  missing = "no such path in the workspace",
}

function packing.left_out(stderr)
  local list, pos = {}, 1
  while pos <= #stderr do
    local code, len, after = stderr:match("^(%S+) (%d+):()", pos)
    if not code then
      local rest = stderr:sub(pos, pos + 200):match("^[^\n]*")
      list[#list + 1] = {name = "", code = "other", reason = "the supervisor said: " .. rest}
      pos = (stderr:find("\n", pos, true) or #stderr) + 1
    else
      local name = stderr:sub(after, after + tonumber(len) - 1)
      list[#list + 1] = {name = name, code = code, reason = packing.REASONS[code] or code}
      pos = after + tonumber(len) + 1 -- past the name and its newline
    end
  end
  return list
end

local function sink_failure(raw)
  return errors.new("tar", "extraction failed: " .. raw.sink_error)
end

function packing.extract_report(raw, path)
  local left = packing.left_out(raw.stderr)
  if raw.exit_code == 2 and left[1] and left[1].code == "missing" then
    return errors.fail("not_found", "no such path in the workspace: " .. path, {path = path})
  end
  if raw.sink_error then return nil, sink_failure(raw) end
  if raw.exit_code ~= 0 then
    return errors.fail("tar", ("reading %s in the sandbox failed (exit code %d): %s"):format(path, raw.exit_code,
      raw.stderr))
  end
  local report = raw.report
  for _, e in ipairs(left) do report.refused[#report.refused + 1] = {name = e.name, reason = e.reason} end
  if raw.truncated then
    report.refused[#report.refused + 1] = {name = "", reason = "more entries were left out than this list holds"}
  end
  return report
end

function packing.snapshot_bytes(raw, max_bytes)
  local left = packing.left_out(raw.stderr)
  if #left > 0 then
    local names, over = {}, false
    for i, e in ipairs(left) do
      if i <= 5 then names[#names + 1] = ("%s (%s)"):format(e.name, e.reason) end
      over = over or e.code == "too_big" or e.code == "too_many"
    end
    local more = #left > 5 and (" and %d more"):format(#left - 5) or ""
    if over then
      return errors.fail("too_large", ("the workspace is larger than the limit of %d bytes or entries "
        .. "(max_extract, max_extract_entries): %s%s"):format(max_bytes, table.concat(names, "; "), more))
    end
    return errors.fail("tar", ("the snapshot would leave out %s%s; remove or fix them and snapshot again")
      :format(table.concat(names, "; "), more))
  end
  if raw.sink_error then
    local kind = raw.sink_error:find("larger than", 1, true) and "too_large" or "io"
    return errors.fail(kind, "cannot write the snapshot: " .. raw.sink_error)
  end
  if raw.exit_code ~= 0 then
    return errors.fail("tar", ("reading the workspace failed (exit code %d)"):format(raw.exit_code))
  end
  return raw.saved
end

return packing

-- luagent.outputs: brings a sandbox's results home and says what they are.
--
--   local report = outputs.collect(box, "output", luagent.run_dir("output"),
--                                  {required = {"output/anomalies.csv", "output/*.png"}})
--   -- report = {dir, files = {{path, size, sha256}}, missing = {...}, refused = {...},
--   --           failed = {{path, size, written, error, removed}}, error, manifest}
--   -- opts.run_id: the run the manifest names (default the calling run's);
--   -- opts.quiet: an extraction's failure is not said on stderr (the caller says it);
--   -- any other key is a typo, refused (luagent.options, lua/meta's luagent.CollectOptions)
--
-- The files are extracted safely (nothing lands outside `host_dir`), then
-- listed with their sizes and sha256 in manifest.json beside that folder.
--
-- An extraction that fails (a full disk, the engine gone) never leaves a
-- file looking whole: a partly written file is removed (which also frees the
-- room the manifest needs on a full disk). Which files are whole is checked
-- against the workspace's own listing (sizes, from the sandbox); when the
-- sandbox cannot list it, a file the extractor had not finished — it stamps
-- each finished file with its time in the sandbox — is removed as unchecked.
-- report.failed and the manifest's `failed` list each file not saved and
-- why; report.error has the extraction's error, also said on stderr at once.
--
-- `missing` is what the agent did not save. Required outputs the agent may
-- well have saved are not called missing: `nil, err` comes back, err.report
-- the report, the manifest listing them —
--   - kind docker_unreachable: the Docker engine did not answer (after the
--     box's engine_grace), report.unreadable; a box opened with save = {...}
--     keeps its sandbox, and the next run's sweep or `luagent sandbox prune`
--     rescues them (the message says where to);
--   - kind sandbox_restarted: the workspace was emptied under the run (its
--     container stopped with the engine, and it was kept in memory),
--     report.lost.
-- `nil, err` too (a luagent.errors value, err.report the report) when the
-- manifest cannot be written; its message has the extraction's error too.
--
-- A box whose outputs mirror (luagent.sandbox.mirror) copies this folder to
-- host_dir: the extraction goes into a stage folder beside host_dir first,
-- and only whole files replace the mirror's copies, so a read that fails
-- never costs one. When the read is complete (nothing refused, the
-- workspace never emptied), mirror copies of files the agent removed go.
-- When it is not (the engine gone, the workspace emptied), the mirror's
-- copies stay and count as saved: report.mirrored lists them, files and the
-- manifest mark each with `mirrored = {turn, command, time}`, and stderr says
-- "...: saved (mirrored after turn N)"; only required outputs the mirror did
-- not have are unreadable or lost.
local json = require "luagent.json"
local fs = require "luagent.fs"
local sys = require "luagent.sys"
local errors = require "luagent.errors"
local events = require "luagent.events"
local context = require "luagent.context"
local options = require "luagent.options"

local outputs = {}

local glob_pattern = require("luagent.manifest").glob_pattern
local function excerpt_line(text) return require("luagent.text").excerpt(text, 160, "line") end

-- outputs.manifest_path(host_dir) -> path   manifest.json beside host_dir
-- (the mirror's copy and the rescue's read it there too)
function outputs.manifest_path(host_dir)
  return (host_dir:match("^(.*)/[^/]+/*$") or ".") .. "/manifest.json"
end

-- outputs.read_manifest(host_dir) -> table | nil   the manifest beside host_dir, decoded
-- (nil when there is none, or it is not JSON)
function outputs.read_manifest(host_dir)
  local text = fs.read(outputs.manifest_path(host_dir))
  local ok, m = pcall(json.decode, text or "")
  return ok and type(m) == "table" and m or nil
end

-- The workspace folder's files as {relative path = size}, from the sandbox, or nil.
local function workspace_listing(box, workspace_dir)
  local ok, r = pcall(box.exec, box, {"find", workspace_dir, "-type", "f", "-printf", "%s\t%P\n"})
  if not ok or type(r) ~= "table" or r.exit_code ~= 0 then return nil end
  local sizes = {}
  for size, rel in (r.stdout or ""):gmatch("(%d+)\t([^\n]+)") do sizes[rel] = tonumber(size) end
  return sizes
end

-- After a failed extraction: the files on the host that are whole (kept),
-- and what failed (partly written ones removed).
local function settle(box, workspace_dir, host_dir, err, started)
  local listing = workspace_listing(box, workspace_dir)
  local whole, failed, seen = {}, {}, {}
  local function fail(rel, entry)
    entry.path, entry.error = workspace_dir .. "/" .. rel, entry.error or err.message
    failed[#failed + 1] = entry
  end
  for _, f in ipairs(fs.walk(host_dir) or {}) do
    local full, expected = host_dir .. "/" .. f.path, listing and listing[f.path]
    seen[f.path] = true
    -- a file that is not an output of the workspace is left alone
    local ours = f.type == "file" and (not listing or expected ~= nil)
    if ours and ((listing and f.size ~= expected) or (not listing and ((fs.stat(full) or {}).mtime or 0) >= started)) then
      local removed = os.remove(full) ~= nil
      fail(f.path, {size = expected, written = f.size, removed = removed,
                    error = (listing and "partly written" or "not checked (the sandbox could not list the workspace)")
                      .. ": " .. err.message})
    elseif ours then
      whole[#whole + 1] = f.path
    end
  end
  for rel, size in pairs(listing or {}) do
    if not seen[rel] then fail(rel, {size = size, written = 0, error = "not extracted: " .. err.message}) end
  end
  table.sort(failed, function(a, b) return a.path < b.path end)
  return whole, failed
end

-- Every output not saved, each with what happened to it.
local function not_saved(failed)
  local names = {}
  for i, f in ipairs(failed) do
    local note = ""
    if f.removed and f.size then note = (" (removed: %d of %d bytes written)"):format(f.written, f.size)
    elseif f.removed then note = (" (removed, unchecked: %d bytes written)"):format(f.written) end
    if f.mirrored then note = note .. (" (its copy mirrored after %s is kept)"):format(f.mirrored.label) end
    names[i] = f.path .. note
  end
  return #names > 0 and ("; not saved: " .. table.concat(names, ", ")) or ""
end

local function describe_failure(workspace_dir, err, failed, manifest)
  return ("could not save all the outputs in %s: %s%s; %s lists what was saved and what failed"):format(
    workspace_dir, err.message, not_saved(failed), manifest)
end

-- Why the sandbox's last state is not all on the host, or nil: the engine
-- did not answer (kind docker_unreachable), or the workspace was emptied
-- under the run (a reset: its container stopped, and it was in memory).
local function workspace_reset(err, extracted)
  return (extracted or {}).workspace_reset or (err and (err.workspace_reset or (err.cause or {}).workspace_reset))
end

-- Required outputs not on the host that the agent may well have saved:
-- unreadable (the engine did not answer) or lost (the workspace was
-- emptied under the run); the rest of `missing` stays missing. When the
-- mirror brought every required output (and something at all), they are
-- saved: nil.
local function not_the_agents(err, extracted, missing, mirrored)
  local reset = workspace_reset(err, extracted)
  if #missing == 0 and #mirrored > 0 then return nil, {}, reset end
  if err and err.kind == "docker_unreachable" then return "unreadable", missing end
  if reset and #missing > 0 then return "lost", missing, reset end
  return nil, {}
end

-- "a, b: saved (mirrored after turn 2)": the mirror's copies, by when they were made.
local function mirrored_text(box, paths, workspace_dir)
  local by, order = {}, {}
  for _, path in ipairs(paths) do
    local label = box.mirror:label(path:sub(#workspace_dir + 2)) or "?"
    if not by[label] then by[label], order[#order + 1] = {}, label end
    table.insert(by[label], path)
  end
  local parts = {}
  for _, label in ipairs(order) do
    parts[#parts + 1] = ("%s: saved (mirrored after %s)"):format(table.concat(by[label], ", "), label)
  end
  return table.concat(parts, "; ")
end

-- The error collect returns for outputs it could not read, or that were
-- lost, with the report (and the manifest listing them).
local function unsaved_error(box, workspace_dir, what, list, err, reset, report)
  local where = box.save and box.save.to
  local saved = #report.mirrored > 0 and ("; " .. mirrored_text(box, report.mirrored, workspace_dir)) or ""
  local message
  if what == "unreadable" then
    message = ("could not read the outputs in %s (%s): %s"):format(workspace_dir, table.concat(list, ", "),
      (err.cause or err).message)
    if where then
      message = message .. (". They stay in sandbox %s: the next luagent run on this engine, or 'luagent sandbox "
        .. "prune', rescues them into %s"):format(box.session, where)
    end
    return errors.new("docker_unreachable", message .. saved .. "; " .. report.manifest .. " lists them",
      {report = report, cause = err})
  end
  return errors.new("sandbox_restarted", ("the outputs in %s were lost (%s): %s%s; %s lists them"):format(
    workspace_dir, table.concat(list, ", "), reset, saved, report.manifest), {report = report, cause = err})
end

-- The extraction: straight into host_dir, or — for a box whose mirror
-- holds copies there — into a stage folder whose whole files then replace
-- them, so that a final read that fails (the engine gone, a full disk) never
-- costs a copy the mirror made. Returns extracted, err, names (relative to
-- host_dir), refused, failed, from_mirror ({name = true}).
local function extract(box, workspace_dir, host_dir, started)
  local mirror = box.mirror and box.mirror:covers(workspace_dir, host_dir) and box.mirror or nil
  local target = mirror and mirror:stage() or host_dir
  if target ~= host_dir then mirror.paused = true end -- settle's listing is a command: no pass now
  local extracted, err = box:extract(workspace_dir, target)
  local names, refused, failed, from_mirror = {}, {}, {}, {}
  if extracted then
    for i, f in ipairs(extracted.files) do names[i] = f.path end
    refused = extracted.refused
  else
    err = errors.from(err)
    names, failed = settle(box, workspace_dir, target, err, started)
  end
  if target == host_dir then return extracted, err, names, refused, failed, from_mirror end
  mirror:close() -- the outputs are collected: from now on, like the close, it copies nothing more
  local placed
  names, from_mirror, placed = mirror:merge(target, names,
                                            extracted ~= nil and #refused == 0 and not workspace_reset(err, extracted))
  for _, p in ipairs(placed) do
    failed[#failed + 1] = {path = workspace_dir .. "/" .. p.rel, error = p.error}
    err = err or errors.new("io", p.error)
  end
  for _, f in ipairs(failed) do
    local rel = f.path:sub(#workspace_dir + 2)
    local label, copy = mirror:label(rel), mirror.files[rel]
    if label and fs.exists(host_dir .. "/" .. rel) then
      f.mirrored = {turn = copy.turn, command = copy.command, time = copy.time, label = label}
      f.error = f.error .. ("; the copy mirrored after %s is kept"):format(label)
    end
  end
  return extracted, err, names, refused, failed, from_mirror
end

function outputs.collect(box, workspace_dir, host_dir, opts)
  opts = options.check(opts or {}, "luagent.CollectOptions", "outputs.collect") -- a typo: refused before any work
  box.saved = true -- closing the box need not save them again
  local extracted, err, names, refused, failed, from_mirror = extract(box, workspace_dir, host_dir, os.time())
  local files, mirrored = {}, {}
  for _, name in ipairs(names) do
    local full = host_dir .. "/" .. name
    local st = fs.stat(full)
    if st and st.type == "file" then
      local digest, size = sys.sha256_file(full)
      local entry = {path = workspace_dir .. "/" .. name, size = size, sha256 = digest}
      local copy = from_mirror[name] and box.mirror.files[name]
      if copy then
        entry.mirrored = {turn = copy.turn, command = copy.command, time = copy.time}
        mirrored[#mirrored + 1] = entry.path
      end
      files[#files + 1] = entry
    end
  end
  table.sort(files, function(a, b) return a.path < b.path end)
  table.sort(mirrored)
  local missing = {}
  for _, wanted in ipairs(opts.required or {}) do
    local pattern, found = glob_pattern(wanted), false
    for _, f in ipairs(files) do
      if f.path:match(pattern) and f.size > 0 then found = true break end
    end
    if not found then missing[#missing + 1] = wanted end
  end
  local unsaved, list, reset = not_the_agents(err, extracted, missing, mirrored)
  if unsaved then missing = {} end
  local manifest = outputs.manifest_path(host_dir)
  -- an emptied workspace is why its folder is missing: the reset says more
  local emptied = reset and (not err or err.kind == "not_found")
  local report = {dir = host_dir, files = files, missing = missing, refused = refused, failed = failed,
                  manifest = manifest, error = emptied and reset or err and err.message or reset, mirrored = mirrored,
                  unreadable = unsaved == "unreadable" and list or nil, lost = unsaved == "lost" and list or nil}
  if report.error then
    events.emit({type = "outputs_failed", dir = host_dir, error = report.error, failed = failed,
                 unreadable = report.unreadable, lost = report.lost, mirrored = mirrored[1] and mirrored})
  end
  local written, werr = fs.write(manifest, json.encode({run_id = opts.run_id or context.current().id,
    files = json.array(files), missing = json.array(missing), refused = json.array(refused),
    failed = json.array(failed), unreadable = report.unreadable and json.array(report.unreadable),
    lost = report.lost and json.array(report.lost), mirrored = mirrored[1] and json.array(mirrored),
    error = report.error}, {indent = 2}) .. "\n")
  if not written then -- the caller says it (sandbox.lua's save on close does)
    local message = "cannot write " .. manifest .. ": " .. errors.from(werr).message
      .. (report.error and ("; and the outputs were not all saved: " .. report.error .. not_saved(failed)) or "")
    return nil, errors.new(errors.from(werr).kind, message, {path = manifest, report = report, cause = werr})
  end
  if unsaved then return nil, unsaved_error(box, workspace_dir, unsaved, list, err, reset, report) end
  if opts.quiet then return report end
  local said = {} -- the failed ones say their mirror copy themselves
  for _, f in ipairs(failed) do said[f.path] = true end
  local others = {}
  for _, path in ipairs(mirrored) do if not said[path] then others[#others + 1] = path end end
  local saved = #others > 0 and ("; " .. mirrored_text(box, others, workspace_dir)) or ""
  if emptied and saved ~= "" then
    io.stderr:write(("luagent: the outputs in %s are not all in the sandbox any more (%s)%s; %s marks the "
      .. "mirror's copies\n"):format(workspace_dir, reset, saved, manifest))
  elseif err and saved ~= "" and #failed == 0 then
    io.stderr:write(("luagent: could not read the outputs in %s at the end (%s)%s; what the agent wrote after that "
      .. "is not known; %s marks the mirror's copies\n"):format(workspace_dir, err.message, saved, manifest))
    -- the run ends "incomplete", not "ok": its outputs are those of an earlier moment
    context.current():incomplete(("the outputs in %s could not be read at the end (%s); saved are the mirror's "
      .. "copies (%s), and what the agent wrote after them is not known"):format(workspace_dir,
      excerpt_line(err.message), saved:gsub("^; ", "")))
  elseif err then
    io.stderr:write("luagent: ", describe_failure(workspace_dir, err, failed, manifest), saved, "\n")
  end
  return report
end

return outputs

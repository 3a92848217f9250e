-- luagent.sandbox.mirror: a box opened with save = {from, to, required}
-- copies its declared outputs home as the run goes, so that the host holds
-- what the agent saved up to its last finished command even when the
-- sandbox is lost later (the Docker engine stops, and a workspace kept in
-- memory goes with its container; a pooled session, which no rescue knows).
--
--   mirror.new{session, from, to, max_bytes, max_entries, box} -> m
--       from: the workspace folder (e.g. "output"); to: the host folder
--   m:sync()          after every command (exec, python, a spawned process's
--                     end): copies what changed under `from` since the last
--                     pass; never fails a command (a failure is said once)
--   m:covers(workspace_dir, host_dir) -> boolean   is this the mirrored pair?
--   m:merge(stage, names, complete) -> names, from_mirror, failed   (outputs.collect,
--                     which then closes the mirror: once collected, the outputs are the recipe's)
--   m:stage() -> dir   a fresh folder beside `to` (same file system: renames are atomic)
--   m:label(rel) -> "turn 3" | "command 5"   after which the copy of rel was made
--   m.files[rel] = {size, sha256, turn, command, time, token}   what is on the host
--   m.counts = {passes, unchanged, lists, packs, copied, busy, unsteady}   m:close()
--
-- A pass costs nothing when nothing changed: serve watches `from` (asked
-- once per serve with a `watch`; sandbox/supervisor/watch.h, inotify) and
-- every result carries a mark, the folder's change generation. A pass whose
-- last result's mark is the one its last listing carried (same serve, no
-- write through the engine's archive endpoint since, which serve's watch
-- may not see) is `unchanged` and lists nothing; when in doubt (no mark:
-- nothing watched, a folder it cannot watch, a serve started again) it
-- lists, as it always did. A listing is one `list` request
-- (sandbox/supervisor/listing.h: answered by the supervisor itself, a stat
-- walk: a fraction of a millisecond). Files whose size, times or inode changed are packed
-- (one `pack` per file, or the folder when many changed) into a stage folder
-- through luagent.tar's safe extraction, the folder is listed again, and a
-- copy replaces the host's file (a rename) only when it is whole:
--   - no process held the file open for writing at either listing (a Python
--     file object not closed yet, a server writing its log: it waits for
--     a later pass);
--   - its size, times and inode are the same at both listings, and the
--     copy has that size (a writer that came and went during the copy is
--     caught; pack also says when a file changed while it was read).
-- So a mirror copy is the file as it stood, unchanged and closed, after a
-- command ended. What it does not promise: that no one writes a file with
-- a descriptor opened by another user (none can: commands share one uid),
-- or a file that a writer keeps open across commands (it stays unmirrored:
-- the close collects it). Regular files only: links and empty folders come
-- home with the final collect.
--
-- Removal: a file removed in the sandbox stays on the host until the box's
-- final collect reads the whole folder, which then removes the host copies
-- of files that are gone (the workspace was not emptied under the run); a
-- copy is never removed mid-run, so a workspace lost later (its container
-- stopped) cannot take the host's copies with it.
--
-- The host side is beside `to`: manifest.json (the one outputs.collect
-- writes, marked "the run has not saved its outputs yet" until it does) lists
-- the mirrored files, each with `mirrored = {turn, command, time}`.
local errors = require "luagent.errors"
local events = require "luagent.events"
local context = require "luagent.context"
local fs = require "luagent.fs"
local json = require "luagent.json"
local sched = require "luagent.sched"
local sys = require "luagent.sys"
local packing = require "luagent.sandbox.packing"
local recovery = require "luagent.sandbox.recovery"

local mirror = {}

-- More changed files than this: one pack of the folder instead of one each.
local PER_FILE = 8
local LIST_OUTPUT = 16 * 1024 * 1024
local PACK_TIMEOUT = 3600
-- left-out codes that may clear at the next pass (anything else waits until the file changes)
local RETRY = {changed = true, missing = true}

local Mirror = {}
Mirror.__index = Mirror

function mirror.new(o)
  local m = setmetatable({
    session = o.session, box = o.box, from = o.from, path = o.session:_workspace_path(o.from), to = o.to,
    max_bytes = o.max_bytes, max_entries = o.max_entries, files = {}, refused = {}, commands = 0,
    wanted = 0, done = 0, closed = false,
    counts = {passes = 0, unchanged = 0, lists = 0, packs = 0, copied = 0, busy = 0, unsteady = 0},
  }, Mirror)
  -- the agent turn a command belongs to: the run's last tool call
  local run = context.current()
  m.run = run
  m.listener = run:subscribe(function(ev)
    if ev.type == "tool_call" and math.type(ev.turn) == "integer" then m.turn = ev.turn end
  end)
  return m
end

function Mirror:covers(workspace_dir, host_dir)
  local manifest = require "luagent.manifest"
  return manifest.workspace_path(workspace_dir, self.session.workspace) == self.from and host_dir == self.to
end

function Mirror:label(rel)
  local f = self.files[rel]
  if not f then return nil end
  return f.turn and ("turn %d"):format(f.turn) or ("command %d"):format(f.command)
end

-- ---- listings ----

local function safe_rel(rel)
  if rel == "" or rel:sub(1, 1) == "/" then return false end
  for part in (rel .. "/"):gmatch("([^/]*)/") do
    if part == "" or part == "." or part == ".." then return false end
  end
  return true
end

-- ---- knowing that nothing changed (sandbox/supervisor/watch.h) ----

-- Asks serve ex to watch the folder, once per serve (a failure leaves its
-- results without a mark: every pass lists).
function Mirror:_watch(ex)
  if self.watching == ex then return end
  self.watching = ex
  self.session:_run("watch", {path = self.path, timeout = 30})
end

-- Whether nothing under the folder changed since the last listing: the last
-- result's mark is the one that listing carried, from the same serve, and
-- nothing went in through the engine since.
function Mirror:_unchanged(ex)
  local l = self.listed
  return l ~= nil and ex ~= nil and l.ex == ex and l.mark ~= nil and ex:mark() == l.mark
    and l.writes == (self.session.archive_writes or 0)
end

-- The list op's lines: {files = {rel = {size, token}}, busy = {rel = true}} | nil (not a listing).
local function parse(out)
  local files, busy, pos = {}, {}, 1
  while pos <= #out do
    local size, mtime, ctime, ino, len, after = out:match("^f (%d+) (%d+%.%d+) (%d+%.%d+) (%d+) (%d+):()", pos)
    local rel
    if size then
      rel = out:sub(after, after + tonumber(len) - 1)
      if safe_rel(rel) then
        files[rel] = {size = tonumber(size), token = table.concat({size, mtime, ctime, ino}, " ")}
      end
    else
      len, after = out:match("^w (%d+):()", pos)
      if not len then return nil end
      rel = out:sub(after, after + tonumber(len) - 1)
      busy[rel] = true
    end
    if out:sub(after + #rel, after + #rel) ~= "\n" then return nil end
    pos = after + #rel + 1
  end
  return {files = files, busy = busy}
end

function Mirror:_list()
  self.counts.lists = self.counts.lists + 1
  local raw, err = self.session:_run("list", {path = self.path, max_entries = self.max_entries or 0,
                                               max_output = LIST_OUTPUT, timeout = 30})
  if not raw then return nil, err end
  if raw.exit_code == 2 then return {files = {}, busy = {}, mark = raw.mark} end -- no such folder (yet)
  local listing = raw.exit_code == 0 and not raw.truncated and parse(raw.stdout)
  if listing then listing.mark = raw.mark end
  if not listing then
    return errors.fail("tar", ("listing %s in the sandbox failed (exit code %s): %s"):format(self.path,
      tostring(raw.exit_code), (raw.stderr or ""):sub(1, 300)))
  end
  return listing
end

-- ---- copying ----

function Mirror:stage()
  local parent, base = self.to:match("^(.*)/([^/]+)/*$")
  parent, base = parent or ".", base or self.to
  local dir = ("%s/.%s.mirror-%s"):format(parent, base, sys.random_hex(4))
  local ok, err = fs.mkdir(dir)
  if not ok then return nil, errors.from(err) end
  return dir
end

local function parent_of(rel)
  return rel:match("^(.*)/[^/]*$")
end

-- Packs rels into stage (safely: luagent.tar's extraction rules); returns
-- {rel = pack's left-out code, or "failed"}, the first copy's failure (a
-- full disk: the other files are still copied) | nil, err (the sandbox
-- could not be read).
function Mirror:_pack(rels, stage)
  local left, failure = {}, nil
  local function one(path, dest, strip, rel)
    self.counts.packs = self.counts.packs + 1
    local raw, err = self.session:_run("pack", {path = path, dest = dest, strip = strip, max_bytes = self.max_bytes,
      max_entries = self.max_entries, timeout = PACK_TIMEOUT})
    if not raw then return nil, err end
    local out = packing.left_out(raw.stderr)
    for _, e in ipairs(out) do
      left[rel or e.name:sub(#strip + 2)] = e.code -- a folder's entries are named "<folder>/<rel>"
    end
    if raw.sink_error and not (raw.exit_code == 2 and out[1] and out[1].code == "missing") then
      for _, r in ipairs(rel and {rel} or rels) do left[r] = left[r] or "failed" end
      failure = failure or errors.new("io", ("copying %s into %s failed: %s"):format(path, dest, raw.sink_error))
    end
    return true
  end
  if #rels > PER_FILE then
    local ok, err = one(self.path, stage, self.path:match("([^/]+)$"))
    if not ok then return nil, err end
    return left, failure
  end
  for _, rel in ipairs(rels) do
    local dest = parent_of(rel) and stage .. "/" .. parent_of(rel) or stage
    local ok, err = fs.mkdir(dest)
    if not ok then return nil, errors.from(err) end
    ok, err = one(self.path .. "/" .. rel, dest, nil, rel)
    if not ok then return nil, err end
  end
  return left, failure
end

-- Moves the staged copy of rel over the host's; true | nil, err.
function Mirror:_place(stage, rel)
  local target = self.to .. "/" .. rel
  local ok, err = fs.mkdir(parent_of(target) or self.to)
  if not ok then return nil, errors.from(err) end
  local moved, why = os.rename(stage .. "/" .. rel, target)
  if not moved then return errors.fail("io", ("cannot place %s: %s"):format(target, why)) end
  return true
end

-- One pass: what changed, copied if whole. true | nil, err.
function Mirror:_pass(at)
  self.counts.passes = self.counts.passes + 1
  local session = self.session
  if self:_unchanged(session.supervisor) then
    self.counts.unchanged = self.counts.unchanged + 1
    return true
  end
  self.listed = nil
  if session.supervisor then self:_watch(session.supervisor) end
  local writes = session.archive_writes or 0
  local before, err = self:_list()
  if not before then return nil, err end
  -- what this listing saw, for the next pass (kept once the pass went through)
  local listed = {ex = session.supervisor, mark = before.mark, writes = writes}
  local changed = {}
  for rel, f in pairs(before.files) do
    local have = self.files[rel]
    if not (have and have.token == f.token) and self.refused[rel] ~= f.token then
      if before.busy[rel] then self.counts.busy = self.counts.busy + 1 else changed[#changed + 1] = rel end
    end
  end
  if #changed == 0 then
    self.listed = listed
    return true
  end
  table.sort(changed)
  local stage
  stage, err = self:stage()
  if not stage then return nil, err end
  local ok, copied, cerr = pcall(self._copy, self, stage, changed, before, at)
  fs.remove(stage)
  if not ok then error(copied, 0) end
  if copied then self.listed = listed end
  return copied, cerr
end

function Mirror:_copy(stage, changed, before, at)
  local left, failure = self:_pack(changed, stage)
  if not left then return nil, failure end
  local after, err = self:_list()
  if not after then return nil, err end
  local copied = {}
  for _, rel in ipairs(changed) do
    local was, now, code = before.files[rel], after.files[rel], left[rel]
    local st = fs.stat(stage .. "/" .. rel)
    if code and not RETRY[code] then
      self.refused[rel] = was.token -- too big, unreadable, a failed copy: again when it changes
    elseif not code and now and now.token == was.token and not after.busy[rel] and st and st.type == "file"
      and st.size == was.size then
      local placed, perr = self:_place(stage, rel)
      if not placed then
        failure = failure or perr
      else
        self.files[rel] = {token = was.token, size = was.size, sha256 = sys.sha256_file(self.to .. "/" .. rel),
                           turn = at.turn, command = at.command, time = os.time()}
        copied[#copied + 1] = self.from .. "/" .. rel
      end
    else
      self.counts.unsteady = self.counts.unsteady + 1 -- written meanwhile: a later pass takes it
    end
  end
  if #copied > 0 then
    self.counts.copied = self.counts.copied + #copied
    events.emit({type = "sandbox_mirror", session = self.session.id, files = json.array(copied), turn = at.turn,
                 command = at.command})
    local ok, merr = self:_write_manifest(at)
    failure = failure or (not ok and merr) or nil
  end
  if failure then return nil, failure end
  return true
end

-- manifest.json beside `to`, until the run's own collect replaces it.
function Mirror:_write_manifest(at)
  local files = {}
  for rel, f in pairs(self.files) do
    files[#files + 1] = {path = self.from .. "/" .. rel, size = f.size, sha256 = f.sha256,
                         mirrored = {turn = f.turn, command = f.command, time = f.time}}
  end
  table.sort(files, function(a, b) return a.path < b.path end)
  local path = require("luagent.outputs").manifest_path(self.to)
  local ok, err = fs.write(path, json.encode({run_id = self.run.id, files = json.array(files),
    error = ("the run has not saved its outputs yet: these are the copies mirrored after %s"):format(
      at.turn and ("turn " .. at.turn) or ("command " .. at.command))}, {indent = 2}) .. "\n")
  if not ok then return nil, errors.from(err) end
  return true
end

-- ---- passes after commands ----

function Mirror:_warn(err)
  if self.closed or err.kind == "closed" or err.kind == "cancelled" then return end
  if self.warned then return end
  self.warned = true
  local last
  for rel, f in pairs(self.files) do
    if not last or f.command > self.files[last].command then last = rel end
  end
  local kept = last and ("what it mirrored after %s"):format(self:label(last)) or "nothing mirrored yet"
  io.stderr:write(("luagent: could not mirror the outputs of sandbox %s (%s -> %s) after a command: %s. Commands "
    .. "go on; the host keeps %s, and the outputs are saved when the box closes, as always\n"):format(
    self.session.id, self.from, self.to, err.message, kept))
  events.emit({type = "sandbox_mirror", session = self.session.id, error = err.message})
end

local function start_pass(self)
  local upto = self.wanted
  local at = {turn = self.turn, command = self.commands}
  self.task = sched.spawn(function()
    local ok, done, err = pcall(self._pass, self, at)
    self.task, self.done = nil, math.max(self.done, upto)
    if not ok then
      local e = errors.from(done)
      if e.kind == "cancelled" then error(done, 0) end
      done, err = nil, e
    end
    if not done then self:_warn(errors.from(err)) end
  end)
  return self.task
end

function Mirror:sync()
  if self.closed or self.paused then return end
  self.commands = self.commands + 1
  self.wanted = self.wanted + 1
  local want = self.wanted
  while self.done < want and not self.closed do
    recovery.await(self.task or start_pass(self))
  end
end

-- ---- the final collect (luagent.outputs) ----

-- names: the files (relative to `to`) the final extraction put into stage.
-- Each goes over the host's copy; the mirror's copies of files the final
-- extraction did not bring stay, unless it was complete (the whole folder
-- read, nothing refused, the workspace never emptied): those files were
-- removed in the sandbox, and their copies go too.
-- Returns every file now on the host, the ones of them that are mirror
-- copies, and {{rel, error}} for what could not be placed.
function Mirror:merge(stage, names, complete)
  local all, from_mirror, failed, brought = {}, {}, {}, {}
  for _, rel in ipairs(names) do
    local ok, err = self:_place(stage, rel)
    if ok then
      brought[rel] = true
      all[#all + 1] = rel
    else
      failed[#failed + 1] = {rel = rel, error = err.message}
    end
  end
  for rel in pairs(self.files) do
    if not brought[rel] then
      local st = fs.stat(self.to .. "/" .. rel)
      if complete then
        if st and st.type == "file" then os.remove(self.to .. "/" .. rel) end
      elseif st and st.type == "file" then
        all[#all + 1] = rel
        from_mirror[rel] = true
      end
    end
  end
  fs.remove(stage)
  return all, from_mirror, failed
end

function Mirror:close()
  if self.closed then return end
  self.closed = true
  self.run:unsubscribe(self.listener)
end

return mirror

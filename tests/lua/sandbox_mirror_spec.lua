-- needs: docker
-- The outputs mirror (luagent.sandbox.mirror): a box opened with
-- save = {from, to} copies what changed under `from` to `to` after every
-- command, so the host holds what the agent saved up to its last finished
-- command; only whole files (none open for writing, none changed during the
-- copy); unchanged files are not copied again; a removal waits for the
-- close; a pooled session is mirrored too. The engine going away is
-- tests/e2e/engine_loss_test.sh's; a full host disk, mirror_full_test.sh's.
local t = require "helper"
local sandbox, fs, json = luagent.sandbox, luagent.fs, luagent.json

local work = assert(fs.realpath(assert(fs.temp_dir("luagent-mirror-spec"))))
luagent.at_exit(function() fs.remove(work) end)
local LABELS = {["luagent.test"] = "mirror-spec"}

local n = 0
local function open_saving(extra)
  n = n + 1
  local dir = ("%s/run%d"):format(work, n)
  local o = {labels = LABELS, memory = "256m", save = {from = "output", to = dir .. "/output"}}
  for k, v in pairs(extra or {}) do o[k] = v end
  return assert(sandbox.open(o)), dir
end

local function manifest(dir)
  return json.decode(assert(fs.read(dir .. "/manifest.json")))
end

local function ok_exec(box, cmd)
  local r = assert(box:exec(cmd))
  t.eq(r.exit_code, 0, tostring(type(cmd) == "table" and table.concat(cmd, " ") or cmd) .. ": " .. r.stderr)
  return r
end

t.test("after every command (exec, python, a spawned process's end) the host holds what was saved so far", function()
  local box, dir = open_saving()
  ok_exec(box, "mkdir -p output/deep && echo a > output/a.txt && echo d > output/deep/d.txt "
    .. "&& ln -s /etc/passwd output/link && mkfifo output/fifo")
  t.eq(fs.read(dir .. "/output/a.txt"), "a\n", "after exec")
  t.eq(fs.read(dir .. "/output/deep/d.txt"), "d\n", "a file in a folder")
  t.eq(fs.stat(dir .. "/output/link"), nil, "links are not mirrored (the close brings them, safely)")
  t.eq(fs.stat(dir .. "/output/fifo"), nil, "nor fifos")
  assert(box:python("open('output/b.txt', 'w').write('b')"))
  t.eq(fs.read(dir .. "/output/b.txt"), "b", "after python")
  local proc = assert(box:spawn("sleep 0.3; echo c > output/c.txt"))
  t.eq(fs.stat(dir .. "/output/c.txt"), nil, "not before the process ends")
  t.eq(assert(proc:wait(10)).exit_code, 0)
  t.eq(fs.read(dir .. "/output/c.txt"), "c\n", "after the spawned process's end")
  local m = manifest(dir)
  t.match(m.error, "has not saved its outputs yet: these are the copies mirrored after command 3")
  t.eq(#m.files, 4)
  for _, f in ipairs(m.files) do t.ok(f.mirrored and f.mirrored.command, f.path .. " is marked as a mirror copy") end
  assert(box:close())
  m = manifest(dir)
  t.eq(m.error, nil, "the close's collect replaced the manifest")
  t.eq(#m.files, 4)
  for _, f in ipairs(m.files) do t.eq(f.mirrored, nil, f.path .. " came from the final read") end
  t.eq(fs.read(dir .. "/output/link"), nil)
end)

t.test("unchanged files are not copied again, and an unchanged folder is not even listed", function()
  local box, dir = open_saving()
  ok_exec(box, "mkdir -p output && for i in 1 2 3; do echo $i > output/f$i.txt; done")
  local c = box.mirror.counts
  t.eq(c.packs, 3, "the three new files")
  local packs, lists, unchanged = c.packs, c.lists, c.unchanged
  for _ = 1, 10 do ok_exec(box, "true") end
  assert(box:python("x = 1"))
  ok_exec(box, "cat output/f1.txt > /dev/null && echo elsewhere > /workspace/other.txt && mkdir -p /workspace/d")
  t.eq(c.packs, packs, "no pack while nothing changed")
  t.eq(c.lists, lists, "no listing either: serve's watch says nothing under output changed (reading, or writing "
    .. "elsewhere, changes nothing there)")
  t.eq(c.unchanged, unchanged + 12, "each of those passes knew it")
  ok_exec(box, "echo two > output/f2.txt")
  t.eq(c.packs, packs + 1, "only the file that changed")
  t.eq(fs.read(dir .. "/output/f2.txt"), "two\n")
  t.eq(fs.read(dir .. "/output/f1.txt"), "1\n")
  ok_exec(box, "touch output/f1.txt")
  t.eq(c.packs, packs + 2, "a file touched is copied again (its times changed)")
  ok_exec(box, "for i in $(seq 1 20); do echo $i > output/many$i.txt; done")
  t.eq(c.packs, packs + 3, "many changed files: one pack of the folder")
  t.eq(fs.read(dir .. "/output/many20.txt"), "20\n")
  assert(box:close())
end)

-- Runs cmd; the mirror's pass after it listed the save folder `lists` times
-- (0: serve's watch said nothing under it changed).
local function listed_after(box, cmd, lists, why)
  local c = box.mirror.counts
  local before = c.lists
  ok_exec(box, cmd)
  t.eq(c.lists - before, lists, ("%s: listings (%s)"):format(cmd, why or ""))
end

local function unchanged_after(box, cmd, why) listed_after(box, cmd, 0, why) end

-- Without a listing after every command, each way a file under save.from can
-- change must reach serve's watch (sandbox/supervisor/watch.h).
t.test("every way a file changes is mirrored after the command that changed it, with no listing in between", function()
  local box, dir = open_saving()
  assert(box:python("import os; os.makedirs('output', exist_ok=True); open('output/py.txt', 'w').write('py')"))
  t.eq(fs.read(dir .. "/output/py.txt"), "py", "a box:python cell")
  unchanged_after(box, "true")
  assert(box:put("output/put.txt", "put"))
  ok_exec(box, "true")
  t.eq(fs.read(dir .. "/output/put.txt"), "put", "box:put (through serve), then a command")
  assert(box._session:put({{name = "output/archive.txt", data = "archive"}})) -- the engine's archive endpoint
  ok_exec(box, "true")
  t.eq(fs.read(dir .. "/output/archive.txt"), "archive", "a file the engine's archive endpoint wrote")
  unchanged_after(box, "true")
  ok_exec(box, "mkdir -p output/n1/n2 && echo f > output/n1/n2/f.txt")
  t.eq(fs.read(dir .. "/output/n1/n2/f.txt"), "f\n", "a file in new folders")
  unchanged_after(box, "true")
  ok_exec(box, "echo g > output/n1/n2/g.txt")
  t.eq(fs.read(dir .. "/output/n1/n2/g.txt"), "g\n", "a later file in the new folder (watched since)")
  ok_exec(box, "mv output/n1 output/m1 && echo x > /workspace/outside.txt")
  unchanged_after(box, "true")
  ok_exec(box, "echo h > output/m1/n2/h.txt")
  t.eq(fs.read(dir .. "/output/m1/n2/h.txt"), "h\n", "a file in a folder renamed in the tree")
  ok_exec(box, "mv /workspace/outside.txt output/moved.txt")
  t.eq(fs.read(dir .. "/output/moved.txt"), "x\n", "a file renamed into the folder")
  ok_exec(box, "mv output/moved.txt output/renamed.txt")
  t.eq(fs.read(dir .. "/output/renamed.txt"), "x\n", "a rename inside the folder")
  listed_after(box, "rm output/put.txt", 1, "a removal is a change; the copy goes at the close")
  ok_exec(box, "chmod 600 output/py.txt")
  ok_exec(box, "touch -d @0 output/py.txt")
  t.eq(fs.stat(dir .. "/output/py.txt").mtime, 0, "times set")
  local writer = assert(box:spawn("sleep 0.3; echo bg > output/bg.txt"))
  ok_exec(box, "sleep 1")
  t.eq(fs.read(dir .. "/output/bg.txt"), "bg\n", "written by a spawned process while another command ran")
  writer:close()
  assert(box:close())
end)

t.test("a write through a hard link from outside the folder is mirrored after the command", function()
  local box, dir = open_saving()
  ok_exec(box, "mkdir -p output && echo py > output/py.txt && ln output/py.txt /workspace/alias.txt")
  unchanged_after(box, "true")
  ok_exec(box, "echo ' through the link' >> /workspace/alias.txt")
  t.eq(fs.read(dir .. "/output/py.txt"), "py\n through the link\n", "a write through a hard link outside the folder")
  assert(box:close())
end, {skip_runtime = {runsc = "gVisor's inotify does not report a write through another hard link of a watched "
  .. "file (sandbox/GVISOR.md): the copy comes with the next change under the folder, or at the close"}})

t.test("a save folder made (or replaced) after the open is watched from then on", function()
  local box, dir = open_saving()
  ok_exec(box, "true")
  unchanged_after(box, "true", "no folder yet, and nothing made")
  ok_exec(box, "mkdir output && echo a > output/a.txt")
  t.eq(fs.read(dir .. "/output/a.txt"), "a\n")
  ok_exec(box, "mv output old && mkdir output && echo b > output/b.txt")
  t.eq(fs.read(dir .. "/output/b.txt"), "b\n", "the new folder")
  unchanged_after(box, "echo more >> old/a.txt", "the old folder, moved away, is not watched")
  ok_exec(box, "echo c > output/c.txt")
  t.eq(fs.read(dir .. "/output/c.txt"), "c\n", "a later file in the new folder")
  assert(box:close())
end)

t.test("when serve cannot know (a folder it cannot watch, events lost), the mirror lists, and misses nothing", function()
  local box, dir = open_saving()
  ok_exec(box, "mkdir -p output/locked && chmod 000 output/locked && echo a > output/a.txt")
  t.eq(fs.read(dir .. "/output/a.txt"), "a\n")
  listed_after(box, "true", 1, "a folder the command user cannot read cannot be watched: every pass lists")
  listed_after(box, "true", 1, "again")
  ok_exec(box, "chmod 755 output/locked")
  unchanged_after(box, "true", "watched again once it can be")
  -- watches set keep working whatever the modes become; a walk (a new folder sets them again) is what fails
  ok_exec(box, "echo in > output/locked/in.txt && chmod 444 output/locked && mkdir output/new")
  listed_after(box, "true", 1, "a folder it may read but not search: its files cannot be watched")
  ok_exec(box, "chmod 755 output/locked")
  assert(box:close())
end)

t.test("events lost in an overflow of the kernel's queue: the mirror lists, and misses nothing", function()
  local box, dir = open_saving()
  ok_exec(box, "mkdir -p output")
  -- more events than the kernel queues (fs.inotify.max_queued_events) between two
  -- reads: they are lost, a folder made after them among them
  local max = tonumber(ok_exec(box, "cat /proc/sys/fs/inotify/max_queued_events").stdout)
  t.ok(max and max > 0, "the queue's size")
  assert(box:python(("import os\nfor i in range(%d):\n  p = 'output/churn%%d' %% i\n  open(p, 'w').close()\n"
    .. "  os.remove(p)\nos.makedirs('output/late')"):format(max)))
  ok_exec(box, "echo late > output/late/f.txt")
  t.eq(fs.read(dir .. "/output/late/f.txt"), "late\n", "a file in a folder whose creation was lost in the overflow")
  unchanged_after(box, "true", "nothing changed since")
  assert(box:close())
end, {skip_runtime = {runsc = "gVisor has no /proc/sys/fs/inotify/max_queued_events to size an overflow by"}})

t.test("a restarted supervisor is asked to watch again; what changed across the restart is mirrored", function()
  local box, dir = open_saving()
  ok_exec(box, "mkdir -p output && echo 1 > output/f.txt")
  local old = box._session.supervisor
  old:close() -- serve ends with its stdin; the session starts another at the next call
  local r, err = box:exec("echo 2 > output/f.txt")
  if not r then
    t.eq(err.kind, "sandbox_restarted")
    ok_exec(box, "echo 2 > output/f.txt")
  end
  t.ok(box._session.supervisor ~= old, "a new serve")
  t.eq(fs.read(dir .. "/output/f.txt"), "2\n")
  unchanged_after(box, "true", "the new serve watches the folder too")
  ok_exec(box, "echo 3 > output/f.txt")
  t.eq(fs.read(dir .. "/output/f.txt"), "3\n")
  assert(box:close())
end)

t.test("a file held open for writing is not brought home until it is closed", function()
  local box, dir = open_saving()
  assert(box:python("import os; os.makedirs('output', exist_ok=True); f = open('output/report.md', 'w'); "
    .. "f.write('# Rep'); f.flush()"))
  t.eq(fs.stat(dir .. "/output/report.md"), nil, "half a report is not a report")
  t.ok(box.mirror.counts.busy >= 1, "counted as busy")
  assert(box:python("f.write('ort\\n'); f.close()"))
  t.eq(fs.read(dir .. "/output/report.md"), "# Report\n", "whole once closed")
  assert(box:close())
end)

t.test("a file rewritten while mirrors run is only ever brought home whole", function()
  local box, dir = open_saving()
  local whole = ("A"):rep(4000) .. ("B"):rep(4000)
  -- each round: the file opened (emptied), half written, a pause, the rest, closed, a pause
  local writer = assert(box:spawn("mkdir -p output; while :; do { printf '%04000d' 0 | tr 0 A; sleep 0.02; "
    .. "printf '%04000d' 0 | tr 0 B; } > output/w.txt; sleep 0.01; done"))
  local seen, bad = 0, nil
  for _ = 1, 80 do
    ok_exec(box, "true")
    local copy = fs.read(dir .. "/output/w.txt")
    if copy then
      seen = seen + 1
      if copy ~= whole then bad = ("%d bytes, ending %q"):format(#copy, copy:sub(-10)) end
    end
    if bad then break end
  end
  writer:kill()
  t.eq(bad, nil, "a half-written copy on the host")
  local c = box.mirror.counts
  t.ok(seen > 0 and c.copied > 0, "some copies were taken")
  t.ok(c.busy + c.unsteady > 0, ("some passes met the writer (busy %d, unsteady %d)"):format(c.busy, c.unsteady))
  assert(box:close())
end)

t.test("a file changed in place while it is copied is not brought home: the copy would be a state that never was", function()
  local box, dir = open_saving()
  local size = 64 * 1024 * 1024
  -- once the command below ends, and while the mirror copies its 64 MiB file
  -- (~0.2 s here), its first and last bytes are changed in place (same size)
  local writer = assert(box:spawn(("mkdir -p output; while [ ! -e /tmp/done ]; do sleep 0.002; done; sleep 0.05; "
    .. "printf B | dd of=output/F bs=1 seek=0 conv=notrunc 2>/dev/null; "
    .. "printf B | dd of=output/F bs=1 seek=%d conv=notrunc 2>/dev/null"):format(size - 1)))
  ok_exec(box, ("mkdir -p output && head -c %d /dev/zero | tr '\\0' A > output/F && touch /tmp/done"):format(size))
  local function ends()
    local f = io.open(dir .. "/output/F", "rb")
    if not f then return nil end
    local first = f:read(1)
    f:seek("end", -1)
    local last = f:read(1)
    f:close()
    return first .. last
  end
  local copy = ends()
  t.ok(copy == nil or copy == "AA" or copy == "BB", ("the host's copy starts and ends with %s"):format(tostring(copy)))
  t.eq(assert(writer:wait(10)).exit_code, 0)
  ok_exec(box, "true")
  t.eq(ends(), "BB", "the next pass brings the file as it is now")
  assert(box:close())
end)

t.test("a file removed in the sandbox stays on the host until the close, which removes it", function()
  local box, dir = open_saving()
  ok_exec(box, "mkdir -p output && echo x > output/x.txt && echo y > output/y.txt")
  ok_exec(box, "rm output/x.txt")
  t.eq(fs.read(dir .. "/output/x.txt"), "x\n", "kept while the run goes on")
  assert(box:close())
  t.eq(fs.stat(dir .. "/output/x.txt"), nil, "gone after the close read the whole folder")
  t.eq(fs.read(dir .. "/output/y.txt"), "y\n")
  local m = manifest(dir)
  t.eq(#m.files, 1)
  t.eq(m.files[1].path, "output/y.txt")
end)

t.test("once the recipe collected the outputs itself, the mirror copies nothing more (its manifest stays)", function()
  local box, dir = open_saving()
  ok_exec(box, "mkdir -p output && echo x > output/x.txt")
  local report = assert(luagent.outputs.collect(box, "output", dir .. "/output"))
  t.eq(#report.files, 1)
  ok_exec(box, "echo later > output/later.txt")
  t.eq(fs.stat(dir .. "/output/later.txt"), nil)
  local m = manifest(dir)
  t.eq(m.error, nil, "the collect's manifest")
  t.eq(#m.files, 1)
  assert(box:close())
end)

t.test("save = {mirror = false} turns the mirror off; bad save specs raise naming save", function()
  local box, dir = open_saving({save = {from = "output", to = work .. "/off/output", mirror = false}})
  ok_exec(box, "mkdir -p output && echo x > output/x.txt")
  t.eq(box.mirror, nil)
  t.eq(fs.stat(work .. "/off/output/x.txt"), nil)
  assert(box:close())
  t.eq(fs.read(work .. "/off/output/x.txt"), "x\n", "the close still saves")
  t.ok(dir)
  t.raises(function() sandbox.open{save = {from = "output"}} end, "save must be")
  t.raises(function() sandbox.open{save = {from = "../etc", to = work}} end, "save.from")
end)

t.test("an open with save takes a pooled session, and its outputs are mirrored", function()
  local labels = {["luagent.test"] = "mirror-spec-pool"}
  local warm <close> = assert(sandbox.pool{size = 1, labels = labels, memory = "256m"})
  local dir = work .. "/pooled"
  local box = assert(sandbox.open{labels = labels, memory = "256m", save = {from = "output", to = dir .. "/output"}})
  t.eq(box.pooled, true, "the save spec does not keep an open from the pool")
  t.eq(warm:stats().taken, 1)
  ok_exec(box, "mkdir -p output && echo p > output/p.txt")
  t.eq(fs.read(dir .. "/output/p.txt"), "p\n")
  assert(box:close())
  t.eq(manifest(dir).files[1].path, "output/p.txt")
end)

t.test("what the mirror costs a command when nothing changed", function()
  local plain <close> = assert(sandbox.open{labels = LABELS})
  local saving = open_saving()
  for _, b in ipairs({plain, saving}) do
    ok_exec(b, "mkdir -p output && for i in $(seq 1 20); do echo $i > output/f$i.txt; done")
  end
  local function median(xs) table.sort(xs) return xs[(#xs + 1) // 2] end
  local times = {plain = {}, saving = {}}
  for i = 1, 43 do -- alternating, three warm-up rounds
    for _, which in ipairs({"plain", "saving"}) do
      local box = which == "plain" and plain or saving
      local started = luagent.now()
      ok_exec(box, {"true"})
      if i > 3 then table.insert(times[which], luagent.now() - started) end
    end
  end
  local p, s = median(times.plain) * 1000, median(times.saving) * 1000
  print(("# box:exec{'true'}, median of 40: %.2f ms, %.2f ms with save (20 files mirrored): +%.2f ms")
    :format(p, s, s - p))
  t.lt(s - p, 10, "the mirror's cost per command (ms) is a listing, not a copy")
  assert(saving:close())
end)

return t.done()

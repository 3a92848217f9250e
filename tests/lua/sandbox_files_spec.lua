-- needs: docker
-- box:get and box:put of one file through the sandbox
-- supervisor's read and put ops (sandbox/supervisor/fileio.c): no link
-- followed, no way out of the workspace, the limits and error kinds of the
-- engine's archive path they replace, whole files owned by the sandbox user,
-- and a full workspace named; plus the engine path kept for when the
-- supervisor is not up.
local t = require "helper"
local sandbox, sys = luagent.sandbox, luagent.sys

local box = assert(sandbox.open{memory = "256m", timeout = 30})

local function ok_exec(b, cmd)
  local r, err = b:exec(cmd)
  if not r then error("exec failed: " .. tostring(err and err.message), 2) end
  return r
end

-- How many requests the session's supervisor was sent while fn ran.
local function requests(b, fn)
  local ex = b._session.supervisor
  local before = ex.next_id
  fn()
  return ex.next_id - before
end

ok_exec(box, "true") -- the supervisor is up

t.test("a get and a put are one supervisor request each, not an engine archive call", function()
  t.eq(requests(box, function() assert(box:put("one.txt", "one\n")) end), 1)
  t.eq(requests(box, function() t.eq(box:get("one.txt"), "one\n") end), 1)
end)

t.test("a session's first file operation, before any command, goes through the supervisor", function()
  local seen = {}
  local sub = luagent.events.subscribe(function(ev) if ev.type == "sandbox_file" then seen[#seen + 1] = ev end end)
  local fresh <close> = assert(sandbox.open{memory = "256m"})
  assert(fresh:put("first.txt", "first\n"))
  t.eq(fresh:get("first.txt"), "first\n")
  luagent.events.unsubscribe(sub)
  t.eq(#seen, 2, "a sandbox_file event each")
  t.eq(seen[1].op, "put"); t.eq(seen[1].via, "supervisor", "the put waited for serve, not the archive endpoint")
  t.eq(seen[2].op, "get"); t.eq(seen[2].via, "supervisor")
  t.eq(seen[1].bytes, 6); t.eq(seen[1].path, "first.txt")
end)

t.test("a symlink in the path, or as the file, is refused and never followed", function()
  ok_exec(box, "mkdir -p real && echo x > real/f && ln -sfn real linkdir && ln -sf real/f linkfile"
    .. " && ln -sf /etc/passwd passwd")
  for _, name in ipairs({"linkdir/f", "linkfile", "passwd"}) do
    local v, err = box:get(name)
    t.eq(v, nil, name); t.eq(err.kind, "refused", name); t.match(err.message, "symbolic link", name)
  end
  local ok, err = box:put("linkdir/new.txt", "no")
  t.eq(ok, nil); t.eq(err.kind, "refused"); t.match(err.message, "symbolic link")
  ok, err = box:put("linkfile", "no")
  t.eq(ok, nil); t.eq(err.kind, "refused")
  t.eq(ok_exec(box, "cat real/f; find real -mindepth 1 -printf '%f\\n'").stdout, "x\nf\n", "nothing written through a link")
end)

t.test("a path with '..' is refused, by the host and by the supervisor", function()
  t.raises(function() box:get("a/../../etc/passwd") end, "")
  t.raises(function() box:put("../escape.txt", "no") end, "")
  local session = box._session
  local raw = assert(session:_run("read", {path = "/workspace/../etc/passwd", max_bytes = 1000}))
  t.eq(raw.exit_code, 2); t.eq(raw.stdout, ""); t.match(raw.stderr, "^refused ")
  raw = assert(session:_run("put", {path = "/workspace/sub/../../tmp/x", data = "no"}))
  t.eq(raw.exit_code, 1); t.match(raw.failure, "^refused ")
  t.eq(ok_exec(box, "for p in /tmp/x sub; do [ -e $p ] || echo No such file: $p; done").stdout:match("No such file") ~= nil, true)
end)

t.test("max_bytes refuses a larger file, saying its size", function()
  assert(box:put("thousand.bin", ("z"):rep(1000)))
  local v, err = box:get("thousand.bin", {max_bytes = 999})
  t.eq(v, nil); t.eq(err.kind, "too_large"); t.match(err.message, "1000 bytes"); t.match(err.message, "999")
  t.eq(#assert(box:get("thousand.bin", {max_bytes = 1000})), 1000)
end)

t.test("a missing file, a folder, an empty file", function()
  local v, err = box:get("nope/missing.txt")
  t.eq(v, nil); t.eq(err.kind, "not_found"); t.eq(err.message, "no such file in the workspace: nope/missing.txt")
  v, err = box:get("missing.txt")
  t.eq(v, nil); t.eq(err.kind, "not_found"); t.eq(err.message, "no such file in the workspace: missing.txt")
  ok_exec(box, "mkdir -p afolder")
  v, err = box:get("afolder")
  t.eq(v, nil); t.eq(err.kind, "not_a_file"); t.match(err.message, "folder")
  local ok
  ok, err = box:put("afolder", "no")
  t.eq(ok, nil); t.eq(err.kind, "not_a_file")
  assert(box:put("empty.txt", ""))
  t.eq(box:get("empty.txt"), "")
end)

t.test("10 MB round trip, byte-exact", function()
  local bytes = {}
  for i = 0, 255 do bytes[#bytes + 1] = string.char(i) end
  local data = table.concat(bytes):rep(10 * 1024 * 1024 // 256) .. "tail"
  assert(box:put("big/ten.bin", data))
  t.eq(ok_exec(box, "sha256sum big/ten.bin").stdout:match("^(%x+)"), sys.sha256(data))
  local back = assert(box:get("big/ten.bin"))
  t.eq(#back, #data); t.ok(back == data, "the same bytes")
end)

t.test("a put makes missing folders; file and folders are the sandbox user's; mode and replacing", function()
  assert(box:put("new/deeper/f.txt", "hi\n"))
  local r = ok_exec(box, "id -u; id -g; find new new/deeper new/deeper/f.txt -maxdepth 0 -printf '%U:%G %m\\n';"
    .. " cat new/deeper/f.txt")
  local uid, gid = r.stdout:match("^(%d+)\n(%d+)\n")
  local owner = uid .. ":" .. gid
  t.eq(r.stdout, ("%s\n%s\n%s 755\n%s 755\n%s 644\nhi\n"):format(uid, gid, owner, owner, owner))
  assert(box:put("new/run.sh", "#!/bin/sh\necho ran\n", {mode = 493}))
  t.eq(ok_exec(box, "find new/run.sh -printf '%m\\n'; ./new/run.sh").stdout, "755\nran\n")
  assert(box:put("new/deeper/f.txt", "replaced\n"))
  t.eq(ok_exec(box, "cat new/deeper/f.txt; find new/deeper -mindepth 1 -printf '%f\\n'").stdout, "replaced\nf.txt\n",
    "no temporary file left")
end)

t.test("a put that fills the workspace fails naming workspace_size, and leaves the old file whole", function()
  local small <close> = assert(sandbox.open{workspace_size = "1m"})
  ok_exec(small, "true")
  assert(small:put("keep.txt", "old\n"))
  local ok, err = small:put("keep.txt", ("x"):rep(2 * 1024 * 1024))
  t.eq(ok, nil); t.eq(err.kind, "io")
  t.match(err.message, "no space left in the workspace %(workspace_size%)")
  t.eq(ok_exec(small, "cat keep.txt; find . -mindepth 1 -maxdepth 1 -printf '%f\\n'").stdout, "old\nkeep.txt\n",
    "the old file, no temporary one")
end)

t.test("without the supervisor up, get and put go through the engine as before", function()
  local session = box._session
  session._file_supervisor = function() return false end
  local ok, err = pcall(function()
    assert(box:put("engine/path.txt", "via engine\n"))
    t.eq(box:get("engine/path.txt"), "via engine\n")
    local v, gerr = box:get("engine/none.txt")
    t.eq(v, nil); t.eq(gerr.kind, "not_found")
  end)
  session._file_supervisor = nil
  if not ok then error(err, 0) end
end)

box:close()
return t.done()

-- needs: docker
-- `luagent-supervisor unpack DIR [MAX_BYTES]` (sandbox/supervisor/unpack.c): a tar on
-- stdin extracted into the workspace as the command user, by the host's extraction
-- rules, for staging where no archive endpoint exists (Kubernetes). Small tars go as
-- box:exec's stdin; a 200 MB one is streamed from tar.stream through box:spawn and
-- process:write with the host's memory flat. Hostile tars are built here by hand,
-- 512-byte headers: nothing is ever written outside the workspace. Prints the MB/s of
-- unpack beside the engine's archive PUT (box._session:put) for the same 100 MB.
local t = require "helper"
local sandbox, tar, fs, sys = luagent.sandbox, require "luagent.tar", luagent.fs, luagent.sys

local UNPACK = "/run/luagent/luagent-supervisor"
local MB = 1024 * 1024
local work = assert(fs.temp_dir("luagent-unpack-spec"))
luagent.at_exit(function() fs.remove(work) end)

local box = assert(sandbox.open{timeout = 120})

local function ok_exec(b, cmd, opts)
  local r, err = b:exec(cmd, opts)
  if not r then error("exec failed: " .. tostring(err), 2) end
  return r
end

-- unpack of the tar bytes into dir (default /workspace) in b (default box).
local function unpack(bytes, opts)
  opts = opts or {}
  local argv = {UNPACK, "unpack", opts.dir or "/workspace", opts.max and tostring(opts.max) or nil}
  return ok_exec(opts.box or box, argv, {stdin = bytes})
end

-- ---- tars made by hand ----

local function field(s, width) return s .. ("\0"):rep(width - #s) end
local function octal(n, width) return ("%0" .. (width - 1) .. "o\0"):format(n) end

-- One ustar header block; o: type ("0"), size (0), mode (420), link (""), mtime.
local function header(name, o)
  local h = field(name, 100) .. octal(o.mode or 420, 8) .. octal(1000, 8) .. octal(1000, 8)
    .. octal(o.size or 0, 12) .. octal(o.mtime or 1700000000, 12) .. "        " .. (o.type or "0")
    .. field(o.link or "", 100) .. "ustar\0" .. "00"
  h = field(h, 512)
  local sum = 0
  for i = 1, 512 do sum = sum + h:byte(i) end
  return h:sub(1, 148) .. ("%06o\0 "):format(sum) .. h:sub(157)
end

local function padded(data) return data .. ("\0"):rep((512 - #data % 512) % 512) end

-- An entry: a header and its data; o as header's, o.data the bytes.
local function entry(name, o)
  o = o or {}
  local data = o.data or ""
  if (o.type or "0") == "0" then o.size = #data end
  return header(name, o) .. padded(data)
end

local function tarball(...) return table.concat({...}) .. ("\0"):rep(1024) end

-- All of a tar.stream, read in chunks of n, and what its size() said.
local function stream_bytes(entries, n)
  local reader <close> = assert(tar.stream(entries))
  local parts = {}
  while true do
    local chunk, err = reader:read(n or 4096)
    if not chunk then assert(not err, err) break end
    parts[#parts + 1] = chunk
  end
  return table.concat(parts), reader:size()
end

local function lines(s)
  local out = {}
  for line in s:gmatch("[^\n]+") do out[#out + 1] = line end
  return out
end

-- ---- what a staging needs ----

t.test("files, folders and a long (PAX) name from tar.stream; owned by the command user, mtimes kept", function()
  local long = ("deep/"):rep(30) .. ("n"):rep(150) .. ".txt"
  local host = work .. "/host.txt"
  assert(fs.write(host, "from a host file\n"))
  local bytes, size = stream_bytes({{name = "stage/a.txt", data = "alpha\n", mode = 420}, {name = "stage/empty", dir = true},
                                    {name = long, data = "long\n"}, {name = "stage/host.txt", file = host}}, 1000)
  t.eq(#bytes, size, "size() is the stream's length")
  local r = unpack(bytes)
  t.eq(r.exit_code, 0, r.stderr); t.eq(r.stdout, "unpacked 3 files, 28 bytes\n"); t.eq(r.stderr, "")
  r = ok_exec(box, {"sh", "-c", 'cat stage/a.txt "$1" stage/host.txt; stat -c "%u:%g %a %F %n" stage stage/empty stage/a.txt'
    .. ' "$1"; ls -A stage', "sh", long})
  t.eq(r.stdout, "alpha\nlong\nfrom a host file\n1000:1000 755 directory stage\n1000:1000 755 directory stage/empty\n"
    .. "1000:1000 644 regular file stage/a.txt\n1000:1000 644 regular file " .. long .. "\na.txt\nempty\nhost.txt\n",
    "no temporary file left beside them")
  r = unpack(tarball(entry("when.txt", {data = "t", mtime = 1234567890})))
  t.eq(r.exit_code, 0)
  t.eq(ok_exec(box, "stat -c %Y when.txt").stdout, "1234567890\n", "the header's mtime")
end)

t.test("a GNU long name (type L) is read too", function()
  local name = ("g"):rep(120) .. "/file.txt"
  local r = unpack(tarball(entry("././@LongLink", {type = "L", size = #name + 1}) .. padded(name .. "\0"),
                           entry(name:sub(1, 99), {data = "gnu\n"})))
  t.eq(r.exit_code, 0, r.stdout .. r.stderr)
  t.eq(ok_exec(box, {"cat", name}).stdout, "gnu\n")
end)

t.test("an existing file is replaced whole; a file over a planted leaf symlink replaces the link", function()
  ok_exec(box, "echo old > keep.txt && ln -sfn /tmp/leaf-target leaf")
  local r = unpack(tarball(entry("keep.txt", {data = "new\n"}), entry("leaf", {data = "not through\n"})))
  t.eq(r.exit_code, 0, r.stdout)
  r = ok_exec(box, "cat keep.txt leaf; stat -c %F leaf; ls /tmp/leaf-target 2>&1 || true")
  t.match(r.stdout, "^new\nnot through\nregular file\n.*No such file")
end)

t.test("setuid, setgid and sticky bits are stripped", function()
  local r = unpack(tarball(entry("modes", {type = "5", mode = tonumber("3777", 8)}),
                           entry("modes/suid", {mode = tonumber("4755", 8), data = "#!/bin/sh\n"}),
                           entry("modes/sgid", {mode = tonumber("2700", 8), data = "x"})))
  t.eq(r.exit_code, 0, r.stdout)
  t.eq(ok_exec(box, "stat -c '%a %n' modes modes/suid modes/sgid").stdout, "777 modes\n755 modes/suid\n700 modes/sgid\n")
end)

-- ---- hostile tars ----

t.test("escapes, links, devices and a planted symlink are refused and reported; nothing lands outside", function()
  ok_exec(box, "ln -sfn /etc planted && ln -sfn /tmp planted_tmp")
  local bytes = tarball(
    entry("../escape", {data = "no"}), entry("sub/../../escape2", {data = "no"}), entry("/abs", {data = "no"}),
    entry("evil_link", {type = "2", link = "/etc/passwd"}), entry("hard", {type = "1", link = "good.txt"}),
    entry("dev", {type = "3"}), entry("blk", {type = "4"}), entry("fifo", {type = "6"}),
    entry("planted/x", {data = "no"}), entry("planted_tmp/x", {data = "no"}),
    entry("planted_tmp/newdir/y", {data = "no"}), entry("planted_tmp", {type = "5"}),
    entry("good.txt", {data = "good\n"}))
  local r = unpack(bytes)
  t.eq(r.exit_code, 1, "refusals: exit 1")
  t.same(lines(r.stdout), {
    "refused ../escape: '..' in path",
    "refused sub/../../escape2: '..' in path",
    "refused /abs: absolute path",
    "refused evil_link: a symbolic link (only files and folders are unpacked)",
    "refused hard: a hard link (only files and folders are unpacked)",
    "refused dev: a device (only files and folders are unpacked)",
    "refused blk: a device (only files and folders are unpacked)",
    "refused fifo: a fifo (only files and folders are unpacked)",
    "refused planted/x: a symbolic link in the path (never followed)",
    "refused planted_tmp/x: a symbolic link in the path (never followed)",
    "refused planted_tmp/newdir/y: a symbolic link in the path (never followed)",
    "refused planted_tmp: a symbolic link is in the way (never followed)",
    "unpacked 1 files, 5 bytes"})
  t.eq(r.stderr, "")
  r = ok_exec(box, "cat good.txt; for p in /escape /escape2 /workspace/escape /abs /workspace/abs /tmp/x /tmp/newdir"
    .. " /etc/x /workspace/evil_link /workspace/hard /workspace/dev /workspace/fifo; do [ -e $p ] && echo THERE $p;"
    .. " done; readlink planted_tmp; true")
  t.eq(r.stdout, "good\n/tmp\n", "only good.txt was written; the planted link is left as it was")
end)

t.test("a file where a folder is, and a path through a file, are refused; the rest goes on", function()
  ok_exec(box, "mkdir -p adir && echo f > afile")
  local r = unpack(tarball(entry("adir", {data = "no"}), entry("afile/under", {data = "no"}),
                           entry("afile", {type = "5"}), entry("after.txt", {data = "yes"})))
  t.eq(r.exit_code, 1)
  t.same(lines(r.stdout), {"refused adir: a folder is in the way",
                           "refused afile/under: a component of the path is not a folder",
                           "refused afile: a file is in the way", "unpacked 1 files, 3 bytes"})
  t.eq(ok_exec(box, "cat after.txt afile; [ -d adir ] && echo dir").stdout, "yesf\ndir\n")
end)

t.test("a name with a newline is reported on one line", function()
  local r = unpack(tarball(entry("bad\nname\\x", {type = "6"})))
  t.eq(r.exit_code, 1); t.eq(r.stdout, "refused bad\\012name\\134x: a fifo (only files and folders are unpacked)\n"
    .. "unpacked 0 files, 0 bytes\n")
end)

t.test("MAX_BYTES refuses a file its header says would pass the cap, unread; the rest goes on", function()
  local r = unpack(tarball(entry("cap/one", {data = ("1"):rep(600)}), entry("cap/two", {data = ("2"):rep(600)}),
                           entry("cap/three", {data = ("3"):rep(400)})), {max = 1000})
  t.eq(r.exit_code, 1)
  t.eq(r.stdout, "refused cap/two: over the byte limit (MAX_BYTES)\nunpacked 2 files, 1000 bytes\n")
  t.eq(ok_exec(box, "ls cap").stdout, "one\nthree\n")
end)

t.test("a truncated or corrupt tar is fatal (exit 2, malformed); the cut file is not left", function()
  local whole = tarball(entry("trunc/first", {data = "first"}), entry("trunc/second", {data = ("s"):rep(5000)}))
  local r = unpack(whole:sub(1, 512 * 4))
  t.eq(r.exit_code, 2); t.match(r.stderr, "^unpack: malformed tar stream: truncated tar stream: it ends inside the data")
  t.eq(r.stdout, "unpacked 1 files, 5 bytes\n")
  t.eq(ok_exec(box, "ls -A trunc").stdout, "first\n", "no second, no temporary file")
  local bad = header("x", {}):gsub("^x", "y")
  r = unpack(bad .. ("\0"):rep(1024))
  t.eq(r.exit_code, 2); t.match(r.stderr, "malformed tar stream: bad header checksum")
  r = unpack("", {dir = "/workspace/nope"})
  t.eq(r.exit_code, 2); t.match(r.stderr, "cannot open the folder /workspace/nope")
  r = unpack("", {dir = "/workspace/planted"})
  t.eq(r.exit_code, 2); t.match(r.stderr, "it is a symbolic link")
end)

t.test("a file over workspace_size: exit 2, no space named, nothing left under its name", function()
  local small <close> = assert(sandbox.open{workspace_size = "8m"})
  local big = work .. "/20m.bin"
  local f = assert(io.open(big, "wb"))
  for i = 1, 20 do f:write((string.char(i)):rep(MB)) end
  f:close()
  local r = unpack(stream_bytes({{name = "ok.txt", data = "fits\n"}, {name = "in/big.bin", file = big}}, MB),
                   {box = small})
  t.eq(r.exit_code, 2, r.stdout)
  t.match(r.stderr, "^unpack: cannot write in/big.bin: no space left in the workspace %(workspace_size%)\n$")
  t.eq(r.stdout, "unpacked 1 files, 5 bytes\n", "the bytes of the cut file are not counted")
  t.eq(ok_exec(small, "ls -A /workspace /workspace/in").stdout, "/workspace:\nin\nok.txt\n\n/workspace/in:\n",
       "nothing under its name, no temporary file")
  t.lt(tonumber(ok_exec(small, "df -k /workspace | tail -1").stdout:match("^%S+%s+%d+%s+(%d+)")), 100,
       "the cut file's space is given back (KiB used)")
end)

t.test("any image: unpack needs no tar in the sandbox (busybox)", function()
  local root = (luagent.recipe or ""):match("^(.*)tests/lua/[^/]*$") or ""
  local code, out = sys.execute({"sh", root .. "tools/busybox-image.sh", "luagent-busybox:test"})
  if code ~= 0 then error("tools/busybox-image.sh: " .. out) end
  local bb <close> = assert(sandbox.open{image = "luagent-busybox:test"})
  local r = unpack(stream_bytes({{name = "x/y.txt", data = "busy\n"}}), {box = bb})
  t.eq(r.exit_code, 0, r.stderr)
  t.eq(ok_exec(bb, "cat x/y.txt").stdout, "busy\n")
end)

-- ---- large: streamed ----

local function status(field_name)
  local f = assert(io.open("/proc/self/status"))
  local text = f:read("a")
  f:close()
  return tonumber(text:match(field_name .. ":%s*(%d+) kB")) * 1024
end

-- A host file of `size` bytes, sparse, with a distinct word every MiB (its sha256 is not that of zeros).
local function sparse_file(path, size)
  local f = assert(io.open(path, "wb"))
  for off = 0, size - MB, MB do
    f:seek("set", off)
    f:write(("block %d\n"):format(off // MB))
  end
  f:seek("set", size - 1)
  f:write("\n")
  f:close()
end

-- Streams a tar.stream of entries into unpack through spawn + write; returns
-- the result, the seconds it took, and the bytes of the stream.
local function stream_unpack(b, entries)
  local started = luagent.now()
  local reader <close> = assert(tar.stream(entries))
  local proc <close> = assert(b:spawn({UNPACK, "unpack", "/workspace"}, {stdin = true}))
  while true do
    local chunk = reader:read(MB)
    if not chunk then break end
    assert(proc:write(chunk))
  end
  assert(proc:close_stdin())
  local r = assert(proc:wait(300))
  return r, luagent.now() - started, reader:size()
end

t.test("200 MB streamed from tar.stream through spawn + write: intact, host memory flat", function()
  local path = work .. "/sparse200.bin"
  sparse_file(path, 200 * MB)
  local host_sha = assert(sys.sha256_file(path))
  collectgarbage()
  local before = status("VmRSS")
  local reset = io.open("/proc/self/clear_refs", "w")
  local can_reset = reset and reset:write("5") and reset:close()
  local r, seconds = stream_unpack(box, {{name = "big/sparse200.bin", file = path}})
  t.eq(r.exit_code, 0, r.stderr); t.eq(r.stdout, ("unpacked 1 files, %d bytes\n"):format(200 * MB))
  local peak = can_reset and status("VmHWM") or sys.maxrss()
  local grew = peak - before
  print(("    # 200 MB through unpack in %.2f s (%.0f MB/s); host resident %.1f MB before, peak %.1f MB during%s"):format(
    seconds, 200 / seconds, before / MB, peak / MB, can_reset and "" or " (maxrss: VmHWM could not be reset)"))
  t.lt(grew, 64 * MB, "the host's peak memory grew by much less than the file")
  t.eq(ok_exec(box, "sha256sum big/sparse200.bin; rm -r big").stdout:match("^(%x+)"), host_sha, "the bytes inside")
end)

-- The same writes into `cat > FILE`: what the transport alone costs.
local function stream_cat(b, path)
  local started = luagent.now()
  local f <close> = assert(io.open(path, "rb"))
  local proc <close> = assert(b:spawn({"sh", "-c", "mkdir -p bench && cat > bench/cat.bin"}, {stdin = true}))
  for chunk in function() return f:read(MB) end do assert(proc:write(chunk)) end
  assert(proc:close_stdin())
  t.eq(assert(proc:wait(300)).exit_code, 0)
  return luagent.now() - started
end

t.test("measure: 100 MB through unpack (spawn + write), cat (the same writes), the engine's archive PUT", function()
  local path = work .. "/dense100.bin"
  local f = assert(io.open(path, "wb"))
  local block = {}
  for i = 0, 16383 do block[#block + 1] = string.pack("<I4", i * 2654435761 % 4294967296) end
  block = table.concat(block) -- 64 KiB of non-repeating words
  for _ = 1, 1600 do f:write(block) end
  f:close()
  local host_sha = assert(sys.sha256_file(path))
  local figures = {}
  for round = 1, 3 do
    local r, seconds = stream_unpack(box, {{name = "bench/unpack.bin", file = path}})
    t.eq(r.exit_code, 0, r.stderr)
    local cat = stream_cat(box, path)
    local started = luagent.now()
    assert(box._session:put({{name = "bench/archive.bin", file = path}}))
    local archive = luagent.now() - started
    local sums = ok_exec(box, "sha256sum bench/unpack.bin bench/cat.bin bench/archive.bin; rm -r bench").stdout
    local n = 0
    for sha in sums:gmatch("(%x+)  ") do n = n + 1; t.eq(sha, host_sha, "the bytes inside") end
    t.eq(n, 3)
    figures[#figures + 1] = ("round %d: unpack %.0f MB/s (%.2f s), cat %.0f MB/s (%.2f s), archive PUT %.0f MB/s (%.2f s)")
      :format(round, 100 / seconds, seconds, 100 / cat, cat, 100 / archive, archive)
  end
  for _, line in ipairs(figures) do print("    # 100 MB " .. line) end
end)

box:close()
return t.done()

-- needs: docker
-- The low-level bindings used directly, so that tests/run can also run them
-- under valgrind: luagent.tar (write, list, extract of a small tree),
-- luagent.sys (the host helpers) and luagent.engine_stream against the real
-- engine (one exec stream, one put/get archive) on a container this spec
-- creates under a unique name and removes.
local t = require "helper"
local tar, sys, fs, engine_stream = luagent.tar, luagent.sys, luagent.fs, luagent.engine_stream
local engine = require "luagent.engine_client"
local sandbox = require "luagent.sandbox"

local work = assert(fs.temp_dir("luagent-lowlevel-spec"))
luagent.at_exit(function() fs.remove(work) end)

local function read(path)
  local f = assert(io.open(path, "rb"))
  local data = f:read("a")
  f:close()
  return data
end

local BINARY = "\0\1\2\255 binary\n"

-- ---- tar ----

t.test("tar.write, then the host's tar lists what was written", function()
  assert(fs.write(work .. "/hello.txt", "hello\n"))
  local bytes = assert(tar.write(work .. "/tree.tar", {
    {name = "tree/hello.txt", file = work .. "/hello.txt"},
    {name = "tree/sub/data.bin", data = BINARY, mode = tonumber("600", 8)},
    {name = "tree/empty", dir = true},
    {name = "tree/link", symlink = "hello.txt"},
    {name = "tree/escape", symlink = "../../etc"},
  }))
  t.eq(bytes % 512, 0, "a tar is whole 512-byte blocks")
  local code, listing = sys.execute({"tar", "-tvf", work .. "/tree.tar"})
  t.eq(code, 0, "tar -tvf exit code")
  t.match(listing, "%-rw%-r%-%-r%-%- 0/0 +6 [^\n]* tree/hello%.txt\n")
  t.match(listing, "%-rw%-%-%-%-%-%-%- 0/0 +" .. #BINARY .. " [^\n]* tree/sub/data%.bin\n")
  t.match(listing, "drwxr%-xr%-x [^\n]* tree/sub/\n", "the parent folder is added")
  t.match(listing, "drwxr%-xr%-x [^\n]* tree/empty/\n")
  t.match(listing, "tree/link %-> hello%.txt\n")
end)

t.test("tar.extract writes the tree and refuses the link that leaves it", function()
  local dest = work .. "/out"
  local report = assert(tar.extract(work .. "/tree.tar", dest, {strip = "tree"}))
  table.sort(report.files, function(a, b) return a.path < b.path end)
  t.same(report.files, {{path = "hello.txt", size = 6}, {path = "sub/data.bin", size = #BINARY}})
  t.eq(report.bytes, 6 + #BINARY)
  t.eq(#report.refused, 1, "one entry refused")
  t.eq(report.refused[1].name, "tree/escape")
  t.eq(read(dest .. "/hello.txt"), "hello\n")
  t.eq(read(dest .. "/sub/data.bin"), BINARY)
  t.eq(read(dest .. "/link"), "hello\n", "the link inside the tree is kept")
  t.ok(fs.exists(dest .. "/empty"), "the empty folder exists")
  t.ok(not fs.exists(dest .. "/escape"), "the escaping link is not written")
end)

t.test("tar refuses a '..' name and a missing file with an error value", function()
  local _, err = tar.write(work .. "/bad.tar", {{name = "../x", data = "1"}})
  t.ok(err, "a '..' name is refused")
  t.eq(err.kind, "bad_entry", "a bad name is a bad entry, not a missing file")
  t.match(tostring(err), "%.%.")
  _, err = tar.write(work .. "/bad.tar", {{name = "x", file = work .. "/missing"}})
  t.eq(err and err.kind, "not_found")
  _, err = tar.extract(work .. "/missing.tar", work .. "/out2")
  t.eq(err and err.kind, "not_found")
end)

-- ---- sys ----

t.test("sys: process facts, environment, time", function()
  local pid = sys.pid()
  t.ok(math.type(pid) == "integer" and pid > 1, "pid is an integer")
  t.eq(sys.alive(pid), true)
  t.eq(sys.alive(2 ^ 22 + 1), false, "a pid above pid_max is not alive")
  t.ok(sys.process_start(pid) > 0, "this process has a start time")
  t.eq(sys.getenv("LUAGENT_LOWLEVEL_UNSET_" .. sys.random_hex(4)), nil)
  t.eq(sys.getenv("HOME"), os.getenv("HOME"))
  t.eq(type(sys.isatty(0)), "boolean")
  t.ok(#sys.hostname() > 0, "a hostname")
  t.lt(math.abs(sys.time() - os.time()), 2, "sys.time is wall-clock seconds")
  t.ok(sys.maxrss() > 1024 * 1024, "peak memory in bytes")
end)

t.test("sys: execute, random, digests, base64, assets", function()
  local code, out = sys.execute({"sh", "-c", "echo out; echo err >&2; exit 3"})
  t.eq(code, 3)
  t.match(out, "out\n")
  t.match(out, "err\n")
  local hex = sys.random_hex(8)
  t.match(hex, "^%x+$")
  t.eq(#hex, 16)
  t.ok(hex ~= sys.random_hex(8), "two draws differ")
  t.eq(sys.sha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
  local digest, size = sys.sha256_file(work .. "/hello.txt")
  t.eq(digest, sys.sha256("hello\n"))
  t.eq(size, 6)
  local _, err = sys.sha256_file(work .. "/missing")
  t.eq(err and err.kind, "not_found")
  t.eq(sys.base64("hello"), "aGVsbG8=")
  t.eq(sys.base64(""), "")
  t.match(sys.asset("sandbox/Dockerfile"), "FROM ")
  t.eq(sys.asset("no/such/asset"), nil)
end)

t.test("sys: signal names and numbers, from the one table in C", function()
  t.eq(sys.signal_name(15), "TERM")
  t.eq(sys.signal_name(9), "KILL")
  t.eq(sys.signal_name(0), nil)
  t.eq(sys.signal_name(77), nil, "a number with no name")
  t.eq(sys.signal_number("TERM"), 15)
  t.eq(sys.signal_number("sigint"), 2, "case and the SIG prefix do not matter")
  t.eq(sys.signal_number("15"), 15)
  t.eq(sys.signal_number("NOPE"), nil)
  for _, name in ipairs{"HUP", "INT", "QUIT", "ABRT", "KILL", "SEGV", "PIPE", "TERM", "USR1", "USR2", "ALRM",
                        "CONT", "STOP"} do -- every name the Lua tables had
    t.eq(sys.signal_name(sys.signal_number(name)), name)
  end
end)

-- ---- handles born closed ----

-- Every C handle counts as closed until its constructor is done (lua_util.h):
-- a constructor that fails half way closes nothing by hand, and the handle's
-- __gc frees what it already held. Here each fails after it made its handle
-- and took something (run under valgrind and ASan: nothing may leak).
t.test("a constructor that fails half way leaves a closed handle that its __gc frees", function()
  local _, err = tar.write(work .. "/half.tar", {{name = "kept.txt", data = "1"}, {name = "../x", data = "2"}})
  t.eq(err and err.kind, "bad_entry", "the writer held an entry when the second was refused")
  assert(fs.write(work .. "/a-file", "not a folder"))
  local url = "http://localhost:1/v1.41"
  _, err = engine_stream.put_archive{url = url .. "/containers/x/archive?path=/tmp",
                                     entries = {{name = "a", data = "1"}, {name = "/abs/../..", data = "2"}}}
  t.eq(err and err.kind, "bad_entry", "put_archive: a bad entry, before any transfer")
  _, err = engine_stream.get_archive{url = url .. "/containers/x/archive?path=/tmp", dest = work .. "/a-file/dir"}
  t.eq(err and err.kind, "io", "get_archive: the extractor cannot open its folder")
  _, err = engine_stream.save_archive{url = url .. "/containers/x/archive?path=/tmp", path = work .. "/a-file/x.tar"}
  t.eq(err and err.kind, "io", "save_archive: the temporary file cannot be made")
  local ok, raised = pcall(engine_stream.exec_start, {url = url .. "/exec/x/start", body_file = work .. "/missing",
                                                      max_output = 4096})
  t.eq(ok, false, "exec_start raises when its transfer cannot start")
  t.match(tostring(raised), "missing")
  _, err = engine_stream.supervisor{url = "ftp://localhost/exec/x/start", timeout = 1}
  t.eq(err and err.kind, "config", "supervisor: the attach cannot start")
  _, err = require("luagent.process").spawn{argv = {work .. "/no-such-program"}}
  t.eq(err and err.kind, "not_found")
  collectgarbage("collect")
  collectgarbage("collect")
end)

-- ---- engine_stream against the real engine ----

local client = assert(engine.connect())
local name = "luagent-lowlevel-" .. sys.random_hex(6)
local created = assert(client:call("POST", "/containers/create", {
  Image = sandbox.IMAGE, Cmd = {"sleep", "infinity"}, Labels = {["luagent.test"] = "lowlevel"},
  NetworkDisabled = true, HostConfig = {NetworkMode = "none", Init = true},
}, {query = {name = name}}))
local container = created.Id
local function remove_container()
  if container then
    client:call("DELETE", "/containers/" .. container, nil, {query = {force = 1, v = 1}})
    container = nil
  end
end
luagent.at_exit(remove_container)
assert(client:call("POST", "/containers/" .. container .. "/start"))

local function archive_options(path, extra)
  return client:options("/containers/" .. container .. "/archive" .. engine.query_string({path = path}), extra)
end

t.test("engine_stream.exec_start streams stdout and stderr apart", function()
  local exec = assert(client:call("POST", "/containers/" .. container .. "/exec", {
    AttachStdout = true, AttachStderr = true, Tty = false,
    Cmd = {"sh", "-c", "echo to-stdout; echo to-stderr >&2; head -c 5000 /dev/zero | tr '\\0' x; exit 3"},
  }))
  local stream = engine_stream.exec_start(client:options("/exec/" .. exec.Id .. "/start",
    {body = '{"Detach":false,"Tty":false}', max_output = 1000}))
  t.eq(stream:wait(30), true, "the output ended")
  local out = assert(stream:result())
  t.eq(out.stderr, "to-stderr\n")
  t.eq(out.stdout:sub(1, 10), "to-stdout\n")
  t.lt(#out.stdout, 1200, "stdout capped near max_output")
  t.match(out.stdout, "bytes omitted", "the cut is marked")
  t.match(out.stdout, "xxx$", "the last part is kept")
  t.eq(out.stdout_bytes, 10 + 5000, "every byte counted")
  t.ok(out.truncated, "marked truncated")
  local info = assert(client:call("GET", "/exec/" .. exec.Id .. "/json"))
  t.eq(info.ExitCode, 3)
end)

t.test("engine_stream.put_archive, read_file and get_archive round-trip a small tree", function()
  assert(engine_stream.put_archive(archive_options("/tmp", {entries = {
    {name = "lowlevel/a.txt", data = "alpha\n"},
    {name = "lowlevel/sub/b.bin", data = BINARY},
    {name = "lowlevel/empty", dir = true},
  }, uid = 0, gid = 0, timeout = 60})))
  t.eq(assert(engine_stream.read_file(archive_options("/tmp/lowlevel/a.txt", {max_bytes = 1024, timeout = 60}))),
       "alpha\n")
  local dest = work .. "/from-container"
  local report = assert(engine_stream.get_archive(archive_options("/tmp/lowlevel",
    {dest = dest, strip = "lowlevel", timeout = 60})))
  table.sort(report.files, function(a, b) return a.path < b.path end)
  t.same(report.files, {{path = "a.txt", size = 6}, {path = "sub/b.bin", size = #BINARY}})
  t.eq(read(dest .. "/sub/b.bin"), BINARY)
  t.ok(fs.exists(dest .. "/empty"), "the empty folder came back")
  local _, err = engine_stream.read_file(archive_options("/tmp/lowlevel/none", {max_bytes = 1024, timeout = 60}))
  t.eq(err and err.kind, "not_found")
end)

remove_container()
return t.done()

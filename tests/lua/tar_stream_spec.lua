-- tar.stream (src/lua/lua_tar.c): the tar tar.write makes, read as it is made, in
-- pieces of any size, with its length known first; a file that vanished or changed
-- size is an error naming it; the handle's misuse raises. No Docker:
-- sandbox_unpack_spec streams one into a sandbox.
local t = require "helper"
local tar, fs = require "luagent.tar", luagent.fs

local work = assert(fs.temp_dir("luagent-tar-stream-spec"))
luagent.at_exit(function() fs.remove(work) end)

local function read_all(reader, n)
  local parts = {}
  while true do
    local chunk, err = reader:read(n)
    if not chunk then return table.concat(parts), err end
    t.ok(#chunk <= n, "at most n bytes")
    parts[#parts + 1] = chunk
  end
end

-- Files only: their headers carry the files' mtimes (data and folder entries carry
-- the time they were added, which may differ between two streams).
t.test("the same bytes as tar.write, in pieces of any size; size() first; nil at the end", function()
  local big, small = work .. "/big.bin", work .. "/small.txt"
  assert(fs.write(big, ("0123456789"):rep(3000)))
  assert(fs.write(small, "hello\n"))
  local entries = {{name = "b.txt", file = small}, {name = ("n"):rep(150) .. ".txt", file = small},
                   {name = "big.bin", file = big}}
  local want = assert(tar.write(work .. "/whole.tar", entries))
  local whole = assert(fs.read(work .. "/whole.tar"))
  t.eq(#whole, want)
  for _, n in ipairs({1, 511, 512, 4096, 100000, 1 << 30}) do
    local reader <close> = assert(tar.stream(entries))
    t.eq(reader:size(), want, "size() before reading")
    local got, err = read_all(reader, n)
    t.eq(err, nil); t.eq(got == whole, true, "the same bytes, read " .. n .. " at a time")
    t.eq(reader:read(10), nil, "still nil after the end")
  end
  local report = assert(tar.extract(work .. "/whole.tar", work .. "/out"))
  t.eq(report.bytes, 30000 + 12)
  t.eq(fs.read(work .. "/out/" .. ("n"):rep(150) .. ".txt"), "hello\n", "a long (PAX) name")
end)

t.test("a file that vanished or changed size: nil, err naming it, and every later read the same", function()
  local gone = work .. "/gone.bin"
  assert(fs.write(gone, "0123456789"))
  local reader <close> = assert(tar.stream({{name = "first.txt", data = "ok"}, {name = "in/gone.bin", file = gone}}))
  assert(fs.remove(gone))
  local got, err = read_all(reader, 100)
  t.ok(#got >= 1024, "what came before it")
  t.eq(err.kind, "io"); t.match(err.message, "'in/gone.bin' %(.*gone%.bin%)"); t.match(err.message, "No such file")
  local again, err2 = reader:read(100)
  t.eq(again, nil); t.eq(err2.kind, "io")
  local grown = work .. "/grown.bin"
  assert(fs.write(grown, "short"))
  local r2 <close> = assert(tar.stream({{name = "grown.bin", file = grown}}))
  assert(fs.write(grown, ("longer now"):rep(100)))
  local _, err3 = read_all(r2, 4096)
  t.eq(err3.kind, "io"); t.match(err3.message, "grown%.bin")
end)

t.test("bad entries: nil, err as tar.write's; misuse raises", function()
  local r, err = tar.stream({{name = "../x", data = "1"}})
  t.eq(r, nil); t.eq(err.kind, "bad_entry")
  r, err = tar.stream({{name = "x", file = work .. "/missing"}})
  t.eq(r, nil); t.eq(err.kind, "not_found")
  local reader = assert(tar.stream({{name = "x", data = "1"}}, {uid = 1000, gid = 1000}))
  t.raises(function() reader:read(0) end, "byte count")
  t.raises(function() reader:read("many") end)
  reader:close(); reader:close()
  t.raises(function() reader:read(10) end, "tar writer is closed")
  t.raises(function() reader:size() end, "tar writer is closed")
  t.raises(function() tar.stream("not a table") end)
end)

return t.done()

-- needs: docker
-- A spawned process's streamed stdin: box:spawn(cmd, {stdin = true}), then
-- process:write(data) (returns once the process's pipe took the bytes) and
-- process:close_stdin() (end-of-file), through the supervisor's write and
-- eof requests. Several MB through `cat` come back whole and in order, reads
-- and writes interleave, writes from several tasks are never cut into each
-- other, a reader that does not read holds back only its writer, and what
-- box:spawn refuses in a stdin (an API key) process:write refuses too.
local t = require "helper"
local sandbox = require "luagent.sandbox"

local box = assert(sandbox.open{memory = "256m", pids = 64, timeout = 60})

-- Reads stdout until `want` bytes came or the process ended; returns them.
local function read_bytes(proc, want, seconds)
  local got, deadline = {}, luagent.now() + (seconds or 30)
  local n = 0
  while n < want and luagent.now() < deadline do
    local out = assert(proc:read(1))
    got[#got + 1] = out
    n = n + #out
  end
  return table.concat(got)
end

-- n bytes that differ at every offset (a cut or reordered chunk shows).
local function pattern(n, seed)
  local parts, line = {}, 0
  local size = 0
  while size < n do
    line = line + 1
    local s = ("%s %08d abcdefghijklmnopqrstuvwxyz\n"):format(seed, line)
    parts[#parts + 1] = s
    size = size + #s
  end
  return table.concat(parts):sub(1, n)
end

t.test("a cat round trip of several MB: written in one call, read back whole and in order", function()
  local cat <close> = assert(box:spawn({"cat"}, {stdin = true, max_output = 16 * 1024 * 1024}))
  local data = pattern(5 * 1024 * 1024 + 17, "a")
  local writer = luagent.spawn(function() return cat:write(data) end)
  local back = read_bytes(cat, #data, 60) -- read while it writes: cat's stdout pipe must drain for its stdin to
  t.eq(writer:wait(), true)
  t.eq(#back, #data)
  t.ok(back == data, "the bytes came back as written")
  t.eq(cat:close_stdin(), true)
  local result = assert(cat:wait(10))
  t.eq(result.exit_code, 0, "EOF ended cat")
end)

t.test("interleaved writes and reads: each line is echoed before the next is written", function()
  local echo <close> = assert(box:spawn({"sh", "-c", "while read -r line; do echo \"got $line\"; done; echo bye"},
                                        {stdin = true}))
  for i = 1, 20 do
    t.eq(echo:write(("line %d\n"):format(i)), true)
    t.eq(read_bytes(echo, #("got line " .. i .. "\n"), 10), ("got line %d\n"):format(i))
  end
  t.eq(echo:close_stdin(), true)
  t.eq(echo:close_stdin(), true, "close_stdin is idempotent")
  local result = assert(echo:wait(10))
  t.eq(result.exit_code, 0)
  t.eq(result.stdout, "bye\n", "EOF ended the loop, and the shell exited")
  t.raises(function() echo:write("more\n") end, "the stdin of .* is closed %(close_stdin was called%)")
end)

t.test("writes from several tasks are never cut into each other", function()
  local cat <close> = assert(box:spawn({"cat"}, {stdin = true, max_output = 16 * 1024 * 1024}))
  local blocks = {}
  for i = 1, 4 do blocks[i] = pattern(1536 * 1024 + i, tostring(i)) .. "\n" end -- each over one request's chunk
  local writers = {}
  for i = 1, 4 do writers[i] = luagent.spawn(function() return cat:write(blocks[i]) end) end
  local total = 0
  for i = 1, 4 do total = total + #blocks[i] end
  local back = read_bytes(cat, total, 60)
  for i = 1, 4 do t.eq(writers[i]:wait(), true) end
  t.eq(back, table.concat(blocks), "the blocks came back whole, in call order")
end)

t.test("a process that does not read holds back its writer, not the box", function()
  local slow <close> = assert(box:spawn({"sh", "-c", "sleep 2; wc -c"}, {stdin = true}))
  local data = string.rep("x", 3 * 1024 * 1024)
  local started = luagent.now()
  local writer = luagent.spawn(function() return slow:write(data) end)
  luagent.sleep(0.5)
  t.eq(writer:status(), "waiting", "the write waits while nobody reads")
  local exec_started = luagent.now()
  t.eq(box:exec("echo meanwhile").stdout, "meanwhile\n")
  t.lt(luagent.now() - exec_started, 1.5, "the box answers other commands meanwhile")
  t.eq(writer:wait(), true)
  t.ok(luagent.now() - started >= 1.5, "the write returned once the reader had read")
  assert(slow:close_stdin())
  t.eq(assert(slow:wait(10)).stdout:match("%d+"), tostring(#data))
end)

t.test("a process that ended or closed its stdin: write is an io error naming it", function()
  local quick = assert(box:spawn({"true"}, {stdin = true}))
  assert(quick:wait(10))
  local ok, err = quick:write("late\n")
  t.eq(ok, nil)
  t.eq(err.kind, "io")
  t.match(err.message, "^sandbox process %d+ of .*: cannot write to its stdin: the process ended")
  t.eq(quick:close_stdin(), true, "close_stdin of an ended process is fine")
  quick:close()
  local closer <close> = assert(box:spawn({"sh", "-c", "exec 0<&-; sleep 30"}, {stdin = true}))
  luagent.sleep(0.2)
  ok, err = closer:write(string.rep("y", 200000))
  t.eq(ok, nil)
  t.eq(err.kind, "io")
  t.match(err.message, "cannot write to its stdin: the process closed it")
end)

t.test("misuse and the handle rule", function()
  local plain <close> = assert(box:spawn({"sleep", "30"}))
  t.raises(function() plain:write("x") end, "was started without an open stdin %(box:spawn%(cmd, {stdin = true}%)%)")
  t.eq(plain:close_stdin(), true, "nothing to close")
  local cat = assert(box:spawn({"cat"}, {stdin = true}))
  t.raises(function() cat:write(42) end, "data must be a string")
  cat:close()
  local ok, err = cat:write("x")
  t.eq(ok, nil)
  t.eq(err.kind, "closed")
  t.raises(function() box:exec({"true"}, {stdin = true}) end,
    "^[^:]+:%d+: box:exec%(cmd, opts%): opts.stdin must be a string %(the command's input%), not true; for an "
    .. "open stdin to write to, use box:spawn%(cmd, {stdin = true}%)")
  t.raises(function() box:exec({"true"}, {stdin = 5}) end, "box:exec%(cmd, opts%): opts.stdin must be a string .*not a number")
  t.raises(function() box:spawn({"true"}, {stdin = {}}) end,
    "box:spawn%(cmd, opts%): opts.stdin must be a string %(the command's input%) or true %(an open stdin, written "
    .. "with proc:write%), not a table")
end)

t.test("an API key in what is written is refused, also when two writes cut it in two", function()
  local secret = t.env("OPENAI_API_KEY") -- tests/run gives sandbox specs a fake one
  local cat <close> = assert(box:spawn({"cat"}, {stdin = true}))
  local ok, err = cat:write("key=" .. secret .. "\n")
  t.eq(ok, nil)
  t.eq(err.kind, "refused")
  t.match(err.message, "contains the value of OPENAI_API_KEY, and API keys never enter the sandbox")
  t.no_match(err.message, secret, "the message does not repeat the key")
  local half = #secret // 2
  assert(cat:write("first half " .. secret:sub(1, half)))
  ok, err = cat:write(secret:sub(half + 1) .. " second half\n")
  t.eq(ok, nil)
  t.eq(err.kind, "refused")
  assert(cat:close_stdin())
  t.no_match(assert(cat:wait(10)).stdout, secret:sub(half + 1), "the second half never went in")
end)

box:close()
return t.done()

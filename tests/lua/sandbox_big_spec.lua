-- needs: docker
-- Staging a 200 MB file in and out of a sandbox, and 100 MB of output,
-- with the host process's peak memory far below those sizes. In its own
-- spec so the peak measured is this one's.
local t = require "helper"
local sandbox, fs, sys = luagent.sandbox, luagent.fs, luagent.sys

local MB = 1024 * 1024
local work = assert(fs.temp_dir("luagent-big-spec"))
luagent.at_exit(function() fs.remove(work) end)

t.test("a 200 MB file goes in and comes back intact with flat host memory", function()
  local big = work .. "/big.bin"
  local block = {}
  for i = 0, 4095 do block[#block + 1] = string.pack("<I4", i * 2654435761 % 4294967296) end
  block = table.concat(block):rep(16) -- 256 KiB of non-repeating words
  for _ = 1, 800 do assert(fs.append(big, block)) end
  local host_sha, size = assert(sys.sha256_file(big))
  t.eq(size, 200 * MB)
  local box <close> = assert(sandbox.open{manifest = {["input/big.bin"] = sandbox.file(big)}})
  local r = assert(box:exec("sha256sum input/big.bin && cp input/big.bin output.bin"))
  t.eq(r.stdout:match("^(%x+)"), host_sha, "the bytes inside the sandbox")
  local report = assert(box:extract("output.bin", work .. "/back"))
  t.eq(report.bytes, 200 * MB)
  t.eq((sys.sha256_file(work .. "/back/output.bin")), host_sha, "the bytes back on the host")
  local peak = sys.maxrss()
  print(("    # peak host memory after staging 200 MB in and out: %.1f MB"):format(peak / MB))
  t.lt(peak, 60 * MB, "peak resident memory")
end)

t.test("100 MB of output keeps host memory bounded", function()
  local box <close> = assert(sandbox.open{})
  local r = assert(box:exec("head -c 100000000 /dev/urandom; head -c 100000000 /dev/urandom >&2"))
  t.eq(r.truncated, true)
  t.eq(r.stdout_bytes, 100000000); t.eq(r.stderr_bytes, 100000000)
  t.lt(#r.stdout + #r.stderr, 2.5 * MB)
  local peak = sys.maxrss()
  print(("    # peak host memory after 200 MB of output: %.1f MB"):format(peak / MB))
  t.lt(peak, 60 * MB, "peak resident memory")
end)

return t.done()

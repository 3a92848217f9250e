-- luagent.lines: lines out of a stream that arrives in chunks, split
-- anywhere (in a line, at its newline, between lines), in linear time.
local t = require "helper"
local lines = require "luagent.lines"

local function split_all(chunks)
  local split, got = lines.splitter(), {}
  for _, c in ipairs(chunks) do split:feed(c, function(line) got[#got + 1] = line end) end
  return got, split
end

t.test("lines come whole whatever the chunks; the unfinished one is held", function()
  local text = "first\n\nthird line\r\nfourth"
  for size = 1, #text do -- every chunk size, so every boundary is tried
    local chunks = {}
    for i = 1, #text, size do chunks[#chunks + 1] = text:sub(i, i + size - 1) end
    local got, split = split_all(chunks)
    t.same(got, {"first", "", "third line\r"}, "chunks of " .. size)
    t.eq(split.bytes, #"fourth")
    t.eq(split:take(), "fourth")
    t.eq(split.bytes, 0); t.eq(split:take(), "", "taken once")
  end
end)

t.test("an empty chunk and a chunk of newlines", function()
  local got, split = split_all({"", "a", "", "\n\n", "b"})
  t.same(got, {"a", ""})
  t.eq(split:take(), "b")
end)

t.test("a 4 MiB line in 64 KiB chunks comes out whole, once", function()
  local chunk = ("x"):rep(65536)
  local chunks = {}
  for i = 1, 64 do chunks[i] = chunk end
  chunks[#chunks + 1] = "\nnext"
  local got, split = split_all(chunks)
  t.eq(#got, 1); t.eq(#got[1], 64 * 65536)
  t.eq(split:take(), "next")
end)

return t.done()

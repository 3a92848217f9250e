-- luagent.diff: unified diffs identical to the system's `diff -u` (headers,
-- hunks, context, "\ No newline at end of file"), minimal and applicable by
-- `patch` on random inputs, a one-line summary past the limits, counts of
-- changed lines, and the paths where two JSON-like values differ.
local t = require "helper"
local diff = require "luagent.diff"
local fs = require "luagent.fs"
local sys = require "luagent.sys"
local json = require "luagent.json"

local dir = assert(fs.temp_dir("luagent-diff-spec"))

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- What the system's diff says (GNU diffutils), with the same names in the headers.
local function system_diff(a, b, flags)
  assert(fs.write(dir .. "/a", a))
  assert(fs.write(dir .. "/b", b))
  local p = assert(io.popen(("diff %s --label a --label b %s %s"):format(flags or "-u",
    sh_quote(dir .. "/a"), sh_quote(dir .. "/b"))))
  local out = p:read("a")
  p:close()
  return out
end

local function lines(n, fmt)
  local out = {}
  for i = 1, n do out[i] = (fmt or "line %d"):format(i) .. "\n" end
  return out
end

local function edit(list, fn)
  local copy = {table.unpack(list)}
  fn(copy)
  return table.concat(copy)
end

local base = lines(40)
local CODE = [[
local function a()
  return 1
end

local function b()
  return 2
end

return {a = a, b = b}
]]

local CASES = {
  {"equal texts", table.concat(base), table.concat(base)},
  {"one line changed in the middle", table.concat(base), edit(base, function(l) l[20] = "changed\n" end)},
  {"a line added at the start", table.concat(base), edit(base, function(l) table.insert(l, 1, "new\n") end)},
  {"a line removed at the end", table.concat(base), edit(base, function(l) l[#l] = nil end)},
  {"two changes 6 lines apart (one hunk)", table.concat(base),
    edit(base, function(l) l[10], l[17] = "x\n", "y\n" end)},
  {"two changes 7 lines apart (two hunks)", table.concat(base),
    edit(base, function(l) l[10], l[18] = "x\n", "y\n" end)},
  {"changes at both ends", table.concat(base), edit(base, function(l) l[1], l[40] = "first\n", "last\n" end)},
  {"no newline at the end of the first", "a\nb\nc", "a\nb\nc\n"},
  {"no newline at the end of the second", "a\nb\nc\n", "a\nb\nc"},
  {"no newline at the end of either, last line changed", "a\nb\nc", "a\nb\nd"},
  {"no newline at the end of either, last line kept", "x\na\nb\nc", "y\na\nb\nc"},
  {"the first empty", "", "a\nb\n"},
  {"the second empty", "a\nb\n", ""},
  {"an empty line against none", "\n", ""},
  {"all lines changed", table.concat(lines(12, "old %d")), table.concat(lines(9, "new %d"))},
  {"a function inserted between repeated lines", CODE,
    CODE:gsub("\nreturn", "\nlocal function c()\n  return 3\nend\n\nreturn")},
  {"a repeated block removed", "x\ny\nx\ny\nx\ny\nz\n", "x\ny\nx\ny\nz\n"},
  {"blank lines", "a\n\n\nb\n\nc\n", "a\n\nb\n\n\nc\n"},
  {"windows line ends", "a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n"},
}

t.test("unified diffs are what diff -u writes", function()
  for _, case in ipairs(CASES) do
    t.eq(diff.unified(case[2], case[3]), system_diff(case[2], case[3]), case[1])
  end
end)

t.test("the context option: -U0 and -U1 as diff writes them", function()
  for _, case in ipairs(CASES) do
    t.eq(diff.unified(case[2], case[3], {context = 0}), system_diff(case[2], case[3], "-U0"), case[1] .. " (-U0)")
    t.eq(diff.unified(case[2], case[3], {context = 1}), system_diff(case[2], case[3], "-U1"), case[1] .. " (-U1)")
  end
end)

t.test("edits of real files read as diff -u writes them", function()
  math.randomseed(7)
  local files = {}
  for _, name in ipairs({"agent.lua", "trace.lua", "sandbox.lua", "tools.lua"}) do
    files[#files + 1] = assert(fs.read((luagent.recipe:match("^(.*)tests/lua/") or "") .. "lua/luagent/" .. name))
  end
  for i = 1, 40 do
    local a = files[i % #files + 1]
    local l = {}
    for line in a:gmatch("[^\n]*\n?") do if line ~= "" then l[#l + 1] = line end end
    local b = edit(l, function(c)
      for _ = 1, math.random(1, 5) do
        local p = math.random(#c)
        local r = math.random(3)
        if r == 1 then table.remove(c, p)
        elseif r == 2 then table.insert(c, p, c[math.random(#c)])
        else c[p] = "changed " .. c[p] end
      end
    end)
    t.eq(diff.unified(a, b, {a_name = "old", b_name = "new"}),
      (system_diff(a, b):gsub("^%-%-%- a\n%+%+%+ b\n", "--- old\n+++ new\n")), "edit " .. i)
  end
end)

-- Random texts over a few letters: many equally short diffs, so the check
-- is that ours is minimal (as long as `diff --minimal`'s) and that `patch`
-- turns a into b with it.
t.test("on random texts the diff is minimal and patch applies it", function()
  math.randomseed(11)
  local function random_text(n, letters)
    local l = {}
    for i = 1, n do l[i] = string.char(96 + math.random(letters)) end
    local text = table.concat(l, "\n")
    if n > 0 and math.random(3) > 1 then text = text .. "\n" end
    return text
  end
  local function count(u)
    local n = 0
    for line in u:gmatch("[^\n]*\n") do
      if (line:match("^[-+]") and not line:match("^%-%-%- ") and not line:match("^%+%+%+ ")) then n = n + 1 end
    end
    return n
  end
  for i = 1, 60 do
    local a, b = random_text(math.random(0, 25), math.random(1, 5)), random_text(math.random(0, 25), math.random(1, 5))
    local ours = diff.unified(a, b)
    t.eq(count(ours), count(system_diff(a, b, "--minimal -u")), "case " .. i .. ": as short as diff --minimal")
    local added, removed = diff.lines_changed(a, b)
    t.eq(added + removed, count(ours), "case " .. i .. ": lines_changed")
    if ours ~= "" then
      assert(fs.write(dir .. "/patched", a))
      assert(fs.write(dir .. "/ours.diff", ours))
      t.ok(os.execute(("patch -s %s < %s > /dev/null 2>&1"):format(sh_quote(dir .. "/patched"),
        sh_quote(dir .. "/ours.diff"))), "case " .. i .. ": patch applies it")
      t.eq(fs.read(dir .. "/patched"), b, "case " .. i .. ": patch gives the second text")
    end
  end
end)

t.test("names in the headers; equal texts give an empty string", function()
  t.eq(diff.unified("same\n", "same\n", {a_name = "x", b_name = "y"}), "")
  t.eq(diff.unified("a\n", "b\n", {a_name = "old/report.md", b_name = "new/report.md"}),
    "--- old/report.md\n+++ new/report.md\n@@ -1 +1 @@\n-a\n+b\n")
  t.raises(function() diff.unified(nil, "x") end, "argument a must be a string")
end)

t.test("binary and too big texts: one line with sizes and sha256", function()
  local out = diff.unified("a\0b", "a\0c", {a_name = "x.bin", b_name = "y.bin"})
  t.eq(out, ("x.bin and y.bin differ (binary): 3 bytes, sha256 %s; 3 bytes, sha256 %s\n")
    :format(sys.sha256("a\0b"), sys.sha256("a\0c")))
  local saved = diff.MAX_BYTES
  diff.MAX_BYTES = 10
  out = diff.unified(("x\n"):rep(6), ("y\n"):rep(6))
  diff.MAX_BYTES = saved
  t.match(out, "^a and b differ %(too big to diff line by line%): 12 bytes, sha256 %x+; 12 bytes, sha256 %x+\n$")
end)

t.test("a diff that would take too long gives up quickly for the summary", function()
  math.randomseed(5)
  local x, y = {}, {}
  for i = 1, 20000 do
    x[i] = string.char(97 + math.random(0, 3)) .. "\n"
    y[i] = string.char(97 + math.random(0, 3)) .. "\n"
  end
  local started = luagent.now()
  local out = diff.unified(table.concat(x), table.concat(y))
  t.match(out, "^a and b differ %(too big to diff line by line%)")
  t.lt(luagent.now() - started, 5, "seconds")
  local added, removed = diff.lines_changed(table.concat(x), table.concat(y))
  t.ok(added > 0 and removed > 0 and added < 20000, "lines_changed counts by multisets past the limit")
end)

t.test("a long file with scattered changes is diffed fast", function()
  local long = lines(20000, "line %d of a longer file")
  local changed = edit(long, function(l) for i = 50, 20000, 100 do l[i] = "changed\n" end end)
  local started = luagent.now()
  local added, removed = diff.lines_changed(table.concat(long), changed)
  t.eq(added, 200)
  t.eq(removed, 200)
  t.lt(luagent.now() - started, 2, "seconds")
end)

t.test("lines_changed counts added and removed lines", function()
  t.eq(select("#", diff.lines_changed("a\n", "a\n")), 2)
  local added, removed = diff.lines_changed("a\nb\nc\n", "a\nc\nd\ne\n")
  t.eq(added, 2)
  t.eq(removed, 1)
  added, removed = diff.lines_changed("", "x\ny")
  t.eq(added, 2)
  t.eq(removed, 0)
end)

t.test("values: the paths where two JSON values differ, in order", function()
  local a = json.decode([[{"model":"m1","messages":[{"role":"system","content":"be brief"},
    {"role":"user","content":"hi"}],"temperature":0.2,"tools":[]}]])
  local b = json.decode([[{"model":"m1","messages":[{"role":"system","content":"be thorough"},
    {"role":"user","content":"hi"},{"role":"user","content":"more"}],"top_p":1,"tools":[]}]])
  local d = diff.values(a, b, {root = "request"})
  t.same(d[1], {path = "request.messages[1].content", a = "be brief", b = "be thorough"})
  t.eq(d[2].path, "request.messages[3]")
  t.eq(d[2].a, nil)
  t.eq(d[3].path, "request.temperature")
  t.eq(d[4].path, "request.top_p")
  t.eq(#d, 4)
  t.eq(#diff.values(a, b, {max = 1}), 1)
  t.eq(diff.values(a, b, {max = 1})[1].path, "messages[1].content")
  t.same(diff.values(a, json.decode(json.encode(a))), {})
  -- array positions in numeric order: [2] before [10]
  local long_a, long_b = {}, {}
  for i = 1, 12 do long_a[i], long_b[i] = i, i end
  long_b[2], long_b[10] = 0, 0
  local paths = diff.values(long_a, long_b, {root = "x"})
  t.eq(paths[1].path, "x[2]")
  t.eq(paths[2].path, "x[10]")
  t.eq(diff.values("a", 1)[1].path, "")
end)

t.test("short shows one value in one line", function()
  t.eq(diff.short("two\nlines"), '"two\\nlines"')
  t.eq(diff.short(nil), "(absent)")
  t.eq(diff.short(json.null), "null")
  t.eq(diff.short({a = 1}), '{"a":1}')
  t.eq(#diff.short(("x"):rep(500)), 160)
  t.eq(diff.short(("x"):rep(50), 10), '"xxxxxx...')
end)

t.test("the one excerpt helper: at most width characters, cut ones end with ...; one line or flat", function()
  local excerpt = require("luagent.text").excerpt
  t.eq(excerpt("short", 10), "short")
  t.eq(excerpt(("x"):rep(11), 10), "xxxxxxx...")
  t.eq(#excerpt(("x"):rep(500), 300), 300)
  t.eq(excerpt("  first line\nsecond", 90, "line"), "first line")
  t.eq(excerpt("a\n\n  b\tc", 90, "flat"), "a b c")
  t.eq(excerpt(42, 5), "42", "any value, as tostring shows it")
  t.eq(excerpt("abcdef", 2), "...", "a width under 3 still ends with ...")
end)

t.test("a replay mismatch names the paths through diff.values (recording.diff)", function()
  local recording = require "luagent.model.recording"
  local lines_out = recording.diff({messages = {{content = "a"}}}, {messages = {{content = "b"}}})
  t.eq(#lines_out, 1)
  t.eq(lines_out[1], '  request.messages[1].content\n    recorded: "a"\n    now:      "b"')
end)

fs.remove(dir)
return t.done()

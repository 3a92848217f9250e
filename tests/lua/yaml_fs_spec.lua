-- luagent.yaml and luagent.fs.
local t = require "helper"
local yaml, fs, json = luagent.yaml, luagent.fs, luagent.json

t.test("YAML loads to typed tables", function()
  local v = assert(yaml.load([[
name: energy
limits: {max_turns: 20, budget: 1.5, strict: true}
empty:
quoted: "42"
models:
  - gpt-4o
  - {provider: anthropic}
prompt: |
  line one
  line two
anchors:
  base: &b {memory: 1g}
  copy: *b
]]))
  t.eq(v.name, "energy")
  t.eq(v.limits.max_turns, 20); t.eq(math.type(v.limits.max_turns), "integer")
  t.eq(v.limits.budget, 1.5); t.eq(v.limits.strict, true)
  t.eq(v.empty, nil); t.eq(v.quoted, "42")
  t.eq(v.models[1], "gpt-4o"); t.eq(v.models[2].provider, "anthropic")
  t.eq(v.prompt, "line one\nline two\n")
  t.eq(v.anchors.copy.memory, "1g")
end)

t.test("a YAML syntax error reports its line and column", function()
  local v, err = yaml.load("a: 1\nb: [1, 2\nc: 3\n", "cfg.yaml")
  t.eq(v, nil)
  t.eq(err.kind, "yaml")
  t.eq(err.line, 3); t.ok(err.column >= 1)
  t.match(err.message, "^cfg.yaml:3:%d+: ")
  local _, err2 = yaml.load("key: value\n  bad indent: x\n", "indent.yaml")
  t.eq(err2.line, 2)
end)

t.test("load_file names the file; a missing file is an io error", function()
  local dir = assert(fs.temp_dir())
  assert(fs.write(dir .. "/bad.yaml", "ok: 1\nlist: [\n"))
  local _, err = yaml.load_file(dir .. "/bad.yaml")
  t.match(err.message, "bad.yaml:%d+:%d+:")
  t.eq(err.file, dir .. "/bad.yaml")
  local _, err2 = yaml.load_file(dir .. "/missing.yaml")
  t.eq(err2.kind, "io"); t.match(err2.message, "missing.yaml")
  fs.remove(dir)
end)

t.test("positions: the line and column of every key and item, null-valued keys too", function()
  local text = "recipe: r.lua\nvariants:\n  terse:\n    model.temperature: 0\n  empty:\n"
    .. "inputs:\n  - {input: a.csv}\n  - glob: '*.csv'\n    setting: input\n"
  local v, pos = yaml.load(text, "spec.yaml", {positions = true})
  t.same(pos[v].recipe, {line = 1, col = 1})
  t.same(pos[v].variants, {line = 2, col = 1})
  t.same(pos[v.variants].terse, {line = 3, col = 3})
  t.same(pos[v.variants].empty, {line = 5, col = 3}, "a key whose value is null")
  t.eq(v.variants.empty, nil)
  t.same(pos[v.variants.terse]["model.temperature"], {line = 4, col = 5})
  t.same(pos[v.inputs][1], {line = 7, col = 5})
  t.same(pos[v.inputs][2], {line = 8, col = 5})
  t.same(pos[v.inputs[1]].input, {line = 7, col = 6})
  t.same(pos[v.inputs[2]].setting, {line = 9, col = 5})
  -- without the option: the value alone, as before
  t.eq(select("#", yaml.load(text)), 1)
  t.eq(select("#", yaml.load(text, "x", {positions = false})), 1)
  t.raises(function() yaml.load(text, "x", "positions") end, "bad argument #3")
end)

t.test("positions from load_file; an empty file has an empty table of them", function()
  local dir = assert(fs.temp_dir())
  assert(fs.write(dir .. "/a.yaml", "# settings\n\nlimits:\n  max_turns: 3\n"))
  local v, pos = yaml.load_file(dir .. "/a.yaml", {positions = true})
  t.same(pos[v.limits].max_turns, {line = 4, col = 3})
  assert(fs.write(dir .. "/empty.yaml", "# nothing\n"))
  local e, epos = yaml.load_file(dir .. "/empty.yaml", {positions = true})
  t.same(e, {}); t.same(epos[e], {})
  local bad, err = yaml.load_file(dir .. "/missing.yaml", {positions = true})
  t.eq(bad, nil); t.eq(err.kind, "io")
  fs.remove(dir)
end)

t.test("dump reads back to the same value, quoting what would change type", function()
  local value = {name = "x", count = 3, ratio = 0.25, on = true, looks_bool = "true", looks_int = "12",
                 text = "two\nlines", list = {1, "two"}, empty = json.array{}, nested = {a = {b = "c"}}}
  local text = yaml.dump(value)
  local back = assert(yaml.load(text))
  t.same(back, value)
  t.match(text, "looks_bool: 'true'")
end)

t.test("fs: write is atomic, read, append, stat, list, walk, remove", function()
  local dir = assert(fs.temp_dir("spec"))
  assert(fs.mkdir(dir .. "/a/b/c"))
  assert(fs.write(dir .. "/a/file.txt", "hello"))
  assert(fs.append(dir .. "/a/file.txt", " world"))
  t.eq(fs.read(dir .. "/a/file.txt"), "hello world")
  local st = assert(fs.stat(dir .. "/a/file.txt"))
  t.eq(st.type, "file"); t.eq(st.size, 11)
  t.same(fs.list(dir .. "/a"), {"b", "file.txt"})
  local entries = assert(fs.walk(dir))
  local paths = {}
  for _, e in ipairs(entries) do paths[#paths + 1] = e.path .. ":" .. e.type end
  t.same(paths, {"a:directory", "a/b:directory", "a/b/c:directory", "a/file.txt:file"})
  t.ok(fs.exists(dir .. "/a")); assert(fs.remove(dir)); t.ok(not fs.exists(dir))
end)

t.test("fs errors are values naming the path", function()
  local v, err = fs.read("/nonexistent/dir/file.txt")
  t.eq(v, nil); t.eq(err.kind, "not_found"); t.eq(err.path, "/nonexistent/dir/file.txt")
  t.match(err.message, "/nonexistent/dir/file.txt")
  local _, err2 = fs.write("/proc/luagent-cannot-write", "x")
  t.ok(err2 and err2.kind ~= nil)
end)

return t.done()

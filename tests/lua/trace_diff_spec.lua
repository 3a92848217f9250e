-- The parts of `luagent trace diff` the watch mode reuses: what changed in
-- the declared outputs of two run folders (manifest.json: text files as
-- unified diffs, others by size and sha256, files only in one run) and in
-- the final answer.
local t = require "helper"
local fs, json, sys = luagent.fs, luagent.json, luagent.sys
local trace_diff = require "luagent.cli.trace_diff"
local compare = require "luagent.trace_page.compare"

local root = assert(fs.temp_dir("luagent-trace-diff"))

-- A run folder with output files (name -> content) and its manifest.json.
local function run_folder(name, files)
  local dir = root .. "/" .. name
  assert(fs.mkdir(dir .. "/output"))
  local list = {}
  for file, content in pairs(files) do
    assert(fs.write(dir .. "/output/" .. file, content))
    list[#list + 1] = {path = "output/" .. file, size = #content, sha256 = sys.sha256(content)}
  end
  assert(fs.write(dir .. "/manifest.json", json.encode({run_id = name, files = json.array(list)})))
  return dir
end

local PNG_A, PNG_B = "\137PNG\r\n\26\n\0\0\0a", "\137PNG\r\n\26\n\0\0\0bb"

t.test("outputs: a text file diffed, a binary one by size and sha256, files only in one run", function()
  local a = run_folder("a", {["report.md"] = "one\ntwo\n", ["chart.png"] = PNG_A, ["old.csv"] = "x\n", ["same.txt"] = "s"})
  local b = run_folder("b", {["report.md"] = "one\n2\n", ["chart.png"] = PNG_B, ["new.csv"] = "y\n", ["same.txt"] = "s"})
  local lines, n = trace_diff.compare_outputs(a, b, {a_label = "before", b_label = "now"})
  local text = table.concat(lines, "\n")
  t.eq(n, 4)
  t.eq(lines[1], "outputs: 5 files, 4 different")
  t.match(text, "\n  output/chart.png: different\n    before: 12 bytes, sha256 " .. sys.sha256(PNG_A):sub(1, 16)
    .. "\n    now: 13 bytes, sha256 " .. sys.sha256(PNG_B):sub(1, 16), "the image")
  t.match(text, "\n  output/new.csv: only in now %(2 bytes", "a new file")
  t.match(text, "\n  output/old.csv: only in before %(2 bytes", "a file gone")
  t.match(text, "\n  output/report.md: different %(%+1 %-1 lines%)\n    %-%-%- before/output/report.md\n"
    .. "    %+%+%+ now/output/report.md\n    @@ %-1,2 %+1,2 @@\n     one\n    %-two\n    %+2", "the text diff")
  t.no_match(text, "same.txt", "an unchanged file is only counted")
end)

t.test("outputs: the same files, and run folders without a manifest", function()
  local a = run_folder("c", {["r.md"] = "x\n"})
  local b = run_folder("d", {["r.md"] = "x\n"})
  local lines, n = trace_diff.compare_outputs(a, b)
  t.same(lines, {"outputs: 1 file, the same"})
  t.eq(n, 0)
  assert(fs.mkdir(root .. "/bare"))
  lines, n = trace_diff.compare_outputs(a, root .. "/bare")
  t.eq(n, 1)
  t.match(lines[2], "no manifest.json in B's run folder .*/bare")
  t.match(lines[3], "output/r.md: only in A")
  lines, n = trace_diff.compare_outputs(root .. "/bare", root .. "/bare")
  t.same(lines, {"outputs: none listed (no manifest.json in either run folder)"})
  t.eq(n, 0)
end)

t.test("final answers: the same, or a unified diff", function()
  local lines, different = trace_diff.compare_answers("42", "42")
  t.same(lines, {"final answer: same"})
  t.eq(different, false)
  lines, different = trace_diff.compare_answers("The answer is 42.", "The answer is 43.", {a_label = "run 1", b_label = "run 2"})
  t.eq(different, true)
  t.same(lines, {"final answer: different", "  --- run 1 final answer", "  +++ run 2 final answer", "  @@ -1 +1 @@",
    "  -The answer is 42.", "  +The answer is 43."})
end)

t.test("what trace diff and the eval page share: answers as text, their diff, a manifest's file in a run folder", function()
  t.eq(compare.answer_text(nil), ""); t.eq(compare.answer_text(json.null), ""); t.eq(compare.answer_text(42), "42")
  t.eq(compare.answer_text({a = 1}), json.encode({a = 1}, {indent = 2}))
  t.eq(compare.answer_diff("x", "x\n"), "", "a missing final newline is no difference")
  local dir = run_folder("files", {["report.md"] = "r"})
  t.eq(compare.run_file(dir, "output/report.md"), dir .. "/output/report.md")
  t.eq(compare.run_file(dir, "results/report.md"), dir .. "/output/report.md", "another folder: under output/")
  t.eq(compare.run_file(dir, "output/none.md"), nil)
end)

t.test("prompts: compared word by word in full, not cut where they start to differ", function()
  local a = "You are a careful analyst. Work step by step. Save output/report.md and finish in two sentences."
  local b = "You are a careful analyst. Work step by step. Save output/summary.md and finish in three sentences."
  local d = trace_diff.word_diff(a, b)
  t.match(d, "Save %[%-output/report%.md%-%] {%+output/summary%.md%+} and finish in %[%-two%-%] {%+three%+} sentences%.")
  t.eq(trace_diff.word_diff(a, a), a, "the same text: as it is")
  local long = ("word "):rep(100)
  t.match(trace_diff.word_diff(long .. "end", long .. "stop"), "^%.%.%. word word word word word word %[%-end%-%] {%+stop%+}$",
          "far from a change: ...")
  local starts = {{type = "agent_start", agent = "analyst", model = "scripted/s", instructions = a, task = "Go."},
                  {type = "agent_start", agent = "writer", instructions = "Write.", task = "Go."}}
  local lines = compare.prompt_changes(compare.prompts(starts), compare.prompts({
    {type = "agent_start", agent = "analyst", instructions = a, task = "Go now."}}), {a_label = "run 1", b_label = "run 2"})
  t.same(lines, {"  task of analyst (words: [-run 1-] {+run 2+}):\n    [-Go.-] {+Go now.+}", "  agent #2 (writer) only in run 1"},
         "the same words the watch mode and eval diff show")
  t.eq(#compare.prompt_changes(compare.prompts(starts), compare.prompts(starts)), 0)
  local dir_a, dir_b = assert(luagent.fs.temp_dir("luagent-prompts-a")), assert(luagent.fs.temp_dir("luagent-prompts-b"))
  for dir, instructions in pairs{[dir_a] = a, [dir_b] = b} do
    assert(luagent.fs.write(dir .. "/trace.jsonl", table.concat({
      luagent.json.encode{type = "run_start", t = 0, run_id = "r", recipe = "x.lua", settings = {}},
      luagent.json.encode{type = "agent_start", t = 0.1, agent = "analyst", instructions = instructions, task = "Go."},
      luagent.json.encode{type = "run_end", t = 0.2, run_id = "r", status = "ok"}}, "\n") .. "\n"))
  end
  local out = {}
  local real = io.stdout
  io.stdout = {write = function(_, ...) for _, v in ipairs{...} do out[#out + 1] = v end end} -- luacheck: ignore 122
  local status = trace_diff.main(dir_a, dir_b)
  io.stdout = real -- luacheck: ignore 122
  local text = table.concat(out)
  t.eq(status, 1, "a prompt edit is a difference, with no model request in either run (the scripted driver)")
  t.match(text, "prompts: 1, 1 different")
  t.match(text, "instructions of analyst")
  t.match(text, "the runs differ in: prompts")
end)

t.test("trace.read: a trace's events; a bad line is an error, or where a partial read stops", function()
  local path = root .. "/t.jsonl"
  assert(fs.write(path, '{"type":"run_start"}\n{"type":"run_end","status":"ok"}\n'))
  local list = assert(luagent.trace.read(path))
  t.eq(#list, 2); t.eq(list[2].status, "ok")
  assert(fs.write(path, '{"type":"run_start"}\n{"type":"run_e'))
  local none, err = luagent.trace.read(path)
  t.eq(none, nil); t.eq(err.kind, "json"); t.eq(err.line, 2)
  local some, cut = luagent.trace.read(path, {partial = true})
  t.eq(#some, 1); t.eq(cut.line, 2); t.match(cut.message, "t%.jsonl:2: not a trace event")
  local _, missing = luagent.trace.read(root .. "/none.jsonl")
  t.eq(missing.kind, "not_found")
end)

fs.remove(root)
return t.done()

-- needs: docker
-- The models' own editing and shell tools (luagent.tools.editing, .shells,
-- the V4A patch format of luagent.tools.patch), answered from a real
-- sandbox, and how each provider's wire carries them, against the strict
-- fake provider (tests/fake_provider: a test double of each service).
local t = require "helper"
local fake = require "fake_provider_client"
local agent, model, tools, sandbox = luagent.agent, luagent.model, luagent.tools, luagent.sandbox
local patch = require "luagent.tools.patch"
local editing = require "luagent.tools.editing"
local shells = require "luagent.tools.shells"

local KEY = t.env("LUAGENT_TEST_SECRET")
local box <close> = assert(sandbox.open{timeout = 60})

local function file(path) return assert(box:get(path)) end

-- ---- what the tools share ----

local ROOT = (luagent.recipe or ""):match("^(.*)tests/lua/[^/]*$") or ""
local function source(module) return assert(luagent.fs.read(ROOT .. "lua/" .. module:gsub("%.", "/") .. ".lua")) end

t.test("the sandbox tools share one leaf module of helpers (luagent.tools.common), not a copy each", function()
  local common = require "luagent.tools.common"
  t.same(common.schema({path = {type = "string"}}, {"path"}),
         {type = "object", properties = {path = {type = "string"}}, required = {"path"}})
  local ok, err = pcall(common.fail, "no such file")
  t.eq(ok, false); t.eq(err.kind, "tool"); t.eq(err.message, "no such file")
  t.eq(common.checked("text"), "text")
  ok, err = pcall(common.checked, nil, luagent.errors.new("cancelled", "stopped"))
  t.eq(ok, false); t.eq(err.kind, "cancelled", "a cancellation keeps its kind")
  t.eq(source("luagent.tools.common"):find("require%s*%(?%s*[\"']luagent%.tools"), nil,
       "a leaf: luagent.tools requires the tools modules, so common requires none of them")
  for _, module in ipairs({"luagent.tools", "luagent.tools.editing", "luagent.tools.shells", "luagent.tools.unified_exec"}) do
    local text = source(module)
    t.ok(text:find('require "luagent.tools.common"', 1, true), module .. " uses luagent.tools.common")
    for _, name in ipairs({"fail", "tool_error", "checked", "check_result", "schema"}) do
      t.eq(text:find("local function " .. name .. "%("), nil, module .. " has its own " .. name)
    end
  end
end)

-- ---- the V4A format ----

t.test("V4A: add, update (context, an @@ line to find first, spaces forgiven), move and delete are read", function()
  local ops = assert(patch.parse(table.concat({
    "*** Begin Patch", "*** Add File: new.txt", "+one", "+two",
    "*** Update File: a.py", "*** Move to: b.py", "@@ def f():", " x = 1", "-y = 2", "+y = 3",
    "*** Delete File: old.txt", "*** End Patch"}, "\n")))
  t.eq(#ops, 3)
  t.same({ops[1].kind, ops[1].path, ops[1].text}, {"add", "new.txt", "one\ntwo\n"})
  t.same({ops[2].kind, ops[2].move_to, ops[2].hunks[1].anchor}, {"update", "b.py", "def f():"})
  t.same(ops[2].hunks[1].old, {"x = 1", "y = 2"}); t.same(ops[2].hunks[1].new, {"x = 1", "y = 3"})
  local text = "def g():\n    x = 1\n    y = 2\ndef f():\n    x = 1\n    y = 2\n"
  local hunks = assert(patch.parse_hunks("@@ def f():\n     x = 1\n-    y = 2\n+    y = 3\n"))
  t.eq(assert(patch.apply(text, hunks, "a.py")), "def g():\n    x = 1\n    y = 2\ndef f():\n    x = 1\n    y = 3\n",
       "the hunk after its @@ line, not the first same lines")
  hunks = assert(patch.parse_hunks(" x = 1   \n-y = 2\n+y = 4\n"))
  t.eq(assert(patch.apply("x = 1\ny = 2\n", hunks, "f")), "x = 1\ny = 4\n", "trailing spaces forgiven")
end)

t.test("V4A: what cannot be read or applied is named", function()
  local _, why = patch.parse("*** Update File: a\n")
  t.match(why, "starts with the line %*%*%* Begin Patch")
  _, why = patch.parse("*** Begin Patch\n*** Update File: a\n@@\n?x\n*** End Patch")
  t.match(why, "a: line 4: \"%?x\" is not a hunk line")
  _, why = patch.parse("*** Begin Patch\n*** Frobnicate: a\n*** End Patch")
  t.match(why, "expected %*%*%* Add File:")
  _, why = patch.parse("*** Begin Patch\n*** Add File: a\n+x\n")
  t.match(why, "does not end with %*%*%* End Patch")
  _, why = patch.apply("a\nb\n", assert(patch.parse_hunks("-zzz\n+y\n")), "f.txt")
  t.match(why, "f.txt: hunk 1: these lines are not in the file")
end)

-- ---- the tools, on a real sandbox ----

t.test("apply_patch: creates, updates, moves and deletes files in the workspace", function()
  local tool = editing.apply_patch(box)
  assert(box:put("src/app.py", "def main():\n    print('hi')\n"))
  assert(box:put("old.txt", "bye\n"))
  local out = tool.handler{patch = table.concat({"*** Begin Patch",
    "*** Add File: notes/todo.md", "+# Todo", "+- ship",
    "*** Update File: src/app.py", "*** Move to: src/main.py", "@@ def main():", "-    print('hi')", "+    print('hello')",
    "*** Delete File: old.txt", "*** End Patch"}, "\n")}
  t.match(out, "A notes/todo.md\nM src/app.py %-> src/main.py\nD old.txt")
  t.eq(file("notes/todo.md"), "# Todo\n- ship\n")
  t.eq(file("src/main.py"), "def main():\n    print('hello')\n")
  t.eq(box:get("src/app.py"), nil, "moved away"); t.eq(box:get("old.txt"), nil, "deleted")
  t.eq(assert(box:exec("stat -c %U notes/todo.md")).stdout, "sandbox\n", "written as the command user")
end)

t.test("apply_patch: a patch that fails anywhere changes nothing; paths outside the workspace are refused", function()
  local tool = editing.apply_patch(box)
  assert(box:put("keep.txt", "a\n"))
  local ok, err = pcall(tool.handler, {patch = "*** Begin Patch\n*** Update File: keep.txt\n-a\n+b\n"
    .. "*** Update File: keep.txt\n-nope\n+x\n*** End Patch"})
  t.eq(ok, false); t.match(err.message, "keep.txt: hunk 1: these lines are not in the file")
  t.eq(file("keep.txt"), "a\n", "the first file was not changed either")
  ok, err = pcall(tool.handler, {patch = "*** Begin Patch\n*** Add File: ../../etc/x\n+x\n*** End Patch"})
  t.eq(ok, false); t.match(err.message, "'%.%.' is not allowed")
  ok, err = pcall(tool.handler, {patch = "*** Begin Patch\n*** Update File: ghost.txt\n-a\n+b\n*** End Patch"})
  t.eq(ok, false); t.match(err.message, "ghost.txt: no such file to update")
end)

t.test("edit_file (Anthropic's text editor): view with line numbers and ranges, create, str_replace, insert", function()
  local tool = editing.edit_file(box)
  t.eq(tool.handler{command = "create", path = "e/f.txt", file_text = "one\ntwo\nthree\n"},
       "File created successfully at: e/f.txt")
  t.eq(tool.handler{command = "view", path = "e/f.txt"}, "     1\tone\n     2\ttwo\n     3\tthree")
  t.eq(tool.handler{command = "view", path = "e/f.txt", view_range = {2, -1}}, "     2\ttwo\n     3\tthree")
  t.match(tool.handler{command = "view", path = "e"}, "e/f.txt")
  t.eq(tool.handler{command = "str_replace", path = "e/f.txt", old_str = "two", new_str = "TWO"},
       "Successfully replaced text at exactly one location.")
  local ok, err = pcall(tool.handler, {command = "str_replace", path = "e/f.txt", old_str = "missing", new_str = ""})
  t.eq(ok, false); t.match(err.message, "No match found for replacement")
  assert(box:put("e/g.txt", "x\nx\n"))
  ok, err = pcall(tool.handler, {command = "str_replace", path = "e/g.txt", old_str = "x", new_str = "y"})
  t.eq(ok, false); t.match(err.message, "Found 2 matches")
  tool.handler{command = "insert", path = "e/f.txt", insert_line = 1, insert_text = "one and a half"}
  t.eq(file("e/f.txt"), "one\none and a half\nTWO\nthree\n")
  ok, err = pcall(tool.handler, {command = "view", path = "e/none.txt"})
  t.eq(ok, false); t.match(err.message, "does not exist")
end)

t.test("shell (Responses' own): its commands run in order, each with its outcome; bash keeps its state", function()
  local r = shells.shell(box).handler{commands = {"echo a", "echo b >&2; exit 3", "sleep 5"}, timeout_ms = 500}
  t.eq(#r.native.output, 3)
  t.same(r.native.output[1], {stdout = "a\n", stderr = "", outcome = {type = "exit", exit_code = 0}})
  t.same(r.native.output[2].outcome, {type = "exit", exit_code = 3}); t.eq(r.native.output[2].stderr, "b\n")
  t.same(r.native.output[3].outcome, {type = "timeout"})
  local bash = shells.bash(box, {timeout = 3})
  bash.handler{command = "cd /tmp && export GREETING=hi"}
  t.eq(bash.handler{command = "echo $GREETING from $(pwd)"}, "hi from /tmp\n")
  t.match(bash.handler{command = "false"}, "exit code 1")
  local ok, err = pcall(bash.handler, {command = "sleep 10"})
  t.eq(ok, false); t.match(err.message, "did not end within 3 s")
  t.eq(bash.handler{command = "echo ${GREETING:-gone}"}, "gone\n", "the restarted shell starts fresh")
  t.eq(bash.handler{restart = true}, "The bash session was restarted.")
end)

-- ---- on each provider's wire ----

local MAKE = {openai = model.openai, openai_responses = model.openai_responses, anthropic = model.anthropic}
local NAME = {openai = "gpt-4.1", openai_responses = "gpt-4.1", anthropic = "claude-sonnet-4-5"}

local function run_with(provider, steps)
  local q = fake.queue("native-" .. provider)
  fake.script(q, steps)
  local m = MAKE[provider]{model = NAME[provider], base_url = fake.base_url(q, provider), api_key = KEY}
  local a = agent.new{name = "editor", instructions = "Edit files.", model = m, max_turns = 6,
                      tools = tools.standard(box, {edit = "native", shell = "native"})}
  return a:run("Make the file."), fake.requests(q)
end

local function kinds_of(tools_sent)
  local out = {}
  for i, tool in ipairs(tools_sent) do out[i] = tool.type == "function" and (tool.name or tool["function"].name)
    or tool.type or tool.name end
  return table.concat(out, " ")
end

t.test("Responses: apply_patch and shell go as the API's own tool types; their calls and outputs as its items", function()
  local result, reqs = run_with("openai_responses", {
    {tool_calls = {{native = "apply_patch_call", id = "call_p1",
                    operation = {type = "create_file", path = "wire/r.txt", diff = "+made by apply_patch\n"}}}},
    {tool_calls = {{native = "shell_call", id = "call_s1", action = {commands = {"cat wire/r.txt", "exit 4"}}}}},
    {tool_calls = {{native = "apply_patch_call", id = "call_p2",
                    operation = {type = "update_file", path = "wire/r.txt", diff = "-not there\n+x\n"}}}},
    {text = "Done."}})
  t.eq(result.output, "Done.")
  t.eq(kinds_of(reqs[1].body.tools), "run_python shell read_file apply_patch list_files view_image read_output")
  t.eq(file("wire/r.txt"), "made by apply_patch\n")
  local input = reqs[2].body.input
  t.eq(input[2].type, "apply_patch_call", "the call goes back as it came")
  t.same({input[3].type, input[3].call_id, input[3].status}, {"apply_patch_call_output", "call_p1", "completed"})
  input = reqs[3].body.input
  local out = input[#input]
  t.same({out.type, out.call_id}, {"shell_call_output", "call_s1"})
  t.eq(out.output[1].stdout, "made by apply_patch\n"); t.same(out.output[2].outcome, {type = "exit", exit_code = 4})
  out = reqs[4].body.input[#reqs[4].body.input]
  t.same({out.type, out.status}, {"apply_patch_call_output", "failed"}, "a patch that does not apply: failed")
  t.match(out.output, "these lines are not in the file")
  for i, r in ipairs(reqs) do t.eq(r.refused, nil, "request " .. i .. " is one the service takes") end
end)

t.test("Anthropic: the text editor and bash go as text_editor_20250728 and bash_20250124", function()
  local result, reqs = run_with("anthropic", {
    {tool_calls = {{name = "str_replace_based_edit_tool", id = "toolu_e1",
                    arguments = {command = "create", path = "wire/a.txt", file_text = "alpha\n"}}}},
    {tool_calls = {{name = "str_replace_based_edit_tool", id = "toolu_e2",
                    arguments = {command = "str_replace", path = "wire/a.txt", old_str = "alpha", new_str = "beta"}}}},
    {tool_calls = {{name = "bash", id = "toolu_b1", arguments = {command = "cat wire/a.txt"}}}},
    {text = "Done."}})
  t.eq(result.output, "Done.")
  local sent = {}
  for _, tool in ipairs(reqs[1].body.tools) do sent[#sent + 1] = (tool.type or "custom") .. ":" .. tool.name end
  t.same(sent, {"custom:run_python", "bash_20250124:bash", "custom:read_file",
                "text_editor_20250728:str_replace_based_edit_tool", "custom:list_files", "custom:view_image",
                "custom:read_output"})
  t.eq(file("wire/a.txt"), "beta\n")
  local last = reqs[4].body.messages[#reqs[4].body.messages].content[1]
  t.same({last.type, last.tool_use_id}, {"tool_result", "toolu_b1"}); t.match(model.text_of(last.content), "beta")
  for i, r in ipairs(reqs) do t.eq(r.refused, nil, "request " .. i .. " is one the service takes") end
end)

t.test("Chat Completions: the same abilities as function tools (apply_patch, edit_file, run_shell)", function()
  local result, reqs = run_with("openai", {
    {tool_calls = {{name = "apply_patch", id = "call_c1",
                    arguments = {patch = "*** Begin Patch\n*** Add File: wire/c.txt\n+gamma\n*** End Patch"}}}},
    {tool_calls = {{name = "edit_file", id = "call_c2",
                    arguments = {command = "str_replace", path = "wire/c.txt", old_str = "gamma", new_str = "delta"}}}},
    {text = "Done."}})
  t.eq(result.output, "Done.")
  t.eq(kinds_of(reqs[1].body.tools), "run_python run_shell read_file apply_patch edit_file list_files view_image read_output")
  t.eq(file("wire/c.txt"), "delta\n")
end)

t.test("the strict fake refuses an Anthropic tool type it does not know, and an own tool under another name", function()
  local q = fake.queue("invalid-tool-type") -- (a queue named invalid-* expects the refusal)
  fake.script(q, {{text = "never"}, {text = "never"}})
  local m = model.anthropic{model = NAME.anthropic, base_url = fake.base_url(q, "anthropic"), api_key = KEY}
  local bad = {name = "x", description = "x", handler = function() end, native = {anthropic = {type = "computer_2099"}}}
  local _, err = m:complete{messages = {{role = "user", content = "hi"}}, tools = {bad}}
  t.eq(err.status, 400); t.match(err.message, "does not match any of the expected tags")
  bad.native.anthropic = {type = "bash_20250124", name = "shell"}
  _, err = m:complete{messages = {{role = "user", content = "hi"}}, tools = {bad}}
  t.eq(err.status, 400); t.match(err.message, "Input should be 'bash'")
  local rq = fake.queue("invalid-responses-tool")
  fake.script(rq, {{text = "never"}})
  local r = model.openai_responses{model = NAME.openai_responses, base_url = fake.base_url(rq, "openai_responses"),
                                   api_key = KEY}
  bad.native = {openai_responses = {type = "apply_patch_v9"}}
  _, err = r:complete{messages = {{role = "user", content = "hi"}}, tools = {bad}}
  t.eq(err.status, 400, "Responses: a tool type the spec does not have is refused")
  t.match(err.message, "tools")
end)

return t.done()

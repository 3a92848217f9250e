-- The trace page (luagent.trace_page, `luagent trace html`) over synthetic
-- traces: the top (status, totals, settings, outputs, answer), each tool call
-- beside its result with its sandbox commands, images from view_image and
-- the outputs as data: URIs within the size budget, errors and limits
-- marked for the filter, unknown or malformed events shown rather than
-- dropped, and nothing from a trace ever becoming markup. Headless Chromium
-- renders real pages in tests/e2e/trace_page_test.sh and trace_page_big_test.sh.
local t = require "helper"
local fs, json, sys = luagent.fs, luagent.json, luagent.sys
local trace_page = require "luagent.trace_page"

-- a 2 x 2 PNG
local PNG = "\137\80\78\71\13\10\26\10\0\0\0\13\73\72\68\82\0\0\0\2\0\0\0\2\8\2\0\0\0\253\212\154\115\0\0\0\17\73\68\65"
  .. "\84\120\156\99\248\207\192\192\0\194\32\226\63\0\26\243\3\253\66\39\75\176\0\0\0\0\73\69\78\68\174\66\96\130"
local EVIL = "<script>alert('x')</script>"

local root = assert(fs.temp_dir("luagent-trace-page"))
local made = 0

-- A run folder with output/chart.png, output/notes.txt and a manifest.json naming them (and one that is gone).
local function run_dir()
  made = made + 1
  local dir = root .. "/run-" .. made
  assert(fs.mkdir(dir .. "/output"))
  assert(fs.write(dir .. "/output/chart.png", PNG))
  assert(fs.write(dir .. "/output/notes.txt", "notes\n"))
  local files = {}
  for _, name in ipairs({"chart.png", "notes.txt"}) do
    local sha, size = sys.sha256_file(dir .. "/output/" .. name)
    files[#files + 1] = {path = "output/" .. name, size = size, sha256 = sha}
  end
  files[#files + 1] = {path = "output/gone.csv", size = 3, sha256 = "abc"}
  assert(fs.write(dir .. "/manifest.json", json.encode({files = files})))
  return dir
end

local function run_events(extra)
  local evs = {
    {type = "run_start", t = 0.1, time = 1780000000, run_id = "run-" .. EVIL, recipe = "r.lua",
     settings = {model = {name = "m1"}, note = EVIL}, args = json.array{}},
    {type = "sandbox_open", t = 0.2, session = "s1", image = "img", memory = "1g", network = false},
    {type = "agent_start", t = 0.3, agent = "ana", run = "r1", model = "openai/m1", max_turns = 5,
     instructions = "Be **careful**. " .. EVIL, task = "Find it. " .. EVIL},
    {type = "model_retry", t = 0.4, model = "m1", attempt = 1, wait = 0.5, error = {kind = "http", message = "HTTP 500"}},
    {type = "model_response", t = 1.0, model = "m1", attempts = 2, duration = 0.6, cost = 0.01,
     usage = {input_tokens = 1000, output_tokens = 100}, text = "Let me look."},
    {type = "agent_turn", t = 1.0, agent = "ana", run = "r1", turn = 1, text = "Let me **look**. " .. EVIL,
     tool_calls = {"run_python", "view_image"}, usage = {input_tokens = 1000, output_tokens = 100}, cost = 0.01,
     duration = 0.6, total_usage = {input_tokens = 1000, output_tokens = 100}, total_cost = 0.01},
    {type = "tool_call", t = 1.1, agent = "ana", run = "r1", turn = 1, id = "c1", name = "run_python",
     arguments = {code = "import os\nprint('" .. EVIL .. "')"}},
    {type = "sandbox_exec", t = 1.5, session = "s1", kind = "python", command = "import os", exit_code = 1,
     duration = 0.4, timed_out = true, oom_killed = false},
    {type = "tool_result", t = 1.5, agent = "ana", run = "r1", turn = 1, id = "c1", name = "run_python",
     is_error = false, duration = 0.4, content = "RESULT-OF-C1 " .. EVIL},
    {type = "tool_call", t = 1.6, agent = "ana", run = "r1", turn = 1, id = "c2", name = "view_image",
     arguments = {path = "output/chart.png"}},
    {type = "tool_result", t = 1.7, agent = "ana", run = "r1", turn = 1, id = "c2", name = "view_image",
     is_error = false, duration = 0.1, content = "output/chart.png (image/png, 74 bytes)"},
    {type = "model_response", t = 2.0, model = "m1", attempts = 1, duration = 0.3, cost = 0.02,
     usage = {input_tokens = 2000, output_tokens = 50}, text = "done"},
    {type = "agent_turn", t = 2.0, agent = "ana", run = "r1", turn = 2, text = "## Found\n\nFINAL-ANSWER " .. EVIL,
     tool_calls = json.array{}, usage = {input_tokens = 2000, output_tokens = 50}, cost = 0.02, duration = 0.3,
     total_usage = {input_tokens = 3000, output_tokens = 150}, total_cost = 0.03},
    {type = "agent_end", t = 2.1, agent = "ana", run = "r1", stopped_by = "answer", turns = 2,
     usage = {input_tokens = 3000, output_tokens = 150}, cost = 0.03, duration = 1.8,
     output = "## Found\n\nFINAL-ANSWER " .. EVIL},
  }
  for _, ev in ipairs(extra or {}) do evs[#evs + 1] = ev end
  evs[#evs + 1] = {type = "run_end", t = 2.5, run_id = "run-x", status = "ok", duration = 2.5}
  return evs
end

-- The SYS-... text of a request body of the test above.
local function f_text(body)
  return body.instructions or (body.system and body.system[1].text) or body.messages[1].content
end

-- How many times `plain` is in `text`.
local function count(text, plain)
  return select(2, text:gsub(plain:gsub("%p", "%%%0"), ""))
end

local function has(s, plain, what)
  t.ok(s:find(plain, 1, true), (what and (what .. ": ") or "") .. "the page lacks " .. plain)
end

-- The block of event i (its outer div, up to the next block).
local function block_of(page, i)
  local s = page:find(('<div class="ev [^"]*" id="e%d"'):format(i))
  t.ok(s, "a block for event " .. i)
  local e = page:find('\n<div class="ev ', s + 1, true) or #page
  return page:sub(s, e)
end

t.test("the top: status, recipe, totals, agents, settings, outputs with links and the answer", function()
  local dir = run_dir()
  local page = trace_page.render(run_events(), {dir = dir, out = dir .. "/trace.html"})
  has(page, '<span class="badge st-ok" id="status">ok</span>')
  has(page, "recipe r.lua")
  has(page, "<b>3,150</b><span>tokens · 3,000 in · 150 out</span>", "the run's tokens")
  has(page, "<b>$0.0300</b><span>cost</span>", "the run's cost")
  has(page, "<b>2</b><span>model calls</span>")
  has(page, "<b>2</b><span>tool calls</span>")
  has(page, "<tr><th>model.name</th><td>m1</td></tr>", "settings, flattened")
  has(page, '<a href="output/chart.png">output/chart.png</a>', "a link beside the page")
  has(page, "output/gone.csv <span class=\"note\">(not in the run folder)</span>")
  has(page, "<h2>Answer</h2>")
  has(page, "<h4>Found</h4>", "the answer as Markdown")
  has(page, "FINAL-ANSWER")
  -- the page elsewhere: links go into the run folder
  local other = trace_page.render(run_events(), {dir = dir, out = root .. "/page.html"})
  has(other, ('<a href="run-%d/output/chart.png">'):format(made))
end)

t.test("each tool call sits beside its result, with the sandbox commands it ran", function()
  local page = trace_page.render(run_events(), {dir = run_dir()})
  local pair = block_of(page, 7)
  has(pair, 'data-type="tool_call"')
  has(pair, '<div class="lbl">call</div>')
  has(pair, '<span class="hl-k">import</span> os', "run_python code highlighted")
  has(pair, "RESULT-OF-C1", "the result beside it")
  has(pair, "sandbox python · exit 1 · 0.40 s", "the command it ran")
  has(pair, '<span class="flag bad">timed out</span>')
  t.ok(pair:find('^<div class="ev k%-tool bad k%-sandbox"') or pair:find('^<div class="ev k%-tool k%-sandbox bad"'),
    "a timed-out command marks its call as an error, shown by the sandbox filter too: " .. pair:sub(1, 80))
  t.eq(count(page, "RESULT-OF-C1"), 1, "the result is not shown a second time")
  t.eq(page:find('id="e9"', 1, true), nil, "no block of its own for the paired result")
  local turn = block_of(page, 6)
  has(turn, "<b>Turn 1</b>")
  has(turn, '<span class="flag warn">2 attempts</span>')
  has(turn, "1,000 in · 100 out · $0.0100")
  t.eq(page:find('id="e5"', 1, true), nil, "the model response an agent turn shows has no block of its own")
end)

t.test("a command's output as it came (sandbox_output) shows in its call, each piece with its time", function()
  local evs = run_events()
  table.insert(evs, 8, {type = "sandbox_output", t = 1.3, session = "s1", tool = "run_python", stream = "stdout",
                        text = "step 1 " .. EVIL .. "\n"})
  table.insert(evs, 9, {type = "sandbox_output", t = 1.45, session = "s1", tool = "run_python", stream = "stderr",
                        text = "warning 2\n"})
  local page = trace_page.render(evs, {dir = run_dir()})
  local pair = block_of(page, 7)
  has(pair, "output as it came (2 pieces)")
  has(pair, "+0.20 s stdout\nstep 1 &lt;script&gt;", "the first piece, 0.2 s after the call, escaped")
  has(pair, "+0.35 s stderr\nwarning 2")
  t.eq(page:find('id="e8"', 1, true), nil, "no block of its own for an attached piece")
end)

t.test("images: view_image results and PNG outputs inline as data: URIs, within the budget", function()
  local dir = run_dir()
  local uri = "data:image/png;base64," .. sys.base64(PNG)
  local page = trace_page.render(run_events(), {dir = dir})
  t.eq(count(page, '<img src="' .. uri .. '"'), 2, "the chart in the outputs and in the view_image result")
  has(block_of(page, 10), uri)
  local small = trace_page.render(run_events(), {dir = dir, max_image = 10})
  t.eq(count(small, "<img"), 0)
  has(small, "74 B, more than the 10 B the page shows inline", "an image over the limit is named")
  local budget = trace_page.render(run_events(), {dir = dir, max_images = 100})
  t.eq(count(budget, "<img"), 2, "the same image counts once")
  local sneaky = run_events()
  sneaky[10].arguments.path = "../../etc/passwd"
  has(trace_page.render(sneaky, {dir = dir}), "../../etc/passwd is not in the run folder")
end)

t.test("errors, retries, limits and timeouts are marked for the errors filter", function()
  local page = trace_page.render(run_events({
    {type = "tool_call", t = 2.2, agent = "ana", run = "r1", turn = 3, id = "c3", name = "nope", arguments = {}},
    {type = "tool_result", t = 2.2, agent = "ana", run = "r1", turn = 3, id = "c3", name = "nope", is_error = true,
     content = "Error: there is no tool named nope"},
    {type = "agent_limit", t = 2.3, agent = "ana", run = "r1", reason = "max_turns (3) reached"},
  }), {dir = run_dir()})
  t.ok(block_of(page, 4):find('^<div class="ev k%-model warn"'), "a retry")
  t.ok(block_of(page, 15):find('^<div class="ev k%-tool bad"'), "a tool error")
  t.ok(block_of(page, 17):find('^<div class="ev k%-agent bad"'), "a limit")
  has(page, '<button type="button" data-f="errors">errors <span class="dim">4</span></button>')
  has(page, "<b><a href=\"#filter=errors\">4</a></b>")
end)

t.test("a model's reasoning summary shows, folded, beside its turn; encrypted reasoning never does", function()
  local evs = run_events()
  for _, ev in ipairs(evs) do
    if ev.type == "model_response" and ev.t == 1.0 then ev.reasoning = "Compare with the **baseline** first. " .. EVIL end
  end
  local page = trace_page.render(evs, {dir = run_dir()})
  has(page, '<details class="reasoning"><summary>Reasoning</summary>')
  has(page, "<strong>baseline</strong>")
  t.no_match(page, "<details class=\"reasoning\">.-" .. EVIL:gsub("%p", "%%%0"), "the summary is escaped like all text")
  local plain = trace_page.render(run_events(), {dir = run_dir()})
  t.no_match(plain, 'class="reasoning"', "no reasoning, no block")
end)

t.test("nothing from the trace becomes markup: the page's own script is the only one", function()
  local page = trace_page.render(run_events({{type = "custom_" .. EVIL, t = 3, [EVIL] = EVIL}}), {dir = run_dir()})
  t.eq(count(page:lower(), "<script"), 1, "one <script>: the page's filter")
  has(page, "&lt;script&gt;alert('x')&lt;/script&gt;")
  t.eq(page:find("<img src=x", 1, true), nil)
end)

t.test("unknown events are shown with their fields; malformed known ones too", function()
  local page = trace_page.render(run_events({
    {type = "hook", t = 2.2, name = "before_tool", detail = {n = 1}},
    {type = "my_event", t = 2.3, widget = "sprocket-42"},
    {type = "agent_turn", t = 2.4, agent = "ana", run = "r1", turn = "x", usage = "weird", tool_calls = 5},
    {type = "sandbox_exec", t = 2.5, session = json.null, duration = "slow"},
    {t = 2.6, type = "tool_result", id = "orphan", name = "lost", content = {{type = "text", text = "ORPHAN-TEXT"}}},
  }), {dir = run_dir()})
  has(block_of(page, 15), '<span class="type">hook</span>')
  local mine = block_of(page, 16)
  has(mine, 'data-type="my_event"')
  has(mine, "sprocket-42", "its fields")
  has(block_of(page, 17), 'data-type="agent_turn"')
  has(block_of(page, 18), 'data-type="sandbox_exec"')
  has(block_of(page, 19), "ORPHAN-TEXT")
  has(block_of(page, 19), "its call is not in the trace")
end)

t.test("an agent's instructions: from its start, else from the system prompt of its first model request", function()
  -- a real agent with a scripted model (no model_request events): agent_start carries the system prompt
  local seen = {}
  luagent.agent.new{name = "scribe", instructions = "Write *tidy* notes.", outputs = {"output/notes.md"},
    model = luagent.model.scripted(function() return {text = "done"} end),
    on_step = function(ev) seen[#seen + 1] = ev end}:run("Take notes.")
  local page = trace_page.render(seen, {dir = run_dir()})
  has(page, "<p>Write <em>tidy</em> notes.</p>")
  has(page, "these files must exist in the workspace: output/notes.md", "the system prompt the model got")
  has(page, "<p>Take notes.</p>", "the task")
  -- older traces: the system prompt of a request, in each wire format
  for _, body in ipairs({{messages = {{role = "system", content = "SYS-CHAT"}}}, {system = {{type = "text", text = "SYS-ANT"}}},
                         {instructions = "SYS-RESP", input = {}}}) do
    local evs = {{type = "agent_start", t = 0, agent = "old", run = "r9", model = "x/y", task = "go"},
                 {type = "model_request", t = 0.1, provider = "x", model = "y", attempt = 1, body = body}}
    local text = f_text(body)
    has(trace_page.render(evs, {dir = run_dir()}), ("<summary>Instructions</summary><div class=\"md\"><p>%s</p>"):format(text))
  end
end)

t.test("a trace without run_end is marked unfinished; an empty one still renders", function()
  local evs = run_events()
  evs[#evs] = nil
  local page = trace_page.render(evs, {dir = run_dir()})
  has(page, '<span class="badge st-warn" id="status">unfinished</span>')
  has(page, "the trace ends before run_end")
  has(trace_page.render({}, {dir = root}), "no timed model calls")
end)

t.test("the outputs: what the run folder holds is said as it is, never 'no manifest.json' when there is one", function()
  local function outputs_of(dir)
    local page = trace_page.render(run_events(), {dir = dir})
    return page:match('<h2 id="outputs">.-</table>') or page:match('<h2 id="outputs">Outputs</h2><p[^>]*>[^<]*</p>')
  end
  local dir = root .. "/empty-manifest"
  assert(fs.mkdir(dir .. "/output"))
  assert(fs.write(dir .. "/output/notes.txt", "notes\n"))
  assert(fs.write(dir .. "/manifest.json", json.encode({files = json.array{}, missing = json.array{}})))
  local shown = outputs_of(dir)
  t.match(shown, "output/notes%.txt", "a manifest that lists no file: what output/ holds")
  t.match(shown, "from output/ %(manifest%.json lists no files%)")
  t.eq(shown:find("no manifest.json", 1, true), nil)
  assert(fs.remove(dir .. "/output/notes.txt"))
  t.match(outputs_of(dir), "none: manifest%.json lists no files and output/ is empty")
  assert(fs.remove(dir .. "/output"))
  t.match(outputs_of(dir), "none: manifest%.json lists no files and there is no output/ folder")
  assert(fs.remove(dir .. "/manifest.json"))
  t.match(outputs_of(dir), "none: the run folder has no manifest%.json and no output/ folder")
end)

t.test("luagent trace html: a trace file or a run folder, the page beside it or at -o", function()
  local dir = run_dir()
  assert(fs.write(dir .. "/trace.jsonl", (function()
    local lines = {}
    for i, ev in ipairs(run_events()) do lines[i] = json.encode(ev) end
    return table.concat(lines, "\n") .. "\n"
  end)()))
  t.eq(trace_page.write(dir), dir .. "/trace.html", "a run folder: trace.html in it")
  t.eq(trace_page.write(dir .. "/", nil), dir .. "/trace.html")
  t.eq(trace_page.write(dir .. "/trace.jsonl", nil), dir .. "/trace.html", "a trace file: beside it")
  t.eq(trace_page.write(dir .. "/trace.jsonl", root .. "/elsewhere.html"), root .. "/elsewhere.html")
  local page = assert(fs.read(root .. "/elsewhere.html"))
  has(page, "<h1>luagent run run-&lt;script&gt;")
  t.ok(not fs.exists(root .. "/elsewhere.html.tmp"), "no temporary file left")
  local none, err = trace_page.write(root .. "/nope.jsonl")
  t.eq(none, nil)
  t.match(err.message, "nope.jsonl")
end)

return t.done()

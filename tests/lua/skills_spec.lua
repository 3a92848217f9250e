-- needs: docker
-- Skills (luagent.skills): folders with a SKILL.md, checked before anything
-- runs, staged read-only under /skills in the agent's sandbox, and listed by
-- name and description only in its instructions.
local t = require "helper"
local agent, model, tools, sandbox, fs = luagent.agent, luagent.model, luagent.tools, luagent.sandbox, luagent.fs
local skills = require "luagent.skills"

local root = assert(fs.temp_dir("luagent-skills"))

local function skill(name, text, extra)
  local dir = root .. "/" .. name
  assert(fs.mkdir(dir))
  if text then assert(fs.write(dir .. "/SKILL.md", text)) end
  for file, body in pairs(extra or {}) do
    local parent = (dir .. "/" .. file):match("^(.*)/[^/]+$")
    assert(fs.mkdir(parent))
    assert(fs.write(dir .. "/" .. file, body))
  end
  return dir
end

local CLEAN = skill("csv-clean", "---\nname: csv-clean\ndescription: Clean a messy CSV: dates, units, duplicates.\n---\n"
  .. "# Steps\nSECRET-BODY-LINE: run clean.py first.\n", {["scripts/clean.py"] = "print('cleaned')\n"})

local function raises(folders, pattern)
  local ok, err = pcall(skills.load, folders, "agent.new: skills")
  t.eq(ok, false, "refused: " .. pattern)
  t.eq(type(err) == "table" and err.kind, "config", "an error value, printed for people")
  t.match(err.message, pattern)
  t.for_people(err)
end

t.test("bad skill folders: one error naming the folder and what to do", function()
  raises({root .. "/nothing-here"}, "nothing%-here is not there")
  raises({skill("no-md")}, "no%-md has no SKILL.md")
  raises({skill("no-front", "# just a title\n")}, "no%-front has a SKILL.md without front matter")
  raises({skill("no-desc", "---\nname: no-desc\n---\nbody\n")}, "no%-desc has front matter without description")
  raises({skill("no-name", "---\ndescription: x\n---\n")}, "no%-name has front matter without name")
  raises({skill("Bad_Name", "---\nname: Bad_Name\ndescription: x\n---\n")}, "lower%-case letters, digits and hyphens")
  raises({CLEAN, skill("twin", "---\nname: csv-clean\ndescription: again\n---\n")},
         "csv%-clean and .*twin both name themselves \"csv%-clean\"")
  t.raises(function() agent.new{model = model.scripted(function() return {text = "x"} end), skills = {CLEAN}} end,
           "skills are staged into the sandbox the agent's tools work in")
end)

t.test("an agent's skills: named in its instructions, staged read-only under /skills, read when needed", function()
  local box <close> = assert(sandbox.open{})
  local seen
  local m = model.scripted(function(req, n)
    if n == 1 then
      seen = req.messages[1].content
      return {tool_calls = {{name = "read_file", arguments = {path = "/skills/csv-clean/SKILL.md"}}}}
    end
    return {text = "done"}
  end)
  local a = agent.new{name = "cleaner", instructions = "Clean data.", model = m, tools = tools.standard(box),
                      skills = {CLEAN}}
  local r = a:run("Clean it.")
  t.match(seen, "csv%-clean %(/skills/csv%-clean/SKILL.md%): Clean a messy CSV: dates, units, duplicates.")
  t.no_match(seen, "SECRET%-BODY%-LINE", "the body is not in the instructions: it is read when needed")
  local read
  for _, msg in ipairs(r.transcript) do if msg.role == "tool" then read = model.text_of(msg.content) end end
  t.match(read, "SECRET%-BODY%-LINE", "the agent read SKILL.md with its file tool")
  -- (Python's os.stat: stat(1) uses statx, which this gVisor refuses, sandbox/GVISOR.md)
  local ls = assert(box:exec({"python3", "-c", "import os\nfor p in ('/skills/csv-clean', '/skills/csv-clean/SKILL.md'):"
    .. " print(os.stat(p).st_uid, oct(os.stat(p).st_mode & 0o777))"}))
  t.eq(ls.stdout, "0 0o755\n0 0o644\n", "root's, and readable")
  t.eq(assert(box:exec("python3 /skills/csv-clean/scripts/clean.py")).stdout, "cleaned\n", "its script runs")
  local w = assert(box:exec("echo x > /skills/csv-clean/SKILL.md || echo refused; touch /skills/new 2>/dev/null || echo refused"))
  t.eq(w.stdout, "refused\nrefused\n", "commands cannot change the skills")
  t.eq(assert(box:exec("cat /skills/csv-clean/SKILL.md")).stdout:match("SECRET%-BODY%-LINE") ~= nil, true)
end)

t.test("the supervisor writes skill files under /skills only", function()
  local box <close> = assert(sandbox.open{})
  local ok, err = box:_put_skill_file("/workspace/x.txt", "x")
  t.eq(ok, nil); t.match(err.message, "a skill's file goes under /skills/")
  ok, err = box:_put_skill_file("/skills/a/../../etc/x", "x")
  t.eq(ok, nil); t.ok(err.message ~= nil)
  assert(box:_put_skill_file("/skills/a/b/c.txt", "ok"))
  t.eq(assert(box:exec("cat /skills/a/b/c.txt")).stdout, "ok")
end)

return t.done()

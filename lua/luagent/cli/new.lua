-- luagent new NAME [--from TEMPLATE] [--dir DIR]: writes a recipe that runs as
-- it is — NAME.lua, its settings NAME.yaml, its scripted driver (basic:
-- NAME.script.yaml and a step's NAME_profile.py; energy_anomaly:
-- NAME_script.lua), an eval spec NAME.eval.yaml and its check NAME_check.lua,
-- and what the template needs beside them — from a template embedded in the
-- binary (so an installed luagent has them):
--   basic            (default) recipes/templates/basic/: a small agent with a
--                    sandbox and the standard tools over a CSV (a sample CSV
--                    is written beside it); its scripted driver, used when no
--                    model is configured (it says so), is data: a YAML list
--                    of tool calls (luagent.script), so no part needs Lua
--   energy_anomaly   the energy recipe and its helpers (recipes/energy_*),
--                    copied under the new name: file names, require()s, the
--                    YAML and spec names and the paths in comments fixed
--
--   cli.main(args) -> exit status: 0 written, 2 bad usage (a NAME that is not
--       a Lua module name, an unknown template or option, a file that is
--       already there: nothing is ever overwritten, and then nothing is
--       written), 1 a file could not be written or a template is missing
--   cli.TEMPLATES   name -> {files = {{asset, target ("%s" = NAME), what}}, fill(text, name, prefix),
--                   before_eval (its eval needs NAME_eval_data.lua run first)}
--   cli.check_name(name) -> true | nil, why
local errors = require "luagent.errors"
local fs = require "luagent.fs"
local sys = require "luagent.sys"
local yaml = require "luagent.yaml"

local cli = {}

local KEYWORDS = {}
for word in ([[and break do else elseif end false for function goto if in local nil not or repeat
  return then true until while]]):gmatch("%a+") do KEYWORDS[word] = true end

-- A recipe's name is a Lua module and file name: its helpers are require()d by it.
function cli.check_name(name)
  if not name:match("^[%a_][%w_]*$") then
    return nil, ("'%s' is not a recipe name: use letters, digits and _, not starting with a digit "
      .. "(it names NAME.lua and is a Lua module name), e.g. sales_report"):format(name)
  end
  if #name > 64 then return nil, ("'%s' is longer than 64 characters"):format(name) end
  if KEYWORDS[name] then return nil, ("'%s' is a Lua keyword: choose another name"):format(name) end
  local typed = yaml.scalar(name)
  if type(typed) ~= "string" then
    return nil, ("'%s' reads as %s in YAML (the eval spec's name:): choose another name")
      :format(name, typed == nil and "null" or tostring(typed))
  end
  return true
end

-- The basic template: {{name}} in the texts.
local function fill_basic(text, name)
  return (text:gsub("{{name}}", name))
end

-- The energy recipe under another name: energy_anomaly* -> NAME*, energy_data
-- -> NAME_data, energy_eval_data -> NAME_eval_data (one pass, so a NAME is
-- never renamed again), "recipes/" -> the folder written to, and the lines
-- about `make eval` (this repository's Makefile) said for a copy.
local ENERGY_EDITS = {
  {"#   make eval                                        makes eval_data/ if missing, then runs this\n", ""},
  {"; `make eval` runs it\n-- when the folder is missing.", ": run it\n-- before the eval when the folder is missing."},
}

-- One line of the energy recipe renamed; a comment's column after the
-- renamed word (a run of 3 or more spaces) is kept where it was.
local function rename_line(line, name, prefix)
  local renamed = line:gsub("energy_[%w_]+", function(word)
    if word:sub(1, #"energy_anomaly") == "energy_anomaly" then return name .. word:sub(#"energy_anomaly" + 1) end
    if word == "energy_eval_data" then return name .. "_eval_data" end
    if word == "energy_data" then return name .. "_data" end
    return word
  end):gsub("recipes/", (prefix:gsub("%%", "%%%%")))
  local delta = #renamed - #line
  if delta == 0 or not (line:match("^%s*%-%-") or line:match("^%s*#")) then return renamed end
  local first = 1
  while first <= #line and line:sub(first, first) == renamed:sub(first, first) do first = first + 1 end
  local at, stop = renamed:find("   +", first)
  if not at then return renamed end
  local width = math.max(2, stop - at + 1 - delta)
  return renamed:sub(1, at - 1) .. (" "):rep(width) .. renamed:sub(stop + 1)
end

local function fill_energy(text, name, prefix)
  for _, edit in ipairs(ENERGY_EDITS) do
    local at = text:find(edit[1], 1, true)
    if at then text = text:sub(1, at - 1) .. edit[2] .. text:sub(at + #edit[1]) end
  end
  return (text:gsub("[^\n]+", function(line) return rename_line(line, name, prefix) end))
end

cli.TEMPLATES = {
  basic = {
    fill = fill_basic,
    files = {
      {"recipes/templates/basic/recipe.lua", "%s.lua", "the recipe: sandbox, model, tools, agent"},
      {"recipes/templates/basic/recipe.yaml", "%s.yaml", "its settings and prompts (--set changes one)"},
      {"recipes/templates/basic/recipe.script.yaml", "%s.script.yaml",
       "the scripted driver (no model configured): its steps, as data"},
      {"recipes/templates/basic/recipe_profile.py", "%s_profile.py", "the Python its profiling step runs"},
      {"recipes/templates/basic/recipe_sample.csv", "%s_sample.csv", "a tiny sample input"},
      {"recipes/templates/basic/recipe.eval.yaml", "%s.eval.yaml", "an eval spec: variants x inputs, checked"},
      {"recipes/templates/basic/recipe_check.lua", "%s_check.lua", "the eval's check of one run"},
      {"recipes/templates/basic/skills/csv-profile/SKILL.md", "skills/csv-profile/SKILL.md",
       "a skill the agent reads when it needs it (its name and description are in its instructions)"},
      {"recipes/templates/basic/skills/csv-profile/profile.py", "skills/csv-profile/profile.py", "the skill's script"},
    },
  },
  energy_anomaly = {
    fill = fill_energy,
    files = {
      {"recipes/energy_anomaly.lua", "%s.lua", "the recipe"},
      {"recipes/energy_anomaly.yaml", "%s.yaml", "its settings and prompts (--set changes one)"},
      {"recipes/energy_anomaly_script.lua", "%s_script.lua", "the scripted driver (no model configured)"},
      {"recipes/energy_anomaly_steps.lua", "%s_steps.lua", "the Python steps the scripted driver runs"},
      {"recipes/energy_data.lua", "%s_data.lua", "the seeded data generator"},
      {"recipes/energy_anomaly.eval.yaml", "%s.eval.yaml", "an eval spec: two instruction texts x datasets"},
      {"recipes/energy_anomaly_check.lua", "%s_check.lua", "the eval's check (IoU with the true anomaly)"},
      {"recipes/energy_eval_data.lua", "%s_eval_data.lua", "writes the eval's datasets to eval_data/"},
    },
    before_eval = true, -- its eval needs eval_data/ (NAME_eval_data.lua writes it)
  },
}

local function template_names()
  local names = {}
  for name in pairs(cli.TEMPLATES) do names[#names + 1] = name end
  table.sort(names)
  return table.concat(names, ", ")
end

local function usage(message)
  io.stderr:write("luagent new: ", message, " (see 'luagent help new')\n")
  return 2
end

-- args -> {name, from, dir, help} | nil, message
local function parse(args)
  local o = {from = "basic", dir = "."}
  local i = 1
  while i <= #args do
    local a = args[i]
    local flag, inline = a:match("^(%-%-[%w-]+)=(.*)$")
    flag = flag or a
    if flag == "--from" or flag == "--dir" then
      local value = inline
      if not value then
        i = i + 1
        value = args[i]
      end
      if not value or value == "" then
        return nil, ("%s needs %s"):format(flag, flag == "--from" and "a template (" .. template_names() .. ")" or "a folder")
      end
      o[flag:sub(3)] = value
    elseif a == "-h" or a == "--help" then
      o.help = true
    elseif a:sub(1, 1) == "-" then
      return nil, ("unknown option '%s'"):format(a)
    elseif o.name then
      return nil, ("one NAME at a time ('%s' and '%s')"):format(o.name, a)
    else
      o.name = a
    end
    i = i + 1
  end
  if not o.name and not o.help then return nil, "new needs a NAME, e.g. 'luagent new sales_report'" end
  return o
end

local function join(dir, file)
  return dir == "." and file or (dir:gsub("/+$", "")) .. "/" .. file
end

-- The files to write: {{path, file, what, text}} | nil, err (a template not embedded)
local function render(template, name, dir)
  local prefix = dir == "." and "" or (dir:gsub("/+$", "")) .. "/"
  local out = {}
  for _, f in ipairs(template.files) do
    local text = sys.asset(f[1])
    if not text then
      return errors.fail("not_found", f[1] .. " is not embedded in this luagent: rebuild it with 'make'", {path = f[1]})
    end
    local file = f[2]:format(name)
    out[#out + 1] = {path = join(dir, file), file = file, what = f[3], text = template.fill(text, name, prefix)}
  end
  return out
end

function cli.main(args)
  local o, why = parse(args)
  if not o then return usage(why) end
  if o.help then return require("luagent.cli.help").main({"new"}) end
  local ok
  ok, why = cli.check_name(o.name)
  if not ok then return usage(why) end
  local template = cli.TEMPLATES[o.from]
  if not template then
    return usage(("--from '%s': no such template; there are: %s"):format(o.from, template_names()))
  end
  local st = fs.stat(o.dir)
  if st and st.type ~= "directory" then return usage(("--dir %s is not a folder"):format(o.dir)) end

  local files, err = render(template, o.name, o.dir)
  if not files then
    io.stderr:write("luagent new: ", err.message, "\n")
    return 1
  end
  local there = {}
  for _, f in ipairs(files) do
    if fs.exists(f.path) then there[#there + 1] = f.path end
  end
  if #there > 0 then
    return usage(("%s already there: nothing was written (nothing is ever overwritten); choose another NAME or --dir")
      :format(table.concat(there, ", ")))
  end
  if not st then
    ok, err = fs.mkdir(o.dir)
    if not ok then
      io.stderr:write("luagent new: ", err.message, "\n")
      return 1
    end
  end
  local width = 0
  for _, f in ipairs(files) do width = math.max(width, #f.file) end
  print(("wrote %s recipe %s in %s (template %s):"):format(o.from == "basic" and "a new" or "the " .. o.from, o.name,
    o.dir == "." and "this folder" or o.dir, o.from))
  for _, f in ipairs(files) do
    local parent = f.path:match("^(.*)/[^/]+$")
    if parent then fs.mkdir(parent) end -- a template's subfolder (skills/NAME)
    ok, err = fs.write(f.path, f.text)
    if not ok then
      io.stderr:write("luagent new: ", err.message, "\n")
      return 1
    end
    print(("  %-" .. width .. "s  %s"):format(f.file, f.what))
  end
  local steps = {{"luagent run " .. join(o.dir, o.name .. ".lua"),
                  "a model from the environment or --set, else the scripted driver (it says so)"}}
  if template.before_eval then
    steps[#steps + 1] = {"luagent run " .. join(o.dir, o.name .. "_eval_data.lua"), "the eval's datasets, once"}
  end
  steps[#steps + 1] = {"luagent eval " .. join(o.dir, o.name .. ".eval.yaml"),
                       ("every variant x input, checked by %s_check.lua"):format(o.name)}
  width = 0
  for _, s in ipairs(steps) do width = math.max(width, #s[1]) end
  print("next:")
  for _, s in ipairs(steps) do print(("  %-" .. width .. "s  %s"):format(s[1], s[2])) end
  return 0
end

return cli

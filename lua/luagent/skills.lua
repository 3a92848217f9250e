-- luagent.skills: an agent's skills, as the Agent Skills convention writes
-- them: a folder with a SKILL.md whose YAML front matter has a `name` and a
-- `description`, and whatever else the skill ships (notes, scripts, data).
--
--   skills.load(folders, where) -> {skill...}   raises one error naming the folder; a
--                                               relative folder not found from here is looked for
--                                               beside the recipe
--   skills.stage(box, list) -> true | nil, err  each skill's files under /skills/NAME
--   skills.instructions(list) -> text           what the agent's instructions say of them
--
-- Loaded lazily, as the SDKs do: the instructions carry each skill's name
-- and description only, and the agent reads /skills/NAME/SKILL.md (and the
-- rest) with its tools when it needs the skill. The files are written by
-- the supervisor as root into a root-owned folder: commands read them, run
-- a skill's scripts, and cannot change them.
local context = require "luagent.context"
local errors = require "luagent.errors"
local fs = require "luagent.fs"
local yaml = require "luagent.yaml"

local skills = {}

skills.ROOT = "/skills"

local MAX_BYTES = 8 * 1024 * 1024 -- a skill's files together (the folder in the sandbox has 16 MiB)

-- A skill that cannot be used: an error value (kind config), printed for
-- people with the recipe's line.
local function refuse(text)
  error(errors.new("config", text), 0)
end

local function bad(where, folder, why)
  refuse(("%s: the skill folder %s %s"):format(where, folder, why))
end

-- The YAML between the first two "---" lines of SKILL.md.
local function front_matter(text)
  local body = text:match("^%-%-%-\r?\n(.-)\r?\n%-%-%-%s*\r?\n") or text:match("^%-%-%-\r?\n(.-)\r?\n%-%-%-%s*$")
  return body
end

-- Its fields: YAML, else (a description with a colon in it, as many
-- SKILL.md files write it unquoted) one `key: value` per line.
local function front_fields(head, folder)
  local ok, meta = pcall(yaml.load, head, folder .. "/SKILL.md")
  if ok and type(meta) == "table" then return meta end
  local fields, any = {}, false
  for line in (head .. "\n"):gmatch("(.-)\r?\n") do
    local key, value = line:match("^([%w_%-]+):%s*(.-)%s*$")
    if key then
      fields[key], any = value:match('^"(.*)"$') or value:match("^'(.*)'$") or value, true
    end
  end
  return any and fields or nil
end

local function load_one(folder, where)
  if type(folder) ~= "string" or folder == "" then
    refuse(("%s: each skill is a folder's path (a string), got %s"):format(where, tostring(folder)))
  end
  local dir = folder:gsub("/+$", "")
  local st = fs.stat(dir)
  local recipe_dir = context.current().recipe_dir
  if not st and dir:sub(1, 1) ~= "/" and recipe_dir then -- a path in a recipe's settings: beside the recipe
    dir = recipe_dir .. "/" .. dir
    st = fs.stat(dir)
  end
  if not st or st.type ~= "directory" then bad(where, folder, "is not there (give the path of a folder with a SKILL.md)") end
  local text = fs.read(dir .. "/SKILL.md")
  if not text then bad(where, folder, "has no SKILL.md (a skill is a folder whose SKILL.md says its name and description)") end
  local head = front_matter(text)
  if not head then bad(where, folder, "has a SKILL.md without front matter (--- name: ... description: ... ---)") end
  local meta = front_fields(head, folder)
  if type(meta) ~= "table" then bad(where, folder, "has front matter that is not YAML key: value lines") end
  for _, key in ipairs{"name", "description"} do
    if type(meta[key]) ~= "string" or meta[key] == "" then
      bad(where, folder, ("has front matter without %s (SKILL.md starts: ---, name: ..., description: ..., ---)"):format(key))
    end
  end
  if not meta.name:match("^[a-z0-9][a-z0-9%-]*$") or #meta.name > 64 then
    bad(where, folder, ("names itself %q: a skill's name is lower-case letters, digits and hyphens, 64 at most")
      :format(meta.name))
  end
  local files, bytes = {}, 0
  for _, e in ipairs(assert(fs.walk(dir))) do
    if e.type == "file" then
      files[#files + 1] = {path = e.path, host = dir .. "/" .. e.path,
                           mode = ((fs.stat(dir .. "/" .. e.path) or {}).mode or 420) & 73 ~= 0 and 493 or 420}
      bytes = bytes + e.size
    end
  end
  if bytes > MAX_BYTES then bad(where, folder, ("holds %d bytes: a skill's files hold 8 MiB at most"):format(bytes)) end
  return {name = meta.name, description = meta.description, dir = dir, files = files}
end

function skills.load(folders, where)
  where = where or "skills"
  if folders == nil then return {} end
  if type(folders) ~= "table" then refuse(where .. " must be a list of skill folders") end
  local list, seen = {}, {}
  for _, folder in ipairs(folders) do
    local skill = load_one(folder, where)
    if seen[skill.name] then
      refuse(("%s: the skill folders %s and %s both name themselves %q: a skill's name is its own")
        :format(where, seen[skill.name], folder, skill.name))
    end
    seen[skill.name] = folder
    list[#list + 1] = skill
  end
  return list
end

function skills.stage(box, list)
  for _, skill in ipairs(list) do
    for _, f in ipairs(skill.files) do
      local data, err = fs.read(f.host)
      if not data then return nil, errors.from(err) end
      local ok
      ok, err = box:_put_skill_file(("%s/%s/%s"):format(skills.ROOT, skill.name, f.path), data, f.mode)
      if not ok then return nil, errors.wrap(err, ("staging the skill %s (%s)"):format(skill.name, f.path)) end
    end
  end
  return true
end

function skills.instructions(list)
  if #list == 0 then return nil end
  local lines = {"## Skills", "", "These skills are in the sandbox, read-only. When a task needs one, first read its "
    .. "SKILL.md (e.g. `cat " .. skills.ROOT .. "/NAME/SKILL.md`) and follow it; it may name other files of the "
    .. "skill to read or scripts to run.", ""}
  for _, s in ipairs(list) do
    lines[#lines + 1] = ("- %s (%s/%s/SKILL.md): %s"):format(s.name, skills.ROOT, s.name, s.description)
  end
  return table.concat(lines, "\n")
end

return skills

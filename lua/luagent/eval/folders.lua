-- luagent.eval.folders: which eval folder a command-line argument names.
-- luagent.eval writes evals/<eval-id>/ beside the spec, or under
-- $LUAGENT_EVALS_DIR; an eval's folder is one with a results.jsonl.
--
--   folders.find(arg [, roots]) -> dir | nil, err   (err kind "usage", naming arg and where it looked)
--     arg: an eval's folder (a path), or an eval id (a folder name) found under
--     $LUAGENT_EVALS_DIR, ./evals/ or ./*/evals/ (e.g. recipes/evals/); the
--     start of an id is enough when it names one eval
--   folders.relative(path) -> path as shown to a person: relative to the current folder when under it
--   folders.roots() -> {dir, ...}   where an id is looked for (the default roots), in that order (those
--     that exist)
local fs = require "luagent.fs"
local errors = require "luagent.errors"

local folders = {}

local HELP = "give an eval id (a folder name under evals/) or an eval's folder"

local function is_dir(path)
  local st = fs.stat(path)
  return st and st.type == "directory"
end

local function is_eval(dir) return fs.exists(dir .. "/results.jsonl") end

function folders.roots()
  local roots, seen = {}, {}
  local function add(dir)
    if dir and dir ~= "" and not seen[dir] and is_dir(dir) then
      seen[dir] = true
      roots[#roots + 1] = dir
    end
  end
  add(os.getenv("LUAGENT_EVALS_DIR"))
  add("evals")
  local names = fs.list(".") or {}
  table.sort(names)
  for _, name in ipairs(names) do
    if name:sub(1, 1) ~= "." and name ~= "evals" then add(name .. "/evals") end
  end
  return roots
end

function folders.relative(path)
  local cwd = os.getenv("PWD")
  if cwd and path:sub(1, #cwd + 1) == cwd .. "/" then return path:sub(#cwd + 2) end
  return path
end

local function usage(message) return errors.fail("usage", message) end

-- The evals under the roots whose id is arg, or else starts with it.
local function by_id(arg, roots)
  for _, root in ipairs(roots) do
    local dir = root .. "/" .. arg
    if is_dir(dir) and is_eval(dir) then return {dir} end
  end
  local found = {}
  for _, root in ipairs(roots) do
    local names = fs.list(root) or {}
    table.sort(names)
    for _, name in ipairs(names) do
      local dir = root .. "/" .. name
      if name:sub(1, #arg) == arg and is_eval(dir) then found[#found + 1] = dir end
    end
  end
  return found
end

function folders.find(arg, roots)
  if type(arg) ~= "string" or arg == "" then return usage("an eval is missing; " .. HELP) end
  local st = fs.stat(arg)
  if st then
    if st.type ~= "directory" then return usage(("%s is a file, not an eval's folder; %s"):format(arg, HELP)) end
    local dir = arg:gsub("(.)/+$", "%1")
    if not is_eval(dir) then
      return usage(("%s is a folder without a results.jsonl, not an eval's folder; %s"):format(arg, HELP))
    end
    return dir
  end
  if arg:find("/", 1, true) then return usage(("%s: no such folder; %s"):format(arg, HELP)) end
  roots = roots or folders.roots()
  local found = by_id(arg, roots)
  if #found == 1 then return found[1] end
  if #found > 1 then
    return usage(("'%s' is the start of %d evals' ids (%s); give more of the id"):format(arg, #found,
      table.concat(found, ", ")))
  end
  local where = #roots > 0 and table.concat(roots, ", ") or "no evals folder here ($LUAGENT_EVALS_DIR, evals/, */evals/)"
  return usage(("no eval '%s' (looked in %s); %s"):format(arg, where, HELP))
end

return folders

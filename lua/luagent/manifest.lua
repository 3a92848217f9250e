-- luagent.manifest: what is staged into a sandbox workspace.
--
--   local m = require "luagent.manifest"
--   local files = {
--     ["input/building_energy.csv"] = m.file("data/building_energy.csv"),
--     ["input/lib"]                 = m.dir("lib", {exclude = {"*.pyc", "__pycache__"}}),
--     ["notes/task.md"]             = m.text("Find the anomaly."),
--   }
--   local entries, err = m.entries(files)   -- tar entries for luagent.engine_stream.put_archive
--
-- Keys are workspace paths (relative, or absolute under /workspace). Every host
-- path is checked before anything starts: a missing file fails naming its key.
-- Failures are `nil, err` (a luagent.errors value of kind not_found,
-- bad_entry or io, with the entry's key).
local fs = require "luagent.fs"
local errors = require "luagent.errors"

local manifest = {}

function manifest.file(path)
  assert(type(path) == "string", "sandbox.file(path): path must be a string")
  return {kind = "file", path = path}
end

function manifest.dir(path, opts)
  assert(type(path) == "string", "sandbox.dir(path): path must be a string")
  return {kind = "dir", path = path, exclude = opts and opts.exclude or {}}
end

function manifest.text(text)
  assert(type(text) == "string", "sandbox.text(text): text must be a string")
  return {kind = "text", text = text}
end

local function fail(kind, key, fmt, ...)
  return errors.fail(kind, ("manifest entry '%s': " .. fmt):format(key, ...), {key = key})
end

-- "/workspace/a/./b/" -> "a/b"; nil for paths that leave the workspace.
function manifest.workspace_path(path, root)
  root = root or "/workspace"
  if path:sub(1, #root + 1) == root .. "/" then path = path:sub(#root + 2)
  elseif path == root then path = "" end
  if path:sub(1, 1) == "/" then return nil, "an absolute path outside " .. root end
  local parts = {}
  for part in path:gmatch("[^/]+") do
    if part == ".." then return nil, "'..' is not allowed" end
    if part ~= "." then parts[#parts + 1] = part end
  end
  return table.concat(parts, "/")
end

-- A glob ("*.pyc", "data/**/tmp", "?x") as an anchored Lua pattern.
function manifest.glob_pattern(glob)
  local out = glob:gsub("[%^%$%(%)%%%.%[%]%+%-]", "%%%0")
  out = out:gsub("%*%*", "\0"):gsub("%*", "[^/]*"):gsub("%?", "[^/]"):gsub("%z", ".*")
  return "^" .. out .. "$"
end

local function excluded(rel, patterns)
  local base = rel:match("([^/]+)$")
  for _, p in ipairs(patterns) do
    if rel:find(p) or base:find(p) then return true end
  end
  return false
end

local function dir_entries(key, source, entries)
  local st, err = fs.stat(source.path)
  if not st then return fail("not_found", key, "host folder '%s' does not exist (%s)", source.path, err.message) end
  if st.type ~= "directory" then return fail("bad_entry", key, "'%s' is not a folder; use sandbox.file", source.path) end
  local patterns = {}
  for i, g in ipairs(source.exclude) do patterns[i] = manifest.glob_pattern(g) end
  local walked
  walked, err = fs.walk(source.path)
  if not walked then return fail("io", key, "cannot read folder '%s': %s", source.path, err.message) end
  if key ~= "" then entries[#entries + 1] = {name = key, dir = true} end
  local skip_prefix
  for _, e in ipairs(walked) do
    local inside_excluded = skip_prefix and e.path:sub(1, #skip_prefix) == skip_prefix
    if inside_excluded then -- luacheck: ignore 542
      -- skipped with its folder
    elseif excluded(e.path, patterns) then
      if e.type == "directory" then skip_prefix = e.path .. "/" end
    else
      skip_prefix = nil
      local name = key == "" and e.path or key .. "/" .. e.path
      local full = source.path .. "/" .. e.path
      if e.type == "directory" then entries[#entries + 1] = {name = name, dir = true}
      elseif e.type == "file" then entries[#entries + 1] = {name = name, file = full}
      end -- links, sockets and devices of the host are not staged
    end
  end
  return true
end

-- The manifest as tar entries, checked and sorted by workspace path.
function manifest.entries(m)
  local keys = {}
  for key in pairs(m or {}) do
    if type(key) ~= "string" then
      return errors.fail("bad_entry", "manifest keys must be workspace paths (strings)")
    end
    keys[#keys + 1] = key
  end
  table.sort(keys)
  local entries = {}
  for _, key in ipairs(keys) do
    local source = m[key]
    local name, why = manifest.workspace_path(key)
    if not name then return fail("bad_entry", key, "%s", why) end
    if type(source) == "string" then source = manifest.text(source) end
    if type(source) ~= "table" or not source.kind then
      return fail("bad_entry", key, "use sandbox.file(path), sandbox.dir(path) or sandbox.text(string)")
    end
    if source.kind == "file" then
      local st, err = fs.stat(source.path)
      if not st then return fail("not_found", key, "host file '%s' does not exist (%s)", source.path, err.message) end
      if st.type == "directory" then return fail("bad_entry", key, "'%s' is a folder; use sandbox.dir", source.path) end
      if name == "" then return fail("bad_entry", key, "a file needs a name in the workspace") end
      entries[#entries + 1] = {name = name, file = source.path}
    elseif source.kind == "text" then
      if name == "" then return fail("bad_entry", key, "a text needs a name in the workspace") end
      entries[#entries + 1] = {name = name, data = source.text}
    elseif source.kind == "dir" then
      local ok, err = dir_entries(name, source, entries)
      if not ok then return nil, err end
    end
  end
  return entries
end

-- manifest.size(entries) -> bytes, {{name, bytes}, ...} the total and the entries, largest first
function manifest.size(entries)
  local total, sizes = 0, {}
  for _, e in ipairs(entries) do
    local n = e.data and #e.data or e.file and (fs.stat(e.file) or {}).size or 0
    total = total + n
    sizes[#sizes + 1] = {name = e.name, bytes = n}
  end
  table.sort(sizes, function(a, b) return a.bytes > b.bytes end)
  return total, sizes
end

return manifest

-- luagent cache stats [DIR]                       what the model-call cache holds
-- luagent cache clear [DIR] [--older-than 14d]    remove its entries (all, or the old ones)
--
-- DIR: a cache folder, or a recipe file (its .luagent/cache/); by default
-- $LUAGENT_CACHE, else .luagent/cache/ in the current folder. Only the
-- cache's own files are touched (entries, the runs' key lists, temp files).
local cache = require "luagent.cache"
local fs = require "luagent.fs"

local cli = {}

local USAGE = [[
usage: luagent cache stats [DIR]
       luagent cache clear [DIR] [--older-than AGE]
  DIR   the cache folder, or a recipe (its .luagent/cache/); default $LUAGENT_CACHE,
        else .luagent/cache/ here
  AGE   a number and a unit: s, m, h or d (e.g. 14d): only entries written before then]]

local UNITS = {s = 1, m = 60, h = 3600, d = 86400}

-- "14d" -> seconds, or nil.
function cli.parse_age(text)
  local n, unit = tostring(text or ""):match("^(%d+%.?%d*)([smhd])$")
  if not n then return nil end
  return tonumber(n) * UNITS[unit]
end

local function folder_of(arg)
  if not arg then return cache.dir_for({}) end
  local st = fs.stat(arg)
  if arg:match("%.lua$") and st and st.type == "file" then
    return cache.dir_for({}, arg:match("^(.*)/[^/]*$") or ".")
  end
  return arg
end

local function size(bytes)
  if bytes >= 1024 * 1024 then return ("%.1f MB"):format(bytes / 1024 / 1024) end
  if bytes >= 1024 then return ("%.1f kB"):format(bytes / 1024) end
  return ("%d bytes"):format(bytes)
end

local function date(t)
  return t and os.date("%Y-%m-%d %H:%M", t) or "-"
end

local function stats(dir)
  local r, err = cache.stats(dir)
  if not r then
    io.stderr:write("luagent: cannot read the cache ", dir, ": ", err.message, "\n")
    return 1
  end
  print(("cache   %s"):format(dir))
  print(("entries %d (%s)"):format(r.entries, size(r.bytes)))
  if r.entries > 0 then
    print(("oldest  %s   newest %s"):format(date(r.oldest), date(r.newest)))
    local names = {}
    for name in pairs(r.by_model) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
      local by = r.by_model[name]
      print(("  %-32s %6d entries  %s"):format(name, by.entries, size(by.bytes)))
    end
  end
  if r.unreadable > 0 then
    print(("%d unreadable entr%s (a miss when asked; rewritten by the next live call)"):format(r.unreadable,
      r.unreadable == 1 and "y" or "ies"))
  end
  return 0
end

local function clear(dir, rest)
  local older_than
  local i = 1
  while rest[i] do
    local arg = rest[i]
    local value = arg:match("^%-%-older%-than=(.*)$")
    if arg == "--older-than" then value, i = rest[i + 1], i + 1 end
    if not value then
      io.stderr:write("luagent: cache clear: unknown argument '", arg, "'\n", USAGE, "\n")
      return 2
    end
    older_than = cli.parse_age(value)
    if not older_than then
      io.stderr:write("luagent: cache clear: --older-than needs a number and a unit s, m, h or d (e.g. 14d), got '",
        tostring(value), "'\n")
      return 2
    end
    i = i + 1
  end
  local r, err = cache.clear(dir, {older_than = older_than})
  if not r then
    io.stderr:write("luagent: cannot clear the cache ", dir, ": ", err.message, "\n")
    return 1
  end
  print(("removed %d entr%s (%s) from %s; %d kept"):format(r.removed, r.removed == 1 and "y" or "ies", size(r.bytes),
    dir, r.kept))
  return 0
end

function cli.main(args)
  local command = args[1]
  local rest, dir_arg = {}, nil
  for i = 2, #args do
    if args[i]:match("^%-") or (args[i - 1] == "--older-than") then rest[#rest + 1] = args[i]
    elseif not dir_arg then dir_arg = args[i]
    else rest[#rest + 1] = args[i] end
  end
  if command == "stats" and #rest == 0 then return stats(folder_of(dir_arg)) end
  if command == "clear" then return clear(folder_of(dir_arg), rest) end
  io.stderr:write(USAGE, "\n")
  return 2
end

return cli

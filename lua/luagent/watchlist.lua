-- luagent.watchlist: what a run read, for `luagent run --watch` (the watcher,
-- lua/luagent/cli/watch.lua, starts each run with LUAGENT_WATCH_LIST=FILE).
-- Without that variable it is never loaded: init.lua looks at the variable
-- once, and luagent.config only asks package.loaded.
--
-- With it, the run appends one tab-separated line to FILE per fact:
--   file <TAB> PATH        a Lua module that `require` found on disk (looked
--                          up like the Lua searcher, so a module that does not
--                          compile is listed too), a YAML file luagent.config read
--   run <TAB> TRACE        at run_end: the run's trace (its folder holds the
--                          outputs and manifest.json)
-- Paths are as the run saw them (relative to its working folder, which is
-- the watcher's). Only for the watcher: nothing else reads the file.
--
--   watchlist.start(path)   hooks the Lua module searcher and the run_end event
--   watchlist.file(path)    records a file the run read
local watchlist = {}

local list_path

local function append(kind, value)
  local f = io.open(list_path, "a")
  if not f then return end -- the watcher is gone: nothing to tell
  f:write(kind, "\t", value, "\n")
  f:close()
end

function watchlist.file(path)
  if list_path then append("file", path) end
end

function watchlist.start(path)
  if list_path then return end
  list_path = path
  local lua_searcher = package.searchers[2]
  package.searchers[2] = function(name)
    local found = package.searchpath(name, package.path)
    if found then append("file", found) end
    return lua_searcher(name)
  end
  require("luagent.events").subscribe(function(ev)
    if ev.type == "run_end" and ev.trace then append("run", ev.trace) end
  end)
end

return watchlist

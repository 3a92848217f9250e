---@meta luagent.fs
-- luagent.fs: host files (src/lua/lua_fs.c). Failures are nil, err with kind
-- "not_found", "permission", "exists" or "io" and err.path.
-- LuaLS annotations: definitions only.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---@alias luagent.FileType "file"|"directory"|"link"|"fifo"|"socket"|"device"|"other"

---@class luagent.FileStat
---@field type luagent.FileType
---@field size integer bytes
---@field mode integer permission bits
---@field mtime number seconds since the epoch

---@class luagent.WalkEntry
---@field path string relative to the folder walked
---@field type luagent.FileType
---@field size integer

---@class luagent.fs
local fs = {}

---Reads a whole file.
---@param path string
---@return string? content
---@return luagent.Error? err
function fs.read(path) end

---Writes a file atomically (a temporary file, then a rename).
---@param path string
---@param data string
---@param mode? integer permission bits
---@return true? ok
---@return luagent.Error? err
function fs.write(path, data, mode) end

---Appends to a file (made when missing).
---@param path string
---@param data string
---@return true? ok
---@return luagent.Error? err
function fs.append(path, data) end

---Is something there?
---@param path string
---@return boolean
function fs.exists(path) end

---What is there (links are not followed).
---@param path string
---@return luagent.FileStat? stat
---@return luagent.Error? err
function fs.stat(path) end

---Makes a folder and its parents (mkdir -p).
---@param path string
---@return true? ok
---@return luagent.Error? err
function fs.mkdir(path) end

---The names in a folder, sorted.
---@param dir string
---@return string[]? names
---@return luagent.Error? err
function fs.list(dir) end

---Everything under a folder, depth-first, sorted.
---@param dir string
---@return luagent.WalkEntry[]? entries
---@return luagent.Error? err
function fs.walk(dir) end

---Makes a new temporary folder.
---@param prefix? string
---@return string? path
---@return luagent.Error? err
function fs.temp_dir(prefix) end

---Removes a file or a folder with everything in it (never follows links).
---@param path string
---@return true? ok
---@return luagent.Error? err
function fs.remove(path) end

---The absolute path with links resolved.
---@param path string
---@return string? path
---@return luagent.Error? err
function fs.realpath(path) end

return fs

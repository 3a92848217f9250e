---@meta luagent.yaml
-- luagent.yaml: YAML to Lua tables and back (src/lua_yaml.c). Plain scalars
-- are typed by the YAML 1.2 core schema; quoted ones stay strings; null is
-- nil; sequences are JSON arrays. LuaLS annotations: definitions only.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---@class luagent.yaml
local yaml = {}

---Parses YAML text. Invalid text: nil, err (kind "yaml", err.line and
---err.column 1-based, err.file = name).
---@param text string
---@param name? string how to name the text in errors
---@return any value
---@return luagent.Error? err
function yaml.load(text, name) end

---Reads and parses a YAML file: nil, err (err.file names it) when missing or invalid.
---@param path string
---@return any value
---@return luagent.Error? err
function yaml.load_file(path) end

---Writes a value as YAML (keys sorted, strings quoted when needed).
---@param value any
---@return string
function yaml.dump(value) end

---How a plain scalar is typed: "3" -> 3, "true" -> true, "null" -> nil, else the text.
---@param text string
---@return any
function yaml.scalar(text) end

return yaml

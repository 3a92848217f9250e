---@meta luagent.yaml
-- luagent.yaml: YAML to Lua tables and back (src/lua/lua_yaml.c). Plain scalars
-- are typed by the YAML 1.2 core schema; quoted ones stay strings; null is
-- nil; sequences are JSON arrays. LuaLS annotations: definitions only.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---@class luagent.yaml
local yaml = {}

---Options of yaml.load and yaml.load_file.
---@class luagent.YamlLoadOptions
---@field positions? boolean also return where every key and item is (luagent.YamlPositions)

---Where things are in the text: positions[tbl][key] = {line, col} (1-based) of each key of
---every mapping tbl of the value (keys whose value is null too, though tbl lacks them), and
---positions[list][i] of each item of every sequence.
---@alias luagent.YamlPositions table<table, table<any, {line: integer, col: integer}>>

---Parses YAML text. Invalid text: nil, err (kind "yaml", err.line and
---err.column 1-based, err.file = name). With opts.positions, the positions too.
---@param text string
---@param name? string how to name the text in errors
---@param opts? luagent.YamlLoadOptions
---@return any value
---@return luagent.Error|luagent.YamlPositions|nil err_or_positions
function yaml.load(text, name, opts) end

---Reads and parses a YAML file: nil, err (err.file names it) when missing or invalid.
---With opts.positions, the positions too.
---@param path string
---@param opts? luagent.YamlLoadOptions
---@return any value
---@return luagent.Error|luagent.YamlPositions|nil err_or_positions
function yaml.load_file(path, opts) end

---Writes a value as YAML (keys sorted, strings quoted when needed).
---@param value any
---@return string
function yaml.dump(value) end

---How a plain scalar is typed: "3" -> 3, "true" -> true, "null" -> nil, else the text.
---@param text string
---@return any
function yaml.scalar(text) end

return yaml

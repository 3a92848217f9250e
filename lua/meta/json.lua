---@meta luagent.json
-- luagent.json: JSON exact enough for model API payloads (src/lua/lua_json.c):
-- integers stay integers (exact up to 2^63), decoded arrays keep an array
-- mark so [] survives a round trip, null is json.null, keys are sorted on
-- encoding (same table, same bytes). LuaLS annotations: definitions only.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---@class luagent.json
local json = {}

---The JSON null (decoded null; encode it to write null).
---@type lightuserdata
json.null = nil

---Decodes JSON text. Invalid text: nil, err (kind "json", err.position the
---1-based byte offset).
---@param text string
---@return any value
---@return luagent.Error? err
function json.decode(text) end

---Encodes a value; raises on what JSON cannot hold (functions, NaN, cycles),
---naming where it is.
---@param value any
---@param opts? {indent?: integer}
---@return string
function json.encode(value, opts) end

---Marks a table as an array, so {} encodes as []; returns it.
---@generic T: table
---@param t T
---@return T
function json.array(t) end

---Is the table marked as an array (json.array, or decoded from [...])?
---@param t any
---@return boolean
function json.is_array(t) end

return json

---@meta luagent.schema
-- luagent.schema: JSON Schema as plain Lua tables — the subset the model
-- providers accept for structured answers (lua/luagent/schema.lua).
-- LuaLS annotations: definitions only.
--
--   local schema = require "luagent.schema"
--   local REPORT = {type = "object", additionalProperties = false, required = {"kind", "hour"},
--     properties = {kind = {type = "string", enum = {"spike", "drop"}}, hour = {type = "integer"}}}
--   schema.check(REPORT)                       -- raises naming the field when it is not valid
--   local ok, errs = schema.validate(REPORT, value)   -- errs[1] = {path = "$.kind", message = ...}
--
-- The subset: type (a name or a list: {"string", "null"}), properties, required,
-- additionalProperties, items, enum, const, anyOf, $ref into $defs, the string,
-- number and array bounds, and annotations. pattern and format are accepted and
-- left to the provider. Other keywords (typos, oneOf, nullable) are refused.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---What is wrong with a value: where (a JSON path, indexes from 0) and what.
---@class luagent.SchemaError
---@field path string "$", "$.items[0].kind", ...
---@field message string

---@class luagent.schema
local schema = {}

---Raises one message naming the field when `s` is not a valid schema of the
---subset (e.g. "schema.properties.kind.type: \"objekt\" is not a JSON type");
---returns s.
---@param s table
---@param where? string the name of the schema in messages (default "schema")
---@return table
function schema.check(s, where) end

---The same problems as a list ("where: what"), empty when the schema is valid.
---@param s table
---@param where? string
---@return string[]
function schema.problems(s, where) end

---Checks a value (decoded JSON or plain Lua) against a schema.
---@param s table
---@param value any
---@return boolean ok
---@return luagent.SchemaError[]? errors at most 20
function schema.validate(s, value) end

---The errors as lines "- path: message", as the model reads them.
---@param errors luagent.SchemaError[]
---@return string
function schema.describe(errors) end

---Whether the schema may be sent with strict = true (OpenAI): every object
---lists all its properties in required and has additionalProperties = false.
---@param s table
---@return boolean
function schema.strict_ok(s) end

return schema

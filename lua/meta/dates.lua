---@meta luagent.dates
-- luagent.dates, a low-level module: recipes normally do not need it (the
-- recipe API, luagent.sandbox, .model, .agent, ..., is built on it). It is
-- not a field of the `luagent` class. LuaLS annotations: definitions only.
-- LuaLS takes one module per file: `---@meta luagent.dates` above makes
-- `require "luagent.dates"` give the types of the table returned below.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---low-level: recipes normally do not need this.
---luagent.dates: calendar arithmetic without the local time zone (lua/luagent/dates.lua).
---@class luagent.dates
local dates = {}

---Days since 1970-01-01 of a civil date.
---@param y integer
---@param m integer
---@param d integer
---@return integer
function dates.days_from_civil(y, m, d) end

---Seconds since the epoch of an HTTP date or an RFC 3339 time, or nil.
---@param text string
---@return number?
function dates.parse(text) end

return dates

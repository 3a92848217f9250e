---@meta luagent.diff
-- luagent.diff: how two texts, or two JSON-like values, differ
-- (lua/luagent/diff.lua). Handy in eval checks:
--
--   local diff = require "luagent.diff"
--   print(diff.unified(old_report, new_report, {a_name = "before", b_name = "after"}))
--   local added, removed = diff.lines_changed(old_report, new_report)
--
-- LuaLS annotations: definitions only.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---@class luagent.DiffOptions
---@field a_name? string the first text's name in the "---" header (default "a")
---@field b_name? string the second text's name in the "+++" header (default "b")
---@field context? integer unchanged lines around each change (default 3)

---@class luagent.ValueDifference
---@field path string where they differ, e.g. "request.messages[2].content"
---@field a any the first value there (nil when absent)
---@field b any the second value there (nil when absent)

---@class luagent.diff
local diff = {}

---Texts bigger than this (bytes) are not diffed line by line: one line says they differ.
---@type integer
diff.MAX_BYTES = 16 * 1024 * 1024

---Texts with more lines than this are not diffed line by line.
---@type integer
diff.MAX_LINES = 200000

---Steps the line diff may take before it gives up for the one-line summary.
---@type integer
diff.MAX_WORK = 10000000

---A unified diff in the format of `diff -u` ("--- a", "+++ b", "@@ -l,s +l,s @@"
---hunks, "\ No newline at end of file"); "" when the texts are equal.
---Minimal, line by line. Binary texts (a NUL byte) and texts past the limits
---above give one line instead: "a and b differ (why): N bytes, sha256 X; M bytes, sha256 Y".
---@param a string
---@param b string
---@param opts? luagent.DiffOptions
---@return string
function diff.unified(a, b, opts) end

---How many lines b adds to a and removes from it (past the limits above:
---the lines of one not found in the other, counted as multisets).
---@param a string
---@param b string
---@return integer added
---@return integer removed
function diff.lines_changed(a, b) end

---Where two JSON-like values (tables, strings, numbers, booleans) differ, in
---key order (integer keys first, numerically), at most `max` places (default 8).
---@param a any
---@param b any
---@param opts? {root?: string, max?: integer}
---@return luagent.ValueDifference[]
function diff.values(a, b, opts) end

---One value in one line, cut at max characters (default 160): strings quoted,
---tables as JSON, nil as "(absent)".
---@param value any
---@param max? integer
---@return string
function diff.short(value, max) end

return diff

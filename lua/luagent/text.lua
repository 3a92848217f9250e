-- luagent.text: text shown to people in one line (an error message, an
-- event, the terminal view), cut to fit: the one excerpt helper of the
-- library (schema, diff, sandbox, trace and the MCP client each had one).
--
--   text.excerpt(value, width [, shape]) -> string   tostring(value), at most `width` characters:
--       a longer one is cut and ends with "..."; shape "line": its first line, leading blanks
--       dropped; "flat": every run of whitespace (newlines too) one space
--   text.size(bytes) -> string   "1.5 GiB", "20.0 MiB", "3.0 KiB", "12 bytes"
local text = {}

function text.size(n)
  for _, unit in ipairs{{"GiB", 1024 ^ 3}, {"MiB", 1024 ^ 2}, {"KiB", 1024}} do
    if n >= unit[2] then return ("%.1f %s"):format(n / unit[2], unit[1]) end
  end
  return n .. " bytes"
end

function text.excerpt(value, width, shape)
  local s = tostring(value)
  if shape == "line" then s = s:match("^%s*([^\n]*)")
  elseif shape == "flat" then s = s:gsub("%s+", " ") end
  if #s <= width then return s end
  return s:sub(1, math.max(0, width - 3)) .. "..."
end

return text

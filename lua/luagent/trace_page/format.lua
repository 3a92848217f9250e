-- luagent.trace_page.format (internal): the small formatters of the trace
-- page (luagent.trace_page) and the eval page (luagent.eval.page): numbers,
-- sizes, durations, money, links, and values from a trace that may have any
-- type.
--
--   f.escape(text)        & < > " escaped (luagent.highlight.escape)
--   f.encode_path(path)   each character outside [%w-._~/] percent-encoded
--   f.href(path) -> a relative link's href: the path encoded, then escaped
--   f.num(v) -> number | nil         f.str(v) -> string | nil (nil and json.null: nil)
--   f.secs(seconds) -> "0.43 s" | "12.3 s" | "2 min 05 s"
--   f.tokens(n) -> "850" | "12.3k" | "1.20M"        f.count(n) -> "12,345"
--   f.bytes(n [, word]) -> "512 B" | "1.2 KB" | "3.4 MB"   word: what under 1 KB is counted in ("B")
--   f.money(cost) -> "$0.0123" | "$?"
--   f.text_of(content) -> text   a message's content (a string, or parts with text) as text
--   f.image_type(bytes) -> "image/png" | "image/jpeg" | nil   by the first bytes
--   f.file_image_type(path) -> the same, of a file's first bytes (nil: none, or not readable)
--   f.read_json(path) -> value | nil   a JSON file decoded (nil: missing, or not JSON)
local json = require "luagent.json"
local fs = require "luagent.fs"
local highlight = require "luagent.highlight"

local f = {}

f.escape = highlight.escape

function f.encode_path(p)
  return (p:gsub("[^%w%-%._~/]", function(c) return ("%%%02X"):format(c:byte()) end))
end

function f.href(path)
  return f.escape(f.encode_path(path))
end

function f.num(v)
  return type(v) == "number" and v == v and v or nil
end

function f.str(v)
  if v == nil or v == json.null then return nil end
  return type(v) == "string" and v or tostring(v)
end

function f.secs(s)
  s = f.num(s)
  if not s then return "?" end
  if s < 10 then return ("%.2f s"):format(s) end
  if s < 60 then return ("%.1f s"):format(s) end
  return ("%d min %02d s"):format(s // 60, math.floor(s % 60))
end

function f.tokens(n)
  n = f.num(n)
  if not n then return "?" end
  if n >= 1e6 then return ("%.2fM"):format(n / 1e6) end
  if n >= 1e4 then return ("%.1fk"):format(n / 1e3) end
  return f.count(n)
end

function f.count(n)
  local sign, digits = ("%d"):format(math.floor(f.num(n) or 0)):match("^(%-?)(%d+)$")
  local lead = (#digits - 1) % 3 + 1
  return sign .. digits:sub(1, lead) .. digits:sub(lead + 1):gsub("%d%d%d", ",%0")
end

function f.bytes(n, word)
  n = f.num(n)
  if not n then return "?" end
  if n >= 1024 * 1024 then return ("%.1f MB"):format(n / 1024 / 1024) end
  if n >= 1024 then return ("%.1f KB"):format(n / 1024) end
  return ("%d %s"):format(n, word or "B")
end

function f.money(c)
  c = f.num(c)
  return c and ("$%.4f"):format(c) or "$?"
end

function f.text_of(content)
  if type(content) == "string" then return content end
  if type(content) ~= "table" then return f.str(content) or "" end
  local parts = {}
  for _, part in ipairs(content) do
    if type(part) == "table" and type(part.text) == "string" then parts[#parts + 1] = part.text
    elseif type(part) == "table" and part.type then parts[#parts + 1] = ("[%s]"):format(tostring(part.type)) end
  end
  return table.concat(parts, "\n")
end

local MAGIC = {{"\137PNG\r\n\26\n", "image/png"}, {"\255\216\255", "image/jpeg"}}

function f.image_type(data)
  for _, m in ipairs(MAGIC) do
    if data:sub(1, #m[1]) == m[1] then return m[2] end
  end
  return nil
end

function f.file_image_type(path)
  local h = path and io.open(path, "rb")
  if not h then return nil end
  local head = h:read(8) or ""
  h:close()
  return f.image_type(head)
end

function f.read_json(path)
  local text = fs.read(path)
  local ok, value = pcall(json.decode, text or "")
  return text and ok and value or nil
end

return f

-- luagent.secrets: keeps secret values out of everything luagent prints,
-- returns as an error, or writes to a trace.
--
--   secrets.add(value, "OPENAI_API_KEY")   -- model keys are added when a model is made
--   secrets.redact("... sk-abc ...")        -- "... [redacted OPENAI_API_KEY] ..."
--   secrets.redact_value(t)                 -- a copy of a table with every string redacted
-- The API keys of the host environment are known from the start.
local secrets = {}

local known = {} -- secret value -> the name shown instead

secrets.ENV = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY",
               "GOOGLE_API_KEY", "GROQ_API_KEY", "MISTRAL_API_KEY", "HF_TOKEN", "GITHUB_TOKEN"}

-- Too short a value would redact ordinary words; keys are long.
local MIN_LENGTH = 8

function secrets.add(value, name)
  if type(value) == "string" and #value >= MIN_LENGTH then known[value] = name or "secret" end
end

for _, name in ipairs(secrets.ENV) do secrets.add(os.getenv(name), name) end

local function replace_plain(text, needle, replacement)
  local out, start = {}, 1
  while true do
    local i, j = text:find(needle, start, true)
    if not i then break end
    out[#out + 1] = text:sub(start, i - 1)
    out[#out + 1] = replacement
    start = j + 1
  end
  if start == 1 then return text end
  out[#out + 1] = text:sub(start)
  return table.concat(out)
end

function secrets.redact(text)
  if type(text) ~= "string" then return text end
  for value, name in pairs(known) do
    if text:find(value, 1, true) then text = replace_plain(text, value, "[redacted " .. name .. "]") end
  end
  return text
end

-- The name of the first known secret that `text` contains, or nil.
function secrets.find(text)
  if type(text) ~= "string" then return nil end
  for value, name in pairs(known) do
    if text:find(value, 1, true) then return name end
  end
  return nil
end

-- Field names whose values are credentials, whatever they hold: headers,
-- and settings such as model.api_key or a token.
local CREDENTIAL_HEADERS = {authorization = true, ["x-api-key"] = true, ["api-key"] = true,
                            ["proxy-authorization"] = true}

function secrets.is_credential_name(name)
  if type(name) ~= "string" then return false end
  local lower = name:lower()
  return CREDENTIAL_HEADERS[lower] or lower:find("api_?key") ~= nil or lower:find("token") ~= nil
    or lower:find("secret") ~= nil or lower:find("password") ~= nil
end

-- A deep copy with every string redacted and credential headers blanked;
-- metatables (json arrays) are kept.
function secrets.redact_value(value, seen)
  if type(value) == "string" then return secrets.redact(value) end
  if type(value) ~= "table" then return value end
  seen = seen or {}
  if seen[value] then return seen[value] end
  local copy = setmetatable({}, getmetatable(value))
  seen[value] = copy
  for k, v in pairs(value) do
    if secrets.is_credential_name(k) and type(v) == "string" then
      copy[k] = "[redacted]"
    else
      copy[k] = secrets.redact_value(v, seen)
    end
  end
  return copy
end

return secrets

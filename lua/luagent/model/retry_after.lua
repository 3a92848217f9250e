-- luagent.model.retry_after: how long a provider asked us to wait, from the
-- headers of its answer (Retry-After, retry-after-ms, OpenAI's
-- x-ratelimit-reset-* durations, Anthropic's anthropic-ratelimit-*-reset times).
--
--   retry_after.wait(headers [, now]) -> seconds | nil
--   retry_after.parse_time(text)      -> seconds since the epoch of an HTTP date or an RFC 3339 time | nil
local retry_after = {}

retry_after.parse_time = require("luagent.dates").parse

-- "1s", "6m0s", "20ms", "1h2m3.5s" -> seconds
local function parse_duration(text)
  if type(text) ~= "string" or text == "" then return nil end
  local total, rest = 0, text
  while rest ~= "" do
    local n, unit, tail = rest:match("^([%d%.]+)(%a+)(.*)$")
    if not n then return nil end
    local scale = ({h = 3600, m = 60, s = 1, ms = 0.001})[unit]
    if not scale then return nil end
    total, rest = total + tonumber(n) * scale, tail
  end
  return total
end

local RESET_DURATIONS = {"x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"}
local RESET_TIMES = {"anthropic-ratelimit-requests-reset", "anthropic-ratelimit-tokens-reset",
                     "anthropic-ratelimit-input-tokens-reset", "anthropic-ratelimit-output-tokens-reset"}

-- An explicit Retry-After wins; else the latest of the rate-limit resets.
function retry_after.wait(headers, now)
  headers = headers or {}
  now = now or require("luagent.sys").time()
  local ms = tonumber(headers["retry-after-ms"])
  if ms then return ms / 1000 end
  local ra = headers["retry-after"]
  if ra then
    local seconds = tonumber(ra)
    if seconds then return seconds end
    local at = retry_after.parse_time(ra)
    if at then return math.max(0, at - now) end
  end
  local wait
  for _, name in ipairs(RESET_DURATIONS) do
    local s = parse_duration(headers[name])
    if s then wait = math.max(wait or 0, s) end
  end
  for _, name in ipairs(RESET_TIMES) do
    local at = retry_after.parse_time(headers[name])
    if at then wait = math.max(wait or 0, at - now) end
  end
  return wait
end

return retry_after

-- luagent.prices: US dollars per million tokens, as the providers list them
-- (input, cached input read, output). A recipe's YAML can add or override
-- models (`prices: {my-model: {input: 1, cached: 0.1, output: 2}}`); a model
-- that is not here has cost nil, never a wrong number.
--
-- Names match exactly, or once a date or "-latest" is taken off the end
-- ("gpt-4o-2024-08-06" is priced as "gpt-4o", "claude-3-5-haiku-20241022"
-- as "claude-3-5-haiku"). Nothing else is guessed: "o3-pro" is not "o3".
local prices = {}

prices.table = {
  ["gpt-5"] = {input = 1.25, cached = 0.125, output = 10.00},
  ["gpt-5-mini"] = {input = 0.25, cached = 0.025, output = 2.00},
  ["gpt-5-nano"] = {input = 0.05, cached = 0.005, output = 0.40},
  ["gpt-4.1"] = {input = 2.00, cached = 0.50, output = 8.00},
  ["gpt-4.1-mini"] = {input = 0.40, cached = 0.10, output = 1.60},
  ["gpt-4.1-nano"] = {input = 0.10, cached = 0.025, output = 0.40},
  ["gpt-4o"] = {input = 2.50, cached = 1.25, output = 10.00},
  ["gpt-4o-mini"] = {input = 0.15, cached = 0.075, output = 0.60},
  ["o3"] = {input = 2.00, cached = 0.50, output = 8.00},
  ["o3-mini"] = {input = 1.10, cached = 0.55, output = 4.40},
  ["o4-mini"] = {input = 1.10, cached = 0.275, output = 4.40},
  ["claude-opus-4-1"] = {input = 15.00, cached = 1.50, cache_write = 18.75, output = 75.00},
  ["claude-opus-4"] = {input = 15.00, cached = 1.50, cache_write = 18.75, output = 75.00},
  ["claude-sonnet-4-5"] = {input = 3.00, cached = 0.30, cache_write = 3.75, output = 15.00},
  ["claude-sonnet-4"] = {input = 3.00, cached = 0.30, cache_write = 3.75, output = 15.00},
  ["claude-3-7-sonnet"] = {input = 3.00, cached = 0.30, cache_write = 3.75, output = 15.00},
  ["claude-3-5-sonnet"] = {input = 3.00, cached = 0.30, cache_write = 3.75, output = 15.00},
  ["claude-haiku-4-5"] = {input = 1.00, cached = 0.10, cache_write = 1.25, output = 5.00},
  ["claude-3-5-haiku"] = {input = 0.80, cached = 0.08, cache_write = 1.00, output = 4.00},
}

local SNAPSHOT_SUFFIXES = {"%-%d%d%d%d%-%d%d%-%d%d$", "%-%d%d%d%d%d%d%d%d$", "%-latest$"}

-- The price entry for a model name, from `overrides` first, then the table.
function prices.lookup(name, overrides)
  if type(name) ~= "string" then return nil end
  local candidates = {name}
  for _, suffix in ipairs(SNAPSHOT_SUFFIXES) do
    local base = name:gsub(suffix, "")
    if base ~= name then candidates[#candidates + 1] = base end
  end
  for _, candidate in ipairs(candidates) do
    for _, t in ipairs({overrides or {}, prices.table}) do
      if t[candidate] then return t[candidate] end
    end
  end
  return nil
end

-- Dollars for one call's usage, or nil when the model's price is unknown.
-- usage: input_tokens (all of them, cached included), cached_tokens,
-- cache_write_tokens, output_tokens.
function prices.cost(name, usage, overrides)
  local p = prices.lookup(name, overrides)
  if not p or not usage then return nil end
  local cached = usage.cached_tokens or 0
  local written = usage.cache_write_tokens or 0
  local fresh = (usage.input_tokens or 0) - cached - written
  local dollars = fresh * p.input + cached * (p.cached or p.input) + written * (p.cache_write or p.input)
                  + (usage.output_tokens or 0) * p.output
  return dollars / 1e6
end

return prices

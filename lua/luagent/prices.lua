-- luagent.prices: what a call costs, in US dollars, from the prices of the
-- model table (luagent.model.families: lua/luagent/model/models.yaml, dollars
-- per million tokens: input, output, cache_read, cache_write). A recipe's
-- YAML can add or override models (`prices: {my-model: {input: 1, cached:
-- 0.1, output: 2}}`, or the model table's own `models:`); a model whose
-- price is unknown has cost nil, never a wrong number.
--
-- Names match as the model table matches them: exactly, a family's prefix,
-- or once a date or "-latest" is taken off the end ("gpt-4o-2024-08-06" is
-- priced as "gpt-4o"). Nothing else is guessed: "o3-pro" is not "o3".
local families = require "luagent.model.families"

local prices = {}

-- A price entry as this module reads it: cached (= cache_read) and cache_write may be absent.
local function normalised(p)
  if type(p) ~= "table" or type(p.input) ~= "number" or type(p.output) ~= "number" then return nil end
  return {input = p.input, output = p.output, cached = p.cached or p.cache_read, cache_write = p.cache_write}
end

-- The price entry for a model name, from `overrides` first ({NAME = {input, cached, output, ...}}), then
-- the model table (whose own overrides, {NAME = {prices = {...}}}, come as `models`).
function prices.lookup(name, overrides, models)
  if type(name) ~= "string" then return nil end
  if overrides then
    for _, candidate in ipairs({name, (name:gsub("%-%d%d%d%d%-?%d%d%-?%d%d$", ""):gsub("%-latest$", ""))}) do
      if overrides[candidate] then return normalised(overrides[candidate]) end
    end
  end
  local entry = families.lookup(name, models)
  return entry and normalised(entry.prices) or nil
end

-- Dollars for one call's usage, or nil when the model's price is unknown.
-- usage: input_tokens (all of them, cached included), cached_tokens,
-- cache_write_tokens, output_tokens; reads and writes of the cache at their own prices.
function prices.cost(name, usage, overrides, models)
  local p = prices.lookup(name, overrides, models)
  if not p or not usage then return nil end
  local cached = usage.cached_tokens or 0
  local written = usage.cache_write_tokens or 0
  local fresh = (usage.input_tokens or 0) - cached - written
  local dollars = fresh * p.input + cached * (p.cached or p.input) + written * (p.cache_write or p.input)
                  + (usage.output_tokens or 0) * p.output
  return dollars / 1e6
end

return prices

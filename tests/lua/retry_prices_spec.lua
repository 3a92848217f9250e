-- Retry policies, prices and the parsing of rate-limit headers (no network).
local t = require "helper"
local retry, prices, model = luagent.retry, require "luagent.prices", luagent.model

local function failing(kinds)
  local calls = 0
  return function()
    calls = calls + 1
    local kind = kinds[calls]
    if kind then return nil, {kind = kind, message = kind} end
    return "ok:" .. calls
  end, function() return calls end
end

t.test("retries retryable errors, then succeeds", function()
  local fn, calls = failing({"server", "timeout", "network"})
  local value, err = retry.call(retry.exponential{base = 0.01}, fn)
  t.eq(err, nil); t.eq(value, "ok:4"); t.eq(calls(), 4)
end)

t.test("never retries auth or bad_request, even when asked to", function()
  for _, kind in ipairs({"auth", "bad_request"}) do
    local fn, calls = failing({kind, kind})
    local value, err = retry.call(retry.exponential{base = 0.01, on = {"auth", "bad_request", "server"}}, fn)
    t.eq(value, nil); t.eq(err.kind, kind); t.eq(calls(), 1); t.eq(err.attempts, 1)
  end
end)

t.test("by default, retries what the error catalogue marks retryable; an explicit list chooses", function()
  for kind, entry in pairs(luagent.errors.KINDS) do
    local fn, calls = failing({kind})
    local value = retry.call(retry.exponential{attempts = 2, base = 0.001}, fn)
    t.eq(value ~= nil, entry.retry, kind .. " retried")
    t.eq(calls(), entry.retry and 2 or 1, kind .. " attempts")
  end
  local fn, calls = failing({"connect"})
  local _, err = retry.call(retry.exponential{attempts = 2, base = 0.001, on = {"server"}}, fn)
  t.eq(err.kind, "connect"); t.eq(calls(), 1, "not in the explicit list")
  fn, calls = failing({"bad_response"})
  t.eq(retry.call(retry.exponential{attempts = 2, base = 0.001, on = {"bad_response"}}, fn), "ok:2")
  t.eq(calls(), 2, "chosen by the explicit list")
end)

t.test("gives up after the attempts, saying how many were made", function()
  local fn, calls = failing({"server", "server", "server", "server"})
  local _, err = retry.call(retry.exponential{attempts = 3, base = 0.01}, fn)
  t.eq(err.kind, "server"); t.eq(err.attempts, 3); t.eq(calls(), 3)
end)

t.test("backoff doubles up to max, with jitter between half and all", function()
  local p = retry.exponential{base = 1, max = 5, jitter = false}
  t.eq(p:delay(1), 1); t.eq(p:delay(2), 2); t.eq(p:delay(3), 4); t.eq(p:delay(4), 5)
  local j = retry.exponential{base = 1, max = 100}
  for _ = 1, 50 do
    local d = j:delay(3)
    t.ok(d >= 2 and d <= 4, "jittered delay " .. d)
  end
end)

t.test("a server's retry_after wins over the backoff, within a bound", function()
  local p = retry.exponential{base = 10, max = 30, max_retry_after = 60}
  t.eq(p:delay(1, {retry_after = 1.5}), 1.5)
  t.eq(p:delay(1, {retry_after = 500}), 60)
end)

t.test("Retry-After in seconds, HTTP dates, and rate-limit reset headers", function()
  local now = model.parse_time("Sun, 30 Nov 2026 12:00:00 GMT")
  t.eq(now, model.parse_time("2026-11-30T12:00:00Z"))
  t.eq(model.retry_after({["retry-after"] = "7"}, now), 7)
  t.eq(model.retry_after({["retry-after-ms"] = "250"}, now), 0.25)
  t.eq(model.retry_after({["retry-after"] = "Sun, 30 Nov 2026 12:00:03 GMT"}, now), 3)
  t.eq(model.retry_after({["x-ratelimit-reset-requests"] = "1m30s", ["x-ratelimit-reset-tokens"] = "20ms"}, now), 90)
  t.eq(model.retry_after({["anthropic-ratelimit-requests-reset"] = "2026-11-30T12:00:04.5Z"}, now), 4.5)
  t.eq(model.retry_after({["anthropic-ratelimit-tokens-reset"] = "2026-11-30T13:00:02+01:00"}, now), 2)
  t.eq(model.retry_after({}, now), nil)
end)

t.test("waiting out a backoff lets other tasks run", function()
  local other_done
  local waiter = luagent.spawn(function()
    local fn = failing({"rate_limit"})
    return retry.call(retry.exponential{base = 0.5, jitter = false}, fn)
  end)
  local other = luagent.spawn(function() other_done = luagent.now() end)
  local started = luagent.now()
  t.eq(waiter:wait(), "ok:2")
  other:wait()
  t.lt(other_done - started, 0.1, "the other task did not wait for the backoff")
end)

t.test("prices: exact names, dated snapshots, overrides, unknown models", function()
  local usage = {input_tokens = 1000000, cached_tokens = 200000, output_tokens = 100000}
  t.eq(prices.cost("gpt-4o-mini", usage), 0.8 * 0.15 + 0.2 * 0.075 + 0.1 * 0.60)
  t.eq(prices.cost("gpt-4o-2024-08-06", usage), prices.cost("gpt-4o", usage))
  t.eq(prices.cost("gpt-4o-mini-2024-07-18", usage), prices.cost("gpt-4o-mini", usage))
  t.eq(prices.cost("claude-3-5-haiku-20241022", {input_tokens = 1000000, output_tokens = 0}), 0.8)
  t.eq(prices.cost("my-local-llama", usage), nil)
  t.eq(prices.cost("o3-pro", usage), nil, "a different model is not priced as its prefix")
  t.eq(prices.cost("gpt-5-pro", usage), nil)
  t.eq(prices.cost("gpt-4o-latest", usage), prices.cost("gpt-4o", usage))
  t.eq(prices.cost("my-local-llama", usage, {["my-local-llama"] = {input = 0, output = 0}}), 0)
end)

return t.done()

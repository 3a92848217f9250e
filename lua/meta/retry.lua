---@meta luagent.retry
-- luagent.retry: retry policies as values, usable around any call that
-- returns `value` or `nil, err` (lua/luagent/retry.lua).
--
--   local patient = luagent.retry.exponential{attempts = 3, base = 2, on = {"rate_limit", "server"}}
--   local result, err = luagent.retry.call(patient, fn, ...)
--
-- The wait after attempt n is base * 2^(n-1), capped at `max`, with jitter
-- (between half and all of it); a server's retry_after is used instead, up to
-- max_retry_after. Waiting yields to other tasks. auth, bad_request and
-- cancelled are never retried. LuaLS annotations: definitions only.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---What retry.exponential takes (also a recipe's YAML `model.retry`).
---@class luagent.RetryOptions
---@field attempts? integer attempts in all, default 6
---@field base? number seconds before the second attempt, default 0.5
---@field max? number longest wait in seconds, default 30
---@field jitter? boolean default true
---@field on? luagent.ErrorKind[] kinds worth retrying, default {"rate_limit", "server", "timeout", "network"}
---@field max_retry_after? number longest server-asked wait honoured, default 120
---@field on_retry? fun(err: luagent.Error, attempt: integer, wait: number) called before each wait
---@field deadline? number seconds for all attempts and waits: no wait past it (the last error gets err.deadline)

---A retry policy.
---@class luagent.RetryPolicy
---@field attempts integer
---@field base number
---@field max number
---@field jitter boolean
---@field on table<string, true> the kinds it retries
---@field max_retry_after number
---@field on_retry fun(err: luagent.Error, attempt: integer, wait: number)?
---@field deadline number?
local Policy = {}

---Does this policy retry this error?
---@param err any
---@return boolean
function Policy:retryable(err) end

---Seconds to wait after failed attempt `attempt` (1-based).
---@param attempt integer
---@param err? luagent.Error
---@return number
function Policy:delay(attempt, err) end

---A copy with some fields changed: policy:with{attempts = 3}.
---@param changes luagent.RetryOptions
---@return luagent.RetryPolicy
function Policy:with(changes) end

---@class luagent.retry
local retry = {}

---One attempt, no retry.
---@type luagent.RetryPolicy
retry.none = {}

---What model calls use unless told otherwise: retry.exponential{}.
---@type luagent.RetryPolicy
retry.default = {}

---An exponential-backoff policy.
---@param opts? luagent.RetryOptions
---@return luagent.RetryPolicy
function retry.exponential(opts) end

---Calls fn(...) until it returns a value, the error is not retryable, or the
---attempts are spent; returns what the last call returned (err.attempts set).
---@param policy luagent.RetryPolicy?
---@param fn fun(...): ...
---@param ... any
---@return any ...
function retry.call(policy, fn, ...) end

return retry

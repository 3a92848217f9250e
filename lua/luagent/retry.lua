-- luagent.retry: retry policies as values, usable around any call that
-- returns `value` or `nil, err` with err.kind.
--
--   local policy = retry.exponential{attempts = 6, base = 0.5, max = 30, jitter = true}
--   local result, err = retry.call(policy, fn, ...)
--
-- Which errors are retried: by default every kind the error catalogue
-- (luagent.errors.KINDS) marks retryable — for model calls rate_limit,
-- server, timeout and network; `on = {"rate_limit", "bad_response"}` chooses
-- the kinds instead.
--
-- The wait after attempt n is base * 2^(n-1), capped at `max`, with "equal
-- jitter" (between half and all of it). When the error carries retry_after
-- (the server said when: Retry-After, rate-limit reset headers) that wait is
-- used instead, up to max_retry_after. Waiting yields to the event loop, so
-- other tasks run meanwhile. auth, bad_request and cancelled are never
-- retried, whatever `on` says. err.attempts tells how many were made.
-- `deadline` (seconds, default none) bounds the attempts and waits together:
-- a wait that would end past it is not started, and the last error comes
-- back with err.deadline set (the caller bounds each attempt by the time left).
local sched = require "luagent.sched"
local errors = require "luagent.errors"

local retry = {}

local NEVER = {auth = true, bad_request = true, cancelled = true}

local Policy = {}
Policy.__index = Policy

-- The kinds of an `on` list (an old name of a kind counts as its new one).
local function set_of(list)
  local set = {}
  for _, v in ipairs(list) do set[errors.canonical(v)] = true end
  return set
end

function retry.exponential(opts)
  opts = opts or {}
  local p = setmetatable({
    attempts = opts.attempts or 6,
    base = opts.base or 0.5,
    max = opts.max or 30,
    jitter = opts.jitter ~= false,
    on = opts.on and set_of(opts.on) or nil, -- nil: what the catalogue says
    max_retry_after = opts.max_retry_after or 120,
    on_retry = opts.on_retry,
    deadline = opts.deadline,
  }, Policy)
  assert(math.type(p.attempts) == "integer" and p.attempts >= 1, "retry: attempts must be an integer >= 1")
  assert(p.deadline == nil or (type(p.deadline) == "number" and p.deadline > 0), "retry: deadline must be seconds > 0")
  return p
end

-- One attempt, no retry.
retry.none = retry.exponential{attempts = 1}

-- What model calls use unless told otherwise.
retry.default = retry.exponential{}

function Policy:retryable(err)
  if type(err) ~= "table" or NEVER[err.kind] then return false end
  if self.on then return self.on[err.kind] == true end
  return errors.retryable(err)
end

-- Seconds to wait after failed attempt `attempt` (1-based).
function Policy:delay(attempt, err)
  if type(err) == "table" and type(err.retry_after) == "number" then
    return math.min(math.max(err.retry_after, 0), self.max_retry_after)
  end
  local wait = math.min(self.max, self.base * 2 ^ (attempt - 1))
  if self.jitter then wait = wait * (0.5 + 0.5 * math.random()) end
  return wait
end

-- A copy with some fields changed: policy:with{attempts = 3}.
function Policy:with(changes)
  local copy = setmetatable({}, Policy)
  for k, v in pairs(self) do copy[k] = v end
  for k, v in pairs(changes) do copy[k] = k == "on" and set_of(v) or v end
  return copy
end

function retry.call(policy, fn, ...)
  policy = policy or retry.default
  local attempt, started = 0, sched.now()
  while true do
    attempt = attempt + 1
    local results = table.pack(fn(...))
    local value, err = results[1], results[2]
    if value ~= nil or err == nil or attempt >= policy.attempts or not policy:retryable(err) then
      if value == nil and type(err) == "table" then err.attempts = attempt end
      return table.unpack(results, 1, results.n)
    end
    local wait = policy:delay(attempt, err)
    if policy.deadline and sched.now() - started + wait >= policy.deadline then
      err.attempts, err.deadline = attempt, policy.deadline
      return table.unpack(results, 1, results.n)
    end
    if policy.on_retry then policy.on_retry(err, attempt, wait) end
    sched.sleep(wait)
  end
end

return retry

-- Deadlines of model calls against tests/fake_provider.py (a test double of
-- the providers): the idle timeout (an answer that began and then went
-- quiet, plain or streamed), and the deadline of a call across its retries.
local t = require "helper"
local fake = require "fake_provider_client"
local model, retry = luagent.model, luagent.retry

local KEY = t.env("LUAGENT_TEST_SECRET")
local FAST = retry.exponential{attempts = 6, base = 0.01, max = 0.05}
local USER = {role = "user", content = "Find the anomaly."}

local function openai(queue, opts)
  local o = {model = "gpt-4o-mini", base_url = fake.base_url(queue, "openai"), api_key = KEY, retry = FAST}
  for k, v in pairs(opts or {}) do o[k] = v end
  return model.openai(o)
end

local function timed(fn)
  local started = luagent.now()
  local r, err = fn()
  return r, err, luagent.now() - started
end

t.test("a model's deadlines by default: 30 s idle, 600 s per attempt and for the whole call", function()
  local m = openai("defaults")
  t.eq(m.idle_timeout, 30); t.eq(m.timeout, 600); t.eq(m.deadline, 600)
end)

t.test("a plain answer that stops after its headers ends at the idle timeout, and is retried", function()
  local q = fake.queue("stall")
  fake.script(q, {{text = "never finished", stall = 20}, {text = "recovered"}})
  local r, err, took = timed(function() return openai(q, {idle_timeout = 0.5}):complete{messages = {USER}} end)
  t.eq(err, nil)
  t.eq(r.text, "recovered"); t.eq(r.attempts, 2)
  t.ok(took >= 0.45 and took < 2, ("the stalled attempt was given up after %.2f s"):format(took))
end)

t.test("a plain answer that takes longer than the idle timeout to begin is waited for", function()
  local q = fake.queue("slow")
  fake.script(q, {{text = "thought long", hang = 1.2}})
  local r, err = openai(q, {idle_timeout = 0.5, retry = retry.none}):complete{messages = {USER}}
  t.eq(err, nil)
  t.eq(r and r.text, "thought long")
end)

t.test("a stream that stalls before any text was shown is a timeout, and is retried", function()
  local q = fake.queue("sstall")
  -- a tool call's first half: no text for on_delta yet
  fake.script(q, {{tool_calls = {{name = "run_python", arguments = {code = "print(1)"}}}, chunk = 100, stall = 20},
                  {text = "recovered"}})
  local r, err, took = timed(function()
    return openai(q, {idle_timeout = 0.5}):complete{messages = {USER}, stream = true}
  end)
  t.eq(err, nil)
  t.eq(r.text, "recovered"); t.eq(r.attempts, 2)
  t.ok(took < 2, ("took %.2f s"):format(took))
end)

t.test("a stream that stalls after text was shown is not retried (it would be shown twice)", function()
  local q = fake.queue("sstall2")
  fake.script(q, {{text = "the first words of an answer", chunk = 2, stall = 20}, {text = "never asked for"}})
  local shown = {}
  local _, err = openai(q, {idle_timeout = 0.5}):complete{messages = {USER}, stream = true,
                                                          on_delta = function(d) shown[#shown + 1] = d end}
  t.eq(err.kind, "bad_response")
  t.match(err.message, "stalled: no data for 0.5 s after the response began")
  t.ok(#shown > 0, "part of the answer was shown")
  t.eq(#fake.requests(q), 1)
end)

t.test("the deadline ends a call whose answers keep stalling: kind timeout, saying how long it tried", function()
  local q = fake.queue("deadline")
  local steps = {}
  for i = 1, 6 do steps[i] = {text = "stalled", stall = 20} end
  fake.script(q, steps)
  local _, err, took = timed(function()
    return openai(q, {idle_timeout = 0.4, deadline = 1.5}):complete{messages = {USER}}
  end)
  t.eq(err.kind, "timeout")
  t.match(err.message, "gave up after %d attempts over 1%.%d s: the call's deadline is 1%.5 s")
  t.eq(err.cause.kind, "timeout")
  t.ok(took >= 1.4 and took < 2.2, ("ended after %.2f s"):format(took))
  t.ok(#fake.requests(q) >= 3 and #fake.requests(q) <= 4, #fake.requests(q) .. " attempts")
end)

t.test("the deadline caps an attempt that waits for an answer that never begins", function()
  local q = fake.queue("hang")
  fake.script(q, {{hang = 20, text = "too late"}})
  local _, err, took = timed(function()
    return openai(q, {deadline = 1, retry = retry.none}):complete{messages = {USER}}
  end)
  t.eq(err.kind, "timeout")
  t.match(err.message, "the call's deadline is 1 s")
  t.ok(took >= 0.9 and took < 1.6, ("ended after %.2f s"):format(took))
end)

t.test("a wait the server asks for that would pass the deadline is not waited out", function()
  local q = fake.queue("ra")
  fake.script(q, {{status = 429, retry_after = "5"}, {text = "too late"}})
  local _, err, took = timed(function()
    return openai(q, {retry = retry.default}):complete{messages = {USER}, deadline = 2}
  end)
  t.eq(err.kind, "timeout")
  t.match(err.message, "gave up after 1 attempt over")
  t.eq(err.cause.kind, "rate_limit")
  t.ok(took < 1, ("gave up after %.2f s"):format(took))
  t.eq(#fake.requests(q), 1)
end)

t.test("retry.call with a deadline: no wait past it; err.deadline says so", function()
  local calls = 0
  local policy = retry.exponential{attempts = 10, base = 0.3, jitter = false, deadline = 1}
  local _, err, took = timed(function()
    return retry.call(policy, function()
      calls = calls + 1
      return nil, luagent.errors.new("server", "down")
    end)
  end)
  -- waits 0.3 and 0.6 fit (0.9 s); the next (1.2 s) would pass the deadline
  t.eq(calls, 3); t.eq(err.deadline, 1); t.eq(err.attempts, 3)
  t.ok(took >= 0.85 and took < 1.2, ("took %.2f s"):format(took))
end)

return t.done()

-- Talks to tests/fake_provider.py (a test double of the model providers):
-- script a queue, read what it received. Each test uses its own queue.
local http, json, sys = luagent.http, luagent.json, luagent.sys

local fake = {}

local port = os.getenv("FAKE_PROVIDER_PORT")
fake.root = port and ("http://127.0.0.1:" .. port) or nil

local function need_root()
  if not fake.root then error("test setup: FAKE_PROVIDER_PORT is not set (run the specs through tests/run)", 3) end
end

-- A fresh queue name.
function fake.queue(label)
  return (label or "q") .. "-" .. sys.random_hex(4)
end

-- The base URL a model should use for this queue.
function fake.base_url(queue, provider)
  need_root()
  local base = fake.root .. "/q/" .. queue
  return provider == "anthropic" and base or base .. "/v1"
end

function fake.script(queue, steps)
  need_root()
  local res = assert(http.request{method = "POST", url = fake.root .. "/_script?queue=" .. queue,
    headers = {["content-type"] = "application/json"}, body = json.encode(json.array(steps))})
  assert(res.status == 200, "scripting the fake provider failed: " .. res.body)
end

function fake.requests(queue)
  need_root()
  local res = assert(http.request{url = fake.root .. "/_requests?queue=" .. queue})
  return assert(json.decode(res.body))
end

return fake

-- Many model calls at once, for the cache tests (the fake provider answers
-- each by echoing the request): prompts FROM..TO, four at a time.
--   luagent run tests/e2e/cache_burst.lua --cache --set base_url=URL --set from=1 --set to=30
local s = luagent.settings
local m = luagent.model.openai{model = "gpt-4o-mini", base_url = assert(s.base_url, "--set base_url=..."),
                               api_key = "sk-fake-key-for-tests", retry = luagent.retry.none, timeout = 30}
local prompts = {}
for i = s.from, s.to do prompts[#prompts + 1] = "prompt " .. i end
local answers, errs = luagent.map(prompts, function(p)
  return assert(m:complete{messages = {{role = "user", content = p}}}).text
end, {concurrency = 4})
assert(errs == nil or next(errs) == nil, "a call failed")
print(("ANSWERS %d %s"):format(#answers, luagent.sys.sha256(table.concat(answers, "\n"))))

-- luagent.model.fallback: several models as one; the next is tried when one
-- keeps failing (after its own retries). A bad_request or auth error of one
-- model does not stop the others: they may accept what it refused.
--
--   local m = model.fallback{model.openai{...}, model.anthropic{...}}
--   m:complete(req) -> result (result.fallbacks: how many failed first)
--                    | nil, err (the last model's kind; err.errors: every model's error)
local errors = require "luagent.errors"

local Fallback = {}
Fallback.__index = Fallback

function Fallback:__tostring()
  local names = {}
  for _, m in ipairs(self.models) do names[#names + 1] = tostring(m) end
  return "fallback of " .. table.concat(names, ", ")
end

function Fallback:complete(req)
  local failures = {}
  for _, m in ipairs(self.models) do
    local result, err = m:complete(req)
    if result then
      result.fallbacks = #failures
      return result
    end
    failures[#failures + 1] = errors.from(err)
  end
  local last = failures[#failures]
  local messages = {}
  for _, e in ipairs(failures) do messages[#messages + 1] = e.message end
  return errors.fail(last.kind, "every model failed: " .. table.concat(messages, "; "),
                     {errors = failures, status = last.status})
end

-- fallback{m1, m2, ...}: anything with :complete, in the order to try.
return function(models)
  if type(models) ~= "table" or #models == 0 then error("model.fallback{m1, m2, ...} needs models", 2) end
  local first = models[1]
  return setmetatable({models = models, provider = "fallback", model = first.model, totals = first.totals}, Fallback)
end

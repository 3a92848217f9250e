-- luagent.cache.why: what changed between two model requests, in words, for
-- the cache's "live from turn 7: instructions changed".
--
--   why.changed(before, now) -> "instructions changed" | "task changed" |
--       "tool result of turn N changed" | "the conversation changed at message K" |
--       "tools changed" | "model changed" | "<parameter> changed" (several joined
--       with ", "), or "the request changed" when no difference is found
--
-- before and now are provider wire bodies as the cache keeps them (Chat
-- Completions, Responses or Anthropic Messages): the instructions are a
-- system message, `system` or `instructions`; a tool result is a tool
-- message, a function_call_output item or a user message of tool_result
-- blocks; the turn of a tool result counts the assistant turns before it.
local json = require "luagent.json"

local why = {}

local SYSTEM_FIELDS = {system = true, instructions = true}
local LIST_FIELDS = {messages = true, input = true}
local NAMED = {model = "model", tools = "tools"}

local function same(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  return json.encode(a) == json.encode(b)
end

local function has_tool_result(content)
  if type(content) ~= "table" then return false end
  for _, block in ipairs(content) do
    if type(block) == "table" and block.type == "tool_result" then return true end
  end
  return false
end

-- "system" | "user" | "assistant" | "tool" for one item of a wire conversation.
local function kind_of(item)
  if type(item) ~= "table" then return "other" end
  local role = item.role
  if role == "system" or role == "developer" then return "system" end
  if role == "tool" or item.type == "function_call_output" then return "tool" end
  if role == "assistant" or item.type == "function_call" then return "assistant" end
  if role == "user" then return has_tool_result(item.content) and "tool" or "user" end
  return "other"
end

-- The first difference of two conversations, in words (nil when none).
local function conversation(before, now)
  local turns, seen_user, in_assistant = 0, false, false
  for i = 1, math.max(#before, #now) do
    local kind = kind_of(now[i] or before[i])
    if kind == "assistant" then
      if not in_assistant then turns = turns + 1 end
      in_assistant = true
    else
      in_assistant = false
    end
    local first_user = kind == "user" and not seen_user
    if kind == "user" then seen_user = true end
    if not same(before[i], now[i]) then
      if kind == "system" then return "instructions changed" end
      if first_user then return "task changed" end
      if kind == "tool" then return ("tool result of turn %d changed"):format(turns) end
      return ("the conversation changed at message %d"):format(i)
    end
  end
  return nil
end

function why.changed(before, now)
  if type(before) ~= "table" or type(now) ~= "table" then return "the request changed" end
  local reasons = {}
  for field in pairs(SYSTEM_FIELDS) do
    if not same(before[field], now[field]) then reasons[1] = "instructions changed" end
  end
  if not reasons[1] then
    for field in pairs(LIST_FIELDS) do
      local b, n = before[field], now[field]
      if type(b) == "table" and type(n) == "table" then
        reasons[1] = conversation(b, n)
      elseif not same(b, n) then
        reasons[1] = "the conversation changed"
      end
      if reasons[1] then break end
    end
  end
  local others = {}
  for field in pairs(before) do others[field] = true end
  for field in pairs(now) do others[field] = true end
  local names = {}
  for field in pairs(others) do
    if not SYSTEM_FIELDS[field] and not LIST_FIELDS[field] and not same(before[field], now[field]) then
      names[#names + 1] = NAMED[field] or tostring(field)
    end
  end
  table.sort(names, function(a, b)
    local ra, rb = a == "tools" and 1 or a == "model" and 2 or 3, b == "tools" and 1 or b == "model" and 2 or 3
    if ra ~= rb then return ra < rb end
    return a < b
  end)
  for _, name in ipairs(names) do reasons[#reasons + 1] = name .. " changed" end
  if #reasons == 0 then return "the request changed" end
  return table.concat(reasons, ", ")
end

return why

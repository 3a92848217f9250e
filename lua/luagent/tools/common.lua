-- luagent.tools.common: what the sandbox tools share (luagent.tools and
-- luagent.tools.editing, .shells, .unified_exec). A leaf: it requires no
-- tools module, since luagent.tools requires those.
--
--   common.fail(text)                     raises a tool error (kind "tool"): the
--                                         agent gives its text to the model to fix
--   common.checked(r, err) -> r           a sandbox call's result, or its error
--                                         raised for the agent (a cancellation keeps
--                                         its kind, so the agent lets it through)
--   common.schema(properties, required)   a tool's parameters: a JSON Schema object
local errors = require "luagent.errors"

local common = {}

function common.fail(text)
  error(errors.new("tool", text), 0)
end

function common.checked(r, err)
  if r == nil then error(errors.from(err), 0) end
  return r
end

function common.schema(properties, required)
  return {type = "object", properties = properties, required = required}
end

return common

-- luagent.model.content: the one message format every provider is given, and
-- the helpers providers share to read and write it.
--
--   {role = "system" | "user", content = "text" or {parts}}   parts: {type = "text", text},
--                                                              content.image(base64, "image/png")
--   {role = "assistant", content = "text" or nil, tool_calls = {{id, name, arguments}}}
--   {role = "tool", tool_call_id = id, content = "result text" or {parts}, is_error = bool}
--
--   content.text_of(c) / content.images_of(c)   the text (parts joined) / the image parts
--   content.join(pieces)                        pieces of text as one string, nil when empty
--   content.schema(s)                           a JSON Schema with its lists sent as [] when empty
--   content.tool_call(id, name, arguments_json) a decoded tool call (see below)
--   content.check_messages(messages)            raises naming the message that is malformed
local json = require "luagent.json"

local content = {}

-- An image part for a message's content.
function content.image(base64, media_type)
  return {type = "image", media_type = media_type or "image/png", data = base64}
end

-- An image part as a data: URL (the OpenAI APIs take images so).
function content.data_url(part)
  return ("data:%s;base64,%s"):format(part.media_type, part.data)
end

-- The text of a content value (a string, or parts whose text parts are joined).
function content.text_of(value)
  if type(value) == "string" then return value end
  if type(value) ~= "table" then return "" end
  local out = {}
  for _, part in ipairs(value) do
    if part.type == "text" then out[#out + 1] = part.text end
  end
  return table.concat(out, "\n")
end

-- The image parts of a content value.
function content.images_of(value)
  local out = {}
  if type(value) == "table" then
    for _, part in ipairs(value) do
      if part.type == "image" then out[#out + 1] = part end
    end
  end
  return out
end

-- Pieces of an answer's text as one string; nil when there is none.
function content.join(pieces)
  local text = table.concat(pieces)
  return text ~= "" and text or nil
end

-- JSON Schema keywords whose value is a list: an empty Lua table there must
-- be sent as [] (not {}), so a schema written in plain Lua stays valid.
local LIST_KEYWORDS = {required = true, enum = true, anyOf = true, oneOf = true, allOf = true,
                       prefixItems = true, examples = true}

function content.schema(schema)
  if type(schema) ~= "table" then return schema end
  local out = setmetatable({}, getmetatable(schema))
  for k, v in pairs(schema) do
    if LIST_KEYWORDS[k] and type(v) == "table" then
      out[k] = json.array({})
      for i, item in ipairs(v) do out[k][i] = content.schema(item) end
    elseif type(v) == "table" then
      out[k] = content.schema(v)
    else
      out[k] = v
    end
  end
  if out.type == "object" and out.properties == nil then out.properties = {} end
  return out
end

-- The tools a model on this wire is offered (a tool's `only`: the wires it
-- is offered on, by the adapters' names; none: every wire), each with the
-- wire's own form when it has one (tool.native[wire], e.g. Responses'
-- {type = "apply_patch"}): {tool, native | nil} pairs.
function content.offered(tools, wire)
  local out = {}
  for _, tool in ipairs(tools or {}) do
    if not tool.only or tool.only[wire] then
      out[#out + 1] = {tool = tool, native = type(tool.native) == "table" and tool.native[wire] or nil}
    end
  end
  return out
end

-- A tool's parameters as a provider sends them.
function content.parameters(tool)
  return content.schema(tool.parameters or {type = "object"})
end

-- Decodes a tool call's arguments; keeps the text and the reason when they
-- are not a JSON object (the agent shows the model its mistake).
local made_up_ids = 0

function content.tool_call(id, name, arguments_json)
  if type(id) ~= "string" or id == "" then
    -- some compatible servers send none; the transcript needs one to pair results
    made_up_ids = made_up_ids + 1
    id = ("call_luagent_%d"):format(made_up_ids)
  end
  local call = {id = id, name = name, arguments_json = arguments_json}
  local text = arguments_json
  if text == nil or text:match("^%s*$") then text = "{}" end
  local value, err = json.decode(text)
  if type(value) == "table" and not json.is_array(value) then
    call.arguments = value
  elseif value == nil then
    call.arguments_error = "the arguments are not valid JSON: " .. err.message
  else
    call.arguments_error = "the arguments must be a JSON object"
  end
  return call
end

local ROLES = {system = true, user = true, assistant = true, tool = true}

-- Misuse, so it raises, at the level of whoever called m:complete.
function content.check_messages(messages)
  if type(messages) ~= "table" or #messages == 0 then
    error("model:complete: messages must be a non-empty list", 3)
  end
  for i, msg in ipairs(messages) do
    if type(msg) ~= "table" or not ROLES[msg.role] then
      error(("model:complete: messages[%d] needs a role of system, user, assistant or tool"):format(i), 3)
    end
    if msg.role == "tool" and type(msg.tool_call_id) ~= "string" then
      error(("model:complete: messages[%d] (a tool result) needs tool_call_id"):format(i), 3)
    end
  end
end

return content

-- luagent.mcp.content: an MCP tool result (tools/call) as what a model reads.
--
--   content.output(result) -> text | {text = ..., images = {image parts}}
--
--   text                        its text
--   image (PNG, JPEG, GIF, WebP) an image part the model sees, and a line
--                               "[image 1: image/png, 1234 bytes]" where it was
--   image of another type, audio a line saying what it was, not shown
--   resource_link               "[resource link: name <uri> (mimeType): description]"
--   resource (embedded)         "[resource <uri> (mimeType)]" and its text, or
--                               for a blob its size
--   no content                  structuredContent as JSON, else "(no content)"
-- Parts are joined by newlines, in the server's order.
local json = require "luagent.json"
local message_content = require "luagent.model.content"

local content = {}

-- What the providers take as images.
local SHOWN = {["image/png"] = true, ["image/jpeg"] = true, ["image/gif"] = true, ["image/webp"] = true}

local function str(v)
  return type(v) == "string" and v or nil
end

-- Bytes of a base64 text.
local function decoded_size(b64)
  b64 = b64:gsub("%s", "")
  local pad = #b64:match("=*$")
  return #b64 * 3 // 4 - pad
end

local function mime(item)
  return str(item.mimeType) and (" (" .. item.mimeType .. ")") or ""
end

local function resource_text(r)
  if type(r) ~= "table" then return "[resource]" end
  local head = ("[resource %s%s]"):format(str(r.uri) or "?", mime(r))
  if str(r.text) then return head .. "\n" .. r.text end
  if str(r.blob) then return ("%s %d bytes of binary data, not shown"):format(head, decoded_size(r.blob)) end
  return head
end

-- One content item: its text, and its image part when it is one the model sees.
local function item_text(item, images)
  local kind = item.type
  if kind == "text" then return str(item.text) or "" end
  if kind == "image" and str(item.data) then
    local media = str(item.mimeType) or "image/png"
    if SHOWN[media] then
      images[#images + 1] = message_content.image(item.data, media)
      return ("[image %d: %s, %d bytes]"):format(#images, media, decoded_size(item.data))
    end
    return ("[an image of type %s, %d bytes: not shown, models take PNG, JPEG, GIF or WebP]"):format(media,
      decoded_size(item.data))
  end
  if kind == "audio" and str(item.data) then
    return ("[audio%s, %d bytes: not played to the model]"):format(mime(item), decoded_size(item.data))
  end
  if kind == "resource_link" then
    local desc = str(item.description) and (": " .. item.description) or ""
    return ("[resource link: %s <%s>%s%s]"):format(str(item.name) or str(item.title) or "", str(item.uri) or "?",
                                                  mime(item), desc)
  end
  if kind == "resource" then return resource_text(item.resource) end
  local ok, encoded = pcall(json.encode, item)
  return ok and encoded or tostring(kind)
end

function content.output(result)
  local lines, images = {}, {}
  for _, item in ipairs(type(result.content) == "table" and result.content or {}) do
    if type(item) == "table" then lines[#lines + 1] = item_text(item, images) end
  end
  if #lines == 0 and type(result.structuredContent) == "table" then
    lines[1] = json.encode(result.structuredContent)
  end
  local text = #lines > 0 and table.concat(lines, "\n") or "(the tool returned no content)"
  if #images == 0 then return text end
  return {text = text, images = images}
end

return content

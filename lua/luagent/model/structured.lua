-- luagent.model.structured: structured final answers — JSON that matches a
-- schema — around a model's complete, whatever the provider.
--
--   m:complete{messages, schema = {...JSON Schema...}}   -> result.value (the decoded answer)
--   m:complete{messages, output = {name, schema, strict, description}}   the same request, but the
--       answer is left for the caller to check (luagent.agent does, and feeds errors back)
--
--   structured.output(spec, where, tools) -> output   {name, schema, strict, description} from a
--       spec; raises one message naming the field (misuse: a schema that is not valid JSON Schema,
--       a name a tool already has, ...)
--   structured.complete(m, req, call) -> result | nil, err   what model clients' and scripted
--       models' m:complete is: checks the messages (the one place they are:
--       content.check_messages) and req.schema / req.output, then call(m, req), then reads the answer
--   structured.decode(output, text) -> value | nil, errors      the answer's JSON, checked
--   structured.feedback(output, errors, by_tool) -> text         what the model reads about them
--
-- How each provider is asked (in its module): Chat Completions response_format
-- {type = "json_schema", json_schema = {name, schema, strict}}; Responses
-- text = {format = {type = "json_schema", name, schema, strict}}; Anthropic a
-- tool named output.name whose input_schema is the schema (the provider's
-- `output_by_tool`): forced with tool_choice {type = "tool", name} when the
-- request offers no other tool or asks for it by name, else offered beside
-- the others. strict defaults to true when the schema allows it (schema.strict_ok).
--
-- After the call, a result carries: output_json (the answer's JSON text, when
-- this answer gives one), output_call (the output tool's call, taken out of
-- tool_calls), output_by_tool (the provider answers through a tool, so a text
-- answer is not the answer). With req.schema: value, or nil, err (kind
-- invalid_output, err.errors = {{path, message}}, err.result = the result).
local json = require "luagent.json"
local errors = require "luagent.errors"
local schema = require "luagent.schema"
local content = require "luagent.model.content"

local structured = {}

local DEFAULT_NAME = "answer"

-- The output of a spec {schema = ..., name, strict, description}. `prefix`
-- begins every message ("agent.new: output." gives "agent.new:
-- output.schema.type: ..."); tools: names the answer must not take; level:
-- where the error points, as for error() from here (default 2, the caller).
function structured.output(spec, prefix, tools, level)
  level = level or 2
  local function fail(message) error(prefix .. message, level + 1) end
  if type(spec) ~= "table" then fail("must be a table {schema = {...JSON Schema...}, name = \"...\"}") end
  local s = spec.schema
  if type(s) ~= "table" then fail("schema must be a JSON Schema table") end
  local valid, problem = pcall(schema.check, s, "schema") -- raised from a C frame: no position
  if not valid then fail(problem) end
  if s.type ~= "object" then
    fail("schema must describe an object (type = \"object\"), as the providers want: put a list or a single "
      .. "value in one of its properties")
  end
  local name = spec.name or DEFAULT_NAME
  if type(name) ~= "string" or not name:match("^[%w_%-]+$") or #name > 64 then
    fail("name must be 1 to 64 letters, digits, _ or -")
  end
  for _, tool in ipairs(tools or {}) do
    if tool.name == name then fail(("name %q is the name of a tool too: give the answer another name"):format(name)) end
  end
  if spec.strict ~= nil and type(spec.strict) ~= "boolean" then fail("strict must be true or false") end
  if spec.description ~= nil and type(spec.description) ~= "string" then fail("description must be a string") end
  local strict = spec.strict
  if strict == nil then strict = schema.strict_ok(s) end
  return {name = name, schema = s, strict = strict, description = spec.description, checked = true}
end

-- The schema as it is sent (lists as JSON arrays, even when empty).
function structured.wire_schema(output)
  return content.schema(output.schema)
end

-- What a provider's tool-based answer is described as.
function structured.tool_description(output)
  return output.description or "Give your final answer by calling this tool once you are done. "
    .. "Its input is the answer, as JSON matching its schema."
end

-- ---- reading the answer ----

-- result.output_json / output_call / output_by_tool for `output` (see the top).
local function read_answer(m, output, result)
  local by_tool = type(m.api) == "table" and m.api.output_by_tool or false
  result.output_by_tool = by_tool or nil
  if by_tool then
    local others = {}
    for _, call in ipairs(result.tool_calls or {}) do
      if call.name == output.name and not result.output_call then
        result.output_call, result.output_json = call, call.arguments_json
      else
        others[#others + 1] = call
      end
    end
    result.tool_calls = others
    if result.output_call and #others == 0 and result.finish_reason == "tool_calls" then result.finish_reason = "stop" end
  elseif #(result.tool_calls or {}) == 0 and not result.refusal then
    result.output_json = result.text or ""
  end
  return result
end

function structured.decode(output, text)
  if type(text) ~= "string" or text:match("^%s*$") then
    return nil, {{path = "$", message = "the answer is empty: it must be JSON matching the schema"}}
  end
  local value, err = json.decode(text)
  if value == nil and err then
    return nil, {{path = "$", message = "the answer is not valid JSON: " .. err.message:gsub("^invalid JSON: ", "")}}
  end
  local ok, errs = schema.validate(output.schema, value)
  if not ok then return nil, errs end
  return value
end

function structured.feedback(output, errs, by_tool)
  local how = by_tool and ("Call the tool %s again with a corrected answer."):format(output.name)
    or "Answer again with JSON that matches the schema."
  return ("Your answer does not match the schema %s:\n%s\n%s"):format(output.name, schema.describe(errs), how)
end

-- With req.schema: the value, or the failure.
local function checked(output, result)
  if result.refusal and not result.output_json then
    return errors.fail("invalid_output", "the model refused to answer: " .. result.refusal, {result = result,
      errors = {{path = "$", message = "the model refused: " .. result.refusal}}})
  end
  if not result.output_json then
    if #result.tool_calls > 0 then return result end -- it asked for tools: not an answer yet
    return errors.fail("invalid_output", "the model answered in text, not through the tool " .. output.name,
      {result = result, errors = {{path = "$", message = "no answer through the tool " .. output.name}}})
  end
  local value, errs = structured.decode(output, result.output_json)
  if value == nil then
    local where = {}
    for i, e in ipairs(errs) do where[i] = e.path .. ": " .. e.message end
    return errors.fail("invalid_output", "the answer does not match the schema: " .. table.concat(where, "; "),
      {result = result, errors = errs})
  end
  result.value = value
  return result
end

-- req with req.output made from req.schema (both checked); raises at the caller of m:complete.
local function prepare(req)
  if type(req) ~= "table" then return req end
  if req.schema == nil and (req.output == nil or (type(req.output) == "table" and req.output.checked)) then
    return req
  end
  local copy = {}
  for k, v in pairs(req) do copy[k] = v end
  if req.schema ~= nil then
    if req.output ~= nil then error("model:complete: give schema or output, not both", 3) end
    copy.output = structured.output({schema = req.schema, name = req.schema_name}, "model:complete: ", req.tools, 4)
    copy.check_output = true
  else
    copy.output = structured.output(req.output, "model:complete: output.", req.tools, 4)
  end
  return copy
end

function structured.complete(m, req, call)
  content.check_messages(type(req) == "table" and req.messages or nil)
  req = prepare(req)
  local result, err = call(m, req)
  if not result or type(req) ~= "table" or not req.output then return result, err end
  read_answer(m, req.output, result)
  if req.check_output then return checked(req.output, result) end
  return result
end

return structured

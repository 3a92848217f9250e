-- luagent.model.api: what a provider module is. luagent.model.openai
-- (Chat Completions and every compatible server), luagent.model.responses
-- (OpenAI Responses) and luagent.model.anthropic (Messages) each return one
-- table of this shape; model.new(provider, opts) makes a model of it, and
-- luagent.model.call drives one attempt through it. A provider turns the one
-- message format (luagent.model.content) into its wire format and back; it
-- never sends anything itself, and its failures are luagent.errors values.
--
-- Fields:
--   name              "openai": the model's `provider`, in events, traces and error messages
--   path              "/chat/completions": appended to the base URL
--   default_base_url  used when neither opts.base_url nor $base_url_env is set
--   default_model     used when opts.model is not given
--   key_env           "OPENAI_API_KEY": where the API key comes from (opts.api_key wins)
--   base_url_env      "OPENAI_BASE_URL" (optional)
--   output_by_tool    (optional) true when a structured answer comes as a call of a tool
--                     named after it (Anthropic), not as the answer's text
--
-- Functions (m is the model: m.model, m.api_key, m.temperature, m.max_tokens,
-- and whatever options(opts) added):
--   needs_key(base_url) -> bool        whether that server refuses calls without a key
--   options(opts) -> {field = value}   (optional) provider options copied onto the model
--   headers(m) -> {name = value}       authentication and versions; content-type is added by the caller
--   body(m, req) -> table              the request body (req: messages, tools, tool_choice,
--                                      temperature, max_tokens, stream, output: a structured
--                                      answer, see luagent.model.structured); m.extra and
--                                      req.extra are merged into it by the caller
--   parse(m, decoded) -> result | nil, err     a whole JSON answer (err: kind bad_response)
--   stream(m, req) -> assembler        for stream = true; made with luagent.model.stream,
--                                      it gets every server-sent event and gives the result:
--       assembler:event(ev) -> bool    ev = {event, data}; false stops the stream
--       assembler:finish(cut) -> result | nil, err
--                                      cut: nil (the stream ended), true (it ended inside an
--                                      event) or the transport's message (the connection broke)
--
-- result = {text, tool_calls = {content.tool_call(...)}, finish_reason ("stop" | "tool_calls" |
--           "length" | "content_filter"), usage = {input_tokens, output_tokens, cached_tokens,
--           ...}, model, id}; the caller adds provider, cost, duration and attempts.
local errors = require "luagent.errors"
local events = require "luagent.events"
local families = require "luagent.model.families"

local api = {}

local FIELDS = {name = "string", path = "string", default_base_url = "string", needs_key = "function",
                headers = "function", body = "function", parse = "function", stream = "function"}

-- Raises naming a field the provider table lacks (misuse, e.g. in a recipe's own provider).
function api.check(p, level)
  if type(p) ~= "table" then error("model.new: the provider must be a table (see luagent.model.api)", level + 1) end
  for field, kind in pairs(FIELDS) do
    if type(p[field]) ~= kind then
      error(("model.new: the provider %s has no %s %s (see luagent.model.api)"):format(
        tostring(p.name), kind, field), level + 1)
    end
  end
  return p
end

-- Says `message` once per model and `key` (a setting left out, an unknown
-- model): a model_note event (the live view and the trace show it).
function api.note_once(m, key, message)
  m.noted = m.noted or {}
  if m.noted[key] then return end
  m.noted[key] = true
  events.emit({type = "model_note", provider = m.provider, model = m.model, note = key,
                                  message = message})
end

-- The effective reasoning effort of an OpenAI request: the model's setting, else the table's default.
function api.effort(m)
  local r = type(m.reasoning) == "table" and m.reasoning or {}
  return r.effort or (m.family and m.family.default_effort)
end

-- Sampling parameters (temperature) the model refuses at this effort are
-- left out, with one note saying so.
function api.sampling(m, req, body, effort)
  local temperature = req.temperature or m.temperature
  if temperature == nil then return end
  if families.takes_sampling(m.family, effort) then
    body.temperature = temperature
    return
  end
  api.note_once(m, "temperature", ("temperature %s was left out: %s takes no sampling parameters %s")
    :format(tostring(temperature), m.model, m.family and m.family.sampling == "without_reasoning"
      and ("while it reasons (reasoning effort %s; only \"none\" takes them)"):format(tostring(effort))
      or "(a reasoning model)"))
end

-- The error of an answer that cannot be understood.
function api.unexpected(why)
  return nil, errors.new("bad_response", "unexpected response: " .. why)
end

return api

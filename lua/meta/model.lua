---@meta luagent.model
-- luagent.model: language models behind one interface (lua/luagent/model.lua
-- and lua/luagent/model/). LuaLS annotations: definitions only.
--
--   local m = model.openai{model = "gpt-4o-mini"}                 -- OPENAI_API_KEY
--   local m = model.openai{model = "llama3.1", base_url = "http://localhost:11434/v1"}
--   local m = model.from(cfg.model)                               -- from a recipe's YAML
--   local r, err = m:complete{messages = {{role = "user", content = "Hi"}}}
--
-- Calls are retried by a policy (retry.default: 6 attempts on rate limits,
-- server errors, timeouts and network faults, honouring Retry-After). Keys
-- come from the environment or `api_key` and are redacted everywhere.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---An image part of a message's content (model.image).
---@class luagent.ImagePart
---@field type "image"
---@field media_type string "image/png", "image/jpeg", ...
---@field data string base64

---@class luagent.TextPart
---@field type "text"
---@field text string

---@alias luagent.ContentPart luagent.TextPart|luagent.ImagePart
---@alias luagent.Content string|luagent.ContentPart[]

---A tool call the model asked for.
---@class luagent.ToolCall
---@field id string pairs the call with its result message
---@field name string the tool's name
---@field arguments table? the decoded arguments (a JSON object)
---@field arguments_json string? the arguments as the model sent them
---@field arguments_error string? why the arguments could not be used (not JSON, not an object)

---One message, in the one format every provider gets:
---{role = "system"|"user", content}, {role = "assistant", content, tool_calls},
---{role = "tool", tool_call_id, content, is_error}.
---@class luagent.Message
---@field role "system"|"user"|"assistant"|"tool"
---@field content luagent.Content? text, or parts (text and images)
---@field tool_calls luagent.ToolCall[]? an assistant's tool calls
---@field tool_call_id string? a tool result's call id
---@field name string? a tool result's tool name
---@field is_error boolean? a tool result that reports a failure
---@field provider_items table? an assistant turn's items the provider sent, passed back verbatim to the same provider

---A tool as the model sees it (luagent.tools makes the full tool tables).
---@class luagent.ToolSpec
---@field name string
---@field description string?
---@field parameters table? a JSON Schema (an object schema)

---What m:complete takes. With `schema`, the answer is JSON matching it,
---decoded into result.value; one that does not match is nil, err (kind
---invalid_output, err.errors = {{path, message}}, err.result). A schema that is
---not valid JSON Schema raises before any call, naming the field.
---@class luagent.CompleteRequest
---@field messages luagent.Message[] required, non-empty
---@field tools? luagent.ToolSpec[]
---@field tool_choice? "auto"|"none"|"required"|{name: string}
---@field temperature? number
---@field max_tokens? integer
---@field stream? boolean stream the answer (same result; on_delta sees the text as it comes)
---@field on_delta? fun(text: string) called with each piece of streamed text
---@field retry? luagent.RetryPolicy this call's retry policy (default: the model's)
---@field timeout? number seconds for each attempt
---@field deadline? number seconds for the whole call, attempts and waits together (default: the model's)
---@field extra? table fields added to the provider's request body as they are
---@field turn? integer the agent's turn making this call (for the cache's "live from turn N")
---@field agent? string the agent's name making this call
---@field schema? table a JSON Schema of an object: result.value, or nil, err (kind invalid_output)
---@field schema_name? string the structured answer's name (default "answer")
---@field output? luagent.OutputSpec asks as `schema` does; the caller checks the answer (the agent does)

---Tokens a call used.
---@class luagent.Usage
---@field input_tokens integer tokens read (cached ones included)
---@field output_tokens integer tokens written
---@field cached_tokens integer input tokens served from the provider's cache
---@field cache_write_tokens integer? input tokens written to the provider's cache
---@field reasoning_tokens integer? output tokens spent reasoning (OpenAI)
---@field estimated boolean? counted by estimate (the scripted model: 4 characters a token)

---What m:complete returns.
---@class luagent.CompleteResult
---@field text string? the answer's text (nil when it only calls tools)
---@field tool_calls luagent.ToolCall[] the tools it asks for (empty when none)
---@field finish_reason "stop"|"tool_calls"|"length"|"content_filter"|"pause"|"context_window"|string pause: the
---provider paused a long turn (send it back to continue); context_window: the conversation no longer fits
---@field commentary string? Responses: the text of messages marked as commentary (a preamble), not part of `text`
---@field provider_items table? what the provider needs back verbatim in the next request (reasoning items,
---thinking blocks with their signatures, message phases): kept on the assistant message of the transcript
---@field usage luagent.Usage
---@field cost number? US dollars; nil when the price is unknown (never a wrong number)
---@field provider string
---@field model string the model that answered
---@field attempts integer how many attempts the retry policy made
---@field duration number seconds
---@field fallbacks integer? how many models failed before this one (model.fallback)
---@field raw any the provider's decoded answer (nil for an answer from the cache)
---@field cached boolean? true: answered from the run's model-call cache (cost 0, attempts 0)
---@field saved_cost number? for a cached answer: what it cost when it was live (nil: unknown)
---@field value table? with `schema`: the decoded answer, matching the schema
---@field output_json string? with `schema` or `output`: the answer's JSON text
---@field output_call luagent.ToolCall? with `output`, Anthropic: the answer tool's call (not in tool_calls)
---@field output_by_tool boolean? with `output`: the provider answers through a tool, so plain text is not the answer
---@field refusal string? the model's refusal (OpenAI), instead of an answer

---Running totals of a model's calls.
---@class luagent.ModelTotals
---@field calls integer
---@field input_tokens integer
---@field output_tokens integer
---@field cached_tokens integer
---@field cost number US dollars of the calls whose price is known
---@field cost_unknown boolean? some call's price was unknown

---Options of model.openai, model.openai_responses and model.anthropic. A key not declared
---here is refused as a typo (kind config, with a did-you-mean); a provider's own field goes in `extra`.
---@class luagent.ModelOptions
---@field model? string the model name (the provider's default when left out)
---@field api_key? string default: OPENAI_API_KEY / ANTHROPIC_API_KEY
---@field base_url? string default: OPENAI_BASE_URL or the provider's; a local server needs no key
---@field timeout? number seconds for each attempt of a call, default 600
---@field connect_timeout? number seconds, default 15
---@field idle_timeout? number seconds without a byte once the answer began (streamed or not), default 30
---@field deadline? number seconds for a whole call, its retries and waits included, default 600; then kind timeout
---@field retry? luagent.RetryPolicy default luagent.retry.default
---@field headers? table<string, string> extra HTTP headers
---@field extra? table fields added to every request body as they are (a provider's own, e.g. {seed = 7}): the
---escape for what is not an option here, as any other key is refused as a typo
---@field prices? table<string, {input: number, cached?: number, cache_write?: number, output: number}> dollars per million tokens
---@field temperature? number
---@field max_tokens? integer
---@field max_tokens_field? string openai: "max_completion_tokens" for reasoning models
---@field reasoning? {effort?: string, summary?: string, budget_tokens?: integer} a reasoning model's setting:
---openai_responses sends `reasoning` (effort, summary) and asks for the encrypted reasoning to pass back;
---anthropic: budget_tokens turns extended thinking on (and leaves temperature out, as the API requires)
---@field stream_usage? boolean openai: false for servers that reject stream_options
---@field models? table<string, table> entries over the model table's (models.yaml), by model or family name,
---e.g. {["gpt-5.4"] = {context_window = 400000, prices = {input = 1.5, output = 12}}}
---@field prompt_cache? boolean anthropic: false places no breakpoints for the provider's prompt cache

---What model.from takes (a recipe's YAML `model:` section). A key it does not
---declare is a typo: nil, err naming the setting ("model.temprature: not a
---setting of the model (did you mean 'temperature'?)").
---@class luagent.ModelConfig: luagent.ModelOptions
---@field provider? "auto"|"openai"|"openai_responses"|"anthropic" "auto" (default): from the environment
---@field retry? luagent.RetryPolicy|luagent.RetryOptions

---A model event (model.on_event): model_request, model_response, model_retry, model_error.
---@class luagent.ModelEvent
---@field type string
---@field provider string
---@field model string
---@field [string] any

---A provider's API module (luagent.model.openai & co.: its wire format), what model.new needs;
---a model keeps it as m.api, beside m.provider (its name).
---@class luagent.model.Api
---@field name string
---@field path string the endpoint, e.g. "/chat/completions"
---@field key_env string? the environment variable with the key
---@field base_url_env string?
---@field default_base_url string
---@field default_model string?
---@field needs_key fun(base_url: string): boolean
---@field options? fun(opts: table): table
---@field headers fun(m: luagent.Model): table<string, string>
---@field body fun(m: luagent.Model, req: luagent.CompleteRequest): table
---@field parse fun(m: luagent.Model, decoded: table): luagent.CompleteResult?, string?
---@field stream fun(m: luagent.Model, req: luagent.CompleteRequest): luagent.model.StreamAssembler
---@field output_by_tool? boolean a structured answer (req.output) comes as a call of a tool named after it (Anthropic)

---Turns a provider's stream of server-sent events into a result.
---@class luagent.model.StreamAssembler
---@field event fun(self, ev: luagent.SseEvent): boolean?
---@field finish fun(self, cut_inside_event: boolean): luagent.CompleteResult?, table?

---@class luagent.model
local model = {}

---Every provider request goes through the calling run's transport, a
---function(request) -> response | nil, err (luagent.http.request's shape): HTTP
---unless --record or --replay chose a recorder or a replayer. This puts fn in
---its place for the calling run (tests, benchmarks, a recipe that answers
---some requests itself) and returns the one it replaces.
---@param fn fun(request: luagent.HttpRequest): luagent.HttpResponse?, luagent.Error?
---@return fun(request: luagent.HttpRequest): luagent.HttpResponse?, luagent.Error? before
function model.use_transport(fn) end

---OpenAI Chat Completions, and every OpenAI-compatible server (Ollama, vLLM,
---llama.cpp server, LM Studio, OpenRouter: pass base_url). Raises when the
---official API has no key.
---@param opts luagent.ModelOptions
---@return luagent.Model
function model.openai(opts) end

---The OpenAI Responses API.
---@param opts luagent.ModelOptions
---@return luagent.Model
function model.openai_responses(opts) end

---The Anthropic Messages API (ANTHROPIC_API_KEY).
---@param opts luagent.ModelOptions
---@return luagent.Model
function model.anthropic(opts) end

---A model from settings; provider "auto" picks what the environment points at.
---Nothing configured, or a wrong setting: nil, err (kind "config").
---@param cfg? luagent.ModelConfig
---@return luagent.Model? m
---@return luagent.Error? err
function model.from(cfg) end

---What a recipe runs on: the model the settings point at or, when none is
---configured (provider "auto" with nothing set, or "scripted"), the recipe's
---scripted driver from make_scripted() — announced plainly on stdout. A
---provider that is named but unusable raises its error.
---@param cfg? luagent.ModelConfig
---@param make_scripted fun(): luagent.Model
---@return luagent.Model m
---@return boolean scripted
function model.from_or_scripted(cfg, make_scripted) end

---Tries the next model when one keeps failing (after its own retries).
---@param models luagent.Model[]
---@return luagent.FallbackModel
function model.fallback(models) end

---A model that answers from a script, for tests and demos without a provider:
---`model.scripted{replies = {reply, ...}}` or `model.scripted(function(request, n) return reply end)`.
---A reply is {text, tool_calls = {{name, arguments}}} or {error = {kind, message}}.
---@param spec luagent.ScriptedSpec|table[]|fun(request: luagent.CompleteRequest, n: integer): table
---@param opts? luagent.ScriptedOptions
---@return luagent.ScriptedModel
function model.scripted(spec, opts) end

---The options of model.scripted (its second argument).
---@class luagent.ScriptedOptions
---@field name? string the model's name (default "scripted")

---model.scripted's script as a table: the replies in order, listed or under `replies`.
---@class luagent.ScriptedSpec
---@field replies? table[] the replies, in order (else the table's own list)
---@field name? string the model's name (default "scripted")

---Makes a model for a provider's API module (luagent.model.openai, .responses,
---.anthropic, or one of a recipe's own of that shape).
---@param api luagent.model.Api
---@param opts luagent.ModelOptions
---@return luagent.Model
function model.new(api, opts) end

---Which provider the environment points at ("openai", "anthropic") or nil;
---when replaying, the one the recording was made with.
---@return string?
function model.detect() end

---An image part for a message's content.
---@param base64 string
---@param media_type? string default "image/png"
---@return luagent.ImagePart
function model.image(base64, media_type) end

---The text of a content value (text parts joined by newlines).
---@param content luagent.Content?
---@return string
function model.text_of(content) end

---The image parts of a content value.
---@param content luagent.Content?
---@return luagent.ImagePart[]
function model.images_of(content) end

---A JSON Schema written in plain Lua, made safe to send: list keywords
---(required, enum, anyOf, ...) encode as arrays even when empty.
---@param schema table
---@return table
function model.schema(schema) end

---A tool call from its id, name and JSON arguments (decoded; the reason is
---kept in arguments_error when they are not a JSON object).
---@param id string?
---@param name string
---@param arguments_json string?
---@return luagent.ToolCall
function model.tool_call(id, name, arguments_json) end

---An error value of a model (provider and model in the message, secrets redacted).
---@param m luagent.Model
---@param kind luagent.ErrorKind
---@param message string
---@param fields? table
---@return luagent.Error
function model.error(m, kind, message, fields) end

---Seconds the provider asked to wait, from its headers (Retry-After,
---retry-after-ms, rate-limit reset headers), or nil.
---@param headers table<string, string>?
---@param now? number seconds since the epoch
---@return number?
function model.retry_after(headers, now) end

---Seconds since the epoch of an HTTP date or an RFC 3339 time, or nil.
---@param text string
---@return number?
function model.parse_time(text) end

---A stream event's JSON data, or nil and the failure that ends the stream.
---@param ev {data: string}
---@return table? data
---@return {kind: string, message: string}? err
function model.decode_event(ev) end

---Calls fn(event) for model events only; returns a handle for model.off_event.
---@param fn fun(ev: luagent.ModelEvent)
---@return function subscription
function model.on_event(fn) end

---Stops a model.on_event subscription.
---@param subscription function
function model.off_event(subscription) end

---A model (model.openai, model.openai_responses, model.anthropic, model.from).
---@class luagent.Model
---@field provider string "openai", "openai_responses", "anthropic": the name of its API module
---@field api luagent.model.Api the API module itself (how requests are written and answers read)
---@field model string the model name
---@field base_url string
---@field timeout number
---@field idle_timeout number
---@field deadline number
---@field retry luagent.RetryPolicy
---@field totals luagent.ModelTotals
local Model = {}

---Calls the model (retrying by its policy). Misuse (no messages) raises.
---@param req luagent.CompleteRequest
---@return luagent.CompleteResult? result
---@return luagent.Error? err kind: auth, rate_limit, quota, server, timeout, network, bad_request, bad_response, ...
function Model:complete(req) end

---Several models tried in order (model.fallback).
---@class luagent.FallbackModel
---@field provider "fallback"
---@field model string the first model's name
---@field models luagent.Model[]
---@field totals luagent.ModelTotals the first model's totals
local Fallback = {}

---The first model's answer that succeeds; when all fail, an error whose
---`errors` lists each model's.
---@param req luagent.CompleteRequest
---@return luagent.CompleteResult? result
---@return luagent.Error? err
function Fallback:complete(req) end

---A scripted model (model.scripted).
---@class luagent.ScriptedModel
---@field provider "scripted"
---@field model string
---@field n integer replies given so far
---@field totals luagent.ModelTotals
local Scripted = {}

---The script's next reply as a result (usage estimated, cost 0).
---@param req luagent.CompleteRequest
---@return luagent.CompleteResult? result
---@return luagent.Error? err
function Scripted:complete(req) end

return model

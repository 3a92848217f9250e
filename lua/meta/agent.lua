---@meta luagent.agent
-- luagent.agent: the write-run-observe loop (lua/luagent/agent.lua).
-- LuaLS annotations: definitions only.
--
--   local analyst = agent.new{name = "Analyst", instructions = "...",
--     model = model.from(cfg.model), tools = tools.standard(box), max_turns = 20,
--     budget = {tokens = 300000, cost = 2.00}, outputs = {"output/report.md"}}
--   local result = analyst:run("Find the anomaly in input/data.csv")
--
-- The loop calls the model, runs the tool calls it asks for (several at once
-- when it asks for several), gives the results back, and stops at a final
-- answer, max_turns or the budget: a limit is a normal outcome with the
-- transcript kept. Unknown tools, arguments that are not valid JSON and tools
-- that raise all become results the model reads and can fix.
--
--   agent.new{..., output = {schema = REPORT, name = "report"}}   -- result.value: the answer, checked
--   agent.new{..., approve = "ask"}          -- a person approves each tool call on the terminal
--   agent.new{..., approve = function(call, ctx) return call.name ~= "run_shell", "no shell" end}
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---@class luagent.Budget
---@field tokens? integer input + output tokens over all turns
---@field cost? number US dollars (only counted while every price is known)

---An event of the loop (on_step): agent_start, agent_turn, approval,
---tool_call, tool_result, agent_reminder, agent_invalid_output, agent_limit,
---agent_end. An approval has tool, arguments, decision ("approved" |
---"refused" | "changed" | "error"), by ("function" | "person" | "--yes" |
---"always" | "replay" | "no terminal"), reason, changed_arguments.
---@class luagent.AgentStep
---@field type string
---@field agent string the agent's name
---@field run string the run's id
---@field turn integer?
---@field [string] any

---A structured final answer: JSON matching `schema`, asked for in each
---provider's own way (Chat Completions response_format, Responses
---text.format, Anthropic a tool named `name`) and checked by luagent. A schema
---that is not valid JSON Schema (of the subset in luagent.schema) raises in
---agent.new, naming the field.
---@class luagent.OutputSpec
---@field schema table a JSON Schema of an object (type = "object")
---@field name? string letters, digits, _ or - (at most 64); default "answer"
---@field description? string what the answer is, for the model
---@field strict? boolean OpenAI's strict mode; default: true when the schema allows it (luagent.schema.strict_ok)

---A tool call an approve function decides on (its arguments are a copy).
---@class luagent.ApprovalCall
---@field id string
---@field name string the tool's name
---@field arguments table the arguments the model sent

---@class luagent.ApprovalContext
---@field agent luagent.Agent
---@field tool luagent.Tool
---@field turn integer
---@field run table the agent's run (internal)

---Decides on a tool call: true (run it), false and a reason (the model reads
---"Not run: the call was refused: REASON"), or a table of changed arguments
---(the call runs with them; its result says so). An approve function that
---raises stops the run with one error naming the agent and the tool.
---@alias luagent.ApproveFunction fun(call: luagent.ApprovalCall, ctx: luagent.ApprovalContext): (boolean|table), string?

---approve = "ask": a person answers on the terminal (/dev/tty): [y]es / [n]o
---REASON / [e]dit in $EDITOR / [a]lways for this tool; without a terminal the
---call is refused unless `luagent run --yes`. approve (a function or "ask")
---alone asks about every call; once some tools say needs_approval, only theirs
---ask; a tool with needs_approval in an agent without approve asks the person.
---@alias luagent.ApproveMode "ask"

---What agent.new takes.
---@class luagent.AgentSpec
---@field model luagent.Model|luagent.FallbackModel|luagent.ScriptedModel anything with :complete
---@field name? string shown in the trace, default "agent"
---@field instructions? string the system prompt
---@field tools? luagent.Tool[] plain tool tables (see luagent.tools)
---@field max_turns? integer model calls at most, default 20
---@field budget? luagent.Budget
---@field outputs? string[] workspace files (globs) that must exist before the agent may finish
---@field skills? string[] folders with a SKILL.md (front matter: name, description), staged read-only
---  under /skills in the sandbox of its tools; named in its instructions, read when needed (luagent help tools)
---@field max_tool_output? integer longer tool results are cut to head and tail (default 16000 characters)
---@field on_step? fun(step: luagent.AgentStep) every model turn and tool call
---@field on_limit? fun(result: luagent.AgentResult): string? turns a max_turns or budget stop into a final answer
---@field temperature? number
---@field max_tokens? integer per model call
---@field stream? boolean stream the model's answers
---@field on_delta? fun(text: string) streamed text
---@field retry? luagent.RetryPolicy per model call (default: the model's)
---@field workspace? luagent.Box where long outputs are kept and outputs are checked (default: the first sandbox tool's box)
---@field output? luagent.OutputSpec a structured final answer (result.value), fed back while invalid
---@field approve? luagent.ApproveFunction|"ask" which tool calls may run (see luagent.ApproveMode)
---@field prompt_cache? boolean breakpoints for the provider's prompt cache (Anthropic; default true)
---@field context_window? integer tokens the model holds (default: the model table's)
---@field compaction? false|luagent.CompactionOptions when a run nears the context window (default on)

---What agent:run returns.
---@class luagent.AgentResult
---@field output string? the final answer (or the last text before a limit); with `output`, the answer's JSON text
---@field value table? with `output`: the decoded answer, matching its schema
---@field output_errors luagent.SchemaError[]? with `output`: what was wrong with the last answer, when it never matched
---@field turns integer model calls made
---@field usage luagent.Usage tokens over all turns
---@field cost number? US dollars; nil when some price is unknown
---@field transcript luagent.Message[] every message, for a later run{messages = ...}
---invalid_output: turns ran out on an answer that did not match its schema;
---refused: the model refused (OpenAI), `output` is the refusal; length: the answer was cut at the output
---token limit; context_window: the conversation outgrew the model's context window (neither is ever
---taken as a final answer).
---@field stopped_by "answer"|"max_turns"|"budget"|"error"|"invalid_output"|"refused"|"length"|"context_window"
---@field error luagent.Error? the model's error when stopped_by is "error"
---@field missing_outputs string[]? declared outputs that never appeared
---@field duration number seconds
---@field compactions integer how many times the transcript was compacted

---@class luagent.agent
local agent = {}

---Makes an agent (a plain value: the same agent can run twice at once).
---Wrong options raise.
---@param spec luagent.AgentSpec
---@return luagent.Agent
function agent.new(spec) end

---An agent made by agent.new; its fields are the spec's, with defaults.
---@class luagent.Agent: luagent.AgentSpec
---@field name string
---@field tools luagent.Tool[]
---@field max_turns integer
---@field outputs string[]
local Agent = {}

---Runs the loop on a task until a final answer, max_turns or the budget.
---`opts.messages` continues an earlier transcript.
---@param task string?
---@param opts? {messages?: luagent.Message[]}
---@return luagent.AgentResult
function Agent:run(task, opts) end

---How a long run is kept inside its model's context window (luagent.compaction).
---@class luagent.CompactionOptions
---@field threshold? number compact when the last prompt reached this share of the window (default 0.8)
---@field keep_turns? integer the last turns kept whole (default 4)
---@field prompt? string what the summary call asks (default: the model table's compaction.prompt)
---@field policy? fun(messages: luagent.Message[], info: table): luagent.Message[]? replaces the default policy
---@field native? boolean use the provider's own compaction where there is one (Responses; default true)

return agent

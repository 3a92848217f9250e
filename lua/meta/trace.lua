---@meta luagent.trace
-- luagent.trace: a run's record (lua/luagent/trace.lua). Every recipe run
-- that calls a model, an agent or a sandbox writes runs/<run-id>/trace.jsonl
-- (one JSON line per event, secrets redacted) and shows one line per step.
--
--   luagent run recipe.lua --record rec.jsonl   saves the model exchanges
--   luagent run recipe.lua --replay rec.jsonl   answers every model call from them
--
-- LuaLS annotations: definitions only.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---One event of a run (see luagent.events): model_request, model_response,
---agent_turn, tool_call, tool_result, sandbox_exec, run_start, run_end, ...
---@class luagent.Event
---@field type string
---@field time number? wall-clock seconds
---@field t number? seconds since the run started (in the trace file)
---@field [string] any

---@class luagent.TraceStartOptions
---@field quiet? boolean no terminal lines
---@field json? boolean the events as JSON lines on stdout
---@field record? string save the model exchanges to this file
---@field replay? string answer model calls from this recording
---@field settings? table the run's --set settings, for run_start

---@class luagent.trace
local trace = {}

---This run's id, e.g. "20260130-120000-energy_anomaly-3f2a".
---@return string
function trace.run_id() end

---This run's folder, or a folder inside it; made on first use.
---@param sub? string
---@return string
function trace.run_dir(sub) end

---Where run folders go: $LUAGENT_RUNS_DIR, else "runs".
---@return string
function trace.runs_root() end

---The trace file's path, once the trace has started.
---@return string?
function trace.path() end

---Starts this run's trace: the file, the terminal view, record or replay.
---luagent calls it; safe to call again.
---@param opts? luagent.TraceStartOptions
function trace.start(opts) end

---An event as it may be shown or written: long data cut, secrets redacted.
---@param ev luagent.Event
---@return luagent.Event
function trace.safe(ev) end

---trace.safe(ev) as one JSON line (without the newline).
---@param ev luagent.Event
---@return string
function trace.encode(ev) end

---A one-line description of an event for people, or nil for quiet events.
---@param ev luagent.Event
---@return string?
function trace.describe(ev) end

---A transport (see model.transport) that records every exchange of `inner` to `path`.
---@param path string
---@param inner fun(request: luagent.HttpRequest): luagent.HttpResponse?, luagent.Error?
---@return fun(request: luagent.HttpRequest): luagent.HttpResponse?, luagent.Error?
function trace.recorder(path, inner) end

---A transport that answers from a recording; a request the recording does
---not have raises a "replay_mismatch" error with a diff.
---@param path string
---@return fun(request: luagent.HttpRequest): luagent.HttpResponse?, luagent.Error?
function trace.replayer(path) end

---The places where two JSON values differ, as "path: recorded X, now Y" lines
---(at most 8).
---@param recorded any
---@param now any
---@param path? string
---@param out? string[]
---@return string[]
function trace.diff(recorded, now, path, out) end

---The provider a recording was made with ("openai", ...), or nil.
---@param path string
---@return string?
function trace.recorded_provider(path) end

---What a replayed request is compared by (tool timings blanked).
---@param body any
---@return string
function trace.replay_key(body) end

return trace

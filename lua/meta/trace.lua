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
---agent_turn, tool_call, tool_result, sandbox_exec, sandbox_file (one file in or out: op "put" or
---"get", path, bytes, duration, via "supervisor" or "archive"), run_start, run_end, ...
---@class luagent.Event
---@field type string
---@field time number? wall-clock seconds
---@field t number? seconds since the run started (in the trace file)
---@field [string] any

---@class luagent.TraceOpenOptions
---@field t0? number loop.now() at the run's start
---@field quiet? boolean no terminal lines
---@field json? boolean the events as JSON lines on stdout
---@field record? string save the model exchanges to this file
---@field replay? string answer model calls from this recording
---@field settings? table the run's --set settings, for run_start
---@field run? luagent.Run the run whose trace it is (default: the calling task's)

---@class luagent.trace
local trace = {}

---The calling task's run's id, e.g. "20260130-120000-energy_anomaly-3f2a".
---@return string
function trace.run_id() end

---The calling task's run's folder, or a folder inside it; made on first use.
---@param sub? string
---@return string
function trace.run_dir(sub) end

---Where run folders go: $LUAGENT_RUNS_DIR, else "runs".
---@return string
function trace.runs_root() end

---The calling task's run's trace file, once the trace has started.
---@return string?
function trace.path() end


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

---A trace file read back: its events, in order. A line that is not a JSON
---event with a type is `nil, err` (kind "json", err.line); with `partial`,
---the events before such a line and `{line, message}` of it (a trace cut by
---a full disk or a killed run).
---@param path string a trace.jsonl file
---@param opts? {partial?: boolean}
---@return luagent.Event[]? events
---@return luagent.Error|{line: integer, message: string}|nil err_or_cut
function trace.read(path, opts) end






---This run's trace file (runs/<run-id>/trace.jsonl) and terminal view. The
---run opens it when it starts (luagent.run); recipes do not need to call it.
---@param opts luagent.TraceOpenOptions
---@return luagent.Trace? trace
---@return luagent.Error? err
function trace.open(opts) end

---@class luagent.Trace
---@field path string
---@field run_id string
---@field lines integer whole lines written so far
---@field failure luagent.Error? a line that could not be written (a full disk): said on stderr at once
local Trace = {}

---Emits run_start (to every subscriber of the run's events).
---@param time number? the first event's time
function Trace:start(time) end

---Writes one event: a line in the file; on stdout with --json, else a line
---for people on stderr (none with -q). A line that cannot be written is said
---on stderr at once, naming the file; no more lines are written to it.
---@param ev luagent.Event
function Trace:write(ev) end

---Emits run_end and closes the file; an "ok" run whose trace could not be
---written ends "failed". Returns trace.failure.
---@param status? "ok"|"failed"|"interrupted"
---@param message? string
---@return luagent.Error? failure
function Trace:finish(status, message) end

return trace

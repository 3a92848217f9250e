-- luagent.journal: a run's journal, so that `luagent run --resume RUN` goes on
-- from where a run stopped — killed, interrupted, stopped by max_turns or its
-- budget — in a new process, without repeating a model call or a command.
--
-- runs/<id>/journal.jsonl holds, one JSON line each, appended and flushed as
-- the run goes: what each agent's model calls answered ({k = "model"}) and
-- what each turn's tool calls returned ({k = "tools"}), with, for a turn that
-- called a tool that may write, the workspace checkpoint taken after it
-- (checkpoint = "checkpoint-N.tar" in the run folder, box:snapshot; the one
-- before it is removed once the line is written). The turn's line is written
-- only once its checkpoint is whole, so a resume never skips commands whose
-- effect its workspace lacks: a run killed in between runs that turn's tools
-- again, on the workspace from before them. An agent is named by its name and
-- how many agents of that name the run started before it.
-- runs/<id>/resume.argv: the command line (its folder, the recipe, --set,
-- the recipe's arguments) the resume runs again; runs/<id>/journal.lock: the
-- process that writes the journal (pid and start time).
--
-- A resume runs the recipe again from its start with every agent answered
-- from the journal while it has the turn: the model's reply (its request
-- checked against the one journaled: a recipe edited since is refused with
-- what differs), and the tool results (no handler runs). At the journal's end
-- the agent goes live: its box gets the last checkpoint back, and the model is
-- told that the Python session started afresh. A journal cut short by a crash
-- mid-write is read up to its last whole line.
--
--   journal.of(run) -> J | nil     the run's journal (nil for a run with no recipe, or LUAGENT_NO_JOURNAL=1)
--   journal.resume(run, dir)       makes run the resume of the run folder dir (its folder and id too,
--                                  unless set); raises a usage error
--   journal.lock_holder(dir) -> pid | nil   the live process writing the run folder's journal
--   J:agent(name) -> key           an agent run's key
--   J:replayed_model(key, turn, request) -> result | nil   (raises when the request differs)
--   J:replayed_tools(key, turn) -> messages | nil
--   J:model(key, turn, request, result), J:tools(key, turn, messages, box, calls)
--   J:went_live(key, box, turns) -> note | nil   the checkpoint restored; the note for the model
--   journal.complete(agent_run, request, turn) -> result | nil, err   a model call through the journal
--   journal.call_tools(agent_run, calls, turn, run_calls) -> messages   a turn's tools through it
--   journal.finish(agent_run)      at its end: a resume that never went live gets its workspace back
local errors = require "luagent.errors"
local fs = require "luagent.fs"
local json = require "luagent.json"
local sys = require "luagent.sys"

local journal = {}

local Journal = {}
Journal.__index = Journal

local FILE, LOCK, ARGV = "journal.jsonl", "journal.lock", "resume.argv"
-- tools that change no file: a turn of only these takes no checkpoint
local READ_ONLY = {read_file = true, list_files = true, view_image = true, read_output = true}

local function usage(message) return errors.new("usage", message) end

-- The pid of the live process that writes the run folder's journal (its
-- journal.lock: "PID STARTTIME"), or nil: none, or it is gone.
function journal.lock_holder(dir)
  local text = fs.read(dir .. "/" .. LOCK)
  local pid, start = (text or ""):match("^(%d+) (%d+)")
  if not pid then return nil end
  pid = tonumber(pid)
  if tostring(sys.process_start(pid) or "") ~= start then return nil end -- gone
  return pid
end

local function take_lock(dir)
  local holder = journal.lock_holder(dir)
  if holder and holder ~= sys.pid() then
    error(usage(("the run %s is being written by another luagent (pid %d): one process at a time resumes a run")
      :format(dir, holder)), 0)
  end
  assert(fs.write(dir .. "/" .. LOCK, ("%d %s\n"):format(sys.pid(), tostring(sys.process_start(sys.pid()) or 0))))
end

-- The command line a resume runs again: its folder, the recipe, --set, flags, args (NUL-separated).
local function write_argv(r)
  local cwd = fs.realpath(".") or "."
  local argv = {cwd, r.recipe}
  for _, kv in ipairs(r.raw_settings or {}) do argv[#argv + 1] = "--set"; argv[#argv + 1] = kv end
  if r.quiet then argv[#argv + 1] = "-q" end
  if r.json then argv[#argv + 1] = "--json" end
  if r.args and #r.args > 0 then
    argv[#argv + 1] = "--"
    for _, a in ipairs(r.args) do argv[#argv + 1] = tostring(a) end
  end
  fs.write(r:dir() .. "/" .. ARGV, table.concat(argv, "\0") .. "\0")
end

function journal.of(r)
  -- LUAGENT_NO_JOURNAL=1: no journal (bench/journal measures what it costs)
  if not r.recipe or os.getenv("LUAGENT_NO_JOURNAL") == "1" then return nil end
  local j = rawget(r, "journal")
  if j then return j end
  j = setmetatable({run = r, counts = {}, index = {}, live = {}, replaying = false, checkpoints = 0, kept = {}},
                   Journal)
  r.journal = j
  return j
end

-- The journal's lines, read up to the last whole one: a list of entries.
local function read_entries(path)
  local text = fs.read(path) or ""
  local entries = {}
  for line in text:gmatch("([^\n]*)\n") do -- a last line without its newline was cut by a crash
    local ok, entry = pcall(json.decode, line)
    if ok and type(entry) == "table" and entry.k then entries[#entries + 1] = entry end
  end
  return entries
end

-- How the run ended, from its trace: the last run_end's status, or nil (it never ended: killed).
local function last_status(dir)
  local text = fs.read(dir .. "/trace.jsonl") or ""
  local status
  for line in text:gmatch('[^\n]*"run_end"[^\n]*') do
    local ok, ev = pcall(json.decode, line)
    if ok and type(ev) == "table" and ev.type == "run_end" then status = ev.status end
  end
  return status
end

function journal.resume(r, dir)
  -- the run is the one of that folder: its folder and its id (unless the caller named them)
  r.folder = rawget(r, "folder") or dir
  r.id = rawget(r, "id") or dir:match("([^/]+)/*$")
  if not fs.exists(dir .. "/" .. FILE) then
    error(usage(("the run %s has no journal: it never reached a model call, or it is not a run folder"):format(dir)), 0)
  end
  if last_status(dir) == "ok" then error(usage(("the run %s finished (ok): there is nothing to resume"):format(dir)), 0) end
  take_lock(dir)
  local j = journal.of(r)
  j.replaying = true
  for _, e in ipairs(read_entries(dir .. "/" .. FILE)) do
    j.index[e.k .. " " .. e.a .. " " .. e.n] = e
    if e.checkpoint then
      j.index["last-checkpoint " .. e.a], j.kept[e.a] = e, e.checkpoint
      j.checkpoints = math.max(j.checkpoints, tonumber(e.checkpoint:match("(%d+)")) or 0)
    end
  end
  return j
end

-- The journal file written to: the lock and resume.argv made before the first line.
function Journal:_add(entry)
  if not self.started then
    self.started = true
    if not self.replaying then
      take_lock(self.run:dir())
      write_argv(self.run)
    end
    self.run:at_exit(function() fs.remove(self.run:_folder() .. "/" .. LOCK) end)
  end
  local ok, err = fs.append(self.run:dir() .. "/" .. FILE, json.encode(entry) .. "\n")
  if not ok and not self.warned then
    self.warned = true
    io.stderr:write("luagent: cannot write the run's journal (", errors.from(err).message, "): it cannot be resumed\n")
  end
end

function Journal:agent(name)
  name = tostring(name or "agent")
  self.counts[name] = (self.counts[name] or 0) + 1
  return name .. "#" .. self.counts[name]
end

-- What a request is, in three hashes: its instructions, its tools, its messages.
local function fingerprint(request)
  local system, rest = nil, {}
  for _, m in ipairs(request.messages or {}) do
    if m.role == "system" then system = m.content
    else rest[#rest + 1] = {m.role, m.content, m.tool_call_id, m.tool_calls} end
  end
  local tools = {}
  for i, t in ipairs(request.tools or {}) do tools[i] = {t.name, t.description, t.parameters} end
  local function hash(v) return sys.sha256(json.encode(v == nil and json.null or v)):sub(1, 16) end
  return {instructions = hash(system), tools = hash(tools), messages = hash(rest)}
end

local PARTS = {"instructions", "tools", "messages"}

function Journal:replayed_model(key, turn, request)
  if not self.replaying or self.live[key] then return nil end
  local e = self.index["model " .. key .. " " .. turn]
  if not e then return nil end
  local now = fingerprint(request)
  for _, part in ipairs(PARTS) do
    if now[part] ~= e.fp[part] then
      error(usage(("the recipe changed since the run stopped: turn %d of agent %s asks the model with other %s than "
        .. "the journal has (%s); resume runs the same recipe, or start a new run"):format(turn, key:match("^(.*)#"),
        part, part == "messages" and "an earlier turn went otherwise" or "edited since")), 0)
    end
  end
  local content = require "luagent.model.content"
  local r = e.result
  local calls = {}
  for i, c in ipairs(r.tool_calls or {}) do calls[i] = content.tool_call(c.id, c.name, c.arguments_json) end
  r.tool_calls = calls
  if r.output_call then r.output_call = content.tool_call(r.output_call.id, r.output_call.name, r.output_call.arguments_json) end
  r.duration, r.attempts, r.resumed = 0, 0, true
  return r
end

function Journal:replayed_note(key, turn)
  if not self.replaying then return nil end
  local e = self.index["note " .. key .. " " .. turn]
  return e and e.text
end

function Journal:replayed_tools(key, turn)
  if not self.replaying or self.live[key] then return nil end
  local e = self.index["tools " .. key .. " " .. turn]
  return e and e.messages
end

local function call_of(c)
  return c and {id = c.id, name = c.name, arguments_json = c.arguments_json} or nil
end

function Journal:model(key, turn, request, r)
  local calls = {}
  for i, c in ipairs(r.tool_calls or {}) do calls[i] = call_of(c) end
  self:_add({k = "model", a = key, n = turn, fp = fingerprint(request), result = {
    text = r.text, tool_calls = json.array(calls), finish_reason = r.finish_reason, usage = r.usage, cost = r.cost,
    model = r.model, provider = r.provider, provider_items = r.provider_items, commentary = r.commentary,
    reasoning_summary = r.reasoning_summary, refusal = r.refusal, output_by_tool = r.output_by_tool,
    output_call = call_of(r.output_call), output_json = r.output_json}})
end

-- The workspace saved after a turn that called a tool that may write: the
-- checkpoint's file name, or nil (none needed, or it failed: said once).
function Journal:_checkpoint(box, calls)
  if not box or not box.snapshot then return nil end
  local writes = false
  for _, c in ipairs(calls) do writes = writes or not READ_ONLY[c.name] end
  if not writes then return nil end
  self.checkpoints = self.checkpoints + 1
  local name = ("checkpoint-%d.tar"):format(self.checkpoints)
  local dir = self.run:dir()
  local ok, err = box:snapshot(dir .. "/" .. name .. ".part")
  if ok then ok, err = os.rename(dir .. "/" .. name .. ".part", dir .. "/" .. name) end
  if ok then return name end
  fs.remove(dir .. "/" .. name .. ".part")
  if not self.checkpoint_warned then
    self.checkpoint_warned = true
    io.stderr:write("luagent: cannot checkpoint the workspace (", tostring(errors.from(err).message),
      "): a resume would start from an earlier one\n")
  end
  return nil
end

-- A turn's tool results, journaled with the checkpoint taken after them.
function Journal:tools(key, turn, messages, box, calls)
  local checkpoint = self:_checkpoint(box, calls or {})
  self:_add({k = "tools", a = key, n = turn, messages = json.array(messages), checkpoint = checkpoint})
  if checkpoint then
    if self.kept[key] then fs.remove(self.run:_folder() .. "/" .. self.kept[key]) end
    self.kept[key] = checkpoint
  end
end

local RESUMED_NOTE = "note: this run was resumed in a new sandbox: the files in the workspace are as they were "
  .. "at the end of the last turn, but the Python session started afresh, so variables and imports from before "
  .. "are gone"

-- The agent goes live: its workspace gets the last checkpoint back (once);
-- returns the note for the model when the run had gone on before.
function Journal:went_live(key, box, turns_replayed)
  if not self.replaying or self.live[key] then return nil end
  self.live[key] = true
  local last = self.index["last-checkpoint " .. key]
  if last and box and box.restore then
    local ok, err = box:restore(self.run:_folder() .. "/" .. last.checkpoint)
    if not ok then error(errors.wrap(errors.from(err), "resume: the workspace checkpoint could not be restored"), 0) end
  end
  self.run:emit({type = "run_resumed", agent = key, turns = turns_replayed, checkpoint = last and last.checkpoint})
  return turns_replayed > 0 and RESUMED_NOTE or nil
end

-- The note said to the model at the end of the transcript, as a message of
-- its own (after the tool results; Anthropic's adapter merges it into their turn).
local function add_note(messages, note)
  messages[#messages + 1] = {role = "user", content = note}
end

-- agent.lua's model call: answered from the journal while it has the turn,
-- else live (and journaled).
function journal.complete(ar, request, turn)
  local j, key = ar.journal, ar.jkey
  if not j then return ar.agent.model:complete(request) end
  local note = j:replayed_note(key, turn)
  if note then add_note(ar.messages, note) end
  local replayed = j:replayed_model(key, turn, request)
  if replayed then return replayed end
  note = j:went_live(key, ar.agent.workspace, turn - 1)
  if note then
    add_note(ar.messages, note)
    j:_add({k = "note", a = key, n = turn, text = note})
  end
  local result, err = ar.agent.model:complete(request)
  if result then j:model(key, turn, request, result) end
  return result, err
end

-- agent.lua's tool calls of a turn: their results from the journal while it
-- has them (no handler runs), else run_calls() (journaled, and the workspace
-- checkpointed when the turn may have changed files).
function journal.call_tools(ar, calls, turn, run_calls)
  local j, key = ar.journal, ar.jkey
  if not j then return run_calls() end
  local replayed = j:replayed_tools(key, turn)
  if replayed then return replayed end
  local note = j:went_live(key, ar.agent.workspace, turn)
  local results = run_calls()
  if note then add_note(results, note) end
  j:tools(key, turn, results, ar.agent.workspace, calls)
  return results
end

-- At an agent run's end: a resume that never went live (it stops where the
-- journal ends, e.g. at the same max_turns) still leaves the agent's box as
-- the journal's end had it, so what the run saves is what the run had made.
function journal.finish(ar)
  local j = ar.journal
  if not j or not j.replaying or j.live[ar.jkey] then return end
  j:went_live(ar.jkey, ar.agent.workspace, ar.turns)
end

return journal

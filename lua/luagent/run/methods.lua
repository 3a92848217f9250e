-- luagent.run.methods: the methods of a run (luagent.run) that a run needs
-- only once something happens — luagent.run loads this at their first use,
-- so an empty recipe never does: its events (emit, subscribe, unsubscribe,
-- with stats and final), its folder (dir), and making and executing runs.
--
--   run.new{recipe, settings, dir, id, args, quiet, json, record, replay, cache, cache_salt, transport, capture,
--           resume_dir}
--     -> r | nil, err     a run, started (its transport chosen, its trace subscribed); err
--                         (kind "config") when record/replay cannot be used; bad options raise.
--                         resume_dir: the run goes on as the run of that folder (as `luagent run
--                         --resume`: its folder, its id unless id says it, answered from its journal;
--                         err kind "usage" when it cannot: luagent.journal.resume)
--   r:execute(...) -> {status = "ok" | "failed" | "interrupted" | "waiting", error, traceback, final, stats, dir,
--                      trace}   (waiting: it stopped for a person's approval, an error of kind waiting)
--     runs the recipe, loaded fresh with globals of its own, as a task in r's context with ...
--     as its arguments (its folder searched first for modules); with capture = true its print
--     and io.write go to <run dir>/stdout.txt; then r's exit hooks, then run_end. A failing
--     recipe is a result, never an error here. A caller cancelled meanwhile (Ctrl-C) waits
--     for the run to end, then raises the cancellation (r.result has the run's result).
local sched = require "luagent.sched"
local errors = require "luagent.errors"
local events = require "luagent.events"
local context = require "luagent.context"

-- The methods, which luagent.run installs in its class (this module never
-- requires luagent.run: calls go one way).
local RecipeRun = {}

local methods = {methods = RecipeRun}

-- ---- a run's start and end ----

-- r:_open_trace([time]) -> trace | nil: the run's trace opened, and its
-- run_start (at `time`, the first event's) given to every subscriber. A trace
-- that cannot be opened is said on stderr at once (the run goes on without
-- it, and ends with exit status 1: r:_write_failures).
function RecipeRun:_open_trace(time)
  if rawget(self, "trace") or rawget(self, "trace_failed") then return rawget(self, "trace") end
  local t, err = require("luagent.trace").open{run = self, t0 = self.t0, quiet = self.quiet, json = self.json,
                                               settings = self.settings, record = self.record, replay = self.replay}
  if not t then
    self.trace_failed = errors.from(err)
    io.stderr:write("luagent: ", self.trace_failed.message, ". The run goes on; it will end with exit status 1.\n")
    return nil
  end
  self.trace = t
  t:start(time or require("luagent.sys").time())
  return t
end

-- The run's trace, subscribed first at its first event: it opens then and
-- writes every event after run_start.
local function trace_subscriber(r)
  return function(ev)
    local t = r:_open_trace(ev.time)
    if t then t:write(ev) end
  end
end

-- r:_write_failures([err]) -> err | nil   err, with the files of the run that
-- could not be written (its trace, its recording) added: each was said on
-- stderr when it failed; the run ends with status 1 naming them.
function RecipeRun:_write_failures(err)
  local found = {}
  local trace = rawget(self, "trace")
  if trace and trace.failure then found[#found + 1] = trace.failure end
  if rawget(self, "trace_failed") then found[#found + 1] = self.trace_failed end
  -- only a recording run can have a recording that failed; and a run that never
  -- loaded luagent.model made no call (loading it here would cost ~1.5 ms at exit)
  local recorded = self.record and require("luagent.model.recording").recorder_failure(self.transport)
  if recorded then found[#found + 1] = recorded end
  if #found == 0 then return err end
  local messages = {}
  for i, f in ipairs(found) do messages[i] = f.message end
  if err then table.insert(found, 1, err) table.insert(messages, 1, err.message) end
  return errors.new(found[1].kind, table.concat(messages, "; "), {errors = found})
end

-- With --record or --replay: the run's model transport records, or replays a
-- recording (no network, no key needed). Raises the recording's message.
function RecipeRun:_use_recording(opts)
  local recording = require "luagent.model.recording"
  local choice = {record = opts.record, replay = opts.replay, recipe = self.recipe}
  self.transport, self.replaying = recording.transport(choice, self.transport or require("luagent.http").request)
end

function RecipeRun:at_exit(fn, opts)
  if type(fn) ~= "function" then error("at_exit: argument 'fn' must be a function", 2) end
  local list = opts and opts.last and self.last_hooks or self.hooks
  list[#list + 1] = fn
end

-- Runs the exit hooks once, newest first, then the `last` ones; each runs
-- even if an earlier one failed. Returns nil, or the failures as one error
-- value (the first one's kind; err.errors).
function RecipeRun:_run_exit_hooks(status, message)
  local order = {}
  for i = #self.hooks, 1, -1 do order[#order + 1] = self.hooks[i] end
  for i = #self.last_hooks, 1, -1 do order[#order + 1] = self.last_hooks[i] end
  self.hooks, self.last_hooks = {}, {}
  local failures, messages = {}, {}
  for _, hook in ipairs(order) do
    local ok, err = pcall(hook, status, message)
    if not ok then
      failures[#failures + 1] = errors.from(err)
      messages[#messages + 1] = failures[#failures].message
    end
  end
  if #failures == 0 then return nil end
  return errors.new(failures[1].kind, "while finishing the run: " .. table.concat(messages, "; "), {errors = failures})
end

-- ---- a run's events ----

-- stats and final, from the events that carry them
local function note(r, ev)
  if ev.type == "model_response" then
    local s = r.stats
    s.model_calls = s.model_calls + 1
    if ev.cached then
      s.cached_calls = s.cached_calls + 1
      s.saved_cost = s.saved_cost + (ev.saved_cost or 0)
    else
      s.live_calls = s.live_calls + 1
    end
    s.cost = s.cost + (ev.cost or 0)
    local usage = ev.usage or {}
    s.input_tokens = s.input_tokens + (usage.input_tokens or 0)
    s.output_tokens = s.output_tokens + (usage.output_tokens or 0)
  elseif ev.type == "agent_end" then
    r.final = {output = ev.output, stopped_by = ev.stopped_by, usage = ev.usage, cost = ev.cost, turns = ev.turns}
  end
end

-- r:emit(ev): what events.emit does for the calling task's run.
function RecipeRun:emit(ev)
  if self.started and not self.traced then
    self.traced = true
    table.insert(self.subscribers, 1, trace_subscriber(self))
  end
  note(self, ev)
  events._deliver(ev, self, self.subscribers)
end

function RecipeRun:subscribe(fn)
  self.subscribers[#self.subscribers + 1] = fn
  return fn
end

function RecipeRun:unsubscribe(fn)
  for i, f in ipairs(self.subscribers) do
    if f == fn then table.remove(self.subscribers, i) return end
  end
end

-- ---- its folder ----

-- The run's folder, not made.
function RecipeRun:_folder()
  return rawget(self, "folder") or (context.runs_root() .. "/" .. self.id)
end

-- r:dir([sub]) -> path   the run's folder or one inside it, made on first use;
-- a folder that cannot be made raises its error.
function RecipeRun:dir(sub)
  local dir = self:_folder()
  if sub and sub ~= "" then dir = dir .. "/" .. sub end
  local ok, err = require("luagent.fs").mkdir(dir)
  if not ok then error(errors.wrap(err, "cannot create the run folder"), 2) end
  self.made_dir = true
  return dir
end

-- ---- making and executing runs ----

local function check_option(cond, name, what)
  if not cond then error(("run.new: option '%s' must be %s"):format(name, what), 3) end
end

-- methods.new(opts, make): run.new (make: run._make, which makes a run of the fields)
function methods.new(opts, make)
  check_option(type(opts) == "table", "opts", "a table of options")
  check_option(type(opts.recipe) == "string", "recipe", "the recipe file's path (a string)")
  check_option(opts.settings == nil or type(opts.settings) == "table", "settings", "a table")
  check_option(opts.dir == nil or type(opts.dir) == "string", "dir", "a folder path (a string)")
  check_option(opts.transport == nil or type(opts.transport) == "function", "transport", "a function")
  check_option(opts.resume_dir == nil or type(opts.resume_dir) == "string", "resume_dir", "a run folder (a string)")
  local resume = opts.resume_dir
  local r = make{recipe = opts.recipe, settings = opts.settings, args = opts.args, folder = opts.dir,
                      id = opts.id, capture = opts.capture or false,
                      replaying = false, transport = opts.transport or context.default().transport}
  if resume then -- as init.lua does for `luagent run --resume`
    local ok, err = pcall(require("luagent.journal").resume, r, resume)
    if not ok then
      err = errors.from(err)
      return errors.fail(err.kind, "run.new: " .. err.message, {recipe = opts.recipe})
    end
  end
  local ok, err = pcall(r._start, r, {quiet = opts.quiet, json = opts.json, record = opts.record, replay = opts.replay,
                                     cache = opts.cache, cache_salt = opts.cache_salt})
  if not ok then
    return errors.fail("config", "run.new: " .. (errors.is(err) and err.message or tostring(err)), {recipe = opts.recipe})
  end
  return r
end

-- The recipe's globals: its own (two runs of one recipe at once do not
-- share them), over the process's; with `out`, its print and io.write go there.
local function recipe_env(out)
  local env = {}
  env._G = env
  if out then
    env.io = setmetatable({write = function(...) return out:write(...) end, stdout = out}, {__index = io})
    env.print = function(...)
      local n = select("#", ...)
      for i = 1, n do
        out:write(tostring((select(i, ...))), i < n and "\t" or "\n")
      end
      if n == 0 then out:write("\n") end
    end
  end
  return setmetatable(env, {__index = _G})
end

-- Modules beside the recipe are found as for `luagent run` (its folder first).
local function search_beside(dir)
  local entry = dir .. "/?.lua;" .. dir .. "/?/init.lua;"
  if package.path:sub(1, #entry) ~= entry and not package.path:find(";" .. entry, 1, true) then
    package.path = entry .. package.path
  end
end

local function message_of(err)
  if type(err) == "table" and err.message then return tostring(err.message) end
  return tostring(err)
end

-- r:print(...) -> what the library says to the run's user (a scripted-driver
-- notice): print's format, on the run's stdout.txt when it is captured
-- (luagent eval), else on the terminal.
function RecipeRun:print(...)
  local parts = table.pack(...)
  for i = 1, parts.n do parts[i] = tostring(parts[i]) end
  local out = rawget(self, "stdout") or io.stdout
  out:write(table.concat(parts, "\t", 1, parts.n), "\n")
end

-- The run's task: the recipe, then its exit hooks, then run_end.
local function body(r, chunk, out, ...)
  local traceback
  local ok, returned = xpcall(chunk, function(e)
    traceback = debug.traceback(message_of(e), 2)
    return e
  end, ...)
  local status, err = "ok", nil
  if not ok then
    err = errors.from(returned)
    status = err.kind == "cancelled" and "interrupted" or err.kind == "waiting" and "waiting" or "failed"
  elseif math.type(returned) == "integer" and returned ~= 0 then
    -- a recipe returns its exit status, as under `luagent run` (0: success)
    status, err = "failed", errors.new("error", ("the recipe ended with exit status %d"):format(returned),
                                       {exit_status = returned})
  end
  status, err = r:_end(status, err)
  if out then out:close() end
  return {status = status, error = err, traceback = traceback, final = r.final, stats = r.stats, dir = r:_folder(),
          trace = r.trace and r.trace.path or nil}
end

function RecipeRun:execute(...)
  if self.executed then error("run:execute: this run was already executed; make a new one with run.new", 2) end
  self.executed = true
  self.args = table.pack(...)
  self.args.n = nil
  local out, chunk, err
  if self.capture then
    local path = self:dir() .. "/stdout.txt"
    out, err = io.open(path, "w")
    if not out then err = ("cannot write %s: %s"):format(path, err) end
    self.stdout = out
  end
  if not err then
    search_beside(self.recipe_dir)
    chunk, err = loadfile(self.recipe, "t", recipe_env(out))
  end
  if not chunk then
    if out then out:close() end
    local e = errors.new("config", message_of(err), {recipe = self.recipe})
    self.result = {status = "failed", error = e, stats = self.stats, dir = self:_folder()}
    return self.result
  end
  local task = sched.spawn_in(self, body, self, chunk, out, ...)
  local ok, result, werr = pcall(task.wait, task)
  local stop
  if not ok then -- the caller was cancelled: the run ends first (its hooks close its sandboxes)
    stop = result
    ok, result, werr = pcall(task.wait, task)
    if not ok then result, werr = nil, stop end
  end
  if result == nil then -- the task itself broke (an error escaped the hooks), or never ended
    result = {status = "failed", error = errors.from(werr), final = self.final, stats = self.stats,
              dir = self:_folder(), trace = self.trace and self.trace.path or nil}
  end
  self.result = result
  if stop then error(stop, 0) end
  return result
end

return methods

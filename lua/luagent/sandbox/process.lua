-- luagent.sandbox.process: a process started by box:spawn, which outlives
-- the call (a server the agent starts). The supervisor keeps its whole tree
-- under one subreaper: nothing it starts escapes, and everything is killed
-- by kill(), by close(), or when the box closes.
--
-- Its methods: lua/meta/sandbox.lua (luagent.SandboxProcess). A write returns
-- once the process's pipe took the bytes, so a process that reads slowly
-- holds its writer back; writes from several tasks go in call order, each
-- whole (a write whose caller was cancelled still completes).
-- The handle follows the handle rule: after close (or the box's close) its
-- methods return nil, err of kind "closed"; no I/O happens in a finalizer.
--
-- Streamed stdin is the supervisor's write and eof requests (sandbox/supervisor/
-- DESIGN.md), sent over the supervisor's channel (ex.channel, ids from
-- ex.next_id) in chunks of CHUNK bytes, each sent once the one before is in
-- the pipe: the supervisor holds at most one chunk per process.
local command = require "luagent.sandbox.command"
local errors = require "luagent.errors"
local sched = require "luagent.sched"
local secrets = require "luagent.secrets"

local process = {}

local CHUNK = 1024 * 1024 -- bytes of one write request (the supervisor refuses past 4 MiB waiting)
local TAIL = 512          -- bytes of the last write kept, to find a key cut in two by the writes

local signal_number = require("luagent.sys").signal_number -- the one table of names, C's

local Process = {}
Process.__index = Process

function process.new(session, ex, job, text)
  local tty = job.tty == true
  return setmetatable({session = session, ex = ex, job = job, id = job.id, command = text, closed = false,
                       started = sched.now(), stdin = job.stdin == true or tty, stdin_tail = "", tty = tty}, Process)
end

function Process:__tostring()
  local state = self.closed and "closed" or self.ended and "ended" or "running"
  return ("sandbox process %d of %s (%s)"):format(self.id, self.session.id, state)
end

-- nil, or the error every method returns now.
function Process:_unusable()
  if self.closed or self.session.closing then
    return errors.new("closed", ("%s: the process handle or its sandbox is closed"):format(tostring(self)))
  end
end

-- The supervisor died under it: the session comes back without it.
function Process:_lost(why)
  self.ended = true
  self.lost = true
  pcall(self.ex.result, self.ex, self.job)
  return nil, require("luagent.sandbox.recovery").recover(self.session, self.ex, why, true)
end

-- Its supervisor was replaced or closed by a recovery that another call began
-- (its supervisor died): the process died with it. Its channel is closed, and
-- a closed channel raises, so every method asks this before using it.
function Process:_orphaned()
  return not self.ended and self.ex ~= self.session.supervisor
end

function Process:_gone()
  return errors.new("sandbox_restarted",
    ("%s: its sandbox lost its supervisor, and the process ended with it"):format(tostring(self)))
end

function Process:read(seconds)
  local err = self:_unusable()
  if err then return nil, err end
  if self.lost then return nil, self:_gone() end
  if self.ended then return "", "" end
  if self:_orphaned() then return self:_lost("it stopped") end
  if seconds and seconds > 0 then
    local ok
    ok, err = self.ex:wait(self.job, seconds, true)
    if ok == nil then return self:_lost(err.message) end
  end
  return self.ex:take(self.job)
end

function Process:wait(seconds)
  local err = self:_unusable()
  if err then return nil, err end
  if self.result then return self.result end
  if self.lost then return nil, self:_gone() end
  if self:_orphaned() then return self:_lost("it stopped") end
  local ended
  ended, err = self.ex:wait(self.job, seconds)
  if ended == nil then return self:_lost(err.message) end
  if not ended then
    return errors.fail("timeout", ("%s still runs after %s s"):format(tostring(self), tostring(seconds)))
  end
  self.ended = true
  self.result = command.result(self.ex:result(self.job), sched.now() - self.started)
  return self.result
end

function Process:running()
  return not (self.closed or self.ended or self.session.closing)
end

function Process:signal(sig)
  local signo = math.type(sig) == "integer" and sig or signal_number(tostring(sig))
  if not signo or signo < 1 or signo > 64 then
    error(("proc:signal(sig): %s is not a signal (a number, or a name like 'TERM')"):format(tostring(sig)), 2)
  end
  local err = self:_unusable()
  if err then return nil, err end
  if self.ended then return true end
  if self:_orphaned() then return self:_lost("it stopped") end
  return self.ex:signal(self.job, signo)
end

-- A terminal's new size: its processes get SIGWINCH.
function Process:resize(cols, rows)
  for _, v in ipairs{cols, rows} do
    if not (math.type(v) == "integer" and v >= 1 and v <= 9999) then
      error(("proc:resize(cols, rows): %s is not a size (whole numbers 1..9999)"):format(tostring(v)), 2)
    end
  end
  if not self.tty then error(("proc:resize: %s has no terminal (box:spawn(cmd, {tty = true}))"):format(tostring(self)), 2) end
  local err = self:_unusable()
  if err then return nil, err end
  if self.ended then return true end
  if self:_orphaned() then return self:_lost("it stopped") end
  return self.ex:resize(self.job, cols, rows)
end

function Process:kill()
  local err = self:_unusable()
  if err then return nil, err end
  if self.ended then return true end
  if self:_orphaned() then return self:_lost("it stopped") end
  return self.ex:kill(self.job)
end

-- ---- streamed stdin ----

-- One write or eof request, answered when its bytes are in the pipe.
function Process:_stdin_request(op, fields)
  if self.lost then return nil, self:_gone() end
  if self:_orphaned() then return self:_lost("it stopped") end
  local ex = self.ex
  ex.next_id = ex.next_id + 1
  local id = ex.next_id
  fields.target = self.id
  local ok, err = ex.channel:send(op, id, fields)
  if ok then ok, err = ex.channel:wait(id) end
  if ok == nil then
    local unusable = self:_unusable()
    if unusable or err.kind == "closed" then return nil, unusable or err end
    return self:_lost(err.message)
  end
  local r = ex.channel:result(id)
  if r.exit_code == 0 then return true end
  local why = (r.failure or ""):gsub("^the stdin of command %d+: ", "")
  return errors.fail(r.exit_code == 1 and "io" or "protocol",
                     ("%s: cannot write to its stdin: %s"):format(tostring(self), why), {process = self.id})
end

-- Runs fn after every stdin request asked for before it, in its own task:
-- a write is never cut by another one, nor by its caller's cancellation.
function Process:_in_turn(fn)
  local before = self.stdin_last
  local turn = sched.spawn(function()
    if before then before:wait() end
    return fn()
  end)
  self.stdin_last = turn
  local ok, err = turn:wait()
  if self.stdin_last == turn then self.stdin_last = nil end
  return ok, err
end

function Process:write(data)
  if type(data) ~= "string" then error("proc:write(data): data must be a string", 2) end
  if not self.stdin then
    error(("proc:write(data): %s was started without an open stdin (box:spawn(cmd, {stdin = true}))")
      :format(tostring(self)), 2)
  end
  if self.stdin_closed then error(("proc:write(data): the stdin of %s is closed (close_stdin was called)")
    :format(tostring(self)), 2) end
  local err = self:_unusable()
  if err then return nil, err end
  if self.lost then return nil, self:_gone() end
  local key = secrets.find(data) or secrets.find(self.stdin_tail .. data:sub(1, TAIL))
  if key then
    return errors.fail("refused", ("the input to %s contains the value of %s, and API keys never enter the sandbox")
      :format(tostring(self), key))
  end
  self.stdin_tail = #data >= TAIL and data:sub(-TAIL) or (self.stdin_tail .. data):sub(-TAIL)
  if data == "\3" and self.tty and self.session.spec.gvisor then
    -- gVisor's terminal does not turn Ctrl-C into SIGINT (sandbox/GVISOR.md): it is sent as the signal
    return self:signal("INT")
  end
  return self:_in_turn(function()
    for i = 1, #data, CHUNK do
      local ok, why = self:_stdin_request("write", {data = data:sub(i, i + CHUNK - 1)})
      if not ok then return nil, why end
    end
    return true
  end)
end

function Process:close_stdin()
  if not self.stdin or self.stdin_closed then return true end
  if self.tty then -- a terminal's end of input is its EOF character (Ctrl-D), at a line's start
    local ok, err = self:write("\4")
    self.stdin_closed = true
    return ok, err
  end
  self.stdin_closed = true
  local err = self:_unusable()
  if err then return nil, err end
  if self.lost or self.ended then return true end
  return self:_in_turn(function() return self:_stdin_request("eof", {}) end)
end

function Process:close()
  if self.closed then return true end
  self.closed = true
  if not self.ended and not self.session.closing and self.ex:alive() then
    local ex, job = self.ex, self.job
    ex:kill(job)
    sched.spawn(function() -- its end is read, so the channel forgets it
      if pcall(ex.wait, ex, job, 10) then pcall(ex.result, ex, job) end
    end)
  end
  return true
end

Process.__close = Process.close

return process

-- luagent.sandbox.fork: box:fork(n [, opts]) and sandbox.fork(box, n, opts) —
-- n new sessions of the spec of a box, each starting with a copy of what its
-- commands wrote: /workspace and /tmp (the sandbox user's HOME: pip --user,
-- caches, matplotlib's config). Not copied: the persistent Python
-- interpreter (a fork's box:python starts clean), running processes
-- (box:spawn), anything a writable_root session wrote elsewhere.
--
--   fork.run(box, n, opts, facade) -> {box, ...} | nil, err
--       facade = {open = sandbox.open, parse_size, defaults} (the facade
--       passes itself in: calls go one way)
--
-- The forks are opened like sandbox.open opens any box, with the options the
-- source was opened with (its manifest, restore and save left out: the copy
-- is their workspace, and a fork's outputs go where its own save says) and
-- opts on top, all at once; a warm pool of that spec serves them as it
-- serves any open. Then each path is read once, as a tar from the source's
-- supervisor (its pack, as the sandbox user, never following a link),
-- checked on the host as it passes (luagent.tar's checker: extraction's
-- naming rules; nothing goes through a link or out of the folder) and
-- written into every fork at once by a `tar -x` there, fed through its
-- supervisor's stdin. Nothing lands on the host's disk; the host holds at
-- most a few MiB: the source's channel stops reading while WINDOW bytes wait
-- (so the slowest fork paces the source), and each fork's stdin takes 1 MiB
-- writes, each once the one before is in its pipe.
--
-- Limits: what the source holds (du) must fit a fork's workspace_size and
-- tmp_size, said before anything is copied; a file over the source's
-- max_extract, or more entries than max_extract_entries, fails the fork.
-- Any failure closes every fork opened, and says which fork and why.
local errors = require "luagent.errors"
local events = require "luagent.events"
local sched = require "luagent.sched"
local tar = require "luagent.tar"
local packing = require "luagent.sandbox.packing"
local size_text = require("luagent.text").size

local fork = {}

local WINDOW = 4 * 1024 * 1024 -- tar bytes the source's channel holds before it stops reading
local TAR_TIMEOUT = 3600
-- the paths copied, and the size option of the fork each must fit
local PATHS = {{path = "/workspace", option = "workspace_size"}, {path = "/tmp", option = "tmp_size"}}
-- options of the source's open a fork does not take: the copy is its workspace
local NOT_INHERITED = {manifest = true, restore = true, save = true}

local function fail(kind, fmt, ...)
  return errors.fail(kind, "box:fork: " .. fmt:format(...))
end

-- The options each fork is opened with.
local function fork_options(box, opts)
  local o = {}
  for k, v in pairs(box._open_options or {}) do
    if not NOT_INHERITED[k] then o[k] = v end
  end
  for k, v in pairs(opts or {}) do o[k] = v end
  return o
end

-- ---- the limits, before anything is copied ----

-- Bytes each path of the source uses (du: what a tmpfs holds).
local function usage(session)
  local argv = {"du", "-s", "-k"}
  for i, p in ipairs(PATHS) do argv[i + 3] = p.path end
  local r, err = session:exec({argv = argv, env = {}, cwd = "/", timeout = 120, max_output = 65536})
  if not r then return nil, err end
  local used = {}
  for kib, path in r.stdout:gmatch("(%d+)%s+([^\n]+)") do used[path] = tonumber(kib) * 1024 end
  return used
end

local function check_sizes(session, o, facade)
  local used, err = usage(session)
  if not used then return nil, err end
  for _, p in ipairs(PATHS) do
    local setting = o[p.option]
    if setting == nil then setting = facade.defaults[p.option] end
    local cap = setting and facade.parse_size(setting, p.option)
    if cap and (used[p.path] or 0) > cap then
      return fail("too_large", "the source's %s holds %s but a fork's holds %s (%s = %s); raise %s in "
        .. "box:fork(n, {%s = ...}), or remove files from the source first", p.path, size_text(used[p.path]),
        size_text(cap), p.option, tostring(setting), p.option, p.option)
    end
  end
  return true
end

-- ---- opening ----

local function close_all(boxes)
  for _, b in pairs(boxes) do b:close() end
end

-- Opens n boxes at once: {box, ...} | nil, err naming the fork that failed
-- (the others are closed). A bad option raises, as sandbox.open's does.
local function open_forks(n, o, facade)
  local tasks, boxes, failure, raised = {}, {}, nil, nil
  for i = 1, n do tasks[i] = sched.spawn(function() return facade.open(o) end) end
  for i, task in ipairs(tasks) do
    local b, err = task:wait()
    if b then
      boxes[i] = b
    elseif not failure then
      if type(err) == "string" then raised = err end
      failure = errors.wrap(errors.from(err), ("box:fork: fork %d of %d could not open"):format(i, n))
    end
  end
  if failure then
    close_all(boxes)
    if raised then error(raised, 0) end
    return nil, failure
  end
  return boxes
end

-- ---- the copy ----

-- `tar -x` into path in one fork, fed on its stdin.
local function start_writer(b, path)
  return b._session:spawn({argv = {"tar", "-x", "-p", "-f", "-", "-C", path, "--strip-components=1"}, env = {},
                           cwd = path, stdin = true, timeout = TAR_TIMEOUT, max_output = 65536}, "tar -x " .. path)
end

-- Every writer gets chunk; returns once each has it in its pipe.
local function fan_out(writers, chunk)
  local tasks = {}
  for i, w in ipairs(writers) do tasks[i] = sched.spawn(function() return w:write(chunk) end) end
  local failure
  for i, task in ipairs(tasks) do
    local ok, err = task:wait()
    if not ok and not failure then failure = {index = i, err = errors.from(err)} end
  end
  return failure
end

-- The writers' ends: nil, or {index, err} of the first that failed.
local function finish_writers(writers, path)
  for _, w in ipairs(writers) do w:close_stdin() end
  local failure
  for i, w in ipairs(writers) do
    local r, err = w:wait()
    if not failure and (not r or r.exit_code ~= 0) then
      failure = {index = i, err = err or errors.new("io", ("tar -x into %s exited %d: %s"):format(path,
        r.exit_code, (r.stderr or ""):sub(1, 400)))}
    end
  end
  return failure
end

-- What pack left out (its stderr lines): nil, or the error. Sockets and
-- fifos are never copied (they mean nothing without their process).
local function left_out_error(stderr, path, source)
  local bad = {}
  for _, e in ipairs(packing.left_out(stderr)) do
    if e.code ~= "special" then bad[#bad + 1] = ("%s (%s)"):format(e.name, e.reason) end
  end
  if #bad == 0 then return nil end
  local over = stderr:find("too_big", 1, true) or stderr:find("too_many", 1, true)
  return errors.new(over and "too_large" or "tar", ("box:fork: %s of sandbox %s cannot be copied whole: %s%s")
    :format(path, source.session, table.concat(bad, "; ", 1, math.min(5, #bad)),
            over and " (the source's max_extract / max_extract_entries)" or ""))
end

-- Reads path once from the source and writes it into every fork: bytes | nil, err.
local function copy_path(source, boxes, path)
  local writers = {}
  for i, b in ipairs(boxes) do
    local w, err = start_writer(b, path)
    if not w then return nil, errors.wrap(err, ("box:fork: fork %d (%s): cannot start tar -x"):format(i, b.session)) end
    writers[i] = w
  end
  local ex, err = source._session:ready()
  if not ex then return nil, errors.wrap(err, "box:fork: the source sandbox " .. source.session .. " cannot be read") end
  local strip = path:match("([^/]+)$")
  local checker <close> = tar.checker{strip = strip, max_bytes = source.max_extract,
                                      max_entries = source.max_extract_entries}
  local job = {path = path, max_bytes = source.max_extract, max_entries = source.max_extract_entries, window = WINDOW}
  local ok
  ok, err = ex:send("pack", job)
  if not ok then return nil, errors.wrap(err, "box:fork: reading " .. path .. " of the source failed") end
  local stderr, bytes, failure = {}, 0, nil
  while true do
    local ended
    ended, err = ex:wait(job, nil, true)
    if ended == nil then failure = errors.wrap(err, "box:fork: the source sandbox " .. source.session .. " went away") break end
    local out, errout = ex:take(job)
    stderr[#stderr + 1] = errout
    if #out > 0 then
      ok, err = checker:feed(out)
      if not ok then failure = errors.wrap(err, ("box:fork: %s of sandbox %s holds an entry a copy refuses")
        :format(path, source.session)) break end
      local bad = fan_out(writers, out)
      if bad then
        failure = errors.wrap(bad.err, ("box:fork: fork %d (%s)"):format(bad.index, boxes[bad.index].session))
        break
      end
      bytes = bytes + #out
    end
    if ended then break end
  end
  if failure then
    ex:kill(job)
    ex:result(job) -- forgotten: the channel reads again
    return nil, failure
  end
  local raw = ex:result(job)
  stderr[#stderr + 1] = raw.stderr
  failure = left_out_error(table.concat(stderr), path, source)
  if not failure and raw.exit_code ~= 0 then
    failure = errors.new("tar", ("box:fork: reading %s of the source failed (exit code %d)"):format(path, raw.exit_code))
  end
  if not failure then
    ok, err = checker:finish()
    if not ok then failure = errors.wrap(err, "box:fork: the tar of " .. path .. " ended early") end
  end
  if failure then return nil, failure end
  local bad = finish_writers(writers, path)
  if bad then return nil, errors.wrap(bad.err, ("box:fork: fork %d (%s)"):format(bad.index, boxes[bad.index].session)) end
  return bytes
end

local function copy_all(source, boxes)
  local total = 0
  for _, p in ipairs(PATHS) do
    local bytes, err = copy_path(source, boxes, p.path)
    if not bytes then return nil, err end
    total = total + bytes
  end
  -- the copy of /tmp brought the source's CA bundle: each fork trusts its own
  for i, b in ipairs(boxes) do
    if b.egress then
      local ok, err = b.egress:_stage_bundle()
      if not ok then return nil, errors.wrap(err, ("box:fork: fork %d (%s)"):format(i, b.session)) end
    end
  end
  return total
end

-- ---- box:fork ----

local function check_arguments(n, opts)
  if math.type(n) ~= "integer" or n < 1 then
    error(("box:fork(n [, opts]): n = %s: say how many forks to make (a whole number, 1 or more)")
      :format(tostring(n)), 4)
  end
  if opts ~= nil and type(opts) ~= "table" then
    error("box:fork(n [, opts]): opts must be a table of sandbox.open's options", 4)
  end
  for k in pairs(NOT_INHERITED) do
    if k ~= "save" and opts and opts[k] ~= nil then
      error(("box:fork(n, opts): opts.%s is not allowed: a fork's workspace is the source's copy"):format(k), 4)
    end
  end
end

-- Opens the forks and fills them: boxes, bytes | nil, err (nothing left open).
local function make(box, n, o, facade)
  local fits, err = check_sizes(box._session, o, facade)
  if not fits then return nil, err end
  local boxes
  boxes, err = open_forks(n, o, facade)
  if not boxes then return nil, err end
  local bytes
  bytes, err = copy_all(box, boxes)
  if not bytes then
    close_all(boxes)
    return nil, err
  end
  return boxes, bytes
end

function fork.run(box, n, opts, facade)
  check_arguments(n, opts)
  if box.closed then
    return errors.fail("closed", ("box:fork: the sandbox session %s is closed"):format(box.session))
  end
  local started = sched.now()
  local boxes, bytes = make(box, n, fork_options(box, opts), facade)
  local sessions, pooled = {}, 0
  for i, b in ipairs(boxes or {}) do
    sessions[i] = b.session
    if b.pooled then pooled = pooled + 1 end
  end
  events.emit({type = "sandbox_fork", session = box.session, n = n, sessions = sessions, bytes = boxes and bytes,
               pooled = pooled, ms = math.floor((sched.now() - started) * 1000 + 0.5),
               error = not boxes and bytes.message or nil})
  if not boxes then return nil, bytes end
  return boxes
end

return fork

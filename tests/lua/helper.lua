-- A tiny test helper for specs run by the luagent binary itself.
--   local t = require "helper"
--   t.test("name", function() t.eq(1 + 1, 2) end)
--   return t.done()
-- Prints "ok - name" / "not ok - name" lines that tests/run counts.
--
-- LUAGENT_TEST_RUNTIME=runsc (tests/run's gvisor entries, with DOCKER_HOST
-- at a test engine that has that runtime): every sandbox the spec opens
-- runs under it (sandbox.defaults.runtime), and t.test(name, fn, {skip_runtime
-- = {runsc = "why: the gVisor limit"}}) skips a test that cannot hold there,
-- printing a "# skip" line (counted neither way) with the reason.
--
-- LUAGENT_TEST_ENGINE=k8s (tests/run's kubernetes phase, with KUBECONFIG and
-- LUAGENT_TEST_K8S set): every sandbox the spec opens is a pod on that
-- cluster (sandbox.defaults.engines), and {skip_engine = {k8s = "why"}}
-- skips a test that cannot hold there (it drives the Docker engine itself).
local t = {}
local spec = (luagent.recipe or "?"):match("([^/]+)%.lua$") or "?"
t.runtime = os.getenv("LUAGENT_TEST_RUNTIME")
if t.runtime == "" then t.runtime = nil end
t.engine = os.getenv("LUAGENT_TEST_ENGINE")
if t.engine == "" then t.engine = nil end
if t.engine == "k8s" then
  luagent.sandbox.defaults.engines = {(assert(os.getenv("LUAGENT_TEST_K8S"), "LUAGENT_TEST_K8S is not set"))}
  -- the namespace the sessions' pods are in (for a spec that asks the cluster about them)
  t.k8s_namespace = luagent.sandbox.defaults.engines[1]:match("namespace=([%w%-]+)")
  spec = spec .. "@k8s"
end
if t.runtime then
  luagent.sandbox.defaults.runtime = t.runtime
  spec = spec .. "@" .. t.runtime -- its lines apart from the default runtime's
end
local failures, count = 0, 0

local function fail(msg, level)
  error({test_failure = true, message = msg}, level + 1)
end

local function show(v)
  if type(v) == "string" then return ("%q"):format(v) end
  return tostring(v)
end

function t.eq(actual, expected, what)
  if actual ~= expected then
    fail(("%sexpected %s, got %s"):format(what and (what .. ": ") or "", show(expected), show(actual)), 2)
  end
end

function t.ok(value, what)
  if not value then fail(what or "expected a true value", 2) end
  return value
end

function t.match(s, pattern, what)
  if type(s) ~= "string" or not s:find(pattern) then
    fail(("%s%s does not match %q"):format(what and (what .. ": ") or "", show(s), pattern), 2)
  end
end

function t.no_match(s, pattern, what)
  if type(s) == "string" and s:find(pattern) then
    fail(("%s%s matches %q"):format(what and (what .. ": ") or "", show(s), pattern), 2)
  end
end

-- A message for people: no Lua traceback, no path into luagent's own
-- library (a bug report is the one place those belong).
function t.for_people(message, what)
  local text = type(message) == "table" and message.message or message
  if type(text) ~= "string" then fail(("%sno message: %s"):format(what and (what .. ": ") or "", show(message)), 2) end
  if text:find("stack traceback", 1, true) or text:find("lua/luagent/[%w_/]+%.lua:%d") then
    fail(("%sa message with Lua internals in it: %s"):format(what and (what .. ": ") or "", show(text)), 2)
  end
end

-- fn raises an error value of kind (default "config") whose message matches
-- pattern and is for people; returns the error.
function t.refused(fn, pattern, kind)
  local ok, err = pcall(fn)
  if ok then fail("not refused: " .. pattern, 2) end
  if not (type(err) == "table" and err.kind == (kind or "config")) then
    fail(("not an error value of kind %s: %s"):format(kind or "config", show(err)), 2)
  end
  if not tostring(err.message):find(pattern) then fail(("%s does not match %s"):format(show(err.message), show(pattern)), 2) end
  t.for_people(err)
  return err
end

function t.lt(a, b, what)
  if a >= b then fail(("%sexpected %s < %s"):format(what and (what .. ": ") or "", show(a), show(b)), 2) end
end

-- Deep equality for plain tables.
local function same(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

function t.same(actual, expected, what)
  if not same(actual, expected) then
    local json = require "luagent.json"
    local ok1, a = pcall(json.encode, actual)
    local ok2, e = pcall(json.encode, expected)
    fail(("%snot the same:\n  expected %s\n  got      %s"):format(what and (what .. ": ") or "",
      ok2 and e or tostring(expected), ok1 and a or tostring(actual)), 2)
  end
end

-- Runs fn and returns the error it raised (fails if it did not raise).
function t.raises(fn, pattern)
  local ok, err = pcall(fn)
  if ok then fail("expected an error", 2) end
  if pattern then t.match(type(err) == "table" and (err.message or "") or tostring(err), pattern) end
  return err
end

function t.test(name, fn, opts)
  local skip = t.runtime and opts and opts.skip_runtime and opts.skip_runtime[t.runtime]
  if skip then
    print(("# skip - %s: %s: under runtime %s: %s"):format(spec, name, t.runtime, skip))
    return
  end
  skip = t.engine and opts and opts.skip_engine and opts.skip_engine[t.engine]
  if skip then
    print(("# skip - %s: %s: on engine %s: %s"):format(spec, name, t.engine, skip))
    return
  end
  count = count + 1
  local started = luagent.now()
  local ok, err = xpcall(fn, function(e)
    if type(e) == "table" and e.test_failure then return e.message .. "\n" .. debug.traceback("", 2) end
    return tostring(type(e) == "table" and (e.message or e) or e) .. "\n" .. debug.traceback("", 2)
  end)
  local took = luagent.now() - started
  if ok then
    print(("ok - %s: %s (%.2fs)"):format(spec, name, took))
  else
    failures = failures + 1
    print(("not ok - %s: %s"):format(spec, name))
    io.stderr:write(("    %s\n"):format(tostring(err):gsub("\n", "\n    ")))
  end
  io.stdout:flush()
end

-- Environment tests/run provides; a spec that needs a missing one says so.
function t.env(name)
  local v = os.getenv(name)
  if not v or v == "" then error(("test setup: %s is not set (run the specs through tests/run)"):format(name), 2) end
  return v
end

function t.done()
  return failures == 0 and 0 or 1
end

return t

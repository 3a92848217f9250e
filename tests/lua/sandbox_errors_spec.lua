-- needs: docker
-- The sandbox's expected failures are luagent.errors values: one metatable,
-- a kind from the catalogue, tostring = "kind: message". Needs the Docker
-- engine and the luagent-sandbox image (tests/run provides both).
local t = require "helper"
local sandbox, errors, fs, sys = luagent.sandbox, require "luagent.errors", luagent.fs, luagent.sys

local work = assert(fs.temp_dir("luagent-sandbox-errors"))
luagent.at_exit(function() fs.remove(work) end)

-- err is one error value of `kind`; returns it for more checks
local function is_error(err, kind)
  t.ok(errors.is(err), "a luagent.errors value, not " .. tostring(err))
  t.ok(errors.KINDS[err.kind], "a kind from errors.KINDS: " .. tostring(err.kind))
  t.eq(tostring(err), err.kind .. ": " .. err.message)
  if kind then t.eq(err.kind, kind) end
  return err
end

local function count(client, kind, label)
  local path = kind == "volumes" and "/volumes" or "/containers/json"
  local found = assert(client:call("GET", path, nil, {query = {all = 1, filters = {label = {label}}}}))
  return #(kind == "volumes" and (found.Volumes or {}) or found)
end

t.test("a missing image: not_found naming the image and how to build it, nothing left behind", function()
  local tag = "luagent.test=errors-" .. sys.random_hex(4)
  local box, err = sandbox.open{image = "luagent-no-such-image:never", labels = {["luagent.test"] = tag:match("=(.*)")}}
  t.eq(box, nil)
  is_error(err, "not_found")
  t.match(err.message, "luagent%-no%-such%-image:never")
  t.match(err.message, "docker pull")
  t.match(err.message, "luagent sandbox build")
  local client = assert(sandbox.engine())
  t.eq(count(client, "containers", tag), 0, "containers")
  t.eq(count(client, "volumes", tag), 0, "volumes")
end)

t.test("the default image missing says 'luagent sandbox build'", function()
  local saved = sandbox.defaults.image
  sandbox.defaults.image = "luagent-no-such-image:latest"
  local box, err = sandbox.open{}
  sandbox.defaults.image = saved
  t.eq(box, nil)
  t.match(is_error(err, "not_found").message, "luagent sandbox build")
end)

t.test("a missing manifest file and a bad manifest key", function()
  local s, err = sandbox.open{manifest = {["input/data.csv"] = sandbox.file(work .. "/nope.csv")}}
  t.eq(s, nil)
  t.match(is_error(err, "not_found").message, "input/data.csv")
  t.eq(err.key, "input/data.csv")
  s, err = sandbox.open{manifest = {["../up"] = sandbox.text("x")}}
  t.eq(s, nil); is_error(err, "bad_entry")
  s, err = sandbox.open{manifest = {[1] = sandbox.text("x")}}
  t.eq(s, nil); is_error(err, "bad_entry")
end)

t.test("a box whose start fails halfway is born closed: its session is removed before open returns", function()
  local label = "errors-" .. sys.random_hex(4)
  assert(fs.write(work .. "/not-a.tar", ("not a tar archive\n"):rep(100)))
  local events_seen = {}
  local sub = luagent.events.subscribe(function(ev) events_seen[ev.type] = true end)
  local box, err = sandbox.open{restore = work .. "/not-a.tar", labels = {["luagent.test"] = label}}
  luagent.events.unsubscribe(sub)
  t.eq(box, nil)
  t.ok(errors.is(err), tostring(err))
  local client = assert(sandbox.engine())
  t.eq(count(client, "containers", "luagent.test=" .. label), 0, "containers, at once (not at the run's end)")
  t.eq(count(client, "volumes", "luagent.test=" .. label), 0, "volumes")
  t.eq(events_seen.sandbox_open, nil, "it never opened"); t.eq(events_seen.sandbox_close, nil, "so it is not said closed")
end)

t.test("a missing snapshot to restore", function()
  local box, err = sandbox.open{restore = work .. "/no-snapshot.tar"}
  t.eq(box, nil)
  t.match(is_error(err, "not_found").message, "no%-snapshot%.tar")
end)

t.test("an unreachable engine", function()
  local box, err = sandbox.open{docker_host = "unix://" .. work .. "/no-docker.sock"}
  t.eq(box, nil)
  is_error(err, "docker_unreachable")
end)

t.test("the supervisor's volume removed (e.g. docker volume prune): the next session fills it again", function()
  local supervisor = require "luagent.sandbox.supervisor"
  local client = assert(sandbox.engine())
  assert(sandbox.open{}):close() -- it exists
  local removed, err = client:call("DELETE", "/volumes/" .. supervisor.volume())
  if not removed then -- a session of another run uses it: the engine keeps it
    t.eq(err.kind, "conflict")
    return
  end
  local s <close> = assert(sandbox.open{})
  t.eq(assert(s:exec("echo works")).stdout, "works\n")
  t.ok(client:call("GET", "/volumes/" .. supervisor.volume()), "filled again")
end)

local box = assert(sandbox.open{})

t.test("a host secret in a command, code or input is refused", function()
  local secret = t.env("OPENAI_API_KEY")
  local r, err = box:exec("echo " .. secret)
  t.eq(r, nil)
  t.no_match(is_error(err, "refused").message, secret)
  t.match(err.message, "OPENAI_API_KEY")
  r, err = box:python("key = '" .. secret .. "'")
  t.eq(r, nil); is_error(err, "refused")
  r, err = box:exec("cat", {stdin = secret})
  t.eq(r, nil); is_error(err, "refused")
end)

t.test("workspace misses are not_found values", function()
  local v, err = box:get("missing.txt")
  t.eq(v, nil)
  t.match(is_error(err, "not_found").message, "missing.txt")
  v, err = box:extract("missing-dir", work .. "/out")
  t.eq(v, nil)
  t.match(is_error(err, "not_found").message, "missing%-dir")
end)

t.test("a closed box: every method answers nil and a closed error; close again is fine", function()
  local s = assert(sandbox.open{})
  assert(s:close())
  t.match(tostring(s), "closed")
  local calls = {
    exec = function() return s:exec("true") end,
    python = function() return s:python("1") end,
    put = function() return s:put("a.txt", "x") end,
    get = function() return s:get("a.txt") end,
    extract = function() return s:extract("output", work .. "/closed") end,
    snapshot = function() return s:snapshot(work .. "/closed.tar") end,
  }
  for name, call in pairs(calls) do
    local v, err = call()
    t.eq(v, nil, name)
    t.match(is_error(err, "closed").message, s.session, name)
  end
  t.eq(s:close(), true, "close is idempotent")
  do
    local scoped <close> = assert(sandbox.open{})
    t.ok(assert(scoped:exec("true")))
    s = scoped
  end
  local _, err = s:exec("true")
  is_error(err, "closed")
end)

t.test("misuse still raises, naming the argument", function()
  t.raises(function() box:exec(42) end, "cmd")
  t.raises(function() box:python(42) end, "code")
  t.raises(function() box:put("a.txt", 42) end, "data")
  t.raises(function() sandbox.open{memory = "lots"} end, "memory")
end)

box:close()
return t.done()

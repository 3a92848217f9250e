-- The checks tests/e2e/engines_test.sh runs against three extra Docker
-- engines on this machine (tests/engines.sh: each its own data root, exec
-- root and socket; the main engine is never touched). Engines a and b hold
-- the busybox test image, c does not. Settings (--set):
--   a, b, c      the engines' addresses (unix://...)
--   b_name       b's name, for `tests/engines.sh kill` (the last check kills it)
--   label        the luagent.test label of every session made here
--   tls          the TLS engine's address (tcp://127.0.0.1:PORT), when it runs
--   certs        its certificates' folder (ca.pem, cert.pem, key.pem)
--   wrong_ca     a CA that did not sign its certificate
package.path = "tests/lua/?.lua;" .. package.path
local t = require "helper"
local sandbox, engine = luagent.sandbox, require "luagent.engine_client"
local s = luagent.settings
local BUSYBOX = "luagent-busybox:test"
local A, B, C = s.a, s.b, s.c

local clients = {}
for _, host in ipairs({A, B, C}) do clients[host] = assert(engine.connect{host = host}) end

local function small(engines, extra)
  local o = {image = BUSYBOX, memory = "32m", tmp_size = "8m", workspace_size = "8m", engines = engines,
             labels = {["luagent.test"] = s.label}, capacity_wait = 0}
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

local function open(o)
  local box, err = sandbox.open(o)
  if not box then error("sandbox.open: " .. tostring(err), 2) end
  return box
end

-- How many sessions of this test each engine holds (containers, by label).
local function held(host)
  local found = assert(clients[host]:call("GET", "/containers/json",
    nil, {query = {all = 1, filters = {label = {"luagent.test=" .. s.label}}}}))
  return #found
end

local function on(boxes, host)
  local n = 0
  for _, box in ipairs(boxes) do
    if box.engine == host and not box.closed then n = n + 1 end
  end
  return n
end

local function close_all(boxes)
  for _, box in ipairs(boxes) do box:close() end
end

local function runs(box)
  local r, err = box:exec("echo $((6 * 7))")
  if not r then error(("the box on %s did not run a command: %s"):format(box.engine, err), 2) end
  t.eq(r.stdout, "42\n")
end

local function plain(text)
  return (text:gsub("%p", "%%%0"))
end

t.test("placement spreads sessions by load: equal capacities get equal shares, a freed slot is used again", function()
  local boxes = {}
  for i = 1, 4 do boxes[i] = open(small({A .. "#2", B .. "#2"})) end
  t.eq(on(boxes, A), 2); t.eq(on(boxes, B), 2)
  t.eq(held(A), 2, "the engine itself holds them"); t.eq(held(B), 2)
  for _, box in ipairs(boxes) do runs(box) end
  local first_a
  for _, box in ipairs(boxes) do if box.engine == A then first_a = first_a or box end end
  first_a:close()
  boxes[5] = open(small({A .. "#2", B .. "#2"}))
  t.eq(boxes[5].engine, A, "the engine with room")
  close_all(boxes)
  t.eq(held(A) + held(B), 0, "closed boxes are removed from their engine")
end)

t.test("capacity respected: shares follow the capacities; a full set fails the open at once with capacity_wait = 0, "
  .. "naming the engines, and waits for a session to close with capacity_wait > 0", function()
  local boxes = {}
  for i = 1, 6 do boxes[i] = open(small({A .. "#4", B .. "#2"})) end
  t.eq(on(boxes, A), 4); t.eq(on(boxes, B), 2)
  local box, err = sandbox.open(small({A .. "#4", B .. "#2"}))
  t.eq(box, nil)
  t.eq(err.kind, "capacity")
  t.match(err.message, plain(A .. " holds 4 of 4"))
  t.match(err.message, plain(B .. " holds 2 of 2"))
  t.eq(held(A) + held(B), 6, "the refused open made nothing")
  local on_b
  for _, b in ipairs(boxes) do if b.engine == B then on_b = b end end
  local closer = luagent.spawn(function() luagent.sleep(1); on_b:close() end)
  local started = luagent.now()
  box = open(small({A .. "#4", B .. "#2"}, {capacity_wait = 30}))
  local waited = luagent.now() - started
  closer:wait()
  t.eq(box.engine, B, "the slot that was freed")
  t.ok(waited >= 0.9 and waited < 10, ("waited %.1f s for the close after 1 s"):format(waited))
  runs(box)
  boxes[#boxes + 1] = box
  close_all(boxes)
end)

t.test("an image missing on one engine is copied there from one that has it, once", function()
  local client = clients[C]
  t.eq(client:call("GET", "/images/" .. BUSYBOX .. "/json"), nil, "engine c starts without " .. BUSYBOX)
  local boxes = {open(small({A .. "#1", C .. "#2"}))}
  t.eq(boxes[1].engine, A, "the engine that has the image first")
  local tasks = {}
  for i = 1, 2 do tasks[i] = luagent.spawn(function() return open(small({A .. "#1", C .. "#2"})) end) end
  for i = 1, 2 do boxes[#boxes + 1] = tasks[i]:wait() end
  t.eq(on(boxes, C), 2, "the full engine's neighbour, after a copy")
  t.ok(client:call("GET", "/images/" .. BUSYBOX .. "/json"), "engine c has the image now")
  for _, box in ipairs(boxes) do runs(box) end
  close_all(boxes)
end)

t.test("a warm pool over two engines: placed like sessions, its sessions count against the capacities", function()
  local function pooled(size)
    local o = small({A .. "#2", B .. "#2"})
    o.capacity_wait, o.size = nil, size
    return o
  end
  local big, err = sandbox.pool(pooled(5))
  t.eq(big, nil)
  t.eq(err.kind, "config")
  t.match(err.message, "^sandbox%.pool: size = 5: more sessions than the capacity of its engines %(4 in all")
  t.match(err.message, plain(A .. ": capacity 2"))
  t.eq(held(A) + held(B), 0, "nothing started")
  local one = small({A .. "#2"})
  one.capacity_wait, one.size = nil, 3
  big, err = sandbox.pool(one)
  t.eq(big, nil)
  t.match(err.message, "^sandbox%.pool: size = 3: more sessions than the capacity of the Docker engine at "
    .. plain(A) .. " %(2%)")
  t.eq(held(A) + held(B), 0, "nothing started")
  local warm <close> = assert(sandbox.pool(pooled(4)))
  t.eq(held(A), 2); t.eq(held(B), 2)
  local cold
  cold, err = sandbox.open(small({A .. "#2", B .. "#2"}, {memory = "48m"}))
  t.eq(cold, nil, "a cold open of another spec finds no room")
  t.eq(err.kind, "capacity")
  local box <close> = open(small({A .. "#2", B .. "#2"}))
  t.eq(box.pooled, true)
  runs(box)
  warm:close()
  t.eq(held(A) + held(B), 1, "the pool drained; the box it handed out is the box's")
end)

t.test("an engine that does not answer: skipped with one line, and alone it is one error naming it", function()
  local missing = "unix:///nonexistent/luagent-engine.sock"
  local box <close> = open(small({missing, A}))
  t.eq(box.engine, A)
  local none, err = sandbox.open(small({missing}))
  t.eq(none, nil)
  t.eq(err.kind, "docker_unreachable")
  t.match(err.message, plain(missing))
  none, err = sandbox.open(small({missing, "unix:///nonexistent/second.sock"}))
  t.eq(none, nil)
  t.eq(err.kind, "docker_unreachable")
  t.match(err.message, "^no engine %(sandbox%.open: engines%) answers: ")
  t.match(err.message, "second%.sock")
end)

t.test("TLS files missing: one error naming the engine and the file, nothing started", function()
  local box, err = sandbox.open(small({A, {host = "tcp://127.0.0.1:9", tls = "/nonexistent/certs"}}))
  t.eq(box, nil)
  t.eq(err.kind, "config")
  t.match(err.message, plain("the Docker engine at tcp://127.0.0.1:9 is spoken to over TLS, but the CA certificate "
    .. "/nonexistent/certs/ca.pem does not exist (TLS: tls = \"/nonexistent/certs\")"))
  t.eq(held(A), 0)
end)

-- Sessions on a tcp:// engine need the supervisor's channel over TCP (the
-- attach over libcurl); a build without it refuses them, saying so.
local function tls_sessions()
  local box, err = sandbox.open(small({{host = s.tls, tls = s.certs}}))
  if box then box:close() return true end
  return not err.message:find("on a unix socket", 1, true), err
end

if s.tls and not tls_sessions() then
  print("ok - engines_checks: sessions on an engine over TLS # SKIP the supervisor's channel over TCP is not in this "
    .. "build (it refuses tcp:// engines)")
elseif s.tls then
  t.test("an engine over TCP with TLS beside a socket: sessions are placed there and run their commands", function()
    local tls = {host = s.tls, tls = s.certs, capacity = 2}
    local boxes = {}
    for i = 1, 3 do boxes[i] = open(small({A .. "#1", tls})) end
    t.eq(on(boxes, s.tls), 2)
    for _, box in ipairs(boxes) do runs(box) end
    close_all(boxes)
    local client = assert(engine.connect{host = s.tls, tls = {ca_file = s.certs .. "/ca.pem",
      cert_file = s.certs .. "/cert.pem", key_file = s.certs .. "/key.pem"}})
    t.ok(client:call("GET", "/images/" .. BUSYBOX .. "/json"), "the image was copied there over TLS")
    t.eq(#assert(client:call("GET", "/containers/json", nil,
      {query = {all = 1, filters = {label = {"luagent.test=" .. s.label}}}})), 0, "nothing left there")
  end)

  t.test("wrong TLS files: one error naming the engine, nothing started", function()
    local box, err = sandbox.open(small({{host = s.tls, tls = {ca = s.wrong_ca, cert = s.certs .. "/cert.pem",
                                                                 key = s.certs .. "/key.pem"}}}))
    t.eq(box, nil)
    t.eq(err.kind, "tls")
    t.match(err.message, plain(s.tls))
    t.match(err.message, plain(s.wrong_ca))
  end)
end

t.test("an engine killed mid-run: its sessions fail naming it, new sessions go to the others, the run goes on",
  function()
  local set = {A .. "#3", B .. "#3", C .. "#3"}
  local boxes = {}
  for i = 1, 3 do boxes[i] = open(small(set)) end
  t.eq(on(boxes, A), 1); t.eq(on(boxes, B), 1); t.eq(on(boxes, C), 1)
  os.execute("sh tests/engines.sh kill " .. s.b_name)
  for _, box in ipairs(boxes) do
    if box.engine == B then
      local r, err = box:exec("echo 1")
      t.eq(r, nil)
      t.eq(err.kind, "docker_unreachable")
      t.match(err.message, plain(B))
    else
      runs(box)
    end
  end
  for _ = 1, 3 do
    local box = open(small(set))
    t.ok(box.engine ~= B, "a new session went to the killed engine")
    runs(box)
    boxes[#boxes + 1] = box
  end
  local kept = 0
  for _, box in ipairs(boxes) do
    local ok, err = box:close()
    if not ok then
      kept = kept + 1
      t.match(err.message, plain(B))
    end
  end
  t.eq(kept, 1, "the dead engine's session could not be removed, and said so")
  t.eq(held(A) + held(C), 0)
end)

return t.done()

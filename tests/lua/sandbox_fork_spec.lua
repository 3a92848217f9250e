-- needs: docker
-- box:fork(n [, opts]) (luagent.sandbox.fork): n sessions of the box's spec,
-- each starting with a byte-exact copy of its /workspace and /tmp, streamed
-- from the source's supervisor into each fork's; independent afterwards;
-- served by a warm pool of that spec; python starts clean; limits said
-- before copying; a failure half way closes every fork it opened.
-- Sessions are small and labelled with this spec's tag.
local t = require "helper"
local sandbox, sys = luagent.sandbox, luagent.sys
local events = require "luagent.events"

local client = assert(sandbox.engine())
local TAG = "fork-" .. sys.random_hex(4)

local function small(extra)
  local o = {memory = "128m", tmp_size = "32m", workspace_size = "96m", labels = {["luagent.test"] = TAG}}
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

local function containers()
  local found = assert(client:call("GET", "/containers/json", nil,
    {query = {all = 1, filters = {label = {"luagent.test=" .. TAG}}}}))
  return #found
end

local function sh(box, cmd)
  local r = assert(box:exec(cmd))
  t.eq(r.exit_code, 0, cmd .. ": " .. r.stderr)
  return r.stdout
end

local function close_all(list)
  for _, b in ipairs(list or {}) do b:close() end
end

-- Every file, folder and link under the paths with its type, mode, size,
-- target and sha256: two sessions with the same listing hold the same bytes.
local LISTING = "cd %s && find . -printf '%%y %%m %%s %%l %%p\\n' | sort && "
  .. "find . -type f -print0 | sort -z | xargs -0 -r sha256sum"
local function listing(box, path) return sh(box, LISTING:format(path)) end

local PREPARE = table.concat({
  "mkdir -p data/deep/er empty/inner && printf 'hello\\n' > data/a.txt && chmod 640 data/a.txt",
  "printf '#!/bin/sh\\necho run\\n' > run.sh && chmod 755 run.sh && chmod 700 data/deep",
  "ln -s a.txt data/link && ln -s ../run.sh data/deep/up && ln -s /usr/bin/python3 py",
  "ln data/a.txt data/hard && head -c 30000000 /dev/urandom > big.bin && : > zero.txt",
  "mkdir -p /tmp/.local/lib && echo cached > /tmp/.local/lib/mod.py && touch -d 2001-02-03 data/a.txt",
}, " && ")

t.test("forks hold a byte-exact copy of /workspace and /tmp (modes, links, empty folders, a big file)", function()
  local box <close> = assert(sandbox.open(small()))
  sh(box, PREPARE)
  local forks = assert(box:fork(2))
  t.eq(#forks, 2, "two forks")
  for i, f in ipairs(forks) do
    t.ok(f.session ~= box.session, "fork " .. i .. " is another session")
    t.eq(listing(f, "/workspace"), listing(box, "/workspace"), "fork " .. i .. ": /workspace")
    t.eq(listing(f, "/tmp"), listing(box, "/tmp"), "fork " .. i .. ": /tmp")
    t.eq(sh(f, "stat -c %Y data/a.txt"), sh(box, "stat -c %Y data/a.txt"), "mtimes kept")
    t.eq(sh(f, "stat -c %h data/hard"), "2\n", "a hard link stays one")
    t.eq(sh(f, "./run.sh"), "run\n", "a script stays runnable")
  end
  close_all(forks)
end)

t.test("forks are independent of each other and of the source afterwards", function()
  local box <close> = assert(sandbox.open(small()))
  sh(box, "echo base > f.txt")
  local forks = assert(sandbox.fork(box, 2))
  sh(forks[1], "echo one > f.txt && echo new > only1")
  sh(box, "echo source > f.txt")
  t.eq(sh(forks[2], "cat f.txt; ls"), "base\nf.txt\n", "fork 2 saw neither")
  t.eq(sh(forks[1], "cat f.txt"), "one\n")
  t.eq(sh(box, "cat f.txt; ls"), "source\nf.txt\n", "the source did not see fork 1")
  forks[1]:close()
  t.eq(sh(forks[2], "cat f.txt"), "base\n", "closing one fork leaves the other")
  sh(box, "true")
  close_all(forks)
end)

t.test("box:python in a fork starts clean; the files are there", function()
  local box <close> = assert(sandbox.open(small()))
  assert(box:python("secret_value = 41\nopen('state.txt', 'w').write('kept')"))
  local forks = assert(box:fork(1))
  local r = assert(forks[1]:python("print('secret_value' in globals(), open('state.txt').read())"))
  t.eq(r.stdout, "False kept\n", "no variable, the file")
  t.eq(assert(box:python("print(secret_value + 1)")).stdout, "42\n", "the source's interpreter is untouched")
  close_all(forks)
end)

t.test("a warm pool of the spec serves the forks, and the trace says sandbox_fork", function()
  local opts = small({labels = {["luagent.test"] = TAG, pool = "fork"}})
  local box <close> = assert(sandbox.open(opts))
  opts.size = 2
  local warm <close> = assert(sandbox.pool(opts))
  local seen = {}
  local function watch(ev) if ev.type == "sandbox_fork" then seen[#seen + 1] = ev end end
  events.subscribe(watch)
  sh(box, "echo pooled > p.txt")
  local forks = assert(box:fork(2))
  events.unsubscribe(watch)
  for i, f in ipairs(forks) do
    t.ok(f.pooled, "fork " .. i .. " came from the pool")
    t.eq(sh(f, "cat p.txt"), "pooled\n")
  end
  t.eq(warm:stats().taken, 2, "the pool handed out two")
  t.eq(#seen, 1, "one sandbox_fork event")
  t.eq(seen[1].session, box.session)
  t.eq(seen[1].n, 2)
  t.eq(seen[1].pooled, 2)
  t.ok(seen[1].bytes > 0 and seen[1].ms >= 0, "bytes and ms")
  t.eq(#seen[1].sessions, 2)
  t.match(luagent.trace.describe(seen[1]), "^sandbox " .. box.session .. " forked into 2 sessions %(.+; 2 from a warm "
    .. "pool%): %d+%.%d MB copied in %d+ ms$")
  local page = require("luagent.trace_page").render({seen[1]})
  t.match(page, "forked into 2 sessions", "the trace page shows it")
  close_all(forks)
end)

t.test("a source bigger than a fork's workspace is refused before anything opens", function()
  local box <close> = assert(sandbox.open(small()))
  sh(box, "head -c 20000000 /dev/zero > fill.bin")
  local before = containers()
  local seen
  local function watch(ev) if ev.type == "sandbox_fork" then seen = ev end end
  events.subscribe(watch)
  local forks, err = box:fork(2, {workspace_size = "8m"})
  events.unsubscribe(watch)
  t.match(seen and seen.error or "", "^box:fork: the source's /workspace holds", "the trace says why")
  t.match(luagent.trace.describe(seen), "^sandbox " .. box.session .. " could not fork: box:fork: ")
  t.eq(forks, nil)
  t.eq(err.kind, "too_large")
  t.match(err.message, "/workspace holds 19%.%d MiB but a fork's holds 8%.0 MiB %(workspace_size = 8m%)")
  t.match(err.message, "raise workspace_size")
  t.eq(containers(), before, "no fork was opened")
end)

t.test("a file over the source's max_extract fails the fork, and nothing is left", function()
  local box <close> = assert(sandbox.open(small({max_extract = 1000000})))
  sh(box, "head -c 2000000 /dev/zero > over.bin")
  local before = containers()
  local forks, err = box:fork(2)
  t.eq(forks, nil)
  t.eq(err.kind, "too_large")
  t.match(err.message, "over%.bin")
  t.match(err.message, "max_extract")
  t.eq(containers(), before, "the forks were closed")
  t.eq(sh(box, "ls"), "over.bin\n", "the source goes on")
end)

t.test("a fork that cannot open half way: the others are closed, the error names it", function()
  local host = os.getenv("DOCKER_HOST") or "unix:///var/run/docker.sock"
  local box <close> = assert(sandbox.open(small({engines = {host .. "#3"}, capacity_wait = 0})))
  sh(box, "echo x > x")
  local before = containers()
  local forks, err = box:fork(4)
  t.eq(forks, nil)
  t.match(err.message, "^box:fork: fork %d of 4 could not open: ")
  t.eq(containers(), before, "the forks that opened were closed")
  local again = assert(box:fork(2), "two fit")
  t.eq(sh(again[2], "cat x"), "x\n")
  close_all(again)
end)

t.test("bad arguments raise; a closed source is an error", function()
  local box = assert(sandbox.open(small()))
  t.raises(function() box:fork(0) end, "n = 0: say how many forks")
  t.raises(function() box:fork(1.5) end, "a whole number")
  t.raises(function() box:fork(1, {manifest = {}}) end, "opts.manifest is not allowed")
  t.raises(function() sandbox.fork({}, 1) end, "box must be a box")
  box:close()
  local forks, err = box:fork(1)
  t.eq(forks, nil)
  t.eq(err.kind, "closed")
end)

t.eq(containers(), 0, "nothing of this spec is left")
return t.done()

-- Tasks and the scheduler.
local t = require "helper"

t.test("spawned tasks run concurrently and return their results", function()
  local started = luagent.now()
  local tasks = {}
  for i = 1, 10 do
    tasks[i] = luagent.spawn(function(n) luagent.sleep(0.3); return n * 2, "second" end, i)
  end
  local results, errors = luagent.wait_all(tasks)
  t.eq(errors, nil)
  for i = 1, 10 do t.eq(results[i], i * 2) end
  local a, b = tasks[3]:wait()
  t.eq(a, 6); t.eq(b, "second")
  t.lt(luagent.now() - started, 0.6, "ten 0.3 s sleeps overlap")
end)

t.test("an error in a task is returned by wait, with its position", function()
  local task = luagent.spawn(function() error("boom") end)
  local value, err = task:wait()
  t.eq(value, nil)
  t.match(err, "loop_spec.lua:%d+: boom")
  t.eq(task:status(), "failed")
end)

t.test("error tables keep their fields through wait", function()
  local task = luagent.spawn(function() error({kind = "custom", message = "m", extra = 7}) end)
  local _, err = task:wait()
  t.eq(err.kind, "custom"); t.eq(err.extra, 7)
end)

t.test("wait_all reports which tasks failed", function()
  local tasks = {
    luagent.spawn(function() return "a" end),
    luagent.spawn(function() error("second failed", 0) end),
    luagent.spawn(function() return "c" end),
  }
  local results, errors = luagent.wait_all(tasks)
  t.eq(results[1], "a"); t.eq(results[2], nil); t.eq(results[3], "c")
  t.eq(errors[2], "second failed"); t.eq(errors[1], nil)
end)

t.test("map keeps order and bounds concurrency", function()
  local running, peak = 0, 0
  local started = luagent.now()
  local results, errors = luagent.map({1, 2, 3, 4, 5, 6}, function(x)
    running = running + 1
    peak = math.max(peak, running)
    luagent.sleep(0.1)
    running = running - 1
    return x * x
  end, {concurrency = 2})
  t.eq(errors, nil)
  t.same(results, {1, 4, 9, 16, 25, 36})
  t.eq(peak, 2)
  local took = luagent.now() - started
  t.ok(took >= 0.29 and took < 0.6, ("three rounds of 0.1 s took %.2f s"):format(took))
end)

t.test("map collects errors without stopping the other items", function()
  local results, errors = luagent.map({1, 2, 3}, function(x)
    if x == 2 then error("two", 0) end
    return x
  end)
  t.eq(results[1], 1); t.eq(results[3], 3)
  t.eq(errors[2], "two")
end)

t.test("a cancelled task stops at its wait and runs its <close> handlers", function()
  local closed = false
  local task = luagent.spawn(function()
    local _guard <close> = setmetatable({}, {__close = function() closed = true end})
    luagent.sleep(10)
    return "not reached"
  end)
  luagent.sleep(0.05)
  local started = luagent.now()
  task:cancel()
  local value, err = task:wait()
  t.eq(value, nil)
  t.eq(err.kind, "cancelled")
  t.ok(closed, "the <close> handler ran")
  t.lt(luagent.now() - started, 1)
end)

t.test("a <close> handler can itself wait while its task unwinds an error", function()
  local log = {}
  local task = luagent.spawn(function()
    local _guard <close> = setmetatable({}, {__close = function()
      luagent.sleep(0.05) -- cooperative I/O during unwinding
      log[#log + 1] = "closed"
    end})
    error("fail after opening", 0)
  end)
  local _, err = task:wait()
  t.eq(err, "fail after opening")
  t.same(log, {"closed"})
end)

t.test("tasks waiting on each other are reported as a deadlock, not a hang", function()
  local a, b
  a = luagent.spawn(function() luagent.sleep(0.01); return b:wait() end)
  b = luagent.spawn(function() luagent.sleep(0.01); return a:wait() end)
  local _, err = a:wait()
  t.ok(err, "a deadlock error")
  t.match(tostring(err.kind or err), "deadlock")
end)

t.test("a task takes and returns hundreds of values", function()
  local task = luagent.spawn(function(...) return select("#", ...), table.unpack({}, 1, 300) end,
                             table.unpack({}, 1, 250))
  local results = table.pack(task:wait())
  t.eq(results.n, 301); t.eq(results[1], 250)
end)

t.test("yield lets other ready tasks run", function()
  local order = {}
  local x = luagent.spawn(function() order[#order + 1] = "x1"; luagent.yield(); order[#order + 1] = "x2" end)
  local y = luagent.spawn(function() order[#order + 1] = "y1"; luagent.yield(); order[#order + 1] = "y2" end)
  luagent.wait_all({x, y})
  t.same(order, {"x1", "y1", "x2", "y2"})
end)

t.test("primitives work from a plain coroutine inside a task (blocking there)", function()
  local co = coroutine.wrap(function()
    luagent.sleep(0.05)
    coroutine.yield("slept")
    return "done"
  end)
  t.eq(co(), "slept")
  t.eq(co(), "done")
end)

t.test("a cancelled task's error says why: task:cancel()", function()
  local waiting = luagent.spawn(function() luagent.sleep(10) end)
  luagent.yield() -- it is waiting now
  waiting:cancel()
  local _, err = waiting:wait()
  t.eq(err.kind, "cancelled")
  t.match(err.message, "task:cancel%(%)")
  t.match(tostring(err), "^cancelled: ")
  local fresh = luagent.spawn(function() luagent.sleep(10) end)
  fresh:cancel() -- not started yet: it stops at its first wait
  local _, err2 = fresh:wait()
  t.match(err2.message, "task:cancel%(%)")
end)

t.test("a closed task handle raises 'task is closed' and never crashes", function()
  local task = luagent.spawn(function() return 1 end)
  t.eq(task:wait(), 1)
  task:close()
  task:close() -- idempotent
  for _, method in ipairs({"wait", "cancel", "status"}) do
    local ok, err = pcall(task[method], task)
    t.eq(ok, false, method)
    t.match(err, "task is closed", method)
  end
  t.match(tostring(task), "^task %d+ %(closed%)$")
  t.match(tostring(luagent.spawn(function() end)), "^task %d+ %(ready%)$")
end)

t.test("closing an unfinished task cancels it, as does leaving its <close> scope", function()
  local reason
  do
    local _task <close> = luagent.spawn(function()
      local _guard <close> = setmetatable({}, {__close = function(_, err) reason = err end})
      luagent.sleep(10)
    end)
    luagent.sleep(0.01)
  end
  luagent.sleep(0.01) -- it unwinds
  t.eq(reason and reason.kind, "cancelled")
  t.match(reason.message, "task:close%(%)")
end)

t.test("a task whose handle is dropped still runs to its end (no finalizer cancels it)", function()
  local done = false
  luagent.spawn(function() luagent.sleep(0.05); done = true end)
  collectgarbage(); collectgarbage()
  luagent.sleep(0.1)
  t.ok(done, "the task finished")
end)

t.test("sched.current() is the running task's own handle", function()
  local sched = require "luagent.sched"
  local seen
  local task = luagent.spawn(function() seen = sched.current() end)
  task:wait()
  t.eq(seen, task)
end)

t.test("a task's context: spawn_in gives one, the tasks it spawns inherit it, others have none", function()
  local sched = require "luagent.sched"
  t.eq(sched.context(), nil, "outside any context")
  local ctx = {name = "run A"}
  local seen = {}
  local task = sched.spawn_in(ctx, function(x)
    seen.own = sched.context()
    local child = sched.spawn(function()
      sched.sleep(0.01)
      local grandchild = sched.spawn(function() return sched.context() end)
      return sched.context(), grandchild:wait()
    end)
    local detached = sched.spawn_in(nil, function() return sched.context() end)
    local other = sched.spawn_in("B", function() sched.yield() return sched.context() end)
    seen.child, seen.grandchild = child:wait()
    seen.detached, seen.other = detached:wait(), other:wait()
    seen.after = sched.context()
    return x
  end, 42)
  t.eq(task:wait(), 42, "spawn_in passes the arguments")
  t.eq(seen.own, ctx); t.eq(seen.child, ctx); t.eq(seen.grandchild, ctx)
  t.eq(seen.detached, nil, "spawn_in(nil, ...) has no context")
  t.eq(seen.other, "B"); t.eq(seen.after, ctx, "a task's context stays while others run")
  t.eq(sched.context(), nil)
  t.eq(luagent.spawn(function() return sched.context() end):wait(), nil, "a plain task has none")
  t.raises(function() sched.spawn_in(ctx, "not a function") end, "function expected")
end)

t.test("a background task does not keep the run going: the run ends, and its exit hooks run", function()
  local fs, process = require "luagent.fs", require "luagent.process"
  local dir = assert(fs.temp_dir("luagent-background"))
  assert(fs.write(dir .. "/r.lua", [[
local sched = require "luagent.sched"
local server = sched.spawn(function() sched.sleep(3600) end):background()
luagent.at_exit(function() print("exit hook: server " .. server:status()) end)
print("main done")
]]))
  local started = luagent.now()
  local proc = assert(process.spawn{argv = {t.env("LUAGENT"), "run", "-q", dir .. "/r.lua"}, stdout = "pipe"})
  local out = ""
  repeat local chunk = proc:read("stdout"); out = out .. (chunk or "") until not chunk
  t.eq(proc:wait(30), 0)
  t.lt(luagent.now() - started, 20, "it did not wait for the hour")
  t.eq(out, "main done\nexit hook: server waiting\n")
  fs.remove(dir)
end)

return t.done()

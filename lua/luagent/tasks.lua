-- luagent.tasks: waiting for many tasks at once; the global has these as
-- luagent.wait_all and luagent.map (loaded on first use).
--
--   luagent.wait_all(tasks) -> results, errors
--   luagent.map(list, fn, {concurrency = 8}) -> results, errors
-- A task's error is kept as the task raised it. A cancelled run (Ctrl-C)
-- is not an item's error: it goes on up.
local sched = require "luagent.sched"

local tasks = {}

-- Waits for every task. results[i] is task i's first result (nil if it
-- failed); errors is nil when all succeeded, else errors[i] = task i's error.
function tasks.wait_all(list)
  local results, errors = {}, nil
  for i, task in ipairs(list) do
    local value, err = task:wait()
    if value == nil and err ~= nil then
      errors = errors or {}
      errors[i] = err
    else
      results[i] = value
    end
  end
  return results, errors
end

local function is_cancel(err)
  return type(err) == "table" and err.kind == "cancelled"
end

-- Calls fn(item, i) for every item, at most `concurrency` at once.
-- Returns results (in list order) and errors (nil when none failed).
function tasks.map(list, fn, opts)
  local n = #list
  local concurrency = math.max(1, math.min((opts and opts.concurrency) or 8, n))
  local results, errors = {}, nil
  local next_index = 0
  local function worker()
    while true do
      next_index = next_index + 1
      local i = next_index
      if i > n then return end
      local ok, value = pcall(fn, list[i], i)
      if ok then
        results[i] = value
      elseif is_cancel(value) then
        error(value, 0)
      else
        errors = errors or {}
        errors[i] = value
      end
    end
  end
  local workers = {}
  for w = 1, concurrency do workers[w] = sched.spawn(worker) end
  for _, w in ipairs(workers) do
    local ok, err = w:wait()
    if ok == nil and err ~= nil then error(err, 0) end
  end
  return results, errors
end

return tasks

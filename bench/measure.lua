-- What every benchmark measures with: the median of a list of figures and the
-- seconds a function takes. (bench/run runs each bench/NAME.lua as a recipe,
-- so `require "measure"` finds this file beside it.)
local measure = {}

-- The median of xs (0 for none); xs is left as it was.
function measure.median(xs)
  if #xs == 0 then return 0 end
  local s = {table.unpack(xs)}
  table.sort(s)
  local n = #s
  return n % 2 == 1 and s[(n + 1) // 2] or (s[n // 2] + s[n // 2 + 1]) / 2
end

-- Seconds fn() took, by the monotonic clock.
function measure.timed(fn)
  local started = luagent.now()
  fn()
  return luagent.now() - started
end

return measure

-- luagent.diff: how two texts, or two JSON-like values, differ.
--
-- The functions: lua/meta/diff.lua. unified() is line-based and minimal
-- (Myers' O(ND) algorithm, linear space), in the format of `diff -u`; binary
-- texts (a NUL byte), texts past MAX_BYTES or MAX_LINES, and pairs that would
-- take past MAX_WORK steps give one line naming both sizes and sha256s
-- instead. values() walks keys in order, integer keys first.
local json = require "luagent.json"
local excerpt = require("luagent.text").excerpt

local diff = {}

diff.MAX_BYTES = 16 * 1024 * 1024
diff.MAX_LINES = 200000
diff.MAX_WORK = 10000000

-- The lines of a text as interned numbers, and the line texts by number. A
-- line keeps its "\n", so a last line without one differs from the same line
-- with one, as in `diff`.
local function intern(text, ids, keys)
  local out = {}
  for line in text:gmatch("[^\n]*\n?") do
    if line == "" then break end
    local id = ids[line]
    if not id then
      id = #keys + 1
      ids[line], keys[id] = id, line
    end
    out[#out + 1] = id
  end
  return out
end

-- Raised (as this table) when the work budget is spent.
local TOO_LONG = {}

-- Myers' middle snake of A[alo+1..ahi] against B[blo+1..bhi] (both non-empty,
-- first and last lines different): x, y, u, v with the snake from (x, y) to
-- (u, v) in absolute positions. Vf/Vb are scratch arrays indexed by diagonal
-- + off; s.work counts steps against s.budget.
local function middle_snake(s, alo, ahi, blo, bhi)
  local A, B, Vf, Vb, off = s.A, s.B, s.Vf, s.Vb, s.off
  local n, m = ahi - alo, bhi - blo
  local delta = n - m
  local odd = delta % 2 ~= 0
  Vf[off + 1], Vb[off + delta - 1] = 0, n
  for d = 0, (n + m + 1) // 2 do
    s.work = s.work + 2 * d + 2
    if s.work > s.budget then error(TOO_LONG) end
    -- forward paths: furthest x on each diagonal k = x - y
    for k = d, -d, -2 do
      local x
      if k == -d or (k ~= d and Vf[off + k - 1] < Vf[off + k + 1]) then x = Vf[off + k + 1]
      else x = Vf[off + k - 1] + 1 end
      local y = x - k
      local x0, y0 = x, y
      while x < n and y < m and A[alo + x + 1] == B[blo + y + 1] do x, y = x + 1, y + 1 end
      s.work = s.work + (x - x0)
      Vf[off + k] = x
      if odd and k >= delta - (d - 1) and k <= delta + (d - 1) and x >= Vb[off + k] then
        return alo + x0, blo + y0, alo + x, blo + y
      end
    end
    -- backward paths: smallest x on each diagonal, from (n, m)
    for k = delta + d, delta - d, -2 do
      local x
      if k == delta + d or (k ~= delta - d and Vb[off + k + 1] - 1 >= Vb[off + k - 1]) then x = Vb[off + k - 1]
      else x = Vb[off + k + 1] - 1 end
      local y = x - k
      local x0, y0 = x, y
      while x > 0 and y > 0 and A[alo + x] == B[blo + y] do x, y = x - 1, y - 1 end
      s.work = s.work + (x0 - x)
      Vb[off + k] = x
      if not odd and k >= -d and k <= d and x <= Vf[off + k] then
        return alo + x, blo + y, alo + x0, blo + y0
      end
    end
  end
  error("luagent.diff: no middle snake (a bug)")
end

-- Marks the changed lines of A[alo+1..ahi] and B[blo+1..bhi] in s.ca / s.cb.
local function compare(s, alo, ahi, blo, bhi)
  local A, B = s.A, s.B
  while alo < ahi and blo < bhi and A[alo + 1] == B[blo + 1] do alo, blo = alo + 1, blo + 1 end
  while alo < ahi and blo < bhi and A[ahi] == B[bhi] do ahi, bhi = ahi - 1, bhi - 1 end
  if alo == ahi then
    for j = blo + 1, bhi do s.cb[j] = true end
  elseif blo == bhi then
    for i = alo + 1, ahi do s.ca[i] = true end
  else
    local x, y, u, v = middle_snake(s, alo, ahi, blo, bhi)
    compare(s, alo, x, blo, y)
    compare(s, u, ahi, v, bhi)
  end
end

-- Slides each run of changed lines of one file (X, changed cx) down as far as
-- equal lines allow, merging runs it meets, then back up to the last place
-- where its end lined up with a change in the other file (cy), so the
-- hunks read as `diff` writes them: a blank line or an `end` kept above an
-- inserted block rather than inside it.
local function slide(X, cx, cy, from, n)
  local i, j = from, from -- i in X; j the line of the other file matched with X[i]
  while true do
    while i <= n and not cx[i] do
      while cy[j] do j = j + 1 end
      i, j = i + 1, j + 1
    end
    if i > n then return end
    local first = i
    while cx[i] do i = i + 1 end
    while cy[j] do j = j + 1 end
    -- the run is X[first..i-1]; j is the other file's line after its changes
    local length, lined_up
    repeat
      length = i - first
      -- up while the line above the run equals the run's last line
      while first > from and X[first - 1] == X[i - 1] do
        first, i = first - 1, i - 1
        cx[first], cx[i] = true, false
        while first > from and cx[first - 1] do first = first - 1 end
        j = j - 1
        while cy[j] do j = j - 1 end
      end
      lined_up = cy[j - 1] and i or nil
      -- down while the run's first line equals the line below the run
      while i <= n and X[first] == X[i] do
        cx[first], cx[i] = false, true
        first, i = first + 1, i + 1
        while cx[i] do i = i + 1 end
        j = j + 1
        while cy[j] do
          j = j + 1
          lined_up = i
        end
      end
    until i - first == length
    while lined_up and lined_up < i do
      first, i = first - 1, i - 1
      cx[first], cx[i] = true, false
      j = j - 1
      while cy[j] do j = j - 1 end
    end
  end
end

local function too_big(a, b)
  return #a > diff.MAX_BYTES or #b > diff.MAX_BYTES or a:find("\0", 1, true) or b:find("\0", 1, true)
end

local function count_lines(text)
  local _, n = text:gsub("\n", "")
  return n + ((#text > 0 and text:sub(-1) ~= "\n") and 1 or 0)
end

-- The changed lines of a and b: {A, B, ca, cb, keys} | nil when past the limits.
-- Like `diff`, the lines the texts begin and end with in common are set
-- aside, except the last `horizon` (the context) of each, and a change is
-- never moved into them.
local function changes(a, b, horizon, budget)
  if too_big(a, b) or count_lines(a) > diff.MAX_LINES or count_lines(b) > diff.MAX_LINES then return nil end
  local ids, keys = {}, {}
  local A, B = intern(a, ids, keys), intern(b, ids, keys)
  local n, m = #A, #B
  local lo, ahi, bhi = 0, n, m
  while lo < n and lo < m and A[lo + 1] == B[lo + 1] do lo = lo + 1 end
  while ahi > lo and bhi > lo and A[ahi] == B[bhi] do ahi, bhi = ahi - 1, bhi - 1 end
  lo, ahi, bhi = math.max(0, lo - horizon), math.min(n, ahi + horizon), math.min(m, bhi + horizon)
  -- a line found nowhere in the other text is changed for sure: the search
  -- runs on the others only (faster, and the choice `diff` makes among
  -- equally short diffs)
  local in_a, in_b = {}, {}
  for i = lo + 1, ahi do in_a[A[i]] = true end
  for j = lo + 1, bhi do in_b[B[j]] = true end
  local ca, cb = {}, {}
  local function kept(X, from, to, other, changed)
    local lines, at = {}, {}
    for i = from, to do
      if other[X[i]] then lines[#lines + 1], at[#lines + 1] = X[i], i else changed[i] = true end
    end
    return lines, at
  end
  local A2, a_at = kept(A, lo + 1, ahi, in_b, ca)
  local B2, b_at = kept(B, lo + 1, bhi, in_a, cb)
  local s = {A = A2, B = B2, ca = {}, cb = {}, Vf = {}, Vb = {}, off = #A2 + #B2 + 2, work = 0,
             budget = budget or diff.MAX_WORK}
  local ok, err = pcall(compare, s, 0, #A2, 0, #B2)
  if not ok then
    if err == TOO_LONG then return nil end
    error(err, 0)
  end
  for k in pairs(s.ca) do ca[a_at[k]] = true end
  for k in pairs(s.cb) do cb[b_at[k]] = true end
  slide(A, ca, cb, lo + 1, ahi)
  slide(B, cb, ca, lo + 1, bhi)
  return {A = A, B = B, ca = ca, cb = cb, keys = keys}
end

-- The change groups, in order: {ai, dl, bj, il} = dl lines of A from ai
-- replaced by il lines of B from bj.
local function groups_of(s)
  local out, ca, cb = {}, s.ca, s.cb
  local i, j, n, m = 1, 1, #s.A, #s.B
  while i <= n or j <= m do
    if ca[i] or cb[j] then
      local i0, j0 = i, j
      while ca[i] do i = i + 1 end
      while cb[j] do j = j + 1 end
      out[#out + 1] = {ai = i0, dl = i - i0, bj = j0, il = j - j0}
    else
      i, j = i + 1, j + 1
    end
  end
  return out
end

local function range(start, len)
  if len == 1 then return tostring(start) end
  if len == 0 then return ("%d,0"):format(start - 1) end
  return ("%d,%d"):format(start, len)
end

local function summary(a, b, a_name, b_name, why)
  local sys = require "luagent.sys"
  return ("%s and %s differ (%s): %d bytes, sha256 %s; %d bytes, sha256 %s\n"):format(a_name, b_name, why,
    #a, sys.sha256(a), #b, sys.sha256(b))
end

-- The text of one hunk made of groups[first..last].
local function hunk(s, groups, first, last, context, out)
  local A, B, keys = s.A, s.B, s.keys
  local g1, g2 = groups[first], groups[last]
  local pre = math.min(context, g1.ai - 1)
  local post = math.min(context, #A - (g2.ai + g2.dl - 1))
  local a_start, b_start = g1.ai - pre, g1.bj - pre
  local a_len = (g2.ai + g2.dl - 1 + post) - a_start + 1
  local b_len = (g2.bj + g2.il - 1 + post) - b_start + 1
  out[#out + 1] = ("@@ -%s +%s @@\n"):format(range(a_start, a_len), range(b_start, b_len))
  local function line(mark, key)
    local text = keys[key]
    if text:sub(-1) == "\n" then out[#out + 1] = mark .. text
    else out[#out + 1] = mark .. text .. "\n\\ No newline at end of file\n" end
  end
  local i = a_start
  for gi = first, last do
    local g = groups[gi]
    for k = i, g.ai - 1 do line(" ", A[k]) end
    for k = g.ai, g.ai + g.dl - 1 do line("-", A[k]) end
    for k = g.bj, g.bj + g.il - 1 do line("+", B[k]) end
    i = g.ai + g.dl
  end
  for k = i, a_start + a_len - 1 do line(" ", A[k]) end
end

function diff.unified(a, b, opts)
  assert(type(a) == "string", "diff.unified: argument a must be a string")
  assert(type(b) == "string", "diff.unified: argument b must be a string")
  opts = opts or {}
  if a == b then return "" end
  local a_name, b_name = opts.a_name or "a", opts.b_name or "b"
  local context = opts.context or 3
  local s = changes(a, b, context)
  if not s then
    local why = (a:find("\0", 1, true) or b:find("\0", 1, true)) and "binary" or "too big to diff line by line"
    return summary(a, b, a_name, b_name, why)
  end
  local groups = groups_of(s)
  local out = {"--- " .. a_name .. "\n", "+++ " .. b_name .. "\n"}
  local first = 1
  for gi = 1, #groups do
    local g, nxt = groups[gi], groups[gi + 1]
    if not nxt or nxt.ai - (g.ai + g.dl) > 2 * context then
      hunk(s, groups, first, gi, context, out)
      first = gi + 1
    end
  end
  return table.concat(out)
end

-- Lines of x not matched in y, counting repeats.
local function unmatched(x, y)
  local have, n = {}, 0
  for line in y:gmatch("[^\n]*\n?") do if line ~= "" then have[line] = (have[line] or 0) + 1 end end
  for line in x:gmatch("[^\n]*\n?") do
    if line ~= "" then
      if (have[line] or 0) > 0 then have[line] = have[line] - 1 else n = n + 1 end
    end
  end
  return n
end

function diff.lines_changed(a, b)
  assert(type(a) == "string", "diff.lines_changed: argument a must be a string")
  assert(type(b) == "string", "diff.lines_changed: argument b must be a string")
  if a == b then return 0, 0 end
  local s = changes(a, b, 0)
  if not s then return unmatched(b, a), unmatched(a, b) end
  local added, removed = 0, 0
  for _, changed in pairs(s.cb) do if changed then added = added + 1 end end
  for _, changed in pairs(s.ca) do if changed then removed = removed + 1 end end
  return added, removed
end

function diff.short(value, max)
  max = max or 160
  local text
  if type(value) == "string" then text = ("%q"):format(value):gsub("\\\n", "\\n")
  elseif type(value) == "table" then
    local ok, encoded = pcall(json.encode, value)
    text = ok and encoded or tostring(value)
  elseif value == nil then text = "(absent)"
  elseif value == json.null then text = "null"
  else text = tostring(value) end
  return excerpt(text, max)
end

local function key_order(x, y)
  local tx, ty = math.type(x) == "integer", math.type(y) == "integer"
  if tx ~= ty then return tx end
  if tx then return x < y end
  return tostring(x) < tostring(y)
end

local function walk(a, b, path, out, max)
  if #out >= max then return end
  if type(a) == "table" and type(b) == "table" then
    local seen, keys = {}, {}
    for key in pairs(a) do seen[key] = true end
    for key in pairs(b) do seen[key] = true end
    for key in pairs(seen) do keys[#keys + 1] = key end
    table.sort(keys, key_order)
    for _, key in ipairs(keys) do
      local sub = math.type(key) == "integer" and ("%s[%d]"):format(path, key)
        or (path == "" and tostring(key) or path .. "." .. tostring(key))
      walk(a[key], b[key], sub, out, max)
    end
  elseif a ~= b then
    out[#out + 1] = {path = path, a = a, b = b}
  end
end

function diff.values(a, b, opts)
  opts = opts or {}
  local out = {}
  walk(a, b, opts.root or "", out, opts.max or 8)
  return out
end

return diff

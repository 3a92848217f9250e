-- luagent.tools.patch: the V4A patch format of OpenAI's apply_patch tool,
-- read and applied to text. Pure: no file is touched here (the apply_patch
-- tool reads and writes through the sandbox, luagent.tools.editing).
--
--   *** Begin Patch
--   *** Add File: PATH          then the file's lines, each after a "+"
--   *** Delete File: PATH
--   *** Update File: PATH
--   *** Move to: NEW_PATH       (optional) the file is renamed too
--   @@ [a line to find first]   then the hunk: " " context, "-" removed, "+" added
--   *** End of File             (optional, after a hunk) it ends at the file's end
--   *** End Patch
--
--   patch.parse(text) -> {ops} | nil, why       the whole patch
--   patch.parse_hunks(diff) -> {hunks} | nil, why   an update's hunks alone (a Responses operation's diff)
--   patch.added_text(diff) -> text              a create operation's diff: its "+" lines
--   patch.apply(text, hunks, path) -> new_text | nil, why
--   patch.of_operation(op) -> patch_text | nil, why   a Responses apply_patch_call's operation as a patch
-- An op is {kind = "add", path, text} | {kind = "delete", path} |
-- {kind = "update", path, move_to, hunks}. A hunk's lines are found exactly,
-- else ignoring trailing spaces, else ignoring leading and trailing spaces
-- (as the format's own applier does); a hunk found nowhere fails the whole
-- patch, naming the file and the lines it looked for.
local patch = {}

local function lines_of(text)
  local list = {}
  for line in (text .. "\n"):gmatch("(.-)\r?\n") do list[#list + 1] = line end
  if text:sub(-1) == "\n" then list[#list] = nil end -- the last newline ends the last line
  return list
end

-- A hunk's body lines from i on: the hunk and the index after it.
local function read_hunk(lines, i, anchor)
  local hunk = {anchor = anchor, old = {}, new = {}, context = {}} -- context[k]: new line k is old line context[k]
  while i <= #lines do
    local line = lines[i]
    local mark, rest = line:sub(1, 1), line:sub(2)
    if line:match("^%*%*%* End of File") then
      hunk.eof = true
      i = i + 1
      break
    elseif line:match("^@@") or line:match("^%*%*%* ") then
      break
    elseif mark == " " or line == "" then
      hunk.old[#hunk.old + 1], hunk.new[#hunk.new + 1] = rest, rest
      hunk.context[#hunk.new] = #hunk.old
    elseif mark == "-" then
      hunk.old[#hunk.old + 1] = rest
    elseif mark == "+" then
      hunk.new[#hunk.new + 1] = rest
    else
      return nil, ("line %d: %q is not a hunk line (each starts with a space, - or +)"):format(i, line)
    end
    i = i + 1
  end
  return hunk, i
end

-- An update's hunks from lines[i] up to the next "*** " header.
local function read_hunks(lines, i)
  local hunks = {}
  while i <= #lines and not lines[i]:match("^%*%*%* ") do
    local anchor = lines[i]:match("^@@ ?(.*)$")
    if anchor then i = i + 1 end
    local hunk, after = read_hunk(lines, i, anchor ~= "" and anchor or nil)
    if not hunk then return nil, after end
    if #hunk.old == 0 and #hunk.new == 0 and not anchor then
      return nil, ("line %d: %q is not a hunk (start one with @@)"):format(i, lines[i])
    end
    hunks[#hunks + 1] = hunk
    i = after
  end
  return hunks, i
end

function patch.parse_hunks(diff)
  local hunks, err = read_hunks(lines_of(diff), 1)
  if not hunks then return nil, err end
  if #hunks == 0 then return nil, "the update has no hunk" end
  return hunks
end

function patch.added_text(diff)
  local lines, out = lines_of(diff), {}
  for i, line in ipairs(lines) do out[i] = line:sub(1, 1) == "+" and line:sub(2) or line end
  return #out > 0 and table.concat(out, "\n") .. "\n" or ""
end

local function header(line)
  for _, h in ipairs{{"add", "^%*%*%* Add File: (.+)$"}, {"delete", "^%*%*%* Delete File: (.+)$"},
                     {"update", "^%*%*%* Update File: (.+)$"}} do
    local path = line:match(h[2])
    if path then return h[1], path end
  end
end

function patch.parse(text)
  if type(text) ~= "string" then return nil, "the patch must be text" end
  local lines = lines_of(text)
  local i = 1
  while lines[i] == "" do i = i + 1 end
  if lines[i] ~= "*** Begin Patch" then return nil, "a patch starts with the line *** Begin Patch" end
  i = i + 1
  local ops = {}
  while true do
    local line = lines[i]
    if line == nil then return nil, "the patch does not end with *** End Patch" end
    if line == "*** End Patch" then break end
    local kind, path = header(line)
    if not kind then
      return nil, ("line %d: %q: expected *** Add File:, *** Update File:, *** Delete File: or *** End Patch")
        :format(i, line)
    end
    local op = {kind = kind, path = path}
    i = i + 1
    if kind == "add" then
      local body = {}
      while lines[i] and lines[i]:sub(1, 1) == "+" do body[#body + 1] = lines[i]:sub(2); i = i + 1 end
      op.text = #body > 0 and table.concat(body, "\n") .. "\n" or ""
    elseif kind == "update" then
      op.move_to = lines[i] and lines[i]:match("^%*%*%* Move to: (.+)$")
      if op.move_to then i = i + 1 end
      local hunks, after = read_hunks(lines, i)
      if not hunks then return nil, ("%s: %s"):format(path, after) end
      if #hunks == 0 and not op.move_to then return nil, path .. ": the update has no hunk" end
      op.hunks, i = hunks, after
    end
    ops[#ops + 1] = op
  end
  if #ops == 0 then return nil, "the patch changes no file" end
  return ops
end

local function trim_right(s) return (s:gsub("%s+$", "")) end
local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

-- The first index >= from where want's lines are, compared by `same`.
local function find_lines(lines, want, from, same, at_end)
  local last = #lines - #want + 1
  if at_end then from = math.max(from, last) end
  for start = from, last do
    local ok = true
    for k = 1, #want do
      if not same(lines[start + k - 1], want[k]) then ok = false break end
    end
    if ok then return start end
  end
end

local COMPARE = {function(a, b) return a == b end, function(a, b) return trim_right(a) == trim_right(b) end,
                 function(a, b) return trim(a) == trim(b) end}

local function locate(lines, want, from, at_end)
  for _, same in ipairs(COMPARE) do
    local at = find_lines(lines, want, from, same, at_end)
    if at then return at end
  end
end

function patch.apply(text, hunks, path)
  local lines, cursor = lines_of(text), 1
  local ended_with_newline = text == "" or text:sub(-1) == "\n"
  for n, hunk in ipairs(hunks) do
    if hunk.anchor then
      local at = locate(lines, {hunk.anchor}, cursor)
      if not at then return nil, ("%s: hunk %d: its @@ line %q is not in the file"):format(path, n, hunk.anchor) end
      cursor = at + 1
    end
    local at = #hunk.old == 0 and (hunk.eof and #lines + 1 or cursor) or locate(lines, hunk.old, cursor, hunk.eof)
    if not at then
      return nil, ("%s: hunk %d: these lines are not in the file (read it again and send the lines as they are):\n%s")
        :format(path, n, table.concat(hunk.old, "\n"))
    end
    local out = {}
    for k = 1, at - 1 do out[#out + 1] = lines[k] end
    for k, l in ipairs(hunk.new) do -- a context line stays as the file has it (it may differ in spaces)
      out[#out + 1] = hunk.context[k] and lines[at + hunk.context[k] - 1] or l
    end
    for k = at + #hunk.old, #lines do out[#out + 1] = lines[k] end
    cursor = at + #hunk.new
    lines = out
  end
  return #lines > 0 and table.concat(lines, "\n") .. (ended_with_newline and "\n" or "") or ""
end

-- The V4A patch of a Responses apply_patch_call's operation
-- ({type = create_file | update_file | delete_file, path, diff}).
function patch.of_operation(op)
  if type(op) ~= "table" or type(op.path) ~= "string" then return nil, "an operation without a path" end
  local body
  if op.type == "create_file" then
    local lines = {}
    for line in patch.added_text(op.diff or ""):gmatch("(.-)\n") do lines[#lines + 1] = "+" .. line end
    body = ("*** Add File: %s\n%s"):format(op.path, table.concat(lines, "\n"))
  elseif op.type == "update_file" then
    body = ("*** Update File: %s\n%s"):format(op.path, (op.diff or ""):gsub("\n$", ""))
  elseif op.type == "delete_file" then
    body = "*** Delete File: " .. op.path
  else
    return nil, "an operation of unknown type " .. tostring(op.type)
  end
  return ("*** Begin Patch\n%s\n*** End Patch\n"):format(body:gsub("\n$", ""))
end

return patch

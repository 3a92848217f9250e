-- luagent.trace_page.compare (internal): what `luagent trace diff`
-- (luagent.cli.trace_diff), `luagent run --watch`, `luagent eval diff` and the
-- eval page (luagent.eval.page) compare of two runs, said once: the final
-- answer as text, the diff of two answers, where a run folder keeps a file
-- its manifest lists, and each agent's instructions and task word by word.
--
--   compare.answer_text(output) -> text   an agent's output as text ("" for none, JSON for a table)
--   compare.answer_diff(text_a, text_b [, a_name, b_name]) -> unified diff   (a missing final newline
--       is no difference here)
--   compare.run_file(dir, path) -> file | nil   a manifest's file in the run folder dir: beside the
--       manifest at its workspace path ("output/report.md"), or under the folder's output/
--   compare.word_diff(text_a, text_b) -> text   the words with what changed marked as git's --word-diff
--       does ([-removed-] {+added+}), a few words around each change, the rest "..."; the text as it is
--       when the words are the same
--   compare.prompts(events) -> {{agent, model, instructions, task}}   each agent_start's, in order
--   compare.prompt_change(x, y [, legend]) -> lines | nil   how two agents' prompts differ (nil: the same);
--       legend names the sides, default "[-A-] {+B+}"
--   compare.prompt_changes(list_a, list_b [, {a_label, b_label}]) -> lines   two runs' prompts, agent by
--       agent in start order (none: the same)
local json = require "luagent.json"
local fs = require "luagent.fs"
local diff = require "luagent.diff"

local compare = {}

function compare.answer_text(v)
  if v == nil or v == json.null then return "" end
  if type(v) == "table" then return json.encode(v, {indent = 2}) end
  return tostring(v)
end

local function with_newline(text)
  if text ~= "" and text:sub(-1) ~= "\n" then return text .. "\n" end
  return text
end

function compare.answer_diff(text_a, text_b, a_name, b_name)
  return diff.unified(with_newline(text_a), with_newline(text_b), {a_name = a_name, b_name = b_name})
end

function compare.run_file(dir, path)
  for _, candidate in ipairs({dir .. "/" .. path, dir .. "/output/" .. (path:match("^[^/]+/(.+)$") or path)}) do
    local st = fs.stat(candidate)
    if st and st.type == "file" then return candidate end
  end
  return nil
end

-- ---- prompts: each agent's instructions and task, word by word ----

local CONTEXT_WORDS = 6

local function words_of(text)
  local list = {}
  for w in tostring(text or ""):gmatch("%S+") do list[#list + 1] = w end
  return list
end

-- The words of a and b with what changed marked as git's --word-diff does
-- ([-removed-] {+added+}), CONTEXT_WORDS around each change, the rest "...".
function compare.word_diff(text_a, text_b)
  local a, b = words_of(text_a), words_of(text_b)
  local pre = 0
  while pre < #a and pre < #b and a[pre + 1] == b[pre + 1] do pre = pre + 1 end
  local post = 0
  while post < #a - pre and post < #b - pre and a[#a - post] == b[#b - post] do post = post + 1 end
  local ma, mb = {}, {}
  for i = pre + 1, #a - post do ma[#ma + 1] = a[i] end
  for i = pre + 1, #b - post do mb[#mb + 1] = b[i] end
  -- the middle: a longest common subsequence (short: the prefix and suffix are gone)
  local n, m, L = #ma, #mb, {}
  for i = n + 1, 1, -1 do
    L[i] = {}
    for j = m + 1, 1, -1 do
      L[i][j] = (i > n or j > m) and 0 or (ma[i] == mb[j] and L[i + 1][j + 1] + 1 or math.max(L[i + 1][j], L[i][j + 1]))
    end
  end
  local tokens = {} -- {text, changed}
  for i = 1, pre do tokens[#tokens + 1] = {a[i], false} end
  local i, j = 1, 1
  while i <= n or j <= m do
    if i <= n and j <= m and ma[i] == mb[j] then tokens[#tokens + 1] = {ma[i], false}; i, j = i + 1, j + 1
    elseif i <= n and (j > m or L[i + 1][j] >= L[i][j + 1]) then -- what was taken out first, as git shows it
      tokens[#tokens + 1] = {"[-" .. ma[i] .. "-]", true}; i = i + 1
    else tokens[#tokens + 1] = {"{+" .. mb[j] .. "+}", true}; j = j + 1 end
  end
  for k = #a - post + 1, #a do tokens[#tokens + 1] = {a[k], false} end
  local keep, any = {}, false
  for k, t in ipairs(tokens) do
    if t[2] then
      any = true
      for c = k - CONTEXT_WORDS, k + CONTEXT_WORDS do keep[c] = true end
    end
  end
  if not any then return table.concat(a, " ") end
  local out, skipped = {}, false
  for k, t in ipairs(tokens) do
    if keep[k] then out[#out + 1], skipped = t[1], false
    elseif not skipped then out[#out + 1], skipped = "...", true end
  end
  -- words changed together read as one change: [-a b-] {+c d+}
  local text = table.concat(out, " ")
  for _ = 1, 2 do
    text = text:gsub("%-%] %[%-", " "):gsub("%+} {%+", " ")
    text = text:gsub("(%[%-[^%]]-%-%]) ({%+.-%+}) (%[%-[^%]]-%-%])", "%1 %3 %2") -- removals before additions
  end
  return text
end

function compare.prompts(list)
  local out = {}
  for _, ev in ipairs(list or {}) do
    if ev.type == "agent_start" then
      out[#out + 1] = {agent = ev.agent, model = ev.model, instructions = ev.instructions, task = ev.task}
    end
  end
  return out
end

local FIELDS = {"instructions", "task"}

function compare.prompt_change(x, y, legend)
  local lines = {}
  for _, field in ipairs(FIELDS) do
    local ta, tb = x[field], y[field]
    if type(ta) == "table" or type(tb) == "table" then ta, tb = json.encode(ta), json.encode(tb) end
    if (ta or "") ~= (tb or "") then
      lines[#lines + 1] = ("  %s of %s (words: %s):\n    %s"):format(field, tostring(x.agent or "agent"),
        legend or "[-A-] {+B+}", compare.word_diff(ta, tb))
    end
  end
  return #lines > 0 and lines or nil
end

function compare.prompt_changes(xs, ys, opts)
  opts = opts or {}
  local a_label, b_label = opts.a_label or "A", opts.b_label or "B"
  local legend = ("[-%s-] {+%s+}"):format(a_label, b_label)
  local out = {}
  for i = 1, math.max(#xs, #ys) do
    local x, y = xs[i], ys[i]
    if not x or not y then
      out[#out + 1] = ("  agent #%d (%s) only in %s"):format(i, tostring((x or y).agent or "agent"), x and a_label or b_label)
    else
      for _, line in ipairs(compare.prompt_change(x, y, legend) or {}) do out[#out + 1] = line end
    end
  end
  return out
end

return compare

-- luagent eval diff A B [-o PAGE.html]: two evals compared (luagent.cli.eval
-- sends `eval diff` here; the comparison is luagent.eval.diff's). A and B are
-- eval ids or eval folders. It prints which evals, a line when their recipes
-- differ, what is in one eval only, each variant's prompts (instructions and
-- task) word by word where they differ, per variant the figures of A and B with
-- the change, the runs that flipped (passed in one, failed in the other)
-- FIRST with their check notes, traces and the `luagent trace diff` of the
-- two runs, then the rest; and writes the same as a page (default
-- B/diff-<A's id>.html), whose path it prints. Colors only on a terminal
-- without NO_COLOR.
--
--   eval_diff.main(args) -> exit status: 0 the same (no flip, the same pass rates), 1 different,
--       2 bad input (an eval not found, named; a bad command line)
local sys = require "luagent.sys"
local errors = require "luagent.errors"
local diff = require "luagent.eval.diff"
local folders = require "luagent.eval.folders"

local eval_diff = {}

local USAGE = [[
usage: luagent eval diff A B [-o PAGE.html]
  A, B          eval ids (folder names under evals/) or eval folders; B is usually the newer
  -o PAGE.html  where the page goes (default: B's folder, diff-<A's id>.html)
  exit 0 the same (no run flipped, the same pass rates), 1 different, 2 bad input]]

local function bad(message)
  io.stderr:write("luagent: eval diff: ", message, "\n")
  return 2
end

-- args -> {a, b, page, help} | nil, message
local function parse(args)
  local o, names, i = {}, {}, 1
  while i <= #args do
    local a = args[i]
    if a == "-o" or a == "--output" then
      i = i + 1
      o.page = args[i]
      if not o.page then return nil, a .. " needs a file, e.g. -o diff.html" end
    elseif a == "-h" or a == "--help" then
      o.help = true
    elseif a:sub(1, 1) == "-" then
      return nil, ("unknown option '%s'"):format(a)
    else
      names[#names + 1] = a
    end
    i = i + 1
  end
  if not o.help and #names ~= 2 then
    return nil, ("two evals to compare, A and B (got %d)"):format(#names)
  end
  o.a, o.b = names[1], names[2]
  return o
end

local relative = folders.relative

local COLORS = {passed = "32", better = "32", failed = "31", error = "31", worse = "31", head = "1"}

local function painter()
  local no_color = os.getenv("NO_COLOR")
  if not sys.isatty(1) or (no_color and no_color ~= "") then return function(text) return text end end
  return function(text, what)
    local code = COLORS[what]
    return code and ("\27[%sm%s\27[0m"):format(code, text) or text
  end
end

local function pad(text, width) return text .. (" "):rep(math.max(0, width - #text)) end

-- ---- the text ----

local function header(out, cmp)
  if cmp.recipes_differ then
    out[#out + 1] = ("different recipes: A ran %s, B ran %s; comparing the variants and inputs both have, by name")
      :format(relative(cmp.a.recipe), relative(cmp.b.recipe))
  end
  for _, s in ipairs({{"A", cmp.a}, {"B", cmp.b}}) do
    local ev = s[2]
    out[#out + 1] = ("%s: %s (%d runs%s)"):format(s[1], relative(ev.dir), #ev.records,
      ev.recipe and (", recipe " .. relative(ev.recipe)) or "")
  end
  for _, what in ipairs({"variants", "inputs"}) do
    local only = cmp.only[what]
    if #only.a + #only.b > 0 then
      local parts = {}
      if #only.a > 0 then parts[#parts + 1] = "only in A: " .. table.concat(only.a, ", ") end
      if #only.b > 0 then parts[#parts + 1] = "only in B: " .. table.concat(only.b, ", ") end
      out[#out + 1] = what .. " " .. table.concat(parts, "; ")
    end
  end
  local ra, rb = cmp.only.runs.a, cmp.only.runs.b
  if ra + rb > 0 then
    out[#out + 1] = ("%d runs in both (the figures count those); %d only in A, %d only in B"):format(cmp.matched, ra, rb)
  end
end

local function prompts(out, cmp, paint)
  if cmp.prompts_read == 0 then return end
  out[#out + 1] = ""
  if #cmp.prompts == 0 then
    out[#out + 1] = "prompts: the same in both evals (each agent's instructions and task)"
    return
  end
  out[#out + 1] = paint(("prompts: %d variant%s differ%s"):format(#cmp.prompts, #cmp.prompts == 1 and "" or "s",
    #cmp.prompts == 1 and "s" or ""), "head")
  for _, entry in ipairs(cmp.prompts) do
    out[#out + 1] = "  " .. entry.variant .. ":"
    for _, line in ipairs(entry.lines) do out[#out + 1] = "  " .. line end
    if entry.scripted then
      out[#out + 1] = "    (the scripted driver ran these runs: it ignores the prompts, so their results cannot show "
        .. "the edit; set a model to compare prompts)"
    end
  end
end

local function variants(out, cmp, paint)
  for _, row in ipairs(cmp.rows) do
    local lines = {{row.variant, "A", "B", "change"}}
    for _, m in ipairs(diff.METRICS) do
      local change, direction = diff.change(m, row.a[m.key], row.b[m.key], "-")
      lines[#lines + 1] = {"  " .. m.label, diff.cell(m, row.a, "-"), diff.cell(m, row.b, "-"), change, direction}
    end
    local widths = {0, 0, 0}
    for _, l in ipairs(lines) do
      for i = 1, 3 do widths[i] = math.max(widths[i], #l[i]) end
    end
    out[#out + 1] = ""
    for n, l in ipairs(lines) do
      local text = pad(l[1], widths[1]) .. "  " .. pad(l[2], widths[2]) .. "  " .. pad(l[3], widths[3]) .. "  "
      out[#out + 1] = n == 1 and paint(text .. l[4], "head") or (text .. paint(l[4], l[5]))
    end
  end
end

local function run_name(p) return ("%s / %s #%s"):format(p.variant, p.input, tostring(p.epoch)) end

local function score_of(r)
  return type(r.score) == "number" and (", score %.2f"):format(r.score) or ""
end

local function why(r)
  local text = type(r.note) == "string" and r.note ~= "" and r.note or (type(r.error) == "string" and r.error) or nil
  return text and (": " .. text:gsub("\n.*", "")) or ""
end

local function run_dir(ev, r)
  return type(r.run_dir) == "string" and relative(ev.dir .. "/" .. r.run_dir) or nil
end

local function flips(out, cmp, paint)
  out[#out + 1] = ""
  if #cmp.flips == 0 then
    out[#out + 1] = "flipped: none (no run passed in one eval and failed in the other)"
    return
  end
  out[#out + 1] = paint(("flipped: %d run%s"):format(#cmp.flips, #cmp.flips == 1 and "" or "s"), "head")
  for _, p in ipairs(cmp.flips) do
    out[#out + 1] = ("  %s: %s -> %s"):format(run_name(p), paint(p.from, p.from), paint(p.to, p.to))
    local dirs = {}
    for _, s in ipairs({{"A", cmp.a, p.a, p.from}, {"B", cmp.b, p.b, p.to}}) do
      out[#out + 1] = ("    %s: %s%s%s"):format(s[1], s[4], score_of(s[3]), why(s[3]))
      dirs[#dirs + 1] = run_dir(s[2], s[3])
    end
    if #dirs == 2 then
      out[#out + 1] = ("    traces: %s/trace.jsonl\n            %s/trace.jsonl"):format(dirs[1], dirs[2])
      out[#out + 1] = ("    step by step: luagent trace diff %s %s"):format(dirs[1], dirs[2])
    end
  end
end

local function rest(out, cmp)
  if #cmp.rest == 0 then return end
  out[#out + 1] = ""
  out[#out + 1] = ("the rest: %d run%s"):format(#cmp.rest, #cmp.rest == 1 and "" or "s")
  for _, p in ipairs(cmp.rest) do
    local verdict = p.from == p.to and p.from or (p.from .. " -> " .. p.to)
    local sa, sb = p.a.score, p.b.score
    local score = ""
    if type(sa) == "number" and type(sb) == "number" and ("%.2f"):format(sa) ~= ("%.2f"):format(sb) then
      score = (", score %.2f -> %.2f"):format(sa, sb)
    elseif type(sb) == "number" then
      score = (", score %.2f"):format(sb)
    end
    out[#out + 1] = ("  %s: %s%s%s"):format(run_name(p), verdict, score, why(p.b))
  end
end

-- ---- the command ----

function eval_diff.main(args)
  local o, message = parse(args)
  if not o then
    io.stderr:write("luagent: eval diff: ", message, "\n", USAGE, "\n")
    return 2
  end
  if o.help then
    print(USAGE)
    return 0
  end
  local a, err = diff.load(o.a)
  if not a then return bad(errors.from(err).message) end
  local b
  b, err = diff.load(o.b)
  if not b then return bad(errors.from(err).message) end
  local cmp = diff.compare(a, b)
  local paint = painter()
  local out = {}
  header(out, cmp)
  prompts(out, cmp, paint)
  variants(out, cmp, paint)
  flips(out, cmp, paint)
  rest(out, cmp)
  out[#out + 1] = ""
  local page_path = o.page or (b.dir .. "/diff-" .. a.id .. ".html")
  local written, perr = require("luagent.eval.diff_page").write(cmp, page_path)
  if written then
    out[#out + 1] = "page: " .. relative(written)
  else
    io.stderr:write("luagent: warning: ", errors.from(perr).message, "\n")
  end
  if #cmp.changes == 0 then
    out[#out + 1] = "the evals are the same: no run flipped, the same pass rates"
      .. (#cmp.prompts > 0 and "; their prompts differ (above)" or "")
  else
    out[#out + 1] = "the evals differ: " .. table.concat(cmp.changes, "; ")
  end
  io.stdout:write(table.concat(out, "\n"), "\n")
  return #cmp.changes == 0 and 0 or 1
end

return eval_diff

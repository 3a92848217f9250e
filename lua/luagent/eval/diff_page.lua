-- luagent.eval.diff_page: the page of `luagent eval diff A B`, one
-- self-contained HTML file (inline CSS, no script, nothing fetched) that
-- looks like the eval page (luagent.eval.page: its style sheet, badges, facts
-- and colored diffs): which evals, a line when their recipes differ, what is
-- in one eval only, each variant's prompts word by word where they differ,
-- per variant the figures of A and B with the change
-- (better green, worse red), then the runs that flipped — each side's verdict,
-- check note, facts and trace page, and how the final answer changed — then
-- the rest of the runs, one table row each.
--
--   diff_page.write(cmp, path) -> path | nil, err   cmp: luagent.eval.diff.compare's; links are
--       relative to path's folder
local fs = require "luagent.fs"
local errors = require "luagent.errors"
local format = require "luagent.trace_page.format"
local compare = require "luagent.trace_page.compare"
local eval_page = require "luagent.eval.page"
local diff = require "luagent.eval.diff"

local diff_page = {}

local escape, href = format.escape, format.href

local CSS = eval_page.CSS .. [[

.warn{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:.5em .8em}
.verdict{font-weight:600}.verdict.changed{color:#9a6700}.verdict.same{color:#1a7f37}
.variants td.better{background:#e3f6e8;color:#116329;font-weight:600}
.variants td.worse{background:#ffebe9;color:#a40e26;font-weight:600}
.wide{overflow-x:auto}.variants.diff th,.variants.diff td{padding:.4em .55em}
.variants th.group{text-align:center;border-left:1px solid #d0d7de}.variants td.a{border-left:1px solid #e4e6ea}
.flip{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:.7em .9em;margin:0 0 1em}
.flip h3{margin:0 0 .5em;font-size:1.05em}.pair{display:grid;grid-template-columns:1fr 1fr;gap:1em}
table.rest{border-collapse:collapse;background:#fff;box-shadow:0 1px 2px #0001}
.rest th,.rest td{padding:.35em .8em;border-bottom:1px solid #e4e6ea;text-align:left;vertical-align:top}
.rest th{background:#eef0f3}.rest .pass{color:#1a7f37}.rest .fail,.rest .error{color:#cf222e}]]

-- ---- links ----

local function parts(path)
  local out = {}
  for p in path:gmatch("[^/]+") do out[#out + 1] = p end
  return out
end

-- path (a file that exists) relative to the folder from (both made absolute).
local function relative(from, path)
  local f, p = fs.realpath(from), fs.realpath(path)
  if not f or not p then return path end
  local fp, pp = parts(f), parts(p)
  local i = 1
  while fp[i] and pp[i] and fp[i] == pp[i] do i = i + 1 end
  local out = {}
  for _ = i, #fp do out[#out + 1] = ".." end
  for j = i, #pp do out[#out + 1] = pp[j] end
  return table.concat(out, "/")
end

-- A run's trace page as a link from the page's folder, or nil.
local function trace_link(ev, r, page_dir)
  local dir = eval_page.run_folder(ev.dir, r)
  local page = dir and eval_page.trace_page(dir)
  return page and relative(page_dir, page)
end

local function run_name(p)
  return ("%s / %s #%s"):format(escape(p.variant), escape(p.input), escape(tostring(p.epoch)))
end

-- ---- parts of the page ----

local function head(out, cmp)
  local a, b = cmp.a, cmp.b
  out[#out + 1] = ('<h1>Eval diff: %s → %s</h1>'):format(escape(a.id), escape(b.id))
  if cmp.recipes_differ then
    out[#out + 1] = ('<p class="warn" id="recipes">Different recipes: A ran %s, B ran %s; compared: the variants '
      .. 'and inputs both have, by name.</p>'):format(escape(a.recipe), escape(b.recipe))
  end
  out[#out + 1] = ('<p class="meta">A: %s · %d runs<br>B: %s · %d runs</p>'):format(escape(a.dir), #a.records,
    escape(b.dir), #b.records)
  local only = {}
  for _, what in ipairs({"variants", "inputs"}) do
    for _, side in ipairs({"a", "b"}) do
      local names = cmp.only[what][side]
      if #names > 0 then
        only[#only + 1] = ("%s only in %s: %s"):format(what, side:upper(), escape(table.concat(names, ", ")))
      end
    end
  end
  for _, side in ipairs({"a", "b"}) do
    local n = cmp.only.runs[side]
    if n > 0 then only[#only + 1] = ("%d run%s only in %s"):format(n, n == 1 and "" or "s", side:upper()) end
  end
  if #only > 0 then
    out[#out + 1] = ('<p id="only">%s (left out of the figures below, which count the %d runs both have)</p>')
      :format(table.concat(only, " · "), cmp.matched)
  end
  if #cmp.changes == 0 then
    out[#out + 1] = '<p class="verdict same" id="verdict">The same: no run flipped, the same pass rates.</p>'
  else
    out[#out + 1] = ('<p class="verdict changed" id="verdict">Different: %s.</p>'):format(
      escape(table.concat(cmp.changes, "; ")))
  end
end

-- A word diff's line with its changes colored as the answers' diffs are.
local function words_html(line)
  return (escape(line):gsub("%[%-(.-)%-%]", '<span class="d-del">[-%1-]</span>')
    :gsub("{%+(.-)%+}", '<span class="d-add">{+%1+}</span>'))
end

local function prompts(out, cmp)
  if #cmp.prompts == 0 then return end
  out[#out + 1] = '<section id="prompts"><h2>Prompts, A → B</h2>'
  for _, entry in ipairs(cmp.prompts) do
    local lines = {}
    for i, line in ipairs(entry.lines) do lines[i] = words_html(line) end
    out[#out + 1] = ('<h3>%s</h3><pre>%s</pre>'):format(escape(entry.variant), table.concat(lines, "\n"))
    if entry.scripted then
      out[#out + 1] = '<p class="same">the scripted driver ran these runs: it ignores the prompts, so their results '
        .. "cannot show the edit</p>"
    end
  end
  out[#out + 1] = "</section>"
end

local function variant_table(out, cmp)
  out[#out + 1] = '<section id="variant-table"><h2>Variants</h2><div class="wide"><table class="variants diff"><thead>'
    .. "<tr><th></th>"
  for _, m in ipairs(diff.METRICS) do
    out[#out + 1] = ('<th class="group" colspan="3">%s</th>'):format(escape(m.label))
  end
  out[#out + 1] = "</tr><tr><th>variant</th>" .. ("<th>A</th><th>B</th><th>change</th>"):rep(#diff.METRICS)
    .. "</tr></thead><tbody>"
  for _, row in ipairs(cmp.rows) do
    local cells = {("<tr><td>%s</td>"):format(escape(row.variant))}
    for _, m in ipairs(diff.METRICS) do
      local change, direction = diff.change(m, row.a[m.key], row.b[m.key])
      cells[#cells + 1] = ('<td class="a">%s</td><td>%s</td><td%s>%s</td>'):format(escape(diff.cell(m, row.a)),
        escape(diff.cell(m, row.b)), (direction == "better" or direction == "worse") and
        (' class="%s"'):format(direction) or "", escape(change))
    end
    out[#out + 1] = table.concat(cells) .. "</tr>"
  end
  out[#out + 1] = '</tbody></table></div><p class="dim">Means per run that ran, over the runs both evals have.</p></section>'
end

local function side(out, ev, r, label, page_dir)
  local class, verdict = eval_page.status_of(r)
  out[#out + 1] = ('<div class="run %s"><header><span class="badge">%s</span> <b>%s</b> · %s'):format(class,
    escape(verdict), label, escape(ev.id))
  local link = trace_link(ev, r, page_dir)
  if link then out[#out + 1] = (' · <a class="trace" href="%s">trace</a>'):format(href(link)) end
  out[#out + 1] = "</header>" .. eval_page.facts(r)
  local note = format.str(r.note)
  if note and note ~= "" then out[#out + 1] = ('<p class="note">%s</p>'):format(escape(note)) end
  local err = format.str(r.error)
  if err then out[#out + 1] = ('<pre class="error">%s</pre>'):format(escape(err)) end
  out[#out + 1] = "</div>"
end

local function answer_of(ev, r)
  local dir = eval_page.run_folder(ev.dir, r)
  local final = dir and format.read_json(dir .. "/final.json")
  return type(final) == "table" and compare.answer_text(final.output) or nil
end

local function flips(out, cmp, page_dir)
  out[#out + 1] = ('<section id="flipped"><h2>Flipped: %d run%s</h2>'):format(#cmp.flips, #cmp.flips == 1 and "" or "s")
  if #cmp.flips == 0 then out[#out + 1] = '<p class="dim">No run passed in one eval and failed in the other.</p>' end
  for _, p in ipairs(cmp.flips) do
    out[#out + 1] = ('<article class="flip"><h3>%s: %s → %s</h3><div class="pair">'):format(run_name(p),
      escape(p.from), escape(p.to))
    side(out, cmp.a, p.a, "A", page_dir)
    side(out, cmp.b, p.b, "B", page_dir)
    out[#out + 1] = "</div>"
    local ta, tb = answer_of(cmp.a, p.a), answer_of(cmp.b, p.b)
    if ta and tb and ta == tb then
      out[#out + 1] = '<p class="same">the same final answer</p>'
    elseif ta and tb then
      out[#out + 1] = "<h4>Final answer, A → B</h4>" .. eval_page.pre_diff(compare.answer_diff(ta, tb))
    end
    out[#out + 1] = "</article>"
  end
  out[#out + 1] = "</section>"
end

local function rest(out, cmp, page_dir)
  out[#out + 1] = ('<section id="rest"><h2>The rest: %d run%s</h2>'):format(#cmp.rest, #cmp.rest == 1 and "" or "s")
  if #cmp.rest == 0 then
    out[#out + 1] = "</section>"
    return
  end
  out[#out + 1] = '<table class="rest"><thead><tr><th>run</th><th>A</th><th>B</th><th>score</th><th>note (B)</th>'
    .. "<th>traces</th></tr></thead><tbody>"
  for _, p in ipairs(cmp.rest) do
    local ca, cb = eval_page.status_of(p.a), eval_page.status_of(p.b)
    local sa, sb = format.num(p.a.score), format.num(p.b.score)
    local score = (sa or sb) and ("%s → %s"):format(sa and ("%.2f"):format(sa) or "—", sb and ("%.2f"):format(sb) or "—")
      or "—"
    local links = {}
    for _, s in ipairs({{"A", cmp.a, p.a}, {"B", cmp.b, p.b}}) do
      local link = trace_link(s[2], s[3], page_dir)
      if link then links[#links + 1] = ('<a class="trace" href="%s">%s</a>'):format(href(link), s[1]) end
    end
    out[#out + 1] = ('<tr><td>%s</td><td class="%s">%s</td><td class="%s">%s</td><td>%s</td><td>%s</td><td>%s</td></tr>')
      :format(run_name(p), ca, escape(p.from), cb, escape(p.to), score, escape(format.str(p.b.note) or ""),
        table.concat(links, " "))
  end
  out[#out + 1] = "</tbody></table></section>"
end

function diff_page.write(cmp, path)
  local page_dir = path:match("^(.*)/[^/]*$") or "."
  local title = ("Eval diff %s → %s"):format(cmp.a.id, cmp.b.id)
  local out = {('<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width">'
    .. "<title>%s</title><style>%s</style><main>"):format(escape(title), CSS)}
  head(out, cmp)
  prompts(out, cmp)
  variant_table(out, cmp)
  flips(out, cmp, page_dir)
  rest(out, cmp, page_dir)
  out[#out + 1] = "</main></html>\n"
  local ok, err = fs.write(path, table.concat(out))
  if not ok then return nil, errors.wrap(err, "writing the eval diff page") end
  return path
end

return diff_page

-- luagent.eval.page (internal; luagent.eval calls it): the comparison page
-- of an eval, evals/<eval-id>/index.html. One self-contained file (inline
-- CSS, images as data: URIs, no script, nothing fetched): the variant table
-- (pass rate, mean score, turns, tokens, $, wall; the best of each column
-- marked; pass rate and score marked model-graded, with a legend, when a
-- model judged runs: luagent.checks.graded), then per input the variants side by side, one row per epoch, each
-- run with its final answer, its declared outputs (PNG and JPEG shown, text
-- files diffed against the first variant's run of the same input and
-- epoch), a link to its trace page, its error or why it was skipped.
--
--   eval_page.write(eval_dir, {max_image = bytes}) -> path of index.html | nil, err
--   eval_page.read_results(eval_dir) -> results | nil, err     results.jsonl, one table a line
--   eval_page.variant_rows(results) -> rows   one per variant, in order of appearance: the rows of
--       luagent.eval.results.summarize (runs, done, skipped, interrupted, errors, passed, checked,
--       pass_rate, mean_score, mean_turns, mean_tokens, mean_cost, mean_wall_s, ...), each with
--       best = {column = true}   (means per run that ran; nil: none known)
-- and for the page of `luagent eval diff` (luagent.eval.diff_page), which looks the same:
--   eval_page.CSS   the page's style sheet
--   eval_page.run_folder(eval_dir, result) -> dir | nil     a results line's run folder
--   eval_page.trace_page(run_dir) -> path of its trace.html (written when missing) | nil
--   eval_page.input_label(input) -> text   a results line's input by name ("(no input)" for none)
--   eval_page.status_of(result) -> class, label   ("pass", "passed"), ("fail", "failed"), ("waiting", "waiting"), ...
--   eval_page.facts(result) -> html   its score, turns, tokens, $, wall, model calls
--   eval_page.pre_diff(unified_diff) -> html   colored lines
--
-- What it reads (written by luagent.eval): eval_dir/results.jsonl, one JSON
-- object a line: variant, input, epoch, passed, score, note, stopped_by,
-- turns, usage {input_tokens, output_tokens}, cost, wall_s, cached_calls,
-- live_calls, run_dir (relative to eval_dir), error, skipped (why a run did
-- not start, e.g. the budget). In each run_dir: final.json {output},
-- manifest.json {files = {{path, size, sha256}}} and the files under
-- output/, trace.jsonl (its page trace.html is written when missing).
--
-- What it shares with the trace page and `luagent trace diff` (sizes, links,
-- image types, JSON files; answers and their diff, a manifest's file in a run
-- folder) is theirs: luagent.trace_page.format and luagent.trace_page.compare.
local json = require "luagent.json"
local fs = require "luagent.fs"
local sys = require "luagent.sys"
local errors = require "luagent.errors"
local diff = require "luagent.diff"
local trace_page = require "luagent.trace_page"
local format = require "luagent.trace_page.format"
local compare = require "luagent.trace_page.compare"
local results_of = require "luagent.eval.results"

local eval_page = {}

eval_page.MAX_IMAGE = 2 * 1024 * 1024        -- bytes of one image shown inline
eval_page.MAX_IMAGES = 40 * 1024 * 1024      -- bytes of all images shown inline
local MAX_TEXT = 1024 * 1024                 -- a bigger output file is not read as text
local MAX_LINES = 300                        -- lines of one text or diff shown

local escape = format.escape

-- ---- reading ----

function eval_page.read_results(eval_dir)
  local path = eval_dir .. "/results.jsonl"
  local text, err = fs.read(path)
  if not text then return nil, errors.wrap(err, "the eval's results") end
  local results, n = {}, 0
  for line in text:gmatch("[^\n]+") do
    n = n + 1
    local r = json.decode(line)
    if type(r) ~= "table" then
      return errors.fail("json", ("%s:%d: not a result (one JSON object a line)"):format(path, n), {path = path, line = n})
    end
    results[#results + 1] = r
  end
  return results
end

local function number(v)
  return type(v) == "number" and v or nil
end

local tokens_of = results_of.tokens_of

-- Which row is best in each column (only when there are rows to compare and they differ).
local BEST = {pass_rate = "max", mean_score = "max", mean_turns = "min", mean_tokens = "min", mean_cost = "min",
              mean_wall_s = "min"}

local function mark_best(rows)
  for _, row in ipairs(rows) do row.best = {} end
  if #rows < 2 then return end
  for column, how in pairs(BEST) do
    local best, known, all_same, first = nil, 0, true, nil
    for _, row in ipairs(rows) do
      local v = row[column]
      if v then
        known = known + 1
        if first == nil then first = v elseif v ~= first then all_same = false end
        if best == nil or (how == "max" and v > best) or (how == "min" and v < best) then best = v end
      end
    end
    if known >= 2 and not all_same then
      for _, row in ipairs(rows) do
        if row[column] == best then row.best[column] = true end
      end
    end
  end
end

function eval_page.variant_rows(results)
  local rows = results_of.summarize(nil, results)
  mark_best(rows)
  return rows
end

-- ---- small renderers ----

local function input_label(input)
  if input == nil or input == json.null then return "(no input)" end
  if type(input) ~= "table" then return tostring(input) end
  local parts = {}
  for k, v in pairs(input) do
    parts[#parts + 1] = tostring(k) .. "=" .. (type(v) == "table" and json.encode(v) or tostring(v))
  end
  table.sort(parts)
  return table.concat(parts, ", ")
end
eval_page.input_label = input_label

local function kilo(n)
  if not n then return "—" end
  return n >= 1000 and ("%.1fk"):format(n / 1000) or ("%.0f"):format(n)
end

local function bytes(n)
  return format.bytes(n, "bytes")
end

local function fmt(v, pattern)
  return v and pattern:format(v) or "—"
end

local href = format.href

-- Lines of a text, at most MAX_LINES, escaped.
local function pre_text(text, class)
  local out, n = {}, 0
  for line in text:gmatch("[^\n]*\n?") do
    if line == "" then break end
    n = n + 1
    if n > MAX_LINES then
      out[#out + 1] = ('<span class="more">... (%d lines in all)</span>\n'):format(select(2, text:gsub("\n", "")) + 1)
      break
    end
    out[#out + 1] = escape(line)
  end
  return ('<pre class="%s">%s</pre>'):format(class, table.concat(out))
end

local DIFF_CLASS = {["+"] = "d-add", ["-"] = "d-del", ["@"] = "d-hunk", ["\\"] = "d-note", [" "] = "d-same"}

-- A unified diff as colored lines (its --- / +++ header left out: the page names both sides).
local function pre_diff(text)
  local out, n = {}, 0
  for line in text:gmatch("[^\n]*\n") do
    n = n + 1
    if n > 2 or not (line:match("^%-%-%- ") or line:match("^%+%+%+ ")) then
      if #out >= MAX_LINES then
        out[#out + 1] = '<span class="more">... (more lines)</span>\n'
        break
      end
      out[#out + 1] = ('<span class="%s">%s</span>'):format(DIFF_CLASS[line:sub(1, 1)] or "d-note", escape(line))
    end
  end
  return '<pre class="diff">' .. table.concat(out) .. "</pre>"
end
eval_page.pre_diff = pre_diff

-- ---- one run ----

-- The run's folder (absolute or relative to eval_dir), or nil.
local function run_folder(eval_dir, r)
  if type(r.run_dir) ~= "string" or r.run_dir == "" then return nil end
  return r.run_dir:sub(1, 1) == "/" and r.run_dir or (eval_dir .. "/" .. r.run_dir)
end
eval_page.run_folder = run_folder

function eval_page.trace_page(dir)
  local page = dir .. "/trace.html"
  if not fs.exists(page) and fs.exists(dir .. "/trace.jsonl") then
    trace_page.write(dir .. "/trace.jsonl", page)
  end
  return fs.exists(page) and page or nil
end

-- What the page shows of a run: {final, has_final, files = {path -> {entry, file, data}}, paths, trace}.
local function load_run(eval_dir, r)
  local info = {files = {}, paths = {}}
  local dir = run_folder(eval_dir, r)
  if not dir then return info end
  local final = format.read_json(dir .. "/final.json")
  if type(final) == "table" then info.final, info.has_final = final.output, true end
  local manifest = format.read_json(dir .. "/manifest.json")
  for _, e in ipairs(type(manifest) == "table" and type(manifest.files) == "table" and manifest.files or {}) do
    if type(e) == "table" and type(e.path) == "string" then
      local file = compare.run_file(dir, e.path)
      info.files[e.path] = {entry = e, file = file, link = file and file:sub(#eval_dir + 2)}
      info.paths[#info.paths + 1] = e.path
    end
  end
  table.sort(info.paths)
  local page = eval_page.trace_page(dir)
  if page then info.trace = page:sub(#eval_dir + 2) end
  return info
end

-- A file's content when it is small enough to show (read once), or nil.
local function file_data(f, limit)
  if f.data == nil then
    local st = f.file and fs.stat(f.file)
    f.data = (st and st.size <= limit) and fs.read(f.file) or false
  end
  return f.data or nil
end

-- One declared output of a run; `base` the same file of the first variant's run (or nil).
local function render_file(out, state, path, f, base, base_name)
  local head = ('<div class="fname">%s <span class="dim">%s</span>'):format(escape(path), bytes(f.entry.size))
  local kind = format.file_image_type(f.file)
  if kind then
    local st = fs.stat(f.file)
    local data = st.size <= state.max_image and state.image_bytes + st.size <= eval_page.MAX_IMAGES
      and file_data(f, state.max_image)
    if data then
      state.image_bytes = state.image_bytes + #data
      out[#out + 1] = head .. ('</div><img src="data:%s;base64,%s" alt="%s">'):format(kind, sys.base64(data), escape(path))
    elseif st.size > state.max_image then
      out[#out + 1] = head .. ('</div><p class="skip">too big to show here (%s; the page shows images up to %s): '
        .. '<a href="%s">open the file</a></p>'):format(bytes(st.size), bytes(state.max_image), href(f.link))
    else
      out[#out + 1] = head .. ('</div><p class="skip">not shown: the page already holds %s of images; '
        .. '<a href="%s">open the file</a></p>'):format(bytes(state.image_bytes), href(f.link))
    end
    return
  end
  local data = file_data(f, MAX_TEXT)
  if not data or data:find("\0", 1, true) then
    out[#out + 1] = head .. ('</div><p class="dim">sha256 %s%s</p>'):format(escape(tostring(f.entry.sha256)),
      f.file and "" or " (the file is not in the run folder)")
    return
  end
  local base_data = base and file_data(base, MAX_TEXT)
  if not base_name then
    out[#out + 1] = head .. "</div>" .. pre_text(data, "text")
  elseif not base then
    out[#out + 1] = head .. (' · not in %s</div>'):format(escape(base_name)) .. pre_text(data, "text")
  elseif base.entry.sha256 == f.entry.sha256 or base_data == data then
    out[#out + 1] = head .. (' · <span class="same">same as %s</span></div>'):format(escape(base_name))
  elseif base_data and not base_data:find("\0", 1, true) then
    local added, removed = diff.lines_changed(base_data, data)
    out[#out + 1] = head .. (' · <span class="d-add">+%d</span> <span class="d-del">−%d</span> lines against %s</div>')
      :format(added, removed, escape(base_name)) .. pre_diff(diff.unified(base_data, data))
  else
    out[#out + 1] = head .. "</div>" .. pre_text(data, "text")
  end
end

local function status_of(r)
  if r.skipped then return "skipped", "skipped" end
  if r.status == "waiting" then return "waiting", "waiting" end
  if r.error and r.error ~= json.null then return "error", "error" end
  if r.passed == true then return "pass", "passed" end
  if r.passed == false then return "fail", "failed" end
  return "done", "no check"
end
eval_page.status_of = status_of

function eval_page.facts(r)
  local live = number(r.live_calls)
  return ('<p class="facts">score %s · %s turns · %s tokens · %s · %s · %s model call%s%s</p>'):format(
    fmt(number(r.score), "%.2f"), fmt(number(r.turns), "%d"), kilo(tokens_of(r)), fmt(number(r.cost), "$%.4f"),
    fmt(number(r.wall_s), "%.1f s"), live and ("%d live"):format(live) or "?", live == 1 and "" or "s",
    number(r.cached_calls) and (", %d from the cache"):format(r.cached_calls) or "")
end

local function render_run(out, state, r, info, base_info, base_name)
  local class, label = status_of(r)
  out[#out + 1] = ('<article class="run %s"><header><span class="badge">%s</span>%s <b>%s</b> · epoch %s'):format(
    class, label, r.graded == true and ' <span class="graded" title="a model judged this run">model-graded ◆</span>'
    or "", escape(tostring(r.variant or "?")), escape(tostring(r.epoch or "?")))
  if info.trace then out[#out + 1] = (' · <a class="trace" href="%s">trace</a>'):format(href(info.trace)) end
  out[#out + 1] = "</header>"
  if r.skipped then
    out[#out + 1] = ('<p class="skip">not run: %s</p></article>'):format(escape(tostring(r.skipped == true and
      (r.error or "skipped") or r.skipped)))
    return
  end
  out[#out + 1] = eval_page.facts(r)
  if r.stopped_by and r.stopped_by ~= json.null and r.stopped_by ~= "answer" then
    out[#out + 1] = ('<p class="dim">stopped by %s</p>'):format(escape(tostring(r.stopped_by)))
  end
  if r.note and r.note ~= json.null and r.note ~= "" then
    out[#out + 1] = ('<p class="note">%s</p>'):format(escape(tostring(r.note)))
  end
  if class == "waiting" then
    out[#out + 1] = ('<p class="note">waits for a person to approve %s: luagent approve, then luagent eval --resume</p>')
      :format(escape(require("luagent.eval.view").waits_for(r.waiting)))
  end
  if class == "error" then out[#out + 1] = ('<pre class="error">%s</pre>'):format(escape(tostring(r.error))) end
  out[#out + 1] = "<h4>Final answer</h4>"
  if info.has_final then
    local answer = compare.answer_text(info.final)
    out[#out + 1] = pre_text(answer, "answer")
    if base_name and base_info and base_info.has_final then
      local base_answer = compare.answer_text(base_info.final)
      if base_answer == answer then
        out[#out + 1] = ('<p class="same">the same answer as %s</p>'):format(escape(base_name))
      else
        out[#out + 1] = ("<details><summary>against %s</summary>%s</details>"):format(escape(base_name),
          pre_diff(compare.answer_diff(base_answer, answer)))
      end
    end
  else
    out[#out + 1] = '<p class="dim">none</p>'
  end
  if #info.paths > 0 then
    out[#out + 1] = "<h4>Outputs</h4>"
    for _, path in ipairs(info.paths) do
      render_file(out, state, path, info.files[path], base_info and base_info.files[path], base_name)
    end
  end
  out[#out + 1] = "</article>"
end

-- ---- the page ----

local CSS = [[
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2127;background:#f6f7f9}
main{padding:1.5em 2em}h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.15em;margin:1.6em 0 .6em}
h4{margin:.8em 0 .3em;font-size:.95em}.meta,.dim{color:#667}
table.variants{border-collapse:collapse;background:#fff;box-shadow:0 1px 2px #0001}
.variants th,.variants td{padding:.45em .9em;border-bottom:1px solid #e4e6ea;text-align:right;white-space:nowrap}
.variants th:first-child,.variants td:first-child{text-align:left}.variants th{background:#eef0f3;font-weight:600}
td.best{background:#e3f6e8;font-weight:600}td.best::after{content:" \2605";color:#1a7f37}
.grid{display:grid;gap:1em;overflow-x:auto}.colhead{font-weight:600;padding:.2em .4em;border-bottom:2px solid #c9ced6}
.run{background:#fff;border:1px solid #dde1e6;border-left:4px solid #9aa3ad;border-radius:6px;padding:.7em .9em;min-width:0}
.run.pass{border-left-color:#1a7f37}.run.fail{border-left-color:#cf222e}.run.error{border-left-color:#bc4c00}
.run.skipped{border-left-color:#8c959f;opacity:.8}.run header{margin-bottom:.3em}
.badge{display:inline-block;font-size:.8em;padding:.05em .5em;border-radius:1em;background:#eaeef2;font-weight:600}
.pass .badge{background:#dafbe1;color:#1a7f37}.fail .badge{background:#ffebe9;color:#cf222e}
.error .badge{background:#fff1e5;color:#bc4c00}.facts{margin:.2em 0;color:#444}
.run.waiting{border-left-color:#9a6700}.waiting .badge{background:#fff8c5;color:#9a6700}
.note{background:#f6f8fa;border-left:3px solid #8c959f;padding:.3em .6em;margin:.4em 0}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;border-radius:4px;padding:.5em .6em;margin:.3em 0;
max-height:24em;overflow:auto;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
pre.error{background:#fff1e5;color:#7a2e00}pre.diff span{display:block}
.d-add{background:#e6ffec;color:#116329}.d-del{background:#ffebe9;color:#a40e26}.d-hunk{color:#0550ae;background:#ddf4ff}
.d-note,.more{color:#667}span.d-add,span.d-del{padding:0 .2em;border-radius:3px}
.fname{font-weight:600;margin-top:.6em;font-size:.92em}.same{color:#1a7f37}.skip{color:#8c959f;font-style:italic}
img{max-width:100%;height:auto;border:1px solid #e4e6ea;border-radius:4px;margin:.3em 0;background:#fff}
a{color:#0969da}details summary{cursor:pointer;color:#0969da;margin:.3em 0}
.graded{color:#8250df;font-size:.85em;font-weight:600}]]
eval_page.CSS = CSS

-- The legend of model-graded runs, or nil when a model judged none.
local function graded_legend(rows)
  local graded, done, cost = 0, 0, nil
  for _, row in ipairs(rows) do
    graded, done = graded + (row.graded or 0), done + row.done
    if row.grading_cost then cost = (cost or 0) + row.grading_cost end
  end
  if graded == 0 then return nil end
  return ('<p class="dim" id="graded-legend"><span class="graded">◆</span> model-graded: a model judged %d of %d runs '
    .. "(a rubric, luagent.checks.graded); grading cost %s, not in $ / run.</p>"):format(graded, done,
    fmt(cost, "$%.4f"))
end

local function variant_table(out, rows)
  local legend = graded_legend(rows)
  local mark = legend and ' <span class="graded" title="model-graded: a model judged runs">◆</span>' or ""
  out[#out + 1] = '<section id="variant-table"><h2>Variants</h2><table class="variants"><thead><tr><th>variant</th>'
    .. "<th>runs</th><th>pass rate" .. mark .. "</th><th>mean score" .. mark .. "</th><th>turns / run</th>"
    .. "<th>tokens / run</th><th>$ / run</th><th>wall / run</th><th>errors</th><th>skipped</th></tr></thead><tbody>"
  for _, row in ipairs(rows) do
    local function cell(column, text)
      return ('<td%s>%s</td>'):format(row.best[column] and ' class="best" title="best of this column"' or "", text)
    end
    out[#out + 1] = ("<tr><td>%s</td><td>%d</td>%s%s%s%s%s%s<td>%d</td><td>%d</td></tr>"):format(escape(row.variant),
      row.runs, cell("pass_rate", row.pass_rate and ("%.0f%% (%d/%d)"):format(row.pass_rate * 100, row.passed,
      row.checked) or "—"), cell("mean_score", fmt(row.mean_score, "%.2f")), cell("mean_turns", fmt(row.mean_turns, "%.1f")),
      cell("mean_tokens", kilo(row.mean_tokens)), cell("mean_cost", fmt(row.mean_cost, "$%.4f")),
      cell("mean_wall_s", fmt(row.mean_wall_s, "%.1f s")),
      row.errors, row.skipped)
  end
  out[#out + 1] = '</tbody></table><p class="dim">Means per run that ran; ★ marks the best of each column.</p>'
    .. (legend or "") .. "</section>"
end

local function eval_name(eval_dir)
  return eval_dir:gsub("/+$", ""):match("([^/]+)$") or eval_dir
end

function eval_page.write(eval_dir, opts)
  assert(type(eval_dir) == "string", "eval_page.write: argument eval_dir must be a folder path")
  opts = opts or {}
  local results, err = eval_page.read_results(eval_dir)
  if not results then return nil, err end
  local rows = eval_page.variant_rows(results)
  -- inputs and epochs in order of appearance; the runs by input, epoch and variant
  local inputs, runs, epochs_of = {}, {}, {}
  local cost, live, cached = 0, 0, 0
  for _, r in ipairs(results) do
    local label = input_label(r.input)
    if not runs[label] then
      runs[label], epochs_of[label] = {}, {}
      inputs[#inputs + 1] = label
    end
    local epoch = tostring(r.epoch or 1)
    if not runs[label][epoch] then
      runs[label][epoch] = {}
      epochs_of[label][#epochs_of[label] + 1] = epoch
    end
    runs[label][epoch][tostring(r.variant or "?")] = r
    cost, live, cached = cost + (number(r.cost) or 0), live + (number(r.live_calls) or 0), cached + (number(r.cached_calls) or 0)
  end
  local name = opts.name or eval_name(eval_dir)
  local out = {("<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">"
    .. "<title>Eval %s</title><style>%s</style><main><h1>Eval %s</h1>"):format(escape(name), CSS, escape(name))}
  out[#out + 1] = ('<p class="meta">%d runs · %d variants · %d inputs · $%.4f · %d live model calls, %d from the cache</p>')
    :format(#results, #rows, #inputs, cost, live, cached)
  variant_table(out, rows)
  local state = {image_bytes = 0, max_image = opts.max_image or eval_page.MAX_IMAGE}
  local first = rows[1] and rows[1].variant
  for i, label in ipairs(inputs) do
    out[#out + 1] = ('<section class="input" id="input-%d"><h2>Input: %s</h2><div class="grid" '
      .. 'style="grid-template-columns:repeat(%d,minmax(22em,1fr))">'):format(i, escape(label), #rows)
    for _, row in ipairs(rows) do out[#out + 1] = ('<div class="colhead">%s</div>'):format(escape(row.variant)) end
    for _, epoch in ipairs(epochs_of[label]) do
      local by_variant = runs[label][epoch]
      local base = by_variant[first]
      local base_info = base and load_run(eval_dir, base)
      for _, row in ipairs(rows) do
        local r = by_variant[row.variant]
        if not r then
          out[#out + 1] = ('<article class="run skipped"><p class="skip">no run of %s, epoch %s</p></article>')
            :format(escape(row.variant), escape(epoch))
        elseif r == base or not base or base.skipped or not run_folder(eval_dir, base) then
          -- the first variant's own run, or nothing of it to compare with
          render_run(out, state, r, r == base and base_info or load_run(eval_dir, r), nil, nil)
        else
          render_run(out, state, r, load_run(eval_dir, r), base_info, first)
        end
      end
    end
    out[#out + 1] = "</div></section>"
  end
  out[#out + 1] = "</main></html>\n"
  local path = eval_dir .. "/index.html"
  local ok, werr = fs.write(path, table.concat(out)) -- atomic: a temporary file, then a rename
  if not ok then return nil, errors.wrap(werr, "writing the eval page") end
  return path
end

return eval_page

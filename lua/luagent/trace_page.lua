-- luagent.trace_page (internal; `luagent trace html` and the eval page use
-- it): a run's trace as one self-contained page
-- (inline CSS and script, images as data: URIs, nothing fetched). At the
-- top: the run's status, recipe, start, duration, totals (model calls,
-- tokens, cost, tool calls, sandbox commands), its agents, its settings
-- (run_start), its outputs (manifest.json: name, size, sha256, link; PNG
-- and JPEG shown) and its final answer. Then the timeline of model calls,
-- tool calls and sandbox commands per agent; a filter by kind (all, model,
-- tool, sandbox, errors; #filter=KIND in the address preselects one); and
-- the conversation, event by event (luagent.trace_page.events). Built in
-- one pass over the events after one indexing pass, with table.concat.
--
--   trace_page.render(events, {dir = run folder, out = where the page goes, source = trace path,
--                              max_image = bytes, max_images = bytes}) -> html
--   trace_page.write(trace_path | run_dir [, out_path]) -> out_path | nil, err   the page of a
--       trace file (luagent.trace.read) written to out_path (default: beside the trace; in a run
--       folder, its trace.html)
local json = require "luagent.json"
local fs = require "luagent.fs"
local errors = require "luagent.errors"
local trace = require "luagent.trace"
local markdown = require "luagent.markdown"
local index = require "luagent.trace_page.index"
local events_html = require "luagent.trace_page.events"
local timeline = require "luagent.trace_page.timeline"
local files = require "luagent.trace_page.files"
local style = require "luagent.trace_page.style"
local f = require "luagent.trace_page.format"

local trace_page = {}

local escape = f.escape

local function card(value, label)
  return ('<div class="card"><b>%s</b><span>%s</span></div>'):format(value, label)
end

-- Settings as rows "a.b.c = value", nested tables flattened, sorted.
local function flatten(prefix, value, rows)
  if prefix == "" and type(value) == "table" and next(value) == nil then return rows end
  if type(value) == "table" and value ~= json.null and not json.is_array(value) and next(value) ~= nil then
    for k, v in pairs(value) do flatten(prefix == "" and tostring(k) or (prefix .. "." .. tostring(k)), v, rows) end
  else
    local text = type(value) == "table" and json.encode(value) or tostring(value)
    rows[#rows + 1] = {prefix, text}
  end
  return rows
end

local function status_of(ix)
  if not ix.finish then return "unfinished", "st-warn", "the trace ends before run_end: the run was stopped or is still going" end
  local s = f.str(ix.finish.status) or "?"
  return s, s == "ok" and "st-ok" or "st-bad", f.str(ix.finish.error)
end

local function header(out, ix, state, opts)
  local start = ix.start or {}
  local run_id = f.str(start.run_id) or f.str(ix.finish and ix.finish.run_id) or "?"
  local status, class, why = status_of(ix)
  out[#out + 1] = ('<header class="top"><h1>luagent run %s <span class="badge %s" id="status">%s</span></h1>')
    :format(escape(run_id), class, escape(status))
  local meta = {}
  if f.str(start.recipe) then meta[#meta + 1] = "recipe " .. escape(start.recipe) end
  if f.num(start.time) then meta[#meta + 1] = "started " .. os.date("!%Y-%m-%d %H:%M:%S UTC", math.floor(start.time)) end
  meta[#meta + 1] = "took " .. f.secs(ix.finish and ix.finish.duration or ix.span)
  if f.str(start.version) then meta[#meta + 1] = "luagent " .. escape(start.version) end
  if f.str(start.replay) then meta[#meta + 1] = "replaying " .. escape(start.replay) end
  if f.str(start.record) then meta[#meta + 1] = "recording to " .. escape(start.record) end
  if opts.source then meta[#meta + 1] = "trace " .. escape(opts.source) end
  out[#out + 1] = '<p class="meta">' .. table.concat(meta, " · ") .. "</p>"
  if why then out[#out + 1] = ('<pre class="plain">%s</pre>'):format(escape(why)) end

  local T = ix.totals
  local approx = T.estimated and "≈" or ""
  out[#out + 1] = '<div class="cards" id="totals">'
    .. card(f.count(T.calls), ("model calls%s"):format(T.cached > 0 and (" · %d from the cache"):format(T.cached) or ""))
    .. card(approx .. f.tokens(T.input + T.output), ("tokens · %s%s in · %s%s out%s"):format(approx, f.tokens(T.input), approx,
      f.tokens(T.output), T.cached_tokens > 0 and (" · " .. f.tokens(T.cached_tokens) .. " cached") or ""))
    .. card(f.money(T.cost) .. (T.cost_unknown and "+" or ""), T.cost_unknown and "cost (some prices unknown)"
      or T.saved > 0 and ("cost · %s saved by the cache"):format(f.money(T.saved)) or "cost")
    .. card(f.count(T.tool_calls), ("tool calls%s"):format(T.tool_errors > 0
      and (" · %d error%s"):format(T.tool_errors, T.tool_errors == 1 and "" or "s") or ""))
    .. card(f.count(T.execs), ("sandbox commands · %s"):format(f.secs(T.exec_time)))
    .. card(('<a href="#filter=errors">%s</a>'):format(f.count(T.problems)), "errors and warnings")
    .. "</div>"

  if #ix.agent_list > 0 then
    out[#out + 1] = '<div class="agents"><table><thead><tr><th>agent</th><th>model</th><th>turns</th><th>stopped by</th>'
      .. "<th>tokens</th><th>cost</th><th>time</th></tr></thead><tbody>"
    for _, a in ipairs(ix.agent_list) do
      local e = a.finish or {}
      local u = type(e.usage) == "table" and e.usage or {}
      out[#out + 1] = ('<tr><td><span class="ag a%d">%s</span></td><td>%s</td><td class="num">%d</td><td>%s</td>'
        .. '<td class="num">%s</td><td class="num">%s</td><td class="num">%s</td></tr>'):format(a.n % 8, escape(a.name),
        escape(a.model or "?"), a.turns, escape(f.str(e.stopped_by) or (a.finish and "?" or "not finished")),
        f.tokens((f.num(u.input_tokens) or 0) + (f.num(u.output_tokens) or 0)), e.cost ~= nil and f.money(e.cost) or "",
        f.secs(e.duration))
    end
    out[#out + 1] = "</tbody></table></div>"
  end

  local rows = flatten("", type(start.settings) == "table" and start.settings or {}, {})
  table.sort(rows, function(a, b) return a[1] < b[1] end)
  if type(start.args) == "table" and next(start.args) ~= nil then rows[#rows + 1] = {"(arguments)", json.encode(start.args)} end
  out[#out + 1] = "<h2>Settings</h2>"
  if #rows == 0 then
    out[#out + 1] = '<p class="note">none: the recipe ran with its own defaults (no --set)</p>'
  else
    out[#out + 1] = '<div class="kv"><table>'
    for _, r in ipairs(rows) do
      out[#out + 1] = ("<tr><th>%s</th><td>%s</td></tr>"):format(escape(r[1]), escape(r[2]))
    end
    out[#out + 1] = "</table></div>"
  end

  local list, from, why_none = files.outputs(state)
  out[#out + 1] = '<h2 id="outputs">Outputs</h2>'
  if #list == 0 then
    out[#out + 1] = ('<p class="note">none: %s</p>'):format(escape(why_none))
  else
    out[#out + 1] = ('<p class="meta">from %s</p><table class="files"><thead><tr><th>file</th><th>size</th><th>sha256</th>'
      .. "</tr></thead><tbody>"):format(escape(from))
    local images = {}
    for _, e in ipairs(list) do
      local name = e.href and ('<a href="%s">%s</a>'):format(e.href, escape(e.path))
        or (escape(e.path) .. ' <span class="note">(not in the run folder)</span>')
      out[#out + 1] = ('<tr><td>%s</td><td class="num">%s</td><td><code class="sha">%s</code></td></tr>'):format(name,
        f.bytes(e.size), escape(e.sha256 or "?"))
      if files.is_image(e) then images[#images + 1] = files.image(state, e.path) end
    end
    out[#out + 1] = "</tbody></table>" .. table.concat(images)
  end

  if ix.final then
    local o = ix.final.output
    out[#out + 1] = '<h2>Answer</h2><div class="ev k-agent pin" id="answer">' .. (type(o) == "table"
      and ('<pre class="plain">%s</pre>'):format(escape(json.encode(o, {indent = 2})))
      or ('<div class="md">%s</div>'):format(markdown.html(tostring(o), {heading_offset = 2}))) .. "</div>"
  end
  out[#out + 1] = "</header>"
end

local FILTERS = {{"all", "all"}, {"model", "model"}, {"tool", "tools"}, {"sandbox", "sandbox"}, {"errors", "errors"}}

function trace_page.render(list, opts)
  assert(type(list) == "table", "trace_page.render: argument events must be a list of events")
  opts = opts or {}
  local ix = index.build(list)
  local state = files.new(opts)
  local out = {('<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width">'
    .. "<title>luagent run %s</title><style>%s</style><body data-filter=\"all\">"):format(
    escape(f.str(ix.start and ix.start.run_id) or "?"), style.CSS)}
  header(out, ix, state, opts)
  out[#out + 1] = '<section class="tlsec" id="timeline"><h2>Timeline</h2>' .. timeline.html(ix) .. "</section>"

  local ctx = {events = list, ix = ix, files = state}
  local body, counts = {}, {all = 0, model = 0, tool = 0, sandbox = 0, errors = 0}
  for i, ev in ipairs(list) do
    local html = events_html.render(ctx, i, ev)
    if html then
      body[#body + 1] = html
      counts.all = counts.all + 1
      local classes = html:match('^<div class="ev ([^"]*)"') or ""
      for word in classes:gmatch("%S+") do
        local kind = word:match("^k%-(%w+)$")
        if kind and counts[kind] then counts[kind] = counts[kind] + 1 end
        if word == "bad" or word == "warn" then counts.errors = counts.errors + 1 end
      end
    end
  end
  local buttons = {}
  for k, fl in ipairs(FILTERS) do
    buttons[k] = ('<button type="button" data-f="%s"%s>%s <span class="dim">%s</span></button>'):format(fl[1],
      fl[1] == "all" and ' class="on"' or "", fl[2], f.count(counts[fl[1]]))
  end
  out[#out + 1] = '<nav class="filter" id="filter">' .. table.concat(buttons) .. "</nav>"
  out[#out + 1] = '<main id="events">' .. table.concat(body, "\n") .. "</main>"
  out[#out + 1] = "<script>" .. style.JS .. "</script></body></html>\n"
  return table.concat(out)
end

-- The trace file, the run folder and the default page of a trace file or a run folder.
local function html_paths(path)
  local st = fs.stat(path)
  if st and st.type == "directory" then
    local dir = path:gsub("/+$", "")
    return dir .. "/trace.jsonl", dir, dir .. "/trace.html"
  end
  return path, path:match("^(.*)/[^/]*$") or ".", path:gsub("%.jsonl$", "") .. ".html"
end

function trace_page.write(path, out)
  local trace_path, dir, default = html_paths(path)
  local list, err = trace.read(trace_path)
  if not list then
    return errors.fail(err.kind, err.message .. "; give a trace.jsonl file or a run folder (runs/<run-id>/)",
      {path = trace_path, line = err.line})
  end
  out = out or default
  local page = trace_page.render(list, {dir = dir, out = out, source = trace_path})
  local ok, werr = fs.write(out, page) -- atomic: a temporary file, then a rename
  if not ok then return nil, werr end
  return out
end

return trace_page

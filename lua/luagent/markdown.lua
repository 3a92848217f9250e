-- luagent.markdown (internal; the trace page uses it): a small, safe
-- Markdown renderer for what models write. Blocks: ATX and setext headings,
-- paragraphs, bullet and numbered lists (nested by indentation), fenced and
-- indented code blocks (highlighted by luagent.highlight when the fence
-- names Python, shell, JSON, SQL or Lua), block quotes, tables (GitHub
-- style, with alignment), rules. Inline: code spans, *emphasis*, **strong**,
-- ~~strike~~, [links](https://...), <https://...> and bare http(s) URLs,
-- hard line breaks. Safe by construction: every character of the text is
-- escaped; the only tags in the result are the ones listed here; a link
-- keeps its href only when it is http or https (else its text alone);
-- images are not fetched (their alt text is shown, linked when http(s)).
--
--   markdown.html(text [, {heading_offset = 0}]) -> html
--       heading_offset: added to heading levels (at most h6), e.g. 2 when the page has h1 and h2 of its own
--   markdown.inline(text) -> html   one line of inline Markdown
--   markdown.escape(text) -> text with & < > " escaped (luagent.highlight.escape)
local highlight = require "luagent.highlight"

local markdown = {}

local escape = highlight.escape
markdown.escape = escape

local MAX_DEPTH = 16        -- nesting of inline spans and of blocks (lists, quotes) rendered as such

-- ---- inline ----

local BREAK = "\1"          -- a hard line break, marked before inline parsing

local function safe_href(dest)
  dest = dest:gsub("\\(%p)", "%1")
  if dest:match("^[Hh][Tt][Tt][Pp][Ss]?://[^%s%c]+$") then return dest end
  return nil
end

local function link_html(href, inner_html)
  return ('<a href="%s" rel="noopener noreferrer">%s</a>'):format(escape(href), inner_html)
end

local function text_html(s)
  return (escape(s):gsub(BREAK, "<br>"))
end

local inline_into

-- The link destination and the index after ')' of "(dest "title")" starting at i, or nil.
local function link_tail(s, i)
  if s:sub(i, i) ~= "(" then return nil end
  local j = s:find("%S", i + 1) or #s + 1
  local dest
  if s:sub(j, j) == "<" then
    local e = s:find(">", j + 1, true)
    if not e then return nil end
    dest, j = s:sub(j + 1, e - 1), e + 1
  else
    local depth, k = 0, j
    while k <= #s do
      local c = s:sub(k, k)
      if c == "\\" then k = k + 1
      elseif c == "(" then depth = depth + 1
      elseif c == ")" then
        if depth == 0 then break end
        depth = depth - 1
      elseif c:match("[%s%c]") then break end
      k = k + 1
    end
    dest, j = s:sub(j, k - 1), k
  end
  j = s:find("%S", j) or #s + 1
  local q = s:sub(j, j)
  if q == '"' or q == "'" then
    local e = s:find(q, j + 1, true)
    if not e then return nil end
    j = s:find("%S", e + 1) or #s + 1
  end
  if s:sub(j, j) ~= ")" then return nil end
  return dest, j + 1
end

-- The index of the ']' closing the '[' at i, or nil.
local function closing_bracket(s, i)
  local depth, k = 0, i
  while true do
    k = s:find("[%[%]\\`]", k + 1)
    if not k then return nil end
    local c = s:sub(k, k)
    if c == "\\" then k = k + 1
    elseif c == "`" then
      local run = s:match("^`+", k)
      local _, e = s:find(run, k + #run, true)
      if e then k = e end
    elseif c == "[" then depth = depth + 1
    elseif depth == 0 then return k
    else depth = depth - 1 end
  end
end

-- Emphasis delimiters, longest first: open, the pattern of a valid closer, the tag.
local DELIMS = {
  {"***", "strong", "em"}, {"**", "strong"}, {"__", "strong"}, {"~~", "del"}, {"*", "em"}, {"_", "em"},
}

local function is_space(c)
  return c == "" or c:match("[%s\1]") ~= nil
end

-- The index of a valid closer of delimiter d after i (or nil).
local function find_closer(s, d, from)
  local k = from
  while true do
    k = s:find(d, k, true)
    if not k then return nil end
    local before, after = s:sub(k - 1, k - 1), s:sub(k + #d, k + #d)
    local ok = not is_space(before)
    if ok and #d == 1 and (after == d or before == d) then ok = false end      -- a single * is not half of **
    if ok and d:sub(1, 1) == "_" and after:match("[%w]") then ok = false end  -- snake_case is no emphasis
    if ok then return k end
    k = k + 1
  end
end

-- Appends the HTML of inline Markdown `s` to `out`.
inline_into = function(s, out, depth, in_link)
  local i, n, text_from = 1, #s, 1
  local nomatch = {}
  local function flush(upto)
    if upto >= text_from then out[#out + 1] = text_html(s:sub(text_from, upto)) end
  end
  local function emit(j, html, next_i)
    flush(j - 1)
    out[#out + 1] = html
    i, text_from = next_i, next_i
  end
  while i <= n do
    local j = s:find("[\\`%*_~%[!<hH]", i)
    if not j then break end
    local c = s:sub(j, j)
    i = j + 1
    if c == "\\" then
      local nxt = s:sub(j + 1, j + 1)
      if nxt:match("%p") then emit(j, escape(nxt), j + 2) end
    elseif c == "`" then
      local run = s:match("^`+", j)
      local _, e = s:find(run, j + #run, true)
      while e and s:sub(e + 1, e + 1) == "`" do _, e = s:find(run, e + 2, true) end
      if e then
        local body = s:sub(j + #run, e - #run):gsub(BREAK, " "):gsub("\n", " ")
        if body:match("^ .* $") and body:match("%S") then body = body:sub(2, -2) end
        emit(j, "<code>" .. escape(body) .. "</code>", e + 1)
      else
        i = j + #run
      end
    elseif c == "[" or (c == "!" and s:sub(j + 1, j + 1) == "[") then
      local open = c == "!" and j + 1 or j
      local close = not nomatch["]"] and closing_bracket(s, open)
      if not close then nomatch["]"] = true end
      local dest, after
      if close then dest, after = link_tail(s, close + 1) end
      if dest and depth < MAX_DEPTH then
        local label = s:sub(open + 1, close - 1)
        local href = safe_href(dest)
        local inner = {}
        if c == "!" then
          inner[1] = '<span class="md-img">image: ' .. text_html(label ~= "" and label or dest) .. "</span>"
        else
          inline_into(label, inner, depth + 1, true)
        end
        local html = table.concat(inner)
        emit(j, (href and not in_link) and link_html(href, html) or html, after)
      end
    elseif c == "<" then
      local url = s:match("^<([Hh][Tt][Tt][Pp][Ss]?://[^%s<>]+)>", j)
      if url and not in_link then emit(j, link_html(url, escape(url)), j + #url + 2) end
    elseif c == "h" or c == "H" then
      local url = not in_link and (j == 1 or not s:sub(j - 1, j - 1):match("[%w/]"))
        and s:match("^[Hh][Tt][Tt][Pp][Ss]?://[^%s<>\"'`]+", j)
      if url then
        while true do                           -- trailing punctuation is the sentence's, a ) only when unbalanced
          local last = url:sub(-1)
          local open_parens, close_parens = select(2, url:gsub("%(", "")), select(2, url:gsub("%)", ""))
          if last:match("[%.,;:!%?%]%*_~]") or (last == ")" and open_parens < close_parens) then
            url = url:sub(1, -2)
          else
            break
          end
        end
        if url:match("://.") then emit(j, link_html(url, escape(url)), j + #url) end
      end
    elseif c == "*" or c == "_" or c == "~" then
      for _, d in ipairs(DELIMS) do
        local mark, tag = d[1], d[2]
        if s:sub(j, j + #mark - 1) == mark then
          local after = s:sub(j + #mark, j + #mark)
          local before = j > 1 and s:sub(j - 1, j - 1) or ""
          local opens = not is_space(after) and not (mark:sub(1, 1) == "_" and before:match("[%w]"))
            and not (#mark == 1 and (after == mark or before == mark))
          local close = opens and depth < MAX_DEPTH and not nomatch[mark] and find_closer(s, mark, j + #mark + 1)
          if opens and not close then nomatch[mark] = true end
          if close then
            local inner = {}
            inline_into(s:sub(j + #mark, close - 1), inner, depth + 1, in_link)
            local html = "<" .. tag .. ">" .. table.concat(inner) .. "</" .. tag .. ">"
            if d[3] then html = "<" .. d[3] .. ">" .. html .. "</" .. d[3] .. ">" end
            emit(j, html, close + #mark)
            break
          end
        end
      end
    end
  end
  flush(n)
end

function markdown.inline(text)
  local out = {}
  inline_into((tostring(text):gsub(BREAK, "")), out, 0, false)
  return table.concat(out)
end

-- ---- blocks ----

local function blank(line)
  return not line:find("%S")
end

local function indent_of(line)
  return #line:match("^ *")
end

local function fence_of(line)
  local pad, fence, info = line:match("^( ? ? ?)(```+)%s*([^`]*)$")
  if not fence then pad, fence, info = line:match("^( ? ? ?)(~~~+)%s*(.*)$") end
  if fence then return fence, info:match("^(%S*)"), #pad end
  return nil
end

local function heading_of(line)
  local hashes, text = line:match("^ ? ? ?(#+)%s+(.-)%s*$")
  if not hashes then hashes = line:match("^ ? ? ?(#+)%s*$") text = "" end
  if hashes and #hashes <= 6 then return #hashes, (text:gsub("%s+#+$", ""):gsub("^#+$", "")) end
  return nil
end

local function is_rule(line)
  local squeezed = line:gsub("%s", "")
  return indent_of(line) < 4 and (squeezed:match("^%-%-%-+$") or squeezed:match("^%*%*%*+$") or squeezed:match("^___+$"))
    ~= nil
end

-- A list item's marker: {ordered, char (bullet or delimiter), start, indent, content column, text} or nil.
local function item_of(line)
  local pad, bullet, gap, text = line:match("^( *)([%-%*%+])( +)(.*)$")
  if not pad then pad, bullet = line:match("^( *)([%-%*%+])$") gap, text = " ", "" end
  if pad and #pad < 4 then
    if #gap > 4 then gap = " " end
    return {ordered = false, char = bullet, indent = #pad, column = #pad + 1 + #gap, text = text}
  end
  local num, delim
  pad, num, delim, gap, text = line:match("^( *)(%d%d?%d?%d?%d?%d?%d?%d?%d?)([%.%)])( +)(.*)$")
  if pad and #pad < 4 then
    if #gap > 4 then gap = " " end
    return {ordered = true, char = delim, start = tonumber(num), indent = #pad, column = #pad + #num + 1 + #gap,
            text = text}
  end
  return nil
end

-- The cells of a table row (| inside code spans and \| kept).
local function cells_of(line)
  line = line:match("^%s*(.-)%s*$")
  if line:sub(1, 1) == "|" then line = line:sub(2) end
  if line:sub(-1) == "|" and line:sub(-2, -2) ~= "\\" then line = line:sub(1, -2) end
  local cells, cur, in_code, k = {}, {}, false, 1
  while k <= #line do
    local c = line:sub(k, k)
    if c == "\\" and line:sub(k + 1, k + 1) == "|" then
      cur[#cur + 1] = "|"
      k = k + 1
    elseif c == "`" then
      in_code = not in_code
      cur[#cur + 1] = c
    elseif c == "|" and not in_code then
      cells[#cells + 1] = table.concat(cur):match("^%s*(.-)%s*$")
      cur = {}
    else
      cur[#cur + 1] = c
    end
    k = k + 1
  end
  cells[#cells + 1] = table.concat(cur):match("^%s*(.-)%s*$")
  return cells
end

-- A table's header line and delimiter row (|:--|--:|) at lines[i], i + 1?
local function is_table_start(lines, i)
  local line, nxt = lines[i], lines[i + 1]
  if not (nxt and line:find("|", 1, true) and nxt:match("^[%s|:%-]+$") and nxt:find("-", 1, true)) then return false end
  local delims = cells_of(nxt)
  for _, cell in ipairs(delims) do
    if not cell:match("^:?%-+:?$") then return false end
  end
  return #cells_of(line) == #delims
end

-- Does this line end a paragraph (start another block)?
local function interrupts(lines, i)
  local line = lines[i]
  if blank(line) or fence_of(line) or heading_of(line) or is_rule(line) or line:match("^ ? ? ?>") then return true end
  local item = item_of(line)
  if item and item.text ~= "" and (not item.ordered or item.start == 1) then return true end
  return is_table_start(lines, i)
end

local render_blocks

local function code_block(out, code, lang)
  local name = highlight.language(lang)
  local body = highlight.html(code, name)
  out[#out + 1] = ('<pre class="code"%s><code>%s</code></pre>'):format(
    name and (' data-lang="%s"'):format(name) or "", body)
end

local function paragraph_html(text_lines)
  local joined = table.concat(text_lines, "\n")
  joined = joined:gsub("  +\n", BREAK):gsub("\\\n", BREAK)
  joined = joined:match("^%s*(.-)%s*$")
  local out = {}
  inline_into(joined, out, 0, false)
  return table.concat(out)
end

-- A list starting at lines[i]; returns the index after it.
local function render_list(lines, i, out, opts, depth)
  local first = item_of(lines[i])
  local items, loose = {}, false
  local n = #lines
  while i <= n do
    local item = item_of(lines[i])
    if not item or item.ordered ~= first.ordered or item.char ~= first.char or item.indent >= first.column then break end
    local body = {item.text}
    local j = i + 1
    local saw_blank = false
    while j <= n do
      local line = lines[j]
      if blank(line) then
        local k = j + 1
        while k <= n and blank(lines[k]) do k = k + 1 end
        if k > n or indent_of(lines[k]) < item.column then break end
        for _ = j, k - 1 do body[#body + 1] = "" end
        saw_blank = true
        j = k
      elseif indent_of(line) >= item.column then
        body[#body + 1] = line:sub(item.column + 1)
        j = j + 1
      elseif not saw_blank and not interrupts(lines, j) and not item_of(line) and not blank(body[#body]) then
        body[#body + 1] = line:match("^%s*(.*)$")                       -- a lazy continuation line
        j = j + 1
      else
        break
      end
    end
    if saw_blank then loose = true end
    items[#items + 1] = body
    i = j
    -- a blank line between two items makes the list loose
    if i <= n and blank(lines[i]) then
      local k = i
      while k <= n and blank(lines[k]) do k = k + 1 end
      local nxt = k <= n and item_of(lines[k])
      if nxt and nxt.ordered == first.ordered and nxt.char == first.char and nxt.indent < first.column then
        loose, i = true, k
      else
        break
      end
    end
  end
  local tag = first.ordered and "ol" or "ul"
  out[#out + 1] = (first.ordered and first.start ~= 1) and ('<ol start="%d">'):format(first.start) or ("<" .. tag .. ">")
  for _, body in ipairs(items) do
    local inner = {}
    render_blocks(body, inner, opts, depth + 1, not loose)
    out[#out + 1] = "<li>" .. table.concat(inner) .. "</li>"
  end
  out[#out + 1] = "</" .. tag .. ">"
  return i
end

local function render_table(lines, i, out)
  local head = cells_of(lines[i])
  local aligns = {}
  for k, cell in ipairs(cells_of(lines[i + 1])) do
    local left, right = cell:sub(1, 1) == ":", cell:sub(-1) == ":"
    aligns[k] = (left and right) and "center" or right and "right" or left and "left" or nil
  end
  local function row(cells, tag)
    local parts = {"<tr>"}
    for k = 1, #head do
      local align = aligns[k] and (' style="text-align:%s"'):format(aligns[k]) or ""
      parts[#parts + 1] = ("<%s%s>%s</%s>"):format(tag, align, markdown.inline(cells[k] or ""), tag)
    end
    parts[#parts + 1] = "</tr>"
    return table.concat(parts)
  end
  out[#out + 1] = '<table class="md-table"><thead>' .. row(head, "th") .. "</thead><tbody>"
  i = i + 2
  while i <= #lines and not blank(lines[i]) and lines[i]:find("|", 1, true) do
    out[#out + 1] = row(cells_of(lines[i]), "td")
    i = i + 1
  end
  out[#out + 1] = "</tbody></table>"
  return i
end

-- Renders lines as blocks into out; tight: paragraphs without <p> (the items of a tight list).
render_blocks = function(lines, out, opts, depth, tight)
  local i, n = 1, #lines
  local offset = opts.heading_offset or 0
  while i <= n do
    local line = lines[i]
    local fence, info, pad = fence_of(line)
    local level, heading = heading_of(line)
    if blank(line) then
      i = i + 1
    elseif fence then
      local body = {}
      i = i + 1
      while i <= n do
        local close = lines[i]:match("^ ? ? ?([`~]+)%s*$")
        if close and close:sub(1, 1) == fence:sub(1, 1) and #close >= #fence then i = i + 1 break end
        body[#body + 1] = lines[i]:gsub("^" .. (" ?"):rep(pad), "")
        i = i + 1
      end
      code_block(out, table.concat(body, "\n"), info)
    elseif level then
      local h = math.min(level + offset, 6)
      out[#out + 1] = ("<h%d>%s</h%d>"):format(h, markdown.inline(heading), h)
      i = i + 1
    elseif is_rule(line) then
      out[#out + 1] = "<hr>"
      i = i + 1
    elseif line:match("^ ? ? ?>") then
      local body = {}
      while i <= n and not blank(lines[i]) do
        local quoted = lines[i]:match("^ ? ? ?> ?(.*)$")
        if not quoted and (interrupts(lines, i) or item_of(lines[i])) then break end
        body[#body + 1] = quoted or lines[i]
        i = i + 1
      end
      local inner = {}
      if depth < MAX_DEPTH then render_blocks(body, inner, opts, depth + 1) else inner[1] = paragraph_html(body) end
      out[#out + 1] = "<blockquote>" .. table.concat(inner) .. "</blockquote>"
    elseif item_of(line) and depth < MAX_DEPTH then
      i = render_list(lines, i, out, opts, depth)
    elseif indent_of(line) >= 4 then
      local body = {}
      while i <= n and (blank(lines[i]) or indent_of(lines[i]) >= 4) do
        body[#body + 1] = lines[i]:sub(5)
        i = i + 1
      end
      while #body > 0 and blank(body[#body]) do body[#body] = nil end
      code_block(out, table.concat(body, "\n"), nil)
    elseif is_table_start(lines, i) then
      i = render_table(lines, i, out)
    else
      local para = {line}
      i = i + 1
      local setext
      while i <= n do
        local l = lines[i]
        if l:match("^ ? ? ?=+%s*$") then setext = 1 break end
        if l:match("^ ? ? ?%-+%s*$") then setext = 2 break end
        if interrupts(lines, i) then break end
        para[#para + 1] = l
        i = i + 1
      end
      if setext then
        local h = math.min(setext + offset, 6)
        out[#out + 1] = ("<h%d>%s</h%d>"):format(h, paragraph_html(para), h)
        i = i + 1
      elseif tight then
        out[#out + 1] = paragraph_html(para)
      else
        out[#out + 1] = "<p>" .. paragraph_html(para) .. "</p>"
      end
    end
  end
end

function markdown.html(text, opts)
  opts = opts or {}
  text = tostring(text or ""):gsub("\r\n?", "\n"):gsub(BREAK, "")
  local lines = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    -- tabs in the indentation count as 4 spaces
    local lead = line:match("^[ \t]*")
    if lead:find("\t", 1, true) then line = lead:gsub("\t", "    ") .. line:sub(#lead + 1) end
    lines[#lines + 1] = line
  end
  local out = {}
  render_blocks(lines, out, opts, 0, false)
  return table.concat(out, "\n")
end

return markdown

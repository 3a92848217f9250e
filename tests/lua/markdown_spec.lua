-- The trace page's Markdown renderer (luagent.markdown) and code highlighter
-- (luagent.highlight): what models write renders as people expect, and
-- nothing in the text ever becomes markup of its own: every <script> (in
-- text, code spans, code blocks, links, tables) comes out as text, links
-- keep an href only for http and https, and the only tags are the
-- renderer's own.
local t = require "helper"
local markdown = require "luagent.markdown"
local highlight = require "luagent.highlight"

local function html(text) return markdown.html(text) end

local function has(s, plain, what)
  t.ok(s:find(plain, 1, true), (what or "") .. " has " .. plain .. " in:\n" .. s)
end

local function lacks(s, plain, what)
  t.ok(not s:find(plain, 1, true), (what or "") .. " lacks " .. plain .. " in:\n" .. s)
end

-- The tags and attributes the renderer and the highlighter may produce.
local TAGS = {p = true, h1 = true, h2 = true, h3 = true, h4 = true, h5 = true, h6 = true, ul = true, ol = true,
              li = true, pre = true, code = true, span = true, em = true, strong = true, del = true, a = true,
              blockquote = true, hr = true, br = true, table = true, thead = true, tbody = true, tr = true, th = true,
              td = true}
local ATTRS = {href = true, rel = true, class = true, start = true, style = true, ["data-lang"] = true}

-- Every tag of the output is one of TAGS with ATTRS only; every href is http(s). Returns a problem or nil.
local function markup_problem(out)
  for tag in out:gmatch("<([^>]*)>") do
    local name = tag:match("^/?([%w]+)")
    if not name or not TAGS[name:lower()] then return "tag <" .. tag .. ">" end
    local rest = tag:gsub("^/?[%w]+", "")
    for attr, value in rest:gmatch('%s([%w%-]+)="([^"]*)"') do
      if not ATTRS[attr] then return "attribute " .. attr end
      if attr == "href" and not value:match("^https?://") then return "href " .. value end
    end
    local stripped = rest:gsub('%s[%w%-]+="[^"]*"', "")
    if stripped:find("%S") then return "stray text in a tag: <" .. tag .. ">" end
  end
  return nil
end

t.test("headings, paragraphs, emphasis, strong, strike, code spans", function()
  local out = html("# Title\n\nSome *em*, **strong**, ~~gone~~ and `x < y`.\nNext line.\n\n### Third")
  has(out, "<h1>Title</h1>")
  has(out, "<p>Some <em>em</em>, <strong>strong</strong>, <del>gone</del> and <code>x &lt; y</code>.\nNext line.</p>")
  has(out, "<h3>Third</h3>")
  t.eq(markdown.html("## Two", {heading_offset = 2}), "<h4>Two</h4>")
  t.eq(markdown.html("##### Five", {heading_offset = 2}), "<h6>Five</h6>", "at most h6")
  t.eq(html("Setext\n======"), "<h1>Setext</h1>")
end)

t.test("snake_case and lone stars stay text", function()
  t.eq(html("call read_csv_file and 2 * 3 * 4"), "<p>call read_csv_file and 2 * 3 * 4</p>")
  t.eq(html("a ** b"), "<p>a ** b</p>")
  t.eq(html("_one_ and __two__"), "<p><em>one</em> and <strong>two</strong></p>")
end)

t.test("lists: bullets, numbers with their start, nesting, loose items", function()
  local out = html("- one\n- two **b**\n  - nested `c`\n- three\n\n3. three\n4. four")
  has(out, "<ul>\n<li>one</li>\n<li>two <strong>b</strong><ul><li>nested <code>c</code></li></ul></li>\n<li>three</li>\n</ul>")
  has(out, '<ol start="3">\n<li>three</li>\n<li>four</li>\n</ol>')
  has(html("1. a\n\n2. b"), "<li><p>a</p></li>", "a loose list")
end)

t.test("fenced code blocks are highlighted by language; others only escaped", function()
  local out = html("```python\nimport os  # note\nx = 'a' + 1\n```")
  t.eq(out, '<pre class="code" data-lang="python"><code><span class="hl-k">import</span> os  '
    .. '<span class="hl-c"># note</span>\nx = <span class="hl-s">\'a\'</span> + <span class="hl-n">1</span></code></pre>')
  t.eq(html("~~~\n<b>plain</b>\n~~~"), '<pre class="code"><code>&lt;b&gt;plain&lt;/b&gt;</code></pre>')
  t.eq(html("    indented <i>\n    code"), '<pre class="code"><code>indented &lt;i&gt;\ncode</code></pre>')
  has(html("```bash\necho \"$HOME\" # hi\n```"), '<span class="hl-s">&quot;$HOME&quot;</span> <span class="hl-c"># hi</span>')
end)

t.test("the highlighter knows Python, shell, JSON, SQL and Lua", function()
  t.eq(highlight.html('{"a": [1, true, null], "b": "c"}', "json"),
    '{<span class="hl-p">&quot;a&quot;</span>: [<span class="hl-n">1</span>, <span class="hl-b">true</span>, '
    .. '<span class="hl-b">null</span>], <span class="hl-p">&quot;b&quot;</span>: <span class="hl-s">&quot;c&quot;</span>}')
  t.eq(highlight.html("SELECT a FROM t WHERE b = 'it''s' -- c", "sql"),
    '<span class="hl-k">SELECT</span> a <span class="hl-k">FROM</span> t <span class="hl-k">WHERE</span> b = '
    .. '<span class="hl-s">\'it\'\'s\'</span> <span class="hl-c">-- c</span>')
  t.eq(highlight.html("local s = [[x]] --[[ c ]] return nil", "lua"),
    '<span class="hl-k">local</span> s = <span class="hl-s">[[x]]</span> <span class="hl-c">--[[ c ]]</span> '
    .. '<span class="hl-k">return</span> <span class="hl-b">nil</span>')
  t.eq(highlight.html('x = f"{a}" """doc\n"""', "py"),
    'x = <span class="hl-s">f&quot;{a}&quot;</span> <span class="hl-s">&quot;&quot;&quot;doc\n&quot;&quot;&quot;</span>')
  t.eq(highlight.html("echo a#b ${X} $1", "sh"),
    '<span class="hl-b">echo</span> a#b <span class="hl-v">${X}</span> <span class="hl-v">$1</span>')
  local plain, known = highlight.html("<x> & y", "cobol")
  t.eq(plain, "&lt;x&gt; &amp; y")
  t.eq(known, false)
  t.eq(highlight.language("Python3"), "python")
  t.eq(highlight.language("zsh"), "shell")
end)

t.test("tables with alignment; a | in a code span stays in its cell", function()
  local out = html("| name | n |\n|:-----|--:|\n| `a|b` | 2 |\n| *c* |")
  t.eq(out, '<table class="md-table"><thead><tr><th style="text-align:left">name</th><th style="text-align:right">n</th>'
    .. '</tr></thead><tbody>\n<tr><td style="text-align:left"><code>a|b</code></td><td style="text-align:right">2</td></tr>\n'
    .. '<tr><td style="text-align:left"><em>c</em></td><td style="text-align:right"></td></tr>\n</tbody></table>')
end)

t.test("links: http and https keep their href; anything else is text only", function()
  t.eq(html("[docs](https://example.org/a?b=1&c=\"2\")"),
    '<p><a href="https://example.org/a?b=1&amp;c=&quot;2&quot;" rel="noopener noreferrer">docs</a></p>')
  t.eq(html('[x](http://e.com "title")'), '<p><a href="http://e.com" rel="noopener noreferrer">x</a></p>')
  for _, bad in ipairs({"javascript:alert(1)", "JAVASCRIPT:alert(1)", "data:text/html,<script>alert(1)</script>",
                        "vbscript:x", "file:///etc/passwd", "/relative", "//evil.example/x", " javascript:x"}) do
    local out = html("[click](" .. bad .. ")")
    lacks(out, "href", bad)
    lacks(out, "<script", bad)
  end
  t.eq(html("see <https://a.example/x> and https://b.example/y."),
    '<p>see <a href="https://a.example/x" rel="noopener noreferrer">https://a.example/x</a> and '
    .. '<a href="https://b.example/y" rel="noopener noreferrer">https://b.example/y</a>.</p>')
  t.eq(html("![a chart](https://img.example/c.png)"),
    '<p><a href="https://img.example/c.png" rel="noopener noreferrer"><span class="md-img">image: a chart</span></a></p>',
    "an image is never fetched: its alt text, linked")
  t.eq(html("[outer [inner](https://x.example)](https://y.example)"),
    '<p><a href="https://y.example" rel="noopener noreferrer">outer inner</a></p>', "no link inside a link")
end)

t.test("a <script> in any text or code never becomes markup", function()
  local s = "<script>alert(1)</script>"
  local cases = {
    s, "# " .. s, "*" .. s .. "*", "`" .. s .. "`", "```html\n" .. s .. "\n```", "```python\nprint('" .. s .. "')\n```",
    "    " .. s, "> " .. s, "- " .. s, "| a |\n|---|\n| " .. s .. " |", "[" .. s .. "](https://e.com)",
    "[x](https://e.com/" .. s .. ")", "<https://e.com/" .. s .. ">", "https://e.com/" .. s, "![" .. s .. "](x)",
    "<img src=x onerror=alert(1)>", '<a href="javascript:alert(1)">x</a>', "<!-- comment -->", "<SCRIPT>x</SCRIPT>",
    "&lt;script&gt; stays &amp;lt;", "\1<script>\1",
  }
  for _, case in ipairs(cases) do
    local out = html(case)
    t.ok(not out:lower():find("<script", 1, true), "no <script> tag from " .. case .. ":\n" .. out)
    t.ok(not out:lower():find("<img", 1, true), "no <img> from " .. case)
    t.eq(markup_problem(out), nil, case)
  end
  t.eq(html("&lt;script&gt;"), "<p>&amp;lt;script&amp;gt;</p>", "entities in the text are shown as typed")
  for _, lang in ipairs({"python", "sh", "json", "sql", "lua", "none"}) do
    t.eq(markup_problem(highlight.html("'" .. s .. "' \"" .. s .. "\" # " .. s .. "\n-- " .. s, lang)), nil, lang)
  end
end)

t.test("any mix of Markdown's characters gives only the renderer's own tags", function()
  local pieces = {"*", "**", "_", "__", "~~", "`", "```", "[", "]", "(", ")", "<", ">", "!", "#", "- ", "1. ", "|",
                  "\n", "\n\n", "    ", "> ", "https://x.example/", "javascript:", "<script>", "&", '"', "\\", "a", "b c"}
  local seed = 12345
  local function rand(n)
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed % n + 1
  end
  for _ = 1, 400 do
    local parts = {}
    for k = 1, rand(40) do parts[k] = pieces[rand(#pieces)] end
    local text = table.concat(parts)
    local out = markdown.html(text)
    local problem = markup_problem(out)
    t.ok(problem == nil, ("%s from %q:\n%s"):format(tostring(problem), text, out))
  end
end)

t.test("long and deeply nested input renders without blowing up", function()
  local deep = ("> "):rep(200) .. "quote"
  t.ok(#html(deep) > 0)
  local stars = ("*a "):rep(5000)
  local started = luagent.now()
  local out = html(stars)
  t.ok(luagent.now() - started < 2, "5,000 unmatched stars render quickly")
  t.eq(markup_problem(out), nil)
  t.ok(#html(("[x"):rep(3000)) > 0)
  t.ok(#html(("- "):rep(100) .. "x") > 0)
end)

return t.done()

-- luagent.highlight (internal; the trace page and luagent.markdown use it):
-- text and source code as safe HTML. Code comes back escaped, with
-- <span class="hl-X"> around its tokens: k keyword, b builtin or literal,
-- s string, c comment, n number, p JSON key, v shell variable. Languages:
-- Python, shell, JSON, SQL and Lua (a few aliases each); any other text is
-- only escaped. One scan from left to right; nothing from the text becomes
-- markup.
--
--   highlight.escape(text) -> text with & < > " as entities (for text and attribute values)
--   highlight.language(name) -> "python"|"shell"|"json"|"sql"|"lua" | nil   (name: "py", "bash", "JSON", ...)
--   highlight.html(code, lang) -> html, known   known: whether lang is one of the five
local highlight = {}

local ENTITIES = {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;"}

function highlight.escape(text)
  return (tostring(text):gsub('[&<>"]', ENTITIES))
end
local escape = highlight.escape

local function set(words)
  local s = {}
  for w in words:gmatch("%S+") do s[w] = true end
  return s
end

local LANGS = {
  python = {
    line_comment = "#", quotes = {'"', "'"}, triple = true, prefixes = set"r b f u rb br fr rf R B F U",
    keywords = set[[and as assert async await break class continue def del elif else except finally for from global
      if import in is lambda match nonlocal not or pass raise return try while with yield]],
    builtins = set[[True False None self print len range enumerate zip map filter sorted sum min max abs round open
      int float str list dict set tuple bool type isinstance super Exception ValueError KeyError TypeError]],
  },
  shell = {
    line_comment = "#", word_comment = true, quotes = {'"', "'"}, variables = true, multiline = true,
    keywords = set[[if then else elif fi for while until do done case esac in function return select time]],
    builtins = set[[echo printf cd export local set unset read exit test true false source eval exec shift trap
      cat ls grep sed awk head tail sort uniq wc cut tr mkdir rm cp mv find xargs python python3 pip sh bash]],
  },
  json = {quotes = {'"'}, keys = true, builtins = set"true false null"},
  sql = {
    line_comment = "--", block = {"/*", "*/"}, quotes = {"'", '"'}, nocase = true, multiline = true,
    keywords = set[[select from where and or not in is null as join left right inner outer full cross on group by
      order having limit offset union all distinct insert into values update set delete create table view index
      drop alter add primary key foreign references with case when then else end asc desc between like exists
      cast over partition]],
    builtins = set"count sum avg min max coalesce round date now true false",
  },
  lua = {
    line_comment = "--", long_brackets = true, quotes = {'"', "'"},
    keywords = set[[and break do else elseif end for function goto if in local not or repeat return then until
      while]],
    builtins = set[[true false nil self print pairs ipairs require type tostring tonumber error assert pcall select
      string table math io os setmetatable getmetatable]],
  },
}

local ALIASES = {
  python = "python", py = "python", python3 = "python", py3 = "python", ipython = "python",
  shell = "shell", sh = "shell", bash = "shell", zsh = "shell", console = "shell", shellsession = "shell",
  json = "json", jsonl = "json", jsonc = "json",
  sql = "sql", sqlite = "sql", postgresql = "sql", postgres = "sql", mysql = "sql",
  lua = "lua",
}

function highlight.language(name)
  if type(name) ~= "string" then return nil end
  return ALIASES[name:lower()]
end

-- ---- the scanner ----

-- The end of a quoted string that starts at i with quote q (its last index).
local function string_end(code, i, q, lang)
  if lang.triple and code:sub(i, i + 2) == q:rep(3) then
    local _, e = code:find(q:rep(3), i + 3, true)
    return e or #code
  end
  local escapes = not (lang.variables and q == "'")        -- no escapes in a shell '...'
  local stop = escapes and ("[\\\n" .. q .. "]") or ("[\n" .. q .. "]")
  local j = i + 1
  while true do
    local k = code:find(stop, j)
    if not k then return #code end
    local c = code:sub(k, k)
    if c == "\\" then
      j = k + 2
    elseif c == "\n" then
      if not lang.multiline then return k - 1 end
      j = k + 1
    elseif lang.nocase and code:sub(k + 1, k + 1) == q then   -- SQL: '' inside '...'
      j = k + 2
    else
      return k
    end
  end
end

local NUMBER_PATTERNS = {"^0[xX][%x_]+", "^%d[%d_]*%.?%d*[eE][%+%-]?%d+", "^%d[%d_]*%.?%d*", "^%.%d+[eE]?[%+%-]?%d*"}

function highlight.html(code, lang_name)
  code = tostring(code or "")
  local name = highlight.language(lang_name)
  local lang = name and LANGS[name]
  if not lang then return escape(code), false end
  local out, plain_from = {}, 1
  local i, n = 1, #code
  local function token(class, to)
    if i > plain_from then out[#out + 1] = escape(code:sub(plain_from, i - 1)) end
    out[#out + 1] = '<span class="hl-' .. class .. '">' .. escape(code:sub(i, to)) .. "</span>"
    i, plain_from = to + 1, to + 1
  end
  while i <= n do
    local c = code:sub(i, i)
    local prev = i > 1 and code:sub(i - 1, i - 1) or "\n"
    if c:match("%s") then
      i = (code:find("%S", i) or n + 1)
    elseif lang.long_brackets and code:match("^%-%-%[=*%[", i) then
      local eq = code:match("^%-%-%[(=*)%[", i)
      local _, e = code:find("]" .. eq .. "]", i, true)
      token("c", e or n)
    elseif lang.long_brackets and code:match("^%[=*%[", i) then
      local eq = code:match("^%[(=*)%[", i)
      local _, e = code:find("]" .. eq .. "]", i, true)
      token("s", e or n)
    elseif lang.block and code:sub(i, i + #lang.block[1] - 1) == lang.block[1] then
      local _, e = code:find(lang.block[2], i + #lang.block[1], true)
      token("c", e or n)
    elseif lang.line_comment and code:sub(i, i + #lang.line_comment - 1) == lang.line_comment
        and (not lang.word_comment or prev:match("[%s;|&(]")) then
      token("c", (code:find("\n", i, true) or n + 1) - 1)
    elseif c == '"' or c == "'" or (c == "`" and lang.variables) then
      local e = string_end(code, i, c, lang)
      local is_key = lang.keys and code:match("^%s*:", e + 1)
      token(is_key and "p" or "s", e)
    elseif c:match("%d") or (c == "." and code:match("^%.%d", i)) then
      if prev:match("[%w_]") then
        i = i + 1
      else
        local e
        for _, p in ipairs(NUMBER_PATTERNS) do
          local s, f = code:find(p, i)
          if s then e = f break end
        end
        token("n", e or i)
      end
    elseif c:match("[%a_]") then
      local word = code:match("^[%a_][%w_]*", i)
      local e = i + #word - 1
      local after = code:sub(e + 1, e + 1)
      local key = lang.nocase and word:lower() or word
      if lang.prefixes and lang.prefixes[word] and (after == '"' or after == "'") then
        token("s", string_end(code, e + 1, after, lang))
      elseif lang.keywords and lang.keywords[key] then
        token("k", e)
      elseif lang.builtins and lang.builtins[key] and prev ~= "." then
        token("b", e)
      else
        i = e + 1
      end
    elseif c == "$" and lang.variables then
      local e = select(2, code:find("^%$[%a_][%w_]*", i)) or select(2, code:find("^%${[^}\n]*}", i))
        or select(2, code:find("^%$[%d@#%?%$!%*%-]", i))
      if e then token("v", e) else i = i + 1 end
    else
      i = i + 1
    end
  end
  if plain_from <= n then out[#out + 1] = escape(code:sub(plain_from)) end
  return table.concat(out), true
end

return highlight

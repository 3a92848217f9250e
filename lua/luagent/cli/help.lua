-- luagent help [TOPIC] | help --man: luagent's command-line help, rendered
-- from the one source, luagent.cli.help_pages: the usage summary (`luagent
-- help`, `luagent --help`, and on stderr for `luagent` alone), a command's
-- page (`luagent help run`, `luagent run --help`), a topic's page (`luagent
-- help sandboxes`) and the man page (roff, the topics as its TOPICS section;
-- the Makefile writes build/luagent.1 with it and `make install` installs it).
--
--   help.summary() -> text         help.page(topic) -> text | nil
--   help.man() -> roff text        help.topics() -> {"run", ..., "recipes", ...}
--   help.main(args) -> exit status: 0 printed, 2 an unknown topic or option
--       (the topics listed)
local pages = require "luagent.cli.help_pages"

local help = {}

local WIDTH = 78

-- The commands, then the topics that are not commands.
function help.topics()
  local all = {table.unpack(pages.ORDER)}
  for _, topic in ipairs(pages.GUIDES) do all[#all + 1] = topic end
  return all
end

-- The paragraphs of a text: {verbatim = bool, lines = {...}}; a paragraph
-- whose lines all start with two spaces is kept as it is.
local function paragraphs(text)
  local out = {}
  for block in (text .. "\n\n"):gmatch("(.-)\n%s*\n") do
    local lines = {}
    for line in block:gmatch("[^\n]+") do lines[#lines + 1] = line end
    if #lines > 0 then
      local verbatim = true
      for _, line in ipairs(lines) do verbatim = verbatim and line:sub(1, 2) == "  " end
      out[#out + 1] = {verbatim = verbatim, lines = lines}
    end
  end
  return out
end

-- Text filled to `width` columns, each line led by `indent` (the first by
-- `first`, when given).
local function fill(text, indent, width, first)
  local lines, line = {}, first or indent
  local empty = true
  for word in text:gmatch("%S+") do
    if not empty and #line + 1 + #word > width then
      lines[#lines + 1] = line
      line, empty = indent, true
    end
    line = line .. (empty and "" or " ") .. word
    empty = false
  end
  lines[#lines + 1] = line
  return table.concat(lines, "\n")
end

-- Rows of {term, text} as a list: a short term with its text beside it,
-- a long one with its text on the next line.
local function term_list(rows, term_width)
  local out = {}
  local indent = ("  %-" .. term_width .. "s  "):format("")
  for _, row in ipairs(rows) do
    if #row[1] <= term_width then
      out[#out + 1] = fill(row[2], indent, WIDTH, ("  %-" .. term_width .. "s  "):format(row[1]))
    else
      out[#out + 1] = "  " .. row[1] .. "\n" .. fill(row[2], indent, WIDTH)
    end
  end
  return table.concat(out, "\n")
end

-- The environment variables a topic's page names.
local function environment_of(topic)
  local rows = {}
  for _, env in ipairs(pages.ENVIRONMENT) do
    for _, t in ipairs(env.topics) do
      if t == topic then rows[#rows + 1] = {env[1], env[2]} end
    end
  end
  return rows
end

function help.summary()
  local out = {"usage: luagent <command> [options]", ""}
  for _, topic in ipairs(pages.ORDER) do out[#out + 1] = pages.TOPICS[topic].usage end
  local names = {}
  for _, env in ipairs(pages.ENVIRONMENT) do names[#names + 1] = env[1] end
  out[#out + 1] = ""
  out[#out + 1] = fill("Topics: " .. table.concat(pages.GUIDES, ", ") .. ".", "", WIDTH)
  out[#out + 1] = fill("Environment: " .. table.concat(names, ", ") .. ".", "", WIDTH)
  out[#out + 1] = "'luagent help COMMAND' (or 'luagent COMMAND --help') for a command's page,"
  out[#out + 1] = "'luagent help TOPIC' for a topic's; 'man luagent' has them all."
  return table.concat(out, "\n") .. "\n"
end

function help.page(topic)
  local p = pages.TOPICS[topic]
  if not p then return nil end
  local out = {}
  if p.synopsis then -- a command
    out[1] = ("luagent %s: %s"):format(topic, p.about)
    out[2] = ""
    for i, line in ipairs(p.synopsis) do out[#out + 1] = (i == 1 and "usage: " or "       ") .. line end
  else
    out[1] = ("luagent help %s: %s"):format(topic, p.about)
  end
  for _, para in ipairs(paragraphs(p.text)) do
    out[#out + 1] = ""
    out[#out + 1] = para.verbatim and table.concat(para.lines, "\n")
      or fill(table.concat(para.lines, " "), "  ", WIDTH)
  end
  if p.rows then
    out[#out + 1] = ""
    out[#out + 1] = term_list(p.rows, p.term_width or 18)
  end
  local sections = {
    {"options", p.options or {}, 22}, {"examples", p.examples or {}}, {"exit status", p.exit or {}, 5},
    {"environment", environment_of(topic), 20},
  }
  for _, s in ipairs(sections) do
    local title, rows, term_width = s[1], s[2], s[3]
    if #rows > 0 then
      out[#out + 1] = ""
      out[#out + 1] = title .. ":"
      if term_width then
        out[#out + 1] = term_list(rows, term_width)
      else
        for _, row in ipairs(rows) do
          out[#out + 1] = "  " .. row[1] .. "\n" .. fill(row[2], "      ", WIDTH)
        end
      end
    end
  end
  out[#out + 1] = ""
  out[#out + 1] = fill("See also: " .. (p.see and p.see .. " " or "")
    .. "luagent help (every command and topic), man luagent.", "", WIDTH)
  return table.concat(out, "\n") .. "\n"
end

-- ---- the man page ----

-- Text for roff: backslashes and hyphens escaped, a leading . or ' made literal.
local function roff(text)
  text = text:gsub("\\", "\\e"):gsub("%-", "\\-")
  return (text:gsub("^([.'])", "\\&%1"):gsub("\n([.'])", "\n\\&%1"))
end

local function roff_paragraphs(text, out)
  for _, para in ipairs(paragraphs(text)) do
    if para.verbatim then
      out[#out + 1] = ".PP\n.RS 4\n.nf"
      for _, line in ipairs(para.lines) do out[#out + 1] = roff(line:sub(3)) end
      out[#out + 1] = ".fi\n.RE"
    else
      out[#out + 1] = ".PP"
      out[#out + 1] = roff(fill(table.concat(para.lines, " "), "", 72))
    end
  end
end

local function roff_terms(rows, out)
  for _, row in ipairs(rows) do
    out[#out + 1] = ".TP"
    out[#out + 1] = "\\fB" .. roff(row[1]) .. "\\fR"
    out[#out + 1] = roff(fill(row[2], "", 72))
  end
end

function help.man()
  local out = {
    ".\\\" luagent.1: generated by 'luagent help --man' from lua/luagent/cli/help_pages.lua and doc/help/*.md; do not edit",
    ('.TH LUAGENT 1 "" "luagent %s" "User Commands"'):format(luagent.version),
    ".nh\n.ad l", -- no hyphenation (names like OPENAI_BASE_URL stay whole), ragged right
    ".SH NAME",
    "luagent \\- run Lua recipes that drive language models and Docker sandboxes",
    ".SH SYNOPSIS",
    ".nf",
  }
  for _, topic in ipairs(pages.ORDER) do
    for _, line in ipairs(pages.TOPICS[topic].synopsis) do
      local cmd, rest = line:match("^(luagent %S+)(.*)$")
      out[#out + 1] = "\\fB" .. roff(cmd) .. "\\fR" .. roff(rest)
    end
  end
  out[#out + 1] = ".fi"
  out[#out + 1] = ".SH DESCRIPTION"
  roff_paragraphs(pages.INTRO, out)
  out[#out + 1] = ".SH COMMANDS"
  for _, topic in ipairs(pages.ORDER) do
    local p = pages.TOPICS[topic]
    out[#out + 1] = ('.SS "luagent %s"'):format(topic)
    out[#out + 1] = roff(p.about:sub(1, 1):upper() .. p.about:sub(2) .. ".")
    out[#out + 1] = ".PP\n.nf"
    for _, line in ipairs(p.synopsis) do out[#out + 1] = roff(line) end
    out[#out + 1] = ".fi"
    roff_paragraphs(p.text, out)
    for _, s in ipairs({{"Options:", p.options}, {"Examples:", p.examples}, {"Exit status:", p.exit}}) do
      if #s[2] > 0 then
        out[#out + 1] = ".PP\n" .. s[1]
        roff_terms(s[2], out)
      end
    end
  end
  out[#out + 1] = ".SH TOPICS"
  out[#out + 1] = roff("What a recipe author needs beyond the commands; each is also printed by luagent help TOPIC.")
  for _, topic in ipairs(pages.GUIDES) do
    local p = pages.TOPICS[topic]
    out[#out + 1] = ('.SS "%s"'):format(topic)
    out[#out + 1] = roff(p.about:sub(1, 1):upper() .. p.about:sub(2) .. ".")
    roff_paragraphs(p.text, out)
    if p.rows then roff_terms(p.rows, out) end
    if p.examples and #p.examples > 0 then
      out[#out + 1] = ".PP\nExamples:"
      roff_terms(p.examples, out)
    end
    if p.see then
      out[#out + 1] = ".PP"
      out[#out + 1] = roff(fill("See also: " .. p.see, "", 72))
    end
  end
  out[#out + 1] = ".SH EXIT STATUS"
  out[#out + 1] = roff("0 success, 1 a failure (the message says what failed and what to do), 2 bad usage, "
    .. "130 stopped by Ctrl-C, 128+N stopped by signal N; each command above lists its own.")
  out[#out + 1] = ".SH ENVIRONMENT"
  roff_terms(pages.ENVIRONMENT, out)
  out[#out + 1] = ".SH FILES"
  roff_terms(pages.FILES, out)
  out[#out + 1] = ".SH SEE ALSO"
  out[#out + 1] = "\\fBdocker\\fR(1), \\fBlua\\fR(1); README.md of the luagent sources."
  return table.concat(out, "\n") .. "\n"
end

-- Says what is wrong, with the topics (and the nearest one to `topic`); the usage status.
local function unknown(message, topic)
  local topics = help.topics()
  local hint = topic and require("luagent.eval.settings").suggest(topic, topics) or ""
  io.stderr:write(("luagent help: %s%s; the topics: %s\n"):format(message, hint, table.concat(topics, ", ")))
  return 2
end

function help.main(args)
  if #args == 0 then
    io.write(help.summary())
    return 0
  end
  if #args > 1 then return unknown("one topic at a time") end
  if args[1] == "--man" then
    io.write(help.man())
    return 0
  end
  local page = help.page(args[1])
  if not page then return unknown(("no topic '%s'"):format(args[1]), args[1]) end
  io.write(page)
  return 0
end

return help

-- luagent.checks.files (internal; luagent.checks gives its helpers): checks
-- on a run's declared outputs (run.outputs, from its manifest.json) and on
-- its final answer.
--
--   output_text(run, path, needle | {needles})   the file holds each text (plain, not a pattern)
--   output_matches(run, path, pattern)   string.find(content, pattern): a Lua pattern, not a regex
--   csv_columns(run, path, {"timestamp", "kwh"})  the CSV's header has these columns
--   output_json(run, path, schema)      the file is JSON that matches the schema (luagent.schema)
--   answer_schema(run, schema)          the final answer (a table, or JSON text) matches it
--
-- A path names one of the run's outputs as the manifest does
-- ("output/report.md") or inside output/ ("report.md"). What is refused, as a
-- failed check saying why, never an error: an absolute path, one with "..",
-- one the manifest does not list, a file that resolves outside the run's
-- folder (a link out), a file over MAX_BYTES; a malformed schema or Lua
-- pattern. Scores: the share of needles or columns found; else 1 or 0.
local fs = require "luagent.fs"
local json = require "luagent.json"
local schema = require "luagent.schema"
local verdict = require "luagent.checks.verdict"

local files = {}

files.MAX_BYTES = 16 * 1024 * 1024

local pass, fail = verdict.pass, verdict.fail

local function sorted_outputs(run)
  local list = {}
  for k in pairs(type(run.outputs) == "table" and run.outputs or {}) do list[#list + 1] = k end
  table.sort(list)
  if #list > 8 then list = {table.concat(list, ", ", 1, 8) .. ", ..."} end
  return verdict.join(list)
end

local function inside(path, root)
  return path == root or path:sub(1, #root + 1) == root .. "/"
end

-- The host file of one of the run's outputs: file, key | nil, why.
function files.resolve(run, path)
  if path:sub(1, 1) == "/" then
    return nil, ("'%s' is an absolute path: name one of the run's outputs (%s)"):format(path, sorted_outputs(run))
  end
  for part in path:gmatch("[^/]+") do
    if part == ".." then
      return nil, ("'%s' leaves the run's outputs (..): name one of them (%s)"):format(path, sorted_outputs(run))
    end
  end
  local outputs = type(run.outputs) == "table" and run.outputs or {}
  local key = outputs[path] and path or (outputs["output/" .. path] and "output/" .. path)
  if not key then return nil, ("no output '%s' (the run's outputs: %s)"):format(path, sorted_outputs(run)) end
  local file
  -- beside the manifest at its workspace path, or under the folder's output/ (as the eval page finds it)
  for _, candidate in ipairs(type(run.dir) == "string" and {run.dir .. "/" .. key,
      run.dir .. "/output/" .. (key:match("^[^/]+/(.+)$") or key)} or {}) do
    if not file and fs.stat(candidate) then file = candidate end
  end
  if not file then return nil, ("%s is listed but not in the run's folder"):format(key) end
  local real, root = fs.realpath(file), fs.realpath(run.dir)
  if not (real and root and inside(real, root)) then
    return nil, ("%s resolves outside the run's folder (%s): not read"):format(key, tostring(real))
  end
  return real, key
end

-- fn(content, key) -> verdict, over one output's content.
local function over_file(run, name, path, fn)
  verdict.run(run, name)
  if type(path) ~= "string" or path == "" then
    error(("checks.%s(run, path, ...): path must name an output, e.g. \"output/report.md\""):format(name), 3)
  end
  local file, key = files.resolve(run, path)
  if not file then return fail(key) end
  local st = fs.stat(file)
  if not st or st.type ~= "file" then return fail(key .. " is not a file") end
  if st.size > files.MAX_BYTES then
    return fail(("%s is too big to check (%d bytes; the helpers read up to %d)"):format(key, st.size, files.MAX_BYTES))
  end
  local content, err = fs.read(file)
  if not content then return fail(("%s cannot be read: %s"):format(key, err.message)) end
  return fn(content, key)
end

-- The share of `wanted` that `has(w)` finds, and the ones missing.
local function share(wanted, has)
  local missing = {}
  for _, w in ipairs(wanted) do if not has(w) then missing[#missing + 1] = w end end
  return (#wanted - #missing) / #wanted, missing
end

local function quoted(list)
  local out = {}
  for i, s in ipairs(list) do out[i] = ("'%s'"):format(s) end
  return verdict.join(out)
end

function files.output_text(run, path, needles)
  if type(needles) == "string" then needles = {needles} end
  verdict.list(needles, "output_text", "needle")
  return over_file(run, "output_text", path, function(content, key)
    local score, missing = share(needles, function(n) return content:find(n, 1, true) ~= nil end)
    if #missing == 0 then return pass(("%s has %s"):format(key, quoted(needles))) end
    return fail(("%s does not have %s"):format(key, quoted(missing)), score)
  end)
end

function files.output_matches(run, path, pattern)
  if type(pattern) ~= "string" then
    error("checks.output_matches(run, path, pattern): pattern must be a Lua pattern (a string)", 2)
  end
  return over_file(run, "output_matches", path, function(content, key)
    local ok, at = pcall(string.find, content, pattern)
    if not ok then return fail(("the pattern '%s' is malformed: %s"):format(pattern, tostring(at):gsub("^.-:%d+: ", ""))) end
    if at then return pass(("%s matches '%s'"):format(key, pattern)) end
    return fail(("%s does not match '%s'"):format(key, pattern))
  end)
end

-- The cells of one CSV line (quotes taken off, spaces trimmed).
local function cells_of(line)
  local out, i = {}, 1
  line = line:gsub("\r$", "")
  while i <= #line + 1 do
    local cell
    if line:sub(i, i) == '"' then
      local j, parts = i + 1, {}
      while true do
        local q = line:find('"', j, true)
        if not q then parts[#parts + 1] = line:sub(j); i = #line + 2; break end
        parts[#parts + 1] = line:sub(j, q - 1)
        if line:sub(q + 1, q + 1) == '"' then parts[#parts + 1] = '"'; j = q + 2
        else i = (line:find(",", q + 1, true) or #line + 1) + 1; break end
      end
      cell = table.concat(parts)
    else
      local comma = line:find(",", i, true) or #line + 1
      cell = line:sub(i, comma - 1)
      i = comma + 1
    end
    out[#out + 1] = cell:match("^%s*(.-)%s*$")
  end
  return out
end
files.cells_of = cells_of

function files.csv_columns(run, path, columns)
  verdict.list(columns, "csv_columns", "columns")
  return over_file(run, "csv_columns", path, function(content, key)
    local header = cells_of((content:gsub("^\239\187\191", "")):match("^[^\n]*"))
    local have = {}
    for _, c in ipairs(header) do have[c] = true end
    local score, missing = share(columns, function(c) return have[c] end)
    if #missing == 0 then return pass(("%s has the columns %s"):format(key, verdict.join(columns))) end
    return fail(("%s has no column %s (its columns: %s)"):format(key, quoted(missing), verdict.join(header)), score)
  end)
end

-- The problems of a schema given to a helper, as one line, or nil: it is valid.
local function malformed(s)
  if type(s) ~= "table" then return ("the schema is %s, not a JSON Schema table"):format(type(s)) end
  local ok, problems = pcall(schema.problems, s, "schema")
  if not ok then return "the schema is malformed: " .. tostring(problems) end
  if #problems > 0 then return "the schema is malformed: " .. table.concat(problems, "; ") end
  return nil
end

local function matches(s, value, what)
  local ok, errs = schema.validate(s, value)
  if ok then return pass(what .. " matches the schema") end
  local lines = {}
  for i, e in ipairs(errs) do
    if i > 4 then lines[#lines + 1] = ("(%d more)"):format(#errs - 4) break end
    lines[#lines + 1] = ("%s: %s"):format(e.path, e.message)
  end
  return fail(("%s does not match the schema: %s"):format(what, table.concat(lines, "; ")))
end

function files.output_json(run, path, s)
  verdict.run(run, "output_json")
  local bad = malformed(s)
  if bad then return fail(bad) end
  return over_file(run, "output_json", path, function(content, key)
    local ok, value = pcall(json.decode, content)
    if not ok or value == nil then return fail(key .. " is not JSON") end
    return matches(s, value, key)
  end)
end

function files.answer_schema(run, s)
  verdict.run(run, "answer_schema")
  local bad = malformed(s)
  if bad then return fail(bad) end
  local answer = run.output
  if type(answer) == "string" then
    local body = answer:match("^%s*```%w*\n(.-)\n```%s*$") or answer
    local ok, value = pcall(json.decode, body)
    if not ok or value == nil then return fail("the answer is not JSON") end
    answer = value
  elseif answer == nil or answer == json.null then
    return fail("the run gave no answer")
  end
  return matches(s, answer, "the answer")
end

return files

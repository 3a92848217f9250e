-- luagent.trace_page.compare (internal): what `luagent trace diff`
-- (luagent.cli.trace_diff) and the eval page (luagent.eval.page) compare of
-- two runs, said once: the final answer as text, the diff of two answers,
-- and where a run folder keeps a file its manifest lists.
--
--   compare.answer_text(output) -> text   an agent's output as text ("" for none, JSON for a table)
--   compare.answer_diff(text_a, text_b [, a_name, b_name]) -> unified diff   (a missing final newline
--       is no difference here)
--   compare.run_file(dir, path) -> file | nil   a manifest's file in the run folder dir: beside the
--       manifest at its workspace path ("output/report.md"), or under the folder's output/
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

return compare

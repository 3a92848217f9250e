-- luagent.outputs: brings a sandbox's results home and says what they are.
--
--   local report = outputs.collect(box, "output", luagent.run_dir("output"),
--                                  {required = {"output/anomalies.csv", "output/*.png"}})
--   -- report = {dir, files = {{path, size, sha256}}, missing = {...}, refused = {...}, manifest}
--
-- The files are extracted safely (nothing lands outside `host_dir`), then
-- listed with their sizes and sha256 in manifest.json beside that folder.
-- What could not be extracted is said in report.error (the message) and the
-- manifest; `nil, err` (a luagent.errors value) when the manifest cannot be
-- written.
local json = require "luagent.json"
local fs = require "luagent.fs"
local sys = require "luagent.sys"
local errors = require "luagent.errors"

local outputs = {}

local glob_pattern = require("luagent.manifest").glob_pattern

function outputs.collect(box, workspace_dir, host_dir, opts)
  opts = opts or {}
  box.saved = true -- closing the box need not save them again
  local extracted, err = box:extract(workspace_dir, host_dir)
  local files, refused = {}, {}
  if extracted then
    for _, f in ipairs(extracted.files) do
      local full = host_dir .. "/" .. f.path
      local st = fs.stat(full)
      if st and st.type == "file" then
        local digest, size = sys.sha256_file(full)
        files[#files + 1] = {path = workspace_dir .. "/" .. f.path, size = size, sha256 = digest}
      end
    end
    refused = extracted.refused
  end
  table.sort(files, function(a, b) return a.path < b.path end)
  local missing = {}
  for _, wanted in ipairs(opts.required or {}) do
    local pattern, found = glob_pattern(wanted), false
    for _, f in ipairs(files) do
      if f.path:match(pattern) and f.size > 0 then found = true break end
    end
    if not found then missing[#missing + 1] = wanted end
  end
  local manifest = host_dir:gsub("/[^/]+$", "") .. "/manifest.json"
  local report = {dir = host_dir, files = files, missing = missing, refused = refused, manifest = manifest,
                  error = err and err.message}
  local written, werr = fs.write(manifest, json.encode({run_id = luagent.run_id(), files = json.array(files),
    missing = json.array(missing), refused = json.array(refused), error = report.error}, {indent = 2}) .. "\n")
  if not written then return nil, errors.wrap(werr, "writing " .. manifest) end
  return report
end

return outputs

---@meta luagent.outputs
-- luagent.outputs: brings a sandbox's results home and says what they are
-- (lua/luagent/outputs.lua). LuaLS annotations: definitions only.
--
--   local report = luagent.outputs.collect(box, "output", luagent.run_dir("output"),
--                                          {required = {"output/report.md", "output/*.png"}})
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---@class luagent.OutputFile
---@field path string workspace path, e.g. "output/report.md"
---@field size integer
---@field sha256 string

---@class luagent.OutputsReport
---@field dir string the host folder
---@field files luagent.OutputFile[]
---@field missing string[] required globs that matched no non-empty file
---@field refused luagent.RefusedEntry[] entries the extraction refused
---@field manifest string the manifest.json written beside the folder
---@field error string? why the extraction failed, if it did

---@class luagent.outputs
local outputs = {}

---Extracts a workspace folder safely into host_dir and lists the files with
---their sizes and sha256 in manifest.json beside it.
---@param box luagent.Box
---@param workspace_dir string e.g. "output"
---@param host_dir string e.g. luagent.run_dir("output")
---@param opts? {required?: string[]}
---@return luagent.OutputsReport
function outputs.collect(box, workspace_dir, host_dir, opts) end

return outputs

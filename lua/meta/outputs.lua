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
---@field mirrored {turn: integer?, command: integer, time: integer}? the copy is the box's mirror's (made
---after that agent turn and box command), not the sandbox's last state, which could not be read

---@class luagent.OutputsReport
---@field dir string the host folder
---@field files luagent.OutputFile[]
---@field missing string[] required globs that matched no non-empty file
---@field refused luagent.RefusedEntry[] entries the extraction refused
---@field manifest string the manifest.json written beside the folder
---@field error string? why the extraction failed, if it did (also said on stderr)
---@field failed luagent.OutputFailure[] files not saved when the extraction failed (empty when it did not)
---@field unreadable string[]? required globs that could not be read: the Docker engine did not answer (not missing)
---@field lost string[]? required globs lost with a workspace emptied under the run (not missing)
---@field mirrored string[] the files whose copy is the mirror's (also marked in files): the sandbox could not
---be read, or its workspace was emptied, and they count as saved

---A file of the workspace that was not saved (the extraction failed: a full
---disk, the engine gone). A partly written one is removed, never left looking whole.
---@class luagent.OutputFailure
---@field path string workspace path
---@field size integer? its size in the sandbox, when known
---@field written integer? bytes that reached the host before the failure
---@field removed boolean? the partly written (or unchecked) file was removed
---@field error string why: "partly written: ...", "not extracted: ...", "not checked (...): ..."
---@field mirrored {turn: integer?, command: integer, time: integer, label: string}? the mirror's earlier
---copy of it, kept on the host

---What outputs.collect takes.
---@class luagent.CollectOptions
---@field required? string[] globs of the files the run must make, e.g. {"output/report.md", "output/*.png"}
---@field run_id? string the run the manifest names (default the calling run's)
---@field quiet? boolean an extraction's failure is not said on stderr (the caller says it)

---@class luagent.outputs
local outputs = {}

---Extracts a workspace folder safely into host_dir and lists the files with
---their sizes and sha256 in manifest.json beside it. An extraction that fails
---half-way removes what it wrote partly and lists what failed (report.failed,
---the manifest's `failed`); nil, err (err.report) when the manifest cannot be
---written, and when required outputs the agent may well have saved are not
---home: kind docker_unreachable (the engine did not answer within the box's
---engine_grace: report.unreadable; a box opened with save = {...} keeps its
---sandbox, and the next run or `luagent sandbox prune` rescues them) or kind
---sandbox_restarted (its workspace, kept in memory, was emptied when its
---container stopped: report.lost). report.missing is only what the agent did not save.
---For a box whose mirror copies to host_dir (sandbox.open's save), the final
---read is staged beside it, so a failed read never costs a mirror copy; the
---mirror's copies count as saved when the sandbox cannot be read or was
---emptied (report.mirrored, marked in files and the manifest), and a mirror
---copy of a file the agent removed goes when the read is complete.
---@param box luagent.Box
---@param workspace_dir string e.g. "output"
---@param host_dir string e.g. luagent.run_dir("output")
---@param opts? luagent.CollectOptions a key it does not declare is refused (kind config, with a did-you-mean)
---@return luagent.OutputsReport? report
---@return luagent.Error? err
function outputs.collect(box, workspace_dir, host_dir, opts) end

---Where collect (and a box's outputs mirror) writes the manifest for host_dir:
---manifest.json beside it.
---@param host_dir string
---@return string path
function outputs.manifest_path(host_dir) end

---The manifest beside host_dir, decoded; nil when there is none or it is not JSON.
---@param host_dir string
---@return table? manifest
function outputs.read_manifest(host_dir) end

return outputs

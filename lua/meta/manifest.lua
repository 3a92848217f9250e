---@meta luagent.manifest
-- luagent.manifest, a low-level module: recipes normally do not need it (the
-- recipe API, luagent.sandbox, .model, .agent, ..., is built on it). It is
-- not a field of the `luagent` class. LuaLS annotations: definitions only.
-- LuaLS takes one module per file: `---@meta luagent.manifest` above makes
-- `require "luagent.manifest"` give the types of the table returned below.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---low-level: recipes normally do not need this (use sandbox.file, sandbox.dir,
---sandbox.text and sandbox.open{manifest = ...}).
---luagent.manifest: what is staged into a workspace (lua/luagent/manifest.lua).
---@class luagent.manifest
local manifest = {}

---@param path string
---@return luagent.ManifestSource
function manifest.file(path) end

---@param path string
---@param opts? {exclude?: string[]}
---@return luagent.ManifestSource
function manifest.dir(path, opts) end

---@param text string
---@return luagent.ManifestSource
function manifest.text(text) end

---The manifest as tar entries, checked and sorted by workspace path.
---@param m luagent.Manifest?
---@return luagent.TarEntry[]? entries
---@return luagent.Error? err
function manifest.entries(m) end

---"/workspace/a/./b/" -> "a/b"; nil and why for a path leaving the workspace.
---@param path string
---@param root? string default "/workspace"
---@return string? name
---@return string? why
function manifest.workspace_path(path, root) end

---A glob ("*.pyc", "data/**/tmp", "?x") as an anchored Lua pattern.
---@param glob string
---@return string
function manifest.glob_pattern(glob) end

---What a manifest's entries stage: the total bytes and each entry's, largest
---first (sandbox.open checks it against workspace_size before a session opens).
---@param entries table[] manifest.entries' result
---@return integer bytes
---@return {name: string, bytes: integer}[] sizes
function manifest.size(entries) end

return manifest

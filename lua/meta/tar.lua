---@meta luagent.tar
-- luagent.tar, a low-level module: recipes normally do not need it (the
-- recipe API, luagent.sandbox, .model, .agent, ..., is built on it). It is
-- not a field of the `luagent` class. LuaLS annotations: definitions only.
-- LuaLS takes one module per file: `---@meta luagent.tar` above makes
-- `require "luagent.tar"` give the types of the table returned below.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---One entry of a tar to write: {name, file = host_path} | {name, data [, mode]}
---| {name, dir = true} | {name, symlink = target}.
---@class luagent.TarEntry
---@field name string
---@field file string?
---@field data string?
---@field mode integer?
---@field dir boolean?
---@field symlink string?

---low-level: recipes normally do not need this (box:snapshot, box:extract).
---luagent.tar: tar files on the host, never whole in memory (src/lua/lua_tar.c).
---@class luagent.tar
local tar = {}

---Writes a tar file (parent folders are added).
---@param tar_path string
---@param entries luagent.TarEntry[]
---@param opts? {uid?: integer, gid?: integer}
---@return integer? bytes
---@return luagent.Error? err
function tar.write(tar_path, entries, opts) end

---A tar made as it is read, never on disk: for a stream into a process's stdin (a
---sandbox's `luagent-supervisor unpack DIR`, through box:spawn and process:write).
---Files are stat'ed now and read a chunk at a time while it streams, never whole.
---@param entries luagent.TarEntry[]
---@param opts? {uid?: integer, gid?: integer} the numeric owner in every header (default 0)
---@return luagent.TarStream? reader
---@return luagent.Error? err kind bad_entry (a bad name, as tar.write's) or not_found (a missing file)
function tar.stream(entries, opts) end

---The reader tar.stream returns (also `local r <close> = ...`).
---@class luagent.TarStream
local TarStream = {}

---The next bytes of the tar, at most n (n >= 1; at most 64 MiB a call); nil at the
---end; nil, err of kind io naming the file and why when a file cannot be read (it
---vanished, or its size changed since tar.stream). Raises after close.
---@param n integer
---@return string? bytes
---@return luagent.Error? err
function TarStream:read(n) end

---The length of the whole stream in bytes, known before it is read.
---@return integer
function TarStream:size() end

---Idempotent; also <close> and __gc.
function TarStream:close() end

---Extracts safely: absolute names, "..", links leaving dest, devices and
---fifos are refused and listed; nothing is written outside dest.
---@param tar_path string
---@param dest string
---@param opts? {strip?: string, max_bytes?: integer, max_entries?: integer}
---@return luagent.ExtractReport? report
---@return luagent.Error? err
function tar.extract(tar_path, dest, opts) end

---A check of a tar stream that another tar extracts (a fork's workspace), fed as it passes:
---extraction's naming rules (no absolute name, no ".."), every entry under `strip`, nothing
---through a link or a non-directory of the archive, no name twice, hard links only to files
---that came before, no device or fifo, the limits. Symlinks keep their targets.
---@param opts? {strip?: string, max_bytes?: integer, max_entries?: integer}
---@return luagent.TarChecker checker
function tar.checker(opts) end

---@class luagent.TarChecker
local TarChecker = {}

---The next bytes of the stream: true, or the first entry refused (kind refused, naming it
---and why) or a malformed stream (kind tar); every later feed fails the same way.
---@param data string
---@return true? ok
---@return luagent.Error? err
function TarChecker:feed(data) end

---The end of the stream: what passed, or an error when it stopped inside an entry.
---@return {bytes: integer, entries: integer}? seen
---@return luagent.Error? err
function TarChecker:finish() end

function TarChecker:close() end

return tar

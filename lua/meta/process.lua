---@meta luagent.process
-- luagent.process, a low-level module: recipes normally do not need it (the
-- recipe API, luagent.sandbox, .model, .agent, ..., is built on it). It is
-- not a field of the `luagent` class. LuaLS annotations: definitions only.
-- LuaLS takes one module per file: `---@meta luagent.process` above makes
-- `require "luagent.process"` give the types of the table returned below.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---low-level: recipes normally do not need this (a recipe runs its code in a
---sandbox; `luagent run --watch` and stdio servers start host processes).
---luagent.process: child processes of the host, with pipes, process groups
---and waits that yield to other tasks (src/lua/lua_process.c).
---@class luagent.process
local process = {}

---@alias luagent.process.Stdio "pipe"|"null"|"inherit"

---@class luagent.process.SpawnOptions
---@field argv string[] the program (a path, or a name looked up in PATH) and its arguments; no shell
---@field env? table<string, string> the whole environment of the child (nil: inherit this one)
---@field cwd? string its folder (nil: this process's)
---@field stdin? luagent.process.Stdio default "inherit"
---@field stdout? luagent.process.Stdio default "inherit"
---@field stderr? luagent.process.Stdio default "inherit"
---@field new_group? boolean the child leads a new process group: kill and close reach all it started

---Starts a program. A missing program is nil, err (kind not_found, err.program names it).
---@param opts luagent.process.SpawnOptions
---@return luagent.process.Process? proc
---@return luagent.Error? err
function process.spawn(opts) end

---This process's environment, e.g. to give a child one more variable.
---@return table<string, string>
function process.environ() end

---A running (or ended) child process. close() kills it (and its group) if
---it still runs, closes the pipes and reaps it; tasks waiting on it wake
---with nil, err (kind closed). Also __close and __gc.
---@class luagent.process.Process
local Process = {}

---Writes every byte to the child's stdin (yields while the pipe is full).
---@param data string
---@return true? ok
---@return luagent.Error? err kind io when the child closed its stdin
function Process:write(data) end

---The child reads end-of-file on its stdin.
function Process:close_stdin() end

---What the child wrote (at most max bytes, default 65536); nil at end-of-file.
---@param stream "stdout"|"stderr"
---@param max? integer
---@return string? data
---@return luagent.Error? err
function Process:read(stream, max) end

---Waits for the end: its exit code (128 + N when signal N ended it) and the
---signal, or nil, err (kind timeout) when `timeout` seconds passed first.
---@param timeout? number
---@return integer? exit_code
---@return integer|luagent.Error|nil signal_or_err
function Process:wait(timeout) end

---Sends a signal ("TERM" by default, "INT", "KILL", ... or a number); to the
---whole group with new_group. false when no process was there.
---@param sig? string|integer
---@return boolean
function Process:kill(sig) end

---@return integer
function Process:pid() end

function Process:close() end

return process

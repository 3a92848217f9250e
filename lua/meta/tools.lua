---@meta luagent.tools
-- luagent.tools: the tools a model sees (lua/luagent/tools.lua). Each is a
-- plain table, so a recipe adds its own in a few lines:
--
--   local lookup = {name = "lookup_country", description = "ISO code of a country name",
--     parameters = {type = "object", properties = {name = {type = "string"}}, required = {"name"}},
--     handler = function(args) return CODES[args.name:lower()] or "unknown" end}
--
-- The sandbox tools all work on one session (`box`) and its /workspace.
-- LuaLS annotations: definitions only.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---What a handler gets besides the arguments.
---@class luagent.ToolContext
---@field call_id string
---@field turn integer
---@field run table the agent's run (internal)

---What a handler may return besides text: text and images for the model to see.
---@class luagent.ToolOutput
---@field text string?
---@field images luagent.ImagePart[]?

---A tool: a plain table. The handler returns the text the model reads (or
---{text, images}; another value is sent as JSON), or raises: the agent turns
---the error into a result the model can read and fix.
---@class luagent.Tool
---@field name string letters, digits, _ or -
---@field description string what it does, for the model
---@field parameters? table a JSON Schema of its arguments (an object schema)
---@field handler fun(args: table, ctx: luagent.ToolContext): string|luagent.ToolOutput|any
---@field box? luagent.Box the session a sandbox tool works on
---@field needs_approval? boolean|fun(args: table, ctx: luagent.ApprovalContext): boolean approve first? (luagent.ApproveMode)

---@class luagent.SandboxToolOptions
---@field timeout? number seconds per call (default: the box's)

---@class luagent.tools
local tools = {}

---The usual set for a code-running agent: run_python, run_shell, read_file,
---write_file, list_files, view_image.
---@param box luagent.Box
---@param opts? luagent.SandboxToolOptions
---@return luagent.Tool[]
function tools.standard(box, opts) end

---Runs Python in the session's persistent interpreter (box:python).
---@param box luagent.Box
---@param opts? luagent.SandboxToolOptions
---@return luagent.Tool
function tools.run_python(box, opts) end

---Runs a shell command (box:exec, sh -c).
---@param box luagent.Box
---@param opts? luagent.SandboxToolOptions
---@return luagent.Tool
function tools.run_shell(box, opts) end

---Reads a text file from the workspace (offset and limit in lines).
---@param box luagent.Box
---@return luagent.Tool
function tools.read_file(box) end

---Writes a text file in the workspace.
---@param box luagent.Box
---@return luagent.Tool
function tools.write_file(box) end

---Lists files under a workspace folder, with sizes.
---@param box luagent.Box
---@return luagent.Tool
function tools.list_files(box) end

---Shows the model an image from the workspace (PNG, JPEG, GIF, WebP).
---@param box luagent.Box
---@return luagent.Tool
function tools.view_image(box) end

---The text a model reads for a command's result.
---@param r luagent.ExecResult
---@param opts? {timeout?: number, memory?: string|integer}
---@return string
function tools.format_exec(r, opts) end

---"took 1.23 s" (replays match this text with any duration).
---@param seconds number
---@return string
function tools.took(seconds) end

---The tools of an MCP (Model Context Protocol) server, as luagent tools:
---a stdio server (`command`, a host process) or a Streamable HTTP one (`url`). Failures are nil, err
---naming the server: not_found (no such program), protocol (it speaks no
---MCP), timeout, mcp (it exited or refused), and HTTP's kinds. Close the
---list (or `<close>`) to end the server; it ends with the run at the latest.
---
---    local fs <close> = assert(tools.mcp{command = {"npx", "-y", "@modelcontextprotocol/server-filesystem", "/data"},
---                                        only = {"read_text_file"}, prefix = "fs_"})
---@param opts luagent.McpOptions
---@return luagent.McpTools? tools
---@return luagent.Error? err
function tools.mcp(opts) end

---Checks a tool table's shape; raises naming what is wrong; returns the tool.
---@param tool luagent.Tool
---@param where? string how to name it in the error, e.g. "tools[2]"
---@return luagent.Tool
function tools.check(tool, where) end

-- ---- MCP servers (lua/luagent/mcp.lua) ----

---Options of tools.mcp and mcp.connect: `command` or `url`.
---@class luagent.McpOptions
---@field command? string[] the server's program and arguments (stdio)
---@field url? string a Streamable HTTP endpoint, e.g. "http://localhost:3001/mcp"
---@field sandbox? luagent.Box run `command` inside this sandbox (its /workspace, its limits; stage the program with the manifest)
---@field name? string how messages and the trace name it (default: from the command or the URL)
---@field env? table<string, string|number|boolean> added to a stdio server's small environment (PATH, HOME, ...; no API keys)
---@field cwd? string the stdio server's working folder
---@field headers? table<string, string> sent with every HTTP request (e.g. authorization)
---@field timeout? number seconds per request (default 120); a call past it is cancelled at the server
---@field start_timeout? number seconds for initialize (default 60: npx may download first)
---@field only? string[] these tools alone (names as the server gives them)
---@field prefix? string put before each tool's name for the model, e.g. "fs_"

---What tools.mcp returns: the server's tools (luagent.Tool, each with
---`mcp = {server, tool}`), and the server's handle.
---@class luagent.McpTools
---@field [integer] luagent.Tool
---@field client luagent.McpClient
local McpToolList = {}

---Ends the server (a stdio server's process; an HTTP session). Also `<close>`.
function McpToolList:close() end

---A connection to an MCP server (mcp.connect).
---@class luagent.McpClient
---@field name string
---@field label string "the MCP server 'name'", as messages say it
---@field protocol_version string the MCP version agreed at initialize
---@field server_info {name: string?, version: string?}
---@field capabilities table the server's capabilities
---@field instructions string? what the server says about using it
local McpClient = {}

---Every tool the server lists (all pages), as the server describes them
---({name, description, inputSchema, ...}).
---@return table[]? tools
---@return luagent.Error? err
function McpClient:list_tools() end

---Calls a tool: the MCP result ({content, isError, structuredContent}).
---Its progress is shown live (mcp_progress events); past the timeout, or
---when the task is cancelled (Ctrl-C), the call is cancelled at the server.
---@param name string the tool's name at the server
---@param arguments? table
---@param opts? {timeout?: number, tool?: string, turn?: integer}
---@return table? result
---@return luagent.Error? err
function McpClient:call(name, arguments, opts) end

---The server's tools as luagent tools.
---@param opts? {only?: string[], prefix?: string}
---@return luagent.McpTools? tools
---@return luagent.Error? err
function McpClient:tools(opts) end

---Ends the connection: a stdio server gets `grace` seconds (default 2) to
---exit after its stdin closes, then is killed; an HTTP session is ended
---(DELETE). Idempotent; also `<close>` (at once when leaving on an error).
---@param grace? number
function McpClient:close(grace) end

---luagent.mcp (require "luagent.mcp"): what tools.mcp is made of.
---@class luagent.mcp
---@field DEFAULT_TIMEOUT number seconds per request (120)
---@field DEFAULT_START_TIMEOUT number seconds for initialize (60)
local mcp = {}

---Connects (starts a stdio server, or opens an HTTP session) and initializes.
---@param opts luagent.McpOptions
---@return luagent.McpClient? client
---@return luagent.Error? err
function mcp.connect(opts) end

---mcp.connect, then client:tools(opts) (what tools.mcp does).
---@param opts luagent.McpOptions
---@return luagent.McpTools? tools
---@return luagent.Error? err
function mcp.tools(opts) end

return tools

---@meta luagent.mcp
-- luagent.mcp: tools from MCP servers (lua/luagent/mcp.lua). Recipes usually
-- reach it through tools.mcp{...}; require "luagent.mcp" gives the client.
-- LuaLS annotations: definitions only.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

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

return mcp

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
---@field agent_run table the agent's run (internal): its turns so far, its usage
---@field run table its old name, for one release

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
---@field only? table<string, boolean> the wires it is offered on (openai, openai_responses, anthropic); none: all
---@field native? table<string, table> per wire, the API's own tool object it goes as (Responses' {type = "apply_patch"})
---@field native_names? string[] the names its calls may come under in that form (str_replace_based_edit_tool)
---@field needs_approval? boolean|fun(args: table, ctx: luagent.ApprovalContext): boolean approve first? (luagent.ApproveMode)

---@class luagent.SandboxToolOptions
---@field timeout? number seconds per call (default: the box's)
---@field shell? "plain"|"unified"|"native" tools.standard: run_shell (the default), exec_command and write_stdin,
---  or the model family's own shell (Responses' shell, Anthropic's bash)
---@field edit? "plain"|"native" tools.standard: write_file (the default), or each family's own editor
---  (Responses' apply_patch, Anthropic's text editor; both as functions on Chat Completions)
---@field max_sessions? integer exec_command's sessions running at once per box (default 8)
---@field add? string[] tools.standard: more built-in tools by name (tools.BUILT_IN): apply_patch, edit_file,
---  exec_command (with write_stdin), run_shell, write_file, ...; one the set has already is not added twice
---@field drop? string[] tools.standard: tools of the set to leave out, by name (e.g. {"view_image"})

---@class luagent.tools
local tools = {}

---The usual set for a code-running agent: run_python, run_shell, read_file,
---write_file, list_files, view_image. With shell = "unified", exec_command and
---write_stdin take run_shell's place.
---@param box luagent.Box
---@param opts? luagent.SandboxToolOptions
---@return luagent.Tool[]
function tools.standard(box, opts) end

---The built-in tools by name, as opts.add of tools.standard takes them: name -> the tools it adds.
---@type table<string, fun(box: luagent.Box, opts?: luagent.SandboxToolOptions): luagent.Tool[]>
tools.BUILT_IN = {}

---Runs Python in the session's persistent interpreter (box:python).
---@param box luagent.Box
---@param opts? luagent.SandboxToolOptions
---@return luagent.Tool
function tools.run_python(box, opts) end

---The exec tool pair coding models are trained on: exec_command{cmd, workdir,
---tty, yield_time_ms, max_output_tokens} returns what the command printed
---within yield_time_ms (default 10000), and a command still running goes on as
---a session; write_stdin{session_id, chars, yield_time_ms, max_output_tokens}
---types into it and returns what came since (default yield 250 ms). At most
---max_sessions (default 8) run per box: past it the least recently used ends.
---@param box luagent.Box
---@param opts? luagent.SandboxToolOptions
---@return luagent.Tool[]
function tools.unified_exec(box, opts) end

---Traces a command's output as it comes: an on_output for box:exec and
---box:python that emits sandbox_output events (at most every 0.5 s per stream),
---and flush() for the rest once the command ended.
---@param box luagent.Box
---@param tool string the tool's name, for the live view
---@return fun(text: string, stream: string) on_output
---@return fun() flush
function tools.live_output(box, tool) end

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

return tools

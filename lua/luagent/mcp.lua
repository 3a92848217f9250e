-- luagent.mcp: tools from MCP (Model Context Protocol) servers, as ordinary
-- luagent tools (luagent.tools: name, description, parameters, handler).
--
--   local fs <close> = assert(tools.mcp{command = {"npx", "-y", "@modelcontextprotocol/server-filesystem", "/data"},
--                                       only = {"read_text_file", "list_directory"}, prefix = "fs_"})
--   local web = assert(tools.mcp{url = "http://localhost:3001/mcp", headers = {authorization = "Bearer ..."}})
--   agent.new{..., tools = {tools.run_python(box), table.unpack(fs)}}
--
-- The functions and the client's methods: lua/meta/mcp.lua.
--
-- opts: command = {argv} (a host process, stdio) | url = "http(s)://..."
--       (Streamable HTTP) | command with sandbox = box (the process runs in
--       the sandbox, with its limits, acting on its /workspace:
--       luagent.mcp.sandbox); name (in messages and the trace; default from the
--       command or the URL); env, cwd (stdio, sandbox); headers (HTTP); timeout
--       (seconds per request, default 120); start_timeout (for initialize,
--       default 60: npx may download first); only, prefix.
-- A stdio server is ended when its client closes, and at the latest when the
-- run that started it ends (an exit hook: normally, on an error, on Ctrl-C).
-- Expected failures are nil, err naming the server: a program that is not
-- there (not_found), one that is no MCP server (protocol), no answer in time
-- (timeout), a server that exited or refused (mcp).
local client = require "luagent.mcp.client"
local context = require "luagent.context"
local handle = require "luagent.handle"

local mcp = {}

mcp.DEFAULT_TIMEOUT = 120
mcp.DEFAULT_START_TIMEOUT = 60

-- Programs that start the server named by a later argument.
local LAUNCHERS = {npx = true, node = true, nodejs = true, uvx = true, uv = true, python = true, python3 = true,
                   bunx = true, bun = true, deno = true, pipx = true, run = true, exec = true}

local function check(cond, message)
  if not cond then error("tools.mcp: " .. message, 4) end
end

local function basename(s)
  return (s:gsub("/+$", ""):match("([^/]+)$") or s)
end

-- "server-filesystem" for {"npx", "-y", "@modelcontextprotocol/server-filesystem", "/data"}.
local function default_name(opts)
  if opts.url then return opts.url:match("^%a+://([^/?#]+)") or opts.url end
  local argv = opts.command
  local i = 1
  while argv[i + 1] and (LAUNCHERS[basename(argv[i])] or argv[i]:match("^%-")) do i = i + 1 end
  return basename(argv[i])
end

local function string_list(v, name)
  check(type(v) == "table", name .. " must be a list of strings")
  for i, s in ipairs(v) do check(type(s) == "string", ("%s[%d] must be a string"):format(name, i)) end
  return v
end

-- The options, checked; raises naming the one that is wrong.
local function settings(opts)
  check(type(opts) == "table", "expects a table of options {command = {...}} or {url = ...}")
  check((opts.command ~= nil) ~= (opts.url ~= nil), "give either command = {program, args...} or url = \"http://...\"")
  if opts.command then
    string_list(opts.command, "command")
    check(#opts.command > 0 and opts.command[1] ~= "", "command must name a program: {\"npx\", \"-y\", \"package\"}")
  else
    check(type(opts.url) == "string" and opts.url:match("^https?://") ~= nil, "url must be an http:// or https:// URL")
    check(opts.sandbox == nil, "sandbox = box runs a command in the sandbox; a url server runs elsewhere")
  end
  check(opts.sandbox == nil or (type(opts.sandbox) == "table" and type(opts.sandbox.spawn) == "function"),
        "sandbox must be a box (sandbox.open)")
  for _, k in ipairs({"headers", "env"}) do
    check(opts[k] == nil or type(opts[k]) == "table", k .. " must be a table {NAME = value}")
  end
  check(opts.headers == nil or opts.url, "headers are for a url server")
  check(opts.cwd == nil or type(opts.cwd) == "string", "cwd must be a folder (a string)")
  check(opts.name == nil or (type(opts.name) == "string" and opts.name ~= ""), "name must be a non-empty string")
  for _, k in ipairs({"timeout", "start_timeout"}) do
    check(opts[k] == nil or (type(opts[k]) == "number" and opts[k] > 0), k .. " must be a number of seconds > 0")
  end
  if opts.only ~= nil then string_list(opts.only, "only") end
  check(opts.prefix == nil or (type(opts.prefix) == "string" and opts.prefix:match("^[%w_%-]*$")),
        "prefix must be letters, digits, _ or -")
  local name = opts.name or default_name(opts)
  local spec = {name = name, label = ("the MCP server '%s'"):format(name), command = opts.command, url = opts.url,
                headers = opts.headers, env = opts.env, cwd = opts.cwd, sandbox = opts.sandbox,
                timeout = opts.timeout or mcp.DEFAULT_TIMEOUT,
                start_timeout = opts.start_timeout or mcp.DEFAULT_START_TIMEOUT}
  spec.transport = opts.url and "http" or opts.sandbox and "sandbox" or "stdio"
  spec.command_text = opts.command and table.concat(opts.command, " ") or nil
  return spec
end

local TRANSPORTS = {stdio = "luagent.mcp.stdio", http = "luagent.mcp.http", sandbox = "luagent.mcp.sandbox"}

function mcp.connect(opts)
  local spec = settings(opts)
  local c, err = client.connect(spec, require(TRANSPORTS[spec.transport]))
  if not c then return nil, err end
  -- ended with the run that started it, at the latest: at once after a failure or Ctrl-C
  context.current():at_exit(function(status) c:close(status == "ok" and 2 or 0) end)
  return c
end

function mcp.tools(opts)
  local c, err = mcp.connect(opts)
  if not c then return nil, err end
  local building <close> = handle.guard(c) -- the list is the server's handle: no list, no server
  local list
  list, err = c:tools(opts)
  if not list then return nil, err end
  return building:built(list)
end

return mcp

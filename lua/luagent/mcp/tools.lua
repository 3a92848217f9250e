-- luagent.mcp.tools: an MCP server's tools as luagent tools (luagent.tools'
-- shape: name, description, parameters, handler), for client:tools.
--
--   mcp_tools.of(client, {only = {...}, prefix = "fs_"}) -> list | nil, err
--
-- A tool's name for the model is prefix .. its name, with what the model
-- APIs refuse (anything but letters, digits, _ and -) as "_"; `only` names
-- tools as the server does. The handler returns what the model reads
-- (luagent.mcp.content: text, and images as images) and raises the
-- server's failures: an isError result (kind tool, its text), a refused
-- call, a timeout, a server that exited (kind mcp) — the agent shows the
-- model each as the tool's error. The list is also the server's handle:
-- list:close() and <close> end it, list.client is the client.
local errors = require "luagent.errors"
local content = require "luagent.mcp.content"

local mcp_tools = {}

-- A name the model APIs take (letters, digits, _ and -; 64 at most).
local function tool_name(prefix, name)
  return ((prefix or "") .. name:gsub("[^%w_%-]", "_")):sub(1, 64)
end

local function parameters(schema)
  if type(schema) ~= "table" then return {type = "object", properties = {}} end
  local copy = {}
  for k, v in pairs(schema) do
    if k ~= "$schema" then copy[k] = v end
  end
  copy.type = copy.type or "object"
  return copy
end

local function as_tool(c, listed, name)
  return {
    name = name,
    description = listed.description or listed.title or ("The tool " .. listed.name .. " of " .. c.label .. "."),
    parameters = parameters(listed.inputSchema),
    mcp = {server = c.name, tool = listed.name},
    handler = function(args, ctx)
      local result, err = c:call(listed.name, args, {tool = name, turn = ctx and ctx.turn})
      if not result then error(err, 0) end
      local output = content.output(result)
      if result.isError == true then
        error(errors.new("tool", type(output) == "table" and output.text or output, {server = c.name}), 0)
      end
      return output
    end,
  }
end

-- The list of tools, which closes the server when it is closed.
local McpToolList = {}
McpToolList.__index = McpToolList
function McpToolList:close() return self.client:close() end
function McpToolList:__close(err) return self.client:__close(err) end

function mcp_tools.of(c, opts)
  opts = opts or {}
  local listed, err = c:list_tools()
  if not listed then return nil, err end
  local by_name, names = {}, {}
  for _, tool in ipairs(listed) do by_name[tool.name], names[#names + 1] = tool, tool.name end
  local wanted = listed
  if opts.only then
    wanted = {}
    for _, name in ipairs(opts.only) do
      if not by_name[name] then
        return errors.fail("config", ("tools.mcp: %s has no tool %q (only = {...}); its tools: %s")
          :format(c.label, name, table.concat(names, ", ")), {server = c.name})
      end
      wanted[#wanted + 1] = by_name[name]
    end
  end
  local list, taken = setmetatable({client = c}, McpToolList), {}
  for _, tool in ipairs(wanted) do
    local name = tool_name(opts.prefix, tool.name)
    if taken[name] then
      return errors.fail("config", ("tools.mcp: the tools %q and %q of %s are both called %s for the model")
        :format(taken[name], tool.name, c.label, name), {server = c.name})
    end
    taken[name] = tool.name
    list[#list + 1] = as_tool(c, tool, name)
  end
  return list
end


return mcp_tools

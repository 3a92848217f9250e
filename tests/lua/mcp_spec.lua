-- tools.mcp over stdio against the real reference server
-- @modelcontextprotocol/server-everything: listing, filter and prefix,
-- text, image and resource content, isError, progress, timeout, cancel.
local t = require "helper"
local servers = require "mcp_servers"
local mcp = require "luagent.mcp"
local tools = require "luagent.tools"
local trace = require "luagent.trace"

local function by_name(list)
  local out = {}
  for _, tool in ipairs(list) do out[tool.name] = tool end
  return out
end

-- One server for the tests that do not end it.
local everything = assert(tools.mcp{command = servers.everything(), name = "everything"})
local ev = by_name(everything)

t.test("the server's tools are luagent tools: name, description, JSON Schema parameters, handler", function()
  t.ok(#everything >= 10, "server-everything lists its tools: " .. #everything)
  local echo = t.ok(ev.echo, "echo is listed")
  t.eq(echo.description, "Echoes back the input string")
  t.eq(echo.parameters.type, "object")
  t.eq(echo.parameters.properties.message.type, "string")
  t.same(echo.parameters.required, {"message"})
  t.eq(echo.parameters["$schema"], nil, "the $schema line is left out of what the model sees")
  t.same(echo.mcp, {server = "everything", tool = "echo"})
  t.eq(tools.check(echo), echo, "tools.check accepts it")
  t.eq(everything.client.protocol_version, "2025-11-25", "the latest version we offer is the one agreed")
  t.eq(everything.client.server_info.name, "mcp-servers/everything")
end)

t.test("only and prefix: the named tools alone, named prefix .. name for the model", function()
  local list <close> = assert(tools.mcp{command = servers.everything(), only = {"get-tiny-image", "echo"},
                                        prefix = "ev_"})
  t.eq(#list, 2)
  t.eq(list[1].name, "ev_get-tiny-image")
  t.eq(list[2].name, "ev_echo")
  t.eq(list[2].mcp.tool, "echo", "the server's own name is kept for the call")
  t.eq(list[2].handler({message = "prefixed"}), "Echo: prefixed")
end)

t.test("a text result is the text", function()
  t.eq(ev.echo.handler({message = "hello"}), "Echo: hello")
end)

t.test("an image result is an image part the model sees, between its texts", function()
  local out = ev["get-tiny-image"].handler({})
  t.eq(type(out), "table")
  t.eq(out.text, "Here's the image you requested:\n[image 1: image/png, 4033 bytes]\nThe image above is the MCP logo.")
  t.eq(#out.images, 1)
  t.eq(out.images[1].type, "image")
  t.eq(out.images[1].media_type, "image/png")
  t.match(out.images[1].data, "^iVBORw0KGgo", "the PNG as base64")
end)

t.test("resources: an embedded one as its uri and text, a link as its name and uri", function()
  local ref = ev["get-resource-reference"].handler({})
  t.match(ref, "^Returning resource reference for Resource 1:\n%[resource demo://resource/dynamic/text/1 %(text/plain%)%]\n"
    .. "Resource 1: This is a plaintext resource")
  local links = ev["get-resource-links"].handler({count = 2})
  t.match(links, "%[resource link: Blob Resource 1 <demo://resource/dynamic/blob/1> %(text/plain%): Resource 1: ")
  t.match(links, "%[resource link: Text Resource 2 <demo://resource/dynamic/text/2> %(text/plain%)")
end)

t.test("an isError result raises a tool error with the server's text", function()
  local ok, err = pcall(ev["get-sum"].handler, {a = "one", b = 2})
  t.eq(ok, false)
  t.eq(err.kind, "tool")
  t.match(err.message, "Input validation error")
  t.eq(err.server, "everything")
end)

t.test("progress notifications become mcp_progress events the live view shows", function()
  local out
  local seen = servers.events_during({"mcp_progress"}, function()
    out = ev["trigger-long-running-operation"].handler({duration = 0.4, steps = 4}, {turn = 3})
  end)
  t.eq(out, "Long running operation completed. Duration: 0.4 seconds, Steps: 4.")
  t.eq(#seen, 4)
  for i, e in ipairs(seen) do
    t.eq(e.progress, i); t.eq(e.total, 4); t.eq(e.server, "everything")
    t.eq(e.tool, "trigger-long-running-operation"); t.eq(e.turn, 3)
  end
  t.eq(trace.describe(seen[2]), "  turn 3  trigger-long-running-operation  progress 2/4")
end)

t.test("a call past its timeout: a timeout error naming server and tool, cancelled at the server", function()
  local c = everything.client
  local started = luagent.now()
  local result, err
  local seen = servers.events_during({"mcp_cancelled", "mcp_late_response"}, function()
    result, err = c:call("trigger-long-running-operation", {duration = 1, steps = 2}, {timeout = 0.3})
    t.lt(luagent.now() - started, 0.9, "it stopped waiting at the timeout")
    luagent.sleep(1.2) -- past the operation's end: the server sends no late answer
    t.eq(c:call("echo", {message = "still here"}).content[1].text, "Echo: still here", "the server still answers")
  end)
  t.eq(result, nil)
  t.eq(err.kind, "timeout")
  t.match(err.message, "^the MCP server 'everything' did not finish the tool trigger%-long%-running%-operation within 0.3 s")
  t.eq(#seen, 1, "one notifications/cancelled, no late response")
  t.eq(seen[1].type, "mcp_cancelled")
  t.match(seen[1].reason, "no answer within 0.3 s")
end)

t.test("a cancelled call (task:cancel, as Ctrl-C) raises the cancel and is cancelled at the server", function()
  local c = everything.client
  local seen = servers.events_during({"mcp_cancelled", "mcp_late_response"}, function()
    local task = luagent.spawn(function() return c:call("trigger-long-running-operation", {duration = 1, steps = 2}) end)
    luagent.sleep(0.2)
    task:cancel()
    local value, err = task:wait()
    t.eq(value, nil)
    t.eq(err.kind, "cancelled")
    luagent.sleep(1.1)
    t.eq(c:call("echo", {message = "after"}).content[1].text, "Echo: after")
  end)
  t.eq(#seen, 1, "one notifications/cancelled, no late response")
  t.match(seen[1].reason, "^cancelled by luagent")
end)

t.test("calls from many tasks at once each get their own answer", function()
  local tasks = {}
  for i = 1, 8 do tasks[i] = luagent.spawn(ev.echo.handler, {message = ("m%d"):format(i)}) end
  for i = 1, 8 do t.eq(tasks[i]:wait(), ("Echo: m%d"):format(i)) end
end)

t.test("the server gets a small environment: env given, the host's secrets not", function()
  local secret = t.env("LUAGENT_TEST_SECRET")
  local list <close> = assert(tools.mcp{command = servers.everything(), only = {"get-env"},
                                        env = {GIVEN_TO_SERVER = "yes"}})
  local text = list[1].handler({})
  t.match(text, '"GIVEN_TO_SERVER": "yes"')
  t.match(text, '"PATH": ')
  t.no_match(text, secret, "the test key of the host environment")
  t.no_match(text, "LUAGENT_TEST_SECRET")
end)

t.test("misuse raises naming the option", function()
  t.raises(function() tools.mcp{} end, "give either command")
  t.raises(function() tools.mcp{command = {"x"}, url = "http://h/mcp"} end, "give either command")
  t.raises(function() tools.mcp{url = "ftp://h"} end, "url must be an http")
  t.raises(function() tools.mcp{command = {}} end, "command must name a program")
  t.raises(function() tools.mcp{command = {"x"}, prefix = "a b"} end, "prefix must be")
  t.raises(function() tools.mcp{command = {"x"}, timeout = 0} end, "timeout must be")
  t.raises(function() tools.mcp{command = {"x"}, headers = {a = "b"}} end, "headers are for a url server")
end)

t.test("a closed client answers kind closed; closing twice is fine", function()
  local c = assert(mcp.connect{command = servers.everything(), name = "closing"})
  c:close()
  c:close()
  local result, err = c:call("echo", {message = "x"})
  t.eq(result, nil)
  t.eq(err.kind, "closed")
  t.match(err.message, "the MCP server 'closing' is closed")
end)

everything:close()
return t.done()

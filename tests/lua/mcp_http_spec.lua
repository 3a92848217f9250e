-- tools.mcp over Streamable HTTP against the real server-everything
-- (`mcp-server-everything streamableHttp`): its answers come as event
-- streams, its session id is kept, close ends the session with a DELETE.
local t = require "helper"
local servers = require "mcp_servers"
local tools = require "luagent.tools"

local proc, url = servers.everything_http()

-- Everything a stream says until end-of-file.
local function read_all(stream)
  local parts = {}
  while true do
    local data = proc:read(stream)
    if not data then return table.concat(parts) end
    parts[#parts + 1] = data
  end
end

local list = assert(tools.mcp{url = url, headers = {["x-test-header"] = "given"}, prefix = "web_",
                              only = {"echo", "get-tiny-image", "trigger-long-running-operation", "get-sum"}})

t.test("over HTTP: the tools, named with the prefix, and the agreed version", function()
  t.eq(#list, 4)
  t.eq(list[1].name, "web_echo")
  t.eq(list.client.protocol_version, "2025-11-25")
  t.match(list.client.t.session, "^[%x%-]+$", "the session id the server gave at initialize")
  t.match(list.client.name, "^127.0.0.1:%d+$", "named after the host by default")
end)

t.test("over HTTP: text, an image, an isError result", function()
  t.eq(list[1].handler({message = "over http"}), "Echo: over http")
  local image = list[2].handler({})
  t.eq(#image.images, 1)
  t.eq(image.images[1].media_type, "image/png")
  local ok, err = pcall(list[4].handler, {a = "x", b = 1})
  t.eq(ok, false)
  t.eq(err.kind, "tool")
end)

t.test("over HTTP: progress arrives in the call's event stream", function()
  local out
  local seen = servers.events_during({"mcp_progress"}, function()
    out = list[3].handler({duration = 0.3, steps = 3}, {turn = 1})
  end)
  t.match(out, "^Long running operation completed")
  t.eq(#seen, 3)
  t.eq(seen[3].progress, 3); t.eq(seen[3].total, 3); t.eq(seen[3].tool, "web_trigger-long-running-operation")
end)

t.test("over HTTP: a timeout, then the session still answers", function()
  local result, err = list.client:call("trigger-long-running-operation", {duration = 1, steps = 2}, {timeout = 0.3})
  t.eq(result, nil)
  t.eq(err.kind, "timeout")
  t.match(err.message, "did not finish the tool trigger%-long%-running%-operation within 0.3 s")
  t.eq(list[1].handler({message = "again"}), "Echo: again")
end)

t.test("over HTTP: close ends the session (DELETE); a server that is gone is a connect error naming it", function()
  local session = list.client.t.session
  list:close()
  proc:kill()
  proc:wait(5)
  t.match(read_all("stdout"), "session termination request for session " .. session:gsub("%-", "%%-"))
  local again, err = tools.mcp{url = url, name = "gone", start_timeout = 5}
  t.eq(again, nil)
  t.eq(err.kind, "connect")
  t.eq(err.message:find("the MCP server 'gone' at " .. url .. " (initialize): ", 1, true), 1, err.message)
end)

t.test("over HTTP: a URL that is no MCP server (the fake model provider) is an error naming it", function()
  local port = t.env("FAKE_PROVIDER_PORT")
  local none, err = tools.mcp{url = ("http://127.0.0.1:%s/nothing/mcp"):format(port), name = "wrong"}
  t.eq(none, nil)
  t.eq(err.kind, "mcp")
  t.match(err.message, "^the MCP server 'wrong' answered initialize with HTTP 404: ")
end)

proc:close()
return t.done()

-- An agent whose tools come from real MCP servers, its model the fake
-- provider (tests/fake_provider.py, a test double speaking the providers'
-- wire formats): the model calls an MCP tool and reads its result — a file
-- the filesystem server reads, an image, a server that dies under the call.
local t = require "helper"
local fake = require "fake_provider_client"
local servers = require "mcp_servers"
local agent = require "luagent.agent"
local fs = require "luagent.fs"
local model = require "luagent.model"
local tools = require "luagent.tools"

local function fake_model(queue)
  return model.openai{model = "gpt-4o-mini", base_url = fake.base_url(queue), api_key = "sk-mcp-spec-key-1",
                      retry = luagent.retry.none}
end

-- The messages of the provider's request n.
local function sent(queue, n)
  return fake.requests(queue)[n].body.messages
end

local folder = assert(fs.realpath(assert(fs.temp_dir("mcp-agent"))))
assert(fs.write(folder .. "/notes.txt", "The meeting moved to Thursday, 10:00.\n"))

t.test("the model calls the filesystem server's read tool and reads the file in its next turn", function()
  local fs_tools <close> = assert(tools.mcp{command = servers.filesystem(folder), prefix = "fs_",
                                            only = {"read_text_file", "list_directory"}})
  local q = fake.queue("mcp-fs")
  fake.script(q, {
    {tool_calls = {{id = "call_1", name = "fs_read_text_file", arguments = {path = folder .. "/notes.txt"}}}},
    {text = "The meeting is on Thursday at 10:00."},
  })
  local a = agent.new{model = fake_model(q), tools = fs_tools, max_turns = 4}
  local result = a:run("When is the meeting? The notes are in " .. folder .. "/notes.txt.")
  t.eq(result.stopped_by, "answer")
  t.eq(result.output, "The meeting is on Thursday at 10:00.")
  local names = {}
  for _, tool in ipairs(fake.requests(q)[1].body.tools) do names[#names + 1] = tool["function"].name end
  t.same(names, {"fs_read_text_file", "fs_list_directory", "read_output"}, "the model was offered the MCP tools")
  local messages = sent(q, 2)
  local last = messages[#messages]
  t.eq(last.role, "tool")
  t.eq(last.tool_call_id, "call_1")
  t.eq(last.content, "The meeting moved to Thursday, 10:00.\n", "the model read the file's text")
end)

t.test("a 4 MB file read through the filesystem server comes back whole (its answer: one line in many reads)", function()
  local big = ("0123456789abcdef"):rep(4 * 65536) .. "\n" -- 4 MiB
  assert(fs.write(folder .. "/big.txt", big))
  local fs_tools <close> = assert(tools.mcp{command = servers.filesystem(folder), only = {"read_text_file"},
                                            timeout = 60})
  local text = fs_tools[1].handler({path = folder .. "/big.txt"})
  t.eq(#text, #big, "every byte")
  t.ok(text == big, "the same bytes")
end)

t.test("a path outside the server's folder: the model reads the server's refusal as the tool's error", function()
  local fs_tools <close> = assert(tools.mcp{command = servers.filesystem(folder), only = {"read_text_file"}})
  local q = fake.queue("mcp-denied")
  fake.script(q, {
    {tool_calls = {{id = "call_1", name = "read_text_file", arguments = {path = "/etc/hostname"}}}},
    {text = "I may not read that file."},
  })
  local result = agent.new{model = fake_model(q), tools = fs_tools, max_turns = 4}:run("Read /etc/hostname.")
  t.eq(result.output, "I may not read that file.")
  local last = sent(q, 2)[#sent(q, 2)]
  t.match(last.content, "^Error: the tool read_text_file failed: .*Access denied")
end)

t.test("an image from an MCP tool reaches the model as an image", function()
  local ev <close> = assert(tools.mcp{command = servers.everything(), only = {"get-tiny-image"}})
  local q = fake.queue("mcp-image")
  fake.script(q, {{tool_calls = {{id = "call_1", name = "get-tiny-image", arguments = {}}}}, {text = "A logo."}})
  local result = agent.new{model = fake_model(q), tools = ev, max_turns = 4}:run("Show me the image.")
  t.eq(result.output, "A logo.")
  local messages = sent(q, 2)
  t.match(messages[#messages - 1].content, "%[image 1: image/png, 4033 bytes%]", "the tool result names it")
  local follow = messages[#messages]
  t.eq(follow.role, "user", "Chat Completions takes images in a user message after the tool results")
  t.match(follow.content[2].image_url.url, "^data:image/png;base64,iVBORw0KGgo")
end)

t.test("a server that dies under a call: the model reads an error naming the server, the run goes on", function()
  local ev <close> = assert(tools.mcp{command = servers.everything(), name = "flaky",
                                      only = {"trigger-long-running-operation"}})
  local q = fake.queue("mcp-dies")
  fake.script(q, {
    {tool_calls = {{id = "call_1", name = "trigger-long-running-operation", arguments = {duration = 5, steps = 5}}}},
    {text = "The tool's server is gone; I stop here."},
  })
  luagent.spawn(function()
    luagent.sleep(0.5)
    os.execute("kill -KILL " .. ev.client.t.pid())
  end)
  local result = agent.new{model = fake_model(q), tools = ev, max_turns = 4}:run("Run the long operation.")
  t.eq(result.stopped_by, "answer")
  t.eq(result.output, "The tool's server is gone; I stop here.")
  local last = sent(q, 2)[#sent(q, 2)]
  t.eq(last.content, "Error: the tool trigger-long-running-operation failed: the MCP server 'flaky' was killed by signal KILL")
end)

fs.remove(folder)
return t.done()

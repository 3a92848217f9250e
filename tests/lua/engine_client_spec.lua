-- The engine client (luagent.engine_client) against an engine that answers its
-- ping and then stops answering (a SIGSTOPped or overloaded dockerd): a call
-- that times out says which engine did not answer, and how long it waited.
-- The engine here is a small HTTP server of this test (a test double), so no
-- Docker is needed.
local t = require "helper"
local engine = require "luagent.engine_client"
local process = require "luagent.process"
local fs = luagent.fs

local work = assert(fs.temp_dir("luagent-engine-client"))
luagent.at_exit(function() fs.remove(work) end)

local SERVER = [[
import http.server, sys, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.endswith("/_ping"):
            self.send_response(200); self.send_header("Api-Version", "1.41")
            self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"OK")
        else:
            time.sleep(30) # a hung engine
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
]]

local function start_hung_engine()
  assert(fs.write(work .. "/hung.py", SERVER))
  local proc = assert(process.spawn{argv = {"python3", work .. "/hung.py"}, stdout = "pipe"})
  local line = ""
  repeat
    local chunk = proc:read("stdout") -- nil: it ended
    line = line .. (chunk or "")
  until line:find("\n") or not chunk
  return proc, assert(tonumber(line:match("%d+")), "the test engine printed its port")
end

t.test("a call to an engine that stops answering times out naming the engine and the wait", function()
  local proc, port = start_hung_engine()
  local client = assert(engine.connect{host = ("tcp://127.0.0.1:%d"):format(port), tls = false})
  local started = luagent.now()
  local value, err = client:call("GET", "/containers/abc/json", nil, {timeout = 1})
  t.eq(value, nil)
  t.eq(err.kind, "timeout")
  t.match(err.message, "^GET /containers/abc/json: the Docker engine at tcp://127%.0%.0%.1:%d+ did not answer in 1 s")
  t.lt(luagent.now() - started, 5)
  proc:kill()
  proc:close()
end)

return t.done()

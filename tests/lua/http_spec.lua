-- The http primitive against the local test server (tests/http_server.py).
local t = require "helper"
local http, json = luagent.http, luagent.json
local base = "http://127.0.0.1:" .. t.env("TEST_HTTP_PORT")

t.test("20 requests from 20 tasks to a 0.5 s endpoint overlap", function()
  local started = luagent.now()
  local tasks = {}
  for i = 1, 20 do
    tasks[i] = luagent.spawn(function()
      local res = assert(http.request{url = base .. "/delay?s=0.5"})
      return res.status
    end)
  end
  local results, errors = luagent.wait_all(tasks)
  t.eq(errors, nil)
  for i = 1, 20 do t.eq(results[i], 200) end
  local took = luagent.now() - started
  t.lt(took, 2.0, "wall time")
  print(("    # 20 x 0.5 s requests took %.2f s"):format(took))
end)

t.test("method, headers and body reach the server; JSON comes back", function()
  local res = assert(http.request{
    method = "POST", url = base .. "/echo?x=1",
    headers = {["content-type"] = "application/json", ["x-custom"] = "v"},
    body = '{"hello":"world"}',
  })
  t.eq(res.status, 200)
  t.eq(res.headers["content-type"], "application/json")
  local echo = assert(json.decode(res.body))
  t.eq(echo.method, "POST"); t.eq(echo.query.x, "1")
  t.eq(echo.headers["x-custom"], "v")
  t.eq(echo.body, '{"hello":"world"}')
  t.eq(echo.headers.expect, nil, "no Expect: 100-continue")
end)

t.test("HTTP error statuses are responses, not errors", function()
  local res = assert(http.request{url = base .. "/status/503"})
  t.eq(res.status, 503)
  t.eq(res.headers["x-test"], "yes")
  t.match(res.body, "status 503")
end)

t.test("a request past its timeout fails with kind timeout", function()
  local started = luagent.now()
  local res, err = http.request{url = base .. "/hang", timeout = 0.3}
  t.eq(res, nil)
  t.eq(err.kind, "timeout")
  local took = luagent.now() - started
  t.ok(took >= 0.25 and took < 1.5, ("took %.2f s"):format(took))
end)

t.test("a timeout of less than a millisecond (what is left of a deadline) still ends the request", function()
  local started = luagent.now()
  local res, err = http.request{url = base .. "/hang", timeout = 0.0004}
  t.eq(res, nil)
  t.eq(err.kind, "timeout", "libcurl's 0 ms is 'no timeout': it must never be sent")
  t.lt(luagent.now() - started, 1.5)
end)

t.test("an idle stream fails with kind timeout", function()
  local started = luagent.now()
  local _, err = http.request{url = base .. "/drip?n=3&interval=2.5", idle_timeout = 1}
  t.eq(err and err.kind, "timeout")
  t.match(err.message, "no data for 1 s after the response began %(idle_timeout%)")
  local took = luagent.now() - started
  t.ok(took >= 0.9 and took < 2, ("stopped after %.2f s of silence (idle_timeout 1)"):format(took))
end)

t.test("the idle timeout counts from the response's start: a slow answer is waited for", function()
  local res, err = http.request{url = base .. "/delay?s=1.2", idle_timeout = 0.5, timeout = 5}
  t.eq(err, nil)
  t.eq(res and res.status, 200)
end)

t.test("the idle timeout does not count while on_chunk holds the stream (backpressure)", function()
  -- 3 MB: over the 1 MB a request buffers for a busy on_chunk, so the transfer is paused meanwhile
  local n, bytes = 0, 0
  local res, err = http.request{url = base .. "/bytes?n=3000000", idle_timeout = 0.5, on_chunk = function(c)
    n = n + 1
    if n == 1 then luagent.sleep(1.2) end
    bytes = bytes + #c
  end}
  t.eq(err, nil)
  t.eq(res and res.status, 200)
  t.eq(bytes, 3000000)
end)

t.test("a refused connection fails with kind connect", function()
  local _, err = http.request{url = "http://127.0.0.1:1/", timeout = 2}
  t.eq(err.kind, "connect")
  t.ok(#err.message > 0)
end)

t.test("a body cut short fails with kind network", function()
  local _, err = http.request{url = base .. "/cut"}
  t.eq(err and err.kind, "network")
end)

t.test("on_chunk streams the body and can stop it", function()
  local got = {}
  local res = assert(http.request{url = base .. "/drip?n=3&interval=0.05", on_chunk = function(c) got[#got + 1] = c end})
  t.eq(res.status, 200)
  t.eq(table.concat(got), "drip0;drip1;drip2;")
  t.eq(res.body, "", "streamed bodies are not kept")
  local calls = 0
  assert(http.request{url = base .. "/drip?n=5&interval=0.05", on_chunk = function() calls = calls + 1; return false end})
  t.eq(calls, 1)
end)

t.test("a large body streamed through on_chunk arrives whole", function()
  local n, total, sum = 5 * 1024 * 1024, 0, 0
  assert(http.request{url = base .. "/bytes?n=" .. n, on_chunk = function(c)
    total = total + #c
    sum = (sum + c:byte(1)) % 256
  end})
  t.eq(total, n)
end)

t.test("http.sse parses a live event stream", function()
  local events = {}
  local on_chunk = http.sse(function(ev) events[#events + 1] = ev end)
  assert(http.request{url = base .. "/sse?events=4", on_chunk = on_chunk})
  t.eq(#events, 4)
  t.eq(events[4].event, "tick"); t.eq(events[4].id, "3")
  t.eq(json.decode(events[4].data).i, 3)
end)

t.test("an SSE stream cut into 1-byte chunks parses to the same events", function()
  local stream = "event: a\r\ndata: {\"x\":1}\r\n\r\n: note\ndata: one\ndata: two\nid: 9\n\ndata: tail\r\r"
  local function parse(step)
    local events = {}
    local on_chunk = http.sse(function(ev) events[#events + 1] = ev end)
    for i = 1, #stream, step do on_chunk(stream:sub(i, i + step - 1)) end
    return events
  end
  local whole, bytes = parse(#stream), parse(1)
  t.eq(#whole, 3)
  t.same(bytes, whole)
  t.eq(whole[2].data, "one\ntwo")
end)

t.test("request bodies stream from a file", function()
  local dir = assert(luagent.fs.temp_dir())
  local path = dir .. "/body.bin"
  local chunk = string.rep("0123456789abcdef", 65536) -- 1 MiB
  assert(luagent.fs.write(path, chunk:rep(3)))
  local res = assert(http.request{method = "PUT", url = base .. "/echo", body_file = path})
  local echo = json.decode(res.body)
  t.eq(echo.length, 3 * #chunk)
  luagent.fs.remove(dir)
end)

t.test("connections are reused between requests", function()
  local a = assert(http.request{url = base .. "/conn"}).body
  local b = assert(http.request{url = base .. "/conn"}).body
  t.eq(a, b, "same client port")
end)

t.test("requests go through a unix socket", function()
  local res = assert(http.request{url = "http://localhost/echo", unix_socket = t.env("TEST_HTTP_SOCKET")})
  t.eq(res.status, 200)
  t.eq(json.decode(res.body).path, "/echo")
end)

t.test("archive downloads cut after a 200 fail, and leave no partial file", function()
  local dir = assert(luagent.fs.temp_dir())
  local _, err = luagent.engine_stream.save_archive{url = base .. "/cut", path = dir .. "/snap.tar"}
  t.eq(err and err.kind, "network")
  t.same(luagent.fs.list(dir), {}, "no half snapshot")
  local _, err2 = luagent.engine_stream.get_archive{url = base .. "/cut", dest = dir .. "/x"}
  t.eq(err2 and err2.kind, "network")
  local _, err3 = luagent.engine_stream.read_file{url = base .. "/cut"}
  t.eq(err3 and err3.kind, "network")
  luagent.fs.remove(dir)
end)

t.test("bad options raise naming the option", function()
  t.raises(function() http.request{url = base, timeout = "soon"} end, "timeout")
  t.raises(function() http.request{} end, "url")
  t.raises(function() http.request{url = base, headers = {["x\r\ny"] = "1"}} end, "line break")
end)

return t.done()

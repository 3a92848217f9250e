-- Interactive processes in a sandbox: box:spawn{tty = true} (a pseudo-terminal
-- the supervisor allocates) and the unified exec tools (exec_command,
-- write_stdin) over it, against the real engine.
local t = require "helper"
local sandbox, tools = luagent.sandbox, luagent.tools

local box <close> = assert(sandbox.open{timeout = 60})

-- What proc printed until pattern shows (or seconds pass), all of it.
local function upto(proc, pattern, seconds)
  local got, deadline = "", luagent.now() + (seconds or 10)
  while luagent.now() < deadline do
    local out = assert(proc:read(0.5))
    got = got .. out
    if got:find(pattern) then return got end
  end
  error(("%q never came; got %q"):format(pattern, got), 2)
end

local function count(pattern)
  local r = assert(box:exec({"sh", "-c", "ps -eo args | grep -c '^" .. pattern .. "' || true"}))
  return tonumber(r.stdout)
end

t.test("a Python REPL under a terminal: a variable defined, read back; isatty, its size, a resize", function()
  local repl <close> = assert(box:spawn({"python3", "-i", "-q"}, {tty = true, cols = 100, rows = 30}))
  upto(repl, ">>> $")
  assert(repl:write("x = 6 * 7\n"))
  upto(repl, ">>> $")
  assert(repl:write("print(x + 1)\n"))
  t.match(upto(repl, "43\r\n>>> $"), "print%(x %+ 1%)\r\n43\r\n", "the terminal echoes the line, then the answer")
  assert(repl:write("import os, shutil; print(os.isatty(0), os.isatty(1), shutil.get_terminal_size())\n"))
  t.match(upto(repl, "%)\r\n>>> $"), "True True os.terminal_size%(columns=100, lines=30%)")
  assert(repl:resize(120, 40))
  assert(repl:write("print(shutil.get_terminal_size())\n"))
  -- (readline may draw its prompt again on SIGWINCH, after the answer)
  t.match(upto(repl, "lines=40%).*>>> $"), "columns=120, lines=40", "the resize reached the program")
  assert(repl:close_stdin()) -- Ctrl-D at the prompt
  local r = assert(repl:wait(10))
  t.eq(r.exit_code, 0, "Ctrl-D ends the REPL")
  t.eq(r.stderr, "", "a terminal has one output: everything comes as stdout")
end)

t.test("a prompt (read -p) answered; Ctrl-C interrupts a running program and the shell goes on", function()
  local sh <close> = assert(box:spawn({"sh", "-c", "trap 'echo interrupted' INT; read -p 'Name? ' n; echo hello $n; "
                                      .. "sleep 1001; echo after $?; echo TERM=$TERM"}, {tty = true}))
  upto(sh, "Name%? $")
  assert(sh:write("Ada\n"))
  upto(sh, "hello Ada\r\n")
  luagent.sleep(0.3)
  t.eq(count("sleep 1001"), 1)
  assert(sh:write("\3"))
  local rest = upto(sh, "TERM=%S+")
  t.match(rest, "interrupted\r\nafter 130", "the sleep got SIGINT from the terminal (128 + 2)")
  t.match(rest, "TERM=xterm", "a terminal's processes know its type")
  t.eq(assert(sh:wait(10)).exit_code, 0)
end)

t.test("full-screen programs run under the terminal: top -b, less (q quits)", function()
  local top = assert(box:spawn({"top", "-b", "-n", "1"}, {tty = true, cols = 120}))
  local r = assert(top:wait(20))
  t.eq(r.exit_code, 0, r.stdout)
  t.match(r.stdout, "PID USER", "top's table")
  assert(box:exec("seq 1 500 > /tmp/numbers"))
  local less <close> = assert(box:spawn({"less", "/tmp/numbers"}, {tty = true, rows = 10}))
  local screen = upto(less, "9\r?\n")
  t.match(screen, "^.*1\r?\n2\r?\n", "the first page")
  t.no_match(screen, "\n20\r?\n", "only a page of it")
  assert(less:write(" ")) -- the next page
  upto(less, "1[0-9]\r?\n")
  assert(less:write("q"))
  t.eq(assert(less:wait(10)).exit_code, 0, "q quits less")
end)

t.test("without tty nothing changed: pipes, stdout and stderr apart, isatty false", function()
  local p = assert(box:spawn({"sh", "-c", "[ -t 0 ] && echo tty || echo pipe; echo err >&2"}))
  local r = assert(p:wait(10))
  t.eq(r.stdout, "pipe\n"); t.eq(r.stderr, "err\n")
end)

t.test("bad terminal options raise, naming them", function()
  t.raises(function() box:spawn("true", {tty = "yes"}) end, "tty must be true or false")
  t.raises(function() box:spawn("true", {tty = true, cols = 0}) end, "cols must be a whole number 1..9999")
  t.raises(function() box:spawn("true", {rows = 10}) end, "rows is the size of a terminal: set tty = true")
  local p <close> = assert(box:spawn("sleep 5", {stdin = true}))
  t.raises(function() p:resize(80, 24) end, "has no terminal")
end)

-- ---- output as it comes ----

t.test("box:exec{on_output}: the output comes while the command runs, and the result still has all of it", function()
  local pieces, first_at = {}, nil
  local started = luagent.now()
  local r = assert(box:exec("echo first; echo warn >&2; sleep 1; echo second", {on_output = function(text, stream)
    first_at = first_at or luagent.now()
    pieces[#pieces + 1] = stream .. ":" .. text
  end}))
  t.ok(first_at and first_at - started < 0.8, "the first piece came before the command's 1 s sleep ended")
  local all = table.concat(pieces)
  t.match(all, "stdout:first\n"); t.match(all, "stderr:warn\n"); t.match(all, "stdout:second\n")
  t.eq(r.stdout, "first\nsecond\n", "the result is whole"); t.eq(r.stderr, "warn\n")
  local seen = {}
  r = assert(box:python("import time\nprint('a', flush=True)\ntime.sleep(0.6)\nprint('b')",
                        {on_output = function(text) seen[#seen + 1] = text end}))
  t.eq(r.stdout, "a\nb\n"); t.match(table.concat(seen), "a\n.*b\n", "box:python streams too")
end)

t.test("on_output: an error it raises comes out once the command ended; a non-function is refused", function()
  local ok, err = pcall(box.exec, box, "echo x; sleep 0.3; echo done > /tmp/ran", {on_output = function()
    error("recipe bug")
  end})
  t.eq(ok, false); t.match(tostring(err), "recipe bug")
  t.eq(assert(box:exec("cat /tmp/ran")).stdout, "done\n", "the command ran to its end")
  t.raises(function() box:exec("true", {on_output = "print"}) end, "on_output must be a function")
end)

t.test("run_shell traces the output as it comes: sandbox_output events before the tool returns", function()
  local got = {}
  local function on_event(ev) if ev.type == "sandbox_output" then got[#got + 1] = {ev = ev, at = luagent.now()} end end
  luagent.events.subscribe(on_event)
  local shell = tools.run_shell(box)
  local out = shell.handler{command = "echo one; sleep 1.2; echo two"}
  local ended = luagent.now()
  luagent.events.unsubscribe(on_event)
  t.match(out, "one\ntwo\n")
  t.ok(#got >= 2, "two pieces at least: " .. #got)
  t.eq(got[1].ev.text, "one\n"); t.eq(got[1].ev.tool, "run_shell"); t.eq(got[1].ev.stream, "stdout")
  t.eq(got[1].ev.session, box.session)
  t.ok(ended - got[1].at > 0.8, "the first came while the command still ran")
  t.match(luagent.trace.describe(got[1].ev), "run_shell%s+| one", "the live view shows its last line")
end)

-- ---- exec_command and write_stdin ----

local function pair(opts)
  local list = tools.standard(box, {shell = "unified", max_sessions = opts and opts.max_sessions})
  local by = {}
  for _, tool in ipairs(list) do by[tool.name] = tool end
  return by
end

local function session_of(text)
  return tonumber(text:match("Process running with session ID (%d+)"))
end

t.test("tools.standard{shell = 'unified'}: exec_command and write_stdin in place of run_shell", function()
  local names = {}
  for _, tool in ipairs(tools.standard(box, {shell = "unified"})) do names[#names + 1] = tool.name end
  t.same(names, {"run_python", "exec_command", "write_stdin", "read_file", "write_file", "list_files", "view_image"})
  t.raises(function() tools.standard(box, {shell = "bash"}) end, 'shell must be "plain", "unified" or "native"')
end)

t.test("exec_command: a command that ends within its yield returns as run_shell's, with no session", function()
  local by = pair()
  local out = by.exec_command.handler{cmd = "echo hello; echo oops >&2; exit 3"}
  t.match(out, "Process exited with code 3")
  t.match(out, "Output:\nhello\noops\n")
  t.eq(session_of(out), nil)
end)

t.test("exec_command: a long command polled three times with write_stdin, then its end", function()
  local by = pair()
  local out = by.exec_command.handler{cmd = "for i in 1 2 3 4 5 6 7 8; do echo tick $i; sleep 0.5; done",
                                      yield_time_ms = 600}
  local id = session_of(out)
  t.ok(id, "a session: " .. out)
  t.match(out, "tick 1\n")
  local seen = {out}
  for _ = 1, 3 do
    local poll = by.write_stdin.handler{session_id = id, yield_time_ms = 700}
    t.eq(session_of(poll), id, "still running: " .. poll)
    seen[#seen + 1] = poll:match("Output:\n(.*)$")
  end
  local last = by.write_stdin.handler{session_id = id, yield_time_ms = 10000}
  t.match(last, "Process exited with code 0")
  seen[#seen + 1] = last:match("Output:\n(.*)$")
  local all = table.concat(seen)
  for i = 1, 8 do t.match(all, "tick " .. i .. "\n", "every line once, in some poll") end
  t.eq(select(2, all:gsub("tick", "")), 8, "no line twice")
  local ok, err = pcall(by.write_stdin.handler, {session_id = id})
  t.eq(ok, false); t.match(err.message, "there is no session " .. id .. " running", "an ended session is forgotten")
end)

-- write_stdin's output until pattern shows (polling with no keys), all of it.
local function poll_until(by, id, chars, pattern)
  local got, deadline = by.write_stdin.handler{session_id = id, chars = chars, yield_time_ms = 500}, luagent.now() + 15
  while not got:find(pattern) and luagent.now() < deadline do
    got = got .. by.write_stdin.handler{session_id = id, yield_time_ms = 500}
  end
  t.match(got, pattern)
  return got
end

t.test("write_stdin: a Python REPL under tty driven by keys: define a variable, read it back, Ctrl-C", function()
  local by = pair()
  local out = by.exec_command.handler{cmd = "python3 -i -q", tty = true, yield_time_ms = 1500}
  local id = session_of(out)
  t.ok(id, out)
  poll_until(by, id, "answer = 6 * 7\n", ">>> $")
  poll_until(by, id, "answer\n", "42\r\n>>> $")
  if t.runtime ~= "runsc" then -- (this gVisor: a Python interrupted under a terminal hangs, sandbox/GVISOR.md)
    poll_until(by, id, "import time; time.sleep(60)\n", "sleep%(60%)\r\n")
    luagent.sleep(0.3)
    poll_until(by, id, "\3", "KeyboardInterrupt.*>>> $")
    poll_until(by, id, "answer + 1\n", "43") -- the REPL goes on after Ctrl-C
  end
  local bye = by.write_stdin.handler{session_id = id, chars = "\4", yield_time_ms = 10000}
  -- (CPython exits 130 after a KeyboardInterrupt its REPL showed: its own rule)
  t.match(bye, "Process exited with code %d+", "Ctrl-D ends it")
  local ok, err = pcall(by.write_stdin.handler, {session_id = id, chars = "x"})
  t.eq(ok, false); t.match(err.message, "there is no session " .. id .. " running")
end)

t.test("exec_command without tty: Ctrl-C is sent as SIGINT, Ctrl-D ends stdin", function()
  local by = pair()
  local id = session_of(by.exec_command.handler{cmd = "cat; echo cat ended", yield_time_ms = 300})
  t.match(by.write_stdin.handler{session_id = id, chars = "line\n", yield_time_ms = 500}, "line\n")
  t.match(by.write_stdin.handler{session_id = id, chars = "\4", yield_time_ms = 5000}, "cat ended")
  id = session_of(by.exec_command.handler{cmd = "sleep 1002", yield_time_ms = 300})
  t.match(by.write_stdin.handler{session_id = id, chars = "\3", yield_time_ms = 5000}, "Process exited with code 130")
end)

t.test("sessions are capped per box: past the cap the least recently used is ended, and the output says so", function()
  local by = pair{max_sessions = 2}
  local a = session_of(by.exec_command.handler{cmd = "sleep 1011", yield_time_ms = 250})
  local b = session_of(by.exec_command.handler{cmd = "sleep 1012", yield_time_ms = 250})
  by.write_stdin.handler{session_id = a, yield_time_ms = 250} -- a is used last
  local out = by.exec_command.handler{cmd = "sleep 1013", yield_time_ms = 250}
  t.match(out, ("Session %d %%(the least recently used%%) was ended: at most 2 sessions"):format(b))
  luagent.sleep(0.3)
  t.eq(count("sleep 1012"), 0, "its process is gone")
  t.eq(count("sleep 1011"), 1)
  t.raises(function() tools.standard(box, {shell = "unified", max_sessions = 0}) end, "max_sessions must be")
end)

t.test("output past max_output_tokens keeps its head and tail", function()
  local by = pair()
  local out = by.exec_command.handler{cmd = "seq 1 20000", max_output_tokens = 100}
  t.match(out, "Output was %d+ bytes; its middle is left out")
  t.match(out, "Output:\n1\n2\n3\n")
  t.match(out, "20000\n$")
  t.lt(#out, 700)
end)

t.test("a session's tree ends with its box: its container is removed, the tool then says the box is closed", function()
  local other = assert(sandbox.open{})
  local list = tools.standard(other, {shell = "unified"})
  local id = session_of(list[2].handler{cmd = "sleep 1021 & sleep 1022", tty = true, yield_time_ms = 300})
  t.ok(id)
  local container = other.container
  assert(other:close())
  if t.engine ~= "k8s" then
    local _, err = assert(sandbox.engine()):call("GET", "/containers/" .. container .. "/json")
    t.eq(err and err.kind, "not_found", "the container and every process in it are gone")
  end
  local ok, err = pcall(list[3].handler, {session_id = id, chars = "x"})
  t.eq(ok, false); t.eq(err.kind, "closed", tostring(err.message))
end)

return t.done()

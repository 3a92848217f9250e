-- One error value: whatever layer fails — C primitives, the model providers,
-- the scripted and fallback models, replay, the tools — a recipe gets a
-- luagent.errors value with one metatable, a kind from the catalogue and
-- tostring "kind: message"; and every kind the sources use is in the catalogue.
local t = require "helper"
local errors, json, yaml, fs, http = luagent.errors, luagent.json, luagent.yaml, luagent.fs, luagent.http
local model, retry, tools = luagent.model, luagent.retry, luagent.tools

local function check_error(err, kind, what)
  t.ok(err ~= nil, what .. ": an error")
  t.ok(errors.is(err), what .. ": errors.is")
  t.ok(getmetatable(err) == errors.metatable, what .. ": the shared metatable")
  t.ok(errors.KINDS[err.kind] ~= nil, what .. ": kind " .. tostring(err.kind) .. " is in the catalogue")
  t.eq(tostring(err), err.kind .. ": " .. err.message, what .. ": tostring")
  if kind then t.eq(err.kind, kind, what .. ": kind") end
  return err
end

local USER = {{role = "user", content = "hello"}}

t.test("json, yaml, fs and http failures are error values", function()
  local _, err = json.decode("{not json")
  check_error(err, "json", "json.decode")
  _, err = yaml.load("a: [1, 2", "bad.yaml")
  check_error(err, "yaml", "yaml.load")
  _, err = fs.read("/nonexistent/luagent/file.txt")
  check_error(err, "not_found", "fs.read")
  _, err = http.request{url = "http://127.0.0.1:1/", timeout = 5}
  check_error(err, "connect", "http.request to a closed port")
end)

t.test("a model call to a closed port: network, naming provider and model, the transport's error kept", function()
  local m = model.openai{model = "gpt-4o-mini", base_url = "http://127.0.0.1:1/v1", retry = retry.none}
  local r, err = m:complete{messages = USER}
  t.eq(r, nil)
  check_error(err, "network", "model call")
  t.match(err.message, "^openai gpt%-4o%-mini: ")
  t.eq(err.provider, "openai"); t.eq(err.attempts, 1)
  check_error(err.cause, "connect", "its cause")
end)

t.test("model.from with nothing right configured: config errors", function()
  local _, err = model.from{provider = "nonesuch"}
  check_error(err, "config", "unknown provider")
  t.match(err.message, "nonesuch")
  _, err = model.from{provider = "openai", model = ""}
  check_error(err, "config", "a model without a name")
end)

t.test("the scripted model's error replies and a fallback's failure are error values", function()
  local _, err = model.scripted{{error = {kind = "rate_limit", message = "slow down", retry_after = 2}}}
    :complete{messages = USER}
  check_error(err, "rate_limit", "scripted")
  t.eq(err.retry_after, 2)
  local both = model.fallback{model.scripted{{error = {kind = "server", message = "down"}}},
                              model.scripted{{error = {kind = "auth", message = "bad key"}}}}
  _, err = both:complete{messages = USER}
  check_error(err, "auth", "fallback")
  t.match(err.message, "every model failed: down; bad key")
  t.eq(#err.errors, 2); check_error(err.errors[1], "server", "fallback's first")
end)

t.test("a replayed run that asks something else stops with a replay_mismatch error value", function()
  local dir = assert(fs.temp_dir("luagent-errors"))
  local path = dir .. "/rec.jsonl"
  assert(fs.write(path, json.encode({luagent_recording = 1}) .. "\n" .. json.encode({endpoint = "/completions",
    body = {messages = {{role = "user", content = "recorded"}}}, response = {status = 200, body = "{}"}}) .. "\n"))
  local replay = assert(require("luagent.model.recording").replayer(path))
  local ok, err = pcall(replay, {url = "http://x/v1/chat/completions",
                                 body = json.encode({messages = {{role = "user", content = "changed"}}})})
  t.eq(ok, false)
  check_error(err, "replay_mismatch", "replay")
  t.match(err.message, "differs from the recording"); t.match(err.message, "messages%[1%]%.content")
  local _, missing = require("luagent.model.recording").replayer(dir .. "/none.jsonl")
  check_error(missing, "not_found", "a missing recording")
  fs.remove(dir)
end)

t.test("the tools raise error values, which the agent shows the model", function()
  local closed = errors.new("closed", "the sandbox session is closed")
  local box = {
    exec = function(_, command)
      if type(command) == "table" then return {exit_code = 1, stdout = "", stderr = "find: 'nope': No such file"} end
      return nil, closed
    end,
    get = function() return "plain text, not an image" end,
  }
  local ok, err = pcall(tools.run_shell(box).handler, {command = "ls"})
  t.eq(ok, false); t.ok(err == closed, "the sandbox's own error")
  ok, err = pcall(tools.view_image(box).handler, {path = "a.txt"})
  t.eq(ok, false); check_error(err, "tool", "view_image")
  ok, err = pcall(tools.list_files(box).handler, {path = "nope"})
  t.eq(ok, false); check_error(err, "tool", "list_files")
end)

t.test("luagent.config raises the yaml or io error value", function()
  local ok, err = pcall(luagent.config, "/nonexistent/luagent/config.yaml")
  t.eq(ok, false)
  check_error(err, nil, "luagent.config")
  t.match(err.message, "config.yaml")
end)

-- ---- the catalogue covers every kind the sources use ----

local function read(path)
  return assert(fs.read(path))
end

local function kinds_used(files, patterns)
  local used = {}
  for _, path in ipairs(files) do
    local text = read(path)
    for _, pattern in ipairs(patterns) do
      for kind in text:gmatch(pattern) do
        used[kind] = used[kind] or path
      end
    end
  end
  return used
end

t.test("every kind in src/**/*.c and lua/**/*.lua is in errors.KINDS", function()
  local c_files, lua_files = {}, {}
  for _, entry in ipairs(assert(fs.walk("src"))) do
    if entry.type == "file" and entry.path:match("%.c$") then c_files[#c_files + 1] = "src/" .. entry.path end
  end
  for _, entry in ipairs(assert(fs.walk("lua"))) do
    if entry.type == "file" and entry.path:match("%.lua$") then lua_files[#lua_files + 1] = "lua/" .. entry.path end
  end
  t.ok(#c_files > 5 and #lua_files > 10, "the sources were found (run from the repository root)")
  local used = kinds_used(c_files, {'luagent_fail%(L, "([%w_]+)"', 'luagent_push_error%(L, "([%w_]+)"'})
  for kind, path in pairs(kinds_used(lua_files, {'errors%.new%("([%w_]+)"', 'errors%.fail%("([%w_]+)"'})) do
    used[kind] = used[kind] or path
  end
  local count = 0
  for kind, path in pairs(used) do
    count = count + 1
    t.ok(errors.KINDS[kind] ~= nil, ("%s uses the kind %q, which errors.KINDS does not have"):format(path, kind))
  end
  t.ok(count >= 10, ("found %d kinds in use"):format(count))
end)

t.test("'runner', the old name of supervisor_lost, is accepted for one release", function()
  local err = errors.new("runner", "the sandbox supervisor is gone")
  t.eq(err.kind, "supervisor_lost", "the value carries the new name")
  t.ok(errors.retryable(err), "retryable, as the catalogue says")
  local _, failed = errors.fail("runner", "gone")
  t.eq(failed.kind, "supervisor_lost", "errors.fail too")
  local policy = require("luagent.retry").exponential{on = {"runner"}}
  t.ok(policy:retryable(err), "a retry policy's `on` list may name the old kind")
  t.eq(errors.KINDS.runner, nil, "the catalogue lists the new name only")
end)

return t.done()

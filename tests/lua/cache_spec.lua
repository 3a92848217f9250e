-- The model-call cache (luagent.cache) against tests/fake_provider.py, a
-- test double speaking the providers' wire formats: keys, entries (torn and
-- corrupt ones are misses), hits that look like live answers (tool calls,
-- streaming through on_delta, events), refresh, failed writes, what is not
-- stored, and "live from turn N: why" in words.
local t = require "helper"
local fake = require "fake_provider_client"
local cache = require "luagent.cache"
local why = require "luagent.cache.why"
local run = require "luagent.run"
local fs, json, model, events = luagent.fs, luagent.json, luagent.model, luagent.events

local function temp_dir()
  return assert(fs.temp_dir("luagent-cache-spec"))
end

local function new_model(queue, provider, opts)
  local o = {model = provider == "anthropic" and "claude-3-5-haiku-20241022" or "gpt-4o-mini",
             base_url = fake.base_url(queue, provider), api_key = "sk-cache-spec-key-1", retry = luagent.retry.none}
  for k, v in pairs(opts or {}) do o[k] = v end
  return ({openai = model.openai, openai_responses = model.openai_responses, anthropic = model.anthropic})[provider](o)
end

-- Runs fn with the run's cache on in dir (mode "on" unless told), then off again.
local function with_cache(dir, fn, mode)
  local h = assert(cache.open{dir = dir, mode = mode or "on", recipe = "spec.lua"})
  run.current().cache = h
  local ok, err = pcall(fn, h)
  run.current().cache = nil
  h:finish()
  if not ok then error(err, 0) end
  return h
end

-- The events of type model_* that fn emits.
local function model_events(fn)
  local seen = {}
  local sub = events.subscribe(function(ev)
    if ev.type:match("^model_") or ev.type:match("^cache_") then seen[#seen + 1] = ev end
  end)
  local ok, err = pcall(fn)
  events.unsubscribe(sub)
  if not ok then error(err, 0) end
  return seen
end

local ASK = {messages = {{role = "system", content = "You add."}, {role = "user", content = "1 + 2?"}},
             tools = {{name = "add", description = "Add.", parameters = {type = "object",
               properties = {a = {type = "number"}, b = {type = "number"}}, required = {"a", "b"}}}}}

-- ---- keys ----

t.test("a key: same request, same key; stream fields, timings and the API key left out", function()
  local h = assert(cache.open{dir = temp_dir()})
  local body = {model = "m", messages = {{role = "tool", content = "exit code 0 (took 1.25 s)"}}, temperature = 0}
  local key, normalized = h:key{provider = "openai", base_url = "http://x/v1", body = body}
  t.match(key, "^%x+$")
  t.eq(#key, 64)
  local streamed = {model = "m", messages = {{role = "tool", content = "exit code 0 (took 3.5 s)"}}, temperature = 0,
                    stream = true, stream_options = {include_usage = true}}
  t.eq(h:key{provider = "openai", base_url = "http://x/v1", body = streamed}, key, "streamed, another timing")
  t.eq(normalized.stream, nil)
  t.eq(normalized.messages[1].content, "exit code 0 (took ? s)")
  t.ok(h:key{provider = "openai", base_url = "http://y/v1", body = body} ~= key, "another base URL")
  t.ok(h:key{provider = "anthropic", base_url = "http://x/v1", body = body} ~= key, "another provider")
  body.temperature = 0.5
  t.ok(h:key{provider = "openai", base_url = "http://x/v1", body = body} ~= key, "another temperature")
  -- two models that differ only by their key share entries
  local q = fake.queue("key")
  local dir = temp_dir()
  fake.script(q, {{text = "three"}})
  with_cache(dir, function()
    t.eq(new_model(q, "openai"):complete(ASK).text, "three")
    local again = new_model(q, "openai", {api_key = "sk-another-key-22"}):complete(ASK)
    t.eq(again.cached, true, "another API key: the same entry")
  end)
  t.eq(#fake.requests(q), 1)
  for _, e in ipairs(assert(fs.walk(dir))) do
    if e.type == "file" then
      t.no_match(assert(fs.read(dir .. "/" .. e.path)), "sk%-cache%-spec%-key", "no API key in " .. e.path)
    end
  end
end)

-- ---- hits ----

t.test("a hit is the stored answer: no request, tool calls decoded as live, cost 0, events say cached", function()
  local q, dir = fake.queue("hit"), temp_dir()
  fake.script(q, {{text = "Let me add.", tool_calls = {{id = "call_7", name = "add", arguments = {a = 1, b = 2}}},
                   usage = {input_tokens = 1000, output_tokens = 200}}})
  local m = new_model(q, "openai")
  local live, hit, evs
  local h = with_cache(dir, function()
    live = assert(m:complete(ASK))
    evs = model_events(function() hit = assert(m:complete(ASK)) end)
  end)
  t.eq(#fake.requests(q), 1, "one request: the second call was answered from the cache")
  t.eq(live.cached, nil)
  t.eq(hit.cached, true)
  t.eq(hit.cost, 0)
  t.ok(live.cost > 0, "gpt-4o-mini has a price")
  t.eq(hit.saved_cost, live.cost)
  t.eq(hit.text, "Let me add.")
  t.eq(hit.finish_reason, "tool_calls")
  t.same(hit.usage, live.usage)
  t.eq(hit.tool_calls[1].id, "call_7")
  t.eq(hit.tool_calls[1].name, "add")
  t.same(hit.tool_calls[1].arguments, {a = 1, b = 2})
  t.eq(hit.tool_calls[1].arguments_json, live.tool_calls[1].arguments_json)
  t.eq(m.totals.calls, 1, "a hit spends nothing: not in the model's totals")
  t.eq(evs[1].type, "model_request"); t.eq(evs[1].cached, true)
  t.eq(evs[2].type, "model_response"); t.eq(evs[2].cached, true); t.eq(evs[2].cost, 0)
  t.eq(h.stats.hits, 1); t.eq(h.stats.live, 1); t.eq(h.stats.calls, 2)
  t.eq(h.stats.saved_cost, live.cost)
  local summary = h:finish()
  t.eq(luagent.trace.describe(summary), ("2 model calls: 1 from cache, 1 live, $%.4f saved"):format(live.cost))
end)

t.test("a streaming call gets the cached text through on_delta; streamed and plain calls share entries", function()
  for _, provider in ipairs({"openai", "openai_responses", "anthropic"}) do
    local q, dir = fake.queue("stream"), temp_dir()
    fake.script(q, {{text = "The sum is three.", chunk = 3}})
    local m = new_model(q, provider)
    local live_pieces, hit_pieces = {}, {}
    local req = {messages = ASK.messages, stream = true}
    local hit, plain
    with_cache(dir, function()
      req.on_delta = function(p) live_pieces[#live_pieces + 1] = p end
      assert(m:complete(req))
      req.on_delta = function(p) hit_pieces[#hit_pieces + 1] = p end
      hit = assert(m:complete(req))
      plain = assert(m:complete{messages = ASK.messages})
    end)
    t.ok(#live_pieces > 1, provider .. ": the live answer came in pieces")
    t.same(hit_pieces, {"The sum is three."}, provider .. ": the hit's text, once")
    t.eq(table.concat(live_pieces), table.concat(hit_pieces))
    t.eq(hit.cached, true); t.eq(plain.cached, true, provider .. ": a plain call hits the streamed entry")
    t.eq(#fake.requests(q), 1, provider .. ": one request")
  end
end)

-- ---- what is stored ----

t.test("only complete, successful answers are stored: an error or a cut stream is not", function()
  local q, dir = fake.queue("fail"), temp_dir()
  fake.script(q, {{status = 500}, {text = "abcdefgh", cut = true}, {text = "fine"}})
  local m = new_model(q, "openai")
  with_cache(dir, function(h)
    t.eq(m:complete(ASK), nil, "HTTP 500")
    t.eq(m:complete{messages = ASK.messages, tools = ASK.tools, stream = true}, nil, "a cut stream")
    t.eq(#assert(fs.walk(dir)), 0, "nothing stored")
    t.eq(assert(m:complete(ASK)).text, "fine")
    t.eq(h.stats.live, 3)
  end)
  t.eq(#fake.requests(q), 3)
end)

t.test("a torn or corrupt entry is a miss, and the live answer rewrites it", function()
  local q, dir = fake.queue("torn"), temp_dir()
  fake.script(q, {{text = "first"}, {text = "second"}, {text = "third"}})
  local m = new_model(q, "openai")
  local key
  with_cache(dir, function(h)
    assert(m:complete(ASK))
    key = h:key{provider = "openai", base_url = m.base_url, body = require("luagent.model.call").request(m, ASK)}
  end)
  local path = ("%s/%s/%s.json"):format(dir, key:sub(1, 2), key)
  local whole = assert(fs.read(path))
  assert(fs.write(path, whole:sub(1, #whole // 2)))           -- torn
  with_cache(dir, function(h)
    t.eq(assert(m:complete(ASK)).text, "second")
    t.eq(h.stats.corrupt, 1)
  end)
  t.eq(json.decode(assert(fs.read(path))).result.text, "second", "rewritten")
  local entry = json.decode(assert(fs.read(path)))
  entry.key = "0000"                                          -- someone else's entry
  assert(fs.write(path, json.encode(entry)))
  with_cache(dir, function() t.eq(assert(m:complete(ASK)).text, "third") end)
  with_cache(dir, function() t.eq(assert(m:complete(ASK)).cached, true) end)
  t.eq(#fake.requests(q), 3)
end)

t.test("refresh never reads the cache but refills it", function()
  local q, dir = fake.queue("refresh"), temp_dir()
  fake.script(q, {{text = "old"}, {text = "new"}})
  local m = new_model(q, "openai")
  with_cache(dir, function() t.eq(assert(m:complete(ASK)).text, "old") end)
  local h = with_cache(dir, function() t.eq(assert(m:complete(ASK)).text, "new") end, "refresh")
  t.eq(h.stats.hits, 0); t.eq(h.stats.live, 1); t.eq(h.stats.misses, 0)
  with_cache(dir, function() t.eq(assert(m:complete(ASK)).text, "new", "refilled") end)
  t.eq(#fake.requests(q), 2)
end)

t.test("a failed write is one warning on stderr, and the call still answers", function()
  local q = fake.queue("nowrite")
  fake.script(q, {{text = "a"}, {text = "b"}})
  local blocker = temp_dir() .. "/a-file"
  assert(fs.write(blocker, "x"))
  local m = new_model(q, "openai")
  local written = {}
  local real = io.stderr
  local capture = {write = function(self, ...) for _, s in ipairs({...}) do written[#written + 1] = s end return self end}
  io.stderr = capture -- luacheck: ignore 122 (the warning is read back here)
  local ok, err = pcall(with_cache, blocker .. "/cache", function()
    t.eq(assert(m:complete(ASK)).text, "a")
    t.eq(assert(m:complete{messages = {{role = "user", content = "other"}}}).text, "b")
  end)
  io.stderr = real -- luacheck: ignore 122
  assert(ok, err)
  local text = table.concat(written)
  t.match(text, "warning: the model%-call cache cannot write in .*a%-file/cache")
  local _, count = text:gsub("warning:", "")
  t.eq(count, 1, "one warning per run")
end)

t.test("the scripted model is not cached", function()
  local dir = temp_dir()
  local h = with_cache(dir, function()
    local m = model.scripted{{text = "one"}, {text = "two"}}
    t.eq(m:complete(ASK).text, "one")
    t.eq(m:complete(ASK).text, "two")
  end)
  t.eq(h.stats.calls, 0)
  t.eq(#assert(fs.walk(dir)), 0)
end)

t.test("a run with the cache on whose replies all come from the scripted driver says once that nothing is cached",
  function()
  local work = temp_dir()
  assert(fs.write(work .. "/scripted.lua", [[
local m = luagent.model.scripted{{text = "one"}, {text = "two"}}
local a = luagent.agent.new{name = "a", instructions = "Say one.", model = m, max_turns = 3}
print(a:run("Go.").output)
print(m:complete{messages = {{role = "user", content = "again"}}}.text)
]]))
  assert(fs.write(work .. "/none.lua", "print('no model here')\n"))
  local said = {}
  for _, name in ipairs{"scripted", "none"} do
    local r = assert(run.new{recipe = work .. "/" .. name .. ".lua", dir = work .. "/runs/" .. name, quiet = true,
                             cache = "on", capture = true})
    local result = r:execute()
    t.eq(result.status, "ok")
    said[name] = assert(fs.read(result.dir .. "/stdout.txt"))
  end
  local _, n = said.scripted:gsub("model%-call cache", "")
  t.eq(n, 1, "said once")
  t.match(said.scripted, "The model%-call cache stored nothing: the scripted driver made this run's 2 replies "
    .. "without calling a model")
  t.for_people(said.scripted)
  t.match(said.none, "The model%-call cache stored nothing: this run called no model%.")
  t.eq(#(fs.walk(work .. "/.luagent/cache") or {}), 0)
end)

-- ---- switching it on ----

t.test("cache.open: a path that is not a folder is a config error; misuse raises", function()
  local file = temp_dir() .. "/f"
  assert(fs.write(file, ""))
  local h, err = cache.open{dir = file}
  t.eq(h, nil)
  t.eq(err.kind, "config")
  t.match(err.message, "not a folder")
  t.raises(function() cache.open{} end, "'dir'")
  t.raises(function() cache.open{dir = "x", mode = "sometimes"} end, "mode")
end)

t.test("the folder: setting cache.dir, then LUAGENT_CACHE, then .luagent/cache beside the recipe", function()
  t.eq(cache.dir_for({cache = {dir = "/tmp/c"}}, "recipes"), "/tmp/c")
  local env = os.getenv("LUAGENT_CACHE")
  if env then t.eq(cache.dir_for({}, "recipes"), env)
  else t.eq(cache.dir_for({}, "recipes"), "recipes/.luagent/cache") end
end)

t.test("cache: in a recipe's YAML switches it on, unless the command line said", function()
  local r = run.current()
  local dir = temp_dir()
  local saved = r.cache_option
  local ok, err = pcall(function()
    r.cache_option = "off"
    cache.from_config(true, dir .. "/recipe.yaml")
    t.eq(r.cache, nil, "--no-cache beats the YAML")
    r.cache_option = nil
    cache.from_config(false, dir .. "/recipe.yaml")
    t.eq(r.cache, nil, "cache: false")
    cache.from_config({dir = "c"}, dir .. "/recipe.yaml")
    t.eq(r.cache, nil, "a table without mode")
    cache.from_config({mode = "refresh", dir = "c"}, dir .. "/recipe.yaml")
    t.eq(r.cache.mode, "refresh")
    t.eq(r.cache.dir, dir .. "/c", "a relative dir is beside the YAML")
    r.cache = nil
    local e = t.raises(function() cache.from_config("sometimes", dir .. "/recipe.yaml") end, "recipe.yaml: cache:")
    t.eq(e.kind, "config")
  end)
  r.cache, r.cache_option = nil, saved
  assert(ok, err)
end)

-- ---- stats and clear ----

t.test("stats counts entries by model; clear removes only the cache's own files", function()
  local q, dir = fake.queue("stats"), temp_dir()
  fake.script(q, {{text = "a"}, {text = "b"}})
  with_cache(dir, function()
    assert(new_model(q, "openai"):complete(ASK))
    assert(new_model(q, "openai", {model = "gpt-4o"}):complete(ASK))
  end)
  assert(fs.write(dir .. "/notes.txt", "mine"))
  local s = assert(cache.stats(dir))
  t.eq(s.entries, 2)
  t.ok(s.bytes > 0)
  t.eq(s.by_model["gpt-4o-mini"].entries, 1)
  t.eq(s.by_model["gpt-4o"].entries, 1)
  t.ok(s.oldest and s.newest and s.oldest <= s.newest)
  local kept = assert(cache.clear(dir, {older_than = 3600}))
  t.eq(kept.removed, 0); t.eq(kept.kept, 2)
  local r = assert(cache.clear(dir))
  t.eq(r.removed, 2)
  t.eq(assert(cache.stats(dir)).entries, 0)
  t.eq(fs.read(dir .. "/notes.txt"), "mine", "a file that is not the cache's is left")
  t.eq(assert(cache.stats(dir .. "/missing")).entries, 0, "a missing folder holds nothing")
end)

-- ---- why a run went live ----

local function chat(system, task, tool_result, extra)
  local body = {model = "gpt-4o-mini", temperature = 0, messages = {
    {role = "system", content = system}, {role = "user", content = task},
    {role = "assistant", tool_calls = {{id = "c1", type = "function", ["function"] = {name = "add", arguments = "{}"}}}},
    {role = "tool", tool_call_id = "c1", content = tool_result},
    {role = "assistant", content = "so far"}, {role = "user", content = "go on"},
  }}
  for k, v in pairs(extra or {}) do body[k] = v end
  return body
end

t.test("why: the first difference of two requests, in words (Chat Completions)", function()
  local base = chat("S", "T", "3")
  t.eq(why.changed(base, chat("S2", "T", "3")), "instructions changed")
  t.eq(why.changed(base, chat("S", "T2", "3")), "task changed")
  t.eq(why.changed(base, chat("S", "T", "4")), "tool result of turn 1 changed")
  local later = chat("S", "T", "3")
  later.messages[6].content = "stop"
  t.eq(why.changed(base, later), "the conversation changed at message 6")
  t.eq(why.changed(base, chat("S", "T", "3", {model = "gpt-4o"})), "model changed")
  t.eq(why.changed(base, chat("S", "T", "3", {temperature = 1})), "temperature changed")
  t.eq(why.changed(base, chat("S", "T", "3", {tools = {{type = "function"}}})), "tools changed")
  t.eq(why.changed(base, chat("S2", "T", "3", {model = "gpt-4o"})), "instructions changed, model changed")
  t.eq(why.changed(nil, base), "the request changed")
end)

t.test("why: Responses and Anthropic bodies", function()
  local resp = {model = "m", instructions = "S", input = {{role = "user", content = "T"},
    {type = "function_call", call_id = "c1", name = "add", arguments = "{}"},
    {type = "function_call", call_id = "c2", name = "add", arguments = "{}"},
    {type = "function_call_output", call_id = "c1", output = "3"}}}
  local changed = json.decode(json.encode(resp))
  changed.instructions = "S2"
  t.eq(why.changed(resp, changed), "instructions changed")
  changed = json.decode(json.encode(resp))
  changed.input[4].output = "4"
  t.eq(why.changed(resp, changed), "tool result of turn 1 changed", "two calls of one turn count once")
  local anth = {model = "m", system = "S", messages = {{role = "user", content = "T"},
    {role = "assistant", content = {{type = "tool_use", id = "t1", name = "add", input = {}}}},
    {role = "user", content = {{type = "tool_result", tool_use_id = "t1", content = "3"}}},
    {role = "assistant", content = {{type = "tool_use", id = "t2", name = "add", input = {}}}},
    {role = "user", content = {{type = "tool_result", tool_use_id = "t2", content = "5"}}}}}
  changed = json.decode(json.encode(anth))
  changed.messages[5].content[1].content = "6"
  t.eq(why.changed(anth, changed), "tool result of turn 2 changed")
  changed = json.decode(json.encode(anth))
  changed.messages[1].content = "T2"
  t.eq(why.changed(anth, changed), "task changed")
end)

t.test("the first miss after hits says where the run went live and why, once", function()
  local q, dir = fake.queue("live"), temp_dir()
  local function ask(system, turn)
    return {messages = {{role = "system", content = system}, {role = "user", content = "task"}}, turn = turn,
            agent = "analyst"}
  end
  fake.script(q, {{text = "1"}, {text = "2"}, {text = "3"}, {text = "3b"}, {text = "4"}})
  local m = new_model(q, "openai")
  with_cache(dir, function()
    for turn, system in ipairs({"a", "b", "c"}) do assert(m:complete(ask(system, turn))) end
  end)
  local evs
  with_cache(dir, function()
    evs = model_events(function()
      assert(m:complete(ask("a", 1)))
      assert(m:complete(ask("b", 2)))
      assert(m:complete(ask("c changed", 3)))
      assert(m:complete(ask("d", 4)))
    end)
  end)
  local lines = {}
  for _, ev in ipairs(evs) do
    if ev.type == "cache_live" then lines[#lines + 1] = luagent.trace.describe(ev) end
  end
  t.same(lines, {"turns 1-2 from cache; live from turn 3: instructions changed"})
  t.eq(#fake.requests(q), 5)
  -- a broken list of the last run's keys: the line still comes, without the why
  fake.script(q, {{text = "5"}})
  assert(fs.write(dir .. "/runs/spec.json", '{"v":1,"keys":["../../etc/passwd",7,{"x":1}]}'))
  with_cache(dir, function()
    evs = model_events(function()
      assert(m:complete(ask("a", 1)))
      assert(m:complete(ask("b changed", 2)))
    end)
  end)
  t.eq(luagent.trace.describe(evs[#evs - 2]), "turn 1 from cache; live from turn 2: the request changed")
end)

return t.done()

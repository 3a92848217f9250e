-- The LuaLS annotations (lua/meta/*.lua) cover the whole recipe API: every
-- public function of every module, every error kind, every class's methods,
-- and the low-level modules are marked as such and kept out of the
-- `luagent` class. A function added without an annotation fails here.
local t = require "helper"
local check = require "meta_check"
local fs = require "luagent.fs"
local sys = require "luagent.sys"

local ROOT = (luagent.recipe or ""):match("^(.*)tests/lua/[^/]*$") or ""
local META = ROOT .. "lua/meta/"

local function meta(file)
  return "\n" .. assert(fs.read(META .. file))
end

-- module -> {annotation file, the local name its functions are declared on}
local MODULES = {
  ["luagent.errors"] = {"errors.lua", "errors"},
  ["luagent.sandbox"] = {"sandbox.lua", "sandbox"},
  ["luagent.model"] = {"model.lua", "model"},
  ["luagent.agent"] = {"agent.lua", "agent"},
  ["luagent.tools"] = {"tools.lua", "tools"},
  ["luagent.mcp"] = {"mcp.lua", "mcp"},
  ["luagent.retry"] = {"retry.lua", "retry"},
  ["luagent.trace"] = {"trace.lua", "trace"},
  ["luagent.outputs"] = {"outputs.lua", "outputs"},
  ["luagent.json"] = {"json.lua", "json"},
  ["luagent.yaml"] = {"yaml.lua", "yaml"},
  ["luagent.fs"] = {"fs.lua", "fs"},
  ["luagent.http"] = {"http.lua", "http"},
  ["luagent.diff"] = {"diff.lua", "diff"},
  ["luagent.eval"] = {"eval.lua", "eval"},
  ["luagent.eval.spec"] = {"eval.lua", "spec"},
  ["luagent.checks"] = {"checks.lua", "checks"},
  ["luagent.script"] = {"script.lua", "script"},
  -- internal, not annotated: luagent.eval.page (the eval's comparison page, written by luagent.eval);
  -- luagent.trace_page and luagent.trace_page.* (the page of `luagent trace html`), luagent.markdown and
  -- luagent.highlight (its Markdown renderer and code highlighter); luagent.lines (a line splitter
  -- for chunked streams); luagent.handle (handles born closed) and luagent.text (the excerpt helper), the
  -- library's own helpers
  ["luagent.cache"] = {"cache.lua", "cache"},
  ["luagent.schema"] = {"schema.lua", "schema"},
  -- low-level, a module of a folder: its own file, not of the LOW_LEVEL pattern
  ["luagent.kube.config"] = {"kube_config.lua", "config"},
  ["luagent.kube.client"] = {"kube_client.lua", "kube"},
}

-- The low-level modules: lua/meta/<name>.lua each (---@meta luagent.<name>),
-- its class marked "low-level: recipes normally do not need this", and not a
-- field of the luagent class.
local LOW_LEVEL = {"sched", "sys", "events", "run", "manifest", "tar", "engine_client", "engine_stream", "dates", "process",
                   "context", "http_head"}
for _, name in ipairs(LOW_LEVEL) do MODULES["luagent." .. name] = {name .. ".lua", name} end

-- Lua classes (capitalised locals with methods in lua/luagent) -> annotation file
local CLASSES = {
  Box = "sandbox.lua", Process = "sandbox.lua", Model = "model.lua", Fallback = "model.lua", Scripted = "model.lua",
  Agent = "agent.lua", Policy = "retry.lua", Client = "engine_client.lua", Trace = "trace.lua", Cache = "cache.lua",
  RecipeRun = "run.lua", McpClient = "mcp.lua", McpToolList = "mcp.lua", Pool = "sandbox.lua",
  KubeClient = "kube_client.lua",
}
-- classes that are not API: their methods need no annotation
local INTERNAL = {
  AgentRun = "an agent run's state (tools see it as ctx.agent_run)",
  Stream = "a provider's stream assembler (luagent.model.StreamAssembler)",
  Base = "the shared part of the providers' stream assemblers (lua/luagent/model/stream.lua)",
  Session = "the Docker backend's session behind a box (luagent.SandboxSession, lua/meta/sandbox_backend.lua)",
  Supervisor = "the host's handle on a session's supervisor (luagent.SandboxSupervisor, lua/meta/sandbox_backend.lua)",
  Mirror = "a box's outputs mirror (lua/luagent/sandbox/mirror.lua; its fields: luagent.SandboxMirror)",
  Reader = "the eval spec checker's state while it reads one spec (lua/luagent/eval/spec.lua)",
  Width = "an eval's width with concurrency auto (lua/luagent/eval/width.lua)",
  McpStream = "MCP's line-based stdio transport over a process's streams (lua/luagent/mcp/stream.lua)",
  HostProcess = "the streams of a host process running an MCP server (lua/luagent/mcp/stdio.lua)",
  HttpTransport = "MCP's Streamable HTTP transport (lua/luagent/mcp/http.lua)",
  BoxProcess = "the streams of a sandbox process running an MCP server (lua/luagent/mcp/sandbox.lua)",
  Splitter = "the line splitter for chunked streams (lua/luagent/lines.lua)",
  Guard = "the guard of a handle being built, born closed (lua/luagent/handle.lua)",
  Egress = "a box's egress: the host's proxy over its relay (lua/luagent/sandbox/egress.lua; box:network())",
  Journal = "a run's journal for luagent run --resume (lua/luagent/journal.lua)",
  Rules = "a box's compiled network rules (lua/luagent/sandbox/network_rules.lua; luagent.NetworkRules)",
}

local function sorted_keys(set)
  local keys = {}
  for k in pairs(set) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

local function no_gaps(gaps, what)
  t.ok(#gaps == 0, what .. ", not annotated in lua/meta: " .. table.concat(gaps, ", "))
end

-- ---- the checker itself ----

t.test("the checker reports a function added without an annotation", function()
  local fake = {documented = print, added_later = print, _private = print, LIMIT = 3, described = 1}
  local text = "\nfunction fake.documented(x) end\n---@field described integer\n"
  t.same(check.missing(text, "fake", fake), {"LIMIT", "added_later"})
  t.same(check.missing(text .. "function fake.added_later() end\nfake.LIMIT = 3\n", "fake", fake), {})
  -- a method: `function Class:name(` or `function Class.name(`
  t.ok(check.declared("\nfunction Box:exec(cmd) end", "Box", "exec", true))
  t.ok(not check.declared("\nfunction Box:exec(cmd) end", "Box", "execute", true))
  -- a field declaration does not stand in for a function
  t.ok(not check.declared("\n---@field run fun()", "X", "run", true))
end)

t.test("the checker reports an annotation of a function that is gone", function()
  local text = "\nfunction fake.kept(x) end\nfunction fake.removed() end\nfunction Other.kept() end\n"
  t.same(check.stale(text, "fake", {kept = print}), {"removed"})
end)

t.test("the checker finds the methods Lua source defines", function()
  local found = check.source_methods("\nfunction Box:exec(cmd)\nend\nfunction Box:_private()\nend\n"
    .. "function Pool.take(n) end\nfunction helper() end\nlocal function Hidden() end\n")
  t.same(found, {Box = {exec = true}, Pool = {take = true}})
end)

-- ---- the annotation files ----

t.test("every annotation file is embedded, and luagent meta writes them all", function()
  local listed = {}
  for _, name in ipairs(require("luagent.cli.meta").FILES) do listed[name] = true end
  local on_disk = {}
  for _, name in ipairs(assert(fs.list(META))) do
    if name:match("%.lua$") then on_disk[name] = true end
  end
  t.same(sorted_keys(listed), sorted_keys(on_disk), "luagent.cli.meta FILES against lua/meta/")
  for name in pairs(on_disk) do
    local text = fs.read(META .. name)
    t.match(text, "^%-%-%-@meta ", name .. " starts with ---@meta")
    t.ok(sys.asset("lua/meta/" .. name) == text, name .. " is embedded as an asset as it is (rebuild with make)")
  end
end)

t.test("the annotation files are not modules of the embedded library", function()
  for _, name in ipairs(require("luagent.cli.meta").FILES) do
    local module = "meta." .. name:gsub("%.lua$", "")
    t.eq(package.preload[module], nil, module)
  end
end)

-- ---- coverage ----

t.test("every public function of every module is annotated", function()
  local gaps = {}
  for _, module in ipairs(sorted_keys(MODULES)) do
    local file, owner = MODULES[module][1], MODULES[module][2]
    for _, name in ipairs(check.missing(meta(file), owner, (require(module)))) do
      gaps[#gaps + 1] = ("%s.%s (in %s)"):format(module, name, file)
    end
  end
  no_gaps(gaps, "module functions and fields")
end)

t.test("no annotation names a module function that does not exist", function()
  local stale = {}
  for _, module in ipairs(sorted_keys(MODULES)) do
    local file, owner = MODULES[module][1], MODULES[module][2]
    for _, name in ipairs(check.stale(meta(file), owner, (require(module)))) do
      stale[#stale + 1] = ("%s.%s (in %s)"):format(module, name, file)
    end
  end
  for _, name in ipairs(check.stale(meta("luagent.lua"), "luagent", luagent)) do
    stale[#stale + 1] = "luagent." .. name
  end
  t.ok(#stale == 0, "annotated but not there: " .. table.concat(stale, ", "))
end)

t.test("every function of the luagent global is annotated", function()
  local lazy = {}
  for name in (fs.read(ROOT .. "lua/luagent/init.lua"):match("local LAZY = (%b{})") or ""):gmatch("([%w_]+) = true") do
    lazy[name] = true
  end
  t.ok(lazy.sandbox and lazy.model, "the LAZY list of lua/luagent/init.lua is found")
  -- submodules are checked below; what is loaded already sits in the table
  local gaps = check.missing(meta("luagent.lua"), "luagent", luagent, function(name) return lazy[name] end)
  no_gaps(gaps, "luagent fields")
end)

-- Is the class luagent.<name> in `text` marked low-level (the mark in the
-- "---" comment block right above its ---@class line)?
local function marked_low_level(text, name)
  local block = {}
  for line in text:gmatch("[^\n]*") do
    if line == "---@class luagent." .. name then
      return table.concat(block, "\n"):find("low-level: recipes normally do not need this", 1, true) ~= nil
    end
    if line:match("^%-%-%-") then block[#block + 1] = line else block = {} end
  end
  return false
end

t.test("every module has an annotation file of its own, so require gets its types", function()
  for _, module in ipairs(sorted_keys(MODULES)) do
    local file, owner = MODULES[module][1], MODULES[module][2]
    if module == "luagent." .. owner then
      t.ok(meta(file):find("\n---@meta " .. module .. "\n", 1, true), "lua/meta/" .. file .. " declares ---@meta " .. module)
      t.ok(meta(file):find("\nreturn " .. owner .. "\n", 1, true), "lua/meta/" .. file .. " returns " .. owner)
    end
  end
end)

t.test("the luagent class lists the recipe modules; low-level ones are marked and left out", function()
  local text = meta("luagent.lua")
  local lazy = fs.read(ROOT .. "lua/luagent/init.lua"):match("local LAZY = (%b{})")
  local low = {}
  for _, name in ipairs(LOW_LEVEL) do low[name] = true end
  local function is_field(name) return text:find("---@field " .. name .. " luagent." .. name .. " ", 1, true) ~= nil end
  for _, name in ipairs(LOW_LEVEL) do
    t.ok(marked_low_level(meta(name .. ".lua"), name), "luagent." .. name .. " is marked low-level in " .. name .. ".lua")
    t.ok(not is_field(name), "low-level luagent." .. name .. " is not a field of the luagent class")
  end
  for name in lazy:gmatch("([%w_]+) = true") do
    if not low[name] then
      t.ok(is_field(name), "luagent." .. name .. ": a ---@field of the luagent class (or a low-level module in LOW_LEVEL)")
      local file = meta(name .. ".lua")
      t.ok(file:find("---@meta luagent." .. name .. "\n", 1, true),
        "lua/meta/" .. name .. ".lua declares ---@meta luagent." .. name)
      t.ok(not marked_low_level(file, name), "luagent." .. name .. " is a field of the luagent class, not marked low-level")
    end
  end
end)

t.test("the ErrorKind alias lists every kind of errors.KINDS, and no other", function()
  local text = meta("errors.lua")
  local listed = {}
  for kind in text:gmatch('\n%-%-%-| "([%w_]+)"') do listed[kind] = true end
  t.same(sorted_keys(listed), sorted_keys(require("luagent.errors").KINDS))
  t.ok(text:find("---@class luagent.Error\n", 1, true), "luagent.Error is a class")
  for _, field in ipairs({"kind", "message", "status", "retry_after", "path", "line", "column", "position"}) do
    t.ok(text:find("---@field " .. field .. " ", 1, true), "luagent.Error." .. field)
  end
end)

t.test("every method of the Lua classes is annotated", function()
  local found = {}
  for _, e in ipairs(assert(fs.walk(ROOT .. "lua/luagent"))) do
    if e.type == "file" and e.path:match("%.lua$") and not e.path:match("^cli/") then
      check.source_methods("\n" .. fs.read(ROOT .. "lua/luagent/" .. e.path), found)
    end
  end
  t.ok(found.Box and found.Box.exec, "Box:exec is found in the sandbox source")
  local gaps = {}
  for _, class in ipairs(sorted_keys(found)) do
    if CLASSES[class] then
      local text = meta(CLASSES[class])
      for _, method in ipairs(sorted_keys(found[class])) do
        if not check.declared(text, class, method, true) then
          gaps[#gaps + 1] = ("%s:%s (in %s)"):format(class, method, CLASSES[class])
        end
      end
      for _, method in ipairs(check.stale(text, class, found[class])) do
        gaps[#gaps + 1] = ("%s:%s is annotated in %s but defined nowhere"):format(class, method, CLASSES[class])
      end
    elseif not INTERNAL[class] then
      gaps[#gaps + 1] = ("class %s (annotate it, or list it as internal in meta_spec.lua)"):format(class)
    end
  end
  no_gaps(gaps, "class methods")
end)

t.test("every method of the C handle classes a recipe gets is annotated", function()
  local task = luagent.spawn(function() end)
  task:wait()
  local gaps = {}
  for _, name in ipairs(check.missing(meta("luagent.lua"), "Task", check.methods_of(task))) do
    gaps[#gaps + 1] = "task:" .. name
  end
  local parser = check.methods_of(luagent.http.sse_parser())
  for _, name in ipairs(check.missing(meta("http.lua"), "SseParser", parser)) do
    gaps[#gaps + 1] = "sse_parser:" .. name
  end
  for _, name in ipairs(check.stale(meta("luagent.lua"), "Task", check.methods_of(task))) do
    gaps[#gaps + 1] = "task:" .. name .. " is annotated but not there"
  end
  for _, name in ipairs(check.stale(meta("http.lua"), "SseParser", parser)) do
    gaps[#gaps + 1] = "sse_parser:" .. name .. " is annotated but not there"
  end
  no_gaps(gaps, "handle methods")
end)

return t.done()

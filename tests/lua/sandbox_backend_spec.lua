-- The contracts behind a box (lua/meta/sandbox_backend.lua): every backend's
-- session class has every method of luagent.SandboxSession, every supervisor
-- handle every method of luagent.SandboxSupervisor, and each backend module
-- makes sessions (create). A backend added without one of them fails here.
local t = require "helper"
local fs = require "luagent.fs"

local ROOT = (luagent.recipe or ""):match("^(.*)tests/lua/[^/]*$") or ""
local META = assert(fs.read(ROOT .. "lua/meta/sandbox_backend.lua"))

-- The methods the annotation declares for a class (`function Class:name(`).
local function declared(class)
  local names = {}
  for name in META:gmatch("\nfunction " .. class .. ":([%w_]+)%(") do names[#names + 1] = name end
  return names
end

local BACKENDS = {
  {module = "luagent.sandbox.docker_backend", session = "Session"},
  {module = "luagent.sandbox.k8s_backend", session = "Session"},
}
local KINDS = {"luagent.sandbox.docker_engine", "luagent.sandbox.k8s_engine"}
-- optional methods: a backend has them where they apply
local OPTIONAL = {claim = true}
local SUPERVISORS = {
  {module = "luagent.sandbox.supervisor", class = "Supervisor"},
}

local function missing(class_table, names)
  local gaps = {}
  for _, name in ipairs(names) do
    if type(class_table[name]) ~= "function" and not OPTIONAL[name] then gaps[#gaps + 1] = name end
  end
  return gaps
end

-- The functions the annotation declares for a table (`function Table.name(`).
local function declared_functions(class)
  local names = {}
  for name in META:gmatch("\nfunction " .. class .. "%.([%w_]+)%(") do names[#names + 1] = name end
  return names
end

t.test("the contracts declare what a session and a supervisor do", function()
  t.ok(#declared("SandboxSession") >= 10, "SandboxSession's methods: " .. table.concat(declared("SandboxSession"), ", "))
  t.ok(#declared("SandboxSupervisor") >= 8, "SandboxSupervisor's methods")
  t.match(META, "\nfunction SandboxBackend%.create%(client, spec%)")
end)

t.test("every backend's session has every method of luagent.SandboxSession", function()
  for _, b in ipairs(BACKENDS) do
    local m = require(b.module)
    t.eq(type(m.create), "function", b.module .. ".create")
    local gaps = missing(m[b.session], declared("SandboxSession"))
    t.eq(#gaps, 0, b.module .. "'s session lacks: " .. table.concat(gaps, ", "))
  end
end)

t.test("every supervisor handle has every method of luagent.SandboxSupervisor", function()
  for _, s in ipairs(SUPERVISORS) do
    local gaps = missing(require(s.module)[s.class], declared("SandboxSupervisor"))
    t.eq(#gaps, 0, s.module .. "'s handle lacks: " .. table.concat(gaps, ", "))
  end
end)

t.test("every engine kind has every function of luagent.SandboxEngineKind, and its backend", function()
  t.ok(#declared_functions("SandboxEngineKind") >= 15, "SandboxEngineKind's functions")
  for _, name in ipairs(KINDS) do
    local kind = require(name)
    local gaps = missing(kind, declared_functions("SandboxEngineKind"))
    t.eq(#gaps, 0, name .. " lacks: " .. table.concat(gaps, ", "))
    t.eq(type(kind.backend.create), "function", name .. ".backend.create")
  end
end)

t.test("the check finds a method a backend lacks", function()
  t.same(missing({start = print}, {"start", "exec"}), {"exec"})
end)

return t.done()

-- Reading a list of Docker engines (luagent.sandbox.engine_config): the
-- `engines` option and LUAGENT_ENGINES. Addresses, capacities and Docker's
-- TLS conventions; every malformed entry is one error naming the option and
-- the entry. No engine is asked (luagent.sandbox.engine_set does that; its
-- tests run real engines: tests/e2e/engines_test.sh).
local t = require "helper"
local engine_config = require "luagent.sandbox.engine_config"
local sandbox, fs = luagent.sandbox, luagent.fs
local process = require "luagent.process"

local work = assert(fs.temp_dir("luagent-engine-list"))
luagent.at_exit(function() fs.remove(work) end)

local OPTION = "sandbox.open: engines"

local function parse(list)
  return engine_config.parse(list, OPTION)
end

local function refused(list, pattern)
  local entries, err = parse(list)
  t.eq(entries, nil, "refused: " .. tostring(list))
  t.eq(err.kind, "config")
  t.match(err.message, "^sandbox%.open: engines: ")
  t.match(err.message, pattern)
  return err
end

t.test("a comma-separated string: addresses, capacities, spaces and a trailing comma", function()
  local entries = assert(parse(" unix:///var/run/docker.sock#8 , tcp://build-2.example:2376, tcp://[::1]:2375#2,"))
  t.eq(#entries, 3)
  t.eq(entries[1].host, "unix:///var/run/docker.sock"); t.eq(entries[1].capacity, 8)
  t.eq(entries[2].host, "tcp://build-2.example:2376"); t.eq(entries[2].capacity, nil)
  t.eq(entries[3].host, "tcp://[::1]:2375"); t.eq(entries[3].capacity, 2)
  t.eq(engine_config.describe(entries[1]), "unix:///var/run/docker.sock (capacity 8)")
end)

t.test("a table of strings and tables", function()
  local entries = assert(parse({"unix:///a.sock#1", {host = "tcp://10.0.0.2:2376", capacity = 4, tls = "/etc/certs"}}))
  t.eq(entries[1].capacity, 1)
  t.eq(entries[2].capacity, 4)
  t.same(entries[2].tls, {ca_file = "/etc/certs/ca.pem", cert_file = "/etc/certs/cert.pem",
                          key_file = "/etc/certs/key.pem"})
  t.match(engine_config.describe(entries[2]), "TLS: tls = \"/etc/certs\"")
  entries = assert(parse({{host = "tcp://h:1", tls = {ca = "c.pem", cert = "x.pem", key = "k.pem"}}}))
  t.same(entries[1].tls, {ca_file = "c.pem", cert_file = "x.pem", key_file = "k.pem"})
  entries = assert(parse({{host = "tcp://h:1", tls = {ca = "c.pem"}}}))
  t.same(entries[1].tls, {ca_file = "c.pem"}, "a CA alone: the engine asks no client certificate")
  t.eq(assert(parse({{host = "tcp://h:1", tls = false}}))[1].tls, false)
end)

-- What a child luagent with this environment reads from the list.
local function parsed_in(env_over, list)
  local env = process.environ()
  for k, v in pairs(env_over) do env[k] = v end
  local path = work .. "/parse.lua"
  assert(fs.write(path, ([[
local json = require "luagent.json"
local entries = assert(require("luagent.sandbox.engine_config").parse(%q, "X"))
for i, e in ipairs(entries) do entries[i] = {tls = e.tls == nil and "env" or e.tls, from = e.tls_from or "none"} end
print(json.encode(entries))
]]):format(list)))
  local proc = assert(process.spawn{argv = {t.env("LUAGENT"), "run", "-q", path}, env = env, stdout = "pipe"})
  local out = {}
  repeat local chunk = proc:read("stdout"); out[#out + 1] = chunk until not chunk
  t.eq(proc:wait(30), 0, table.concat(out))
  proc:close()
  return require("luagent.json").decode(table.concat(out))
end

t.test("Docker's TLS conventions: DOCKER_TLS_VERIFY for tcp:// entries without their own tls", function()
  local got = parsed_in({DOCKER_TLS_VERIFY = "1", DOCKER_CERT_PATH = "/certs/here"}, "tcp://h:2376, unix:///s.sock")
  t.eq(got[1].tls, "env", "the client reads the environment's files")
  t.eq(got[1].from, "DOCKER_TLS_VERIFY with DOCKER_CERT_PATH")
  t.eq(got[2].from, "none", "a unix socket has no TLS")
  got = parsed_in({DOCKER_TLS_VERIFY = "0", DOCKER_CERT_PATH = "/certs/here"}, "tcp://h:2376")
  t.eq(got[1].from, "none", "DOCKER_TLS_VERIFY=0 is off")
  local entries = assert(parse({{host = "tcp://q:2376", tls = true}}))
  t.match(entries[1].tls.ca_file, "/ca%.pem$", "tls = true: DOCKER_CERT_PATH's (or ~/.docker's) files")
end)

t.test("malformed entries: one error naming the option and the entry", function()
  refused("ssh://me@build-2", 'entry 1 %("ssh://me@build%-2"%): ssh:// is not supported')
  refused("unix:///a.sock, tcp://build-2", 'entry 2 %("tcp://build%-2"%): a tcp:// address is tcp://HOST:PORT')
  refused("tcp://h:2376/v1.41", "tcp://HOST:PORT")
  refused("tcp://h:99999", "port 99999 is not a TCP port")
  refused("unix://var/run/docker.sock", "absolute path")
  refused("/var/run/docker.sock", "not an engine address")
  refused("unix:///a.sock#0", "capacity 0 is not a whole number")
  refused("unix:///a.sock#many", "capacity many")
  refused({{host = "unix:///a.sock", capacity = 1.5}}, "capacity 1.5")
  refused({{host = "unix:///a.sock", capcity = 2}}, "unknown field 'capcity'")
  refused({{capacity = 2}}, "host must be an engine address")
  refused({42}, "an engine is an address string")
  refused({{host = "unix:///a.sock", tls = "/certs"}}, "tls is for tcp:// engines")
  refused({{host = "tcp://h:1", tls = {ca = "c", cert = "x"}}}, "cert and key together")
  refused({{host = "tcp://h:1", tls = {ca = "c", pem = "x"}}}, "tls has no field 'pem'")
  refused({{host = "tcp://h:1", tls = 7}}, "tls = 7")
  refused("unix:///a.sock,unix:///a.sock#2", "listed twice")
  refused("", "names no engine")
  refused(" , ", "names no engine")
  refused(42, "a list of addresses")
end)

t.test("sandbox.open raises on a malformed engines option, naming it, before anything starts", function()
  t.raises(function() sandbox.open{engines = {"unix:///var/run/docker.sock", "tcp://build-2"}} end,
    'sandbox%.open: engines: entry 2 %("tcp://build%-2"%): a tcp:// address is tcp://HOST:PORT')
  t.raises(function() sandbox.pool{size = 1, engines = "ftp://x"} end, "sandbox%.pool: engines: entry 1")
  t.raises(function() sandbox.open{capacity_wait = -1} end, "capacity_wait must be seconds >= 0")
end)

t.test("a Kubernetes cluster: k8s://CONTEXT?namespace=NS#N, the current context when empty, beside Docker engines",
  function()
  local entries = assert(parse("k8s://prod?namespace=agents#20, unix:///var/run/docker.sock#4, k8s://"))
  t.eq(entries[1].kind, "k8s")
  t.eq(entries[1].context, "prod")
  t.eq(entries[1].namespace, "agents")
  t.eq(entries[1].capacity, 20)
  t.eq(entries[2].kind, nil, "a Docker engine")
  t.eq(entries[3].kind, "k8s")
  t.eq(entries[3].context, nil, "the kubeconfig's current context")
  t.eq(entries[3].namespace, nil, "the context's namespace")
  local eks = assert(parse({{host = "k8s://arn:aws:eks:eu-west-1:1:cluster/a%20b?namespace=x&ttl=3600&pull=Never",
                             runtime = "runsc"}}))[1]
  t.eq(eks.context, "arn:aws:eks:eu-west-1:1:cluster/a b", "%XX escapes")
  t.eq(eks.ttl, 3600)
  t.eq(eks.pull, "Never")
  t.eq(eks.runtime, "runsc")
end)

t.test("a malformed cluster address is refused naming what is wrong", function()
  refused("k8s://c?namespace=Agents", "namespace \"Agents\" is not a Kubernetes namespace name")
  refused("k8s://c?name=x", "\"name=x\" is not a setting of a cluster")
  refused("k8s://c?ttl=5", "ttl=5: say seconds, 60 or more")
  refused("k8s://c?pull=sometimes", "pull=sometimes: IfNotPresent, Always or Never")
  refused({{host = "k8s://c", tls = true}}, "a cluster's TLS is its kubeconfig's")
  refused("ssh://box", "or k8s://CONTEXT%?namespace=NS")
end)

return t.done()

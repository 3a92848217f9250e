-- luagent.sandbox.engine_kinds: which kind of engine an address or a client
-- is — a Docker engine (luagent.sandbox.docker_engine) or a Kubernetes
-- cluster (luagent.sandbox.k8s_engine, loaded only when one is named). Each
-- kind is a luagent.SandboxEngineKind (lua/meta/sandbox_backend.lua).
--
--   kinds.docker                      the Docker kind
--   kinds.of_entry(entry) -> kind     an engine_config entry's (entry.kind "k8s": a cluster)
--   kinds.of_client(client) -> kind   a connected client's (client.kind)
--   kinds.named(name) -> kind         "docker" | "k8s"
local kinds = {}

kinds.docker = require "luagent.sandbox.docker_engine"

function kinds.named(name)
  if name == "k8s" then return require "luagent.sandbox.k8s_engine" end
  return kinds.docker
end

function kinds.of_entry(entry)
  return kinds.named(entry.kind)
end

function kinds.of_client(client)
  return kinds.named(client.kind)
end

return kinds

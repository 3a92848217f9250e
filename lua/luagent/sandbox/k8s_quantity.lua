-- luagent.sandbox.k8s_quantity: Kubernetes resource quantities ("1536Mi",
-- "2G", "1500m", "2") as numbers.
--   quantity.bytes(text) -> bytes | nil       memory: binary (Ki, Mi, Gi, Ti, Pi, Ei) and decimal (k, M, G, T, P, E) suffixes
--   quantity.cpus(text) -> cpus | nil         CPU: "1500m" (millicores) or a number of cores
local quantity = {}

local SCALE = {[""] = 1, Ki = 2 ^ 10, Mi = 2 ^ 20, Gi = 2 ^ 30, Ti = 2 ^ 40, Pi = 2 ^ 50, Ei = 2 ^ 60,
               k = 1e3, M = 1e6, G = 1e9, T = 1e12, P = 1e15, E = 1e18, m = 1e-3}

local function parse(text)
  local number, unit = tostring(text or ""):match("^(%d+%.?%d*)(%a*)$")
  local scale = SCALE[unit or "?"]
  if not number or not scale then return nil end
  return tonumber(number) * scale
end

function quantity.bytes(text)
  return parse(text)
end

function quantity.cpus(text)
  return parse(text)
end

return quantity

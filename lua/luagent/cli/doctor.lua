-- luagent doctor: is everything a recipe needs in place, and if not, how to fix it.
local engine = require "luagent.engine"
local sandbox = require "luagent.sandbox"
local image = require "luagent.image"
local sys = require "luagent.sys"

local cli = {}

local function line(ok, what, detail)
  print(("%s %-8s %s"):format(ok and "ok  " or "FAIL", what, detail))
end

function cli.main()
  local healthy = true
  local client, err = engine.connect()
  if not client then
    line(false, "docker", err.message)
    healthy = false
  else
    local version = client:call("GET", "/version") or {}
    line(true, "docker", ("engine at %s, Docker %s, API %s (luagent uses %s)"):format(
      client.endpoint.description, version.Version or "?", client.server_version, client.version))
    local status, serr = image.status(client)
    if not status then
      line(false, "image", serr.message)
      healthy = false
    elseif not status.present then
      line(false, "image", image.REF .. " is missing: build it with 'luagent sandbox build' (--offline without a registry)")
      healthy = false
    elseif not status.up_to_date then
      line(true, "image", ("%s present but built from an older recipe (%s): 'luagent sandbox build' updates it")
        :format(image.REF, status.recipe or "unknown"))
    else
      line(true, "image", ("%s present, up to date (recipe %s)"):format(image.REF, status.recipe))
    end
    local list = sandbox.list(client) or {}
    local dead = 0
    for _, c in ipairs(list) do if not c.alive then dead = dead + 1 end end
    line(dead == 0, "sandbox", dead == 0 and ("%d running sandbox(es), none left over"):format(#list)
      or ("%d left over by runs that are gone: 'luagent sandbox prune' removes them"):format(dead))
  end
  local keys = {}
  for _, name in ipairs({"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"}) do
    keys[#keys + 1] = name .. (sys.getenv(name) and " set" or " not set")
  end
  line(true, "models", table.concat(keys, ", ") .. " (without any, recipes fall back to their scripted model)")
  return healthy and 0 or 1
end

return cli

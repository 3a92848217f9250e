-- luagent doctor: is everything a recipe needs in place, and if not, how to fix it.
-- Each check returns what it found (ok, detail), or nil and a luagent.errors
-- value saying what is wrong and how to fix it; every one is printed as one line.
local errors = require "luagent.errors"
local engine = require "luagent.engine"
local leftovers = require "luagent.sandbox.leftovers"
local image = require "luagent.image"
local sys = require "luagent.sys"

local cli = {}

local function line(ok, what, detail)
  print(("%s %-8s %s"):format(ok and "ok  " or "FAIL", what, detail))
end

local function docker(client)
  local version = client:call("GET", "/version") or {}
  return true, ("engine at %s, Docker %s, API %s (luagent uses %s)"):format(
    client.endpoint.description, version.Version or "?", client.server_version, client.version)
end

local function sandbox_image(client)
  local status, err = image.status(client)
  if not status then return nil, err end
  if not status.present then
    return errors.fail("not_found",
      image.REF .. " is missing: build it with 'luagent sandbox build' (--offline without a registry)")
  end
  if not status.up_to_date then
    return true, ("%s present but built from an older recipe (%s): 'luagent sandbox build' updates it")
      :format(image.REF, status.recipe or "unknown")
  end
  return true, ("%s present, up to date (recipe %s)"):format(image.REF, status.recipe)
end

local function sandboxes(client)
  local list, err = leftovers.list(client)
  if not list then return nil, err end
  local dead = 0
  for _, c in ipairs(list) do if not c.alive then dead = dead + 1 end end
  if dead > 0 then
    return errors.fail("exists", ("%d left over by runs that are gone: 'luagent sandbox prune' removes them"):format(dead))
  end
  return true, ("%d running sandbox(es), none left over"):format(#list)
end

local function models()
  local keys = {}
  for _, name in ipairs({"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"}) do
    keys[#keys + 1] = name .. (sys.getenv(name) and " set" or " not set")
  end
  return true, table.concat(keys, ", ") .. " (without any, recipes fall back to their scripted model)"
end

-- Prints one line for a check; returns whether it passed.
local function report(what, ok, detail)
  if ok then line(true, what, detail) else line(false, what, detail.message) end
  return ok ~= nil
end

function cli.main()
  local healthy = true
  local client, err = engine.connect()
  if not client then
    healthy = report("docker", nil, errors.from(err))
  else
    report("docker", docker(client))
    healthy = report("image", sandbox_image(client)) and healthy
    report("sandbox", sandboxes(client)) -- leftovers are worth a line, not a failure
  end
  report("models", models())
  return healthy and 0 or 1
end

return cli

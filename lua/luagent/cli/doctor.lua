-- luagent doctor: is everything a recipe needs in place, and if not, how to fix it.
-- Each check returns what it found (ok, detail), or nil and a luagent.errors
-- value saying what is wrong and how to fix it; every one is printed as one line.
--
-- The engines are those sessions are made on: LUAGENT_ENGINES, else the
-- default one (DOCKER_HOST, else /var/run/docker.sock). With one engine it
-- says docker, image and sandbox; with several, one "engine" line each —
-- address, whether it answers, its Docker version, whether the sandbox image
-- is there, the luagent sandboxes running on it, its capacity and its
-- runtimes (runc, runsc: gVisor; the default marked) — then the
-- image (on at least one: sessions copy it to the others) and the leftovers
-- of all. An engine that does not answer fails the doctor.
local errors = require "luagent.errors"
local engines = require "luagent.sandbox.engine_set"
local image = require "luagent.image"
local sys = require "luagent.sys"

local cli = {}

local function line(ok, what, detail)
  print(("%s %-8s %s"):format(ok and "ok  " or "FAIL", what, detail))
end

local function docker(row)
  return true, ("engine at %s, Docker %s, API %s (luagent uses %s); runtimes %s"):format(
    row.address, row.version or "?", row.api, row.client.version, engines.runtimes_text(row))
end

local function image_text(status)
  if not status.present then return image.REF .. " missing" end
  if not status.up_to_date then
    return ("%s present but built from an older recipe (%s)"):format(image.REF, status.recipe or "unknown")
  end
  return ("%s present, up to date (recipe %s)"):format(image.REF, status.recipe)
end

local function sandbox_image(row)
  local status = row.image
  if not status then return errors.fail("docker", "cannot ask the engine at " .. row.address .. " for its images") end
  if not status.present then
    return errors.fail("not_found",
      image.REF .. " is missing: build it with 'luagent sandbox build' (--offline without a registry)")
  end
  if not status.up_to_date then return true, image_text(status) .. ": 'luagent sandbox build' updates it" end
  return true, image_text(status)
end

local function sandboxes(rows)
  local running, dead = 0, 0
  for _, row in ipairs(rows) do
    for _, c in ipairs(row.sandboxes or {}) do
      running = running + 1
      if not c.alive then dead = dead + 1 end
    end
  end
  if dead > 0 then
    return errors.fail("exists", ("%d left over by runs that are gone: 'luagent sandbox prune' removes them"):format(dead))
  end
  return true, ("%d running sandbox(es), none left over"):format(running)
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

local function engine_line(row)
  if not row.ok then return nil, row.err end
  return true, ("%s: Docker %s, API %s; %s; %d sandbox%s running; capacity %s; runtimes %s"):format(row.address,
    row.version or "?", row.api, row.image and image_text(row.image) or "images unknown", row.sessions,
    row.sessions == 1 and "" or "es", row.capacity or "not set", engines.runtimes_text(row))
end

-- Several engines: the image is needed on one (sessions copy it to the others).
local function image_somewhere(rows)
  local best
  for _, row in ipairs(rows) do
    if row.image and row.image.present and (not best or row.image.up_to_date) then best = row end
  end
  if not best then return sandbox_image(rows[1]) end
  return true, ("%s on %s (sessions copy it to the engines that lack it)"):format(image_text(best.image), best.address)
end

function cli.main()
  local healthy = true
  local set, err = engines.configured()
  if not set then
    report("docker", nil, err)
    report("models", models())
    return 1
  end
  local rows = engines.status(set, image.REF)
  if #rows == 1 then
    local row = rows[1]
    if not row.ok then
      healthy = report("docker", nil, errors.from(row.err))
    else
      report("docker", docker(row))
      healthy = report("image", sandbox_image(row)) and healthy
      report("sandbox", sandboxes(rows)) -- leftovers are worth a line, not a failure
    end
  else
    local up = {}
    for _, row in ipairs(rows) do
      healthy = report("engine", engine_line(row)) and healthy
      if row.ok then up[#up + 1] = row end
    end
    if #up > 0 then
      healthy = report("image", image_somewhere(up)) and healthy
      report("sandbox", sandboxes(up))
    end
  end
  report("models", models())
  return healthy and 0 or 1
end

return cli

-- luagent.image: builds the sandbox image, online from sandbox/Dockerfile or
-- offline from Debian packages (sandbox/build-offline.sh + an import), and
-- labels it with a hash of its recipe so an up-to-date image is never rebuilt.
-- Failures are `nil, err` (a luagent.errors value: docker, build, permission, ...).
local http = require "luagent.http"
local json = require "luagent.json"
local sys = require "luagent.sys"
local fs = require "luagent.fs"
local tar = require "luagent.tar"
local engine = require "luagent.engine_client"
local engine_stream = require "luagent.engine_stream"
local errors = require "luagent.errors"

local image = {}

image.NAME, image.TAG = "luagent-sandbox", "latest"
image.REF = image.NAME .. ":" .. image.TAG
image.LABEL = "luagent.recipe"

-- The settings both builds give the image (the Dockerfile states the same).
image.CONFIG = {
  "ENV MPLBACKEND=Agg", "ENV PYTHONDONTWRITEBYTECODE=1", "ENV PYTHONUNBUFFERED=1",
  "ENV HOME=/tmp", "ENV MPLCONFIGDIR=/tmp/matplotlib",
  "USER 1000:1000", "WORKDIR /workspace", 'CMD ["sleep", "infinity"]',
}

function image.recipe_hash()
  local parts = {}
  for _, name in ipairs({"sandbox/Dockerfile", "sandbox/build-offline.sh"}) do
    parts[#parts + 1] = name .. "\0" .. assert(sys.asset(name), "missing embedded " .. name)
  end
  parts[#parts + 1] = table.concat(image.CONFIG, "\n")
  return sys.sha256(table.concat(parts, "\0")):sub(1, 16)
end

-- {present, up_to_date, id, recipe} for the image in the engine.
function image.status(client, ref)
  ref = ref or image.REF
  local info, err = client:call("GET", "/images/" .. ref .. "/json")
  if not info then
    if err.kind == "not_found" then return {present = false} end
    return nil, errors.from(err)
  end
  local labels = info.Config and info.Config.Labels
  local recipe = type(labels) == "table" and labels[image.LABEL] or nil
  return {present = true, id = info.Id, recipe = recipe, up_to_date = recipe == image.recipe_hash(),
          size = info.Size, created = info.Created}
end

-- Streams a build/import answer (JSON lines), printing progress; returns
-- true, or nil and the engine's error.
local function stream_progress(request, say)
  local split, failure = require("luagent.lines").splitter(), nil
  request.on_chunk = function(chunk)
    split:feed(chunk, function(line)
      local msg = json.decode(line)
      if type(msg) == "table" then
        if msg.error then failure = msg.error
        elseif type(msg.stream) == "string" and msg.stream:match("%S") then say(msg.stream:gsub("%s+$", ""))
        elseif type(msg.status) == "string" then say(msg.status) end
      end
    end)
  end
  local res, err = http.request(request)
  if not res then return nil, errors.from(err) end
  if res.status ~= 200 then return nil, engine.error_from_response(res, (request.method or "GET") .. " "
    .. request.url:gsub("^%a+://[^/]*", ""):gsub("%?.*", "")) end
  if failure then return errors.fail("docker", failure) end
  return true
end

local function build_online(client, hash, say)
  local dir, derr = fs.temp_dir("luagent-build")
  if not dir then return nil, errors.from(derr) end
  local context = dir .. "/context.tar"
  local ok, err = tar.write(context, {{name = "Dockerfile", data = sys.asset("sandbox/Dockerfile")}})
  if ok then
    local query = engine.query_string({t = image.REF, labels = {[image.LABEL] = hash}, rm = 1, forcerm = 1})
    ok, err = stream_progress(client:options("/build" .. query, {
      method = "POST", body_file = context, timeout = 3600,
      headers = {["content-type"] = "application/x-tar"},
    }), say)
  end
  fs.remove(dir)
  if not ok then return nil, errors.from(err) end
  return true
end

local urlencode = engine.urlencode

local function build_offline(client, hash, say)
  local _, uid = sys.execute({"id", "-u"})
  if uid:match("%d+") ~= "0" then
    return errors.fail("permission",
      "the offline build runs debootstrap, which needs root (sudo luagent sandbox build --offline)")
  end
  local dir, derr = fs.temp_dir("luagent-build")
  if not dir then return nil, errors.from(derr) end
  local script = dir .. "/build-offline.sh"
  local written, werr = fs.write(script, sys.asset("sandbox/build-offline.sh"), 493)
  if not written then
    fs.remove(dir)
    return nil, errors.from(werr)
  end
  local rootfs = "/var/tmp/luagent-rootfs-" .. sys.pid() .. ".tar"
  local code = sys.execute({"sh", script, rootfs}, {inherit = true})
  local ok, err = code == 0, nil
  if not ok then
    err = errors.new("build", "sandbox/build-offline.sh failed (exit " .. code .. "); see its output above")
  end
  if ok then
    say("importing the root filesystem into the engine")
    local changes = {}
    for _, c in ipairs(image.CONFIG) do changes[#changes + 1] = "changes=" .. urlencode(c) end
    changes[#changes + 1] = "changes=" .. urlencode("LABEL " .. image.LABEL .. "=" .. hash)
    local query = ("?fromSrc=-&repo=%s&tag=%s&%s"):format(image.NAME, image.TAG, table.concat(changes, "&"))
    ok, err = stream_progress(client:options("/images/create" .. query, {
      method = "POST", body_file = rootfs, timeout = 3600,
      headers = {["content-type"] = "application/x-tar"},
    }), say)
  end
  os.remove(rootfs)
  fs.remove(dir)
  if not ok then return nil, errors.from(err) end
  return true
end

-- image.copy(from, to, ref) -> bytes | nil, err
-- Copies the image `ref` from the engine of client `from` to that of `to`
-- through the engine API: GET /images/REF/get streamed into a temporary
-- file (in TMPDIR, else /tmp: it needs the image's size on disk), then POST
-- /images/load streamed from it; never whole in memory. No registry is
-- needed, and the image keeps its id and labels (an up-to-date sandbox
-- image stays up to date). bytes: the size of the image's tar.
function image.copy(from, to, ref)
  local dir, err = fs.temp_dir("luagent-image")
  if not dir then return nil, errors.from(err) end
  local file = dir .. "/image.tar"
  local bytes
  bytes, err = engine_stream.save_archive(from:options("/images/" .. ref .. "/get", {path = file, timeout = 3600}))
  local ok = bytes ~= nil
  if ok then
    ok, err = stream_progress(to:options("/images/load?quiet=1", {method = "POST", body_file = file, timeout = 3600,
      headers = {["content-type"] = "application/x-tar"}}), function() end)
  end
  fs.remove(dir)
  if not ok then
    return nil, errors.wrap(err, ("copying the image %s from the Docker engine at %s to the one at %s failed")
      :format(ref, from.endpoint.description, to.endpoint.description))
  end
  return bytes
end

-- image.build(client, {offline, online, force, say}) -> "built" | "up to date" | nil, err
-- Without offline/online it tries the Dockerfile first and falls back to the
-- offline build when no registry answers.
function image.build(client, opts)
  opts = opts or {}
  local say = opts.say or print
  local hash = image.recipe_hash()
  local status, err = image.status(client)
  if not status then return nil, err end
  if status.up_to_date and not opts.force then return "up to date" end
  local ok
  if not opts.offline then
    say("building " .. image.REF .. " from sandbox/Dockerfile")
    ok, err = build_online(client, hash, say)
    if ok or opts.online then return ok and "built" or nil, err end
    say("the online build failed (" .. err.message .. "); building offline from Debian packages instead")
  end
  ok, err = build_offline(client, hash, say)
  if not ok then return nil, err end
  status = image.status(client)
  if not (status and status.up_to_date) then
    return errors.fail("build", "the image was imported but does not carry the recipe label")
  end
  return "built"
end

return image

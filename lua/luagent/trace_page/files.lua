-- luagent.trace_page.files (internal): the run folder's files on the trace
-- page: the outputs (manifest.json, else what is under output/), links to
-- them from where the page is written, and PNG/JPEG images inline as
-- data: URIs within a size budget (an image over it is named and linked,
-- never silently left out).
--
--   files.new{dir = run folder, out = page path, max_image = bytes, max_images = bytes} -> state
--   files.outputs(state) -> {{path, size, sha256, file (on disk or nil), href}}, from ("manifest.json", else
--       "output/" and why not the manifest), why (none: what the folder has instead, e.g. "manifest.json lists
--       no files and output/ is empty")
--   files.image(state, path) -> html   <img> of a workspace or run-folder path (output/x.png), or a note why not
--   files.href(state, rel) -> the href of a file in the run folder, from the page
--   files.is_image(entry) -> whether an output (of files.outputs) is a PNG or JPEG, by its first bytes
local fs = require "luagent.fs"
local sys = require "luagent.sys"
local f = require "luagent.trace_page.format"

local files = {}

files.MAX_IMAGE = 2 * 1024 * 1024       -- bytes of one image shown inline
files.MAX_IMAGES = 16 * 1024 * 1024     -- bytes of all images on one page

local encode_path = f.encode_path

local function parent(path)
  return path:match("^(.*)/[^/]*$") or "."
end

-- Where links to the run folder start, seen from the page: "" beside it, "sub/" above it, else file://.
local function link_base(dir, out)
  local real_dir = fs.realpath(dir)
  local real_out = out and fs.realpath(parent(out))
  if not real_dir then return encode_path(dir) .. "/" end
  if real_out == real_dir then return "" end
  if real_out and real_dir:sub(1, #real_out + 1) == real_out .. "/" then
    return encode_path(real_dir:sub(#real_out + 2)) .. "/"
  end
  return "file://" .. encode_path(real_dir) .. "/"
end

function files.new(opts)
  local dir = opts.dir or "."
  return {dir = dir, base = link_base(dir, opts.out), max_image = opts.max_image or files.MAX_IMAGE,
          max_images = opts.max_images or files.MAX_IMAGES, used = 0, encoded = {}}
end

function files.href(state, rel)
  return f.escape(state.base .. encode_path(rel))
end

-- A path in the workspace or the run folder, as a file in the run folder (nil: none, or it leaves the folder).
local function local_file(state, path)
  if type(path) ~= "string" or path == "" then return nil end
  local rel = path:gsub("^/workspace/", ""):gsub("^%./", "")
  if rel:sub(1, 1) == "/" or ("/" .. rel .. "/"):find("/../", 1, true) then return nil end
  for _, candidate in ipairs({rel, "output/" .. rel:gsub("^output/", "")}) do
    local st = fs.stat(state.dir .. "/" .. candidate)
    if st and st.type == "file" then return state.dir .. "/" .. candidate, candidate, st.size end
  end
  return nil
end

function files.image(state, path)
  local file, rel, size = local_file(state, path)
  if not file then
    return ('<p class="note">%s is not in the run folder: the page cannot show it</p>'):format(f.escape(path or "?"))
  end
  local link = ('<a href="%s">%s</a>'):format(files.href(state, rel), f.escape(rel))
  if size > state.max_image then
    return ('<p class="note">%s: %s, more than the %s the page shows inline</p>'):format(link, f.bytes(size),
      f.bytes(state.max_image))
  end
  local cached = state.encoded[file]
  if not cached then
    local data = fs.read(file) or ""
    local kind = f.image_type(data)
    if not kind then return ('<p class="note">%s is not a PNG or JPEG image</p>'):format(link) end
    if state.used + #data > state.max_images then
      return ('<p class="note">%s: not shown, the page already holds %s of images</p>'):format(link, f.bytes(state.used))
    end
    state.used = state.used + #data
    cached = ("data:%s;base64,%s"):format(kind, sys.base64(data))
    state.encoded[file] = cached
  end
  return ('<figure><img src="%s" alt="%s" loading="lazy"><figcaption>%s · %s</figcaption></figure>'):format(
    cached, f.escape(rel), link, f.bytes(size))
end

-- What output/ holds, as outputs (each file's sha256 computed); nil: no output/ folder.
local function output_folder(state)
  local st = fs.stat(state.dir .. "/output")
  if not st or st.type ~= "directory" then return nil end
  local list = {}
  for _, e in ipairs(fs.walk(state.dir .. "/output") or {}) do
    if e.type == "file" then
      local rel = "output/" .. e.path
      list[#list + 1] = {path = rel, size = e.size, sha256 = sys.sha256_file(state.dir .. "/" .. rel),
                         file = state.dir .. "/" .. rel, href = files.href(state, rel)}
    end
  end
  return list
end

function files.outputs(state)
  local list, from = {}, nil
  local text = fs.read(state.dir .. "/manifest.json")
  local manifest = text and f.read_json(state.dir .. "/manifest.json")
  local listed = type(manifest) == "table" and type(manifest.files) == "table"
  for _, e in ipairs(listed and manifest.files or {}) do
    if type(e) == "table" and type(e.path) == "string" then
      local file, rel = local_file(state, e.path)
      list[#list + 1] = {path = e.path, size = f.num(e.size), sha256 = f.str(e.sha256), file = file,
                         href = rel and files.href(state, rel)}
    end
  end
  local why
  if #list > 0 then
    from = "manifest.json"
  else
    -- the manifest lists nothing (or there is none): what output/ holds, said as it is
    local manifest_says = not text and "the run folder has no manifest.json"
      or listed and "manifest.json lists no files" or "manifest.json is not a manifest (no list of files)"
    local held = output_folder(state)
    if held and #held > 0 then
      list, from = held, text and ("output/ (%s)"):format(manifest_says) or "output/"
    else
      why = manifest_says .. (held and " and output/ is empty" or
        (text and " and there is no output/ folder" or " and no output/ folder"))
    end
  end
  table.sort(list, function(a, b) return a.path < b.path end)
  return list, from, why
end

-- Is this output a PNG or JPEG (by its first bytes)?
function files.is_image(entry)
  return f.file_image_type(entry.file) ~= nil
end

return files

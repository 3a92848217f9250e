-- luagent.outputs.collect when the extraction fails half-way (a full disk,
-- the engine gone), through a stand-in box whose extract writes part of the
-- files and fails as the real one does (the real one: tests/e2e/outputs_full_test.sh).
-- Nothing partly written is left looking whole; the manifest says what failed.
local t = require "helper"
local fs, json = luagent.fs, luagent.json
local outputs = luagent.outputs

local work = assert(fs.temp_dir("luagent-outputs-spec"))
luagent.at_exit(function() fs.remove(work) end)

local SANDBOX = {["a.csv"] = ("1,2\n"):rep(25), ["chart.png"] = ("\137PNG"):rep(75), ["report.md"] = "# Report\n"}
local ORDER = {"a.csv", "chart.png", "report.md"}

-- A box whose workspace "output" holds SANDBOX; extract writes a.csv whole and
-- chart.png cut at 50 bytes, then fails as a full disk does. `listing`: can it list the workspace?
local function failing_box(listing)
  local box = {}
  function box.extract(_, _, host_dir)
    assert(fs.mkdir(host_dir))
    assert(fs.write(host_dir .. "/a.csv", SANDBOX["a.csv"]))
    os.execute(("touch -d @1000000000 %q"):format(host_dir .. "/a.csv")) -- the extractor stamps a finished file
    assert(fs.write(host_dir .. "/chart.png", SANDBOX["chart.png"]:sub(1, 50)))
    return nil, luagent.errors.new("io", "cannot write 'chart.png': No space left on device")
  end
  function box.exec(_, argv)
    if not listing then return nil, luagent.errors.new("docker_unreachable", "the engine does not answer") end
    t.eq(argv[1], "find"); t.eq(argv[2], "output")
    local lines = {}
    for _, name in ipairs(ORDER) do lines[#lines + 1] = ("%d\t%s\n"):format(#SANDBOX[name], name) end
    return {exit_code = 0, stdout = table.concat(lines), stderr = ""}
  end
  return box
end

local function by_path(list)
  local out = {}
  for _, f in ipairs(list) do out[f.path] = f end
  return out
end

t.test("a full disk mid-extraction: the partly written file is removed, the manifest says what failed and why", function()
  local dir = work .. "/one/output"
  local report = assert(outputs.collect(failing_box(true), "output", dir,
                                        {required = {"output/a.csv", "output/*.png", "output/report.md"}}))
  t.eq(#report.files, 1)
  t.eq(report.files[1].path, "output/a.csv"); t.eq(report.files[1].size, 100)
  t.eq(fs.exists(dir .. "/chart.png"), false, "the cut chart.png is not left behind")
  local failed = by_path(report.failed)
  t.eq(failed["output/chart.png"].written, 50); t.eq(failed["output/chart.png"].size, 300)
  t.eq(failed["output/chart.png"].removed, true)
  t.match(failed["output/chart.png"].error, "^partly written: cannot write 'chart.png': No space left on device")
  t.match(failed["output/report.md"].error, "^not extracted: ")
  t.match(report.error, "No space left on device")
  t.same(report.missing, {"output/*.png", "output/report.md"})
  local manifest = json.decode(assert(fs.read(work .. "/one/manifest.json")))
  t.eq(#manifest.files, 1); t.eq(manifest.files[1].path, "output/a.csv")
  t.eq(#manifest.failed, 2); t.eq(manifest.failed[1].path, "output/chart.png")
  t.match(manifest.error, "No space left on device")
end)

t.test("when the sandbox cannot list its workspace, a file the extractor had not finished is removed as unchecked", function()
  local dir = work .. "/two/output"
  local report = assert(outputs.collect(failing_box(false), "output", dir))
  t.eq(#report.files, 1); t.eq(report.files[1].path, "output/a.csv")
  t.eq(fs.exists(dir .. "/chart.png"), false)
  t.eq(#report.failed, 1)
  t.match(report.failed[1].error, "^not checked %(the sandbox could not list the workspace%)")
end)

t.test("a manifest that cannot be written: nil, err naming it and the extraction's error", function()
  local dir = work .. "/three/output"
  assert(fs.mkdir(work .. "/three/manifest.json/taken")) -- a folder where the manifest goes
  local report, err = outputs.collect(failing_box(true), "output", dir)
  t.eq(report, nil)
  t.match(err.message, "^cannot write " .. work:gsub("%p", "%%%0") .. "/three/manifest.json: ")
  t.match(err.message, "and the outputs were not all saved: cannot write 'chart.png': No space left on device")
  t.eq(#err.report.failed, 2)
end)

-- The engine went away (after the box's engine_grace): the required outputs
-- could not be read, which is not "the agent did not save them".
t.test("an engine that does not answer: nil, err (docker_unreachable) naming what was not read, and its rescue", function()
  local dir = work .. "/four/output"
  assert(fs.mkdir(dir)) -- a run's folder (run_dir makes it)
  local box = {session = "abc123", save = {from = "output", to = dir}}
  function box.extract() return nil, luagent.errors.new("docker_unreachable", "the Docker engine at unix:///x is gone") end
  function box.exec() return nil, luagent.errors.new("docker_unreachable", "the Docker engine at unix:///x is gone") end
  local report, err = outputs.collect(box, "output", dir, {required = {"output/a.csv", "output/*.png"}})
  t.eq(report, nil)
  t.eq(err.kind, "docker_unreachable")
  t.match(err.message, "^could not read the outputs in output %(output/a.csv, output/%*.png%): the Docker engine at")
  t.match(err.message, "They stay in sandbox abc123: the next luagent run on this engine, or 'luagent sandbox prune', "
    .. "rescues them into " .. dir:gsub("%p", "%%%0"))
  t.same(err.report.missing, {}, "nothing is called missing")
  t.same(err.report.unreadable, {"output/a.csv", "output/*.png"})
  local manifest = json.decode(assert(fs.read(work .. "/four/manifest.json")))
  t.same(manifest.unreadable, {"output/a.csv", "output/*.png"}); t.same(manifest.missing, {})
  t.match(manifest.error, "is gone")
end)

t.test("a workspace emptied under the run (its container stopped): nil, err (sandbox_restarted) saying they were lost", function()
  local dir = work .. "/five/output"
  assert(fs.mkdir(dir)); assert(fs.mkdir(work .. "/six/output"))
  local reset = "sandbox session abc123's container stopped and its workspace, kept in memory, was emptied with it"
  local box = {session = "abc123"}
  function box.extract()
    return nil, luagent.errors.new("not_found", "no such path in the workspace: output",
      {cause = luagent.errors.new("not_found", "no such path", {workspace_reset = reset})})
  end
  function box.exec() return {exit_code = 1, stdout = "", stderr = "find: output: No such file"} end
  local report, err = outputs.collect(box, "output", dir, {required = {"output/a.csv"}})
  t.eq(report, nil)
  t.eq(err.kind, "sandbox_restarted")
  t.match(err.message, "^the outputs in output were lost %(output/a.csv%): sandbox session abc123's container stopped")
  t.same(err.report.lost, {"output/a.csv"}); t.same(err.report.missing, {})
  -- without a reset, what is not there is missing, as before
  local plain = {}
  function plain.extract() return nil, luagent.errors.new("not_found", "no such path in the workspace: output") end
  plain.exec = box.exec
  local r = assert(outputs.collect(plain, "output", work .. "/six/output", {required = {"output/a.csv"}, quiet = true}))
  t.same(r.missing, {"output/a.csv"}); t.eq(r.lost, nil)
end)

return t.done()

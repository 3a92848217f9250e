-- luagent.tools.editing: the editing and shell tools each model family was
-- trained on, answered from the sandbox:
--
--   apply_patch(box)   V4A patches (luagent.tools.patch): OpenAI Responses'
--                      own `apply_patch` tool type; a function tool with a
--                      `patch` argument on Chat Completions
--   edit_file(box)     str_replace editing: Anthropic's own
--                      text_editor_20250728 (str_replace_based_edit_tool:
--                      view, create, str_replace, insert); a function tool
--                      of the same arguments on Chat Completions
--   shell(box)         OpenAI Responses' own `shell` tool type: its commands
--                      run one by one through box:exec
--   bash(box)          Anthropic's own bash_20250124: one bash that keeps its
--                      state between calls (restart = true starts it again)
--
-- A tool here says where it is offered (tool.only: the wires, by the model
-- adapters' names) and in which wire's own form (tool.native[wire]: the tool
-- object that wire's API takes); the adapters render it so and read its
-- calls back (luagent.model.responses, luagent.model.anthropic). Files are
-- read and written through box:get and box:put: as the command user, with
-- their path refusals; a patch is checked whole before any file changes.
local errors = require "luagent.errors"
local manifest = require "luagent.manifest"
local patch = require "luagent.tools.patch"
local common = require "luagent.tools.common"

local editing = {}

local WORKSPACE = "/workspace"
local VIEW_LIMIT = 16000 -- characters of a view, unless the tool says max_characters

local fail, checked, schema = common.fail, common.checked, common.schema

local function path_of(path)
  if type(path) ~= "string" or path == "" then fail("path must be a file's path in the workspace") end
  local name, why = manifest.workspace_path(path, WORKSPACE)
  if not name or name == "" then fail(("%s: %s"):format(path, why or "the workspace itself is not a file")) end
  return name
end

local function exists(box, name)
  local r = checked(box:exec({"test", "-e", name}))
  return r.exit_code == 0
end

-- ---- apply_patch ----

-- What an op does to the workspace, computed before anything is written.
local function plan_op(box, op)
  local name = path_of(op.path)
  if op.kind == "add" then return {write = {name, op.text}, line = "A " .. name} end
  if op.kind == "delete" then
    if not exists(box, name) then fail(op.path .. ": no such file to delete") end
    return {remove = name, line = "D " .. name}
  end
  local text, err = box:get(name)
  if not text then
    if err.kind == "not_found" then fail(op.path .. ": no such file to update (*** Add File: makes one)") end
    error(errors.from(err), 0)
  end
  local new = text
  if #op.hunks > 0 then new, err = patch.apply(text, op.hunks, op.path) end
  if not new then fail(err) end
  if op.move_to then
    local to = path_of(op.move_to)
    return {write = {to, new}, remove = to ~= name and name or nil, line = ("M %s -> %s"):format(name, to)}
  end
  return {write = {name, new}, line = "M " .. name}
end

function editing.apply_patch(box)
  return {
    name = "apply_patch",
    description = "Edit files in the workspace with a patch: *** Begin Patch, then for each file *** Add File: PATH "
      .. "(its lines after +), *** Delete File: PATH, or *** Update File: PATH with hunks (@@, then lines after a "
      .. "space for context, - removed, + added), then *** End Patch.",
    parameters = schema({patch = {type = "string", description = "The whole patch, *** Begin Patch to *** End Patch."}},
                        {"patch"}),
    native = {openai_responses = {type = "apply_patch"}},
    only = {openai_responses = true, openai = true},
    box = box,
    handler = function(args)
      local ops, why = patch.parse(args.patch)
      if not ops then fail("the patch cannot be read: " .. why) end
      local plans = {}
      for i, op in ipairs(ops) do plans[i] = plan_op(box, op) end
      local done = {}
      for _, p in ipairs(plans) do
        if p.write then checked(box:put(p.write[1], p.write[2])) end
        if p.remove then
          local r = checked(box:exec({"rm", "-f", "--", p.remove}))
          if r.exit_code ~= 0 then fail(("cannot delete %s: %s"):format(p.remove, r.stderr)) end
        end
        done[#done + 1] = p.line
      end
      return "Done. The files changed:\n" .. table.concat(done, "\n")
    end,
  }
end

-- ---- edit_file (Anthropic's text editor) ----

local function numbered(text, first)
  local out, n = {}, first - 1
  for line in (text .. "\n"):gmatch("(.-)\n") do
    n = n + 1
    out[#out + 1] = ("%6d\t%s"):format(n, line)
  end
  if text:sub(-1) == "\n" then out[#out] = nil end
  return table.concat(out, "\n")
end

local function view(box, args, limit)
  local name = path_of(args.path)
  local r = checked(box:exec({"test", "-d", name}))
  if r.exit_code == 0 then
    local list = checked(box:exec({"find", name, "-maxdepth", "2", "-not", "-path", "*/.*"}))
    return ("The files and folders up to 2 levels deep in %s:\n%s"):format(args.path, list.stdout)
  end
  local text, err = box:get(name)
  if not text then
    if err.kind == "not_found" then fail(("The path %s does not exist."):format(args.path)) end
    error(errors.from(err), 0)
  end
  local first, last = 1, nil
  if type(args.view_range) == "table" then
    first, last = math.tointeger(args.view_range[1]) or 1, math.tointeger(args.view_range[2])
    if last == -1 then last = nil end
  end
  local lines = {}
  for line in (text .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
  if text:sub(-1) == "\n" then lines[#lines] = nil end
  if first < 1 or first > math.max(#lines, 1) or (last and last < first) then
    fail(("Invalid view_range: the file has %d lines"):format(#lines))
  end
  local shown = numbered(table.concat(lines, "\n", first, math.min(last or #lines, #lines)), first)
  if #shown > limit then shown = shown:sub(1, limit) .. "\n<response clipped: view a smaller view_range>" end
  return shown
end

local function str_replace(box, args)
  local name = path_of(args.path)
  if type(args.old_str) ~= "string" or args.old_str == "" then fail("str_replace needs old_str, the text to replace") end
  local text = checked(box:get(name))
  local count, at = 0, nil
  local from = 1
  while true do
    local s = text:find(args.old_str, from, true)
    if not s then break end
    count, at, from = count + 1, at or s, s + 1
  end
  if count == 0 then fail("No match found for replacement. Please check your text and try again.") end
  if count > 1 then
    fail(("Found %d matches for replacement text. Please provide more context to make a unique match."):format(count))
  end
  local new = text:sub(1, at - 1) .. (args.new_str or "") .. text:sub(at + #args.old_str)
  checked(box:put(name, new))
  return "Successfully replaced text at exactly one location."
end

local function insert(box, args)
  local name = path_of(args.path)
  local text = checked(box:get(name))
  local line = math.tointeger(args.insert_line)
  local add = args.insert_text or args.new_str
  if type(add) ~= "string" then fail("insert needs insert_text, the text to insert") end
  local lines = {}
  for l in (text .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = l end
  if text:sub(-1) == "\n" or text == "" then lines[#lines] = nil end
  if not line or line < 0 or line > #lines then
    fail(("Invalid insert_line %s: it must be 0..%d (the line after which to insert)"):format(tostring(args.insert_line),
      #lines))
  end
  local added = {}
  for l in (add:gsub("\n$", "") .. "\n"):gmatch("(.-)\n") do added[#added + 1] = l end
  for i = #added, 1, -1 do table.insert(lines, line + 1, added[i]) end
  checked(box:put(name, table.concat(lines, "\n") .. "\n"))
  return ("The text was inserted after line %d."):format(line)
end

local EDITOR = {type = "text_editor_20250728", name = "str_replace_based_edit_tool"}

function editing.edit_file(box, opts)
  opts = opts or {}
  local limit = opts.max_characters or VIEW_LIMIT
  local native = {type = EDITOR.type, name = EDITOR.name, max_characters = opts.max_characters}
  return {
    name = "edit_file",
    description = "View, create and edit text files in the workspace. command: view (a file with line numbers, "
      .. "view_range [first, last] or -1 for the end; a folder's files), create (file_text), str_replace (old_str "
      .. "must be in the file exactly once; new_str replaces it), insert (insert_text after line insert_line, 0 for "
      .. "the start).",
    parameters = schema({
      command = {type = "string", enum = {"view", "create", "str_replace", "insert"}},
      path = {type = "string", description = "The file's path in the workspace."},
      file_text = {type = "string", description = "create: the whole file."},
      old_str = {type = "string"}, new_str = {type = "string"},
      insert_line = {type = "integer"}, insert_text = {type = "string"},
      view_range = {type = "array", items = {type = "integer"}},
    }, {"command", "path"}),
    native = {anthropic = native},
    native_names = {EDITOR.name},
    only = {anthropic = true, openai = true},
    box = box,
    handler = function(args)
      if args.command == "view" then return view(box, args, limit) end
      if args.command == "create" then
        if type(args.file_text) ~= "string" then fail("create needs file_text, the whole file") end
        checked(box:put(path_of(args.path), args.file_text))
        return "File created successfully at: " .. args.path
      end
      if args.command == "str_replace" then return str_replace(box, args) end
      if args.command == "insert" then return insert(box, args) end
      fail(("Unknown command %s: it is view, create, str_replace or insert"):format(tostring(args.command)))
    end,
  }
end

return editing

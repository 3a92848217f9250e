-- A recipe whose agent defers its approvals (tests/e2e/approval_defer_test.sh):
-- the scripted model (not a model) calls write_note, which needs approval and
-- appends to the file given as the first argument (or, under luagent eval, the
-- setting note: tests/e2e/eval_defer_test.sh); it then answers with the tool's
-- result.
local agent, model = luagent.agent, luagent.model
local note = assert(... or luagent.settings.note, "the note file (an argument, or the setting note)")
local m = model.scripted(function(request)
  for _, msg in ipairs(request.messages) do
    if msg.role == "tool" then return {text = "Done: " .. model.text_of(msg.content)} end
  end
  return {text = "Writing.", tool_calls = {{name = "write_note", arguments = {text = "hello"}}}}
end)
local tool = {name = "write_note", description = "appends a note", needs_approval = true,
  parameters = {type = "object", properties = {text = {type = "string"}}, required = {"text"}},
  handler = function(args)
    local f = assert(io.open(note, "a"))
    f:write(args.text, "\n")
    f:close()
    return "written"
  end}
local r = agent.new{model = m, tools = {tool}, approve = "defer"}:run("Write a note.")
print(r.output)

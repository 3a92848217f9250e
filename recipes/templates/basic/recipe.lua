-- {{name}}: an agent with a Python sandbox and the standard tools, over a CSV
-- file (written by `luagent new {{name}}`; change anything). It profiles the
-- data column by column, saves output/columns.csv and output/summary.md, and
-- answers in two sentences; what it saved comes back to runs/<run-id>/output/.
--
--   luagent run {{name}}.lua                      the sample; a model from the environment, else scripted
--   luagent run {{name}}.lua --set input=my.csv   your own CSV
--   luagent run {{name}}.lua --set model.provider=anthropic --set model.model=claude-sonnet-4-5
--   luagent eval {{name}}.eval.yaml               variants x inputs, each run checked by {{name}}_check.lua
--
-- Every prompt, limit and setting is in {{name}}.yaml.
local agent, sandbox, model, tools = require "luagent.agent", require "luagent.sandbox",
                                     require "luagent.model", require "luagent.tools"
local outputs = require "luagent.outputs"
local json = require "luagent.json"
local cfg = luagent.config("{{name}}.yaml")

-- The scripted driver: NOT a model. With none configured it makes the tool
-- calls a model would make on this task (look at the file, then profile it
-- and save), and each of them really runs in the sandbox. Change its steps
-- along with the task, or delete it once you always run with a model.
local LOOK = "head -5 input/data.csv; wc -l input/data.csv"
local PROFILE = [=[
import collections, csv, json, os, statistics
with open("input/data.csv", newline="") as f:
    rows = list(csv.DictReader(f))
columns = list(rows[0].keys()) if rows else []
def number(text):
    try:
        return float(text)
    except ValueError:
        return None
profile, notes = [], []
for c in columns:
    present = [r[c].strip() for r in rows if (r[c] or "").strip() != ""]
    p = {"column": c, "missing": len(rows) - len(present), "min": "", "mean": "", "max": "", "top": ""}
    nums = [number(v) for v in present]
    if present and None not in nums:
        med = statistics.median(nums)
        p.update(type="number", min=min(nums), mean=round(statistics.mean(nums), 3), max=max(nums))
        odd = [v for v in nums if med and abs(v) > 5 * abs(med)]
        if odd:
            listed = ", ".join(f"{v:g}" for v in odd)
            notes.append(f"{c}: {len(odd)} value(s) over 5 times the median {med:g}: {listed}")
    else:
        p.update(type="text", top=collections.Counter(present).most_common(1)[0][0] if present else "")
    if p["missing"]:
        notes.append(f"{c}: {p['missing']} missing value(s)")
    profile.append(p)
os.makedirs("output", exist_ok=True)
keys = ["column", "type", "missing", "min", "mean", "max", "top"]
with open("output/columns.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(keys)
    w.writerows([p[k] for k in keys] for p in profile)
table = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
table += ["| " + " | ".join(str(p[k]) for k in keys) + " |" for p in profile]
with open("output/summary.md", "w") as f:
    f.write(f"# input/data.csv: {len(rows)} rows, {len(columns)} columns\n\n" + "\n".join(table) + "\n\n")
    f.write("## Worth a look\n\n" + ("\n".join("- " + n for n in notes) or "- nothing odd") + "\n")
print(open("output/summary.md").read())
print("SUMMARY " + json.dumps({"rows": len(rows), "columns": len(columns), "notes": notes}))
]=]
local PLAN = {
  {text = "First a look at the file: its header, a few rows, its length.", call = "run_shell", args = {command = LOOK}},
  {text = "Now each column's type, gaps and range, saved as a table and a summary.", call = "run_python",
   args = {code = PROFILE}},
}

local function scripted_driver()
  return model.scripted(function(request)
    local done = 0
    for _, m in ipairs(request.messages) do
      if m.role == "assistant" and m.tool_calls and #m.tool_calls > 0 then done = done + 1 end
    end
    local step = PLAN[done + 1]
    if step then return {text = step.text, tool_calls = {{name = step.call, arguments = step.args}}} end
    local s
    for i = #request.messages, 1, -1 do
      local found = model.text_of(request.messages[i].content):match("SUMMARY ([^\n]*)")
      s = s or (found and json.decode(found))
    end
    if type(s) ~= "table" then return {text = "The profile did not finish (see the transcript)."} end
    local odd = #s.notes > 0 and ("Worth a look: " .. table.concat(s.notes, "; ") .. ".") or "Nothing in it looks odd."
    return {text = ("The file has %d rows and %d columns; the profile is in output/columns.csv and "
      .. "output/summary.md. %s"):format(s.rows, s.columns, odd)}
  end, {name = "scripted-{{name}}"})
end

-- The model: whatever the settings and the environment point at; with none,
-- the scripted driver — said plainly.
local llm = model.from_or_scripted(cfg.model, scripted_driver)

-- The input: a path relative to this recipe's folder, or absolute.
local input = cfg.input:match("^/") and cfg.input or luagent.recipe_dir .. "/" .. cfg.input

local box <close> = assert(sandbox.open{
  image = cfg.sandbox.image, memory = cfg.sandbox.memory, cpus = cfg.sandbox.cpus,   -- no network unless asked
  manifest = {["input/data.csv"] = sandbox.file(input)},
  -- whatever happens (an error, Ctrl-C), what the agent saved comes home
  save = {from = "output", to = luagent.run_dir("output"), required = cfg.outputs},
})

local worker = agent.new{
  name = "{{name}}",
  instructions = cfg.instructions,
  model = llm,
  tools = tools.standard(box, {timeout = cfg.limits.tool_timeout}),
  max_turns = cfg.limits.max_turns,
  budget = cfg.limits.budget,
  outputs = cfg.outputs,
}

local result = worker:run(cfg.task)
local saved, not_saved = outputs.collect(box, "output", luagent.run_dir("output"), {required = cfg.outputs})

print()
print(("Answer (%s, %d turns):"):format(result.stopped_by, result.turns))
print(result.output or "(no final answer)")
if not saved then -- e.g. a full disk: say what could not be written, never crash on it
  print("The outputs could not be saved: " .. not_saved.message)
  return 1
end
for _, f in ipairs(saved.files) do
  print(("  %-22s %7d bytes  %s"):format(f.path, f.size, saved.dir .. "/" .. f.path:match("[^/]+$")))
end
if result.error then print("The run stopped on an error: " .. result.error.message) end
if #saved.missing > 0 then
  print("MISSING: the agent did not save " .. table.concat(saved.missing, ", "))
  return 1
end
return result.stopped_by == "answer" and 0 or 1

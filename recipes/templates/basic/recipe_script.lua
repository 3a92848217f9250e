-- {{name}}_script: the scripted driver of the {{name}} recipe, used when no
-- model is configured. It is NOT a model: it makes the tool calls a model
-- would make on this task (look at the file, then profile it and save), each
-- of which really runs in the sandbox, and writes its final answer from what
-- the profile printed. Change its steps along with the task; once you always
-- run with a model, delete this file and take the model in {{name}}.lua with
-- assert(model.from(cfg.model)).
local model = require "luagent.model"
local json = require "luagent.json"

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

-- How many tool calls were made so far: the step to take next.
local function steps_done(messages)
  local n = 0
  for _, m in ipairs(messages) do
    if m.role == "assistant" and m.tool_calls and #m.tool_calls > 0 then n = n + 1 end
  end
  return n
end

-- The last SUMMARY line the profile printed, decoded; nil when there is none.
local function summary_of(messages)
  for i = #messages, 1, -1 do
    local found = model.text_of(messages[i].content):match("SUMMARY ([^\n]*)")
    local s = found and json.decode(found)
    if type(s) == "table" then return s end
  end
end

-- The answer, from what the profile printed.
local function final_answer(messages)
  local s = summary_of(messages)
  if not s then return "The profile did not finish (see the transcript)." end
  local odd = #s.notes > 0 and ("Worth a look: " .. table.concat(s.notes, "; ") .. ".") or "Nothing in it looks odd."
  return ("The file has %d rows and %d columns; the profile is in output/columns.csv and "
    .. "output/summary.md. %s"):format(s.rows, s.columns, odd)
end

-- The scripted driver, with the model interface (complete{messages, tools}).
return function()
  return model.scripted(function(request)
    local step = PLAN[steps_done(request.messages) + 1]
    if not step then return {text = final_answer(request.messages)} end
    return {text = step.text, tool_calls = {{name = step.call, arguments = step.args}}}
  end, {name = "scripted-{{name}}"})
end

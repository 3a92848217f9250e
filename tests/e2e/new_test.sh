# needs: docker
# The recipes `luagent new` writes run as they are, in the real sandbox: with
# no model configured (the scripted driver, said plainly), over the OpenAI
# wire format (the fake provider, a test double, making a tool call), as an
# eval (`luagent eval NAME.eval.yaml`), and the energy recipe copied with
# --from energy_anomaly.
. tests/e2e/lib.sh
BIN=$(cd "$(dirname "$LUAGENT")" && pwd)/$(basename "$LUAGENT")
export LUAGENT_RUNS_DIR="$TMP/runs" LUAGENT_EVALS_DIR="$TMP/evals"

# in_dir DIR ARGS...: luagent in DIR with no model key in the environment
in_dir() {
  dir=$1; shift
  (cd "$dir" && env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u OPENAI_BASE_URL "$BIN" "$@") \
    > "$TMP/stdout" 2> "$TMP/stderr"
  echo $? > "$TMP/status"
}
latest_run() { ls -td "$LUAGENT_RUNS_DIR"/*"$1"* | head -1; }

mkdir -p "$TMP/p"
in_dir "$TMP/p" new demo
check "'luagent new demo' writes the recipe and, beside it, its scripted driver" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ -s $TMP/p/demo.lua ] && [ -s $TMP/p/demo.script.yaml ]"

# ---- no model configured: the scripted driver (demo.script.yaml) ----
in_dir "$TMP/p" run demo.lua -q
run=$(latest_run demo)
check "'luagent run demo.lua' with no model configured exits 0 and says plainly that it is scripted" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] || { cat $TMP/stderr; exit 1; }
  grep -q '^SCRIPTED RUN: no model is configured' $TMP/stdout && grep -q 'The input has 1 CSV file(s) with 10 rows and 5 columns' $TMP/stdout"
check "... its outputs are the sample's true profile (columns.csv) and a summary naming the odd value and the gap" \
  python3 - "$run" "$TMP/p/demo_sample.csv" <<'PY'
import csv, statistics, sys
run, sample = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(sample)))
got = {r["column"]: r for r in csv.DictReader(open(run + "/output/columns.csv"))}
assert list(got) == list(rows[0].keys()), list(got)
visitors = [float(r["visitors"]) for r in rows]
assert got["visitors"]["type"] == "number" and abs(float(got["visitors"]["mean"]) - statistics.mean(visitors)) < 0.01, got["visitors"]
assert got["sales_eur"]["missing"] == "1" and got["store"]["type"] == "text", got
summary = open(run + "/output/summary.md").read()
assert "1290" in summary and "sales_eur: 1 missing" in summary, summary
PY
check "... and its trace shows the two tool calls really ran in the sandbox" sh -c "
  [ \"\$(grep -c '\"type\":\"sandbox_exec\"' $run/trace.jsonl)\" -ge 2 ] &&
  grep -q '\"name\":\"run_shell\"' $run/trace.jsonl && grep -q '\"name\":\"run_python\"' $run/trace.jsonl"
check "... driven by demo.script.yaml, named in the trace as what it is: scripted-demo, never a model's name" sh -c "
  grep -q '\"model\":\"scripted-demo\"' $run/trace.jsonl &&
  [ -z \"\$(grep -o '\"model\":\"[^\"]*\"' $run/trace.jsonl | grep -v 'scripted')\" ]"

# ---- a model over the OpenAI wire format (the fake provider) ----
q=new-$$
base=$("$BIN" run -q /dev/stdin -- "$q" <<'LUA'
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local queue = ...
fake.script(queue, {
  {text = "I will profile it.", tool_calls = {{id = "call_1", name = "run_python", arguments = {code = [[
import os
os.makedirs("output", exist_ok=True)
n = sum(1 for _ in open("input/demo_sample.csv")) - 1
open("output/columns.csv", "w").write("column,type,missing,min,mean,max,top\n")
open("output/summary.md", "w").write(f"# {n} rows\n")
print("rows", n)
]]}}}},
  {text = "Profiled by the fake model: 10 rows."},
})
print(fake.base_url(queue, "openai"))
LUA
)
in_dir "$TMP/p" run demo.lua -q --set model.provider=openai --set "model.base_url=$base"
run=$(latest_run demo)
requests=$("$BIN" run -q /dev/stdin -- "$q" <<'LUA'
package.path = "tests/lua/?.lua;" .. package.path
local reqs = require("fake_provider_client").requests((...))
local first = reqs[1].body
local names = {}
for _, t in ipairs(first.tools or {}) do names[#names + 1] = t["function"].name end
table.sort(names)
print(#reqs, table.concat(names, ","), first.messages[#first.messages].content:match("The files in input/ are CSV files") ~= nil)
LUA
)
check "with a model (the fake provider) it runs: no scripted notice, the model's answer, its outputs" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] || { cat $TMP/stdout $TMP/stderr; exit 1; }
  ! grep -q SCRIPTED $TMP/stdout && grep -q 'Profiled by the fake model: 10 rows.' $TMP/stdout &&
  [ \"\$(cat $run/output/summary.md)\" = '# 10 rows' ] && grep -q '\"provider\":\"openai\"' $run/trace.jsonl"
check "... the model got the standard tools and the task, and was asked twice (a tool call, then the answer)" sh -c "
  [ \"$requests\" = \"\$(printf '2\tlist_files,read_file,read_output,run_python,run_shell,view_image,write_file\ttrue')\" ] ||
  { echo 'requests: $requests'; exit 1; }"

# ---- the eval ----
in_dir "$TMP/p" eval demo.eval.yaml -q
check "'luagent eval demo.eval.yaml' runs both variants on the sample, checks them and writes the results" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] || { cat $TMP/stderr; exit 1; }
  grep -q '^results: ' $TMP/stdout && grep -q '^as_is ' $TMP/stdout && grep -q '^brief ' $TMP/stdout"
check "... results.jsonl: two runs, each passed by demo_check.lua (luagent.checks) with score 1; summary.csv and the page" python3 - "$TMP/evals" <<'PY'
import glob, json, os, sys
dirs = glob.glob(os.path.join(sys.argv[1], "*"))
assert len(dirs) == 1, dirs
lines = [json.loads(l) for l in open(os.path.join(dirs[0], "results.jsonl"))]
assert sorted(l["variant"] for l in lines) == ["as_is", "brief"], lines
for l in lines:
    assert l["passed"] is True and l["score"] == 1 and "has the columns file, column, type" in l["note"], l
assert os.path.getsize(os.path.join(dirs[0], "summary.csv")) > 0
assert os.path.exists(os.path.join(dirs[0], "index.html"))
PY

# ---- --from energy_anomaly ----
in_dir "$TMP/p" new grid --from energy_anomaly
in_dir "$TMP/p" run grid.lua -q
run=$(latest_run grid)
check "--from energy_anomaly makes a recipe that runs (scripted) and saves the energy recipe's outputs" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] || { cat $TMP/stderr; exit 1; }
  grep -q '^SCRIPTED RUN' $TMP/stdout && grep -q 'The anomaly runs from' $TMP/stdout &&
  [ -s $run/output/anomalies.csv ] && [ -s $run/output/energy.png ] && [ -s $run/output/report.md ] &&
  [ -s $run/input/building_energy.truth.json ]"

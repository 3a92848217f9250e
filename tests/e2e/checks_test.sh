# needs: docker
# luagent.checks on real runs: `luagent eval` of tests/e2e/checks_recipe.lua,
# each run in its own sandbox, driven by the fake provider (a test double; one
# queue per variant): the "tidy" variant takes the path the checks ask for,
# the "messy" one does not, so each helper passes on one run and fails on the
# other (tests/e2e/checks_check.lua writes every verdict); bad input fails its
# check, never the eval; the model-graded check is asked only for the run the
# cheap checks pass, marked in the table and on the page; a rerun asks nothing.
. tests/e2e/lib.sh
export LUAGENT_EVALS_DIR="$TMP/evals"
export LUAGENT_CACHE="$TMP/cache"
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY

script_queue() { "$LUAGENT" run -q /dev/stdin -- "$@" <<'LUA'
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local queue, kind = ...
local small = {input_tokens = 100, output_tokens = 20}
local steps
if kind == "tidy" then
  steps = {
    {tool_calls = {{name = "write_file", arguments = {path = "output/report.md",
      content = "# Report\nThe total is 42 kWh.\n"}}}, usage = small},
    {tool_calls = {{name = "run_python", arguments = {code = "open('output/data.csv', 'w').write("
      .. "'timestamp,kwh\\n2024-01-01 00:00,1.5\\n')\nopen('output/result.json', 'w').write('{\"total\": 42}')"}}},
     usage = small},
    {text = '{"total": 42, "unit": "kWh"}', usage = small},
  }
elseif kind == "messy" then
  local big = {input_tokens = 2000000, output_tokens = 20}
  steps = {
    {tool_calls = {{name = "run_shell", arguments = {command = "echo trying; exit 3"}}}, usage = big},
    {tool_calls = {{name = "run_python", arguments = {code = "import os\nos.makedirs('output', exist_ok=True)\n"
      .. "open('output/data.csv', 'w').write('time,value\\n1,2\\n')\nopen('output/report.md', 'w').write('nothing')\n"
      .. "open('output/result.json', 'w').write('{\"total\": \"many\"}')"}}}, usage = small},
    {tool_calls = {{name = "run_shell", arguments = {command = "ls output"}}}, usage = small},
    {text = "no idea", usage = small},
  }
else
  steps = {{json = {passed = true, score = 0.8, note = "the report states the total"}, usage = small}}
end
fake.script(queue, steps)
print(fake.base_url(queue, "openai"))
LUA
}

mkdir -p "$TMP/proj"
cp tests/e2e/checks_recipe.lua tests/e2e/checks_recipe.yaml tests/e2e/checks_check.lua "$TMP/proj/"
qt=checks-tidy-$$; qm=checks-messy-$$; qg=checks-grader-$$
base_t=$(script_queue "$qt" tidy); base_m=$(script_queue "$qm" messy); base_g=$(script_queue "$qg" grader)
cat > "$TMP/proj/c.eval.yaml" <<YAML
name: paths
recipe: checks_recipe.lua
check: checks_check.lua
variants:
  tidy: {model.base_url: $base_t}
  messy: {model.base_url: $base_m}
grader:
  model: {base_url: $base_g}
  rubric: The report states the total energy in kWh.
concurrency: 2
YAML

run_luagent eval "$TMP/proj/c.eval.yaml" -q
first=$(ls -d "$TMP"/evals/*-paths-* | head -1)
cp "$TMP/stdout" "$TMP/first.out"
check "the eval of both variants exits 0; both runs ended ok" python3 - "$first" "$(cat "$TMP/status")" <<'PY'
import json, sys
assert sys.argv[2] == "0", sys.argv[2]
lines = {l["variant"]: l for l in map(json.loads, open(sys.argv[1] + "/results.jsonl"))}
assert set(lines) == {"tidy", "messy"}, lines
for l in lines.values():
    assert l["status"] == "ok" and l["error"] is None, l
assert lines["tidy"]["passed"] is True and lines["messy"]["passed"] is False, lines
PY
check "each trajectory and output helper passes on the tidy run and fails on the messy one, saying why" \
  python3 - "$first" <<'PY'
import json, sys
d = sys.argv[1]
tidy = json.load(open(d + "/runs/tidy/default/1/verdicts.json"))
messy = json.load(open(d + "/runs/messy/default/1/verdicts.json"))
helpers = ["used_tool", "not_used_tool", "tool_order", "max_turns", "max_commands", "no_failed_command",
           "no_failed_exit", "output_text", "output_matches", "csv_columns", "output_json", "answer_schema", "max_cost"]
for h in helpers:
    assert tidy[h]["passed"] is True, (h, tidy[h])
    assert messy[h]["passed"] is False, (h, messy[h])
    assert messy[h]["note"], (h, messy[h])
assert tidy["no_timed_out"]["passed"] and messy["no_timed_out"]["passed"], "no command timed out in either"
assert messy["used_tool"]["note"] == "never used write_file (tools used: run_shell, run_python)", messy["used_tool"]
assert messy["not_used_tool"]["note"] == "used run_shell (2 calls), which it should not", messy["not_used_tool"]
assert tidy["max_turns"]["note"] == "3 turns (at most 3)" and messy["max_turns"]["note"] == "4 turns, more than 3"
assert messy["max_commands"]["note"] == "3 commands, more than 1", messy["max_commands"]
assert messy["no_failed_exit"]["note"] == "1 command of 3 failed with exit: `echo trying; exit 3`: exit 3", messy
assert messy["csv_columns"]["note"] == "output/data.csv has no column 'timestamp', 'kwh' (its columns: time, value)"
assert messy["output_json"]["note"].startswith("output/result.json does not match the schema: $.total:"), messy
assert messy["answer_schema"]["note"] == "the answer is not JSON", messy["answer_schema"]
assert messy["max_cost"]["note"].startswith("$0.3"), messy["max_cost"]
PY
check "bad input fails its check with the reason, on both runs, and the eval goes on" python3 - "$first" <<'PY'
import json, sys
for v in ("tidy", "messy"):
    r = json.load(open(sys.argv[1] + "/runs/%s/default/1/verdicts.json" % v))
    assert r["outside"]["passed"] is False and "leaves the run's outputs" in r["outside"]["note"], r["outside"]
    assert r["bad_schema"]["passed"] is False and r["bad_schema"]["note"].startswith("the schema is malformed"), r
PY
check "composed: any, weighted and all on the real runs" python3 - "$first" <<'PY'
import json, sys
tidy = json.load(open(sys.argv[1] + "/runs/tidy/default/1/verdicts.json"))
messy = json.load(open(sys.argv[1] + "/runs/messy/default/1/verdicts.json"))
assert tidy["any"]["passed"] and not messy["any"]["passed"] and messy["any"]["note"].startswith("none passed: ")
assert tidy["weighted"]["passed"] and tidy["weighted"]["score"] == 1
assert not messy["weighted"]["passed"] and abs(messy["weighted"]["score"] - 0.75 / 4) < 1e-9, messy["weighted"]
assert tidy["all"]["passed"] and tidy["all"]["note"].endswith("graded by openai/gpt-4o-mini: the report states the total")
assert not messy["all"]["passed"] and "graded by" not in messy["all"]["note"], messy["all"]
PY
check "the model-graded check: asked once (only for the tidy run), marked graded, its cost apart" python3 - "$first" \
  "$(fake_requests "$qg")" <<'PY'
import json, sys
assert sys.argv[2] == "1", sys.argv[2]
lines = {l["variant"]: l for l in map(json.loads, open(sys.argv[1] + "/results.jsonl"))}
assert lines["tidy"]["graded"] is True and lines["tidy"]["grading_cost"] > 0, lines["tidy"]
assert lines["tidy"]["score"] < 1, "the grade's score counts in the mean"
assert lines["messy"]["graded"] is False and lines["messy"]["grading_cost"] is None, lines["messy"]
PY
check "the table and the page mark the model-graded check" python3 - "$TMP/first.out" "$first/index.html" <<'PY'
import re, sys
out, page = open(sys.argv[1]).read(), open(sys.argv[2]).read()
assert re.search(r"^variant +runs +pass~ +score~ ", out, re.M), out
assert re.search(r"^~ model-graded: a model judged 1 of 2 runs \(grading \$0\.\d+, not in the \$ column\)$", out, re.M), out
assert 'id="graded-legend"' in page and 'pass rate <span class="graded"' in page
assert 'model-graded ◆</span> <b>tidy</b>' in page and 'model-graded ◆</span> <b>messy</b>' not in page
PY

run_luagent eval "$TMP/proj/c.eval.yaml" -q
second=$(ls -td "$TMP"/evals/*-paths-* | head -1)
check "a rerun: no live call of the runs or the grader, the same verdicts" python3 - "$first" "$second" \
  "$(fake_requests "$qt") $(fake_requests "$qm") $(fake_requests "$qg")" <<'PY'
import json, sys
a, b = sys.argv[1], sys.argv[2]
assert a != b
assert sys.argv[3] == "3 4 1", sys.argv[3]
la = {l["variant"]: l for l in map(json.loads, open(a + "/results.jsonl"))}
lb = {l["variant"]: l for l in map(json.loads, open(b + "/results.jsonl"))}
for v in ("tidy", "messy"):
    assert lb[v]["live_calls"] == 0, lb[v]
    assert (la[v]["passed"], la[v]["score"], la[v]["graded"]) == (lb[v]["passed"], lb[v]["score"], lb[v]["graded"]), v
    va = json.load(open(a + "/runs/%s/default/1/verdicts.json" % v))
    vb = json.load(open(b + "/runs/%s/default/1/verdicts.json" % v))
    assert va == vb, (v, [k for k in va if va[k] != vb[k]])
assert lb["tidy"]["grading_cost"] == 0, lb["tidy"]
PY

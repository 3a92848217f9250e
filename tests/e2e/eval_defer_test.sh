# Approvals that wait, in an eval: an eval of tests/e2e/approval_defer.lua
# (its agent defers its approvals; the note file is the setting `note`) over
# two inputs ends with both runs waiting: listed apart with the commands to
# go on, not counted as failed, exit 3. `luagent approve` one and `luagent
# eval --resume` goes on with it as that same run (its journal answers the
# turn so far, the decision the call: the tool runs once), the other still
# waits; denied, the next --resume finishes it without running the tool. No
# Docker: the recipe's model is scripted and its tool a Lua function.
. tests/e2e/lib.sh
export LUAGENT_EVALS_DIR="$TMP/evals"
mkdir -p "$TMP/proj/notes"
cp tests/e2e/approval_defer.lua "$TMP/proj/defer.lua"
printf 'note:\n' > "$TMP/proj/defer.yaml"
: > "$TMP/proj/notes/a.txt"
: > "$TMP/proj/notes/b.txt"
SPEC="$TMP/proj/defer.eval.yaml"
cat > "$SPEC" <<'YAML'
recipe: defer.lua
inputs:
  - note: notes/a.txt
  - note: notes/b.txt
concurrency: 1
cache: false
YAML

run_luagent eval "$SPEC"
ev=$(ls -d "$TMP"/evals/*/ | head -1); ev=${ev%/}
ra="$ev/runs/default/a/1" rb="$ev/runs/default/b/1"
check "both runs wait: exit 3, listed apart with the commands to go on, the tool not run" sh -c "
  [ \"\$(cat $TMP/status)\" = 3 ] || { cat $TMP/stderr; exit 1; }
  grep -q '^2 runs wait for an approval (not counted in the pass rates):' $TMP/stdout &&
  grep -q 'default / a #1: write_note (call call_scripted_1_1, turn 1 of agent): luagent approve $ra\$' $TMP/stdout &&
  grep -q 'default / b #1: write_note (call call_scripted_1_1, turn 1 of agent): luagent approve $rb\$' $TMP/stdout &&
  grep -q 'then: luagent eval $SPEC --resume $(basename "$ev")\$' $TMP/stdout &&
  grep -q 'default / a #1: waiting for approval of write_note (call call_scripted_1_1, turn 1 of agent)' $TMP/stderr &&
  [ ! -s $TMP/proj/notes/a.txt ] && [ ! -s $TMP/proj/notes/b.txt ] || { cat $TMP/stdout $TMP/stderr; exit 1; }"
check "... results.jsonl marks them waiting with what they wait for; no run failed; the table and summary agree" \
  python3 - "$ev" "$TMP/stdout" <<'PY'
import csv, json, sys
ev, out = sys.argv[1], open(sys.argv[2]).read()
lines = [json.loads(l) for l in open(ev + "/results.jsonl")]
assert [l["status"] for l in lines] == ["waiting", "waiting"], lines
for l in lines:
    w = l["waiting"]
    assert w["call"]["tool"] == "write_note" and w["call"]["arguments"] == {"text": "hello"} and w["turn"] == 1, w
    assert l["passed"] is None and l["error"] is None, l
row = list(csv.DictReader(open(ev + "/summary.csv")))[0]
assert row["waiting"] == "2" and row["done"] == "0" and row["errors"] == "0" and row["pass_rate"] == "", row
assert [l for l in out.splitlines() if l.startswith("default")][0].split()[:3] == ["default", "0/2", "-"], out
PY
check "... each run's trace ends waiting, as under luagent run" sh -c "
  tail -1 $ra/trace.jsonl | grep -q '\"status\":\"waiting\"' && tail -1 $ra/trace.jsonl | grep -q '\"waiting\":{'"

run_luagent approve "$ra"
run_luagent eval "$SPEC" --resume
check "approved one, --resume: it goes on as itself (no model call again, the tool runs once), the other still waits: exit 3" sh -c "
  [ \"\$(cat $TMP/status)\" = 3 ] || { cat $TMP/stderr; exit 1; }
  [ \"\$(cat $TMP/proj/notes/a.txt)\" = hello ] && [ ! -s $TMP/proj/notes/b.txt ] &&
  grep -q '^Done: written' $ra/stdout.txt &&
  grep -q '1 waiting run goes on with its decision, 1 still waits for one' $TMP/stderr &&
  grep -q '^1 run waits for an approval' $TMP/stdout &&
  grep -q 'luagent approve $rb\$' $TMP/stdout && ! grep -q 'luagent approve $ra' $TMP/stdout &&
  [ \$(grep -c '\"type\":\"run_start\"' $ra/trace.jsonl) = 2 ] &&
  [ \$(grep -c '\"type\":\"model_response\"' $ra/trace.jsonl) = 2 ] || { cat $TMP/stdout $TMP/stderr; exit 1; }"

call=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["call"]["id"])' "$rb/waiting.json")
run_luagent approve "$rb" --deny "$call" --why "not now"
run_luagent eval "$SPEC" --resume
check "denied the other, --resume: it finishes without the tool, the approved one is kept: exit 0" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] || { cat $TMP/stderr; exit 1; }
  [ \"\$(cat $TMP/proj/notes/a.txt)\" = hello ] && [ ! -s $TMP/proj/notes/b.txt ] &&
  grep -q '^Done: Not run: a person refused this call: not now' $rb/stdout.txt &&
  ! grep -q 'wait for an approval' $TMP/stdout && grep -q '1 of 2 runs kept, 1 to run' $TMP/stderr"
check "... results.jsonl, summary and table: both runs ok and passed, their figures the whole run's" python3 - "$ev" "$TMP/stdout" <<'PY'
import csv, json, sys
ev, out = sys.argv[1], open(sys.argv[2]).read()
lines = [json.loads(l) for l in open(ev + "/results.jsonl")]
assert sorted((l["input"], l["status"], l["passed"], l["waiting"], l["live_calls"]) for l in lines) == \
    [("a", "ok", True, None, 2), ("b", "ok", True, None, 2)], lines  # both processes' calls, none twice
row = list(csv.DictReader(open(ev + "/summary.csv")))[0]
assert row["waiting"] == "0" and row["done"] == "2" and row["pass_rate"] == "1", row
assert [l for l in out.splitlines() if l.startswith("default")][0].split()[:3] == ["default", "2", "100%"], out
PY

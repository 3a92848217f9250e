# luagent eval from the command line, with no recipe really running: a bad
# spec or command line is one error naming the file, line and key, exit 2,
# before anything runs; Ctrl-C during an eval (a fake run_job) keeps what
# finished, starts nothing more, exits 130.
. tests/e2e/lib.sh
export LUAGENT_EVALS_DIR="$TMP/evals"

mkdir -p "$TMP/proj/data"
printf 'return 0\n' > "$TMP/proj/r.lua"
printf 'model:\n  provider: auto\n  temperature: 0\ninput:\ninstructions: Be careful.\n' > "$TMP/proj/r.yaml"
printf 'x\n' > "$TMP/proj/data/a.csv"
printf 'x\n' > "$TMP/proj/data/b.csv"
printf 'return function(run) return {passed = true} end\n' > "$TMP/proj/check.lua"
SPEC="$TMP/proj/s.eval.yaml"

# bad SPEC-TEXT EXPECTED-STDERR: the spec is refused with exactly that line, exit 2, nothing run
bad() {
  printf '%s' "$1" > "$SPEC"
  rm -rf "$TMP/evals"
  run_luagent eval "$SPEC"
  status_is 2 && [ "$(cat "$TMP/stderr")" = "luagent: $SPEC:$2" ] || { echo "stderr: $(cat "$TMP/stderr")"; return 1; }
  [ ! -e "$TMP/evals" ] || { echo "an evals folder was made"; return 1; }
}

check "an unknown key: the file, line and key, exit 2, nothing runs" bad \
  "recipe: r.lua
inputs:
  - {input: data/a.csv}
epoch: 2
" "4: epoch: unknown key (did you mean 'epochs'?); a spec has: budget, cache, check, concurrency, epochs, grader, inputs, name, recipe, variants"

check "a missing check file" bad \
  "recipe: r.lua
check: checks/score.lua
" "2: check: no such file: $TMP/proj/checks/score.lua (paths are relative to the spec's folder)"

check "a missing recipe" bad \
  "recipe: energy.lua
" "1: recipe: no such file: $TMP/proj/energy.lua (paths are relative to the spec's folder)"

check "a variant that sets a setting the recipe's YAML does not have" bad \
  "recipe: r.lua
variants:
  short:
    instructions: Be brief.
  hot:
    model.temprature: 1
" "6: variants.hot.model.temprature: not a setting of the recipe (r.yaml has model: provider, temperature) (did you mean 'temperature'?)"

check "an empty list of inputs" bad \
  "recipe: r.lua
check: check.lua
inputs: []
" "3: inputs: expected a list with at least one input, e.g. - {input: data/a.csv} or - {glob: 'data/*.csv', setting: input}; got an empty list"

check "a glob that matches nothing" bad \
  "recipe: r.lua
inputs:
  - glob: data/*.json
    setting: input
" "3: inputs[1].glob: 'data/*.json' matches no file in $TMP/proj"

check "a value of the wrong type" bad \
  "recipe: r.lua
epochs: 1.5
" "2: epochs: expected a whole number >= 1, got 1.5"

printf 'recipe: r.lua\n' > "$SPEC"
run_luagent eval "$SPEC" --set model.temprature=1
check "a --set the recipe does not have: exit 2, named" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q \"^luagent: --set model.temprature=1: model.temprature: not a setting of the recipe\" $TMP/stderr"
printf 'return 0\n' > "$TMP/proj/typo.lua"
printf 'model:\n  provider: auto\n  temprature: 0\ninput:\n' > "$TMP/proj/typo.yaml"
printf 'recipe: typo.lua\n' > "$SPEC"
rm -rf "$TMP/evals"
run_luagent eval "$SPEC"
check "a typo in the recipe's model section: exit 2, one line naming its file, line and key, nothing runs" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && [ \"\$(wc -l < $TMP/stderr)\" = 1 ] && [ ! -e $TMP/evals ] &&
  grep -q \"^luagent: $TMP/proj/typo.yaml:3: model.temprature: not a setting of the model (did you mean 'temperature'?)\" \
    $TMP/stderr"
run_luagent eval "$SPEC" --concurrency 0
check "--concurrency 0 is bad usage (exit 2)" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q -- '--concurrency needs a whole number >= 1' $TMP/stderr"
run_luagent eval
check "eval without a spec is bad usage (exit 2) and shows the usage" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'usage: luagent eval SPEC.yaml' $TMP/stderr"
run_luagent eval "$TMP/proj/none.yaml"
check "a spec that does not exist: exit 2, named" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'none.yaml' $TMP/stderr"

# ---- Ctrl-C: the eval keeps what finished ----
cat > "$SPEC" <<'YAML'
recipe: r.lua
variants:
  a: {}
  b: {instructions: Be brief.}
inputs:
  - glob: data/*.csv
    setting: input
epochs: 3
concurrency: 2
YAML
rm -rf "$TMP/evals"
"$LUAGENT" run tests/e2e/eval_fake_run_job.lua -- "$SPEC" "$TMP/evals" "$TMP/starts.log" > "$TMP/stdout" 2> "$TMP/stderr" &
pid=$!
# Ctrl-C once 3 runs have their line and another has started (so one is in flight: under load
# the next runs could otherwise start only after the signal, and none would be interrupted)
for i in $(seq 1 200); do
  done_runs=$(cat "$TMP"/evals/*/results.jsonl 2>/dev/null | wc -l)
  started=$(wc -w < "$TMP/starts.log" 2>/dev/null || echo 0)
  [ "$done_runs" -ge 3 ] && [ "$started" -gt "$done_runs" ] && break
  sleep 0.02
done
kill -INT $pid
wait $pid
echo $? > "$TMP/status"
results=$(ls "$TMP"/evals/*/results.jsonl)
check "Ctrl-C: exit 130, the eval says it was interrupted" sh -c "
  [ \"\$(cat $TMP/status)\" = 130 ] && grep -q 'STATUS interrupted' $TMP/stdout"
check "Ctrl-C: every run that started has its line, no run started after, not all 12 ran" python3 - "$results" "$TMP/starts.log" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
starts = open(sys.argv[2]).read().split()
assert 3 <= len(lines) < 12, len(lines)
assert len(starts) == len(lines), (starts, lines)
got = sorted("%s/%s/%d" % (l["variant"], l["input"], l["epoch"]) for l in lines)
assert got == sorted(starts), (got, starts)
statuses = [l["status"] for l in lines]
assert statuses.count("ok") >= 3 and set(statuses) <= {"ok", "interrupted"}, statuses
assert "interrupted" in statuses, statuses
PY
check "Ctrl-C: summary.csv counts what finished" python3 - "$results" <<'PY'
import csv, json, os, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
rows = list(csv.DictReader(open(os.path.join(os.path.dirname(sys.argv[1]), "summary.csv"))))
assert [r["variant"] for r in rows] == ["a", "b"], rows
for r in rows:
    done = sum(1 for l in lines if l["variant"] == r["variant"] and l["status"] == "ok")
    assert int(r["done"]) == done and int(r["passed"]) == done, (r, done)
PY

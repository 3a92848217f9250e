# needs: docker
# luagent eval --resume end to end: the small recipe of eval_test.sh (each run
# in its own sandbox), each variant's model the fake provider (a test double,
# one queue per variant, which counts the requests it gets). An eval of 12 runs
# stopped by its budget after 5, resumed with a larger budget, runs exactly the
# other 7 (the 5 kept make no request); a variant added to the spec then runs
# only its own 6 runs; the results, summary, table and page cover all of them.
. tests/e2e/lib.sh
export LUAGENT_EVALS_DIR="$TMP/evals"
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY

# answers QUEUE LABEL N: N runs' answers (one model call each, 100 tokens), prints the queue's base URL
answers() { "$LUAGENT" run -q /dev/stdin -- "$@" <<'LUA'
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local queue, label, n = ...
local steps = {}
for i = 1, tonumber(n) do
  steps[i] = {text = label .. " answer " .. i, usage = {input_tokens = 90, output_tokens = 10}}
end
fake.script(queue, steps)
print(fake.base_url(queue, "openai"))
LUA
}

mkdir -p "$TMP/proj/data"
cp tests/e2e/eval_recipe.lua tests/e2e/eval_recipe.yaml "$TMP/proj/"
printf 'one\n' > "$TMP/proj/data/one.txt"
printf 'one two\n' > "$TMP/proj/data/two.txt"
printf 'one two three\n' > "$TMP/proj/data/three.txt"
qa=resume-a-$$; qb=resume-b-$$; qg=resume-g-$$
base_a=$(answers "$qa" ALPHA 6); base_b=$(answers "$qb" BETA 6); base_g=$(answers "$qg" GAMMA 6)
# spec BUDGET [EXTRA-VARIANT]
spec() {
  cat > "$TMP/proj/r.eval.yaml" <<YAML
name: resumed
recipe: eval_recipe.lua
variants:
  alpha: {label: ALPHA, model.base_url: $base_a}
  beta: {label: BETA, model.base_url: $base_b}
$2
inputs:
  - glob: data/*.txt
    setting: input
epochs: 2
concurrency: 1
cache: false
budget: {tokens: $1}
YAML
}

spec 500
run_luagent eval "$TMP/proj/r.eval.yaml"
dir=$(ls -d "$TMP"/evals/*-resumed-*)
check "the budget stops the eval after 5 of 12 runs (7 skipped)" python3 - "$dir" "$(fake_requests "$qa")" "$(fake_requests "$qb")" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1] + "/results.jsonl")]
assert [l["status"] for l in lines].count("ok") == 5 and len(lines) == 12, [l["status"] for l in lines]
assert int(sys.argv[2]) + int(sys.argv[3]) == 5, sys.argv[2:]
PY
cp "$dir/runs/alpha/one/1/trace.jsonl" "$TMP/kept-trace.jsonl"
before_a=$(fake_requests "$qa"); before_b=$(fake_requests "$qb")

spec 100000
run_luagent eval "$TMP/proj/r.eval.yaml" --resume
check "--resume (the newest eval of the spec) with a larger budget: exit 0, says what it keeps" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'resuming eval .*-resumed-.*: 5 of 12 runs kept, 7 to run' $TMP/stderr &&
  [ \$(ls -d $TMP/evals/*-resumed-* | wc -l) = 1 ]"
check "...runs exactly the 7 that had not run: 7 requests, none for the 5 kept, whose trace is as it was" python3 - "$dir" \
  "$before_a" "$before_b" "$(fake_requests "$qa")" "$(fake_requests "$qb")" "$TMP/kept-trace.jsonl" <<'PY'
import json, sys
d, ba, bb, aa, ab, kept = sys.argv[1], *map(int, sys.argv[2:6]), sys.argv[6]
assert (aa - ba) + (ab - bb) == 7, (ba, bb, aa, ab)
lines = [json.loads(l) for l in open(d + "/results.jsonl")]
assert len(lines) == 12 and all(l["status"] == "ok" for l in lines), [l["status"] for l in lines]
assert len({(l["variant"], l["input"], l["epoch"]) for l in lines}) == 12
assert open(d + "/runs/alpha/one/1/trace.jsonl").read() == open(kept).read()
about = json.load(open(d + "/eval.json"))
assert about["status"] == "ok" and about["finished"] == 12, about
PY
check "...and the table, summary and page cover all 12" sh -c "
  grep -q '^alpha  *6 ' $TMP/stdout && grep -q '^beta  *6 ' $TMP/stdout && grep -q '^alpha,6,6,' $dir/summary.csv &&
  grep -q 'BETA answer 6' $dir/index.html"

before_a=$(fake_requests "$qa"); before_b=$(fake_requests "$qb")
spec 100000 "  gamma: {label: GAMMA, model.base_url: $base_g}"
run_luagent eval "$TMP/proj/r.eval.yaml" --resume "$(basename "$dir")"
check "a variant added to the spec: --resume ID runs only its 6 runs" python3 - "$dir" "$before_a" "$before_b" \
  "$(fake_requests "$qa")" "$(fake_requests "$qb")" "$(fake_requests "$qg")" "$(cat "$TMP/status")" <<'PY'
import json, sys
d, ba, bb, aa, ab, g, status = sys.argv[1], *map(int, sys.argv[2:8])
assert status == 0 and (aa, ab) == (ba, bb) and g == 6, (status, ba, bb, aa, ab, g)
lines = [json.loads(l) for l in open(d + "/results.jsonl")]
assert len(lines) == 18 and sum(l["variant"] == "gamma" for l in lines) == 6
PY
check "...said so, and the table has its row" sh -c "
  grep -q '12 of 18 runs kept, 6 to run (the spec adds variant gamma)' $TMP/stderr && grep -q '^gamma  *6 ' $TMP/stdout"

spec 100000 "  gamma: {label: DELTA, model.base_url: $base_g}"
run_luagent eval "$TMP/proj/r.eval.yaml" --resume
check "a variant changed since: refused naming it, exit 2, nothing runs" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && [ \$(wc -l < $TMP/stderr) = 1 ] &&
  grep -q 'was edited since that eval: variant gamma changed (label); only adding' $TMP/stderr &&
  [ \$(wc -l < $dir/results.jsonl) = 18 ]"

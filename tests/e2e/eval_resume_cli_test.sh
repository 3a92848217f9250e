# luagent eval --resume from the command line, with a recipe that needs no
# sandbox (it logs its start and sleeps): an eval killed for real (SIGKILL:
# nothing of luagent's own ends it) after 5 results is resumed and runs exactly
# the runs that have no line; a result line cut short by a crash mid-write is
# not counted as finished; bad input is one line naming it, exit 2.
. tests/e2e/lib.sh
export LUAGENT_EVALS_DIR="$TMP/evals"
mkdir -p "$TMP/proj/data"
cat > "$TMP/proj/slow.lua" <<'LUA'
local cfg = luagent.config("slow.yaml")
assert(luagent.fs.append(cfg.log, ("%s %s\n"):format(cfg.label, cfg.input:match("[^/]+$"))))
luagent.sleep(cfg.pause)
print("done " .. cfg.label)
return 0
LUA
printf 'label: x\ninput:\nlog:\npause: 0.3\n' > "$TMP/proj/slow.yaml"
for f in a b c; do printf 'x\n' > "$TMP/proj/data/$f.csv"; done
cat > "$TMP/proj/k.eval.yaml" <<YAML
recipe: slow.lua
variants:
  v1: {label: one}
  v2: {label: two}
inputs:
  - glob: data/*.csv
    setting: input
epochs: 2
concurrency: 1
cache: false
YAML
SETS="--set log=$TMP/starts.log"

"$LUAGENT" eval "$TMP/proj/k.eval.yaml" $SETS > "$TMP/stdout" 2> "$TMP/stderr" &
pid=$!
for i in $(seq 1 300); do
  [ "$(cat "$TMP"/evals/*/results.jsonl 2>/dev/null | wc -l)" -ge 5 ] && break
  sleep 0.02
done
kill -KILL $pid
wait $pid 2>/dev/null
results=$(ls "$TMP"/evals/*/results.jsonl)
kept=$(wc -l < "$results")
: > "$TMP/starts.log"
run_luagent eval "$TMP/proj/k.eval.yaml" $SETS --resume
check "killed (SIGKILL) after 5 of 12 runs, --resume runs exactly the ones without a line, each once" python3 - \
  "$results" "$kept" "$TMP/starts.log" "$(cat "$TMP/status")" <<'PY'
import json, sys
path, kept, starts, status = sys.argv[1], int(sys.argv[2]), open(sys.argv[3]).read().split("\n"), sys.argv[4]
starts = [s for s in starts if s]
assert status == "0", status
assert 5 <= kept < 12, kept
assert len(starts) == 12 - kept, (kept, starts)
lines = [json.loads(l) for l in open(path)]
keys = [(l["variant"], l["input"], l["epoch"]) for l in lines]
assert len(lines) == 12 and len(set(keys)) == 12 and all(l["status"] == "ok" for l in lines), lines
PY
check "...and says what it kept" grep -q "resuming eval .*: $kept of 12 runs kept, $((12 - kept)) to run" "$TMP/stderr"

# a crash mid-write: the last line cut short (no newline) is not a finished run
python3 - "$results" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines(True)
open(sys.argv[1], "w").write("".join(lines[:-1]) + lines[-1][:30])
PY
: > "$TMP/starts.log"
run_luagent eval "$TMP/proj/k.eval.yaml" $SETS --resume
check "a result line cut short by a crash: that run runs again, and only it" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ \$(wc -l < $TMP/starts.log) = 1 ] && [ \$(wc -l < $results) = 12 ] &&
  python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' $results"

: > "$TMP/starts.log"
run_luagent eval "$TMP/proj/k.eval.yaml" $SETS --resume --rerun-failed-checks
check "nothing left to run: --resume runs none and exits 0" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ ! -s $TMP/starts.log ] && grep -q '12 of 12 runs kept, 0 to run' $TMP/stderr"

id=20990101-000000-none-abcd
run_luagent eval "$TMP/proj/k.eval.yaml" $SETS --resume "$id"
check "--resume of an eval that does not exist: one line naming it, exit 2" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && [ \"\$(cat $TMP/stderr)\" = \"luagent: --resume $id: no such eval (no $TMP/evals/$id/eval.json); \\\`ls $TMP/evals\\\` lists the evals\" ]"
printf 'recipe: slow.lua\n' > "$TMP/proj/other.eval.yaml"
run_luagent eval "$TMP/proj/other.eval.yaml" --resume "$(basename "$(dirname "$results")")"
check "--resume of an eval of another spec: one line naming both, exit 2" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && [ \$(wc -l < $TMP/stderr) = 1 ] &&
  grep -q '^luagent: --resume .*: that eval is of .*/k.eval.yaml, not of .*/other.eval.yaml$' $TMP/stderr"
run_luagent eval "$TMP/proj/other.eval.yaml" --resume
check "--resume of a spec never run: one line, exit 2" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q '^luagent: --resume: no eval of .*other.eval.yaml in .*; run it once without --resume$' $TMP/stderr"
run_luagent eval "$TMP/proj/k.eval.yaml" --rerun-failed-checks
check "--rerun-failed-checks without --resume is bad usage (exit 2)" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q -- '--rerun-failed-checks goes with --resume' $TMP/stderr"

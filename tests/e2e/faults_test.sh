# When things go wrong (no Docker needed): bad recordings are refused before
# anything runs (exit 2), a trace that cannot be written is said at once and
# the run ends with exit 1, `trace show` reads a cut trace, and a run that
# fails before any event still leaves a trace. The model is
# tests/fake_provider.py (a test double).
. tests/e2e/lib.sh
export LUAGENT_RUNS_DIR="$TMP/runs"
RECIPE=tests/e2e/faults_recipe.lua

# script QUEUE N: N long_text tool calls, then an answer; prints the base URL
script() { "$LUAGENT" run -q /dev/stdin -- "$1" "$2" <<'LUA'
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local queue, n = ...
local steps = {}
for i = 1, tonumber(n) do steps[i] = {tool_calls = {{name = "long_text", arguments = {}}}} end
steps[#steps + 1] = {text = "I read it all."}
fake.script(queue, steps)
print(fake.base_url(queue, "openai"))
LUA
}
lines_ok() { python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]).read().split("\n")[:int(sys.argv[2])]:
    json.loads(line); n += 1
print(n)' "$@"; }

# ---- recordings are checked before anything runs ----
base=$(script rec-$$ 2)
run_luagent run "$RECIPE" -q --set "base_url=$base" --record "$TMP/rec.jsonl"
check "a recording names its recipe in its header" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && head -1 $TMP/rec.jsonl | grep -q '\"recipe\":\"faults_recipe\"'"
NOWHERE="base_url=http://127.0.0.1:1/v1"
run_luagent run "$RECIPE" -q --replay "$TMP/rec.jsonl" --set "$NOWHERE"
check "... and replays whole (no provider needed)" sh -c "[ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'OUTPUT: I read it all.' $TMP/stdout"

refused() { # refused PATTERN: exit 2, the message, the recipe never started
  [ "$(cat "$TMP/status")" = 2 ] || { echo "status $(cat "$TMP/status"), expected 2"; cat "$TMP/stderr"; return 1; }
  grep -q -- "$1" "$TMP/stderr" || { echo "stderr lacks '$1':"; cat "$TMP/stderr"; return 1; }
  ! grep -q STARTED "$TMP/stdout" || { echo "the recipe ran"; return 1; }
}
run_luagent run "$RECIPE" --replay /etc/passwd
check "--replay of a file that is not a recording: exit 2 before anything runs, saying so" \
  refused "luagent: --replay: /etc/passwd is not a luagent recording (its first line is not a recording header)"
: > "$TMP/empty.jsonl"
run_luagent run "$RECIPE" --replay "$TMP/empty.jsonl"
check "--replay of an empty file: exit 2, not a recording" refused "empty.jsonl is not a luagent recording (it is empty)"
sed '3s/.*/{"endpoint": "\/chat\/completions", "body": {"cut/' "$TMP/rec.jsonl" > "$TMP/damaged.jsonl"
run_luagent run "$RECIPE" --replay "$TMP/damaged.jsonl"
check "--replay of a recording with a broken line: exit 2, damaged at line 3" \
  refused "damaged.jsonl is damaged at line 3: the line is not JSON; record it again with --record"
sed '2s/.*/{"note": "not an exchange"}/' "$TMP/rec.jsonl" > "$TMP/odd.jsonl"
run_luagent run "$RECIPE" --replay "$TMP/odd.jsonl"
check "--replay of a recording with a line that is no exchange: exit 2, damaged at line 2" \
  refused "odd.jsonl is damaged at line 2: the line is not a model exchange"
head -c -40 "$TMP/rec.jsonl" > "$TMP/cut.jsonl"
run_luagent run "$RECIPE" --replay "$TMP/cut.jsonl"
check "--replay of a recording whose last line is cut: exit 2, naming the line (not 'no more exchanges')" \
  refused "cut.jsonl is damaged at line $(wc -l < "$TMP/rec.jsonl"): its last line is cut"
cp tests/e2e/faults_recipe.lua "$TMP/other_recipe.lua"
run_luagent run "$TMP/other_recipe.lua" --replay "$TMP/rec.jsonl"
check "--replay of another recipe's recording: exit 2, naming both recipes" \
  refused "rec.jsonl was recorded for the recipe faults_recipe, not other_recipe"
head -3 "$TMP/rec.jsonl" > "$TMP/short.jsonl"
run_luagent run "$RECIPE" -q --replay "$TMP/short.jsonl" --set "$NOWHERE"
check "a whole recording with fewer exchanges than the run asks for: 'no more model exchanges' (exit 1)" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q 'has no more model exchanges (all 2 were used)' $TMP/stdout $TMP/stderr"

# ---- trace show reads a trace that was cut ----
run_luagent run "$RECIPE" --set "base_url=$(script show-$$ 1)"
trace=$(ls "$LUAGENT_RUNS_DIR"/*/trace.jsonl | head -1)
head -c -25 "$trace" > "$TMP/cut-trace.jsonl"
n=$(wc -l < "$trace")
run_luagent trace show "$TMP/cut-trace.jsonl"
check "trace show on a cut trace: the events before the cut, then 'cut at line N' (exit 1)" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q 'turn 1  long_text' $TMP/stdout &&
  grep -q \"luagent: the trace $TMP/cut-trace.jsonl is cut at line $n (not a whole event); the $((n - 1)) events before it are shown above\" $TMP/stderr"
head -n 4 "$trace" > "$TMP/short-trace.jsonl"
run_luagent trace show "$TMP/short-trace.jsonl"
check "trace show on a trace without run_end: shown, and said (exit 0)" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'run ' $TMP/stdout && grep -q 'ends without run_end' $TMP/stderr"

: > "$TMP/empty-trace.jsonl"
run_luagent trace show "$TMP/empty-trace.jsonl"
check "trace show on an empty file: says it is empty, exit 1 (it printed nothing, exit 0)" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && [ ! -s $TMP/stdout ] &&
  grep -q \"luagent: the trace $TMP/empty-trace.jsonl is empty: no event was written\" $TMP/stderr"

# ---- a run that fails before any event still has its trace ----
cat > "$TMP/early.lua" <<'LUA'
luagent.run_dir("input")
error("the input cannot be prepared", 0)
LUA
rm -rf "$LUAGENT_RUNS_DIR"
run_luagent run "$TMP/early.lua"
early=$(ls -d "$LUAGENT_RUNS_DIR"/* | head -1)
check "a run that failed before any event: its folder has a trace with run_start and run_end (failed, the error)" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && head -1 $early/trace.jsonl | grep -q '\"type\":\"run_start\"' &&
  tail -1 $early/trace.jsonl | grep -q '\"status\":\"failed\"' &&
  tail -1 $early/trace.jsonl | grep -q '\"error\":\"the input cannot be prepared\"' && [ \$(wc -l < $early/trace.jsonl) -eq 2 ]"

# ---- a trace that cannot be written (a full disk) ----
if tiny_disk "$TMP/full" 64k "a full disk under the trace"; then
  LUAGENT_RUNS_DIR="$TMP/full" run_luagent run "$RECIPE" --set "base_url=$(script full-$$ 4)" --set lines=1000
  full=$(ls -d "$TMP/full"/* | head -1)
  kept=$(sed -n 's/.*it holds the first \([0-9]*\) events.*/\1/p' "$TMP/stderr" | head -1)
  check "a trace on a full disk: said at once naming the file, the run goes on to its end, exit 1 naming it again" sh -c "
    [ \"\$(cat $TMP/status)\" = 1 ] &&
    grep -q 'luagent: cannot write the trace $full/trace.jsonl: No space left on device; it holds the first [0-9]* events' $TMP/stderr &&
    grep -q 'STOPPED: answer' $TMP/stdout && grep -q 'trace: $full/trace.jsonl (incomplete: cut after line $kept)' $TMP/stderr &&
    [ \$(grep -c 'luagent: cannot write the trace $full/trace.jsonl' $TMP/stderr) -eq 2 ] &&
    [ \$(grep -n 'cannot write the trace' $TMP/stderr | head -1 | cut -d: -f1) -lt \$(grep -n 'turn 4 ' $TMP/stderr | head -1 | cut -d: -f1) ]"
  whole=$(lines_ok "$full/trace.jsonl" "$kept" 2>&1)
  check "... no line is cut silently: the lines it says it holds are whole events" [ "$whole" = "$kept" ]
  run_luagent trace show "$full/trace.jsonl"
  check "... and trace show says where it is cut" sh -c "
    grep -q 'is cut at line $((kept + 1))\|ends without run_end' $TMP/stderr"
fi

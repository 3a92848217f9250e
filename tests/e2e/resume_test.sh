# needs: docker
# Runs that survive their process (luagent run --resume RUN, luagent.journal):
# the energy recipe over the fake provider (a test double, counting requests)
# killed with SIGKILL while its fourth model request waits, then resumed in a
# new process: it makes exactly the remaining requests, runs no command twice
# (two commands append to output/count.txt) and ends with the outputs of an
# uninterrupted run — with the dead run's container left, and removed; a run
# stopped by max_turns resumed with a higher limit; and what a resume refuses.
. tests/e2e/lib.sh
export LUAGENT_RUNS_DIR="$TMP/runs"
RECIPE=${RECIPE:-recipes/energy_anomaly.lua}

# start_killed NAME: a run over queue NAME whose 4th request hangs, SIGKILLed then; prints its folder
start_killed() {
  base=$("$LUAGENT" run -q tests/e2e/resume_fake.lua -- "$1" hang)
  "$LUAGENT" run "$RECIPE" -q --set model.provider=openai --set "model.base_url=$base" > "$TMP/$1.out" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do [ "$(fake_requests "$1")" -ge 4 ] && break; sleep 0.1; done
  kill -9 $pid; wait $pid 2>/dev/null
  echo $pid > "$TMP/killed.pid"
  ls -td "$LUAGENT_RUNS_DIR"/*energy_anomaly* | head -1
}
same_outputs() { # DIR_A DIR_B: the same anomalies, count and report; a chart in each
  for f in anomalies.csv count.txt report.md; do cmp "$1/output/$f" "$2/output/$f" || return 1; done
  [ -s "$1/output/energy.png" ] && [ -s "$2/output/energy.png" ]
}

# an uninterrupted run: what a resumed one must end with
base=$("$LUAGENT" run -q tests/e2e/resume_fake.lua -- "whole-$$")
run_luagent run "$RECIPE" -q --set model.provider=openai --set "model.base_url=$base"
whole=$(ls -td "$LUAGENT_RUNS_DIR"/*energy_anomaly* | head -1)
n=$(fake_requests "whole-$$")
check "an uninterrupted run: 5 requests, each command once" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] || { cat $TMP/stdout $TMP/stderr; exit 1; }
  [ $n = 5 ] && [ \"\$(cat $whole/output/count.txt)\" = \"\$(printf 'turn1\nturn3')\" ]"

# killed at its 4th request, resumed with the container left as it was
run=$(start_killed "killed-$$")
check "the killed run left a journal, its command line and a checkpoint of the workspace" sh -c "
  [ -s $run/journal.jsonl ] && [ -s $run/resume.argv ] && [ \$(ls $run/checkpoint-*.tar | wc -l) = 1 ] &&
  [ \$(grep -c '\"k\":\"model\"' $run/journal.jsonl) = 3 ] && [ \$(grep -c '\"k\":\"tools\"' $run/journal.jsonl) = 3 ]"
before=$(fake_requests "killed-$$")
run_luagent run --resume "$run"
n=$(( $(fake_requests "killed-$$") - before ))
check "luagent run --resume RUN: exit 0, exactly the 2 remaining model requests" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] || { cat $TMP/stdout $TMP/stderr; exit 1; }
  [ $n = 2 ]"
check "... no command ran twice, and the outputs are those of the uninterrupted run" same_outputs "$run" "$whole"
check "... its trace: two run_starts, one run_resumed, and the run ends ok" sh -c "
  [ \$(grep -c '\"type\":\"run_start\"' $run/trace.jsonl) = 2 ] && grep -q '\"type\":\"run_resumed\"' $run/trace.jsonl &&
  tail -1 $run/trace.jsonl | grep -q '\"status\":\"ok\"'"
run_luagent run --resume "$run"
check "resuming a run that finished: one line, exit 2" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && $NO_INTERNALS && [ \$(wc -l < $TMP/stderr) = 1 ] && grep -q 'finished (ok): there is nothing to resume' $TMP/stderr"

# killed, its container removed, and a journal cut mid-line by the crash
run=$(start_killed "removed-$$")
left=$(docker ps -aq --filter "label=luagent.owner.pid=$(cat "$TMP/killed.pid")")
echo "$left" | xargs -r docker rm -f > /dev/null 2>&1
printf '{"k":"model","a":"Energy' >> "$run/journal.jsonl"
before=$(fake_requests "removed-$$")
run_luagent run --resume "$run"
n=$(( $(fake_requests "removed-$$") - before ))
check "the run's container removed and the journal's last line cut: resumed from the checkpoint, 2 requests" sh -c "
  [ -n '$left' ] || { echo 'the killed run left no container to remove'; exit 1; }
  [ \"\$(cat $TMP/status)\" = 0 ] || { cat $TMP/stdout $TMP/stderr; exit 1; }
  [ $n = 2 ]"
check "... no command ran twice" same_outputs "$run" "$whole"

# stopped by max_turns = 2, resumed with --set limits.max_turns=10
base=$("$LUAGENT" run -q tests/e2e/resume_fake.lua -- "limit-$$")
run_luagent run "$RECIPE" -q --set model.provider=openai --set "model.base_url=$base" --set limits.max_turns=2
run=$(ls -td "$LUAGENT_RUNS_DIR"/*energy_anomaly* | head -1)
check "a run stopped by max_turns = 2: exit 1, no answer" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q 'No answer: the run stopped by max_turns after 2 turns' $TMP/stdout"
run_luagent run --resume "$run"
n=$(fake_requests "limit-$$")
check "... resumed as it was (max_turns still 2): no request, no command, and its outputs still saved" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && [ $n = 2 ] && grep -q 'No answer: the run stopped by max_turns after 2 turns' $TMP/stdout &&
  grep -q '\"path\": \"output/anomalies.csv\"' $run/manifest.json && [ \"\$(cat $run/output/count.txt)\" = turn1 ]"
run_luagent run --resume "$run" --set limits.max_turns=10
n=$(fake_requests "limit-$$")
check "... resumed with --set limits.max_turns=10: the 3 remaining requests (5 in all)" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] || { cat $TMP/stdout $TMP/stderr; exit 1; }
  [ $n = 5 ]"
check "... no command ran twice" same_outputs "$run" "$whole"

# what a resume refuses
run_luagent run --resume no-such-run
check "a run that does not exist: one line naming where it looked, exit 2" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && $NO_INTERNALS && [ \$(wc -l < $TMP/stderr) = 1 ] && grep -q \"no run 'no-such-run' to resume\" $TMP/stderr"
mkdir -p "$TMP/edited" && cp recipes/energy_* "$TMP/edited/"
run=$(RECIPE="$TMP/edited/energy_anomaly.lua" start_killed "changed-$$")
sed -i 's/You are a careful energy analyst/You are a meticulous energy analyst/' "$TMP/edited/energy_anomaly.yaml"
run_luagent run --resume "$run"
n=$(fake_requests "changed-$$")
check "a recipe whose prompt was edited since: refused naming what differs, exit 2, no model request" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && $NO_INTERNALS && grep -q 'the recipe changed since the run stopped: turn 1 of agent .* other instructions' $TMP/stderr &&
  [ $n = 4 ]"
run=$(start_killed "twice-$$")
base=$("$LUAGENT" run -q tests/e2e/resume_fake.lua -- "twice-b-$$" hang-first)
"$LUAGENT" run --resume "$run" --set "model.base_url=$base" > "$TMP/first.out" 2>&1 &
first=$!
for _ in $(seq 1 300); do [ "$(fake_requests "twice-b-$$")" -ge 1 ] && break; sleep 0.1; done
run_luagent run --resume "$run"
kill $first; wait $first 2>/dev/null
check "two processes resuming one run: the second is refused (the lock), exit 2" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && $NO_INTERNALS && grep -q 'is being written by another luagent (pid [0-9]*)' $TMP/stderr"

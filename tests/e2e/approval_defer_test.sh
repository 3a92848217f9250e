# Approvals that wait for a person (agent.new{approve = "defer"}): the run
# stops at the first call that needs one (status waiting, exit 3, what it
# waits for), `luagent approve RUN [--deny CALL --why TEXT]` records the
# decision, and `luagent run --resume RUN` goes on with it; the tool runs
# once when approved, never when denied.
. tests/e2e/lib.sh
export LUAGENT_RUNS_DIR="$TMP/runs"
RECIPE=tests/e2e/approval_defer.lua
latest() { ls -td "$LUAGENT_RUNS_DIR"/* | head -1; }

run_luagent run "$RECIPE" -q -- "$TMP/note.txt"
run=$(latest)
check "a call that needs approval stops the run: exit 3, the commands to go on, the tool not run" sh -c "
  [ \"\$(cat $TMP/status)\" = 3 ] && [ ! -e $TMP/note.txt ] &&
  grep -q 'the run waits for a person to approve write_note (call call_scripted_1_1, turn 1 of agent): luagent approve $run' $TMP/stderr &&
  grep -q 'then luagent run --resume $run' $TMP/stderr && ! grep -q 'stack traceback' $TMP/stderr"
check "... waiting.json says what it waits for, and the trace's run_end says waiting with it" sh -c "
  grep -q '\"tool\": \"write_note\"' $run/waiting.json && grep -q '\"id\": \"call_scripted_1_1\"' $run/waiting.json &&
  tail -1 $run/trace.jsonl | grep -q '\"status\":\"waiting\"' && tail -1 $run/trace.jsonl | grep -q '\"waiting\":{'"
run_luagent approve "$run"
check "luagent approve RUN: exit 0, says what it approved and how to go on" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q '^approved write_note (call call_scripted_1_1, turn 1 of agent); go on with: luagent run --resume $run' $TMP/stdout &&
  [ ! -e $run/waiting.json ]"
run_luagent run --resume "$run"
check "luagent run --resume RUN: the approved call runs once, the run ends ok" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] || { cat $TMP/stderr; exit 1; }
  [ \"\$(cat $TMP/note.txt)\" = hello ] && grep -q '^Done: written' $TMP/stdout"
run_luagent approve "$run"
check "approving a run that waits for nothing: exit 2" sh -c "[ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'waits for no approval' $TMP/stderr"

run_luagent run "$RECIPE" -q -- "$TMP/denied.txt"
run=$(latest)
run_luagent approve "$run" --deny call_other --why "not now"
check "--deny of a call the run does not wait for: exit 2 naming the one it waits for" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'waits for the call call_scripted_1_1 (write_note), not call_other' $TMP/stderr"
run_luagent approve "$run" --deny call_scripted_1_1 --why "not now"
run_luagent run --resume "$run"
check "denied with a reason: the tool never runs, the model reads the reason, the run ends ok" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] || { cat $TMP/stderr; exit 1; }
  [ ! -e $TMP/denied.txt ] && grep -q '^Done: Not run: a person refused this call: not now' $TMP/stdout"
run_luagent approve
check "approve without a RUN: exit 2 with the usage" sh -c "[ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'usage: luagent approve RUN' $TMP/stderr"

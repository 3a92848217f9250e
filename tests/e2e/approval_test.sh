# Approvals asked of a person on a terminal: a pseudo-terminal answers y, n, e
# (with an $EDITOR that edits the file, and one that first leaves broken JSON)
# and a; `script` from util-linux too; no terminal refuses unless --yes;
# --record keeps the decisions and --replay answers from them; an approve
# function that raises stops the run with one error, <close> handlers run,
# the trace keeps it. The model is the fake provider (a test double).
. tests/e2e/lib.sh
export LUAGENT_RUNS_DIR="$TMP/runs"
RECIPE=tests/e2e/approval_recipe.lua
export EDITOR="$(pwd)/tests/e2e/approval_editor.sh"

queue() { "$LUAGENT" run -q tests/e2e/approval_script.lua -- "$1-$$" "$2"; }
last_trace() { ls -td "$LUAGENT_RUNS_DIR"/*approval_recipe*/trace.jsonl | head -1; }
# run_on_tty ANSWER... -- COMMAND...: on a pseudo-terminal that types the answers, stdin
# /dev/null, stdout and stderr in $TMP (the terminal shows only the prompts: $TMP/tty.log)
run_on_tty() {
  python3 tests/e2e/pty_answer.py --log "$TMP/tty.log" --stdin /dev/null --stdout "$TMP/stdout" \
    --stderr "$TMP/stderr" "$@"
  echo $? > "$TMP/status"
}

base=$(queue y once)
run_on_tty y -- "$LUAGENT" run -q "$RECIPE" --set "base_url=$base"
check "y: the prompt shows the tool and its arguments as pretty JSON, and the call runs" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'cleaner wants to call shell (turn 1) with:' $TMP/tty.log &&
  grep -q '^  \"command\": \"rm -rf data\"' $TMP/tty.log && grep -q '\[y\]es / \[n\]o / \[e\]dit / \[a\]lways for this tool' $TMP/tty.log &&
  grep -q '^RESULT: ran: rm -rf data\$' $TMP/stdout"
check "y: the decision is in the trace (approval, by person)" sh -c "
  grep '\"type\":\"approval\"' $(last_trace) | grep '\"decision\":\"approved\"' | grep -q '\"by\":\"person\"'"

base=$(queue n once)
run_on_tty "n too risky" -- "$LUAGENT" run -q "$RECIPE" --set "base_url=$base"
check "n REASON: the call does not run and the model reads the reason" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q '^RESULT: Not run: the call was refused: too risky\$' $TMP/stdout"

base=$(queue e once)
export EDIT_MODE=ls
run_on_tty e -- "$LUAGENT" run -q "$RECIPE" --set "base_url=$base"
check "e: the arguments edited in \$EDITOR run instead, and the result says so" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] &&
  grep -q '^RESULT: (The arguments were changed before the call ran: {\"command\":\"ls data\"}) | ran: ls data\$' $TMP/stdout &&
  grep '\"type\":\"approval\"' $(last_trace) | grep -q '\"changed_arguments\":{\"command\":\"ls data\"}'"

base=$(queue broken once)
rm -f "$TMP/edits"
export EDIT_MODE=broken EDIT_COUNT="$TMP/edits"
run_on_tty e e -- "$LUAGENT" run -q "$RECIPE" --set "base_url=$base"
check "e: arguments left as invalid JSON ask again; a second edit that fixes them runs" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ \"\$(cat $TMP/edits)\" = 2 ] &&
  grep -q 'The edited arguments cannot be used: not valid JSON' $TMP/tty.log &&
  [ \$(grep -c 'for this tool' $TMP/tty.log) -eq 2 ] && grep -q 'ran: ls data\$' $TMP/stdout"

base=$(queue a twice)
run_on_tty a -- "$LUAGENT" run -q "$RECIPE" --set "base_url=$base"
check "a: the tool is approved for the rest of the run (one prompt, two calls run)" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ \$(grep -c 'for this tool' $TMP/tty.log) -eq 1 ] &&
  grep -q '^RESULT: ran: rm -rf data\$' $TMP/stdout && grep -q '^RESULT: ran: rm -rf cache\$' $TMP/stdout &&
  grep '\"type\":\"approval\"' $(last_trace) | grep -q '\"by\":\"always\"'"

base=$(queue ctrlc once)
run_on_tty "$(printf '\003')" -- "$LUAGENT" run -q "$RECIPE" --set "base_url=$base"
check "Ctrl-C at the prompt stops the run (130); its <close> handlers run" sh -c "
  [ \"\$(cat $TMP/status)\" = 130 ] && grep -q '^CLOSED\$' $TMP/stdout && ! grep -q '^RESULT' $TMP/stdout"

base=$(queue script once)
printf 'y\n' | script -qfec "\"$LUAGENT\" run -q $RECIPE --set base_url=$base >$TMP/stdout 2>$TMP/stderr" /dev/null > "$TMP/tty.log"
check "y typed through script(1): the call runs" sh -c "
  grep -q 'for this tool' $TMP/tty.log && grep -q '^RESULT: ran: rm -rf data\$' $TMP/stdout"

base=$(queue notty once)
setsid -w "$LUAGENT" run -q "$RECIPE" --set "base_url=$base" < /dev/null > "$TMP/stdout" 2> "$TMP/stderr"
echo $? > "$TMP/status"
check "no terminal: the call is refused with a clear message, once on stderr and to the model" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] &&
  grep -q '^RESULT: Not run: approval needed but no terminal: rerun with --yes or in a terminal.\$' $TMP/stdout &&
  [ \$(grep -c 'approval needed but no terminal: rerun with --yes or in a terminal' $TMP/stderr) -eq 1 ]"

base=$(queue yes twice)
setsid -w "$LUAGENT" run -q "$RECIPE" --yes --set "base_url=$base" < /dev/null > "$TMP/stdout" 2> "$TMP/stderr"
check "--yes without a terminal approves every call, by --yes in the trace" sh -c "
  [ \$(grep -c '^RESULT: ran: ' $TMP/stdout) -eq 2 ] && [ ! -s $TMP/stderr ] &&
  [ \$(grep '\"type\":\"approval\"' $(last_trace) | grep -c '\"by\":\"--yes\"') -eq 2 ]"

base=$(queue rec twice)
export EDIT_MODE=ls EDIT_COUNT=
run_on_tty e "n not the cache" -- "$LUAGENT" run -q "$RECIPE" --record "$TMP/rec.jsonl" --set "base_url=$base"
cp "$TMP/stdout" "$TMP/recorded.out"
check "--record keeps each decision as an approval line of the recording" sh -c "
  [ \$(grep -c '^{\"approval\":' $TMP/rec.jsonl) -eq 2 ] && [ \$(grep -c '\"endpoint\"' $TMP/rec.jsonl) -eq 3 ] &&
  grep -q 'ran: ls data' $TMP/recorded.out && grep -q 'refused: not the cache' $TMP/recorded.out"
setsid -w "$LUAGENT" run -q "$RECIPE" --replay "$TMP/rec.jsonl" --set "base_url=http://127.0.0.1:1/v1" \
  < /dev/null > "$TMP/stdout" 2> "$TMP/stderr"
echo $? > "$TMP/status"
check "--replay: the recorded decisions answer (no terminal, no provider), same output" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && diff $TMP/recorded.out $TMP/stdout && [ ! -s $TMP/stderr ] &&
  [ \$(grep '\"type\":\"approval\"' $(last_trace) | grep -c '\"by\":\"replay\"') -eq 2 ]"

base=$(queue raise once)
run_luagent run -q "$RECIPE" --set "base_url=$base" --set approve=raise
check "an approve function that raises: one error naming the tool, <close> handlers run, the trace keeps it" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q '^CLOSED\$' $TMP/stdout && ! grep -q '^RESULT' $TMP/stdout &&
  grep -q 'agent cleaner: the approve function raised for the tool shell: the policy service is unreachable' $TMP/stderr &&
  grep '\"type\":\"approval\"' $(last_trace) | grep -q '\"decision\":\"error\"' &&
  tail -1 $(last_trace) | grep '\"type\":\"run_end\"' | grep -q 'the policy service is unreachable'"

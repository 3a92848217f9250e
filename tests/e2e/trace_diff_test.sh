# luagent trace diff: two small runs against the fake provider (a test double)
# that differ in one instruction (and so in the answer the double is scripted
# to give, and in the report written from it), compared step by step; the same
# run twice compares as the same (tool timings left out); bad input exits 2
# naming the file.
. tests/e2e/lib.sh

# script_queue QUEUE FINAL: the fake provider answers a tool call, then FINAL; prints the base URL
cat > "$TMP/script.lua" <<'LUA'
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local queue, final = ...
fake.script(queue, {
  {text = "Let me multiply.", tool_calls = {{id = "call_1", name = "multiply", arguments = {a = 6, b = 7}}}},
  {text = final},
})
print(fake.base_url(queue, "openai"))
LUA
QUEUE="trace-diff-$$"
# run_recipe NAME FINAL [--set ...]: one run into $TMP/NAME/<run-id>/
run_recipe() {
  name=$1; final=$2; shift 2
  url=$("$LUAGENT" run "$TMP/script.lua" "$QUEUE" "$final") || return 1
  LUAGENT_RUNS_DIR="$TMP/$name" "$LUAGENT" run -q tests/e2e/trace_diff_recipe.lua --set "base_url=$url" "$@" \
    > "$TMP/$name.out" 2>&1 || { cat "$TMP/$name.out"; return 1; }
  ls -d "$TMP/$name"/*/ | head -1
}
A=$(TOOK_SECONDS=0.11 run_recipe a "The answer is 42.") && A2=$(TOOK_SECONDS=0.22 run_recipe a2 "The answer is 42.") &&
  B=$(run_recipe b "The answer is 42!" --set "instructions=Be brief.") || { echo "not ok - trace_diff_test: setup runs"; exit 0; }

run_luagent trace diff "$A" "$A2"
check "the same run twice: exit 0, 'the runs are the same'" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q '^the runs are the same' $TMP/stdout || { cat $TMP/stdout $TMP/stderr; exit 1; }"
check "the same run twice: requests, tool calls, answer and outputs all the same" sh -c "
  grep -q '^settings: same' $TMP/stdout && grep -q '^model requests: 2, the same' $TMP/stdout &&
  grep -q '^tool calls: 1, the same' $TMP/stdout && grep -q '^final answer: same' $TMP/stdout &&
  grep -q '^outputs: 2 files, the same' $TMP/stdout || { cat $TMP/stdout; exit 1; }"
check "the same run twice differed only in the timing its tool reported ('took N s'), left out" sh -c "
  grep -q 'took 0.11 s' ${A}trace.jsonl && ! grep -q 'took 0.22 s' ${A}trace.jsonl &&
  grep -q 'took 0.22 s' ${A2}trace.jsonl && [ \"\$(cat $TMP/status)\" = 0 ]"

run_luagent trace diff "$A" "$B"
check "another instruction: exit 1 and what differs, in one summary line" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] &&
  grep -q '^the runs differ in: settings, prompts, model requests, final answer, outputs\$' $TMP/stdout || { cat $TMP/stdout; exit 1; }"
check "the setting that differs, with both values" sh -c "
  grep -A2 '^  instructions\$' $TMP/stdout | grep -q 'B: \"Be brief.\"'"
check "each model request that differs names the first field path that does" sh -c "
  grep -q '^model requests: 2, 2 different' $TMP/stdout &&
  grep -A2 '^  #1 differs at request.messages\[1\].content\$' $TMP/stdout | grep -q 'A: \"Multiply with the tool' &&
  grep -q '^  #2 differs at request.messages\[1\].content\$' $TMP/stdout"
check "the tool call (name and arguments) and its result are the same" sh -c "grep -q '^tool calls: 1, the same' $TMP/stdout"
check "the final answer as a unified diff" sh -c "
  grep -q '^final answer: different' $TMP/stdout && grep -q '^  --- A final answer' $TMP/stdout &&
  grep -q '^  -The answer is 42\.\$' $TMP/stdout && grep -q '^  +The answer is 42!\$' $TMP/stdout"
check "outputs from the manifests: the report diffed, the csv the same" sh -c "
  grep -q '^outputs: 2 files, 1 different' $TMP/stdout &&
  grep -q '^  output/report.md: different (+1 -1 lines)' $TMP/stdout &&
  grep -q '^    +++ B/output/report.md' $TMP/stdout && ! grep -q 'data.csv' $TMP/stdout"

run_luagent trace diff "${A}trace.jsonl" "$B"
check "a trace.jsonl file and a run folder compare alike" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q 'output/report.md: different' $TMP/stdout"

echo '{"luagent_recording":1}' > "$TMP/recording.jsonl"
run_luagent trace diff "$A" "$TMP/recording.jsonl"
check "a file that is not a trace: exit 2, named, with what to give" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'recording.jsonl:1: not a trace event' $TMP/stderr &&
  grep -q 'give a trace.jsonl file or a run folder' $TMP/stderr && [ ! -s $TMP/stdout ]"
run_luagent trace diff "$TMP/missing.jsonl" "$A"
check "a missing file: exit 2, named" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'missing.jsonl: no such file or folder' $TMP/stderr"
run_luagent trace diff "${A}output" "$A"
check "a folder without a trace: exit 2, named" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'output is a folder without a trace.jsonl' $TMP/stderr"
run_luagent trace diff "$A"
check "one argument: usage, exit 2" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'luagent trace diff A B' $TMP/stderr"

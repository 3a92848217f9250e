# needs: docker
# Agents from the command line: traces, record and replay, Ctrl-C.
. tests/e2e/lib.sh
export LUAGENT_RUNS_DIR="$TMP/runs"
RECIPE=tests/e2e/fake_agent_recipe.lua

script_queue() { "$LUAGENT" run -q tests/e2e/script_fake.lua -- "$1" "$2"; }
requests_of() { "$LUAGENT" run -q /dev/stdin <<LUA
package.path = "tests/lua/?.lua;" .. package.path
print(#require("fake_provider_client").requests("$1"))
LUA
}

q=rec-$$
base=$(script_queue "$q" calculator)
run_luagent run "$RECIPE" -q --record "$TMP/rec.jsonl" --set "base_url=$base" --set "extra.api_key=sk-settings-secret-98765"
cp "$TMP/stdout" "$TMP/recorded.out"
check "a recorded run answers through the fake provider and the real sandbox" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'OUTPUT: The answer is 42.' $TMP/stdout && grep -q 'TOOL: exit code 0 (took t) | stdout: | 42' $TMP/stdout"
run=$(ls -td "$LUAGENT_RUNS_DIR"/*fake_agent_recipe* | head -1)
check "a credential given with --set is redacted in the trace" sh -c "
  ! grep -q 'sk-settings-secret-98765' $run/trace.jsonl $TMP/stderr && grep -q 'redacted' $run/trace.jsonl"
check "the recording holds both model exchanges, without the key" sh -c "
  [ \$(grep -c '\"endpoint\"' $TMP/rec.jsonl) -eq 2 ] && ! grep -q 'sk-fake-key-for-tests' $TMP/rec.jsonl"

run_luagent run "$RECIPE" -q --replay "$TMP/rec.jsonl" --set "base_url=http://127.0.0.1:1/v1"
check "replay reproduces the same outputs with no provider reachable" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && diff $TMP/recorded.out $TMP/stdout"
seen=$(requests_of "$q")
check "the provider saw no request during the replay (2, both from the recording run)" [ "$seen" -eq 2 ]
run=$(ls -td "$LUAGENT_RUNS_DIR"/*fake_agent_recipe* | head -1)
check "the replayed run's trace says it replayed" grep -q '"replay":' "$run/trace.jsonl"

run_luagent run "$RECIPE" -q --replay "$TMP/rec.jsonl" --set "base_url=http://127.0.0.1:1/v1" --set "instructions=Be brief."
check "replay with a changed instruction stops with a diff naming the field" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q 'differs from the recording' $TMP/stderr &&
  grep -q 'messages\[1\].content' $TMP/stderr && grep -q 'Be brief.' $TMP/stderr"

# The run's start chooses record/replay and opens the trace; nothing is switched on by a first event.
cat > "$TMP/quiet.lua" <<'LUA'
print("STARTED")
local m = luagent.model.openai{model = "gpt-4o-mini", base_url = "http://127.0.0.1:1/v1", retry = luagent.retry.none}
print(m:complete{messages = {{role = "user", content = "hi"}}} == nil and "NO ANSWER" or "ANSWER")
LUA
run_luagent run "$TMP/quiet.lua" -q --replay "$TMP/no-such-recording.jsonl"
check "a recording that cannot be read stops the run at its start, before the recipe runs (exit 2: usage)" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q -- '--replay: cannot open $TMP/no-such-recording.jsonl' $TMP/stderr &&
  ! grep -q STARTED $TMP/stdout"
printf 'print("nothing traced")\n' > "$TMP/untraced.lua"
mkdir -p "$TMP/empty-runs"
LUAGENT_RUNS_DIR="$TMP/empty-runs" run_luagent run "$TMP/untraced.lua"
check "a run that does nothing traced writes no run folder and prints no run line" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ -z \"\$(ls $TMP/empty-runs)\" ] && [ ! -s $TMP/stderr ]"
LUAGENT_RUNS_DIR="$TMP/empty-runs" run_luagent run "$TMP/quiet.lua" --json
check "--json: run_start comes just before the run's first event, run_end last" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && head -1 $TMP/stdout | grep -q STARTED &&
  sed -n 2p $TMP/stdout | grep -q '\"type\":\"run_start\"' && sed -n 3p $TMP/stdout | grep -q '\"type\":\"model_request\"' &&
  tail -1 $TMP/stdout | grep -q '\"type\":\"run_end\"' &&
  [ \$(grep -c '\"type\":\"run_start\"' $TMP/empty-runs/*/trace.jsonl) -eq 1 ]"

q=hang-$$
base=$(script_queue "$q" hang)
label="ctrlc-$$"
"$LUAGENT" run "$RECIPE" --set "base_url=$base" --set "label=$label" > "$TMP/stdout" 2> "$TMP/stderr" &
pid=$!
for i in $(seq 1 150); do grep -q 'turn 2 ' "$TMP/stderr" 2>/dev/null && break; sleep 0.1; done
sleep 0.3
kill -INT $pid
wait $pid
echo $? > "$TMP/status"
run=$(ls -td "$LUAGENT_RUNS_DIR"/*fake_agent_recipe* | head -1)
check "Ctrl-C during a model call: exit 130, no container left, the trace kept and closed" sh -c "
  [ \"\$(cat $TMP/status)\" = 130 ] && [ \$(docker ps -aq --filter label=luagent.test=$label | wc -l) -eq 0 ] &&
  grep -q '\"type\":\"model_request\"' $run/trace.jsonl && grep -q '\"status\":\"interrupted\"' $run/trace.jsonl"
check "... and what the agent had saved before Ctrl-C is kept" sh -c "[ \"\$(cat $run/output/partial.txt)\" = 'so far' ]"

# Ctrl-C and SIGTERM in the middle of a tool (a plain Lua function, no
# sandbox): the cancellation goes through the tool and the agent loop however
# the tool treats it — no model request after the signal, <close> handlers
# run, the trace ends with run_end "interrupted", exit 128 + the signal,
# within 2 s of it. The model is tests/fake_provider.py (a test double).
. tests/e2e/lib.sh
export LUAGENT_RUNS_DIR="$TMP/runs"
RECIPE=tests/e2e/cancel_recipe.lua

script() { "$LUAGENT" run -q /dev/stdin -- "$1" <<'LUA'
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local queue = ...
local nap = {tool_calls = {{name = "nap", arguments = {}}}}
fake.script(queue, {nap, nap, nap, {text = "Rested."}})
print(fake.base_url(queue, "openai"))
LUA
}
now() { date +%s.%N; }

# interrupt MODE SIGNAL: runs the recipe, sends SIGNAL while the first nap naps
interrupt() {
  q=cancel-$1-$2-$$
  base=$(script "$q")
  rm -rf "$LUAGENT_RUNS_DIR"
  "$LUAGENT" run "$RECIPE" --set "base_url=$base" --set "mode=$1" > "$TMP/stdout" 2> "$TMP/stderr" &
  pid=$!
  for i in $(seq 1 100); do grep -q NAPPING "$TMP/stdout" 2>/dev/null && break; sleep 0.05; done
  sleep 0.5
  sent=$(now)
  kill -"$2" $pid
  wait $pid
  echo $? > "$TMP/status"
  took=$(awk -v a="$sent" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
  run=$(ls -d "$LUAGENT_RUNS_DIR"/*)
  seen=$(fake_requests "$q")
}

# outcome STATUS: what every interrupted run must show
outcome() {
  [ "$(cat "$TMP/status")" = "$1" ] || { echo "status $(cat "$TMP/status"), expected $1"; cat "$TMP/stderr"; return 1; }
  [ "$seen" -eq 1 ] || { echo "the provider got $seen requests: the model was asked again after the signal"; return 1; }
  awk -v t="$took" 'BEGIN { exit !(t < 2) }' || { echo "exited $took s after the signal"; return 1; }
  tail -1 "$run/trace.jsonl" | grep -q '"type":"run_end"' && tail -1 "$run/trace.jsonl" | grep -q '"status":"interrupted"' ||
    { echo "the trace does not end with run_end interrupted:"; tail -2 "$run/trace.jsonl"; return 1; }
  grep -q '^closed after: cancelled: ' "$run/output/closed.txt" || { echo "the <close> handler did not run"; return 1; }
  ! grep -q 'the nap was interrupted' "$run/trace.jsonl" || { echo "a tool result hides the cancellation"; return 1; }
  ! grep -q STOPPED "$TMP/stdout" || { echo "the recipe went on after agent:run"; return 1; }
}

interrupt raise INT
check "Ctrl-C in a tool that lets the cancellation through: no model call after it, exit 130 within 2 s, trace interrupted" outcome 130
interrupt swallow INT
check "Ctrl-C in a tool that swallows the cancellation: the agent still stops, no model call after it, exit 130 within 2 s" outcome 130
interrupt return INT
check "Ctrl-C in a tool that returns the cancellation as nil, err: the agent stops, exit 130 within 2 s" outcome 130
interrupt swallow TERM
check "SIGTERM in a tool: the same, exit 143 within 2 s (128 + 15)" outcome 143

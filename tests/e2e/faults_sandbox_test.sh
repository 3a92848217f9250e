# needs: docker
# When things go wrong with a sandbox open. Ctrl-C in the middle of a sandbox
# command: the run stops within 2 s, the outputs are saved, the sandbox is
# removed, the trace ends "interrupted". A run whose sandbox cannot even be
# made still leaves its trace. The model is tests/fake_provider.py (a test double).
. tests/e2e/lib.sh
export LUAGENT_RUNS_DIR="$TMP/runs"
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
left() { docker ps -aq --filter "label=luagent.test=$1" | wc -l; }
left_volumes() { docker volume ls -q --filter "label=luagent.test=$1" | wc -l; }
# what a failed check left behind (only this test's own label)
remove_left() {
  docker ps -aq --filter "label=luagent.test=$1" | xargs -r docker rm -f > /dev/null
  docker volume ls -q --filter "label=luagent.test=$1" | xargs -r docker volume rm > /dev/null
}

# run_until MARKER SIGNAL ARGS...: runs luagent, sends SIGNAL 0.5 s after MARKER is on stdout
run_until() {
  marker=$1 sig=$2; shift 2
  rm -rf "$LUAGENT_RUNS_DIR"
  "$LUAGENT" "$@" > "$TMP/stdout" 2> "$TMP/stderr" &
  pid=$!
  for i in $(seq 1 300); do grep -q "$marker" "$TMP/stdout" "$TMP/stderr" 2>/dev/null && break; sleep 0.05; done
  sleep 0.5
  sent=$(now)
  kill -"$sig" $pid
  wait $pid
  echo $? > "$TMP/status"
  took=$(since "$sent")
  run=$(ls -d "$LUAGENT_RUNS_DIR"/* | head -1)
}

# interrupted STATUS LABEL: exit status, time, trace, outputs, no sandbox left
interrupted() {
  [ "$(cat "$TMP/status")" = "$1" ] || { echo "status $(cat "$TMP/status"), expected $1"; cat "$TMP/stderr"; return 1; }
  awk -v t="$took" 'BEGIN { exit !(t < 2) }' || { echo "exited $took s after the signal"; cat "$TMP/stderr"; return 1; }
  tail -1 "$run/trace.jsonl" | grep -q '"type":"run_end".*"status":"interrupted"\|"status":"interrupted".*"type":"run_end"' ||
    { echo "the trace does not end with run_end interrupted:"; tail -2 "$run/trace.jsonl"; return 1; }
  [ "$(cat "$run/output/kept.txt" 2>/dev/null)" = kept ] || { echo "the saved output is missing"; ls -R "$run"; return 1; }
  [ "$(left "$2")" -eq 0 ] || { echo "a sandbox is left"; docker ps -a --filter "label=luagent.test=$2"; return 1; }
  [ "$(left_volumes "$2")" -eq 0 ] || { echo "a workspace volume is left"; docker volume ls --filter "label=luagent.test=$2"; return 1; }
}

# ---- an agent's run_python, interrupted ----
cat > "$TMP/agent.lua" <<'LUA'
local s = luagent.settings
local m = luagent.model.openai{model = "gpt-4o-mini", base_url = s.base_url, api_key = "sk-fake-key-for-tests",
                               retry = luagent.retry.none}
local box <close> = assert(luagent.sandbox.open{labels = {["luagent.test"] = s.label},
                                                save = {from = "output", to = luagent.run_dir("output")}})
assert(box:exec("mkdir -p output && echo kept > output/kept.txt"))
local a = luagent.agent.new{name = "sleeper", model = m, tools = luagent.tools.standard(box), max_turns = 4}
print("STOPPED: " .. a:run("Sleep.").stopped_by)
LUA
q=cancel-box-$$
base=$("$LUAGENT" run -q /dev/stdin -- "$q" <<'LUA'
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local python = {tool_calls = {{name = "run_python", arguments = {code = "print('SLEEPING', flush=True); import time; time.sleep(30)"}}}}
local shell = {tool_calls = {{name = "run_shell", arguments = {command = "sleep 30"}}}}
fake.script((...), {python, shell, {text = "Done."}})
print(fake.base_url((...), "openai"))
LUA
)
label=cancel-agent-$$
run_until "turn 1 " INT run "$TMP/agent.lua" --set "base_url=$base" --set "label=$label"
seen=$(fake_requests "$q")
agent_interrupted() {
  [ "$seen" -eq 1 ] || { echo "the provider got $seen requests: the model was asked again after the signal"; return 1; }
  interrupted 130 "$label"
}
check "Ctrl-C during an agent's run_python: exit 130 within 2 s, no model call after it, trace interrupted, outputs saved, sandbox removed" \
  agent_interrupted
remove_left "$label"

# ---- the issue's repro: box:python, then box:exec, in a recipe ----
cat > "$TMP/box.lua" <<'LUA'
local box <close> = assert(luagent.sandbox.open{labels = {["luagent.test"] = luagent.settings.label},
                                                save = {from = "output", to = luagent.run_dir("output")}})
assert(box:exec("mkdir -p output && echo kept > output/kept.txt"))
print("PYTHON"); io.stdout:flush()
print("PY", box:python("import time; time.sleep(30)"))
print("AFTER PY"); io.stdout:flush()
print("EXEC", box:exec("sleep 30"))
LUA
label=cancel-repro-$$
run_until PYTHON INT run "$TMP/box.lua" --set "label=$label"
repro_interrupted() {
  ! grep -q 'AFTER PY' "$TMP/stdout" || { echo "the recipe went on after box:python:"; cat "$TMP/stdout"; return 1; }
  interrupted 130 "$label"
}
check "Ctrl-C during box:python: the recipe stops there (no box:exec after it), exit 130 within 2 s, outputs saved, sandbox and volume removed" \
  repro_interrupted
remove_left "$label"

# ---- a run that fails before its first event still has a trace ----
rm -rf "$LUAGENT_RUNS_DIR"
run_luagent run recipes/energy_anomaly.lua --set model.provider=scripted --set sandbox.image=nope:latest
early=$(ls -d "$LUAGENT_RUNS_DIR"/* | head -1)
check "a missing sandbox image: exit 1, and the run's folder has its trace (run_start, run_end failed with the engine's words)" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && head -1 $early/trace.jsonl | grep -q '\"type\":\"run_start\"' &&
  tail -1 $early/trace.jsonl | grep -q '\"type\":\"run_end\"' && tail -1 $early/trace.jsonl | grep -q '\"status\":\"failed\"' &&
  tail -1 $early/trace.jsonl | grep -q 'nope:latest'"

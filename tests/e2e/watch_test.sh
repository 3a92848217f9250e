# luagent run RECIPE --watch: a rerun per edit of the YAML or of a module the
# recipe requires, from the cache up to the change, with the diff of the final
# answer and the outputs; Ctrl-C ends it with 130 and nothing left running.
# With the scripted driver, which ignores prompts, an edit of the
# instructions or the task is shown word by word.
# The model is the fake provider (tests/fake_provider.py, a test double); no sandbox.
. tests/e2e/lib.sh
if ! "$LUAGENT" help | grep -q -- '--cache '; then
  # watch runs each rerun with --cache: the model-call cache must be in the build
  echo "ok - $SUITE # SKIP this build has no model-call cache (luagent run --cache)"
  exit 0
fi
export LUAGENT_RUNS_DIR="$TMP/runs"
export LUAGENT_CANCEL_GRACE=5
FAKE="http://127.0.0.1:$FAKE_PROVIDER_PORT"
q=watch-$$
W="$TMP/recipe"
mkdir -p "$W"

# An agent whose tool comes from a module beside the recipe: turn 1 calls the
# tool, turn 2 answers with its whole request (the fake provider's echo), so
# the answer changes with the tool's result. The outputs are written on the
# host with a manifest.json as luagent.outputs writes it.
cat > "$W/r.lua" <<'LUA'
local cfg = luagent.config("r.yaml")
local helper = require "watch_helper"
local fs, sys, json = luagent.fs, luagent.sys, luagent.json
local m = luagent.model.openai{model = "gpt-4o-mini", base_url = cfg.base_url, api_key = "sk-fake-key-for-tests",
                               retry = luagent.retry.none}
local analyst = luagent.agent.new{name = "watched", instructions = cfg.instructions, model = m,
                                  tools = {helper.tool(cfg)}, max_turns = 4}
local r = analyst:run(cfg.task)
if cfg.slow then
  print("SLEEPING"); io.stdout:flush()
  luagent.sleep(60)
end
local out = luagent.run_dir("output")
local files = {
  ["report.md"] = ("# Report\nunit: %s\nvalue: %d\nsame line\n"):format(cfg.unit, helper.VALUE),
  ["data.bin"] = ("\0\1"):rep(helper.VALUE),
}
if cfg.extra then files["extra.txt"] = "only with extra\n" end
local manifest = {}
for name, data in pairs(files) do
  assert(fs.write(out .. "/" .. name, data))
  local sha, size = sys.sha256_file(out .. "/" .. name)
  manifest[#manifest + 1] = {path = "output/" .. name, size = size, sha256 = sha}
end
table.sort(manifest, function(a, b) return a.path < b.path end)
assert(fs.write(luagent.run_dir() .. "/manifest.json", json.encode({files = json.array(manifest)})))
print("ANSWER " .. tostring(r.output):sub(1, 40))
LUA
cat > "$W/watch_helper.lua" <<'LUA'
local helper = {VALUE = 7}
function helper.tool(cfg)
  return {name = "lookup", description = "the reading", parameters = {type = "object", properties = {}},
          handler = function() return ("value: %d %s"):format(helper.VALUE, cfg.unit) end}
end
return helper
LUA
cat > "$W/r.yaml" <<'YAML'
instructions: Look the reading up, then report it.
task: What is the reading?
unit: kWh
YAML

script() { curl -s -X POST "$FAKE/_script?queue=$q" -H 'content-type: application/json' -d "$1" > /dev/null; }
requests() { curl -s "$FAKE/_requests?queue=$q" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'; }
TOOL='{"tool_calls": [{"id": "call_1", "name": "lookup", "arguments": {}}]}'
ECHO='{"echo": true}'

# wait_for PATTERN FILE [SECONDS]: until the file has the pattern
wait_for() {
  i=0
  while ! grep -q -- "$1" "$2" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt $((${3:-30} * 10)) ] && return 1
    sleep 0.1
  done
}

script "[$TOOL, $ECHO]"
"$LUAGENT" run "$W/r.lua" --watch --set "base_url=$FAKE/q/$q/v1" > "$TMP/out" 2> "$TMP/err" &
WATCHER=$!

wait_for "watch: watching" "$TMP/out"
n=$(requests)
check "the first run answers and lists what it watches: the recipe, its YAML, its module" sh -c "
  grep -q 'watch: run 1 ok' $TMP/out && grep -q 'outputs: output/data.bin, output/report.md' $TMP/out &&
  grep 'watch: watching 3 files' $TMP/out | grep 'r.lua' | grep 'r.yaml' | grep -q 'watch_helper.lua' && [ $n -eq 2 ]"

# 1. the YAML: the unit changes the tool's result, so turn 2 changes, turn 1 does not
script "[$ECHO]"
sleep 0.5
sed -i 's/unit: kWh/unit: MWh/' "$W/r.yaml"
wait_for "watch: run 2 " "$TMP/out"
wait_for "watch: unchanged" "$TMP/out" 5
n=$(requests)
check "a YAML edit reruns; turn 1 comes from the cache, only turn 2 goes out" sh -c "
  grep -q 'watch: changed: .*r.yaml; running again' $TMP/out && grep -q 'watch: run 2 ok' $TMP/out &&
  [ $n -eq 3 ] && grep -q '1 from cache, 1 live' $TMP/err"
check "the rerun prints the diff of the final answer and of the text output, sizes of the rest" sh -c "
  grep -q '^--- final answer (run 1)' $TMP/out && grep -q '^+++ final answer (run 2)' $TMP/out &&
  grep -q '^-.*value: 7 kWh' $TMP/out && grep -q '^+.*value: 7 MWh' $TMP/out &&
  grep -q '^--- output/report.md (run 1)' $TMP/out && grep -q '^-unit: kWh' $TMP/out && grep -q '^+unit: MWh' $TMP/out &&
  ! grep -q '^-same line' $TMP/out && grep -q 'watch: unchanged: prompts, output/data.bin' $TMP/out"

# 2. the module the recipe requires
script "[$ECHO]"
sed -i 's/VALUE = 7/VALUE = 8/' "$W/watch_helper.lua"
wait_for "watch: run 3 " "$TMP/out"
sleep 1.5
n=$(requests)
check "a module edit reruns once, from the cache up to the changed tool result" sh -c "
  grep -q 'watch: changed: .*watch_helper.lua; running again' $TMP/out && grep -q 'watch: run 3 ok' $TMP/out &&
  [ $n -eq 4 ] && [ \$(grep -c 'running again' $TMP/out) -eq 2 ] && ! grep -q 'watch: run 4' $TMP/out"
check "the third run's diff: the value in the answer and the report, the binary output by size and sha256" sh -c "
  grep -q '^+.*value: 8 MWh' $TMP/out && grep -q '^+value: 8' $TMP/out &&
  grep -q 'data.bin.*differ.*14 bytes.*16 bytes' $TMP/out"

# 3. Ctrl-C during a run (its model calls all come from the cache now): the
# run is interrupted, the watcher exits 130
printf 'slow: true\n' >> "$W/r.yaml"
wait_for "SLEEPING" "$TMP/out"
kill -INT $WATCHER
wait $WATCHER
status=$?
check "Ctrl-C during a run: the watcher exits 130" [ "$status" = 130 ]
check "the interrupted run ended as interrupted (its trace says so) and the watcher said it stopped" sh -c "
  grep -q 'watch: stopped' $TMP/out && tail -1 \$(ls -td $LUAGENT_RUNS_DIR/*/ | head -1)trace.jsonl | grep -q '\"status\":\"interrupted\"'"
n=$(requests)
left=$(pgrep -f "$W/r.lua")
check "nothing is left running; the run made no request (all from the cache)" sh -c "[ -z '$left' ] && [ $n -eq 4 ]"

# 4. outputs that come and go; Ctrl-C between runs
sed -i '/slow: true/d' "$W/r.yaml"
"$LUAGENT" run "$W/r.lua" --set "base_url=$FAKE/q/$q/v1" --watch -q > "$TMP/out2" 2> "$TMP/err2" &
WATCHER=$!
wait_for "watch: watching" "$TMP/out2"
echo 'extra: true' >> "$W/r.yaml"
wait_for "watch: run 2 " "$TMP/out2"
wait_for "watch: unchanged" "$TMP/out2" 5
sed -i '/extra: true/d' "$W/r.yaml"
wait_for "watch: run 3 " "$TMP/out2"
wait_for "output/extra.txt: gone" "$TMP/out2" 5
check "a new output is 'new', one no longer made is 'gone'; the other options reach the run (-q)" sh -c "
  grep -q '^output/extra.txt: new (16 bytes)' $TMP/out2 && grep -q '^output/extra.txt: gone' $TMP/out2 &&
  ! grep -q 'turn 1' $TMP/err2"
kill -INT $WATCHER
wait $WATCHER
status=$?
left=$(pgrep -f "$W/r.lua")
check "Ctrl-C while watching: exit 130, nothing left running" sh -c "
  [ $status = 130 ] && grep -q 'watch: stopped' $TMP/out2 && [ -z '$left' ]"

# 5. the scripted driver (no model configured, the default without an API
# key) ignores the prompt, so the answer stays the same: an edit of the
# instructions or the task is shown as a word diff, never just "unchanged"
S="$TMP/scripted"
mkdir -p "$S"
cat > "$S/s.lua" <<'LUA'
local cfg = luagent.config("s.yaml")
local llm = luagent.model.from_or_scripted(cfg.model, function()
  return luagent.model.scripted{{text = "3 errors, 1 warning."}}
end)
local triage = luagent.agent.new{name = "triage", instructions = cfg.instructions, model = llm, max_turns = 2}
print("Answer: " .. tostring(triage:run(cfg.task).output))
LUA
cat > "$S/s.yaml" <<'YAML'
instructions: You triage logs. Count the errors and warnings, then answer in one sentence.
task: Triage app.log.
YAML

env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u OPENAI_BASE_URL "$LUAGENT" run "$S/s.lua" --watch -q > "$TMP/out3" 2> "$TMP/err3" &
WATCHER=$!
wait_for "watch: watching" "$TMP/out3"
check "scripted: the first run is the scripted driver's (it says so)" sh -c "
  grep -q 'SCRIPTED RUN' $TMP/out3 && grep -q 'watch: run 1 ok' $TMP/out3"

sed -i 's/then answer in one sentence/then answer in two sentences/' "$S/s.yaml"
wait_for "watch: run 2 " "$TMP/out3"
wait_for "watch: unchanged" "$TMP/out3" 5
check "scripted: an edit of the instructions is a word diff, not only 'unchanged'" sh -c "
  grep -q 'instructions of triage' $TMP/out3 && grep -q 'answer in \[-one sentence.-\] {+two sentences.+}' $TMP/out3 &&
  ! grep -q 'watch: unchanged: .*prompts' $TMP/out3"
check "scripted: ... and watch says only the prompts changed, which the scripted driver ignores" sh -c "
  grep -q 'watch: only the prompts changed, and the scripted driver ignores them' $TMP/out3"

sed -i 's/task: Triage app.log./task: Triage app.log and db.log./' "$S/s.yaml"
wait_for "watch: run 3 " "$TMP/out3"
wait_for "task of triage" "$TMP/out3" 5
check "scripted: an edit of the task is a word diff too" sh -c "
  grep -q 'Triage \[-app.log.-\] {+app.log and db.log.+}' $TMP/out3"

printf 'unit: none\n' >> "$S/s.yaml"
wait_for "watch: run 4 " "$TMP/out3"
wait_for "watch: unchanged: prompts" "$TMP/out3" 5
check "scripted: an edit that leaves the prompts as they were says so: prompts unchanged" sh -c "
  tail -3 $TMP/out3 | grep -q 'watch: unchanged: prompts, final answer'"

kill -INT $WATCHER
wait $WATCHER
status=$?
check "scripted: Ctrl-C ends the watch (130)" [ "$status" = 130 ]

# the command line is checked before anything runs
run_luagent run "$W/r.lua" --watch --bogus
check "a bad option with --watch is a usage error (exit 2)" sh -c "
  [ \$(cat $TMP/status) = 2 ] && grep -q \"unknown option '--bogus'\" $TMP/stderr"

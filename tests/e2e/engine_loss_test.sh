# needs: docker
# The Docker engine goes away in the middle of a run: a second
# engine started by this test (tests/engines.sh: its own data root, exec root,
# pidfile and socket, no bridge; the main engine is never touched) is stopped
# while an agent's tool sleeps after it wrote the three outputs, and started
# again within the run's engine_grace (the outputs are saved) or only after
# the run (the run says they could not be read, exits 1, and the next run
# rescues them). With split = true the agent saves its outputs in one
# command and waits in the next: the outputs mirror (luagent.sandbox.mirror)
# has brought them home before the engine goes, so they are saved even with
# the workspace in memory, which the engine's stop empties. A sandbox.open that fails half-way (the engine dies at
# container create, a missing image) says the engine's words once and leaves
# nothing behind. The model is luagent.model.scripted.
. tests/e2e/lib.sh
export LUAGENT_RUNS_DIR="$TMP/runs"
. tests/e2e/second_engine.sh

cat > "$TMP/saver.lua" <<'LUA'
local s = luagent.settings
local outputs = require "luagent.outputs"
local required = {"output/a.txt", "output/b.txt", "output/c.txt"}
local opts = {image = "luagent-busybox:test", labels = {["luagent.test"] = s.label}, engine_grace = s.grace,
              save = {from = "output", to = luagent.run_dir("output"), required = required}}
if s.disk then opts.workspace_size = false end
local box <close> = assert(luagent.sandbox.open(opts))
local save = "mkdir -p output && echo a > output/a.txt && echo b > output/b.txt && echo c > output/c.txt"
local model = luagent.model.scripted(s.split and {
  {tool_calls = {{name = "run_shell", arguments = {command = save}}}},
  {tool_calls = {{name = "run_shell", arguments = {command = "sleep 40"}}}},
  {text = "Done."},
} or {
  {tool_calls = {{name = "run_shell", arguments = {command = save .. " && sleep 40"}}}},
  {text = "Done."},
})
local agent = luagent.agent.new{name = "saver", model = model, max_turns = 4,
                                tools = {luagent.tools.run_shell(box, {timeout = 120})}}
print("STOPPED: " .. agent:run("Save three files, then wait.").stopped_by)
local saved, err = outputs.collect(box, "output", luagent.run_dir("output"), {required = required})
if not saved then print("The outputs could not be saved: " .. err.message) return 1 end
if #saved.missing > 0 then print("MISSING: the agent did not save " .. table.concat(saved.missing, ", ")) return 1 end
print("SAVED " .. #saved.files)
LUA

# lose_engine LABEL AFTER ARGS...: runs the recipe; once its tool wrote the outputs (split=true:
# once the mirror brought them home and the next command, sleep 40, runs), stops the engine;
# starts it again AFTER seconds later ("end": once the run ended)
lose_engine() {
  label=$1 after=$2; shift 2
  rm -rf "$LUAGENT_RUNS_DIR"
  "$LUAGENT" run "$TMP/saver.lua" --set "label=$label" "$@" > "$TMP/stdout" 2> "$TMP/stderr" &
  pid=$!
  for _ in $(seq 1 200); do
    c=$(docker ps -q --filter "label=luagent.test=$label")
    case " $* " in
      *" split=true "*) [ -n "$c" ] && ls "$LUAGENT_RUNS_DIR"/*/output/c.txt > /dev/null 2>&1 &&
                        docker top "$c" 2>/dev/null | grep -q "sleep 40" && break ;;
      *) [ -n "$c" ] && docker exec "$c" test -s /workspace/output/c.txt 2>/dev/null && break ;;
    esac
    sleep 0.1
  done
  sh tests/engines.sh stop $ENGINE
  if [ "$after" = end ]; then
    wait $pid; echo $? > "$TMP/status"
    sh tests/engines.sh start $ENGINE > /dev/null
  else
    sleep "$after"; sh tests/engines.sh start $ENGINE > /dev/null
    wait $pid; echo $? > "$TMP/status"
  fi
  run=$(ls -d "$LUAGENT_RUNS_DIR"/* | head -1)
}

tool_says_engine_gone() {
  grep '"type":"tool_result"' "$run/trace.jsonl" | grep -q 'the Docker engine went away while the command ran' ||
    { echo "the tool result does not say the engine went away:"; grep tool_result "$run/trace.jsonl"; return 1; }
}

# ---- (a) back within the grace period: the outputs are saved ----
lose_engine grace-$$ 3 --set grace=60 --set disk=true
back_in_time() {
  status_is 0 && stdout_has "SAVED 3" && tool_says_engine_gone && outputs_home "$run" &&
  stderr_has "waiting up to 60 s for it to come back" && stderr_has "the Docker engine answers again after" &&
  ! grep -q "could not be removed" "$TMP/stderr" && [ "$(left grace-$$)" -eq 0 ] && [ "$(left_volumes grace-$$)" -eq 0 ]
}
check "the engine stopped mid-command and back within engine_grace: the tool said the engine went away, the outputs are saved, exit 0, nothing left" \
  back_in_time

# mirrored RUN_DIR: its manifest lists a, b and c as the mirror's copies, made after turn 1
mirrored() {
  python3 - "$1/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
files = {f["path"]: f for f in m["files"]}
assert sorted(files) == ["output/a.txt", "output/b.txt", "output/c.txt"], m
for f in files.values():
    assert f["mirrored"]["turn"] == 1, f
assert m["mirrored"] == sorted(files) and m["missing"] == [] and "lost" not in m and "unreadable" not in m, m
PY
}

# ---- the same with the workspace in memory (the default): the container stopped with the engine ----
# the agent saved its outputs in its first command, the engine stopped during its second: the
# mirror had brought them home, and they are saved although the workspace was emptied
lose_engine memory-$$ 3 --set grace=60 --set split=true
memory_mirrored() {
  status_is 0 && stdout_has "SAVED 3" && tool_says_engine_gone && outputs_home "$run" && mirrored "$run" &&
  stderr_has "output/a.txt, output/b.txt, output/c.txt: saved (mirrored after turn 1)" &&
  stderr_has "kept in memory (workspace_size), was emptied" && ! grep -q 'MISSING\|lost' "$TMP/stdout" &&
  [ "$(left memory-$$)" -eq 0 ] && [ "$(left_volumes memory-$$)" -eq 0 ]
}
check "the same with the workspace in memory: emptied with its container, but the outputs saved before are home from the mirror, exit 0" \
  memory_mirrored

# ---- (b) back only after the run: said plainly, exit 1, the sandbox kept; the next run rescues ----
lose_engine after-$$ end --set grace=2 --set disk=true
not_read() {
  status_is 1 && stdout_has "The outputs could not be saved: could not read the outputs in output (output/a.txt, output/b.txt, output/c.txt)" &&
  stdout_has "the next luagent run on this engine, or 'luagent sandbox prune', rescues them into $run/output" &&
  ! grep -q MISSING "$TMP/stdout" && tool_says_engine_gone && stderr_has "waiting up to 2 s" &&
  [ "$(grep -c 'could not be removed' "$TMP/stderr")" -eq 1 ] && grep -q '"unreadable"' "$run/manifest.json" &&
  [ ! -e "$run/output/a.txt" ] && [ "$(left after-$$)" -eq 1 ]
}
check "the engine back only after the run: the outputs 'could not be read', exit 1, the removal failure said once, the sandbox kept" \
  not_read
dead_run=$run
run_luagent sandbox ls
check "'sandbox ls' shows the leftover, its run gone and its outputs unsaved" sh -c "
  grep -q ' gone .* unsaved ' $TMP/stdout && grep -q \"'luagent sandbox prune' rescues them\" $TMP/stdout"

cat > "$TMP/next.lua" <<'LUA'
local box <close> = assert(luagent.sandbox.open{image = "luagent-busybox:test"})
LUA
run_luagent run -q "$TMP/next.lua"
rescued() {
  status_is 0 && stderr_has "rescued 3 outputs of run $(basename "$dead_run") into $dead_run/output" &&
  outputs_home "$dead_run" && ! grep -q '"error"' "$dead_run/manifest.json" &&
  [ "$(left after-$$)" -eq 0 ] && [ "$(left_volumes after-$$)" -eq 0 ]
}
check "the next run's sweep rescues them into the dead run's folder, says so, and removes the sandbox" rescued

# ---- sandbox.open failing half-way: one message, nothing left ----
cat > "$TMP/half.lua" <<LUA
local sandbox = luagent.sandbox
local client = assert(sandbox.engine())
local real = client.call
client.call = function(self, method, path, body, opts) -- the engine dies at the session's container create
  if method == "POST" and path == "/containers/create" and opts and opts.query and opts.query.name then
    os.execute("sh tests/engines.sh kill $ENGINE")
  end
  return real(self, method, path, body, opts)
end
local box <close> = assert(sandbox.open{engine = client, image = "luagent-busybox:test",
  labels = {["luagent.test"] = "half-$$"}, save = {from = "output", to = luagent.run_dir("output")}})
LUA
rm -rf "$LUAGENT_RUNS_DIR"
run_luagent run "$TMP/half.lua"
sh tests/engines.sh start $ENGINE > /dev/null
run=$(ls -d "$LUAGENT_RUNS_DIR"/* | head -1)
half_built() {
  status_is 1 && [ "$(grep -c 'cannot reach the Docker engine' "$TMP/stderr")" -eq 1 ] &&
  ! grep -q 'could not save\|could not be removed' "$TMP/stderr" &&
  tail -1 "$run/trace.jsonl" | grep -q '"type":"run_end"' && [ "$(left half-$$)" -eq 0 ] && [ "$(left_volumes half-$$)" -eq 0 ]
}
check "the engine killed at the session's container create: its words once, the trace ends with run_end, nothing left" half_built

# the engine killed at its start instead: the container it made stays until the engine is back
sed -e 's|path == "/containers/create" and opts and opts.query and opts.query.name|path:match("^/containers/.*/start$")|' \
  -e "s/half-$$/start-$$/" "$TMP/half.lua" > "$TMP/half_start.lua"
rm -rf "$LUAGENT_RUNS_DIR"
run_luagent run "$TMP/half_start.lua"
sh tests/engines.sh start $ENGINE > /dev/null
run=$(ls -d "$LUAGENT_RUNS_DIR"/* | head -1)
cp "$TMP/stderr" "$TMP/half_start.err"
run_luagent run -q "$TMP/next.lua"
half_started() {
  [ "$(grep -c 'cannot reach the Docker engine' "$TMP/half_start.err")" -eq 1 ] &&
  ! grep -q 'could not save\|could not be removed' "$TMP/half_start.err" &&
  tail -1 "$run/trace.jsonl" | grep -q '"type":"run_end"' && status_is 0 && ! grep -q 'rescue\|lost' "$TMP/stderr" &&
  [ "$(left start-$$)" -eq 0 ] && [ "$(left_volumes start-$$)" -eq 0 ]
}
check "the engine killed at the session's start: its words once; the container it never started goes with the next run, without a word" \
  half_started

rm -rf "$LUAGENT_RUNS_DIR"
run_luagent run recipes/energy_anomaly.lua --set model.provider=scripted --set sandbox.image=nope:latest
run=$(ls -d "$LUAGENT_RUNS_DIR"/* | head -1)
missing_image() {
  status_is 1 && [ "$(grep -c 'the sandbox image nope:latest is not in the Docker engine' "$TMP/stderr")" -eq 1 ] &&
  ! grep -q 'could not save\|could not be removed' "$TMP/stderr" &&
  tail -1 "$run/trace.jsonl" | grep -q '"type":"run_end"' && [ "$(docker ps -aq | wc -l)" -eq 0 ] &&
  [ "$(docker volume ls -q | grep -vc '^luagent-supervisor-')" -eq 0 ]
}
check "a missing image with save = {...}: the engine's words once, the trace ends with run_end, nothing left" missing_image

# ---- the engine-loss reproduction with the default workspace: the engine back only after the run ----
# the agent saved its outputs, the engine stopped during its next command (sleep 40) and started
# again after the run: the outputs are home, whole, from the mirror; the run exits as its recipe
# decides (it had them: 0) — but the run itself ends "incomplete", exit 1 (it ended "ok", exit 0,
# although what the agent wrote after turn 1 is not known); the tool result says the engine went away
lose_engine repro-$$ end --set grace=2 --set split=true
repro_saved() {
  status_is 1 && stdout_has "SAVED 3" && tool_says_engine_gone && outputs_home "$run" && mirrored "$run" &&
  stderr_has "luagent: the run is incomplete: the outputs in output could not be read at the end (.*); saved are the mirror's copies (output/a.txt, output/b.txt, output/c.txt: saved (mirrored after turn 1)), and what the agent wrote after them is not known" &&
  stderr_has "run .* incomplete in" && tail -1 "$run/trace.jsonl" | grep -q '"status":"incomplete"' &&
  stderr_has "could not read the outputs in output at the end (.*the Docker engine" &&
  stderr_has "output/a.txt, output/b.txt, output/c.txt: saved (mirrored after turn 1)" &&
  ! grep -q "MISSING\|could not be saved" "$TMP/stdout" && grep -q '"error"' "$run/manifest.json" &&
  [ "$(grep -c 'could not be removed' "$TMP/stderr")" -eq 1 ]
}
check "the engine stopped mid-command and back only after the run, the workspace in memory: the outputs saved before are home and whole (mirrored); the run ends incomplete, exit 1" \
  repro_saved
repro_run=$run
run_luagent run -q "$TMP/next.lua"
repro_swept() {
  status_is 0 && stderr_has "the outputs of run $(basename "$repro_run") are those its mirror brought into $repro_run/output during the run (3 files, the last mirrored after turn 1); what it wrote later is lost" &&
  outputs_home "$repro_run" && mirrored "$repro_run" && [ "$(left repro-$$)" -eq 0 ] && [ "$(left_volumes repro-$$)" -eq 0 ]
}
check "... the next run's sweep says the mirror's copies are what there is, leaves them as they are, and removes the sandbox" repro_swept

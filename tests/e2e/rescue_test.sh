# needs: docker
# Nothing of value is destroyed without a word: a run killed with
# kill -9 after its agent saved outputs leaves its sandbox; `sandbox ls` says
# its outputs are unsaved, and the next run's sweep rescues them into the dead
# run's folder and says so. Outputs that cannot be rescued keep their sandbox:
# `sandbox prune` asks on the terminal before removing it (y/N), refuses with
# no terminal to ask on, and --force removes it. Everything runs on a second
# engine started by this test (tests/engines.sh), never the main one.
. tests/e2e/lib.sh
export LUAGENT_RUNS_DIR="$TMP/runs"
. tests/e2e/second_engine.sh

cat > "$TMP/crash.lua" <<'LUA'
local box <close> = assert(luagent.sandbox.open{image = "luagent-busybox:test",
  labels = {["luagent.test"] = luagent.settings.label},
  save = {from = "output", to = luagent.run_dir("output"), required = {"output/a.txt", "output/b.txt", "output/c.txt"}}})
assert(box:exec("mkdir -p output && echo a > output/a.txt && echo b > output/b.txt && echo c > output/c.txt"))
print("SAVED IN THE SANDBOX"); io.stdout:flush()
luagent.sleep(60)
LUA
cat > "$TMP/next.lua" <<'LUA'
local box <close> = assert(luagent.sandbox.open{image = "luagent-busybox:test"})
LUA

# crash LABEL: a run whose agent saved three outputs, killed with kill -9; $dead is its folder
crash() {
  "$LUAGENT" run "$TMP/crash.lua" --set "label=$1" > "$TMP/stdout" 2> "$TMP/stderr" &
  pid=$!
  for _ in $(seq 1 200); do grep -q "SAVED IN THE SANDBOX" "$TMP/stdout" 2>/dev/null && break; sleep 0.05; done
  kill -KILL $pid
  wait $pid 2>/dev/null
  dead=$(grep -l "\"label\":\"$1\"" "$LUAGENT_RUNS_DIR"/*/trace.jsonl 2>/dev/null | head -1)
  dead=$(dirname "${dead:-$LUAGENT_RUNS_DIR/none/x}")
}

# ---- kill -9: the next run rescues ----
crash killed-$$
run_luagent sandbox ls
check "after kill -9, 'sandbox ls' shows the leftover: its run gone, its outputs unsaved" sh -c "
  [ \$(docker ps -aq --filter label=luagent.test=killed-$$ | wc -l) -eq 1 ] && grep -q ' gone .* unsaved ' $TMP/stdout"
run_luagent run -q "$TMP/next.lua"
rescued() {
  status_is 0 && stderr_has "rescued 3 outputs of run $(basename "$dead") into $dead/output" && outputs_home "$dead" &&
  grep -q '"output/c.txt"' "$dead/manifest.json" && ! grep -q '"error"' "$dead/manifest.json" && [ "$(left killed-$$)" -eq 0 ]
}
check "the next run's sweep rescues the killed run's outputs into its folder, says so, and removes the sandbox" rescued

# ---- a workspace in memory whose container stopped: the mirror's copies are what is left ----
crash stopped-$$
docker kill $(docker ps -q --filter label=luagent.test=stopped-$$) > /dev/null # emptied with its tmpfs
run_luagent sandbox ls
check "'sandbox ls' shows a stopped in-memory leftover whose outputs the mirror brought home as mirrored, not lost" sh -c "
  grep ' gone ' $TMP/stdout | grep -q ' mirrored ' && ! grep -q ' lost ' $TMP/stdout"
run_luagent run -q "$TMP/next.lua"
mirror_kept() {
  status_is 0 && stderr_has "are those its mirror brought into $dead/output during the run (3 files" &&
  [ "$(cat "$dead/output/c.txt")" = c ] && [ "$(left stopped-$$)" -eq 0 ]
}
check "the sweep says the mirror's copies are what is left, keeps them, and removes the sandbox" mirror_kept

# ---- outputs that cannot be rescued: kept, and prune asks ----
crash blocked-$$
rm -rf "$dead/output"; echo "in the way" > "$dead/output" # the rescue cannot write there
run_luagent run -q "$TMP/next.lua"
check "a rescue that fails keeps the sandbox and says why" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'kept sandbox .* it holds unsaved outputs of run' $TMP/stderr &&
  grep -q \"'luagent sandbox prune' asks before removing it\" $TMP/stderr && [ \$(docker ps -aq --filter label=luagent.test=blocked-$$ | wc -l) -eq 1 ]"

setsid -w "$LUAGENT" sandbox prune < /dev/null > "$TMP/stdout" 2> "$TMP/stderr"
echo $? > "$TMP/status"
check "prune with no terminal refuses to remove it: exit 1, says to use --force" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q 'no terminal to ask on' $TMP/stderr && grep -q 'rerun with --force' $TMP/stderr &&
  [ \$(docker ps -aq --filter label=luagent.test=blocked-$$ | wc -l) -eq 1 ]"

printf 'n\n' | script -qfec "\"$LUAGENT\" sandbox prune > $TMP/stdout 2> $TMP/stderr" /dev/null > "$TMP/tty.log"
check "prune on a terminal asks (y/N); n keeps it" sh -c "
  grep -q 'holds unsaved outputs of run .* Remove it, and lose them? \[y/N\]' $TMP/tty.log &&
  grep -q '^kept ' $TMP/stdout && [ \$(docker ps -aq --filter label=luagent.test=blocked-$$ | wc -l) -eq 1 ]"

printf 'y\n' | script -qfec "\"$LUAGENT\" sandbox prune > $TMP/stdout 2> $TMP/stderr" /dev/null > "$TMP/tty.log"
check "prune on a terminal, answered y, removes it" sh -c "
  grep -q 'Remove it, and lose them?' $TMP/tty.log && grep -q '^removed ' $TMP/stdout &&
  [ \$(docker ps -aq --filter label=luagent.test=blocked-$$ | wc -l) -eq 0 ]"

crash forced-$$
rm -rf "$dead/output"; echo "in the way" > "$dead/output"
setsid -w "$LUAGENT" sandbox prune --force < /dev/null > "$TMP/stdout" 2> "$TMP/stderr"
echo $? > "$TMP/status"
check "prune --force removes it without asking" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q '^removed ' $TMP/stdout &&
  [ \$(docker ps -aq --filter label=luagent.test=forced-$$ | wc -l) -eq 0 ]"

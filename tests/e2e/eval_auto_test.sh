# needs: docker
# concurrency: auto with real runs (each opens a sandbox and runs a command
# in it) on an engine of capacity 3 (LUAGENT_ENGINES=...#3): it grows to the
# capacity and never has more sandboxes open at once (counted from the runs'
# events and, independently, from the engine's container list), no open
# waits for room; and once the engine's opens turn slow (a fault injected at
# placement, tests/e2e/eval_auto_run.lua) the width shrinks.
. tests/e2e/lib.sh
export LUAGENT_EVALS_DIR="$TMP/evals"
export LUAGENT_ENGINES="unix:///var/run/docker.sock#3"
mkdir -p "$TMP/proj"
cat > "$TMP/proj/boxed.lua" <<'LUA'
local box <close> = assert(luagent.sandbox.open{labels = {["luagent.test"] = "eval-auto"}})
local r = assert(box:exec({"sh", "-c", "sleep 0.4; echo ran"}))
print(r.stdout)
return r.exit_code
LUA
printf 'label: x\n' > "$TMP/proj/boxed.yaml"
printf 'recipe: boxed.lua\nepochs: 24\nconcurrency: auto\ncache: false\n' > "$TMP/proj/auto.eval.yaml"

"$LUAGENT" run tests/e2e/eval_auto_run.lua -- "$TMP/proj/auto.eval.yaml" "$TMP/evals" 12 > "$TMP/stdout" 2> "$TMP/stderr" &
pid=$!
peak=0
while kill -0 $pid 2>/dev/null; do
  n=$(docker ps -q --filter label=luagent.test=eval-auto | wc -l)
  [ "$n" -gt "$peak" ] && peak=$n
  sleep 0.1
done
wait $pid
echo $? > "$TMP/status"
check "concurrency auto on an engine of capacity 3: all 24 runs ok, at most 3 sandboxes open at once, and 3 reached" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -qx 'STATUS ok' $TMP/stdout && grep -qx 'MAX_OPEN 3' $TMP/stdout &&
  [ \$(grep -c '\"status\":\"ok\"' $TMP/evals/*/results.jsonl) = 24 ] && grep -q '^WIDTH 3 ' $TMP/stdout &&
  ! grep '^WIDTH [4-9]' $TMP/stdout" 
check "...the engine's own container list never held more than 3 of them ($peak), no open waited for room" sh -c "
  [ $peak -le 3 ] && ! grep -q 'at its capacity' $TMP/stderr"
check "...the width shrank once the engine's opens turned slow, measured against the first runs" \
  grep -q '^WIDTH [12] opens take .* as long as in the first runs' "$TMP/stdout"

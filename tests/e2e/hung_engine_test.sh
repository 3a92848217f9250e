# needs: docker
# An engine that hangs (its dockerd stopped with SIGSTOP: it keeps its socket
# and accepts connections, but answers nothing) fails a command in flight
# with docker_unreachable naming the engine after two unanswered pings (15 s
# apart), not after the command's timeout of 100 s; and box:close returns
# after one ping instead of waiting out two removal calls of 120 s each. Runs on a
# second engine started by this test (tests/engines.sh), never the main one.
. tests/e2e/lib.sh
. tests/e2e/second_engine.sh
engine_pid() { cat "${LUAGENT_ENGINES_DIR:-/tmp/luagent-engines}/$ENGINE/docker.pid"; }
# the engine is let go again before second_engine.sh's exit trap stops it
trap 'kill -CONT $(engine_pid) 2>/dev/null; sh tests/engines.sh remove $ENGINE >/dev/null 2>&1; rm -rf "$TMP"' EXIT

cat > "$TMP/hung.lua" <<'LUA'
local box = assert(luagent.sandbox.open{image = "luagent-busybox:test"})
print("OPEN"); io.stdout:flush()
local t0 = luagent.now()
local r, err = box:exec("sleep 100", {timeout = 100})
print(("EXEC %.1f %s %s"):format(luagent.now() - t0, r and r.exit_code or "-", err and err.kind or "-"))
print("MESSAGE " .. (err and err.message or "-"))
t0 = luagent.now()
local ok, cerr = box:close()
print(("CLOSE %.1f %s %s"):format(luagent.now() - t0, tostring(ok), cerr and cerr.kind or "-"))
LUA

"$LUAGENT" run -q "$TMP/hung.lua" > "$TMP/stdout" 2> "$TMP/stderr" &
run=$!
for _ in $(seq 1 200); do grep -q OPEN "$TMP/stdout" 2>/dev/null && break; sleep 0.05; done
sleep 0.3
kill -STOP "$(engine_pid)"
wait $run
kill -CONT "$(engine_pid)"
echo "# $(grep '^EXEC ' "$TMP/stdout") (seconds, exit code, error kind); $(grep '^CLOSE ' "$TMP/stdout")"

exec_failed() {
  line=$(grep '^EXEC ' "$TMP/stdout") || { cat "$TMP/stdout" "$TMP/stderr"; return 1; }
  set -- $line
  [ "$3" = "-" ] && [ "$4" = docker_unreachable ] && awk "BEGIN { exit !($2 < 60) }" ||
    { echo "got: $line"; return 1; }
  grep -q "^MESSAGE .*the Docker engine at unix://.*/$ENGINE/docker.sock does not answer" "$TMP/stdout" ||
    { grep MESSAGE "$TMP/stdout"; return 1; }
}
check "a command in flight on a hung engine: docker_unreachable naming the engine, no result, in under 60 s (its timeout: 100 s)" exec_failed

close_fast() {
  line=$(grep '^CLOSE ' "$TMP/stdout") || { cat "$TMP/stdout" "$TMP/stderr"; return 1; }
  set -- $line
  [ "$3" = nil ] && [ "$4" = docker_unreachable ] && awk "BEGIN { exit !($2 < 15) }" || { echo "got: $line"; return 1; }
}
check "box:close on the hung engine returns docker_unreachable after one ping, not after the removal calls' timeouts" close_fast

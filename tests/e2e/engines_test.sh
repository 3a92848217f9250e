# needs: docker
# Several Docker engines at once (sandbox.open's `engines`, LUAGENT_ENGINES):
# three extra dockerd on this machine (tests/engines.sh: each its own data
# root, exec root, pidfile and socket, --bridge=none --iptables=false; the
# main engine is never touched), a and b with the busybox test image, c
# without; and, when openssl is there, a fourth on loopback TCP with TLS
# certificates made for the test. tests/e2e/engines_checks.lua checks, in one
# run: placement by load, capacities (an open that fails at once, one that
# waits), the image copied to c, a warm pool over two engines, an engine that
# does not answer, missing TLS files, sessions over TLS, and b killed in the
# middle (its sessions fail naming it, new ones go to a and c, the run goes
# on). Then the command line over LUAGENT_ENGINES: doctor, sandbox ls and
# prune show and go over every engine; a malformed list is one error.
. tests/e2e/lib.sh
ENGINES_DIR=${LUAGENT_ENGINES_DIR:-/tmp/luagent-engines}
NAME=engines-$$
LABEL=engines-$$
engines() { LUAGENT_ENGINES_DIR=$ENGINES_DIR sh tests/engines.sh "$@"; }
trap 'for e in a b c tls; do engines remove $NAME-$e > /dev/null 2>&1; done; rm -rf "$TMP"' EXIT

if [ "$(id -u)" != 0 ] || ! command -v dockerd > /dev/null; then
  echo "ok - $SUITE: several engines # SKIP needs root and dockerd"; exit 0
fi
tools/busybox-image.sh > /dev/null
for e in a b c; do
  if ! engines start $NAME-$e > "$TMP/engine.out" 2>&1; then
    echo "not ok - $SUITE: engine $e starts"; sed 's/^/    /' "$TMP/engine.out"; exit 0
  fi
done
engines image $NAME-a luagent-busybox:test
engines image $NAME-b luagent-busybox:test
A=unix://$ENGINES_DIR/$NAME-a/docker.sock
B=unix://$ENGINES_DIR/$NAME-b/docker.sock
C=unix://$ENGINES_DIR/$NAME-c/docker.sock
at() { DOCKER_HOST=$1 docker ps -aq --filter "label=luagent.test=$2" | wc -l; }

tls_settings=""
if command -v openssl > /dev/null; then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  if engines start $NAME-tls --tcp "$port" --tls > "$TMP/engine.out" 2>&1; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=not-the-engines-ca -keyout "$TMP/wrong-key.pem" \
      -out "$TMP/wrong-ca.pem" 2> /dev/null
    tls_settings="--set tls=tcp://127.0.0.1:$port --set certs=$ENGINES_DIR/$NAME-tls/certs --set wrong_ca=$TMP/wrong-ca.pem"
  else
    echo "not ok - $SUITE: the TLS engine starts"; sed 's/^/    /' "$TMP/engine.out"
  fi
fi

# ---- in one run: placement, capacity, copy, pool, faults, TLS, an engine killed ----
# shellcheck disable=SC2086
"$LUAGENT" run -q tests/e2e/engines_checks.lua --set a="$A" --set b="$B" --set c="$C" --set b_name=$NAME-b \
  --set label=$LABEL $tls_settings > "$TMP/checks.out" 2> "$TMP/checks.err"
status=$?
cat "$TMP/checks.out"
grep -q '^not ok' "$TMP/checks.out" && sed 's/^/    /' "$TMP/checks.err" | tail -40 >&2
check "the checks' run ends normally (exit 0) after an engine died under it" [ $status = 0 ]
said() { grep -q -- "$1" "$TMP/checks.err" || { echo "stderr lacks '$1':"; cat "$TMP/checks.err"; return 1; }; }
check "the copy and the wait are said on stderr" sh -c "
  grep -q 'copying the image luagent-busybox:test from the Docker engine at $A to the one at $C' $TMP/checks.err &&
  grep -q 'waiting up to 30 s for a session to close' $TMP/checks.err"
check "an engine that does not answer is said once, naming it, with where new sessions go" sh -c "
  [ \$(grep -c 'nonexistent/luagent-engine.sock.*New sessions go to the other engines' $TMP/checks.err) = 1 ] &&
  [ \$(grep -c \"$B.*New sessions go to the other engines\" $TMP/checks.err) = 1 ]"
check "nothing of the run is left on a and c" [ "$(at "$A" $LABEL)$(at "$C" $LABEL)" = 00 ]

# ---- the command line over every engine ----
engines start $NAME-b > /dev/null
export LUAGENT_ENGINES="$A#2,$B,$C#3"
cat > "$TMP/crash.lua" <<LUA
local boxes = {}
for i = 1, 3 do
  boxes[i] = assert(luagent.sandbox.open{image = "luagent-busybox:test", memory = "32m", tmp_size = "8m",
                                         workspace_size = "8m", labels = {["luagent.test"] = "$LABEL-crash"}})
end
print("ready"); io.stdout:flush()
luagent.sleep(60)
LUA
"$LUAGENT" run -q "$TMP/crash.lua" > "$TMP/stdout" 2> "$TMP/stderr" &
pid=$!
for _ in $(seq 1 100); do grep -q ready "$TMP/stdout" 2>/dev/null && break; sleep 0.1; done
kill -KILL $pid; wait $pid 2>/dev/null
check "a run over LUAGENT_ENGINES put one session on each engine" \
  [ "$(at "$A" $LABEL-crash)$(at "$B" $LABEL-crash)$(at "$C" $LABEL-crash)" = 111 ]

run_luagent sandbox ls
ls_all() {
  status_is 0 && stdout_has "^ENGINE  *STATE  *DOCKER  *IMAGE  *SESSIONS  *CAPACITY  *RUNTIMES\$" &&
  stdout_has "^$A  *up  *[0-9][^ ]*  *missing  *1  *2  .*runc (default)\$" &&
  stdout_has "^$B  *up .* 1  *-  .*runc (default)\$" && stdout_has "^$C  *up .* 1  *3  .*runc (default)\$" &&
  [ "$(grep -c " gone .*luagent-busybox:test *unix://" "$TMP/stdout")" = 3 ] &&
  for e in "$A" "$B" "$C"; do grep -q " gone .* $e\$" "$TMP/stdout" || { echo "no leftover on $e"; return 1; }; done
}
check "'sandbox ls' shows every engine (address, up, version, image, sessions, capacity, runtimes) and the leftovers of each" \
  ls_all
run_luagent sandbox prune
pruned() {
  status_is 0 && stdout_has "sandboxes removed" &&
  [ "$(at "$A" $LABEL-crash)$(at "$B" $LABEL-crash)$(at "$C" $LABEL-crash)" = 000 ] && [ "$(at "$B" $LABEL)" = 0 ]
}
check "'sandbox prune' goes over every engine (and removes the session the killed engine kept)" pruned

"$LUAGENT" run -q "$TMP/crash.lua" > "$TMP/stdout" 2> "$TMP/stderr" &
pid=$!
for _ in $(seq 1 100); do grep -q ready "$TMP/stdout" 2>/dev/null && break; sleep 0.1; done
kill -KILL $pid; wait $pid 2>/dev/null
cat > "$TMP/next.lua" <<LUA
local box <close> = assert(luagent.sandbox.open{image = "luagent-busybox:test", labels = {["luagent.test"] = "$LABEL-next"}})
LUA
run_luagent run -q "$TMP/next.lua"
swept() {
  status_is 0 && [ "$(at "$A" $LABEL-crash)$(at "$B" $LABEL-crash)$(at "$C" $LABEL-crash)" = 000 ] &&
  [ "$(at "$A" $LABEL-next)$(at "$B" $LABEL-next)$(at "$C" $LABEL-next)" = 000 ]
}
check "the next run's sweep removes the leftovers of a crashed run on every engine" swept

# The image build over several engines copies luagent-sandbox:latest (1.2 GB, ~25 s here) from the
# main engine, which is only read: LUAGENT_TEST_ENGINES_BUILD=1 runs it.
if [ "${LUAGENT_TEST_ENGINES_BUILD:-}" = 1 ] && LUAGENT_ENGINES= "$LUAGENT" doctor | grep -q '^ok   image .* up to date'; then
  LUAGENT_ENGINES="unix:///var/run/docker.sock,$C" run_luagent sandbox build
  built() {
    status_is 0 && stdout_has "^luagent-sandbox:latest on unix:///var/run/docker.sock: up to date" &&
    stdout_has "^luagent-sandbox:latest on $C: copied from unix:///var/run/docker.sock"
  }
  check "'sandbox build' over two engines copies the image from the one that has it" built
  LUAGENT_ENGINES="unix:///var/run/docker.sock,$C" run_luagent sandbox build
  check "... and then finds it up to date on both" sh -c "[ \$(grep -c ': up to date' $TMP/stdout) = 2 ]"
fi

engines kill $NAME-b
run_luagent doctor
doctor_all() {
  status_is 1 && stdout_has "^ok   engine   $A: Docker [^ ]*, API [0-9.]*; luagent-sandbox:latest missing; 0 sandboxes running; capacity 2" &&
  stdout_has "^FAIL engine   cannot reach the Docker engine at $B" && stdout_has "^ok   engine   $C: .*capacity 3" &&
  [ "$(grep -c '^.... engine ' "$TMP/stdout")" = 3 ]
}
check "doctor shows every engine, and fails for the one that does not answer" doctor_all
run_luagent sandbox ls
check "'sandbox ls' shows the engine that does not answer as down, and why" sh -c "
  grep -q '^$B  *down ' $TMP/stdout && grep -q 'cannot reach the Docker engine at $B' $TMP/stdout"

if [ -n "$tls_settings" ]; then
  DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$ENGINES_DIR/$NAME-tls/certs LUAGENT_ENGINES="$A,tcp://127.0.0.1:$port#2" \
    run_luagent doctor
  check "doctor reaches an engine over TLS by Docker's conventions (DOCKER_TLS_VERIFY, DOCKER_CERT_PATH)" \
    stdout_has "^ok   engine   tcp://127.0.0.1:$port: Docker .*capacity 2; runtimes .*runc (default)\$"
  LUAGENT_ENGINES="$A,tcp://127.0.0.1:$port#2" DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$TMP/no-certs run_luagent doctor
  check "... and with DOCKER_CERT_PATH naming no certificates, says which file is missing" \
    stdout_has "^FAIL engine   the Docker engine at tcp://127.0.0.1:$port is spoken to over TLS (DOCKER_TLS_VERIFY), but the CA certificate $TMP/no-certs/ca.pem does not exist"
fi

# ---- bad input ----
cat > "$TMP/open.lua" <<LUA
local box <close> = assert(luagent.sandbox.open{image = "luagent-busybox:test", labels = {["luagent.test"] = "$LABEL-bad"}})
LUA
LUAGENT_ENGINES="$A,ssh://me@build-2" run_luagent run -q "$TMP/open.lua"
malformed() {
  status_is 1 && stderr_has 'LUAGENT_ENGINES: entry 2 ("ssh://me@build-2"): ssh:// is not supported' &&
  [ "$(at "$A" $LABEL-bad)" = 0 ]
}
check "a malformed LUAGENT_ENGINES: one error naming it and the entry, nothing started" malformed
LUAGENT_ENGINES="unix:///nonexistent/engine.sock#2" run_luagent run -q "$TMP/open.lua"
check "an engine that is not there: one error naming it" sh -c "
  [ \$(cat $TMP/status) = 1 ] && grep -q 'cannot reach the Docker engine at unix:///nonexistent/engine.sock' $TMP/stderr"
LUAGENT_ENGINES="bogus" run_luagent doctor
check "doctor with a malformed LUAGENT_ENGINES says so and fails" sh -c "
  [ \$(cat $TMP/status) = 1 ] && grep -q '^FAIL docker   LUAGENT_ENGINES: entry 1 (\"bogus\"): not an engine address' $TMP/stdout"

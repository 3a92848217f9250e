# needs: docker
# Sandboxes on a Docker engine over TCP with TLS, and over plain TCP: a
# second dockerd (tests/engines.sh: its own data root, exec root, socket;
# no bridge, no iptables; the main engine is never touched) listens on a
# free loopback port with certificates made by openssl. A session there
# runs its commands through the supervisor over one hijacked attach, as on
# the socket (tests/e2e/tls_engine_checks.lua: exec, spawn, extract and
# snapshot through the pack, a timeout, the per-exec cost beside the same
# engine's socket, the engine stopped in the middle of a command). Faults:
# a CA that did not sign the engine, missing certificate files.
# LUAGENT_TEST_TLS_PYTHON=1 copies the 1.2 GB sandbox image into the engine
# (once: it keeps its data root) so box:python is checked there too, as it is
# whenever an earlier run copied it.
. tests/e2e/lib.sh
NAME=luagent-tls-e2e
ENGINES=${LUAGENT_ENGINES_DIR:-/tmp/luagent-engines}
DIR=$ENGINES/$NAME
LABEL=tls-e2e-$$
engines() { LUAGENT_ENGINES_DIR=$ENGINES tests/engines.sh "$@"; }
# the docker CLI on the engine's own socket
engine_docker() { DOCKER_HOST=unix://$DIR/docker.sock docker "$@"; }
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
trap 'engines stop "$NAME" > /dev/null 2>&1; rm -rf "$TMP"' EXIT

if [ "$(id -u)" != 0 ] || ! command -v dockerd > /dev/null; then
  echo "ok - $SUITE: sandboxes over TCP and TLS # SKIP needs root and dockerd"; exit 0
fi

# start_engine ARGS: (re)started on a fresh port (a run cut short may have left it on another)
start_engine() {
  engines stop "$NAME" > /dev/null 2>&1
  PORT=$(free_port)
  engines start "$NAME" --tcp "$PORT" "$@" > "$TMP/engine.out" 2>&1 || { cat "$TMP/engine.out"; return 1; }
  engines image "$NAME" luagent-busybox:test || return 1
  # what an earlier run left; and the supervisor's volume, so the session fills it again over TCP
  engine_docker ps -aq --filter label=luagent.test | xargs -r env DOCKER_HOST="unix://$DIR/docker.sock" docker rm -f > /dev/null
  engine_docker volume ls -q --filter label=luagent.supervisor | xargs -r env DOCKER_HOST="unix://$DIR/docker.sock" docker volume rm > /dev/null
}

# no session of this test left in the engine, nor a workspace volume
nothing_left() {
  [ -z "$(engine_docker ps -aq --filter "label=luagent.test=$LABEL")" ] &&
    [ -z "$(engine_docker volume ls -q --filter "label=luagent.test=$LABEL")" ] ||
    { echo "left in $NAME:"; engine_docker ps -a --filter "label=luagent.test=$LABEL"; return 1; }
}

checks() {
  DOCKER_HOST=tcp://127.0.0.1:$PORT "$LUAGENT" run -q tests/e2e/tls_engine_checks.lua --set label="$LABEL" \
    --set socket_host="unix://$DIR/docker.sock" "$@" > "$TMP/checks.out" 2> "$TMP/checks.err"
  echo $? > "$TMP/status"
  cat "$TMP/checks.out"
  grep -q '^ok' "$TMP/checks.out" || { echo "not ok - $SUITE: the checks ran none"; sed 's/^/    /' "$TMP/checks.err"; }
  if grep -q '^not ok' "$TMP/checks.out"; then sed 's/^/    /' "$TMP/checks.err" | tail -30 >&2
  elif [ "$(cat "$TMP/status")" != 0 ]; then
    echo "not ok - $SUITE: the checks exited with status $(cat "$TMP/status")"; sed 's/^/    /' "$TMP/checks.err" | tail -30
  fi
}

sh tools/busybox-image.sh luagent-busybox:test > "$TMP/busybox.out" 2>&1 ||
  { echo "not ok - $SUITE: tools/busybox-image.sh"; cat "$TMP/busybox.out"; exit 1; }

# ---- TLS ----
if ! start_engine --tls; then echo "not ok - $SUITE: start a TLS engine with tests/engines.sh"; exit 1; fi
python=""
if [ -n "${LUAGENT_TEST_TLS_PYTHON:-}" ]; then
  engines image "$NAME" luagent-sandbox:latest && python=1
elif engine_docker image inspect luagent-sandbox:latest > /dev/null 2>&1; then
  python=1 # copied in by an earlier run
fi
export DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$DIR/certs
mkdir -p "$TMP/wrong" "$TMP/nocert"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=another-ca -keyout "$TMP/wrong/ca-key.pem" \
  -out "$TMP/wrong/ca.pem" 2> /dev/null
cp "$DIR/certs/cert.pem" "$DIR/certs/key.pem" "$TMP/wrong/"
cp "$DIR/certs/ca.pem" "$TMP/nocert/"

checks --set wrong_ca="$TMP/wrong/ca.pem" ${python:+--set python=1} \
  --set stop_engine="LUAGENT_ENGINES_DIR=$ENGINES tests/engines.sh stop $NAME"

run_tls() {
  DOCKER_HOST=tcp://127.0.0.1:$PORT DOCKER_CERT_PATH=$1 run_luagent run -q /dev/stdin <<'LUA'
local box, err = luagent.sandbox.open{image = "luagent-busybox:test"}
if box then box:close() end
io.stderr:write(tostring(err), "\n")
os.exit(box and 0 or 1)
LUA
}

wrong_ca() {
  run_tls "$TMP/wrong"
  status_is 1 && stderr_has "^tls: TLS with the Docker engine at tcp://127.0.0.1:$PORT failed" &&
    stderr_has "CA file $TMP/wrong/ca.pem"
}
missing_cert() {
  run_tls "$TMP/nocert"
  status_is 1 && stderr_has "^config: the Docker engine at tcp://127.0.0.1:$PORT is spoken to over TLS" &&
    stderr_has "the client certificate $TMP/nocert/cert.pem does not exist"
}
# the engine was stopped by the last check: start it again (same port) for the faults
engines start "$NAME" --tcp "$PORT" --tls > /dev/null 2>&1
check "a CA that did not sign the engine: a tls error naming the engine and the CA file" wrong_ca
check "a missing client certificate: an error naming the file" missing_cert
prune() { DOCKER_HOST=tcp://127.0.0.1:$PORT run_luagent sandbox prune && status_is 0 && nothing_left; }
check "the session the stopped engine held is pruned once the engine is back" prune
unset DOCKER_TLS_VERIFY DOCKER_CERT_PATH

# ---- plain TCP ----
if ! start_engine; then echo "not ok - $SUITE: start a plain TCP engine with tests/engines.sh"; exit 1; fi
checks --set plain=1
check "TCP: no session of the test is left in the engine" nothing_left

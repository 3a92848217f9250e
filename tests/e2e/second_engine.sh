# Sourced (after lib.sh) by the e2e tests that stop, kill and restart a Docker
# engine: starts a second engine for this test (tests/engines.sh: its own data
# root, exec root, pidfile and socket, no bridge; the main engine is never
# touched) with the busybox image in it, points DOCKER_HOST at it, and removes
# it when the test ends.
#   $ENGINE                   its name, for tests/engines.sh stop|start|kill
#   left LABEL                how many containers it has with label luagent.test=LABEL
#   left_volumes LABEL        ... and volumes
#   outputs_home RUN_DIR      RUN_DIR/output has a.txt, b.txt and c.txt saying a, b and c
ENGINE=$SUITE-$$
trap 'sh tests/engines.sh remove $ENGINE >/dev/null 2>&1; rm -rf "$TMP"' EXIT
if ! host=$(sh tests/engines.sh start "$ENGINE" 2> "$TMP/engine.err"); then
  echo "not ok - $SUITE: a second Docker engine starts"; sed 's/^/    /' "$TMP/engine.err" >&2; exit 0
fi
tools/busybox-image.sh > /dev/null
sh tests/engines.sh image "$ENGINE" luagent-busybox:test
export DOCKER_HOST="$host"

left() { docker ps -aq --filter "label=luagent.test=$1" | wc -l; }
left_volumes() { docker volume ls -q --filter "label=luagent.test=$1" | wc -l; }
outputs_home() {
  for f in a b c; do
    [ "$(cat "$1/output/$f.txt" 2>/dev/null)" = $f ] || { echo "output/$f.txt is not in $1"; ls -R "$1"; return 1; }
  done
}

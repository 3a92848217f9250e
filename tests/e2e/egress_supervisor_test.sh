# needs: docker
# The in-sandbox half of egress (sandbox/supervisor/DESIGN.md, "Egress") at the
# protocol level with the real engine: `luagent-supervisor egress PORT` in a container shaped
# as luagent.sandbox makes them (NetworkMode none, the static binary from its own volume,
# PID 1 the supervisor's init), driven over `docker exec -i` by tests/egress_client.py playing
# the host, with clients run inside as uid 1000 (python3 of the sandbox image). Each scenario
# starts its own relay; see egress_client.py for what each checks.
. tests/e2e/lib.sh

BOX="luagent-egtest-$$"
cleanup() {
  docker rm -f "$BOX" > /dev/null 2>&1; docker volume rm "$BOX-ws" "$BOX-sv" > /dev/null 2>&1
  rm -rf "$TMP"
}
trap cleanup EXIT

if ! docker info > /dev/null 2>&1; then
  echo "ok - $SUITE: skipped (no Docker engine)"
  exit 0
fi
make -s build/luagent-supervisor > "$TMP/make.log" 2>&1 || { echo "not ok - $SUITE: build"; cat "$TMP/make.log" >&2; exit 0; }
tar --owner=0 --group=0 -C build -cf "$TMP/staged.tar" luagent-supervisor

# as tests/e2e/supervisor_test.sh's start_box: locked down, the binary in its own volume
docker volume create "$BOX-ws" > /dev/null && docker volume create "$BOX-sv" > /dev/null &&
docker create --name "$BOX" --label luagent.test=egress --read-only \
  --cap-drop ALL --cap-add SETUID --cap-add SETGID --cap-add KILL --cap-add SETPCAP \
  --security-opt no-new-privileges --pids-limit 512 --memory 512m --memory-swap 512m --network none \
  --tmpfs /tmp:rw,noexec,nosuid,nodev,size=64m -v "$BOX-sv":/run/luagent \
  -v "$BOX-ws":/workspace --user 0:0 --entrypoint /run/luagent/luagent-supervisor luagent-sandbox:latest init \
  > "$TMP/start.log" 2>&1 &&
docker cp - "$BOX":/run/luagent/ < "$TMP/staged.tar" >> "$TMP/start.log" 2>&1 &&
docker start "$BOX" >> "$TMP/start.log" 2>&1 ||
  { echo "not ok - $SUITE: start a container"; sed 's/^/    /' "$TMP/start.log" >&2; exit 0; }

scenario() { python3 tests/egress_client.py "$BOX" "$1"; }

check "R, then 5 MB each way byte-exact; the client's H, the host's H, then C 'both sides finished'" scenario both_ways
check "the host's C: the client reads the bytes before it, then EOF; answered by C c 0; later messages for it ignored" \
  scenario host_close
check "a client's close gives H; its reset gives C 'reset by the client'; ids are never reused" scenario client_close
check "backpressure: a client pushing 20 MB without credit gets exactly the window through, the relay stays small, all comes after K" \
  scenario backpressure
check "200 connections at once, each relayed with its own bytes" scenario many
check "stdin EOF: exit 0, every connection reset, the port free again" scenario stdin_eof
check "a second egress on the same port: exit 1, a line naming the port" scenario port_taken
check "uid 1000 cannot bind the port while egress listens (127.0.0.1 or 0.0.0.0, SO_REUSEADDR or SO_REUSEPORT)" \
  scenario uid_cannot_bind
check "a malformed host message (a leading zero, a connection never opened, a kind the host does not send): exit 2" \
  scenario malformed
no_network() { docker exec -u 1000 "$BOX" sh -c 'ls /sys/class/net' | tr '\n' ' ' | grep -qx 'lo '; }
check "the container has loopback only (NetworkMode none)" no_network

# Shell helpers for the network tests (sourced after tests/e2e/lib.sh, from the repository
# root): the loopback upstreams of tests/net_upstreams.py, started so that they end with the test.
#
#   net_upstreams_start DIR [NAMES [CANARY_PORTS]]   starts them with certificates etc. in DIR,
#       waits for "ready" (20 s at most; fails otherwise) and sets NET_DIR, NET_HTTP, NET_HTTPS,
#       NET_TCP_ECHO, NET_UDP_ECHO (ports on 127.0.0.1), NET_CA (the CA's PEM file),
#       NET_WHEEL (the wheel's file name) and NET_PID. NET_EXEC, when set, is a command prefix
#       it runs under (`ip netns exec NS`: the upstreams in a network namespace of the test's)
#   net_upstreams_stop                closes its stdin (it exits) and waits for it
#   net_stat PATH [http|https]        how many requests for PATH arrived (over both schemes,
#                                     or one); tcp_echo and udp_echo give those counters
#
# The fixture reads its stdin, a fifo this shell holds open on fd 9: when the test ends, however
# it ends, fd 9 closes and the fixture exits. A command the test leaves running in the
# background inherits fd 9 and keeps the fixture alive: start such a command with `9>&-`.

NET_PID=""

net_upstreams_start() {
  NET_DIR=$1
  mkdir -p "$NET_DIR"
  rm -f "$NET_DIR/in" "$NET_DIR/upstreams.json"
  mkfifo "$NET_DIR/in" || return 1
  ${NET_EXEC:-} python3 tests/net_upstreams.py --dir "$NET_DIR" ${2:+--names "$2"} ${3:+--canary "$3"} \
    < "$NET_DIR/in" > "$NET_DIR/stdout" 2> "$NET_DIR/stderr" &
  NET_PID=$!
  exec 9> "$NET_DIR/in"
  tries=0
  until grep -qx ready "$NET_DIR/stdout" 2> /dev/null; do
    tries=$((tries + 1))
    if [ $tries -gt 200 ] || ! kill -0 "$NET_PID" 2> /dev/null; then
      echo "net_upstreams did not start:" >&2; cat "$NET_DIR/stderr" >&2
      return 1
    fi
    sleep 0.1
  done
  eval "$(python3 -c '
import json, shlex, sys
u = json.load(open(sys.argv[1]))
for var, key in [("NET_HTTP", "http"), ("NET_HTTPS", "https"), ("NET_TCP_ECHO", "tcp_echo"),
                 ("NET_UDP_ECHO", "udp_echo"), ("NET_CA", "ca_file"), ("NET_WHEEL", "wheel")]:
    print(var + "=" + shlex.quote(str(u[key])))' "$NET_DIR/upstreams.json")"
}

net_upstreams_stop() {
  [ -n "$NET_PID" ] || return 0
  exec 9>&-
  wait "$NET_PID" 2> /dev/null
  NET_PID=""
}

net_stat() {
  curl -sS "http://127.0.0.1:$NET_HTTP/_stats" | python3 -c '
import json, sys
s = json.load(sys.stdin)
path, table = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "paths"
print(s[path] if path in ("tcp_echo", "udp_echo") else s[table].get(path, 0))' "$@"
}

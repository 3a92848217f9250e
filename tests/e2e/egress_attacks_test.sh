# needs: docker
# Sandbox egress as an attacker tries it (sandbox/NETWORK.md, "What an attacker meets"): the
# proxy's parsing, address matching, secret reflection, one request per connection and the
# cost of a hostile head, with the real engine. tests/e2e/egress_attacks.lua runs inside a
# network namespace made here, where
#   - every name a request tries (evil.test, uploads.example.test, ...) resolves through the
#     namespace's own hosts file (/etc/netns/NS/hosts, which `ip netns exec` puts in place of
#     /etc/hosts for that command only) to 11.0.0.1, a public address that exists only in it;
#   - a canary (tests/net_upstreams.py --canary) listens dual-stack on ports 80, 443 and 8079
#     of every address there (11.0.0.1, 10.1.2.3, 169.254.169.254, 2600:1::1, loopback): an
#     attack that got past the rules reaches it, and each test asserts it did not;
#   - the upstreams of tests/net_upstreams.py (echo, sloppy keep-alive servers) run on its
#     loopback.
# Needs root (network namespaces); skipped otherwise.
. tests/e2e/lib.sh
. tests/net_fixtures.sh

NS="luagent-atk-$$"
cleanup() {
  net_upstreams_stop
  ip netns del "$NS" 2> /dev/null
  rm -rf "/etc/netns/$NS" "$TMP"
}
trap cleanup EXIT

if [ "$(id -u)" != 0 ] || ! command -v ip > /dev/null; then
  echo "ok - $SUITE: # SKIP needs root and iproute2 (a network namespace of its own)"
  exit 0
fi

setup_namespace() {
  ip netns add "$NS" &&
  ip -n "$NS" link set lo up &&
  for a in 11.0.0.1/32 10.1.2.3/32 169.254.169.254/32 2600:1::1/128; do ip -n "$NS" addr add "$a" dev lo || return 1; done &&
  mkdir -p "/etc/netns/$NS" &&
  cat > "/etc/netns/$NS/hosts" <<'HOSTS'
127.0.0.1 localhost
::1 localhost ip6-localhost
11.0.0.1 evil.test uploads.example.test hello.example.test a.example.test
::ffff:127.0.0.1 mapped.example.test
HOSTS
}

if ! setup_namespace > "$TMP/netns.log" 2>&1; then
  echo "not ok - $SUITE: the network namespace"; sed 's/^/    /' "$TMP/netns.log" >&2
  exit 0
fi

NET_EXEC="ip netns exec $NS" net_upstreams_start "$TMP/up" \
  "api.example.test,sloppy.example.test,other.example.test,localhost" 80,443,8079 ||
  { echo "not ok - $SUITE: the upstreams"; exit 0; }

ip netns exec "$NS" env ATTACK_DIR="$TMP/up" "$LUAGENT" run -q tests/e2e/egress_attacks.lua 9>&-
rc=$?
[ $rc -eq 0 ] || echo "not ok - $SUITE: egress_attacks.lua exited with status $rc"

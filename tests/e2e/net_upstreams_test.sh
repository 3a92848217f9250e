# needs: docker
# The network tests' upstreams (tests/net_upstreams.py) answer as the other tests rely
# on: each endpoint over HTTP and HTTPS (the certificate valid for every name and 127.0.0.1 under
# the test CA), keep-alive, the byte pattern, request counts, TCP and UDP echo byte-exact, the
# wheel valid and pip-installable from the index in the sandbox image (on the host's network,
# for this fixture check only), and the fixture gone when its stdin closes or on SIGTERM.
. tests/e2e/lib.sh
. tests/net_fixtures.sh

if ! net_upstreams_start "$TMP/up"; then
  echo "not ok - $SUITE: the upstreams start"; exit 0
fi
echo "ok - $SUITE: the upstreams start and write upstreams.json"
NAMES="api.test.example pkgs.test.example other.test.example localhost"

# https_get NAME PATH [CURL ARGS...]: over HTTPS to NAME (resolved to 127.0.0.1), the test CA trusted
https_get() {
  n=$1 p=$2; shift 2
  curl -sS --fail --cacert "$NET_CA" --resolve "$n:$NET_HTTPS:127.0.0.1" "$@" "https://$n:$NET_HTTPS$p"
}

files_present() {
  for f in ca.pem ca.key server.pem server.key "$NET_WHEEL" upstreams.json; do
    [ -s "$TMP/up/$f" ] || { echo "missing $f"; return 1; }
  done
}
check "ca.pem, ca.key, server.pem, server.key and the wheel are in DIR" files_present

hello_http() {
  [ "$(curl -sS --fail "http://127.0.0.1:$NET_HTTP/hello")" = "hello from upstream http 127.0.0.1:$NET_HTTP" ]
}
check "/hello over http names the scheme and the Host header" hello_http

hello_https_every_name() {
  for n in $NAMES; do
    got=$(https_get "$n" /hello) || return 1
    [ "$got" = "hello from upstream https $n:$NET_HTTPS" ] || { echo "$n: $got"; return 1; }
  done
  [ "$(curl -sS --fail --cacert "$NET_CA" "https://127.0.0.1:$NET_HTTPS/hello")" = \
    "hello from upstream https 127.0.0.1:$NET_HTTPS" ]
}
check "/hello over https verifies under the test CA for every name and for 127.0.0.1" hello_https_every_name

https_refuses_other_names() {
  ! https_get unnamed.test.example /hello 2> "$TMP/curl.err" && grep -qi "certificate\|subject" "$TMP/curl.err"
}
check "a name not among --names fails certificate verification" https_refuses_other_names

valid_two_days() {
  openssl x509 -in "$TMP/up/server.pem" -noout -checkend 169200 &&    # still valid in 47 hours
    ! openssl x509 -in "$TMP/up/server.pem" -noout -checkend 176400   # expired in 49
}
check "the server certificate is valid for two days" valid_two_days

echo_reports_request() {
  https_get api.test.example /echo?q=1 -X PUT -H "X-Luagent-Probe: one" -H "X-Luagent-Probe: two" \
    --data-binary "the body" > "$TMP/echo.json" || return 1
  python3 - "$TMP/echo.json" "$NET_HTTPS" <<'EOF'
import json, sys
e = json.load(open(sys.argv[1]))
assert e["method"] == "PUT" and e["path"] == "/echo?q=1" and e["scheme"] == "https", e
assert e["sni"] == "api.test.example", e
assert e["headers"]["Host"] == "api.test.example:" + sys.argv[2], e
assert e["headers"]["X-Luagent-Probe"] == "one, two", e
assert ["X-Luagent-Probe", "one"] in e["raw_headers"] and ["X-Luagent-Probe", "two"] in e["raw_headers"], e
assert e["body"] == "the body" and e["body_length"] == 8, e
EOF
}
check "/echo returns method, target, SNI, every header as received and the body" echo_reports_request

echo_chunked_and_absolute() {
  printf 'chunked body' | curl -sS --fail -H "Transfer-Encoding: chunked" --data-binary @- \
    "http://127.0.0.1:$NET_HTTP/echo" > "$TMP/echo2.json" || return 1
  python3 -c 'import json,sys; e = json.load(open(sys.argv[1])); assert e["body"] == "chunked body" and e["sni"] is None, e' \
    "$TMP/echo2.json" || return 1
  # a request in absolute form, as a proxy might forward it: routed by its path
  printf 'GET http://api.test.example/echo HTTP/1.1\r\nHost: api.test.example\r\nConnection: close\r\n\r\n' |
    python3 -c 'import socket,sys; s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); s.sendall(sys.stdin.buffer.read())
out = b""
while True:
    d = s.recv(65536)
    if not d: break
    out += d
sys.stdout.buffer.write(out)' "$NET_HTTP" > "$TMP/abs.txt"
  head -1 "$TMP/abs.txt" | grep -q "200 OK" && grep -q '"path": "http://api.test.example/echo"' "$TMP/abs.txt"
}
check "/echo decodes a chunked body and answers a request in absolute form" echo_chunked_and_absolute

pattern_sha() { python3 -c 'import hashlib,sys; n = int(sys.argv[1]); b = bytes(range(256)) * (n // 256 + 1); print(hashlib.sha256(b[:n]).hexdigest())' "$1"; }

bytes_exact() {
  for n in 0 1 65536 200001; do
    curl -sS --fail -D "$TMP/h.txt" -o "$TMP/b.bin" "http://127.0.0.1:$NET_HTTP/bytes/$n" || return 1
    grep -qi "^content-length: $n" "$TMP/h.txt" || { echo "bytes/$n: no Content-Length $n"; cat "$TMP/h.txt"; return 1; }
    [ "$(sha256sum < "$TMP/b.bin" | cut -d' ' -f1)" = "$(pattern_sha $n)" ] || { echo "bytes/$n: wrong content"; return 1; }
  done
  https_get localhost "/bytes/300000?chunked=1" -D "$TMP/h.txt" -o "$TMP/b.bin" || return 1
  grep -qi "^transfer-encoding: chunked" "$TMP/h.txt" &&
    [ "$(sha256sum < "$TMP/b.bin" | cut -d' ' -f1)" = "$(pattern_sha 300000)" ]
}
check "/bytes/N sends N bytes of the pattern with Content-Length (chunked with ?chunked=1)" bytes_exact

keep_alive() {
  curl -sS -v -o /dev/null -o /dev/null "http://127.0.0.1:$NET_HTTP/hello" "http://127.0.0.1:$NET_HTTP/bytes/10" \
    2> "$TMP/v.txt" && grep -q "Re-using existing connection" "$TMP/v.txt"
}
check "two requests share one connection (keep-alive)" keep_alive

slow() {
  start=$(date +%s.%N)
  [ "$(curl -sS --fail "http://127.0.0.1:$NET_HTTP/slow/1.2")" = done ] || return 1
  awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { exit !(b - a >= 1.2) }'
}
check "/slow/S answers done after S seconds" slow

index_links_wheel() {
  curl -sS --fail "http://127.0.0.1:$NET_HTTP/simple/" | grep -q 'href="/simple/luagent-probe/"' || return 1
  sum=$(curl -sS --fail "http://127.0.0.1:$NET_HTTP/simple/luagent-probe/" |
        sed -n "s|.*href=\"/files/$NET_WHEEL#sha256=\([0-9a-f]*\)\".*|\1|p")
  [ -n "$sum" ] || { echo "no link to /files/$NET_WHEEL"; return 1; }
  [ "$(curl -sS --fail "http://127.0.0.1:$NET_HTTP/files/$NET_WHEEL" | sha256sum | cut -d' ' -f1)" = "$sum" ]
}
check "the simple index links /files/<wheel> with its sha256" index_links_wheel

wheel_valid() {
  python3 - "$TMP/up/$NET_WHEEL" <<'EOF'
import base64, hashlib, sys, zipfile
whl = sys.argv[1]
z = zipfile.ZipFile(whl)
rows = [l.split(",") for l in z.read("luagent_probe-1.0.dist-info/RECORD").decode().splitlines()]
assert {r[0] for r in rows} == set(z.namelist()), rows
for name, digest, size in rows:
    if name.endswith("RECORD"):
        continue
    data = z.read(name)
    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert digest == want and int(size) == len(data), name
meta = z.read("luagent_probe-1.0.dist-info/METADATA").decode()
assert "Name: luagent-probe\n" in meta and "Version: 1.0\n" in meta, meta
sys.path.insert(0, whl)
import luagent_probe
assert luagent_probe.hello() == "hello from luagent-probe"
EOF
}
check "the wheel's RECORD hashes match and its module says hello" wheel_valid

not_found() {
  [ "$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NET_HTTP/elsewhere")" = 404 ] &&
    [ "$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$NET_CA" "https://127.0.0.1:$NET_HTTPS/simple/other/")" = 404 ]
}
check "every other path is 404" not_found

stats_count() {
  before=$(net_stat /hello)
  before_https=$(net_stat /hello https)
  https_get other.test.example /hello > /dev/null || return 1
  [ "$(net_stat /hello)" -eq $((before + 1)) ] && [ "$(net_stat /hello https)" -eq $((before_https + 1)) ] &&
    [ "$(net_stat /never-asked)" -eq 0 ] && [ "$(net_stat /_stats)" -eq 0 ]
}
check "/_stats counts each request by path and scheme (and not itself)" stats_count

tcp_echo_exact() {
  python3 - "$NET_TCP_ECHO" <<'EOF'
import os, socket, sys, threading
data = os.urandom(3 * 1024 * 1024)
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
def send():
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
threading.Thread(target=send).start()
got = bytearray()
while True:
    d = s.recv(1 << 16)
    if not d:
        break
    got += d
assert bytes(got) == data, (len(got), len(data))
EOF
}
check "the TCP echo returns 3 MiB byte-exact and closes after the client's half-close" tcp_echo_exact

udp_echo() {
  before=$(net_stat udp_echo)
  python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)
s.sendto(b"datagram \x00\xff", ("127.0.0.1", int(sys.argv[1])))
assert s.recvfrom(100)[0] == b"datagram \x00\xff"' "$NET_UDP_ECHO" &&
    [ "$(net_stat udp_echo)" -eq $((before + 1)) ] && [ "$(net_stat tcp_echo)" -ge 1 ]
}
check "the UDP echo returns a datagram and counts it" udp_echo

# pip in the sandbox image installs the wheel from the index: the image has pip, and the index is
# pip-compatible. --network host for this fixture check only (a sandbox never has it).
pip_install() {
  scheme=$1; shift
  docker run --rm --network host "$@" luagent-sandbox:latest sh -c '
    pip install --no-cache-dir --disable-pip-version-check --index-url "$0" --target /tmp/x luagent-probe &&
    PYTHONPATH=/tmp/x python3 -c "import luagent_probe; print(luagent_probe.hello())"' \
    "$scheme" > "$TMP/pip.out" 2>&1 9>&- || { cat "$TMP/pip.out"; return 1; }
  tail -1 "$TMP/pip.out" | grep -qx "hello from luagent-probe" || { cat "$TMP/pip.out"; return 1; }
}
pip_http() {
  before=$(net_stat "/files/$NET_WHEEL" http)
  pip_install "http://127.0.0.1:$NET_HTTP/simple/" &&
    [ "$(net_stat "/files/$NET_WHEEL" http)" -eq $((before + 1)) ]
}
pip_https() {
  before=$(net_stat "/files/$NET_WHEEL" https)
  pip_install "https://pkgs.test.example:$NET_HTTPS/simple/" --add-host pkgs.test.example:127.0.0.1 \
    -v "$NET_CA:/tmp/ca.pem:ro" -e PIP_CERT=/tmp/ca.pem &&
    [ "$(net_stat "/files/$NET_WHEEL" https)" -eq $((before + 1)) ]
}
if docker image inspect luagent-sandbox:latest > /dev/null 2>&1; then
  check "pip in the sandbox image installs luagent-probe from the index over http" pip_http
  check "... and over https, trusting the test CA through PIP_CERT" pip_https
else
  echo "not ok - $SUITE: pip install (no luagent-sandbox:latest image)"
fi

stdin_close_ends_it() {
  pid=$NET_PID
  net_upstreams_stop
  ! kill -0 "$pid" 2> /dev/null && ! curl -sS -m 2 "http://127.0.0.1:$NET_HTTP/hello" > /dev/null 2>&1
}
check "the upstreams exit when their stdin closes" stdin_close_ends_it

sigterm_ends_it() {
  mkdir -p "$TMP/up2" && mkfifo "$TMP/up2/in" || return 1
  python3 tests/net_upstreams.py --dir "$TMP/up2" --names only.test.example < "$TMP/up2/in" > "$TMP/up2.out" 2>&1 9>&- &
  pid=$!
  exec 8> "$TMP/up2/in"    # stdin stays open: only the signal can end it
  tries=0
  until grep -qx ready "$TMP/up2.out" 2> /dev/null; do
    tries=$((tries + 1)); [ $tries -lt 200 ] || { cat "$TMP/up2.out"; return 1; }; sleep 0.1
  done
  grep -q '"only.test.example"' "$TMP/up2/upstreams.json" || return 1
  kill -TERM "$pid"
  tries=0
  while kill -0 "$pid" 2> /dev/null; do
    tries=$((tries + 1)); [ $tries -lt 50 ] || { echo "still running after SIGTERM"; exec 8>&-; return 1; }; sleep 0.1
  done
  exec 8>&-
}
check "the upstreams exit on SIGTERM (and --names sets the certificate's names)" sigterm_ends_it

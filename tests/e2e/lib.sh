# Shell helpers for end-to-end tests: each check prints "ok - ..." or "not ok - ...".
LUAGENT=${LUAGENT:-./luagent}
SUITE=$(basename "$0" .sh)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/luagent-e2e-XXXXXX")
TINY_DISKS=""
trap 'for d in $TINY_DISKS; do umount "$d" 2>/dev/null; done; rm -rf "$TMP"' EXIT

# fake_requests QUEUE: how many requests the fake provider's QUEUE got
fake_requests() { "$LUAGENT" run -q /dev/stdin -- "$1" <<'LUA'
package.path = "tests/lua/?.lua;" .. package.path
print(#require("fake_provider_client").requests((...)))
LUA
}

# tiny_disk DIR SIZE NAME: a tmpfs of SIZE (e.g. 64k) mounted at DIR, unmounted at exit, for
# the check NAME; when it cannot be (not root, no tmpfs) prints NAME's "# SKIP" line and fails
tiny_disk() {
  if [ "$(id -u)" != 0 ]; then echo "ok - $SUITE: $3 # SKIP not root (the test mounts a $2 tmpfs)"; return 1; fi
  mkdir -p "$1"
  if ! mount -t tmpfs -o "size=$2" tmpfs "$1" 2> "$TMP/mount.err"; then
    echo "ok - $SUITE: $3 # SKIP cannot mount a tmpfs: $(cat "$TMP/mount.err")"; return 1
  fi
  TINY_DISKS="$TINY_DISKS $1"
}

# Errors for people: no Lua traceback and no path into luagent's own library
# in what the last run_luagent printed on stderr (a bug report is the one place
# those belong). no_internals is a check's command; $NO_INTERNALS the same test
# for a check's `sh -c` text.
no_internals() { ! grep -q 'stack traceback' "$TMP/stderr" && ! grep -q 'lua/luagent/[a-z_/]*[.]lua:[0-9]' "$TMP/stderr"; }
NO_INTERNALS="! grep -q 'stack traceback' $TMP/stderr && ! grep -q 'lua/luagent/[a-z_/]*[.]lua:[0-9]' $TMP/stderr"

# check NAME COMMAND...: passes when the command succeeds
check() {
  name=$1; shift
  if "$@" > "$TMP/check.out" 2>&1; then
    echo "ok - $SUITE: $name"
  else
    echo "not ok - $SUITE: $name"
    sed 's/^/    /' "$TMP/check.out" >&2
  fi
}

# run_luagent ARGS...: runs luagent, keeping stdout, stderr and status in $TMP
run_luagent() {
  "$LUAGENT" "$@" > "$TMP/stdout" 2> "$TMP/stderr"
  echo $? > "$TMP/status"
}

status_is() { [ "$(cat "$TMP/status")" = "$1" ] || { echo "status $(cat "$TMP/status"), expected $1"; cat "$TMP/stderr"; return 1; }; }
stderr_has() { grep -q -- "$1" "$TMP/stderr" || { echo "stderr lacks '$1':"; cat "$TMP/stderr"; return 1; }; }
stdout_has() { grep -q -- "$1" "$TMP/stdout" || { echo "stdout lacks '$1':"; cat "$TMP/stdout"; return 1; }; }
stdout_is() { [ "$(cat "$TMP/stdout")" = "$1" ] || { echo "stdout is '$(cat "$TMP/stdout")', expected '$1'"; return 1; }; }
stderr_lines() { [ "$(wc -l < "$TMP/stderr")" -eq "$1" ] || { echo "stderr has $(wc -l < "$TMP/stderr") lines, expected $1:"; cat "$TMP/stderr"; return 1; }; }

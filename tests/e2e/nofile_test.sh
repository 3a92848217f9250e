# Open files: every sandbox session holds a descriptor, so luagent raises its
# soft limit to the hard one (at most 65536) at start, and a connection that
# fails because none is left says so instead of "is the engine running?".
. tests/e2e/lib.sh

cat > "$TMP/limit.lua" <<'LUA'
local limits = assert(luagent.fs.read("/proc/self/limits"))
print(limits:match("Max open files%s+(%d+)"))
LUA
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -gt 256 ]; then
  want=$([ "$hard" = unlimited ] || [ "$hard" -gt 65536 ] && echo 65536 || echo "$hard")
  (ulimit -Sn 256 && run_luagent run "$TMP/limit.lua")
  check "the soft limit of open files (256) is raised to the hard one, at most 65536 ($want)" stdout_is "$want"
else
  echo "ok - $SUITE: the soft limit of open files is raised # SKIP the hard limit is $hard"
fi

cat > "$TMP/exhaust.lua" <<'LUA'
local engine = require "luagent.engine_client"
local socket = "unix://" .. luagent.args[1] .. "/no-engine.sock"
assert(not engine.connect{host = socket}) -- libcurl is loaded (at first use) while a descriptor is left
local held = {}
while true do
  local f = io.open("/dev/null")
  if not f then break end
  held[#held + 1] = f
end
local client, err = engine.connect{host = socket}
print(client, err.kind)
print(err.message)
LUA
(ulimit -n 64 && run_luagent run "$TMP/exhaust.lua" -- "$TMP")
check "out of descriptors, a connection to the engine says so, not 'is the engine running?'" sh -c "
  grep -q '^nil	docker_unreachable$' $TMP/stdout && grep -q 'no file descriptor left' $TMP/stdout &&
  grep -q 'ulimit -n' $TMP/stdout && ! grep -q 'Is the Docker engine running' $TMP/stdout"

# needs: docker
# Sandboxes from the command line: Ctrl-C, a dead engine, leftovers of a crash.
. tests/e2e/lib.sh

count_label() { docker ps -aq --filter "label=$1" | wc -l; }
count_volumes() { docker volume ls -q --filter "label=$1" | wc -l; }

tag="luagent.test=$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')"
key=${tag#*=}

cat > "$TMP/long.lua" <<LUA
local sandbox = require "luagent.sandbox"
local box <close> = assert(sandbox.open{labels = {["luagent.test"] = "$key"}})
print("ready"); io.stdout:flush()
box:exec("sleep 60")
LUA
"$LUAGENT" run "$TMP/long.lua" > "$TMP/stdout" 2> "$TMP/stderr" &
pid=$!
for i in $(seq 1 100); do grep -q ready "$TMP/stdout" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
check "a sandbox exists while the recipe runs" sh -c "[ \$(docker ps -q --filter label=$tag | wc -l) -eq 1 ]"
kill -INT $pid
wait $pid
echo $? > "$TMP/status"
check "Ctrl-C during a long exec exits 130 and leaves no container or volume" sh -c "
  [ \"\$(cat $TMP/status)\" = 130 ] && [ \$(docker ps -aq --filter label=$tag | wc -l) -eq 0 ] &&
  [ \$(docker volume ls -q --filter label=$tag | wc -l) -eq 0 ]"

cat > "$TMP/forgets.lua" <<LUA
local sandbox = require "luagent.sandbox"
local box = assert(sandbox.open{labels = {["luagent.test"] = "$key-forgot"}})  -- never closed
assert(box:exec("true"))
LUA
run_luagent run "$TMP/forgets.lua"
check "a session the recipe forgot to close is removed when the run ends" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ \$(docker ps -aq --filter label=luagent.test=$key-forgot | wc -l) -eq 0 ]"

cat > "$TMP/garbage.lua" <<LUA
local sandbox = require "luagent.sandbox"
local function forget()
  local box = assert(sandbox.open{labels = {["luagent.test"] = "$key-garbage"}})
  assert(box:exec("true"))
  return box.container
end
local id = forget()
local client = assert(sandbox.engine())
local calls, real = 0, client.call
client.call = function(...) calls = calls + 1 return real(...) end
collectgarbage(); collectgarbage()
client.call = nil
local info = client:call("GET", "/containers/" .. id .. "/json")
print(("engine calls while collecting: %d; still running: %s"):format(calls, tostring(info and info.State.Running)))
LUA
run_luagent run "$TMP/garbage.lua"
check "a box that became garbage is left alone by the collector and removed when the run ends" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'engine calls while collecting: 0; still running: true' $TMP/stdout &&
  [ \$(docker ps -aq --filter label=luagent.test=$key-garbage | wc -l) -eq 0 ] &&
  [ \$(docker volume ls -q --filter label=luagent.test=$key-garbage | wc -l) -eq 0 ]"

cat > "$TMP/fails.lua" <<LUA
local sandbox = require "luagent.sandbox"
local box = assert(sandbox.open{labels = {["luagent.test"] = "$key-error"}})
error("the recipe broke")
LUA
run_luagent run "$TMP/fails.lua"
check "a recipe error still removes its sandboxes" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && [ \$(docker ps -aq --filter label=luagent.test=$key-error | wc -l) -eq 0 ]"

cat > "$TMP/nodocker.lua" <<'LUA'
local sandbox = require "luagent.sandbox"
local box = assert(sandbox.open{})
LUA
DOCKER_HOST=unix://$TMP/missing.sock "$LUAGENT" run "$TMP/nodocker.lua" > "$TMP/stdout" 2> "$TMP/stderr"
echo $? > "$TMP/status"
check "a dead engine gives one clear error naming the socket and how to start it" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && head -1 $TMP/stderr | grep -q 'missing.sock' &&
  head -1 $TMP/stderr | grep -q 'dockerd'"

cat > "$TMP/crash.lua" <<LUA
local sandbox = require "luagent.sandbox"
local box = assert(sandbox.open{labels = {["luagent.test"] = "$key-crash"}})
print("ready"); io.stdout:flush()
luagent.sleep(60)
LUA
"$LUAGENT" run "$TMP/crash.lua" > "$TMP/stdout" 2> "$TMP/stderr" &
pid=$!
for i in $(seq 1 100); do grep -q ready "$TMP/stdout" 2>/dev/null && break; sleep 0.1; done
kill -KILL $pid
wait $pid 2>/dev/null
run_luagent sandbox ls
check "after a crash, 'sandbox ls' shows the leftover with its owner gone" sh -c "
  [ \$(docker ps -aq --filter label=luagent.test=$key-crash | wc -l) -eq 1 ] && grep -q 'gone' $TMP/stdout"
run_luagent sandbox prune
check "'sandbox prune' removes it and its volume" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ \$(docker ps -aq --filter label=luagent.test=$key-crash | wc -l) -eq 0 ] &&
  [ \$(docker volume ls -q --filter label=luagent.test=$key-crash | wc -l) -eq 0 ]"

"$LUAGENT" run "$TMP/crash.lua" > "$TMP/stdout" 2> "$TMP/stderr" &
pid=$!
for i in $(seq 1 100); do grep -q ready "$TMP/stdout" 2>/dev/null && break; sleep 0.1; done
kill -KILL $pid
wait $pid 2>/dev/null
cat > "$TMP/next.lua" <<'LUA'
local sandbox = require "luagent.sandbox"
local box <close> = assert(sandbox.open{})
LUA
run_luagent run "$TMP/next.lua"
check "the next run that opens a sandbox sweeps leftovers of dead runs away" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ \$(docker ps -aq --filter label=luagent.test=$key-crash | wc -l) -eq 0 ]"

run_luagent doctor
check "doctor reports the engine and the image" sh -c "grep -q '^ok   docker' $TMP/stdout && grep -q '^ok   image' $TMP/stdout"

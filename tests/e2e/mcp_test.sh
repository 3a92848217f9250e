# MCP servers from the command line: Ctrl-C during a call to a real server
# (server-everything over stdio) cancels the call at the server, runs the
# recipe's <close> handlers, kills the server, and the trace keeps it all;
# the live view shows the call's progress.
. tests/e2e/lib.sh
export LUAGENT_RUNS_DIR="$TMP/runs"
SERVER=$(sh tests/mcp-servers.sh)/node_modules/.bin/mcp-server-everything

cat > "$TMP/long_call.lua" <<'LUA'
local server, marker = ...
local list <close> = assert(luagent.tools.mcp{command = {server}, name = "everything",
                                              only = {"trigger-long-running-operation"}})
local guard <close> = setmetatable({}, {__close = function() luagent.fs.write(marker, "closed") end})
local sub = luagent.events.subscribe(function(ev)
  if ev.type == "mcp_progress" then print("ready"); io.stdout:flush() end
end)
list[1].handler({duration = 60, steps = 120}, {turn = 1})
LUA

"$LUAGENT" run "$TMP/long_call.lua" -- "$SERVER" "$TMP/closed.txt" > "$TMP/stdout" 2> "$TMP/stderr" &
pid=$!
for i in $(seq 1 300); do grep -q ready "$TMP/stdout" 2>/dev/null && break; sleep 0.1; done
kill -INT $pid
wait $pid
echo $? > "$TMP/status"
trace=$(ls "$LUAGENT_RUNS_DIR"/*/trace.jsonl)
server_pid=$(grep '"type":"mcp_start"' "$trace" | sed 's/.*"pid":\([0-9]*\).*/\1/')

check "the live view shows the MCP call's progress" stderr_has "turn 1  trigger-long-running-operation  progress 1/120"
check "Ctrl-C during an MCP call: exit 130, the recipe's <close> handlers ran" sh -c "
  [ \"\$(cat $TMP/status)\" = 130 ] && [ \"\$(cat $TMP/closed.txt)\" = closed ]"
check "the server process is gone" sh -c "[ -n '$server_pid' ] && ! kill -0 $server_pid 2>/dev/null"
check "the trace has the call cancelled at the server, the server closed and the run interrupted" sh -c "
  grep -q '\"type\":\"mcp_cancelled\"' $trace && grep -q '\"method\":\"tools/call\"' $trace &&
  grep -q '\"type\":\"mcp_close\"' $trace && grep -q '\"status\":\"interrupted\"' $trace"

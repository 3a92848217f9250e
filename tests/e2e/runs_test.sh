# `luagent runs [DIR] [--json]`: the runs of a runs folder, newest first, with
# their status read from hand-made run folders (no Docker, no model): ended
# ok, failed, interrupted, incomplete, waiting; resumable after a failure;
# running (a lock held by a live process), resumable or killed (no run_end, a
# dead lock holder); a resumed run; a big trace read at its ends; --json; an
# empty or missing folder; bad usage.
. tests/e2e/lib.sh

R="$TMP/runs"
mkdir -p "$R"
export TZ=UTC0 # the start times shown are local

# event TYPE FIELDS: one trace line
event() { printf '{"type":"%s"%s}\n' "$1" "${2:+,$2}"; }
start() { event run_start "\"recipe\":\"recipes/$1.lua\",\"time\":$2,\"t\":0"; }
agent_end() { event agent_end "\"turns\":$1,\"cost\":$2,\"stopped_by\":\"done\""; }
run_end() { event run_end "\"status\":\"$1\"${2:+,\"error\":\"$2\"}"; }
# journal ID: the files of a run that made a model call (it can be resumed)
journal() {
  echo '{"k":"model","a":"agent#1","n":1}' > "$R/$1/journal.jsonl"
  printf '%s\0recipes/demo.lua\0' "$PWD" > "$R/$1/resume.argv"
}
# run ID: its folder, the trace from stdin
run() { mkdir -p "$R/$1/output" && cat > "$R/$1/trace.jsonl"; }

{ start demo 1767261600; agent_end 3 0.0123; run_end ok; } | run 20260101-100000-demo-0001
{ start demo 1767261660; agent_end 2 0.01; run_end failed "the recipe returned exit status 1"; } | run 20260101-100100-demo-0002
{ start demo 1767261720; agent_end 2 0.01; run_end failed "stopped by max_turns"; } | run 20260101-100200-demo-0003
journal 20260101-100200-demo-0003
{ start demo 1767261780; run_end interrupted "stopped by Ctrl-C"; } | run 20260101-100300-demo-0004
journal 20260101-100300-demo-0004
{ start demo 1767261840; agent_end 4 0.02; run_end incomplete "output/report.md was not copied"; } | run 20260101-100400-demo-0005
{ start triage 1767261900
  event run_end '"status":"waiting","waiting":{"run_id":"20260101-100500-triage-0006","agent":"triage","turn":2,"call":{"id":"call_7","tool":"run_command","arguments":{"command":"rm -rf /data"}}}'
} | run 20260101-100500-triage-0006
journal 20260101-100500-triage-0006
start demo 1767261960 | run 20260101-100600-demo-0007                           # killed before any model call
{ start demo 1767262020; event agent_turn '"turn":1'; } | run 20260101-100700-demo-0008  # killed, with a journal
journal 20260101-100700-demo-0008
true & dead=$!
wait $dead
echo "$dead 12345" > "$R/20260101-100700-demo-0008/journal.lock"
start demo 1767262080 | run 20260101-100800-demo-0009                           # running: a live lock holder
journal 20260101-100800-demo-0009
sleep 30 & live=$!
trap 'kill $live 2>/dev/null; rm -rf "$TMP"' EXIT
live_start=$("$LUAGENT" run -q /dev/stdin -- "$live" <<'LUA'
print(require("luagent.sys").process_start(tonumber((...))))
LUA
)
echo "$live $live_start" > "$R/20260101-100800-demo-0009/journal.lock"
{ start demo 1767262140; agent_end 2 0.01; run_end failed "stopped by max_turns"
  start demo 1767262200; agent_end 6 0.03; run_end ok; } | run 20260101-100900-demo-0010   # resumed, then ended
journal 20260101-100900-demo-0010
{ start demo 1767262260; run_end failed "stopped by max_turns"; start demo 1767262320; } | run 20260101-101000-demo-0011
journal 20260101-101000-demo-0011                                                # resumed, killed again
# a big trace: its run_start at the head, its end at the tail
{ start big 1767262380
  i=0; while [ $i -lt 3000 ]; do
    event tool_result "\"content\":\"$(printf '%0500d' 0)\""; i=$((i + 1)); done
  agent_end 9 0.5; run_end ok; } | run 20260101-101100-big-0012
# not runs: a folder without a trace, a file
mkdir "$R/notes" && echo hi > "$R/README"
# a folder named otherwise: its start from its run_start
{ start handmade 1767200000; run_end ok; } | run handmade

run_luagent runs "$R"
cp "$TMP/stdout" "$TMP/list"
# row ID: the line of that run
row() { grep "^$1 " "$TMP/list"; }
# after ID TEXT: the line under that run's
after() { grep -A1 "^$1 " "$TMP/list" | sed -n 2p | grep -qF -- "$2" || { echo "under $1: $(grep -A1 "^$1 " "$TMP/list")"; return 1; }; }
has() { row "$1" | grep -q -- "$2" || { echo "$1: '$(row "$1")' lacks '$2'"; return 1; }; }

check "lists every run folder, one line each under a header, exit 0" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ ! -s $TMP/stderr ] && head -1 $TMP/list | grep -q '^ID  *STATUS  *STARTED  *TURNS  *COST  *RECIPE\$' &&
  [ \$(grep -c '^20260101-\|^handmade ' $TMP/list) = 13 ] && ! grep -q '^notes\|^README' $TMP/list || { cat $TMP/list $TMP/stderr; exit 1; }"
check "newest first (by the id's time, else the first run_start's)" sh -c "
  grep -o '^20260101-[0-9-]*[a-z]*-[0-9]*\|^handmade' $TMP/list | tr '\n' ' ' |
  grep -q '^20260101-101100-big-0012 20260101-101000-demo-0011 .* 20260101-100000-demo-0001 handmade \$' || { cat $TMP/list; exit 1; }"
ok_row() { has 20260101-100000-demo-0001 ' ok ' && has 20260101-100000-demo-0001 '2026-01-01 10:00:00' &&
  has 20260101-100000-demo-0001 ' 3  \$0.0123  recipes/demo.lua$'; }
check "ok: its start, turns, cost and recipe" ok_row
check "failed without a journal: not resumable, the error under it" \
  sh -c "grep -A1 '^20260101-100100-demo-0002 .* failed  ' $TMP/list | grep -q '^    the recipe returned exit status 1'"
check "failed with a journal: 'failed, resumable', its error and the command" sh -c "
  grep -A2 '^20260101-100200-demo-0003 ' $TMP/list | tail -2 | tr '\n' '|' |
  grep -qxF '    stopped by max_turns|    resume: luagent run --resume $R/20260101-100200-demo-0003|'"
check "... on its line" has 20260101-100200-demo-0003 ' failed, resumable '
check "interrupted with a journal: resumable" has 20260101-100300-demo-0004 ' interrupted, resumable '
check "incomplete: as run_end says" has 20260101-100400-demo-0005 ' incomplete '
check "waiting: what for" after 20260101-100500-triage-0006 'waits for approval of run_command {"command":"rm -rf /data"} (call call_7)'
check "... and how to go on" sh -c "grep -A2 '^20260101-100500-triage-0006 .* waiting ' $TMP/list |
  grep -qF 'go on: luagent approve $R/20260101-100500-triage-0006 (or --deny call_7 --why TEXT), then luagent run --resume $R/20260101-100500-triage-0006'"
check "no run_end, no journal: killed" has 20260101-100600-demo-0007 ' killed '
check "no run_end, a journal, its lock holder dead: resumable" has 20260101-100700-demo-0008 ' resumable '
check "... with the command" after 20260101-100700-demo-0008 "resume: luagent run --resume $R/20260101-100700-demo-0008"
check "no run_end, its lock holder alive: running, no command" sh -c "
  grep -A1 '^20260101-100800-demo-0009 .* running ' $TMP/list | sed -n 2p | grep -q '^2026'"
check "resumed, then ended ok: ok, the turns and cost of the last process" has 20260101-100900-demo-0010 ' ok .* 6  \$0.0300 '
check "resumed, then killed: resumable (no run_end after the last run_start)" has 20260101-101000-demo-0011 ' resumable '
check "a big trace: its end from the tail, its recipe from the head" has 20260101-101100-big-0012 ' ok .* 9  \$0.5000  recipes/big.lua'

# Under the runs folder --resume looks in, the command names the run by its id.
LUAGENT_RUNS_DIR="$R" run_luagent runs
check "LUAGENT_RUNS_DIR: the same list; resume by id" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q '^    resume: luagent run --resume 20260101-100700-demo-0008\$' $TMP/stdout"

# --json: one object per run per line
LUAGENT_RUNS_DIR="$R" run_luagent runs --json
json_ok() {
  [ "$(cat "$TMP/status")" = 0 ] && [ "$(wc -l < "$TMP/stdout")" = 13 ] || { cat "$TMP/stdout" "$TMP/stderr"; return 1; }
  "$LUAGENT" run -q /dev/stdin -- "$TMP/stdout" <<'LUA'
local json, by = require "luagent.json", {}
for line in io.lines((...)) do local r = assert(json.decode(line)); by[r.id] = r end
local function is(id, field, want)
  local got = by[id][field]
  if got ~= want then error(("%s: %s is %s, expected %s"):format(id, field, tostring(got), tostring(want)), 0) end
end
is("20260101-100000-demo-0001", "status", "ok"); is("20260101-100000-demo-0001", "turns", 3)
is("20260101-100000-demo-0001", "cost", 0.0123); is("20260101-100000-demo-0001", "started", 1767261600)
is("20260101-100000-demo-0001", "resumable", false); is("20260101-100000-demo-0001", "recipe", "recipes/demo.lua")
is("20260101-100200-demo-0003", "status", "failed"); is("20260101-100200-demo-0003", "resumable", true)
is("20260101-100200-demo-0003", "resume", "luagent run --resume 20260101-100200-demo-0003")
is("20260101-100500-triage-0006", "status", "waiting")
assert(by["20260101-100500-triage-0006"].waiting.call.tool == "run_command", "waiting.call.tool")
is("20260101-100600-demo-0007", "status", "killed"); is("20260101-100700-demo-0008", "status", "resumable")
is("20260101-100800-demo-0009", "status", "running"); is("20260101-100800-demo-0009", "resumable", false)
is("handmade", "started", 1767200000)
LUA
}
check "--json: one object per run per line, with status, resumable, resume, started, turns, cost" json_ok

# Nothing to list: said plainly, exit 0.
mkdir "$TMP/empty"
run_luagent runs "$TMP/empty"
check "an empty folder: says so, exit 0" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q '^no runs in $TMP/empty: it holds no run folder\$' $TMP/stdout"
run_luagent runs "$TMP/nowhere" --json
check "a missing folder, --json: says so on stderr, nothing on stdout, exit 0" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ ! -s $TMP/stdout ] && grep -q 'there is no such folder' $TMP/stderr"
case $LUAGENT in /*) bin=$LUAGENT ;; *) bin=$PWD/$LUAGENT ;; esac
(cd "$TMP/empty" && env -u LUAGENT_RUNS_DIR "$bin" runs > "$TMP/stdout" 2>&1; echo $? > "$TMP/status")
check "no ./runs: names the default, exit 0" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q '^no runs in runs (the runs folder: \$LUAGENT_RUNS_DIR, else ./runs)' $TMP/stdout"

# Bad usage: exit 2 with the usage line.
for bad in "--bogus" "$R $TMP/empty" "$R/README"; do
  # shellcheck disable=SC2086
  run_luagent runs $bad
  check "bad usage (${bad##*/}): exit 2 with the usage line" sh -c "
    [ \"\$(cat $TMP/status)\" = 2 ] && [ ! -s $TMP/stdout ] && grep -q '^usage: luagent runs \[DIR\] \[--json\]\$' $TMP/stderr"
done
kill "$live" 2> /dev/null

# The command line: errors, settings, arguments, the embedded library, Ctrl-C.
. tests/e2e/lib.sh

cat > "$TMP/syntax.lua" <<'LUA'
local x = 1
local y = = 2
LUA
run_luagent run "$TMP/syntax.lua"
check "a syntax error reports FILE:LINE and exits 1" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q 'syntax.lua:2:' $TMP/stderr"

cat > "$TMP/fails.lua" <<'LUA'
local function inner() error("the data file is empty") end
local function outer() inner() end
outer()
LUA
run_luagent run "$TMP/fails.lua"
check "a runtime error prints FILE:LINE: message and a traceback, exit 1" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] &&
  head -1 $TMP/stderr | grep -q 'fails.lua:1: the data file is empty' &&
  grep -q 'stack traceback' $TMP/stderr && grep -q 'fails.lua:2: in' $TMP/stderr"

run_luagent run "$TMP/does-not-exist.lua"
check "a missing recipe is a one-line error with exit 2" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && [ \$(wc -l < $TMP/stderr) -eq 1 ] &&
  grep -q \"cannot open recipe '$TMP/does-not-exist.lua'\" $TMP/stderr"

# a recipe named without .lua, or by its YAML: the command that runs it
printf 'print(1)\n' > "$TMP/named.lua"; printf 'a: 1\n' > "$TMP/named.yaml"; printf 'name: x\n' > "$TMP/named.eval.yaml"
run_luagent run "$TMP/named"
check "run NAME (no .lua) where NAME.lua is there: exit 2 and 'did you mean luagent run NAME.lua'" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q \"did you mean 'luagent run $TMP/named.lua'?\" $TMP/stderr"
run_luagent run "$TMP/named.yaml"
check "run NAME.yaml: it holds the recipe's settings; the command that runs the recipe" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] &&
  grep -q \"$TMP/named.yaml holds a recipe's settings; run the recipe, which reads it: 'luagent run $TMP/named.lua'\" $TMP/stderr"
run_luagent run "$TMP/named.eval.yaml"
check "run NAME.eval.yaml: an eval spec, run by luagent eval" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q \"is an eval spec: run it with 'luagent eval $TMP/named.eval.yaml'\" $TMP/stderr"

# --set of the wrong shape for the recipe's YAML: one line naming the setting and the
# shape it needs, no traceback, exit 2, and the run's last line and trace say failed
mkdir -p "$TMP/shape"
printf 'model:\n  provider: openai\n  name: gpt-x\nlimits:\n  max_turns: 3\nlabel: plain\n' > "$TMP/shape/r.yaml"
printf 'local cfg = luagent.config("r.yaml")\nprint(cfg.limits.max_turns, cfg.model.name)\n' > "$TMP/shape/r.lua"
run_luagent run "$TMP/shape/r.lua" --set model=x
check "--set model=x (a scalar where the YAML has a table): one line naming it, exit 2" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && ! grep -q 'stack traceback' $TMP/stderr &&
  grep -q '^luagent: --set model=x: model is a table in r.yaml (name, provider), not a single value; set one of its fields, e.g. --set model.name=' $TMP/stderr"
run_luagent run "$TMP/shape/r.lua" --set limits=5
check "--set limits=5: the same, not 'attempt to index a number value'" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'limits is a table in r.yaml (max_turns)' $TMP/stderr &&
  ! grep -q 'attempt to index' $TMP/stderr"
run_luagent run "$TMP/shape/r.lua" --set label.x=1
check "--set label.x=1 where label is a string: says so, exit 2" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'label is a string in r.yaml (plain), not a table of settings' $TMP/stderr"
run_luagent run "$TMP/shape/r.lua" --set limits.max_turns=three
check "--set limits.max_turns=three where the YAML has a number: one line, the first cause, exit 2" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && [ \$(wc -l < $TMP/stderr) -eq 1 ] &&
  grep -q '^luagent: --set limits.max_turns=three: limits.max_turns is a number in r.yaml (3), not text; give a number, e.g. --set limits.max_turns=3' $TMP/stderr"
run_luagent run "$TMP/shape/r.lua" --set limits.max_turns=7 --set model.name=y
check "--set of the right shape still works" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q '^7	y' $TMP/stdout"

# typos are refused before anything starts, with a did-you-mean and for people: --set keys
# are checked against the recipe's own YAML (as luagent eval checks a variant's), options
# tables against their declarations in lua/meta
run_luagent run "$TMP/shape/r.lua" --set limits.max_turn=3
check "--set limits.max_turn=3: not a setting, did you mean max_turns; exit 2, nothing else said" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q \"^luagent: --set limits.max_turn: not a setting of the recipe (r.yaml has limits: max_turns) (did you mean 'max_turns'?)\" $TMP/stderr"
check "... with no Lua internals" no_internals
run_luagent run recipes/energy_anomaly.lua --set sandbox.memroy=512m
check "--set sandbox.memroy=512m on the energy recipe: did you mean memory, before any sandbox opens" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q \"sandbox.memroy: not a setting of the recipe (energy_anomaly.yaml has sandbox: .*memory.*) (did you mean 'memory'?)\" $TMP/stderr &&
  ! grep -q 'sandbox .* ready' $TMP/stderr"
run_luagent run recipes/energy_anomaly.lua --set model.provider=opneai
check "--set model.provider=opneai: the providers, did you mean openai, the local-server hint, the recipe's line" sh -c "
  grep -q \"model.provider 'opneai' is not a provider (did you mean 'openai'?); the providers are: anthropic, auto, openai, openai_responses, scripted\" $TMP/stderr &&
  grep -q 'model.base_url=' $TMP/stderr && grep -q '(at recipes/energy_anomaly.lua:[0-9]*)' $TMP/stderr"
check "... with no Lua internals" no_internals
printf 'local agent = luagent.agent\nlocal m = luagent.model.scripted(function() return {text = "x"} end)\nlocal a = agent.new{model = m, instruction = "Be brief."}\n' > "$TMP/typo.lua"
run_luagent run "$TMP/typo.lua"
check "agent.new{instruction = ...}: did you mean instructions, at the recipe's line 3" sh -c "
  grep -q \"agent.new: 'instruction' is not an option (did you mean 'instructions'?).*(at $TMP/typo.lua:3)\" $TMP/stderr"
check "... with no Lua internals" no_internals

# a recipe's skills are checked when its YAML is read, before its sandbox opens
"$LUAGENT" new sk --dir "$TMP/sk" > /dev/null
sed -i 's#^  - skills/csv-profile#  - skills/csv-profil#' "$TMP/sk/sk.yaml"
run_luagent run "$TMP/sk/sk.lua"
check "a misspelt skill folder in the YAML: one error naming it, before any sandbox opens" sh -c "
  [ \"\$(cat $TMP/status)\" != 0 ] &&
  grep -q 'sk.yaml: skills: the skill folder skills/csv-profil is not there' $TMP/stderr &&
  ! grep -q 'sandbox .* ready' $TMP/stderr && ! grep -q 'stack traceback' $TMP/stderr"

# a failed command's Python error is shown, not only its exit code: the live view's line of a
# tool result (and trace show's) ends with the last lines of its stderr; trace show takes a
# run folder, and --full before or after the trace
mkdir -p "$TMP/failed-run"
cat > "$TMP/failed-run/trace.jsonl" <<'JSONL'
{"type":"run_start","t":0,"run_id":"r-1","recipe":"x.lua"}
{"type":"tool_call","t":0.1,"turn":1,"id":"c1","name":"run_python","arguments":{"code":"1/0"}}
{"type":"tool_result","t":0.2,"turn":1,"id":"c1","name":"run_python","is_error":false,"duration":0.1,"content":"exit code 1 (took 0.10 s)\nstderr:\nTraceback (most recent call last):\n  File \"<python>\", line 1, in <module>\nZeroDivisionError: division by zero\n"}
{"type":"run_end","t":0.3,"run_id":"r-1","status":"ok","duration":0.3}
JSONL
run_luagent trace show "$TMP/failed-run"
check "trace show RUN_DIR reads its trace.jsonl; a failed command's stderr ends show" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'run_python .*exit code 1' $TMP/stdout &&
  grep -q '| ZeroDivisionError: division by zero' $TMP/stdout"
run_luagent trace show --full "$TMP/failed-run/trace.jsonl"
check "trace show --full FILE (the flag first) works as FILE --full does" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'File \"<python>\", line 1' $TMP/stdout"
run_luagent trace show "$TMP/failed-run" --full --nope
check "trace show with an unknown flag: the usage, exit 2" sh -c "[ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'usage: luagent trace show' $TMP/stderr"

# a recipe that returns an exit status (as the energy recipe does when its agent stopped on a
# model error): the run's last line and the trace's run_end say failed, as the status does
printf 'require("luagent.events").emit{type = "note"}\nreturn 3\n' > "$TMP/returns3.lua"
run_luagent run "$TMP/returns3.lua"
check "a recipe returning 3: exit 3, 'run ... failed', run_end failed with the reason (was: 'ok')" sh -c "
  [ \"\$(cat $TMP/status)\" = 3 ] && grep -q '^run .* failed in' $TMP/stderr $TMP/stdout &&
  tail -1 \$(ls -d \"\$LUAGENT_RUNS_DIR\"/*returns3*/trace.jsonl | tail -1) |
    grep -q '\"error\":\"the recipe returned exit status 3\".*\"status\":\"failed\"'"

# an input larger than the workspace: said before any session opens, naming the
# setting to raise; an expected error (an error value the recipe asserted) is its message and
# where, never a traceback
truncate -s 1G "$TMP/big.csv"
printf 'local sandbox = require "luagent.sandbox"\nlocal box = assert(sandbox.open{docker_host = "unix:///nonexistent.sock",\n  manifest = {["input/big.csv"] = sandbox.file("%s")}})\n' "$TMP/big.csv" > "$TMP/big.lua"
run_luagent run -q "$TMP/big.lua"
check "1 GiB staged into the 512 MiB workspace: which setting to raise, no traceback, before the engine is asked" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && ! grep -q 'stack traceback' $TMP/stderr && [ \$(wc -l < $TMP/stderr) -eq 1 ] &&
  grep -q '^luagent: sandbox.open: the manifest stages 1.0 GiB (input/big.csv 1.0 GiB) but the workspace holds 512.0 MiB (workspace_size = 512m); raise workspace_size' $TMP/stderr &&
  grep -q '(at $TMP/big.lua:2)\$' $TMP/stderr"

run_luagent frobnicate
check "an unknown command exits 2 with a hint" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q \"see 'luagent help'\" $TMP/stderr"

run_luagent run --bogus "$TMP/fails.lua"
check "an unknown option exits 2 with a hint" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q \"unknown option '--bogus'\" $TMP/stderr"

run_luagent run "$TMP/fails.lua" --set novalue
check "--set without = exits 2" sh -c "[ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'key=value' $TMP/stderr"

run_luagent run "$TMP/fails.lua" --set 'list=[1,'
check "a --set value that is broken YAML exits 2, naming the setting, line and column" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && [ \$(wc -l < $TMP/stderr) -eq 1 ] &&
  grep -q '^luagent: --set list:[0-9]*:[0-9]*: ' $TMP/stderr"

run_luagent run "$TMP/fails.lua" --replay "$TMP/no-such-recording.jsonl"
check "a --replay file that cannot be read exits 2 before the recipe runs" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q '^luagent: --replay: cannot open' $TMP/stderr &&
  ! grep -q 'data file is empty' $TMP/stderr && ! grep -q 'cannot load the luagent library' $TMP/stderr"

echo 'local h = require "luagent.host"; print(h.record, h.replay, h.quiet, h.json, h.settings[1])' > "$TMP/options.lua"
printf '{"luagent_recording":1}\n' > "$TMP/b.jsonl"   # an empty recording: --replay checks its file
run_luagent run --record "$TMP/a.jsonl" --replay="$TMP/b.jsonl" -q --json --set=k=v "$TMP/options.lua"
check "options are told apart by name: --record FILE, --replay=FILE, -q, --json, --set=k=v" \
  sh -c "[ \"\$(cat $TMP/stdout)\" = \"\$(printf '%s\t%s\ttrue\ttrue\tk=v' $TMP/a.jsonl $TMP/b.jsonl)\" ]"
run_luagent run --replay "$TMP/b.jsonl" --quiet "$TMP/options.lua"
check "--replay alone sets no recording" sh -c "[ \"\$(cat $TMP/stdout)\" = \"\$(printf 'nil\t%s\ttrue\tfalse\tnil' $TMP/b.jsonl)\" ]"
run_luagent run "$TMP/options.lua" --record
check "an option without its value exits 2 and says what it needs" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q -- '--record needs a file' $TMP/stderr"
run_luagent run --json=yes "$TMP/options.lua"
check "a flag given a value is an unknown option, exit 2" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q \"unknown option '--json=yes'\" $TMP/stderr"

cat > "$TMP/settings.lua" <<'LUA'
local s = luagent.settings
print(s.a.b, math.type(s.a.b), s.flag, s.ratio, s.name, s.list and #s.list, ...)
LUA
run_luagent run "$TMP/settings.lua" --set a.b=3 --set flag=true --set ratio=0.5 --set name=gpt-4o --set 'list=[1, 2]' -- one two
check "--set a.b=3 arrives as the integer 3, values typed like YAML, args after --" \
  sh -c "[ \"\$(cat $TMP/stdout)\" = \"\$(printf '3\tinteger\ttrue\t0.5\tgpt-4o\t2\tone\ttwo')\" ]"

mkdir -p "$TMP/beside"
echo 'return { greet = function() return "hello from beside" end }' > "$TMP/beside/mymod.lua"
echo 'print(require("mymod").greet())' > "$TMP/beside/main.lua"
run_luagent run "$TMP/beside/main.lua"
check "a recipe requires modules that sit beside it" sh -c "[ \"\$(cat $TMP/stdout)\" = 'hello from beside' ]"

mkdir -p "$TMP/lib/luagent"
cp -r lua/luagent/* "$TMP/lib/luagent/"
sed 's/^return luagent$/luagent.from_disk = true\nreturn luagent/' lua/luagent/init.lua > "$TMP/lib/luagent/init.lua"
echo 'print(luagent.from_disk)' > "$TMP/disk.lua"
run_luagent run --lua-path "$TMP/lib" "$TMP/disk.lua"
check "--lua-path loads the Lua library from disk" sh -c "[ \"\$(cat $TMP/stdout)\" = true ]"
LUAGENT_PATH="$TMP/lib" "$LUAGENT" run "$TMP/disk.lua" > "$TMP/stdout" 2>&1
check "LUAGENT_PATH does the same" sh -c "[ \"\$(cat $TMP/stdout)\" = true ]"
run_luagent run "$TMP/disk.lua"
check "without it the embedded library is used" sh -c "[ \"\$(cat $TMP/stdout)\" = nil ]"

# interrupt_when_ready COMMAND...: runs it in the background and sends it
# SIGINT (Ctrl-C) once it printed "ready"; keeps stdout, stderr and status in $TMP
interrupt_when_ready() {
  "$@" > "$TMP/stdout" 2> "$TMP/stderr" &
  pid=$!
  for i in $(seq 1 300); do grep -q ready "$TMP/stdout" 2>/dev/null && break; sleep 0.1; done
  signalled=$(date +%s) # what a check times is from the signal on (start-up under load is not the point)
  kill -INT $pid
  wait $pid
  echo $? > "$TMP/status"
}

cat > "$TMP/interrupt.lua" <<'LUA'
local marker = ...
local guard <close> = setmetatable({}, {__close = function()
  luagent.sleep(0.1) -- cleanup may itself wait
  luagent.fs.write(marker, "closed")
end})
local worker = luagent.spawn(function() luagent.sleep(60) end)
print("ready"); io.stdout:flush()
luagent.sleep(60)
LUA
interrupt_when_ready "$LUAGENT" run "$TMP/interrupt.lua" -- "$TMP/closed.txt"
check "Ctrl-C stops the run cleanly: <close> handlers run, exit 130" sh -c "
  [ \"\$(cat $TMP/status)\" = 130 ] && [ \"\$(cat $TMP/closed.txt)\" = closed ] && grep -q interrupted $TMP/stderr"

cat > "$TMP/busy.lua" <<'LUA'
print("ready"); io.stdout:flush()
local n = 0
while true do n = n + 1 end
LUA
interrupt_when_ready "$LUAGENT" run "$TMP/busy.lua"
check "Ctrl-C also stops a busy loop that never waits" sh -c "[ \"\$(cat $TMP/status)\" = 130 ]"

cat > "$TMP/stuck.lua" <<'LUA'
local guard <close> = setmetatable({}, {__close = function(_, err)
  print("closing after: " .. tostring(err)); io.stdout:flush()
  luagent.sleep(60) -- a cleanup that never finishes
end})
print("ready"); io.stdout:flush()
luagent.sleep(60)
LUA
interrupt_when_ready env LUAGENT_CANCEL_GRACE=1 "$LUAGENT" run "$TMP/stuck.lua"
took=$(( $(date +%s) - signalled ))
check "Ctrl-C with a <close> handler that never finishes: gives up after the grace period, exit 130" sh -c "
  { [ \"\$(cat $TMP/status)\" = 130 ] && [ $took -lt 10 ] || { echo \"status \$(cat $TMP/status), $took s\"; false; }; } &&
  grep -q 'closing after: cancelled: interrupted (Ctrl-C)' $TMP/stdout &&
  grep -q 'luagent: tasks did not stop within 1 s of cancelling; exiting' $TMP/stderr &&
  grep -q \"luagent: leftover sandboxes are removed by 'luagent sandbox prune'\" $TMP/stderr"

cat > "$TMP/main_fails.lua" <<'LUA'
luagent.spawn(function()
  local _guard <close> = setmetatable({}, {__close = function(_, err) print("worker stopped: " .. tostring(err)) end})
  luagent.sleep(60)
end)
luagent.sleep(0.05)
error("the main task gives up", 0)
LUA
run_luagent run "$TMP/main_fails.lua"
check "when the main task fails the other tasks are cancelled, and their error says why" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q 'the main task gives up' $TMP/stderr &&
  grep -q 'worker stopped: cancelled: .*the main task failed' $TMP/stdout"

cat > "$TMP/close_main.lua" <<'LUA'
local me = require("luagent.sched").current()
me:close()
print(tostring(me))
error("failed after closing its own handle", 0)
LUA
run_luagent run "$TMP/close_main.lua"
check "the host still reads a main task whose handle the recipe closed" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q '^task 1 (closed)' $TMP/stdout &&
  grep -q 'failed after closing its own handle' $TMP/stderr"

cat > "$TMP/orphan.lua" <<'LUA'
luagent.spawn(function() luagent.sleep(0.05); error("nobody waits for me") end)
LUA
run_luagent run "$TMP/orphan.lua"
check "an error in a task nobody waits for is reported, not lost" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q 'nobody waits for me' $TMP/stderr"

echo 'print(1 + 1); print(luagent.json.encode({a = 1}))' | "$LUAGENT" repl > "$TMP/stdout" 2>&1
check "repl evaluates lines with every primitive loaded" sh -c "grep -qx 2 $TMP/stdout && grep -qx '{\"a\":1}' $TMP/stdout"

printf '%s\n' 'luagent.spawn(function() luagent.sleep(5) end); error("the first line fails", 0)' \
  'luagent.sleep(1.5); print("still here")' | LUAGENT_CANCEL_GRACE=1 "$LUAGENT" repl > "$TMP/stdout" 2>&1
check "repl: a failed line's cancellation does not end a later line that waits longer than the grace" \
  sh -c "grep -q 'the first line fails' $TMP/stdout && grep -qx 'still here' $TMP/stdout"

run_luagent version
check "version prints the version" sh -c "grep -q '^luagent [0-9]' $TMP/stdout"

run_luagent help
check "help lists every command, meta included" sh -c "
  for c in run sandbox trace doctor 'meta \\[DIR\\]' repl version; do grep -q \"^  \$c\" $TMP/stdout || exit 1; done"

mkdir -p "$TMP/metalib/luagent/cli"
cp -r lua/luagent/* "$TMP/metalib/luagent/"
echo 'return { main = function(args) print("meta: " .. table.concat(args, " ")); return 3 end }' \
  > "$TMP/metalib/luagent/cli/meta.lua"
LUAGENT_PATH="$TMP/metalib" "$LUAGENT" meta "$TMP/somewhere" > "$TMP/stdout" 2> "$TMP/stderr"
echo $? > "$TMP/status"
check "'meta DIR' runs luagent.cli.meta's main(args); its returned status is the exit status" sh -c "
  [ \"\$(cat $TMP/status)\" = 3 ] && [ \"\$(cat $TMP/stdout)\" = 'meta: $TMP/somewhere' ]"


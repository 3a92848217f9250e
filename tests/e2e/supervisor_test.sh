# needs: docker
# The sandbox supervisor (sandbox/supervisor/) at the protocol level, with
# the Docker CLI: containers shaped as luagent.sandbox makes them (the static
# binary as PID 1 from its own volume), in an image without Python (busybox)
# and in the sandbox image, driven over `docker exec -i ... serve` by
# tests/supervisor_client.py, and the same code under ASan/UBSan as a plain
# process. The supervisor's reproductions through luagent.sandbox itself are
# tests/lua/sandbox_supervisor_spec.lua; here: the protocol's ops and flags
# (spawn, signal, kill, python's r, pack's left-out lines) and the cost.
. tests/e2e/lib.sh

BOXES=""
cleanup() {
  for b in $BOXES; do docker rm -f "$b" > /dev/null 2>&1; docker volume rm "$b-ws" "$b-sv" > /dev/null 2>&1; done
  rm -rf "$TMP"
}
trap cleanup EXIT

if ! docker info > /dev/null 2>&1; then
  echo "ok - $SUITE: skipped (no Docker engine)"
  exit 0
fi
make -s build/luagent-supervisor > "$TMP/make.log" 2>&1 || { echo "not ok - $SUITE: build"; cat "$TMP/make.log" >&2; exit 0; }
tools/busybox-image.sh luagent-busybox:test > "$TMP/image.log" 2>&1 || { echo "not ok - $SUITE: busybox image"; cat "$TMP/image.log" >&2; exit 0; }
tar --owner=0 --group=0 -C build -cf "$TMP/staged.tar" luagent-supervisor

# start_box NAME IMAGE: created locked down as luagent.sandbox does, the binary
# put into its own volume (mounted at /run/luagent) before start, started.
start_box() {
  BOXES="$BOXES $1"
  docker volume create "$1-ws" > /dev/null && docker volume create "$1-sv" > /dev/null
  docker create --name "$1" --label luagent.test=supervisor --read-only \
    --cap-drop ALL --cap-add SETUID --cap-add SETGID --cap-add KILL --cap-add SETPCAP \
    --security-opt no-new-privileges --pids-limit 128 --memory 256m --memory-swap 256m --network none \
    --tmpfs /tmp:rw,noexec,nosuid,nodev,size=64m -v "$1-sv":/run/luagent \
    -v "$1-ws":/workspace --user 0:0 --entrypoint /run/luagent/luagent-supervisor "$2" init > /dev/null &&
  docker cp - "$1":/run/luagent/ < "$TMP/staged.tar" && docker start "$1" > /dev/null
}

# session NAME: runs the steps on stdin in one supervisor session; results in $TMP/NAME.out
session() {
  python3 tests/supervisor_client.py "$BOX" > "$TMP/$1.out" 2> "$TMP/$1.err"
}

# field SESSION STEP KEY: a field of a named step's result (lists as JSON)
field() {
  python3 -c 'import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get("name") == sys.argv[2]:
        v = d.get(sys.argv[3], "")
        print(json.dumps(v) if isinstance(v, list) else str(v).strip())
        break' "$TMP/$1.out" "$2" "$3"
}
# is S STEP KEY VALUE (blanks around ignored) / has, lacks S STEP KEY TEXT / atleast, below S STEP KEY N
is() { v=$(field "$1" "$2" "$3"); [ "$v" = "$4" ] || { echo "$2.$3 is '$v', expected '$4'"; return 1; }; }
has() { v=$(field "$1" "$2" "$3"); case "$v" in *"$4"*) ;; *) echo "$2.$3 '$v' lacks '$4'"; return 1;; esac; }
lacks() { v=$(field "$1" "$2" "$3"); case "$v" in *"$4"*) echo "$2.$3 '$v' has '$4'"; return 1;; esac; }
atleast() {
  v=$(field "$1" "$2" "$3")
  python3 -c 'import sys; sys.exit(float(sys.argv[1] or -1) < float(sys.argv[2]))' "$v" "$4" ||
    { echo "$2.$3 is $v, expected at least $4"; return 1; }
}
below() {
  v=$(field "$1" "$2" "$3")
  python3 -c 'import sys; sys.exit(not 0 <= float(sys.argv[1] or -1) < float(sys.argv[2]))' "$v" "$4" ||
    { echo "$2.$3 is $v, expected below $4"; return 1; }
}
longest_name() { tar -tf - | awk '{ print length($0) }' | sort -n | tail -1; }

# Steps run in every image (quoted: the JSON is taken as written). A counting
# step prints how many processes' command lines match its $0 (an ERE).
steps_base() {
  cat <<'EOF'
{"name":"staged","op":"run","argv":["sh","-c","ls -a /workspace; ls -ln /run/luagent; touch /run/luagent/x 2>/dev/null || echo cannot-write; grep -E 'CapEff|CapBnd' /proc/self/status"]}
{"name":"bg","op":"run","argv":["sh","-c","sleep 1002 & echo started"]}
{"name":"bg_after","op":"run","argv":["sh","-c","for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done | grep -cE \"^($0)\"","sleep 1002"]}
{"name":"escape","op":"run","argv":["sh","-c","setsid env -i sleep 1010 & sleep 999"],"timeout":2000}
{"name":"escape_after","op":"run","argv":["sh","-c","for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done | grep -cE \"^($0)\"","sleep (1010|999)"]}
{"name":"signals","op":"run","argv":["sh","-c","for s in TERM HUP INT QUIT USR1 ALRM KILL STOP; do kill -$s 1 2>/dev/null && echo delivered $s; done; for d in /proc/[0-9]*; do [ \"$(stat -c %u $d)\" = 0 ] && kill -9 ${d#/proc/} 2>/dev/null && echo killed ${d#/proc/}; done; echo done"]}
{"name":"alive","op":"run","argv":["sh","-c","tr '\\0' ' ' < /proc/1/cmdline"]}
{"name":"proc1","op":"run","argv":["sh","-c","cat /proc/1/environ >/dev/null 2>&1 || echo environ denied; head -c 1 /proc/1/mem >/dev/null 2>&1 || echo mem denied"]}
{"name":"bomb","op":"run","argv":["sh","-c","(while :; do sleep 1008 & done) 2>/dev/null & sleep 1; echo bomb"],"timeout":10000}
{"name":"bomb_after","op":"run","argv":["sh","-c","for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done | grep -cE \"^($0)\"","sleep 1008"]}
{"name":"oom_child","op":"run","argv":["sh","-c","sh -c 'x=aaaaaaaaaaaaaaaa; while :; do x=$x$x; done' 2>/dev/null; echo after"]}
{"name":"oom_main","op":"run","argv":["sh","-c","x=aaaaaaaaaaaaaaaa; while :; do x=$x$x; done"]}
{"name":"spawn","op":"spawn","argv":["sh","-c","trap 'echo stopping; exit 7' TERM; echo up; sleep 1011 & wait"]}
{"op":"sleep","seconds":0.3}
{"name":"spawn_alive","op":"run","argv":["sh","-c","for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done | grep -cE \"^($0)\"","sleep 1011"]}
{"op":"signal","target":13,"signal":15}
{"name":"spawn_end","op":"wait","target":13}
{"name":"spawn2","op":"spawn","argv":["sh","-c","sleep 1012 & echo bg"]}
{"op":"sleep","seconds":0.3}
{"name":"spawn2_alive","op":"run","argv":["sh","-c","for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done | grep -cE \"^($0)\"","sleep 1012"]}
{"name":"idle","op":"run","argv":["sh","-c","ticks() { for d in /proc/[0-9]*; do [ \"$(stat -c %u $d)\" = 0 ] && cat $d/stat; done 2>/dev/null | awk '{ s += $14 + $15 } END { print s }'; }; a=$(ticks); sleep 1; echo $(( $(ticks) - a ))"]}
{"name":"stdin","op":"run","argv":["sh","-c","cat; echo $FOO"],"stdin":"through stdin\n","env":{"FOO":"bar"}}
{"name":"missing","op":"run","argv":["no-such-program"]}
{"name":"bench","op":"bench","argv":["true"],"count":50}
EOF
}

steps_after() {
  cat <<'EOF'
{"name":"spawn2_gone","op":"run","argv":["sh","-c","for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done | grep -cE \"^($0)\"","sleep 1012"]}
{"name":"setup","op":"run","argv":["sh","-c","mkdir -p out/sub && echo hi > out/sub/a.txt && truncate -s 1099511627776 out/big && mkdir -p out/deep && cd out/deep && n=$(printf '%0200d' 0 | tr 0 d) && for i in $(seq 1 30); do mkdir $n && cd $n 2>/dev/null || break; done; echo ok"]}
{"name":"pack","op":"pack","path":"/workspace/out","max_bytes":2147483648,"max_entries":20000,"save":"PACK_TAR"}
{"name":"pack_few","op":"pack","path":"/workspace/out","max_bytes":2147483648,"max_entries":3}
EOF
}

steps_python() {
  cat <<'EOF'
{"name":"set","op":"python","code":"x = 41\nx + 1"}
{"name":"get","op":"python","code":"import os\n(x, os.getuid())"}
{"name":"child","op":"python","code":"import subprocess\np = subprocess.Popen(['sleep', '1003'])\n'started'"}
{"name":"slow","op":"python","code":"import time\ntime.sleep(100)","timeout":1000}
{"name":"lost","op":"python","code":"x"}
{"name":"oom","op":"python","code":"b = bytearray(1 << 30)"}
{"name":"after_oom","op":"python","code":"1 + 1"}
{"name":"set2","op":"python","code":"z = 3"}
{"name":"killer","op":"run","argv":["sh","-c","for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null | grep -q '^python3 -u -c' && p=${f%/cmdline} && kill -9 ${p#/proc/} && echo killed; done"]}
{"op":"sleep","seconds":0.2}
{"name":"after_kill","op":"python","code":"z"}
{"name":"oom_sh","op":"run","argv":["sh","-c","python3 -c 'b = bytearray(1 << 30)'"]}
{"name":"oom_argv","op":"run","argv":["python3","-c","b = bytearray(1 << 30)"]}
{"name":"ptrace","op":"run","argv":["python3","-c","import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nroots = [int(p) for p in os.listdir('/proc') if p.isdigit() and os.stat('/proc/' + p).st_uid == 0]\nfor pid in roots:\n    for req in (16, 0x4206):\n        if libc.ptrace(req, pid, 0, 0) != -1: print('traced', pid)\nprint(len(roots), 'root processes, none traced')"]}
EOF
}

# A spawn's streamed stdin (write, eof): answered once in the pipe, in order;
# a reader that does not read holds back its writer (a write past
# SV_STDIN_WINDOW is refused) while serve goes on answering; a stdin whose
# reader is gone fails its writes.
steps_stdin() {
  cat <<'EOF'
{"name":"cat","op":"spawn","argv":["cat"],"keep_stdin":true}
{"name":"w1","op":"write","target":"cat","data":"hello\n"}
{"name":"w2","op":"write","target":"cat","data":"world\n"}
{"name":"e","op":"eof","target":"cat"}
{"name":"e2","op":"eof","target":"cat"}
{"name":"cat_end","op":"wait","target":"cat"}
{"name":"w_after","op":"write","target":"cat","data":"x"}
{"name":"e_after","op":"eof","target":"cat"}
{"name":"plain","op":"spawn","argv":["sleep","5"]}
{"name":"w_plain","op":"write","target":"plain","data":"x"}
{"op":"kill","target":"plain"}
{"name":"slow","op":"spawn","argv":["sh","-c","sleep 30; cat"],"keep_stdin":true}
{"name":"fill","op":"write","target":"slow","data":"x","repeat":1048576,"wait":false}
{"name":"fill2","op":"write","target":"slow","data":"x","repeat":4194304,"wait":false}
{"name":"full","op":"write","target":"slow","data":"y"}
{"name":"meanwhile","op":"run","argv":["echo","served"]}
{"op":"kill","target":"slow"}
{"name":"fill_end","op":"wait","target":"fill"}
{"name":"closer","op":"spawn","argv":["sh","-c","exec 0<&-; sleep 5"],"keep_stdin":true}
{"op":"sleep","seconds":0.2}
{"name":"w_closed","op":"write","target":"closer","data":"x","repeat":100000}
{"op":"kill","target":"closer"}
EOF
}

# check_stdin SESSION TAG
check_stdin() {
  streamed() {
    is "$1" w1 code 0 && is "$1" w2 code 0 && is "$1" e code 0 && is "$1" e2 code 0 &&
      is "$1" cat_end stdout "hello
world" && is "$1" cat_end code 0
  }
  check "[$2] a spawn's stdin streams: writes in order, eof ends it (twice is fine)" streamed "$1"
  refused() {
    is "$1" w_after code 1 && has "$1" w_after failure "the process ended" && is "$1" e_after code 0 &&
      is "$1" w_plain code 2 && has "$1" w_plain failure "has no open stdin"
  }
  check "[$2] a write to an ended spawn or to one without an open stdin is refused (an eof is fine)" refused "$1"
  slow() {
    is "$1" full code 3 && has "$1" full failure "is full" && is "$1" meanwhile stdout served &&
      below "$1" meanwhile ms 2000 && is "$1" fill_end code 1 && has "$1" w_closed failure "closed it"
  }
  check "[$2] a reader that does not read holds back its writer, not serve (window refused, commands go on)" slow "$1"
}

run_checks() {
  image=$1 tag=$2
  BOX="luagent-svtest-$tag-$$"
  if ! start_box "$BOX" "$image" > "$TMP/start.log" 2>&1; then
    echo "not ok - $SUITE: [$tag] start a session"; sed 's/^/    /' "$TMP/start.log" >&2; return
  fi
  steps_base | session base
  steps_after | sed "s|PACK_TAR|$TMP/pack.tar|" | session after
  steps_stdin | session stdin
  check_stdin stdin "$tag"
  [ -s "$TMP/base.out" ] || { echo "not ok - $SUITE: [$tag] the session answered nothing"; sed 's/^/    /' "$TMP/base.err" >&2; }

  staged() {
    lacks base staged stdout .luagent-supervisor && has base staged stdout "cannot-write" &&
      has base staged stdout "CapEff:	0000000000000000" && has base staged stdout "CapBnd:	0000000000000000" &&
      field base staged stdout | grep -q ' 0 *0 .* luagent-supervisor$'
  }
  check "[$tag] staged: nothing in the workspace, /run/luagent is root's, commands have no capability at all" staged
  repro7() { is base bg stdout started && atleast base bg killed 1 && is base bg_after stdout 0; }
  check "[$tag] repro 7: 'sleep 1002 & echo started' returns with the sleep killed and counted" repro7
  repro6() {
    is base escape flags t && atleast base escape killed 1 && below base escape ms 3500 && is base escape_after stdout 0
  }
  check "[$tag] repro 6: a timed-out 'setsid env -i sleep 1010 & sleep 999' leaves nothing running" repro6
  repro3() { is base signals stdout done && is base alive code 0 && has base alive stdout "luagent-supervisor init"; }
  check "[$tag] repro 3: uid 1000 cannot signal PID 1 or the supervisor, and the session lives on" repro3
  repro8() { is base proc1 stdout "environ denied
mem denied"; }
  check "[$tag] repro 8: uid 1000 cannot read PID 1's memory or environment (ptrace access denied)" repro8
  bomb() { is base bomb stdout bomb && atleast base bomb killed 50 && is base bomb_after stdout 0; }
  check "[$tag] a fork bomb up to the pids cap is killed whole when its command ends" bomb
  repro1() { is base oom_child stdout after && is base oom_child flags o; }
  check "[$tag] repro 1: OOM of a 'sh -c' child is attributed (the shell goes on)" repro1
  oom_main() { is base oom_main code 137 && is base oom_main flags o; }
  check "[$tag] OOM of the command itself: exit 137, flag o" oom_main
  spawn() { is base spawn_alive stdout 1 && is base spawn_end code 7 && is base spawn_end stdout "up
stopping"; }
  check "[$tag] spawn: outlives its request, a signal reaches its process group, ends with its code" spawn
  spawn2() { is base spawn2_alive stdout 1 && is after spawn2_gone stdout 0; }
  check "[$tag] a spawn's background child lives on, and is killed when the server's stdin closes" spawn2
  check "[$tag] waiting costs nothing: the root processes use < 5 ticks of CPU in a second with a spawn and a command alive" \
    below base idle stdout 5
  basics() {
    is base stdin stdout "through stdin
bar" && is base missing code 127 && has base missing failure "cannot run no-such-program"
  }
  check "[$tag] stdin, env and a missing program" basics
  echo "    # [$tag] 'true' round trip: median $(field base bench median_ms) ms, p90 $(field base bench p90_ms) ms (50 runs)"
  sparse() {
    has after pack left_out '["too_big", "out/big"]' && below after pack ms 2000 &&
      tar -tf "$TMP/pack.tar" | grep -q 'out/sub/a.txt'
  }
  check "[$tag] pack refuses a 1 TiB sparse file at once and names it" sparse
  long_paths() {
    ours=$(longest_name < "$TMP/pack.tar")
    socket=${DOCKER_HOST:-unix:///var/run/docker.sock}
    engine=$(curl -s --max-time 5 --unix-socket "${socket#unix://}" \
      "http://x/v1.41/containers/$BOX/archive?path=/workspace/out/deep" | longest_name)
    [ "${ours:-0}" -gt 4096 ] && [ "${engine:-0}" -lt 4096 ] || { echo "longest name: pack $ours, engine $engine"; return 1; }
  }
  check "[$tag] pack brings back paths longer than PATH_MAX (the archive endpoint leaves them out)" long_paths
  check "[$tag] pack stops at the entry limit and says where" has after pack_few left_out too_many
}

python_checks() {
  BOX="luagent-svtest-python-$$"
  start_box "$BOX" luagent-sandbox:latest > "$TMP/start.log" 2>&1 || { echo "not ok - $SUITE: [python] start"; return; }
  steps_python | session py
  state() { is py set stdout 42 && is py get stdout "(41, 1000)"; }
  check "[python] the interpreter keeps state and runs as uid 1000" state
  check "[python] a process a call started is killed when the call ends" is py child killed 1
  lost() { is py slow flags t && is py lost flags r && is py lost code 1; }
  check "[python] a timed-out call is killed; the next call says the state was lost (r) once" lost
  oom() { is py oom flags o && is py after_oom flags r && is py after_oom stdout 2; }
  check "[python] OOM in a call: flag o, then r on the next call" oom
  killed() { is py killer stdout killed && is py after_kill flags r && is py after_kill code 1; }
  check "[python] an interpreter a command killed between calls: the next call says r" killed
  repro1() { is py oom_sh flags o && is py oom_sh code 137 && is py oom_argv flags o; }
  check "[python] repro 1: OOM attributed for 'sh -c python3' and for an argv command" repro1
  repro8() { has py ptrace stdout "root processes, none traced" && lacks py ptrace stdout "traced "; }
  check "[python] repro 8: PTRACE_ATTACH and PTRACE_SEIZE on PID 1 and every root process fail" repro8
  # per-command cost (bench/sandbox measures it through luagent.sandbox, beside the old figures)
  echo '{"name":"bench","op":"bench","argv":["true"],"count":50}' | session bench_sv
  echo "    # [python] 'true' round trip median: $(field bench_sv bench median_ms) ms (50 runs)"
  check "[python] a 'true' round trip costs a fork, not a Docker exec (median below 20 ms even under load)" \
    below bench_sv bench median_ms 20
}

run_checks luagent-busybox:test busybox
echo '{"name":"py","op":"python","code":"1"}' | session nopython
nopython() { is nopython py code 127 && has nopython py failure "cannot run python3"; }
check "[busybox] python without python3 in the image: F and exit 127, not a hang" nopython
run_checks luagent-sandbox:latest sandbox
python_checks

# The same code under ASan/UBSan, as a plain process on this machine (commands as
# uid 65534): no invalid access, no leak, no undefined behaviour.
asan_checks() {
  make -s build/supervisor/kernel_source.c > "$TMP/asan-build.log" 2>&1
  cc -std=c11 -D_DEFAULT_SOURCE -D_GNU_SOURCE -g -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
    -fno-sanitize-recover=undefined -Wall -Wextra -Werror -iquote src/core -iquote sandbox/supervisor -o "$TMP/sv-asan" \
    $(make -s supervisor-sources) 2> "$TMP/asan-build.log" ||
    { echo "not ok - $SUITE: [asan] build"; sed 's/^/    /' "$TMP/asan-build.log" >&2; return; }
  mkdir -p "$TMP/asan" && chmod 755 "$TMP" "$TMP/asan"
  (cd "$TMP/asan" && ASAN_OPTIONS=detect_leaks=1 python3 "$OLDPWD/tests/supervisor_client.py" --local \
    "$TMP/sv-asan" serve 65534:65534 > "$TMP/asan.out" 2> "$TMP/asan.err") <<'STEPS'
{"name":"bg","op":"run","argv":["sh","-c","sleep 1002 & echo started"]}
{"name":"escape","op":"run","argv":["sh","-c","setsid env -i sleep 1010 & sleep 999"],"timeout":300}
{"name":"stdin","op":"run","argv":["cat"],"stdin":"through stdin"}
{"name":"cwd","op":"run","argv":["true"],"cwd":"/nonexistent"}
{"name":"spawn","op":"spawn","argv":["sh","-c","sleep 1011 & sleep 1012"]}
{"op":"sleep","seconds":0.2}
{"op":"kill","target":5}
{"name":"spawn_end","op":"wait","target":5}
{"name":"py1","op":"python","code":"x = 1\nx"}
{"name":"py2","op":"python","code":"import time; time.sleep(5)","timeout":300}
{"name":"py3","op":"python","code":"2"}
{"name":"pack","op":"pack","path":"/proc/self/fdinfo","max_bytes":100,"max_entries":2}
{"name":"unknown","op":"spawn","argv":["true"]}
STEPS
  (cd "$TMP/asan" && steps_stdin | ASAN_OPTIONS=detect_leaks=1 python3 "$OLDPWD/tests/supervisor_client.py" --local \
    "$TMP/sv-asan" serve 65534:65534 > "$TMP/asan_stdin.out" 2>> "$TMP/asan.err")
  check_stdin asan_stdin asan
  asan() {
    ! grep -E "ERROR: AddressSanitizer|LeakSanitizer|runtime error" "$TMP/asan.err" &&
      is asan bg killed 1 && is asan escape flags t && is asan stdin stdout "through stdin" &&
      has asan cwd failure "cannot enter /nonexistent" && is asan spawn_end flags k && is asan py3 flags r
  }
  check "[asan] serve, reapers, python and pack run clean under ASan/UBSan" asan
}
asan_checks

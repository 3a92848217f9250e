# needs: docker
# The outputs mirror (luagent.sandbox.mirror) on a host disk that fills up (a
# 64k tmpfs the test mounts): the copy that does not fit is said once on
# stderr and never fails a command; the commands after it run as before;
# what fits is mirrored whole; nothing half-written or staged is left.
. tests/e2e/lib.sh
export LUAGENT_RUNS_DIR="$TMP/runs"
NAME="the mirror on a full disk: said once, no command fails"
tiny_disk "$TMP/full" 64k "$NAME" || exit 0
label=mirror-full-$$

cat > "$TMP/mirror.lua" <<'LUA'
local s = luagent.settings
local box <close> = assert(luagent.sandbox.open{labels = {["luagent.test"] = s.label},
                                                save = {from = "output", to = s.dest .. "/output"}})
local codes = {}
for _, cmd in ipairs({"mkdir -p output && echo small > output/small.txt",
                      "head -c 200000 /dev/urandom > output/big.bin", "true",
                      "head -c 300000 /dev/urandom > output/bigger.bin", "echo more > output/more.txt"}) do
  local r, err = box:exec(cmd)
  codes[#codes + 1] = r and tostring(r.exit_code) or tostring(err)
  local small = io.open(s.dest .. "/output/small.txt")
  if small then print("SMALL " .. small:read("a"):gsub("\n", "")) small:close() end
end
print("CODES " .. table.concat(codes, " "))
LUA
run_luagent run "$TMP/mirror.lua" --set "dest=$TMP/full" --set "label=$label"
said_once() {
  status_is 0 && stdout_has "CODES 0 0 0 0 0" && [ "$(grep -c 'SMALL small' "$TMP/stdout")" -eq 5 ] &&
  [ "$(grep -c 'could not mirror the outputs' "$TMP/stderr")" -eq 1 ] &&
  stderr_has "could not mirror the outputs of sandbox .* (output -> $TMP/full/output) after a command: .*No space left on device. Commands go on" &&
  grep '"type":"sandbox_mirror"' "$(ls -d "$LUAGENT_RUNS_DIR"/*)/trace.jsonl" | grep -q 'No space left on device'
}
check "$NAME: every command succeeds, the failure is said once (stderr and the trace)" said_once
nothing_cut() {
  [ "$(cat "$TMP/full/output/small.txt")" = small ] && [ "$(cat "$TMP/full/output/more.txt")" = more ] || return 1
  for f in big.bin bigger.bin; do # the close's collect says what did not fit; nothing cut stays
    [ ! -e "$TMP/full/output/$f" ] || { echo "$f is left: $(stat -c %s "$TMP/full/output/$f") bytes"; return 1; }
  done
  [ -z "$(ls -A "$TMP/full" | grep -v '^output$\|^manifest.json$')" ] || { ls -A "$TMP/full"; return 1; }
}
check "... what fits is home and whole (a file mirrored after the failure too), nothing cut or staged is left" nothing_cut
check "... and no sandbox is left" sh -c "[ \$(docker ps -aq --filter label=luagent.test=$label | wc -l) -eq 0 ]"
docker ps -aq --filter "label=luagent.test=$label" | xargs -r docker rm -f > /dev/null

# needs: docker
# Outputs that do not fit on the disk (a 64k tmpfs the test mounts): the
# partly written file is removed, never left looking whole; what was saved is
# whole; manifest.json says what failed and why; the error is said on stderr.
. tests/e2e/lib.sh
export LUAGENT_RUNS_DIR="$TMP/runs"
NAME="outputs too big for the disk: the cut file removed, the rest whole, the manifest says what failed"
tiny_disk "$TMP/full" 64k "$NAME" || exit 0
label=outputs-full-$$

cat > "$TMP/outputs.lua" <<'LUA'
local s = luagent.settings
local box <close> = assert(luagent.sandbox.open{labels = {["luagent.test"] = s.label}})
assert(box:exec("mkdir -p output && printf 'a,b\\n1,2\\n' > output/small.csv && printf '# Report\\n' > output/report.md"
  .. " && head -c 200000 /dev/urandom > output/big.bin"))
local report, err = luagent.outputs.collect(box, "output", s.dest .. "/output",
                                            {required = {"output/small.csv", "output/big.bin", "output/report.md"}})
if not report then print("NO REPORT: " .. tostring(err)) return 2 end
for _, f in ipairs(report.files) do print(("SAVED %s %d"):format(f.path, f.size)) end
for _, f in ipairs(report.failed) do print(("FAILED %s %s"):format(f.path, f.error)) end
print("MISSING " .. table.concat(report.missing, " "))
return #report.missing > 0 and 1 or 0
LUA
run_luagent run "$TMP/outputs.lua" --set "dest=$TMP/full" --set "label=$label"
whole() { # every file left in the folder has the sandbox's size and content; big.bin is not there
  [ ! -e "$TMP/full/output/big.bin" ] || { echo "big.bin is left: $(stat -c %s "$TMP/full/output/big.bin") bytes"; return 1; }
  for f in "$TMP/full/output"/*; do
    [ -e "$f" ] || continue
    case "$f" in
      */small.csv) [ "$(cat "$f")" = "$(printf 'a,b\n1,2')" ] || { echo "small.csv is not whole"; return 1; } ;;
      */report.md) [ "$(cat "$f")" = "# Report" ] || { echo "report.md is not whole"; return 1; } ;;
      *) echo "unexpected $f"; return 1 ;;
    esac
  done
}
manifest_says() {
  python3 - "$TMP/full/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
failed = {f["path"]: f for f in m["failed"]}
saved = {f["path"] for f in m["files"]}
assert "output/big.bin" in failed and "No space left on device" in failed["output/big.bin"]["error"], m
assert failed["output/big.bin"]["size"] == 200000, failed["output/big.bin"]
assert "output/big.bin" not in saved and "No space left on device" in m["error"], m
assert "output/big.bin" in m["missing"], m
for f in m["files"]:
    assert f["path"] in ("output/small.csv", "output/report.md"), f
PY
}
check "$NAME: exit 1 (a required output is missing), said on stderr" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q 'FAILED output/big.bin .*No space left on device' $TMP/stdout &&
  grep -q \"luagent: could not save all the outputs in output: .*cannot write 'big.bin': No space left on device; not saved: output/big.bin (removed: [0-9]* of 200000 bytes written)\" $TMP/stderr &&
  grep -q 'manifest.json lists what was saved and what failed' $TMP/stderr"
check "... no file in the output folder is cut: big.bin removed, the others whole" whole
check "... manifest.json lists what was saved, and big.bin as failed with why and its size" manifest_says
check "... and no sandbox is left" sh -c "[ \$(docker ps -aq --filter label=luagent.test=$label | wc -l) -eq 0 ]"
docker ps -aq --filter "label=luagent.test=$label" | xargs -r docker rm -f > /dev/null

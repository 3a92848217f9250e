# needs: docker
# Outputs when the host's disk is full from the start: a 64k tmpfs the test
# mounts and fills before the run. Every output that is not saved is named (before, the
# message named one of three), and the run ends with exit 1.
. tests/e2e/lib.sh
export LUAGENT_RUNS_DIR="$TMP/runs"
NAME="a disk full from the start: every output not saved is named"
tiny_disk "$TMP/full" 64k "$NAME" || exit 0
label=outputs-disk-full-$$
mkdir -p "$TMP/full/output"
dd if=/dev/zero of="$TMP/full/filler" bs=1k 2> /dev/null # until the disk is full

cat > "$TMP/outputs.lua" <<'LUA'
local s = luagent.settings
local box <close> = assert(luagent.sandbox.open{labels = {["luagent.test"] = s.label}})
assert(box:exec("mkdir -p output && head -c 5000 /dev/urandom > output/anomalies.csv && "
  .. "head -c 9000 /dev/urandom > output/chart.png && head -c 3000 /dev/urandom > output/report.md"))
local report, err = luagent.outputs.collect(box, "output", s.dest .. "/output",
  {required = {"output/anomalies.csv", "output/chart.png", "output/report.md"}})
if not report then -- not even manifest.json could be written: the error carries the report
  print("NO REPORT: " .. tostring(err))
  report = err.report
end
print("MISSING " .. table.concat(report.missing, " "))
return #report.missing > 0 and 1 or 0
LUA
run_luagent run "$TMP/outputs.lua" --set "dest=$TMP/full" --set "label=$label"
check "$NAME: exit 1; the error says manifest.json could not be written and names all three" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] &&
  grep -q 'NO REPORT: .*cannot write .*manifest.json: .*No space left on device.*not saved: output/anomalies.csv, output/chart.png, output/report.md' $TMP/stdout"
check "... and the report's missing list has all three" sh -c "
  grep -q '^MISSING output/anomalies.csv output/chart.png output/report.md' $TMP/stdout"
docker ps -aq --filter "label=luagent.test=$label" | xargs -r docker rm -f > /dev/null

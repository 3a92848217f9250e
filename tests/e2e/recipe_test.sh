# needs: docker
# The recipes end to end with the scripted driver, in the real sandbox: the
# artifacts exist, the anomaly found overlaps the injected one, the chart is a
# real PNG, the report names the event's dates, the manifest is right; and
# the analysis finds anomalies in data it was not written for.
. tests/e2e/lib.sh
export LUAGENT_RUNS_DIR="$TMP/runs"

# check_run DIR TRUTH: the artifacts of one energy run against the truth file
check_energy_run() {
  python3 - "$1" "$2" <<'PY'
import csv, hashlib, json, os, struct, sys
run, truth_path = sys.argv[1], sys.argv[2]
truth = json.load(open(truth_path))
out = os.path.join(run, "output")
rows = list(csv.DictReader(open(os.path.join(out, "anomalies.csv"))))
assert rows, "anomalies.csv has no rows"
main = [r["timestamp"][:16] for r in rows if r["event_id"] == "1"]
start, end = min(main), max(main)
assert start <= truth["end"] and end >= truth["start"], \
    "found %s..%s, injected %s..%s" % (start, end, truth["start"], truth["end"])
png = open(os.path.join(out, "energy.png"), "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR", "energy.png is not a PNG"
width, height = struct.unpack(">II", png[16:24])
assert width >= 400 and height >= 300, "the chart is %dx%d" % (width, height)
report = open(os.path.join(out, "report.md")).read()
assert truth["start"][:10] in report, "the report does not name the start date " + truth["start"][:10]
assert start[:10] in report and end[:10] in report, "the report does not name the event's dates"
manifest = json.load(open(os.path.join(run, "manifest.json")))
names = sorted(f["path"] for f in manifest["files"])
assert names == ["output/anomalies.csv", "output/energy.png", "output/report.md"], names
for f in manifest["files"]:
    data = open(os.path.join(out, os.path.basename(f["path"])), "rb").read()
    assert f["size"] == len(data) and f["sha256"] == hashlib.sha256(data).hexdigest(), f["path"]
assert not manifest["missing"], manifest["missing"]
print("found %s..%s, injected %s..%s (%s)" % (start, end, truth["start"], truth["end"], truth["kind"]))
PY
}

latest_run() { ls -td "$LUAGENT_RUNS_DIR"/*"$1"* | head -1; }

run_luagent run recipes/energy_anomaly.lua -q
run=$(latest_run energy_anomaly)
first_run=$run
check "the energy recipe (scripted) exits 0, says it is scripted and lists its artifacts" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'SCRIPTED RUN' $TMP/stdout && grep -q 'manifest.json' $TMP/stdout"
check "its anomalies overlap the injected event; PNG valid; report names the dates; manifest right" \
  check_energy_run "$run" "$run/input/building_energy.truth.json"
check "its trace records the run, the model turns, the tool calls and the sandbox commands" sh -c "
  grep -q '\"type\":\"run_start\"' $run/trace.jsonl && grep -q '\"type\":\"agent_turn\"' $run/trace.jsonl &&
  grep -q '\"type\":\"tool_result\"' $run/trace.jsonl && grep -q '\"type\":\"sandbox_exec\"' $run/trace.jsonl &&
  grep -q '\"status\":\"ok\",.*\"type\":\"run_end\"' $run/trace.jsonl"

# other data: another seed and each kind of anomaly, given as --set input=PATH
cat > "$TMP/gen.lua" <<'LUA'
package.path = "recipes/?.lua;" .. package.path
local kind, seed, dir = ...
require("energy_data").generate{kind = kind, seed = tonumber(seed), dir = dir}
LUA
for spec in night_hvac:11 chiller_fault:23 surge:5; do
  kind=${spec%:*}; seed=${spec#*:}
  "$LUAGENT" run "$TMP/gen.lua" -- "$kind" "$seed" "$TMP/data-$kind" > /dev/null
  run_luagent run recipes/energy_anomaly.lua -q --set "input=$TMP/data-$kind/building_energy.csv"
  run=$(latest_run energy_anomaly)
  check "with --set input= and a $kind anomaly (seed $seed) the analysis still finds it" \
    check_energy_run "$run" "$TMP/data-$kind/building_energy.truth.json"
done

base=$("$LUAGENT" run -q tests/e2e/script_fake.lua -- "energy-$$" energy)
run_luagent run recipes/energy_anomaly.lua -q --set model.provider=openai --set "model.base_url=$base" \
  --record "$TMP/energy.rec"
run=$(latest_run energy_anomaly)
check "driven by a model over the OpenAI wire format (the fake provider), the recipe produces the same artifacts" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && ! grep -q 'SCRIPTED' $TMP/stdout && grep -q 'The anomaly is in the report.' $TMP/stdout &&
  grep -q '\"provider\":\"openai\"' $run/trace.jsonl"
check "... and its anomalies overlap the injected event" check_energy_run "$run" "$run/input/building_energy.truth.json"
cp "$TMP/stdout" "$TMP/energy-recorded.out"
env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u OPENAI_BASE_URL "$LUAGENT" run recipes/energy_anomaly.lua -q \
  --replay "$TMP/energy.rec" > "$TMP/stdout" 2> "$TMP/stderr"; echo $? > "$TMP/status"
run=$(latest_run energy_anomaly)
check "replayed with no key and provider auto, the recipe picks the recorded provider and gives the same answer" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'The anomaly is in the report.' $TMP/stdout && ! grep -q SCRIPTED $TMP/stdout"
check "... and the same artifacts" check_energy_run "$run" "$run/input/building_energy.truth.json"

# The model-call cache on the real recipe: a first run over the fake provider fills it; the rerun
# asks the provider nothing, yet every sandbox step runs again and gives the same answer and outputs.
cq=energy-cache-$$
cbase=$("$LUAGENT" run -q tests/e2e/script_fake.lua -- "$cq" energy)
run_luagent run recipes/energy_anomaly.lua -q --cache --set model.provider=openai --set "model.base_url=$cbase" \
  --set "cache.dir=$TMP/energy-cache"
cached_first=$(latest_run energy_anomaly); cp "$TMP/stdout" "$TMP/cache-first.out"
asked=$(fake_requests "$cq")
run_luagent run recipes/energy_anomaly.lua --cache --set model.provider=openai --set "model.base_url=$cbase" \
  --set "cache.dir=$TMP/energy-cache"
cached_second=$(latest_run energy_anomaly); asked_after=$(fake_requests "$cq")
check "the energy recipe rerun with --cache asks the model nothing and says so, with the same answer" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ $asked = 6 ] && [ $asked_after = 6 ] &&
  grep -q '6 model calls: 6 from cache, 0 live' $TMP/stderr && grep -q 'The anomaly is in the report.' $TMP/stdout &&
  [ \"\$(grep -c sandbox_exec $cached_second/trace.jsonl)\" = \"\$(grep -c sandbox_exec $cached_first/trace.jsonl)\" ]"
check "... and the same outputs: anomalies.csv and report.md byte for byte, a chart" sh -c "
  cmp $cached_first/output/anomalies.csv $cached_second/output/anomalies.csv &&
  cmp $cached_first/output/report.md $cached_second/output/report.md && [ -s $cached_second/output/energy.png ]"

run_luagent run recipes/energy_anomaly.lua -q --set input=$TMP/nope.csv
check "a missing input file is one clear error naming the manifest entry and the path" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q 'input/building_energy.csv' $TMP/stderr && grep -q 'nope.csv' $TMP/stderr"

run_luagent run recipes/energy_anomaly.lua -q --set model.provider=nonesuch
check "an unknown provider is refused plainly" sh -c "[ \"\$(cat $TMP/status)\" = 1 ] && grep -q 'nonesuch' $TMP/stderr"

t=$first_run/trace.jsonl
run_luagent trace show "$t"
check "'trace show' prints the run step by step" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'turn 1' $TMP/stdout && grep -q 'run_python' $TMP/stdout"
run_luagent trace html "$t" -o "$TMP/trace.html"
check "'trace html' writes one self-contained page" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q '<table>' $TMP/trace.html && grep -q 'agent_turn' $TMP/trace.html"

run_luagent run recipes/csv_cleanup.lua -q
run=$(latest_run csv_cleanup)
check "the csv_cleanup recipe cleans the messy file and logs its changes" python3 - "$run" <<'PY'
import csv, re, sys
out = sys.argv[1] + "/output/"
rows = list(csv.DictReader(open(out + "clean.csv")))
assert len(rows) == 12, len(rows)
assert all(re.fullmatch(r"[A-Z]{2}", r["country"]) for r in rows), [r["country"] for r in rows]
assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}|", r["signup_date"]) for r in rows)
assert all(r["email"] == r["email"].lower() for r in rows)
log = open(out + "changes.md").read()
assert "duplicate" in log and "2024-13-01" in log, log
PY

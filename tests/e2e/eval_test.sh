# needs: docker
# luagent eval end to end: a small recipe (tests/e2e/eval_recipe.lua), each run
# in its own sandbox, driven by the fake provider (a test double; one queue per
# variant): 2 variants x 3 inputs x 2 epochs give 12 result lines with the
# right fields, a table and a summary; the variants really change the
# requests and the results; a rerun with nothing changed makes no live call;
# Ctrl-C keeps what finished. Then the energy recipe's own eval, scripted.
# Needs run contexts (luagent.run.new) and the model-call cache.
. tests/e2e/lib.sh
export LUAGENT_EVALS_DIR="$TMP/evals"
export LUAGENT_CACHE="$TMP/cache"
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY

if ! grep -q '^function run.new' lua/luagent/run.lua; then
  echo "# skip: eval_test needs run contexts (luagent.run.new), not in this tree yet" >&2
  exit 0
fi

script_queue() { "$LUAGENT" run -q /dev/stdin -- "$@" <<'LUA'
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local queue, label, runs, hang = ...
local steps = {}
for _ = 1, tonumber(runs) do
  steps[#steps + 1] = {text = "Counting.", tool_calls = {{name = "run_python", arguments = {code =
    "import os, struct, zlib\nos.makedirs('output', exist_ok=True)\nn = len(open('input/data.txt').read().split())\n"
    .. "open('output/answer.txt', 'w').write('" .. label .. " %d' % n)\n"
    -- a 40x20 PNG in the variant's colour (ALPHA red, BETA blue), for the page's images
    .. "rgb = bytes([214, 39, 40]) if '" .. label .. "' == 'ALPHA' else bytes([31, 119, 180])\n"
    .. "chunk = lambda t, d: struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))\n"
    .. "raw = b''.join(b'\\x00' + rgb * 40 for _ in range(20))\n"
    .. "open('output/chart.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 40, 20, 8, 2, 0, 0, 0))"
    .. " + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))\nprint(n)"}}}, usage = {input_tokens = 100, output_tokens = 20}}
  steps[#steps + 1] = {text = label .. ": the words are counted.", usage = {input_tokens = 150, output_tokens = 10}}
end
if hang == "hang" then steps[#steps + 1] = {hang = 60, text = "too late"} end
fake.script(queue, steps)
print(fake.base_url(queue, "openai"))
LUA
}
requests_of() { "$LUAGENT" run -q /dev/stdin -- "$1" <<'LUA'
package.path = "tests/lua/?.lua;" .. package.path
local json = luagent.json
print(json.encode(require("fake_provider_client").requests((...))))
LUA
}

mkdir -p "$TMP/proj/data"
cp tests/e2e/eval_recipe.lua tests/e2e/eval_recipe.yaml tests/e2e/eval_check.lua "$TMP/proj/"
printf 'one\n' > "$TMP/proj/data/one.txt"
printf 'one two\n' > "$TMP/proj/data/two.txt"
printf 'one two three\n' > "$TMP/proj/data/three.txt"
qa=eval-a-$$; qb=eval-b-$$
base_a=$(script_queue "$qa" ALPHA 6)
base_b=$(script_queue "$qb" BETA 6)
cat > "$TMP/proj/e.eval.yaml" <<YAML
name: words
recipe: eval_recipe.lua
check: eval_check.lua
variants:
  alpha:
    instructions: Count the words with Python, then say ALPHA.
    label: ALPHA
    model.base_url: $base_a
  beta:
    instructions: Count the words carefully and answer with BETA first.
    label: BETA
    model.base_url: $base_b
inputs:
  - glob: data/*.txt
    setting: input
epochs: 2
concurrency: 1
YAML

run_luagent eval "$TMP/proj/e.eval.yaml"
first=$(ls -d "$TMP"/evals/*-words-* | head -1)
cp "$TMP/stdout" "$TMP/first.out"; cp "$TMP/stderr" "$TMP/first.err"
check "an eval of 2 variants x 3 inputs x 2 epochs exits 0, prints the table and the paths" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q '^variant  *runs  *pass' $TMP/stdout && grep -q '^alpha ' $TMP/stdout &&
  grep -q '^beta ' $TMP/stdout && grep -q '^results: .*results.jsonl' $TMP/stdout && grep -q '^summary: ' $TMP/stdout &&
  grep -q '^page: .*index.html' $TMP/stdout"
check "one progress line per run; the page is written" sh -c "
  [ \$(grep -c '^\[ *[0-9]*/12\] ' $TMP/first.err) -eq 12 ] && grep -q 'ALPHA: the words' $first/index.html"
. tests/e2e/chromium.sh
if chromium_ready; then
  chromium_screenshot "file://$first/index.html" "$TMP/eval-shot.png" 1280,2000
  check "the eval's page renders in headless Chromium: a full screenshot with both variants' image colours" \
    python3 - "$TMP/eval-shot.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat, (w, h) = 8, b'', (0, 0)
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8]); body = data[pos + 8:pos + 8 + n]; pos += 12 + n
    if kind == b'IHDR': w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
    if kind == b'IDAT': idat += body
raw = zlib.decompress(idat); bpp = 4 if ctype == 6 else 3; stride = w * bpp
assert (w, h) == (1280, 2000), (w, h)
prev, colours = bytearray(stride), set()
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0; b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
        line[x] = (line[x] + [0, a, b, (a + b) // 2, a if pa <= pb and pa <= pc else (b if pb <= pc else c)][f]) & 255
    for x in range(0, stride, bpp): colours.add(bytes(line[x:x + 3]))
    prev = line
for want in (bytes([214, 39, 40]), bytes([31, 119, 180])):
    assert want in colours, 'colour %s not on the page' % want.hex()
PY
  chromium_dom "file://$first/index.html" > "$TMP/eval-dom.html"
  check "the eval's page DOM: both variants, 12 runs' PNG images as data: URIs, the answers diffed against alpha" sh -c "
    grep -q '<tr><td>alpha</td><td>6</td>' $TMP/eval-dom.html && grep -q '<tr><td>beta</td><td>6</td>' $TMP/eval-dom.html &&
    [ \$(grep -o '<img src=\"data:image/png;base64,' $TMP/eval-dom.html | wc -l) -eq 12 ] &&
    grep -q '<span class=\"d-del\">-ALPHA ' $TMP/eval-dom.html && grep -q '<span class=\"d-add\">+BETA ' $TMP/eval-dom.html"
else
  chromium_skip "the eval's page renders in headless Chromium: a full screenshot with both variants' image colours" \
    "the eval's page DOM: both variants, 12 runs' PNG images as data: URIs, the answers diffed against alpha"
fi
check "12 result lines with the right fields" python3 - "$first" <<'PY'
import json, os, sys
d = sys.argv[1]
lines = [json.loads(l) for l in open(os.path.join(d, "results.jsonl"))]
assert len(lines) == 12, len(lines)
keys = {"variant", "input", "epoch", "passed", "score", "note", "stopped_by", "turns", "usage", "cost", "wall_s",
        "cached_calls", "live_calls", "run_dir", "error"}
combos = set()
for l in lines:
    assert keys <= set(l), keys - set(l)
    combos.add((l["variant"], l["input"], l["epoch"]))
    assert l["status"] == "ok" and l["passed"] is True and l["score"] == 1 and l["error"] is None, l
    assert l["stopped_by"] == "answer" and l["turns"] == 2, l
    assert l["usage"]["input_tokens"] > 0 and l["wall_s"] > 0, l
    assert l["cached_calls"] + l["live_calls"] == 2, l
    assert l["run_dir"] == "runs/%s/%s/%d" % (l["variant"], l["input"], l["epoch"]), l
    run = os.path.join(d, l["run_dir"])
    for f in ("final.json", "trace.jsonl", "manifest.json", "output/answer.txt"):
        assert os.path.exists(os.path.join(run, f)), (run, f)
    final = json.load(open(os.path.join(run, "final.json")))
    assert final["stopped_by"] == "answer" and final["turns"] == 2, final
assert combos == {(v, i, e) for v in ("alpha", "beta") for i in ("one", "two", "three") for e in (1, 2)}, combos
rows = open(os.path.join(d, "summary.csv")).read().splitlines()
assert rows[0].startswith("variant,runs,done,passed") and [r.split(",")[0] for r in rows[1:]] == ["alpha", "beta"], rows
PY
requests_of "$qa" > "$TMP/req_a.json"; requests_of "$qb" > "$TMP/req_b.json"
check "the variants really change the requests: each queue saw its own instructions" python3 - "$TMP/req_a.json" "$TMP/req_b.json" "$first" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a and b
assert all(r["body"]["messages"][0]["content"].endswith("say ALPHA.") for r in a), a[0]["body"]["messages"][0]
assert all("answer with BETA first" in r["body"]["messages"][0]["content"] for r in b)
live = sum(json.loads(l)["live_calls"] for l in open(sys.argv[3] + "/results.jsonl"))
assert live == len(a) + len(b), (live, len(a), len(b))
PY
check "...and the results: each variant's outputs and answers carry its label and the input's word count" sh -c "
  grep -qx 'ALPHA 2' $first/runs/alpha/two/1/output/answer.txt && grep -qx 'BETA 3' $first/runs/beta/three/2/output/answer.txt &&
  grep -q 'ALPHA: the words' $first/runs/alpha/one/1/final.json && grep -q 'BETA: the words' $first/runs/beta/one/1/final.json"

before=$(requests_of "$qa" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
run_luagent eval "$TMP/proj/e.eval.yaml"
second=$(ls -td "$TMP"/evals/*-words-* | head -1)
check "a rerun with nothing changed: exit 0, 12 lines, 0 live calls, the provider saw nothing new" python3 - "$second" "$before" "$(requests_of "$qa" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1] + "/results.jsonl")]
assert len(lines) == 12 and all(l["passed"] for l in lines), lines
assert sum(l["live_calls"] for l in lines) == 0, [l["live_calls"] for l in lines]
assert sum(l["cached_calls"] for l in lines) == 24
assert sys.argv[2] == sys.argv[3], (sys.argv[2], sys.argv[3])
PY
check "...and gives the same answers and outputs" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ '$first' != '$second' ] &&
  for r in alpha/one/1 beta/three/2; do
    cmp $first/runs/\$r/output/answer.txt $second/runs/\$r/output/answer.txt &&
    python3 -c 'import json,sys; a, b = (json.load(open(p)) for p in sys.argv[1:]); assert a[\"output\"] == b[\"output\"]' \
      $first/runs/\$r/final.json $second/runs/\$r/final.json || exit 1
  done"

# ---- Ctrl-C: what finished is kept, nothing more starts ----
qc=eval-c-$$
base_c=$(script_queue "$qc" GAMMA 1 hang)
cat > "$TMP/proj/c.eval.yaml" <<YAML
name: stop
recipe: eval_recipe.lua
variants:
  gamma: {label: GAMMA, model.base_url: $base_c}
inputs:
  - glob: data/*.txt
    setting: input
concurrency: 1
cache: false
YAML
"$LUAGENT" eval "$TMP/proj/c.eval.yaml" > "$TMP/stdout" 2> "$TMP/stderr" &
pid=$!
for i in $(seq 1 300); do
  [ "$(cat "$TMP"/evals/*-stop-*/results.jsonl 2>/dev/null | wc -l)" -ge 1 ] && break
  sleep 0.1
done
sleep 2
kill -INT $pid
wait $pid
echo $? > "$TMP/status"
stopped=$(ls -d "$TMP"/evals/*-stop-*)
check "Ctrl-C: exit 130; the finished run's line is kept, the one running is marked interrupted, no third" python3 - "$stopped" "$(cat "$TMP/status")" <<'PY'
import json, os, sys
assert sys.argv[2] == "130", sys.argv[2]
lines = [json.loads(l) for l in open(sys.argv[1] + "/results.jsonl")]
assert [l["status"] for l in lines] == ["ok", "interrupted"], lines
assert os.path.exists(os.path.join(sys.argv[1], "summary.csv"))
assert len(os.listdir(os.path.join(sys.argv[1], "runs", "gamma"))) == 2
PY
check "Ctrl-C: the eval says what finished and where" grep -q 'interrupted: 1 of 3 runs finished' "$TMP/stderr"

# ---- the energy recipe's eval, scripted (no model configured) ----
[ -d recipes/eval_data ] || "$LUAGENT" run -q recipes/energy_eval_data.lua recipes/eval_data > /dev/null
run_luagent eval recipes/energy_anomaly.eval.yaml -q
energy=$(ls -d "$TMP"/evals/*-energy_anomaly-* | head -1)
check "the energy eval without a model: says once that the scripted driver runs and prompt-only variants run alike" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ \$(grep -c 'SCRIPTED RUNS' $TMP/stderr) -eq 1 ] &&
  grep -q 'variants that differ only in their prompts run alike' $TMP/stderr"
check "the energy eval: every run of both variants found the anomaly (IoU >= 0.5) and named its dates" python3 - "$energy" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1] + "/results.jsonl")]
assert len(lines) == 2 * 4, len(lines)
for l in lines:
    assert l["passed"] and l["score"] >= 0.5 and l["note"].startswith("IoU"), l
PY

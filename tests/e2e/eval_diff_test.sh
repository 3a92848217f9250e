# needs: chromium (installed when missing; when it cannot be, its checks print "# SKIP" with the reason)
# luagent eval diff A B over real evals: `luagent eval` of a small recipe
# without a sandbox (tests/e2e/eval_diff_recipe.lua) whose model is the fake
# provider (a test double) echoing each request, so the prompt decides what
# the check (the answer names kWh) finds. Edit the prompts of both variants,
# eval again: one run flips each way, listed first with their notes and
# traces, in the terminal and on the page (headless Chromium: DOM and
# screenshot). The same eval twice: exit 0. An eval of another recipe: said at
# the top, the shared variants and inputs still compared. Bad input: exit 2, named.
. tests/e2e/lib.sh
. tests/e2e/chromium.sh
export LUAGENT_EVALS_DIR="$TMP/evals"
export LUAGENT_CACHE="$TMP/cache"
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY NO_COLOR

P="$TMP/proj"
mkdir -p "$P/data" "$P/more"
cp tests/e2e/eval_diff_recipe.lua tests/e2e/eval_diff_recipe.yaml tests/e2e/eval_diff_check.lua "$P/"
cp tests/e2e/eval_diff_recipe.lua "$P/other.lua"; cp tests/e2e/eval_diff_recipe.yaml "$P/other.yaml"
printf '3.5\n4.5\n' > "$P/data/a.txt"            # no unit: an answer names kWh only when the prompt does
printf '2 kWh\n5 kWh\n' > "$P/data/b.txt"        # the unit in the input: every answer names it
printf '1.5\n' > "$P/more/c.txt"
URL=$("$LUAGENT" run -q /dev/stdin -- "eval-diff-$$" <<'LUA'
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local steps = {}
for i = 1, 40 do steps[i] = {echo = true} end
fake.script((...), steps)
print(fake.base_url((...), "openai"))
LUA
) || { echo "not ok - $SUITE: setup: the fake provider's queue"; exit 0; }

# spec FILE RECIPE PLAIN_PROMPT UNITS_PROMPT [INPUTS]: an eval spec of variants plain and units
spec() {
  inputs=${5:-}
  [ -n "$inputs" ] || inputs='  - {glob: data/*.txt, setting: input}'
  cat > "$1" <<YAML
name: totals
recipe: $2
check: eval_diff_check.lua
variants:
  plain: {instructions: "$3", model.base_url: "$URL"}
  units: {instructions: "$4", model.base_url: "$URL"}
inputs:
$inputs
YAML
}
# eval_of SPEC: runs the eval, prints its folder
eval_of() {
  "$LUAGENT" eval "$1" -q > "$TMP/eval.out" 2>&1 || { cat "$TMP/eval.out" >&2; return 1; }
  sed -n 's|^results: *||p' "$TMP/eval.out" | sed 's|/results.jsonl$||'
}
spec "$P/t.eval.yaml" eval_diff_recipe.lua "Report the total." "Report the total in kWh."
A=$(eval_of "$P/t.eval.yaml") || { echo "not ok - $SUITE: setup: the first eval"; exit 0; }
# the edit: plain now asks for the unit, units no longer does
spec "$P/t.eval.yaml" eval_diff_recipe.lua "Report the total in kWh." "Report the total."
B=$(eval_of "$P/t.eval.yaml") || { echo "not ok - $SUITE: setup: the second eval"; exit 0; }
C=$(eval_of "$P/t.eval.yaml") || { echo "not ok - $SUITE: setup: the third eval"; exit 0; }
A_ID=$(basename "$A"); B_ID=$(basename "$B")

# ---- one run flips each way ----
run_luagent eval diff "$A_ID" "$B_ID"
cp "$TMP/stdout" "$TMP/flip.out"
check "two evals where runs flip: exit 1, the evals named by id" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q '^A: .*$A_ID (4 runs' $TMP/flip.out && grep -q '^B: .*$B_ID (4 runs' $TMP/flip.out ||
  { cat $TMP/flip.out $TMP/stderr; exit 1; }"
check "the flipped runs come first, with their verdicts and check notes, then the rest" python3 - "$TMP/flip.out" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
at = lines.index("flipped: 2 runs")
assert lines[at + 1] == "  plain / a #1: failed -> passed", lines[at + 1]
assert lines[at + 2] == "    A: failed, score 0.00: no unit: kWh is missing", lines[at + 2]
assert lines[at + 3] == "    B: passed, score 1.00: names the unit (kWh)", lines[at + 3]
assert "  units / a #1: passed -> failed" in lines[at:], lines[at:]
rest = lines.index("the rest: 2 runs")
assert rest > lines.index("  units / a #1: passed -> failed")
assert lines[rest + 1:rest + 3] == ["  plain / b #1: passed, score 1.00: names the unit (kWh)",
                                    "  units / b #1: passed, score 1.00: names the unit (kWh)"], lines[rest:]
assert lines[-1] == "the evals differ: 2 runs flipped; the pass rate of plain, units", lines[-1]
PY
check "each flip names both runs' traces (files that exist) and their trace diff" sh -c "
  sed -n '/plain \/ a #1: failed/,/step by step/p' $TMP/flip.out > $TMP/flip1.txt
  traces=\$(grep -o '[^ ]*trace.jsonl' $TMP/flip1.txt) && [ \$(echo \"\$traces\" | wc -l) = 2 ] &&
  for t in \$traces; do [ -s \"\$t\" ] || exit 1; done &&
  grep -q '^    step by step: luagent trace diff .*$A_ID/runs/plain/a/1 .*$B_ID/runs/plain/a/1$' $TMP/flip1.txt ||
  { cat $TMP/flip1.txt; exit 1; }"
check "per variant A, B and the change: plain's pass rate up 50 points, units' down" python3 - "$TMP/flip.out" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def block(name):
    return re.search(r"^%s +A +B +change\n((?:  .*\n)+)" % name, text, re.M).group(1)
assert re.search(r"^  pass rate +50% \(1/2\) +100% \(2/2\) +\+50 pts$", block("plain"), re.M), block("plain")
assert re.search(r"^  pass rate +100% \(2/2\) +50% \(1/2\) +-50 pts$", block("units"), re.M), block("units")
for label in ("score", "turns / run", "tokens / run", r"\$ / run", "wall / run"):
    assert re.search(r"^  %s " % label, block("plain"), re.M), label
PY
check "not a terminal: no color codes" sh -c "! grep -q \"\$(printf '\\033')\" $TMP/flip.out"
python3 tests/e2e/pty_answer.py --log "$TMP/tty.log" -- "$LUAGENT" eval diff "$A" "$B" > /dev/null 2>&1
NO_COLOR=1 python3 tests/e2e/pty_answer.py --log "$TMP/tty_nocolor.log" -- "$LUAGENT" eval diff "$A" "$B" > /dev/null 2>&1
check "on a terminal the flips are colored (passed green, failed red); NO_COLOR=1: plain text" sh -c "
  grep -q \"plain / a #1: \$(printf '\\033')\\[31mfailed\$(printf '\\033')\\[0m -> \$(printf '\\033')\\[32mpassed\" $TMP/tty.log &&
  grep -q 'plain / a #1: failed -> passed' $TMP/tty_nocolor.log && ! grep -q \"\$(printf '\\033')\\[3\" $TMP/tty_nocolor.log"

PAGE=$(sed -n 's/^page: //p' "$TMP/flip.out")
check "the page is written in B's folder, its path printed" sh -c "
  [ '$PAGE' = '$B/diff-$A_ID.html' ] && [ -s '$PAGE' ] && grep -q '<title>Eval diff $A_ID → $B_ID</title>' '$PAGE'"

# ---- the same eval twice (the third from the cache) ----
run_luagent eval diff "$B" "$C"
check "two evals with the same verdicts: exit 0, 'the evals are the same', no flips" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q '^flipped: none' $TMP/stdout &&
  [ \"\$(tail -1 $TMP/stdout)\" = 'the evals are the same: no run flipped, the same pass rates' ] ||
  { cat $TMP/stdout $TMP/stderr; exit 1; }"

# ---- an eval of another recipe, with another variant and input ----
spec "$P/o.eval.yaml" other.lua "Report the total." "Report the total in kWh." "  - {input: data/a.txt}
  - {input: more/c.txt}"
sed -i 's/^  units:/  terse:/' "$P/o.eval.yaml"
O=$(eval_of "$P/o.eval.yaml") || { echo "not ok - $SUITE: setup: the other recipe's eval"; exit 0; }
run_luagent eval diff "$B" "$O"
cp "$TMP/stdout" "$TMP/other.out"
check "another recipe: said on the first line, what is in one eval only named, exit 1" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] &&
  [ \"\$(head -1 $TMP/other.out)\" = 'different recipes: A ran $P/eval_diff_recipe.lua, B ran $P/other.lua; comparing the variants and inputs both have, by name' ] &&
  grep -qx 'variants only in A: units; only in B: terse' $TMP/other.out &&
  grep -qx 'inputs only in A: b; only in B: c' $TMP/other.out || { cat $TMP/other.out $TMP/stderr; exit 1; }"
check "another recipe: the shared run (plain / a) is still compared, and flips" python3 - "$TMP/other.out" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
at = lines.index("flipped: 1 run")
assert lines[at + 1] == "  plain / a #1: passed -> failed", lines[at + 1]
head = [i for i, l in enumerate(lines) if l.split() == ["plain", "A", "B", "change"]]
assert len(head) == 1 and lines[head[0] + 1].split()[2:] == ["100%", "(1/1)", "0%", "(0/1)", "-100", "pts"], lines
assert not any(l.startswith("units ") or l.startswith("terse ") for l in lines), "a variant in one eval only has figures"
PY
OTHER_PAGE=$(sed -n 's/^page: //p' "$TMP/other.out")
check "another recipe: the page says so at the top, and lists what is in one eval only" sh -c "
  grep -q '<p class=\"warn\" id=\"recipes\">Different recipes: A ran $P/eval_diff_recipe.lua, B ran $P/other.lua' '$OTHER_PAGE' &&
  grep -q 'variants only in A: units · variants only in B: terse · inputs only in A: b · inputs only in B: c' '$OTHER_PAGE'"

# ---- bad input ----
run_luagent eval diff no-such-eval "$B"
check "an eval id that does not exist: exit 2, named, and where it looked" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] &&
  [ \"\$(cat $TMP/stderr)\" = \"luagent: eval diff: no eval 'no-such-eval' (looked in $TMP/evals); give an eval id (a folder name under evals/) or an eval's folder\" ] ||
  { cat $TMP/stderr; exit 1; }"
run_luagent eval diff "$P" "$B"
check "a folder that is not an eval's: exit 2, named" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q \"^luagent: eval diff: $P is a folder without a results.jsonl\" $TMP/stderr"
run_luagent eval diff "$A"
check "one eval only: exit 2 with the usage" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'two evals to compare, A and B (got 1)' $TMP/stderr &&
  grep -q 'usage: luagent eval diff A B' $TMP/stderr"

# ---- the page in headless Chromium ----
CHECKS="the page's DOM: the flipped runs first, each with both sides' verdicts, notes and trace links that exist
a screenshot of the page shows the flip badges, the better and worse changes and the answer diff"
if ! chromium_ready; then
  echo "$CHECKS" | while read -r name; do chromium_skip "$name"; done
  exit 0
fi
chromium_dom "file://$PAGE" > "$TMP/dom.html"
check "the page's DOM: the flipped runs first, each with both sides' verdicts, notes and trace links that exist" \
  python3 - "$TMP/dom.html" "$(dirname "$PAGE")" <<'PY'
import os, re, sys
dom, page_dir = open(sys.argv[1]).read(), sys.argv[2]
flipped, rest = dom.index('<section id="flipped">'), dom.index('<section id="rest">')
assert dom.index('<section id="variant-table">') < flipped < rest
flips = re.findall(r'<article class="flip"><h3>([^<]*)</h3>', dom)
assert flips == ["plain / a #1: failed → passed", "units / a #1: passed → failed"], flips
first = dom[flipped:dom.index("</article>", flipped)]
assert re.search(r'<div class="run fail"><header><span class="badge">failed</span> <b>A</b>', first), first
assert re.search(r'<div class="run pass"><header><span class="badge">passed</span> <b>B</b>', first), first
assert '<p class="note">no unit: kWh is missing</p>' in first and '<p class="note">names the unit (kWh)</p>' in first
assert '<span class="d-add">+{' in first and "in kWh." in first, "no answer diff"
links = re.findall(r'<a class="trace" href="([^"]*)"', dom)
assert len(links) == 8, links   # 2 flips x 2 sides, 2 other runs x 2 sides
for link in links:
    target = os.path.normpath(os.path.join(page_dir, link))
    assert os.path.isfile(target) and "<h1>luagent run " in open(target).read(), link
assert re.search(r'<tr><td>plain / b #1</td><td class="pass">passed</td><td class="pass">passed</td>', dom[rest:])
assert '<p class="verdict changed" id="verdict">Different: 2 runs flipped; the pass rate of plain, units.</p>' in dom
PY
chromium_screenshot "file://$PAGE" "$TMP/shot.png" 1280,1400
# the pass and fail badges, a better and a worse change, the answer diff's added and removed lines
check "a screenshot of the page shows the flip badges, the better and worse changes and the answer diff" \
  python3 tests/e2e/png_colors.py "$TMP/shot.png" 1280 1400 dafbe1 ffebe9 e3f6e8 e6ffec

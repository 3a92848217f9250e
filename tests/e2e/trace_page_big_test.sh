# needs: chromium (installed when missing; when it cannot be, its checks print "# SKIP" with the reason)
# The trace page of a 5,000-event trace (tests/e2e/trace_page_big.lua: two
# agents, ~830 turns with tool calls, sandbox commands, retries, tool errors
# and timeouts): every event is on the page (a tool result beside its call,
# a model response in its agent's turn), the page loads in headless Chromium
# and its filter works there. Prints what it measured (build time, page
# size, Chromium's load time) as "# ..." lines; the time limits checked are
# generous, to catch a page gone quadratic, not a slow machine.
. tests/e2e/lib.sh
. tests/e2e/chromium.sh

N=5000
run_luagent run tests/e2e/trace_page_big.lua "$TMP/big" "$N"
check "a synthetic trace of $N events is written" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ \$(wc -l < $TMP/big/trace.jsonl) -ge $N ] || { cat $TMP/stderr; exit 1; }"

started=$(date +%s.%N)
run_luagent trace html "$TMP/big" -o "$TMP/big/page.html"
built=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
size=$(wc -c < "$TMP/big/page.html")
echo "# $N events: the page is built in $built s, $(awk -v s="$size" 'BEGIN { printf "%.1f MB", s / 1048576 }')"
check "the page of $N events is built in under 30 s" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && awk -v b=$built 'BEGIN { exit !(b < 30) }' || { cat $TMP/stderr; exit 1; }"

cat > "$TMP/every_event.py" <<'PY'
# every_event.py TRACE PAGE: each event has a block (or an exec row) of its own id, except a paired tool
# result (in its call's block) and a model response just before its agent's turn (in the turn's block)
import json, re, sys
events = [json.loads(l) for l in open(sys.argv[1])]
page = open(sys.argv[2]).read()
ids = set(int(i) for i in re.findall(r' id="e(\d+)"', page))
missing = [i for i in range(1, len(events) + 1) if i not in ids]
for i in missing:
    t = events[i - 1]['type']
    nxt = events[i]['type'] if i < len(events) else None
    assert t == 'tool_result' or (t == 'model_response' and nxt == 'agent_turn'), 'event %d (%s) is not on the page' % (i, t)
results = sum(1 for e in events if e['type'] == 'tool_result')
assert sum(1 for i in missing if events[i - 1]['type'] == 'tool_result') == results, 'a result without its call'
assert page.count('BIG-TRACE-ANSWER') >= 2, 'the answer'
print('%d events, %d blocks' % (len(events), len(ids)))
PY
check "every event of the $N is on the page, in its own block or beside its call or in its turn" \
  python3 "$TMP/every_event.py" "$TMP/big/trace.jsonl" "$TMP/big/page.html"

CHECKS="the page of $N events loads in Chromium in under 20 s with every block
its errors filter shows the errors, retries and timeouts, and the pinned agent blocks"
if ! chromium_ready; then
  echo "$CHECKS" | while read -r name; do chromium_skip "$name"; done
  exit 0
fi

cat > "$TMP/probe.js" <<'JS'
<p id="probe"></p><script>addEventListener("load", function () { setTimeout(function () {
  var loaded = performance.now(), blocks = document.querySelectorAll("main .ev").length;
  document.querySelector('nav.filter button[data-f="errors"]').click();
  var shown = [].filter.call(document.querySelectorAll("main .ev"), function (e) { return e.offsetParent !== null; }).length;
  document.getElementById("probe").textContent = "loaded=" + Math.round(loaded) + " blocks=" + blocks + " errors=" + shown
    + " filter_ms=" + Math.round(performance.now() - loaded);
}, 0); });</script>
JS
awk -v probe="$(cat "$TMP/probe.js")" '{ sub(/<\/body>/, probe "</body>") } 1' "$TMP/big/page.html" > "$TMP/big/probe.html"
started=$(date +%s.%N)
chromium_dom "file://$TMP/big/probe.html" > "$TMP/probe.html"
wall=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
probe=$(grep -o '<p id="probe">[^<]*' "$TMP/probe.html" | sed 's/<p id="probe">//')
echo "# Chromium: $probe (ms; the whole headless run $wall s)"
# the conversation: from <main> on (the answer at the top is a block too)
awk '{ i = index($0, "<main id=\"events\">"); if (i) { print substr($0, i); on = 1 } else if (on) print }' \
  "$TMP/big/page.html" > "$TMP/main.html"
blocks=$(grep -o '<div class="ev ' "$TMP/main.html" | wc -l)
problems=$(grep -oE '<div class="ev [^"]*\b(bad|warn|pin)\b[^"]*"' "$TMP/main.html" | wc -l)
check "the page of $N events loads in Chromium in under 20 s with every block" sh -c "
  echo '$probe' | grep -q ' blocks=$blocks ' &&
  awk -v l=\"\$(echo '$probe' | sed 's/.*loaded=\([0-9]*\).*/\1/')\" 'BEGIN { exit !(l > 0 && l < 20000) }'"
check "its errors filter shows the errors, retries and timeouts, and the pinned agent blocks" sh -c "
  [ $problems -gt 6 ] && echo '$probe' | grep -q ' errors=$problems '"

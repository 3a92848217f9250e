# needs: docker
# needs: chromium (installed when missing; when it cannot be, its checks print "# SKIP" with the reason)
# The trace page (`luagent trace html`) of a real run, rendered by headless
# Chromium: an agent driven by the fake provider (tests/fake_provider.py, a
# test double) whose first call fails once (a retry), which draws a chart
# with run_python in a real sandbox, looks at it with view_image, calls a tool
# that does not exist (a tool error), and answers in Markdown with a code
# block, a table, links and a <script>. The checks: a screenshot with the
# page's colours; the DOM with the answer, a highlighted code block, the
# images as data: URIs that decode to the run's PNG, the totals, the
# timeline; the filter preselected by #filter=errors and switched by a click;
# a folded result opened by its button.
. tests/e2e/lib.sh
. tests/e2e/chromium.sh
export LUAGENT_RUNS_DIR="$TMP/runs"

q=trace-page-$$
cat > "$TMP/script.lua" <<'LUA'
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local queue = ...
local usage = {input_tokens = 20000, output_tokens = 500}
local draw = "import os\nimport matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
  .. "os.makedirs('output', exist_ok=True)\nxs = list(range(1, 11))\n"
  .. "plt.plot(xs, [x * x for x in xs], color='tab:red')  # squares\nplt.savefig('output/chart.png', dpi=40)\n"
  .. "for x in xs: print('square of', x, 'is', x * x, '<b>')\n" .. ("print('filler line')\n"):rep(30)
fake.script(queue, {
  {status = 500},
  {text = "First I draw the chart.", usage = usage,
   tool_calls = {{id = "call_1", name = "run_python", arguments = {code = draw}}}},
  {text = "Let me look at it.", usage = usage, tool_calls = {
    {id = "call_2", name = "view_image", arguments = {path = "output/chart.png"}},
    {id = "call_3", name = "no_such_tool", arguments = {}}}},
  {usage = usage, text = "## Result\n\nThe chart of the **squares** is in `output/chart.png`.\n\n"
    .. "```python\nimport matplotlib  # the plot\nprint(\"<script>alert(1)</script>\")\n```\n\n"
    .. "| metric | value |\n|---|---:|\n| points | 10 |\n\nSee [the docs](https://example.org/docs) and "
    .. "[this](javascript:alert(2)).\n\nTRACE-PAGE-ANSWER-OK"},
})
print(fake.base_url(queue, "openai"))
LUA
base=$("$LUAGENT" run -q "$TMP/script.lua" -- "$q")
run_luagent run tests/e2e/trace_page_recipe.lua -q --set "base_url=$base"
run=$(ls -td "$LUAGENT_RUNS_DIR"/*trace_page_recipe* 2>/dev/null | head -1)
check "the run answers after a retry, a chart, a look at it and a tool error" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'STOPPED: answer' $TMP/stdout && [ -s '$run/output/chart.png' ] &&
  grep -q '\"type\":\"model_retry\"' '$run/trace.jsonl' && grep -q '\"is_error\":true' '$run/trace.jsonl' ||
  { cat $TMP/stderr; exit 1; }"

run_luagent trace html "$run"
check "'trace html RUN_DIR' writes RUN_DIR/trace.html and says where" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ \"\$(cat $TMP/stdout)\" = '$run/trace.html' ] && [ -s '$run/trace.html' ] ||
  { cat $TMP/stderr; exit 1; }"
check "the page fetches nothing: no src or href to another host, one script (its own)" sh -c "
  ! grep -Eo '(src|href)=\"[a-z]+:[^\"]*' '$run/trace.html' | grep -v -e '^src=\"data:image/png;base64,' \
    -e '^href=\"https://example.org/docs' &&
  [ \"\$(grep -o '<script' '$run/trace.html' | wc -l)\" = 1 ]"

CHECKS="a screenshot shows the page: the timeline's bars, an agent's tag, the error and warning backgrounds
the DOM has the final answer, rendered from Markdown, with the <script> as text
the DOM has a highlighted Python code block
the DOM has the agent's instructions and task, as Markdown
the DOM has the chart as a data: URI that decodes to the run's output/chart.png, in the outputs and the view_image result
the DOM has the run's token and cost totals and the turn's
the DOM has the timeline with model, tool and sandbox bars
#filter=errors shows only the errors (and the agent's start and end); a click on 'tools' shows only tool calls
a folded result opens with its 'show all' button"
if ! chromium_ready; then
  echo "$CHECKS" | while read -r name; do chromium_skip "$name"; done
  exit 0
fi

chromium_screenshot "file://$run/trace.html" "$TMP/shot.png" 1280,2600
# the timeline's model, tool and sandbox bars, the first agent's tag, an error's and a warning's background
check "a screenshot shows the page: the timeline's bars, an agent's tag, the error and warning backgrounds" \
  python3 tests/e2e/png_colors.py "$TMP/shot.png" 1280 2600 4f7cd9 e09a3e 3fa37a ddf4ff fff5f5 fffbe6

chromium_dom "file://$run/trace.html" > "$TMP/dom.html"
check "the DOM has the final answer, rendered from Markdown, with the <script> as text" sh -c "
  grep -q '<h2>Answer</h2>' $TMP/dom.html && grep -q 'TRACE-PAGE-ANSWER-OK' $TMP/dom.html &&
  grep -q '<h4>Result</h4>' $TMP/dom.html && grep -q '<td style=\"text-align:right\">10</td>' $TMP/dom.html &&
  grep -q '<a href=\"https://example.org/docs\" rel=\"noopener noreferrer\">the docs</a>' $TMP/dom.html &&
  ! grep -q 'javascript:' $TMP/dom.html && grep -q '&lt;script&gt;alert(1)&lt;/script&gt;' $TMP/dom.html"
check "the DOM has a highlighted Python code block" sh -c "
  grep -q '<pre class=\"code\" data-lang=\"python\"><code><span class=\"hl-k\">import</span> matplotlib  <span class=\"hl-c\"># the plot</span>' $TMP/dom.html &&
  grep -q '<span class=\"hl-k\">for</span> x <span class=\"hl-k\">in</span> xs' $TMP/dom.html"
check "the DOM has the agent's instructions and task, as Markdown" sh -c "
  grep -q '<summary>Instructions</summary><div class=\"md\"><p>Draw the chart with <strong>Python</strong>; look at it' $TMP/dom.html &&
  grep -q '<div class=\"lbl\">Task</div><div class=\"md\"><p>Chart the squares of 1..10 into <code>output/chart.png</code>.' $TMP/dom.html"
cat > "$TMP/images.py" <<'PY'
# images.py DOM PNG: two <img> (the outputs and the view_image result), data: URIs of exactly PNG's bytes
import base64, re, sys
dom, png = open(sys.argv[1]).read(), open(sys.argv[2], 'rb').read()
srcs = re.findall(r'<img src="([^"]*)"', dom)
assert len(srcs) == 2, '%d images' % len(srcs)
for src in srcs:
    assert src.startswith('data:image/png;base64,'), src[:40]
    assert base64.b64decode(src.split(',', 1)[1], validate=True) == png, 'an image is not the run\'s chart'
print('%d images of %d bytes' % (len(srcs), len(png)))
PY
check "the DOM has the chart as a data: URI that decodes to the run's output/chart.png, in the outputs and the view_image result" \
  python3 "$TMP/images.py" "$TMP/dom.html" "$run/output/chart.png"
# 3 turns of 20,000 in and 500 out at gpt-4o-mini's price: $0.15 and $0.60 per million
check "the DOM has the run's token and cost totals and the turn's" sh -c "
  grep -q '<b>61.5k</b><span>tokens · 60.0k in · 1,500 out</span>' $TMP/dom.html &&
  grep -q '<b>\$0.0099</b><span>cost</span>' $TMP/dom.html &&
  grep -q '<b>Turn 3</b> · model [0-9.]* s · 20.0k in · 500 out · \$0.0033' $TMP/dom.html &&
  grep -q 'so far 61.5k tokens · \$0.0099' $TMP/dom.html"
check "the DOM has the timeline with model, tool and sandbox bars" sh -c "
  grep -q '<section class=\"tlsec\" id=\"timeline\">' $TMP/dom.html &&
  [ \"\$(grep -o '<rect class=\"b-model\"' $TMP/dom.html | wc -l)\" = 3 ] &&
  [ \"\$(grep -o '<rect class=\"b-tool\"' $TMP/dom.html | wc -l)\" = 2 ] &&
  [ \"\$(grep -o '<rect class=\"b-bad\"' $TMP/dom.html | wc -l)\" = 1 ] &&
  grep -q '<rect class=\"b-exec\"' $TMP/dom.html"

# the page again, with a probe at its end: what the filter shows, then after a click on "tools",
# then whether a folded result opens
cat > "$TMP/probe.js" <<'JS'
<p id="probe"></p><script>addEventListener("load", function () {
  function shown() { return [].filter.call(document.querySelectorAll("main .ev"), function (e) { return e.offsetParent !== null; }); }
  function has(e, words) { return e.className.split(" ").some(function (c) { return words.indexOf(c) >= 0; }); }
  function others(list, words) { return list.filter(function (e) { return !has(e, words); }).length; }
  var all = document.querySelectorAll("main .ev").length, r = [];
  var v = shown();
  r.push("filter=" + document.body.getAttribute("data-filter") + " shown=" + v.length + "/" + all
    + " other=" + others(v, ["bad", "warn", "pin"]) + " bad=" + v.filter(function (e) { return has(e, ["bad"]); }).length);
  document.querySelector('nav.filter button[data-f="tool"] span').click();
  v = shown();
  r.push("tool shown=" + v.length + " other=" + others(v, ["k-tool", "pin"]) + " on=" + document.querySelector("nav.filter button.on").getAttribute("data-f"));
  var more = document.querySelector("button.more"), pre = more.previousElementSibling, before = pre.clientHeight;
  more.click();
  r.push("fold " + (pre.clientHeight > before ? "opens" : "stays") + " " + more.textContent);
  document.getElementById("probe").textContent = r.join("; ");
});</script>
JS
awk -v probe="$(cat "$TMP/probe.js")" '{ sub(/<\/body>/, probe "</body>") } 1' "$run/trace.html" > "$run/probe.html"
chromium_dom "file://$run/probe.html#filter=errors" > "$TMP/probe.html"
probe=$(grep -o '<p id="probe">[^<]*' "$TMP/probe.html" | sed 's/<p id="probe">//')
echo "# probe: $probe"
# errors: the model error, the retry, the tool error; pinned: run start/end, agent start/end
check "#filter=errors shows only the errors (and the agent's start and end); a click on 'tools' shows only tool calls" sh -c "
  echo '$probe' | grep -Eq '^filter=errors shown=[0-9]+/[0-9]+ other=0 bad=[2-9]; tool shown=[0-9]+ other=0 on=tool' &&
  echo '$probe' | grep -Eq 'tool shown=([6-9]|[1-9][0-9]) '"
check "a folded result opens with its 'show all' button" sh -c "echo '$probe' | grep -q 'fold opens show less'"

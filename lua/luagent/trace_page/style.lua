-- luagent.trace_page.style (internal): the trace page's inline CSS and its
-- small inline script (nothing is fetched). The script only switches
-- classes and attributes: the filter by kind (buttons, or #filter=KIND in
-- the address: all, model, tool, sandbox, errors) and the "show all" toggle
-- of folded texts; the page reads fine without it.
--
--   style.CSS, style.JS   strings
local style = {}

style.CSS = [[
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2127;background:#f6f7f9}
header.top,main,section.tlsec{padding:0 2em;max-width:1400px;margin:0 auto}
header.top{padding-top:1.2em}h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.4em 0 .5em}
.meta,.dim,.note{color:#667}.note{font-style:italic;margin:.3em 0}
.badge{display:inline-block;font-size:.75em;padding:.1em .6em;border-radius:1em;vertical-align:middle;font-weight:600}
.st-ok{background:#dafbe1;color:#1a7f37}.st-bad{background:#ffebe9;color:#cf222e}.st-warn{background:#fff8c5;color:#7d4e00}
.cards{display:flex;flex-wrap:wrap;gap:.6em;margin:.8em 0}
.card{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:.45em .8em;min-width:9em}
.card b{display:block;font-size:1.25em}.card span{color:#667;font-size:.85em}
.kv table,table.files,.agents table{border-collapse:collapse;background:#fff;box-shadow:0 1px 2px #0001;font-size:.92em}
.kv td,.kv th,table.files td,table.files th,.agents td,.agents th{padding:.3em .7em;
border-bottom:1px solid #e4e6ea;text-align:left;vertical-align:top}
table.files td.num,.agents td.num{text-align:right;white-space:nowrap}
th{background:#eef0f3;font-weight:600}code.sha{font-size:.85em;color:#556}
figure{margin:.5em 0;display:inline-block;max-width:100%}
figure img{max-width:100%;max-height:480px;border:1px solid #e4e6ea;border-radius:4px;background:#fff}
figcaption{font-size:.85em;color:#667}
.tl{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:.6em .8em}
.lane{display:grid;grid-template-columns:11em 1fr;align-items:center;gap:.6em;min-height:20px}
.tl .who{margin:.5em 0 .1em;font-size:.85em}.tl .who:first-child{margin-top:0}
.lane svg{width:100%;height:18px;background:#f3f4f6;border-radius:3px;display:block}
.lab{font-size:.85em;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.ticks{position:relative;height:1.3em;font-size:.75em;color:#667}
.ticks span{position:absolute;transform:translateX(-50%);white-space:nowrap}
.ticks span:first-child{transform:none}.ticks span:last-child{transform:translateX(-100%)}
rect.b-model,i.b-model{fill:#4f7cd9;background:#4f7cd9}rect.b-cached,i.b-cached{fill:#9db6e8;background:#9db6e8}
rect.b-tool,i.b-tool{fill:#e09a3e;background:#e09a3e}rect.b-exec,i.b-exec{fill:#3fa37a;background:#3fa37a}
rect.b-bad,i.b-bad{fill:#d1242f;background:#d1242f}svg a:hover rect{opacity:.7}
.legend{font-size:.8em;color:#556;margin:.4em 0 0}.legend i{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 .9em;
vertical-align:middle;border-radius:2px}
nav.filter{position:sticky;top:0;z-index:2;background:#f6f7f9ee;padding:.5em 2em;border-bottom:1px solid #dde1e6;
max-width:none;margin-top:1em}
nav.filter button{font:inherit;border:1px solid #c9ced6;background:#fff;border-radius:1em;padding:.15em .8em;
margin-right:.3em;cursor:pointer}nav.filter button.on{background:#1d2127;color:#fff;border-color:#1d2127}
main{padding-top:.8em;padding-bottom:3em}
.ev{background:#fff;border:1px solid #dde1e6;border-left:4px solid #c9ced6;border-radius:6px;padding:.45em .8em;
margin:.5em 0;content-visibility:auto;contain-intrinsic-size:auto 90px}
.ev.k-model{border-left-color:#4f7cd9}.ev.k-tool{border-left-color:#e09a3e}.ev.k-sandbox{border-left-color:#3fa37a}
.ev.k-agent{border-left-color:#8250df;background:#fbf9ff}.ev.k-run{border-left-color:#57606a;background:#f6f8fa}
.ev.quiet{padding:.05em .8em;font-size:.85em;color:#667;background:transparent;border:0;border-left:4px solid #c9d6f0;
margin:.2em 0;contain-intrinsic-size:auto 20px}
.ev.warn{border-left-color:#bf8700;background:#fffbe6}.ev.bad{border-left-color:#d1242f;background:#fff5f5}
.row{display:flex;flex-wrap:wrap;gap:.2em .5em;align-items:baseline}
.row .t{color:#8c959f;font:12px ui-monospace,Menlo,Consolas,monospace;min-width:5.5em;text-decoration:none}
.ag{font-weight:600;padding:0 .45em;border-radius:3px;font-size:.9em}
.a0{background:#ddf4ff;color:#0550ae}.a1{background:#fbefff;color:#8250df}.a2{background:#dafbe1;color:#1a7f37}
.a3{background:#fff1e5;color:#bc4c00}.a4{background:#ffeff7;color:#bf3989}.a5{background:#e6fcf5;color:#0b7a6f}
.a6{background:#fff8c5;color:#7d4e00}.a7{background:#eaeef2;color:#24292f}
.flag{font-size:.8em;font-weight:600;padding:0 .45em;border-radius:1em}.flag.bad{background:#ffebe9;color:#cf222e}
.flag.warn{background:#fff8c5;color:#7d4e00}.type{font:12px ui-monospace,Menlo,Consolas,monospace;font-weight:600}
.lbl{font-size:.75em;text-transform:uppercase;letter-spacing:.04em;color:#8c959f;margin:.2em 0}
.pair{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:.8em;margin-top:.3em}
@media (max-width:900px){.pair{grid-template-columns:minmax(0,1fr)}}
.calls{color:#556;font-size:.9em;margin-top:.2em}.arg{font-size:.8em;color:#667;margin-top:.3em}
.execs{margin-top:.4em;font-size:.85em;color:#445}.exec{border-top:1px dashed #e4e6ea;padding:.2em 0}
.exec details{display:inline-block;margin-left:.5em}.exec details[open]{display:block}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;border-radius:4px;padding:.5em .6em;margin:.3em 0;
font:12px/1.45 ui-monospace,Menlo,Consolas,monospace;overflow:auto}
pre.fold{max-height:22em}pre.fold.open{max-height:none}
button.more{font:inherit;font-size:.8em;border:0;background:none;color:#0969da;cursor:pointer;padding:0}
.hl-k{color:#cf222e;font-weight:600}.hl-s{color:#1a7f37}.hl-c{color:#6e7781;font-style:italic}.hl-n{color:#953800}
.hl-b{color:#8250df}.hl-p{color:#0550ae}.hl-v{color:#bc4c00}
.md{overflow-wrap:anywhere}.md p{margin:.35em 0}.md h3,.md h4,.md h5,.md h6{margin:.6em 0 .3em}
.md table{border-collapse:collapse;margin:.4em 0}.md th,.md td{border:1px solid #d0d7de;padding:.2em .6em}
.md code{background:#eff1f3;border-radius:3px;padding:0 .25em;font:12px ui-monospace,Menlo,Consolas,monospace}
.md pre code{background:none;padding:0}.md blockquote{margin:.4em 0;padding:0 .8em;border-left:3px solid #d0d7de;color:#556}
.md-img{color:#667;font-style:italic}details summary{cursor:pointer;color:#0969da}
details.instr{margin:.3em 0}details.reasoning{margin:.3em 0;color:#57606a}.answer,.task{margin-top:.3em}a{color:#0969da}
body[data-filter=model] .ev:not(.k-model):not(.pin),body[data-filter=tool] .ev:not(.k-tool):not(.pin),
body[data-filter=sandbox] .ev:not(.k-sandbox):not(.pin),
body[data-filter=errors] .ev:not(.bad):not(.warn):not(.pin){display:none}
]]

style.JS = [[
(function () {
  var KINDS = {all: 1, model: 1, tool: 1, sandbox: 1, errors: 1};
  var body = document.body, buttons = document.querySelectorAll("nav.filter button");
  function set(kind) {
    if (!KINDS[kind]) kind = "all";
    body.setAttribute("data-filter", kind);
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].className = buttons[i].getAttribute("data-f") === kind ? "on" : "";
    }
  }
  function fromAddress() {
    var m = /filter=(\w+)/.exec(location.hash);
    if (m) { set(m[1]); return; }
    var target = location.hash.length > 1 && document.getElementById(location.hash.slice(1));
    if (target && target.offsetParent === null) { set("all"); target.scrollIntoView(); }
  }
  document.querySelector("nav.filter").addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("button[data-f]");
    if (!button) return;
    var kind = button.getAttribute("data-f");
    set(kind);
    try { history.replaceState(null, "", "#filter=" + kind); } catch (err) { /* a file: page may refuse */ }
  });
  document.addEventListener("click", function (e) {
    var b = e.target;
    if (!b.classList || !b.classList.contains("more")) return;
    var p = b.previousElementSibling;
    var open = p.classList.toggle("open");
    if (!b.getAttribute("data-label")) b.setAttribute("data-label", b.textContent);
    b.textContent = open ? "show less" : b.getAttribute("data-label");
  });
  window.addEventListener("hashchange", fromAddress);
  fromAddress();
})();
]]

return style

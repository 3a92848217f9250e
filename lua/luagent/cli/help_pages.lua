-- luagent.cli.help_pages: the ONE source of luagent's command-line help, with
-- its prose in doc/help/TOPIC.md (embedded at build time). The usage summary
-- (`luagent help`), each command's page and each topic's page (`luagent help
-- TOPIC`) and the man page (`luagent help --man` -> luagent.1) are all
-- rendered from these tables by luagent.cli.help, so they cannot drift apart.
-- README.md is the front door; what it leaves out is here, and it links each
-- page ("luagent help sandboxes").
--
--   pages.ORDER        the commands, in the order of the summary and the man page
--   pages.GUIDES       the topics that are not commands (recipes, sandboxes, ...),
--                      in reading order: after the commands in the summary, and
--                      the man page's TOPICS section
--   pages.TOPICS       topic -> page:
--     about            one line: what the command does (a topic: what it covers)
--     synopsis         {"luagent run RECIPE.lua [options] [-- args]", ...} (commands)
--     usage            its lines of the usage summary (as printed, 2-space indent; commands)
--     text             the description, doc/help/TOPIC.md: paragraphs split by blank
--                      lines; a paragraph whose lines all start with two spaces is shown as is
--     options          {{"--flag VALUE", "what it does"}, ...} (commands)
--     examples         {{"luagent ...", "what it does"}, ...}
--     exit             {{"0", "when"}, ...} (commands)
--     rows             {{term, text}, ...} under the text (a topic's table, e.g. error kinds)
--     see              a topic's "See also" line: related topics and files
--   pages.ENVIRONMENT  {{name, what, topics = {...}}, ...}: a page lists those naming it
--   pages.FILES        {{path, what}, ...} (the man page's FILES)
--   pages.INTRO        the man page's DESCRIPTION (doc/help/intro.md)
-- Say each thing once: a page says what happens and why; signatures and
-- option tables live in lua/meta (luagent meta), and a page points there.
-- ASCII only (the man page is plain roff). tests/e2e/help_test.sh checks that
-- every command of src/main.c has a page, every option of `run` is on it, the
-- man page renders without a warning, and every README link names a topic.
local sys = require "luagent.sys"

local pages = {}

-- A page's prose: doc/help/NAME.md, embedded at build time like the other
-- assets (Lua here holds the structure: order, synopsis, options, exit codes).
local function prose(name)
  local text = sys.asset("doc/help/" .. name .. ".md")
  if not text then error("this luagent was built without doc/help/" .. name .. ".md (make luagent embeds it)", 2) end
  return (text:gsub("\n$", ""))
end

pages.INTRO = prose("intro")

pages.ORDER = {"run", "approve", "new", "runs", "sandbox", "trace", "eval", "cache", "doctor", "meta", "repl", "version", "help"}
pages.GUIDES = {"start", "recipes", "tools", "mcp", "structured", "approval", "models", "sandboxes", "network", "pool",
                "fork", "engines", "kubernetes", "outputs", "traces", "checks", "faults", "errors"}

local T = {}
pages.TOPICS = T

T.run = {
  about = "run a recipe",
  synopsis = {"luagent run RECIPE.lua [--set key=value]... [options] [-- args]"},
  usage = [[
  run RECIPE.lua [--set key=value]... [-- args]   run a recipe
      --set key=value   a setting (dotted keys nest; values typed like YAML)
      --lua-path DIR    load the luagent Lua library from DIR instead of the binary
      --record FILE     save the model exchanges of this run
      --replay FILE     answer model calls from a recording (no network)
      --cache           answer repeated model calls from the cache (.luagent/cache/ beside the
                        recipe; --set cache.dir=DIR or LUAGENT_CACHE), store new answers
      --cache=refresh   call the model every time, refill the cache   --no-cache   cache off
      -q, --quiet       no live view      --json   events as JSON lines
      --yes             approve every tool call that would ask a person (approve = "ask")
      --watch           run again whenever the recipe, its YAML or a Lua module it loaded
                        changes, and show how the answer and the outputs changed
  run --resume RUN [--set key=value]...           go on with a run that stopped (killed,
                                                  interrupted, its limits, waiting)]],
  text = prose("run"),
  options = {
    {"--set key=value, -s key=value", "a setting for this run: dotted keys nest (model.provider=anthropic), "
      .. "values are typed like YAML (3 is an integer, [1, 2] a list); repeatable"},
    {"--lua-path DIR", "load the luagent Lua library from DIR instead of the copy in the binary (while changing it)"},
    {"--record FILE", "save every model request and answer of this run to FILE"},
    {"--replay FILE", "answer model calls from a recording made with --record: no model, no network, the same run"},
    {"--cache", "answer model calls seen before from the cache (.luagent/cache/ beside the recipe, setting "
      .. "cache.dir or LUAGENT_CACHE) and store new answers; a rerun goes live at the first request that changed"},
    {"--cache=refresh", "call the model every time and refill the cache"},
    {"--no-cache", "the cache off, whatever the recipe's YAML says"},
    {"-q, --quiet", "no live view"},
    {"--json", "the run's events as JSON lines on stdout, instead of the live view"},
    {"--yes", "approve every tool call that would ask a person at the terminal (an agent with approve = \"ask\" "
      .. "or a tool with needs_approval); without a terminal and without --yes such calls are refused"},
    {"--watch", "run again whenever the recipe, its YAML or a Lua module it loaded changes (cache on), and "
      .. "show how the final answer and each declared output changed; Ctrl-C ends it"},
    {"--resume RUN", "go on with the run RUN (its folder, or its id under runs/) from where it stopped: killed, "
      .. "interrupted, stopped by max_turns or its budget (raise them with --set), or waiting for an approval; "
      .. "the recipe runs again from its journal, no model call or command repeated (luagent help traces)"},
  },
  examples = {
    {"luagent run recipes/energy_anomaly.lua", "the worked example: a model from the environment, else scripted"},
    {"luagent run recipes/energy_anomaly.lua --set input=my.csv --set limits.max_turns=30", "other data, another limit"},
    {"luagent run demo.lua --set model.provider=anthropic --set model.model=claude-sonnet-4-5", "another model"},
    {"luagent run demo.lua --set model.provider=openai --set model.base_url=http://localhost:11434/v1 "
      .. "--set model.model=llama3.1", "a local OpenAI-compatible server (Ollama)"},
    {"luagent run demo.lua --record demo.rec && luagent run demo.lua --replay demo.rec", "pay once, rerun for free"},
    {"luagent run demo.lua --watch", "edit the prompt in demo.yaml; see what changed"},
    {"luagent run --resume runs/20261206-101500-demo-ab12 --set limits.max_turns=40", "go on, with more turns"},
  },
  exit = {
    {"0", "the recipe ran to its end (or returned 0)"},
    {"1", "the recipe raised an error, or returned 1 (its own failure, e.g. a missing output)"},
    {"2", "bad usage: an unknown option, a bad --set, a recipe or --replay file that cannot be read; a --resume "
      .. "of a run that does not exist, finished, changed since, or that another process resumes"},
    {"3", "the run waits for a person's approval (approve = \"defer\"): luagent approve RUN, then --resume"},
    {"130", "stopped by Ctrl-C (also when tasks did not stop within the cancel grace)"},
    {"128+N", "stopped by signal N"},
  },
}

T.approve = {
  about = "decide on the tool call a run waits for, then resume it",
  synopsis = {"luagent approve RUN [--deny CALL --why TEXT]"},
  usage = [[
  approve RUN [--deny CALL --why TEXT]             decide on the call a waiting run stopped at
                                                  (approve = "defer"); then run --resume RUN]],
  text = prose("approve"),
  options = {
    {"--deny CALL", "refuse the call (its id, as the run said) instead of approving it"},
    {"--why TEXT", "with --deny: the reason the model reads as the call's result"},
  },
  examples = {
    {"luagent approve runs/20261206-101500-triage-ab12 && luagent run --resume runs/20261206-101500-triage-ab12",
     "approve, and go on"},
    {"luagent approve 20261206-101500-triage-ab12 --deny call_7 --why 'not on production'", "refuse, with a reason"},
  },
  exit = {
    {"0", "the decision is recorded"},
    {"2", "bad usage; no such run; the run waits for no approval, or for another call"},
  },
}

T.new = {
  about = "write a new recipe that runs as it is",
  synopsis = {"luagent new NAME [--from TEMPLATE] [--dir DIR]"},
  usage = [[
  new NAME [--from energy_anomaly] [--dir DIR]      write a recipe that runs as it is: NAME.lua,
                                                    NAME.yaml, NAME.script.yaml, NAME.eval.yaml, ...]],
  text = prose("new"),
  options = {
    {"--from TEMPLATE", "the template: basic (the default) or energy_anomaly"},
    {"--dir DIR", "write the files into DIR (made when missing) instead of the current folder"},
  },
  examples = {
    {"luagent new sales_report && luagent run sales_report.lua", "a new recipe, run at once (scripted without a model)"},
    {"luagent run sales_report.lua --set input=my.csv", "on your own CSV"},
    {"luagent run sales_report.lua --set input=data/", "on every CSV file of a folder"},
    {"luagent eval sales_report.eval.yaml", "its eval: every variant x input, checked"},
    {"luagent new my_energy --from energy_anomaly --dir recipes/mine", "a copy of the energy recipe to change"},
  },
  exit = {
    {"0", "the files were written"},
    {"1", "a file could not be written"},
    {"2", "bad usage: a NAME that is not a module name, an unknown template or option, a file already there"},
  },
}

T.runs = {
  about = "list the runs, newest first: status, start, recipe, turns, cost; how to resume",
  synopsis = {"luagent runs [DIR] [--json]"},
  usage = [[
  runs [DIR] [--json]                               the runs, newest first: ok, failed, running, resumable,
                                                    waiting...; the command that resumes each that can]],
  text = prose("runs"),
  options = {
    {"DIR", "the runs folder to list (default: $LUAGENT_RUNS_DIR, else ./runs)"},
    {"--json", "one JSON object per run per line: id, dir, status, resumable, started (seconds since the epoch), "
      .. "recipe, turns, cost, error, waiting, resume (the command)"},
  },
  examples = {
    {"luagent runs", "what ran here, and what can go on"},
    {"luagent runs --json | jq -r 'select(.resumable) | .resume'", "the commands that resume"},
  },
  exit = {
    {"0", "listed (also: no runs, or no runs folder; it says so)"},
    {"2", "bad usage: an unknown option, two folders, a DIR that is a file"},
  },
}

T.sandbox = {
  about = "build the sandbox image; list and remove leftover sandboxes",
  synopsis = {"luagent sandbox build [--offline | --online] [--force]", "luagent sandbox ls",
              "luagent sandbox prune [--all] [--force]"},
  usage = [[
  sandbox build [--offline] | ls | prune            the sandbox image; leftover sandboxes]],
  text = prose("sandbox"),
  options = {
    {"--offline", "build: without a registry, from the machine's Debian mirror"},
    {"--online", "build: from a registry only"},
    {"--force", "build: even when the image is up to date; prune: remove without asking, unsaved outputs too"},
    {"--all", "prune: every luagent sandbox, also those of runs still going"},
  },
  examples = {
    {"luagent sandbox build", "make luagent-sandbox:latest (skipped when up to date)"},
    {"luagent sandbox ls", "what is running, and for which run"},
    {"luagent sandbox prune", "remove what crashed runs left behind"},
  },
  exit = {
    {"0", "done"},
    {"1", "Docker could not be reached, the build failed, or prune kept unsaved outputs it could not ask about "
          .. "(the message says why and what to do)"},
    {"2", "bad usage"},
  },
}

T.trace = {
  about = "read a run's trace: show it, write it as a page, compare two runs",
  synopsis = {"luagent trace show TRACE.jsonl [--full]", "luagent trace html TRACE.jsonl [-o OUT.html]",
              "luagent trace diff A B"},
  usage = [[
  trace show|html TRACE.jsonl|RUN | diff A B        read a run's trace (a page); how two runs differ]],
  text = prose("trace"),
  options = {
    {"--full", "show: every text whole"},
    {"-o OUT.html", "html: where to write the page (default: TRACE.html beside the trace)"},
  },
  examples = {
    {"luagent trace show runs/<run-id>/trace.jsonl", "what the run did"},
    {"luagent trace html runs/<run-id>/trace.jsonl -o run.html", "a page to share"},
    {"luagent trace diff runs/<run-a> runs/<run-b>", "what changed between two runs"},
  },
  exit = {
    {"0", "done (diff: the runs are the same)"},
    {"1", "the trace could not be read or written (diff: the runs differ)"},
    {"2", "bad usage (diff: a path that is not a trace or run folder)"},
  },
}

T.eval = {
  about = "run a recipe over variants x inputs x epochs, check and compare; compare two evals",
  synopsis = {"luagent eval SPEC.yaml [--concurrency N|auto] [--set key=value]... [-q]",
              "luagent eval SPEC.yaml --resume [EVAL_ID] [--rerun-failed-checks]",
              "luagent eval diff A B [-o PAGE.html]"},
  usage = [[
  eval SPEC.yaml [--concurrency N] [--set k=v] [-q] variants x inputs x epochs of a recipe, checked
                                                    and compared (evals/<id>/: results, summary, a page)
  eval diff A B [-o PAGE.html]                      two evals compared: the runs that flipped first]],
  text = prose("eval"),
  options = {
    {"--concurrency N, -j N", "runs at once (beats the spec's concurrency); auto: as the engines allow"},
    {"--resume [EVAL_ID]", "continue the newest eval of the spec (or EVAL_ID): only what did not finish runs, "
      .. "and the waiting runs a person decided go on"},
    {"--rerun-failed-checks", "with --resume: also run again the runs whose check failed"},
    {"--set key=value, -s key=value", "a setting for every run, on top of the variant's and the input's"},
    {"-q, --quiet", "no progress lines"},
    {"-o PAGE.html", "diff: where the page goes (default: B's folder, diff-<A's id>.html)"},
  },
  examples = {
    {"luagent eval recipes/energy_anomaly.eval.yaml", "the energy recipe's eval"},
    {"luagent eval demo.eval.yaml --set model.provider=anthropic --concurrency 1", "another model, one run at a time"},
    {"luagent eval demo.eval.yaml --resume", "after Ctrl-C or a crash: the runs that did not finish"},
    {"luagent eval demo.eval.yaml --concurrency auto", "as wide as the engines keep up with"},
    {"luagent eval diff 20250301-101500-demo-1a2b 20250301-104000-demo-9f3c", "what a prompt edit changed"},
  },
  exit = {
    {"0", "the eval ran (whatever the checks said); diff: the same (no run flipped, the same pass rates)"},
    {"1", "the eval could not run; diff: the evals differ"},
    {"2", "bad usage or a bad spec, --resume of no such eval or of another spec (nothing ran); diff: no such eval"},
    {"3", "the eval ran and a run waits for a person's approval (approve = \"defer\"): luagent approve it, then --resume"},
    {"130", "Ctrl-C: what finished is written (--resume goes on from there)"},
  },
}

T.cache = {
  about = "the model-call cache: what it holds; empty it",
  synopsis = {"luagent cache stats [DIR]", "luagent cache clear [DIR] [--older-than AGE]"},
  usage = [[
  cache stats|clear [DIR] [--older-than 14d]        the model-call cache: what it holds; empty it]],
  text = prose("cache"),
  options = {
    {"--older-than AGE", "clear: only entries older than AGE, a number and a unit s, m, h or d (14d)"},
  },
  examples = {
    {"luagent cache stats recipes/energy_anomaly.lua", "the energy recipe's cache"},
    {"luagent cache clear --older-than 14d", "forget answers older than two weeks"},
  },
  exit = {
    {"0", "done"},
    {"1", "the cache could not be read or cleared"},
    {"2", "bad usage"},
  },
}

T.doctor = {
  about = "check Docker, the sandbox image and the model keys",
  synopsis = {"luagent doctor"},
  usage = [[
  doctor                                            check Docker, the image and API keys]],
  text = prose("doctor"),
  options = {},
  examples = {{"luagent doctor", "is everything in place?"}},
  exit = {
    {"0", "Docker answers and the image is present"},
    {"1", "something is missing (the FAIL line says how to fix it)"},
  },
}

T.meta = {
  about = "write LuaLS annotations and .luarc.json for editor help",
  synopsis = {"luagent meta [DIR]"},
  usage = [[
  meta [DIR]                                        write LuaLS annotations and .luarc.json for editor help]],
  text = prose("meta"),
  options = {},
  examples = {{"luagent meta recipes", "editor help for the recipes folder"}},
  exit = {
    {"0", "written"},
    {"1", "a file could not be written, or .luarc.json was left alone (what to add is printed)"},
    {"2", "bad usage"},
  },
}

T.repl = {
  about = "a Lua prompt with every primitive loaded",
  synopsis = {"luagent repl"},
  usage = [[
  repl                                              a Lua prompt with every primitive loaded]],
  text = prose("repl"),
  options = {},
  examples = {
    {"luagent repl", "then: luagent.json.encode{a = 1}"},
    {"echo 'print(luagent.version)' | luagent repl", "one line from stdin"},
  },
  exit = {{"0", "end of input"}, {"130", "Ctrl-C while a line was running and did not stop"}},
}

T.version = {
  about = "print the version",
  synopsis = {"luagent version"},
  usage = [[
  version                                           print the version]],
  text = prose("version"),
  options = {},
  examples = {},
  exit = {{"0", "always"}},
}

T.help = {
  about = "the usage summary, a command's page, the man page",
  synopsis = {"luagent help [TOPIC]", "luagent help --man"},
  usage = [[
  help [TOPIC]                                      this summary; a command's or a topic's page]],
  -- the lists are the pages' own: {commands} and {topics} in doc/help/help.md
  text = (prose("help"):gsub("{(%w+)}", {commands = table.concat(pages.ORDER, ", "),
                                         topics = table.concat(pages.GUIDES, ", ")})),
  options = {{"--man", "the man page, roff, on stdout"}},
  examples = {
    {"luagent help run", "everything about luagent run"},
    {"luagent help sandboxes", "what a sandbox session is, and what a command in it can do"},
    {"luagent help --man | man -l -", "the man page, without installing it"},
  },
  exit = {{"0", "printed"}, {"2", "an unknown topic (the topics are listed)"}},
}

-- ---- topics: what a recipe author needs beyond the commands ----

T.start = {
  about = "first steps: run, outputs, a prompt, a folder, a step, an eval, a tool",
  text = prose("start"),
  examples = {
    {"luagent new triage && luagent run triage.lua", "a recipe that runs as it is"},
    {"luagent run triage.lua --set input=logs/", "over a folder"},
    {"luagent eval triage.eval.yaml", "its eval; again after a change, then luagent eval diff A B"},
  },
  see = "luagent help recipes, luagent help tools, luagent help checks, luagent help eval.",
}

T.recipes = {
  about = "a recipe's parts, the agent loop, the scripted driver",
  text = prose("recipes"),
  examples = {
    {"luagent new sales_report && luagent run sales_report.lua", "a recipe to start from, run at once"},
    {"luagent run recipes/energy_anomaly.lua", "the worked example"},
  },
  see = "luagent help run, luagent help new; every function's arguments and results: lua/meta/*.lua "
    .. "(luagent meta).",
}

T.tools = {
  about = "the tools a model may call: the standard set, your own",
  text = prose("tools"),
  see = "lua/meta/tools.lua (every field), lua/meta/agent.lua (the agent's options).",
}

T.mcp = {
  about = "tools from MCP servers, run on the host or inside the sandbox",
  text = prose("mcp"),
  see = "lua/meta/mcp.lua (every option).",
}

T.checks = {
  about = "an eval's checks: the path a run took, its outputs, a model's grade",
  text = prose("checks"),
  see = "luagent help eval, lua/meta/checks.lua, tests/e2e/checks_check.lua (every helper in one check).",
}

T.structured = {
  about = "answers as JSON that matches a schema",
  text = prose("structured"),
  see = "lua/meta/schema.lua, lua/meta/agent.lua (output).",
}

T.approval = {
  about = "tool calls that wait for a yes",
  text = prose("approval"),
  see = "lua/meta/agent.lua (luagent.ApproveMode), luagent help run (--yes).",
}

T.models = {
  about = "providers, messages, retries, costs, the fake provider",
  text = prose("models"),
  see = "lua/meta/model.lua, lua/meta/retry.lua, luagent help structured.",
}

T.sandboxes = {
  about = "what a session is, what a command in it can do",
  text = prose("sandboxes"),
  see = "luagent help network, luagent help pool, luagent help engines, luagent help sandbox; "
    .. "every option: lua/meta/sandbox.lua; "
    .. "the supervisor: sandbox/supervisor/DESIGN.md.",
}

T.network = {
  about = "a sandbox that reaches only what the recipe allows, by rule",
  text = prose("network"),
  rows = {
    {"host, port", "what the client asked for"},
    {"method", "CONNECT, GET, ... (inside a tunnel whose TLS ends at luagent: the inner request's)"},
    {"address", "the address luagent connected to"},
    {"allowed", "true or false"},
    {"rule, reason", "the rule that decided; why it was refused (the body of the refusal)"},
    {"status", "the refusal's HTTP status (403, 400, 431, 501, 502)"},
    {"bytes_up", "bytes from the sandbox upstream; bytes_down the other way"},
    {"ms", "how long the connection lasted"},
    {"tls_terminated", "TLS ended at luagent (a host with secrets)"},
    {"secrets", "the names of the secrets put in the request (never a value)"},
    {"secret_refused", "the secret whose placeholder made the request refused"},
    {"limit", "max_connections or max_bytes, when a limit refused or cut it"},
    {"dropped_bytes", "bytes the client sent past its one request (a pipelined request): never forwarded"},
    {"values_returned", "how many times a secret's value came back and was replaced by its placeholder"},
    {"error", "what ended an allowed connection early"},
  },
  see = "luagent help sandboxes, luagent help traces; lua/meta/sandbox.lua (luagent.NetworkRules, box:network); "
    .. "the design: sandbox/NETWORK.md.",
}

T.pool = {
  about = "a warm pool: sessions started ahead, so an open takes one",
  text = prose("pool"),
  see = "luagent help sandboxes; lua/meta/sandbox.lua (sandbox.pool).",
}

T.fork = {
  about = "box:fork: n sessions that start from a copy of one",
  text = prose("fork"),
  see = "luagent help sandboxes, luagent help pool; lua/meta/sandbox.lua (box:fork).",
}

T.engines = {
  about = "sessions over several Docker engines, by socket or TLS",
  text = prose("engines"),
  see = "luagent help sandboxes, luagent help faults; lua/meta/sandbox.lua (engines, capacity_wait).",
}

T.kubernetes = {
  about = "sandboxes as Pods on a Kubernetes cluster (k8s://CONTEXT)",
  text = prose("kubernetes"),
  see = "luagent help engines, luagent help pool; sandbox/KUBERNETES.md (the design).",
}

T.outputs = {
  about = "bringing outputs home: save, manifest, mirror, rescue",
  text = prose("outputs"),
  see = "luagent help faults, luagent help sandbox; lua/meta/outputs.lua (the report), lua/meta/sandbox.lua (save).",
}

T.traces = {
  about = "a run's trace, the trace page, recording and replay",
  text = prose("traces"),
  examples = {
    {"luagent run recipes/energy_anomaly.lua --record rec.jsonl", "save the model exchanges"},
    {"luagent run recipes/energy_anomaly.lua --replay rec.jsonl", "no model, no network, the same run"},
    {"luagent trace html runs/<run-id>", "-> runs/<run-id>/trace.html"},
  },
  see = "luagent help trace, luagent help cache; lua/meta/trace.lua.",
}

T.faults = {
  about = "when things go wrong: what luagent guarantees",
  text = prose("faults"),
  see = "luagent help outputs, luagent help errors; lua/meta/sandbox.lua (engine_grace, workspace_size).",
}

-- The error kinds, from the catalogue itself (luagent.errors.KINDS and the
-- old names it still accepts, luagent.errors.ALIASES), so they are written once.
local function error_kinds()
  local errors = require "luagent.errors"
  local names, old = {}, {}
  for name in pairs(errors.KINDS) do names[#names + 1] = name end
  for name, new in pairs(errors.ALIASES or {}) do old[new] = (old[new] and old[new] .. ", " or "") .. name end
  table.sort(names)
  local rows = {}
  for _, name in ipairs(names) do
    local kind = errors.KINDS[name]
    rows[#rows + 1] = {name, kind.about .. (kind.retry and " (trying again can help)" or "")
      .. (old[name] and ("; also accepted by its old name " .. old[name] .. ", for one release") or "")}
  end
  return rows
end

T.errors = {
  about = "the one failure value, and the catalogue of its kinds",
  text = prose("errors"),
  rows = error_kinds(),
  term_width = 19, -- cluster_unreachable, the longest kind, on its own row's line
  see = "lua/meta/errors.lua, lua/meta/retry.lua.",
}

pages.ENVIRONMENT = {
  {"OPENAI_API_KEY", "the key for OpenAI (model.provider openai or auto)", topics = {"run", "eval", "doctor", "models"}},
  {"OPENAI_BASE_URL", "an OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter)",
   topics = {"run", "eval", "doctor", "models"}},
  {"ANTHROPIC_API_KEY", "the key for Anthropic (model.provider anthropic or auto)",
   topics = {"run", "eval", "doctor", "models"}},
  {"DOCKER_HOST", "the Docker engine (default unix:///var/run/docker.sock); DOCKER_TLS_VERIFY and "
    .. "DOCKER_CERT_PATH for TLS", topics = {"run", "eval", "sandbox", "doctor", "sandboxes", "engines"}},
  {"LUAGENT_ENGINES", "several Docker engines for every run and for doctor and sandbox: addresses separated "
    .. "by commas, each optionally URL#CAPACITY", topics = {"run", "eval", "sandbox", "doctor", "engines"}},
  {"LUAGENT_PATH", "load the Lua library from this folder instead of the binary (like --lua-path)",
   topics = {"run", "eval", "repl"}},
  {"LUAGENT_RUNS_DIR", "where run folders go (default runs/ in the current folder)", topics = {"run", "runs", "approve"}},
  {"LUAGENT_NO_JOURNAL", "1: no journal (runs/<id>/journal.jsonl), so the run cannot be resumed (bench/journal "
    .. "measures what it costs)", topics = {"run"}},
  {"LUAGENT_CACHE", "the model-call cache folder (default .luagent/cache/ beside the recipe)",
   topics = {"run", "eval", "cache"}},
  {"LUAGENT_EVALS_DIR", "where eval folders go (default evals/ beside the spec)", topics = {"eval"}},
  {"LUAGENT_CANCEL_GRACE", "seconds tasks get to stop after Ctrl-C before luagent exits 130 (default 10)",
   topics = {"run", "eval", "repl", "faults"}},
}

pages.FILES = {
  {"RECIPE.yaml", "a recipe's settings and prompts, beside it (luagent.config)"},
  {"runs/<run-id>/", "a run's folder: trace.jsonl, output/, manifest.json (sizes and sha256 of the outputs)"},
  {".luagent/cache/", "the model-call cache, beside the recipe"},
  {"evals/<eval-id>/", "an eval's results.jsonl, summary.csv, index.html and run folders"},
  {"PREFIX/share/luagent/meta/", "the LuaLS annotations (also written by luagent meta)"},
}

return pages

-- luagent.cli.help_pages: the ONE source of luagent's command-line help. The
-- usage summary (`luagent help`), each command's page and each topic's page
-- (`luagent help TOPIC`) and the man page (`luagent help --man` -> luagent.1)
-- are all rendered from these tables by luagent.cli.help, so they cannot
-- drift apart. README.md is the front door; what it leaves out is here, and
-- it links each page ("luagent help sandboxes").
--
--   pages.ORDER        the commands, in the order of the summary and the man page
--   pages.GUIDES       the topics that are not commands (recipes, sandboxes, ...),
--                      in reading order: after the commands in the summary, and
--                      the man page's TOPICS section
--   pages.TOPICS       topic -> page:
--     about            one line: what the command does (a topic: what it covers)
--     synopsis         {"luagent run RECIPE.lua [options] [-- args]", ...} (commands)
--     usage            its lines of the usage summary (as printed, 2-space indent; commands)
--     text             the description: paragraphs split by blank lines; a
--                      paragraph whose lines all start with two spaces is shown as is
--     options          {{"--flag VALUE", "what it does"}, ...} (commands)
--     examples         {{"luagent ...", "what it does"}, ...}
--     exit             {{"0", "when"}, ...} (commands)
--     rows             {{term, text}, ...} under the text (a topic's table, e.g. error kinds)
--     see              a topic's "See also" line: related topics and files
--   pages.ENVIRONMENT  {{name, what, topics = {...}}, ...}: a page lists those naming it
--   pages.FILES        {{path, what}, ...} (the man page's FILES)
--   pages.INTRO        the man page's DESCRIPTION
-- Say each thing once: a page says what happens and why; signatures and
-- option tables live in lua/meta (luagent meta), and a page points there.
-- ASCII only (the man page is plain roff). tests/e2e/help_test.sh checks that
-- every command of src/main.c has a page, every option of `run` is on it, the
-- man page renders without a warning, and every README link names a topic.
local pages = {}

pages.INTRO = [[
luagent is a small C program that embeds Lua 5.4 and gives Lua scripts fast,
safe primitives for calling language models, running code in locked-down
Docker sandboxes, and staging files in and out of a sandbox workspace.
Everything an agent does (its loop, instructions, tools, retry policy, what it
saves) is a Lua recipe that a person who never writes C can read, copy and
change.

A recipe is a Lua file plus, where useful, a YAML file of its settings and
prompts beside it; changing a prompt or a limit needs no rebuild. luagent new
writes a working one to start from. Each run gets a folder, runs/<run-id>/,
with its trace (every model call, tool call and sandbox command) and the
outputs the agent saved.]]

pages.ORDER = {"run", "new", "sandbox", "trace", "eval", "cache", "doctor", "meta", "repl", "version", "help"}
pages.GUIDES = {"recipes", "tools", "mcp", "structured", "approval", "models", "sandboxes", "network", "pool",
                "fork", "engines", "outputs", "traces", "checks", "faults", "errors"}

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
                        changes, and show how the answer and the outputs changed]],
  text = [[
Runs the Lua file RECIPE.lua as one task on luagent's event loop, with the
global luagent (settings, config, spawn, map, run_dir) and every module
(luagent.model, .sandbox, .agent, .tools, ...) at hand. Modules beside the
recipe can be required. The run gets a folder, runs/<run-id>/ (under
$LUAGENT_RUNS_DIR when set), holding trace.jsonl and what the recipe saves
there; a live view of the model turns, tool calls and sandbox commands goes to
stderr.

luagent.config("NAME.yaml") reads the YAML beside the recipe with the --set
values on top, so any setting can be changed for one run. Arguments after --
reach the recipe as luagent.args (and as ...).

With no model configured (no OPENAI_API_KEY, ANTHROPIC_API_KEY or
OPENAI_BASE_URL, and model.provider auto), the recipes of luagent new and
recipes/ run their scripted driver instead, and say so (luagent help
recipes).

Errors print FILE:LINE: message and a traceback and exit 1. Ctrl-C (or
SIGTERM) cancels every task, runs their <close> handlers (sandboxes are
removed, what the agent saved is kept) and exits 130 (143); luagent help
faults says what is kept when things go wrong.]],
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
  },
  examples = {
    {"luagent run recipes/energy_anomaly.lua", "the worked example: a model from the environment, else scripted"},
    {"luagent run recipes/energy_anomaly.lua --set input=my.csv --set limits.max_turns=30", "other data, another limit"},
    {"luagent run demo.lua --set model.provider=anthropic --set model.model=claude-sonnet-4-5", "another model"},
    {"luagent run demo.lua --set model.provider=openai --set model.base_url=http://localhost:11434/v1 "
      .. "--set model.model=llama3.1", "a local OpenAI-compatible server (Ollama)"},
    {"luagent run demo.lua --record demo.rec && luagent run demo.lua --replay demo.rec", "pay once, rerun for free"},
    {"luagent run demo.lua --watch", "edit the prompt in demo.yaml; see what changed"},
  },
  exit = {
    {"0", "the recipe ran to its end (or returned 0)"},
    {"1", "the recipe raised an error, or returned 1 (its own failure, e.g. a missing output)"},
    {"2", "bad usage: an unknown option, a bad --set, a recipe or --replay file that cannot be read"},
    {"130", "stopped by Ctrl-C (also when tasks did not stop within the cancel grace)"},
    {"128+N", "stopped by signal N"},
  },
}

T.new = {
  about = "write a new recipe that runs as it is",
  synopsis = {"luagent new NAME [--from TEMPLATE] [--dir DIR]"},
  usage = [[
  new NAME [--from energy_anomaly] [--dir DIR]      write a recipe that runs as it is: NAME.lua,
                                                    NAME.yaml, NAME_script.lua, NAME.eval.yaml, ...]],
  text = [[
Writes a recipe to start from into DIR (the current folder by default, made
when missing): NAME.lua, its settings and prompts NAME.yaml, its scripted
driver NAME_script.lua, an eval spec NAME.eval.yaml and the eval's check
NAME_check.lua, with what the template needs beside them. They run as they
are: with the model the environment or --set points at, or, with none, with
the scripted driver, which says so (luagent help recipes).

The default template is a small agent (NAME.lua, under 40 lines) with a
sandbox and the standard tools (run_python, run_shell, read_file,
write_file, list_files, view_image) that profiles a CSV file; a tiny
sample, NAME_sample.csv, is written beside it. Its scripted driver is a file
of its own: the recipe you edit is the agent, and the driver changes with the
task, or goes once you always run with a model (luagent help recipes). --from
energy_anomaly copies the energy-anomaly case study and its helpers under
the new name (NAME_script.lua, NAME_steps.lua, NAME_data.lua,
NAME_eval_data.lua), with its file names, requires and paths fixed.

NAME must be a Lua module name (letters, digits and _, not starting with a
digit): it names the files and the recipe's helpers are required by it. A file
that is already there is never overwritten: nothing is written and the command
names it. The templates are embedded in the binary.]],
  options = {
    {"--from TEMPLATE", "the template: basic (the default) or energy_anomaly"},
    {"--dir DIR", "write the files into DIR (made when missing) instead of the current folder"},
  },
  examples = {
    {"luagent new sales_report && luagent run sales_report.lua", "a new recipe, run at once (scripted without a model)"},
    {"luagent run sales_report.lua --set input=my.csv", "on your own CSV"},
    {"luagent eval sales_report.eval.yaml", "its eval: every variant x input, checked"},
    {"luagent new my_energy --from energy_anomaly --dir recipes/mine", "a copy of the energy recipe to change"},
  },
  exit = {
    {"0", "the files were written"},
    {"1", "a file could not be written"},
    {"2", "bad usage: a NAME that is not a module name, an unknown template or option, a file already there"},
  },
}

T.sandbox = {
  about = "build the sandbox image; list and remove leftover sandboxes",
  synopsis = {"luagent sandbox build [--offline | --online] [--force]", "luagent sandbox ls",
              "luagent sandbox prune [--all] [--force]"},
  usage = [[
  sandbox build [--offline] | ls | prune            the sandbox image; leftover sandboxes]],
  text = [[
Recipes run code in sandboxes: Docker containers of the image
luagent-sandbox:latest (Python with numpy, scipy, pandas and matplotlib), with
no network, memory, CPU and process caps, every capability dropped, a
read-only root and a writable /workspace. luagent talks to the Docker Engine
API directly (the unix socket, or DOCKER_HOST). With LUAGENT_ENGINES (engine
addresses separated by commas, each optionally URL#CAPACITY) the commands go
over every engine listed: ls shows each one first, prune prunes each, build
builds once and copies the image to the engines that lack it.

build makes the image from the recipe embedded in the binary
(sandbox/Dockerfile, from python:3.12-slim), and skips it when an image of
the same recipe is there. It pulls its base from a registry when one
answers, else (or with --offline) builds the same image with debootstrap
from the Debian mirror the machine's apt already uses.

ls lists luagent's sandboxes with the run that owns each, and their outputs
(a sandbox opened with save = {...}): saved, unsaved, mirrored (kept in
memory and the container stopped: what the outputs mirror brought home
during the run is all that is left), lost (the same, with nothing brought
home) or - (none declared). A run removes its
sandboxes when it ends, on errors and on Ctrl-C; prune removes those whose run
is gone (a crash, a kill -9, a lost engine), and with --all every luagent
sandbox, running or not. It first rescues a leftover's unsaved outputs into
its run's folder, and says so; before removing one whose outputs could not
be rescued it asks (y/N) on the terminal, and without a terminal it keeps
it and exits 1 unless --force. The next run that opens a sandbox does the
same sweep, keeping what it could not rescue (luagent help outputs). What a
session is and what a command in it can do: luagent help sandboxes.]],
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
  text = [[
Every run writes runs/<run-id>/trace.jsonl: one JSON event per line for each
model request and answer, tool call and result, sandbox command (with its
timing and exit code) and usage, keys and secrets redacted.

show prints the run step by step for a person (long texts cut; --full prints
them whole). html writes the same as one self-contained page (beside the
trace unless -o says where) and prints its path. diff compares two runs, given
as trace files or run folders: their settings, model requests (the first field
that differs), tool calls and results, final answers (a unified diff) and
outputs (sizes, sha256 and diffs of text files). What a trace holds, what
the page shows, recording and replay: luagent help traces.]],
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
  text = [[
Runs a recipe many times in one process, as an eval spec (YAML) says: every
variant (settings, applied like --set) x input (settings, e.g. input: a.csv,
or a glob of files) x epoch, each run in its own run folder and sandbox,
concurrency at a time, with the model-call cache on. A check (a Lua file
returning function(run) -> {passed, score, note}) scores each run.

  recipe: demo.lua
  check: demo_check.lua
  variants:
    as_is: {}
    brief: {instructions: "..."}
  inputs:
    - input: demo_sample.csv
    - {glob: data/*.csv, setting: input}
  epochs: 1
  concurrency: 2
  budget: {tokens: 500000, cost: 1.00}

It writes evals/<eval-id>/ beside the spec (or under $LUAGENT_EVALS_DIR):
every run's folder; results.jsonl, a line per run (variant, input, epoch,
passed, score, note, stopped_by, turns, usage, cost, wall_s, cached and live
calls); summary.csv; and index.html, one self-contained page with the
variant table and, per input, the variants side by side (final answers,
output images, text outputs diffed against the first variant, links to each
run's trace page). The terminal shows the same table, the best value of each
column marked. Rerun an eval after editing one variant and only that
variant's model calls go live (the cache). With no model configured every
run is its recipe's scripted driver, so the variants cannot differ: the eval
says so.

concurrency: auto (or --concurrency auto) starts as many runs as the
engines' capacities (URL#N in LUAGENT_ENGINES, less what warm pools keep)
and 4 per host core allow, 2 to start: it halves the width when an open
waits for room or opens or commands take over 1.5 times as long as in the first
runs (a moving average, measured), and widens it by one as runs end while
they keep up. Each progress line ends with the width ("[4 at a time]").

--resume continues an eval that stopped (Ctrl-C, a crash, a spent budget, a
dead engine) in its own folder: the newest eval of the spec, or EVAL_ID (a
folder name under evals/, or its path). Runs that finished keep their line,
folder and trace; the missing, interrupted, skipped and failed ones run
again (--rerun-failed-checks: also those whose check failed), and the
results, summary, table and page cover all of them. A run counts as
finished once its results.jsonl line is written whole (after its folder),
so a crash mid-write leaves it to run again. A spec edited since is refused
naming what changed (a variant's or input's settings, one removed, fewer
epochs, the recipe, check or --set); new variants, inputs or epochs are
fine: only their runs run. A budget counts the runs kept too: raise it in
the spec to go on after it was spent.

A spec with an unknown key, a missing file, a setting the recipe's YAML does
not have or a glob that matches nothing is refused before anything runs,
naming the file, line and key. luagent new writes a spec and a check beside
a new recipe; luagent trace diff compares two of the runs step by step.

diff compares two evals, A (before) and B (after an edit), given as eval
folders or ids (folder names, looked for under $LUAGENT_EVALS_DIR, ./evals/
and ./*/evals/; the start of an id is enough). Runs are matched by variant, input and epoch.
It prints per variant the pass rate, score, turns, tokens, cost and wall time
of A and B with the change (over the runs both have); then the runs that
flipped, passed in one and failed in the other, with both check notes, both
traces and the luagent trace diff command for the pair; then the rest. The
same goes to a page (B's folder, diff-<A's id>.html, or -o), whose path it
prints. Evals of different recipes are compared by the names they share,
said on the first line; variants and inputs in one eval only are listed.
Colors only on a terminal, never with NO_COLOR set.


luagent help checks: one-line checks on the path a run took and on what it
made, and a model-graded check (grader: in the spec).]],
  options = {
    {"--concurrency N, -j N", "runs at once (beats the spec's concurrency); auto: as the engines allow"},
    {"--resume [EVAL_ID]", "continue the newest eval of the spec (or EVAL_ID): only what did not finish runs"},
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
    {"130", "Ctrl-C: what finished is written (--resume goes on from there)"},
  },
}

T.cache = {
  about = "the model-call cache: what it holds; empty it",
  synopsis = {"luagent cache stats [DIR]", "luagent cache clear [DIR] [--older-than AGE]"},
  usage = [[
  cache stats|clear [DIR] [--older-than 14d]        the model-call cache: what it holds; empty it]],
  text = [[
luagent run --cache (or cache: true in a recipe's YAML, and every eval)
answers model calls seen before from a cache folder and stores each new
complete answer; the sandbox work still runs for real, so a rerun goes live
exactly at the first request that changed, and says so:

  turns 1-3 from cache; live from turn 4: tool result of turn 3 changed
  6 model calls: 3 from cache, 3 live, $0.0142 saved

Keys hash the request (provider, base URL, model, messages, tools,
parameters; never the API key; the durations tools report left out);
streamed calls get the cached text through on_delta. --cache=refresh
refills, --no-cache turns it off whatever the YAML says. Entries are written
atomically; a torn one is a miss, a full disk a warning.

DIR is the cache folder, or a recipe file (its .luagent/cache/ beside it); by
default $LUAGENT_CACHE, else .luagent/cache/ in the current folder. stats says
how many entries it holds, how big, how old, per model; clear removes them
(only the cache's own files), or with --older-than only those written before
then.]],
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
  text = [[
Checks what a recipe needs and prints one line per check, ok or FAIL with what
to do: the Docker engine (where, which version and API), the sandbox image
(present, built from the current recipe), leftover sandboxes of runs that are
gone, and which model keys are set (without any, recipes fall back to their
scripted driver). With LUAGENT_ENGINES it prints one line per engine listed
(where, version, image, sandboxes, capacity); one that does not answer fails.]],
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
  text = [[
Writes the LuaLS annotations of the whole recipe API (the luagent global,
sandbox, model, agent, tools, retry, trace, json, yaml, fs, http, errors, with
every option table and result) into DIR/.luagent/meta/ and points
DIR/.luarc.json at them, so an editor with the Lua language server completes
and type-checks a recipe. An existing .luarc.json keeps its settings: the
missing entries are merged in, or, when it cannot be read as JSON, it is left
alone and what to add is printed. DIR is the current folder by default.

The files are lua/meta/*.lua of the sources (make install puts them in
PREFIX/share/luagent/meta/), where every function's arguments and results
are written down. The low-level modules under the recipe API
(luagent.sys, .tar, .loop, .engine_client, .engine_stream, ...) have a file
each too, marked low-level.]],
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
  text = [[
Reads Lua lines from the terminal (or stdin), runs each as a task on the
event loop with the luagent global loaded, and prints what an expression
gives. A line that fails prints its error and the prompt goes on. Ctrl-D
leaves.]],
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
  text = [[
Prints luagent VERSION (also luagent --version).]],
  options = {},
  examples = {},
  exit = {{"0", "always"}},
}

T.help = {
  about = "the usage summary, a command's page, the man page",
  synopsis = {"luagent help [TOPIC]", "luagent help --man"},
  usage = [[
  help [TOPIC]                                      this summary; a command's or a topic's page]],
  text = [[
Without a TOPIC, prints the usage summary of every command and the list of
topics (also luagent --help). With a command (]] .. table.concat(pages.ORDER, ", ") .. [[),
prints its page: what it does, its options, examples, exit status and
environment; luagent COMMAND --help does the same. With a topic (]]
    .. table.concat(pages.GUIDES, ", ") .. [[), prints what a recipe author needs
to know about it, and where the rest is written. --man prints the man page
(roff) made from the same pages, the topics as sections of their own; make
install puts it in PREFIX/share/man/man1/luagent.1, for man luagent.]],
  options = {{"--man", "the man page, roff, on stdout"}},
  examples = {
    {"luagent help run", "everything about luagent run"},
    {"luagent help sandboxes", "what a sandbox session is, and what a command in it can do"},
    {"luagent help --man | man -l -", "the man page, without installing it"},
  },
  exit = {{"0", "printed"}, {"2", "an unknown topic (the topics are listed)"}},
}

-- ---- topics: what a recipe author needs beyond the commands ----

T.recipes = {
  about = "a recipe's parts, the agent loop, the scripted driver",
  text = [[
A recipe is a Lua file, run by luagent run as one task on the event loop,
and, where useful, a YAML file of its settings and prompts beside it
(luagent.config; --set changes any of them for one run: luagent help run).
Most recipes have the same parts: a sandbox with the input staged in it
(luagent help sandboxes), a model (luagent help models), the tools the model
may call (luagent help tools), an agent that runs the loop, and the outputs
it saved brought home (luagent help outputs). luagent new writes one that
runs at once.

The agent loop (agent.new{...}:run(task)) calls the model, runs the tool
calls it asks for (several at once when it asks for several), feeds the
results back, and stops at a final answer, max_turns or the budget: a limit
is a normal outcome with the transcript kept, and result.stopped_by says
which. Unknown tools, arguments that are not valid JSON and tools that raise
all become results the model reads and can fix. Results longer than
max_tool_output are cut to head and tail; the whole text stays in the
workspace and the read_output tool pages through it. Declared outputs are
checked before the agent may finish: it is told what is missing, and the
result says plainly what never appeared.

The scripted driver: with no model configured (no OPENAI_API_KEY,
ANTHROPIC_API_KEY or OPENAI_BASE_URL, and model.provider auto; or provider
scripted), model.from_or_scripted(cfg.model, require("NAME_script")) takes the
recipe's scripted driver instead. It is not a model: a function, kept in
its own file beside the recipe (NAME_script.lua; energy_anomaly_script.lua
for the worked example), that makes the tool calls a model would make on
this task and writes an answer from what they printed. The run says so
on stdout ("SCRIPTED RUN: no model is configured"), and every tool call it makes
really runs in the sandbox. Once you always run with a model, delete it and
take the model with assert(model.from(cfg.model)).

Waiting primitives (model calls, sandbox commands, HTTP, sleeps) yield to
one event loop, so tasks made with luagent.spawn or luagent.map run at once
from plain sequential-looking Lua. luagent.at_exit runs a function when the
run ends: normally, on an error or on Ctrl-C.]],
  examples = {
    {"luagent new sales_report && luagent run sales_report.lua", "a recipe to start from, run at once"},
    {"luagent run recipes/energy_anomaly.lua", "the worked example"},
  },
  see = "luagent help run, luagent help new; every function's arguments and results: lua/meta/*.lua "
    .. "(luagent meta).",
}

T.tools = {
  about = "the tools a model may call: the standard set, your own",
  text = [[
A tool is a plain Lua table: name (letters, digits, _ or -), description
(for the model), parameters (a JSON Schema of an object) and
handler(args, ctx). The handler returns the text the model reads (or {text,
images}). When it raises, the agent turns the error into a tool result the
model reads and can fix; only a cancellation (Ctrl-C, SIGTERM) goes through
and ends the run. A recipe adds its own tool in a few lines
(recipes/csv_cleanup.lua has one, beside a custom retry policy).

tools.standard(box, {timeout}) is the usual set for a code-running agent, all
working on one sandbox and its /workspace: run_python (a persistent
interpreter: variables and imports survive between calls), run_shell,
read_file, write_file, list_files and view_image (the model sees the
picture). Each is also a function of its own (tools.run_python(box), ...),
for a recipe that picks. The agent adds read_output, which pages through a
result that was cut at max_tool_output.

Tools from an MCP server are ordinary tools too (luagent help mcp); a tool
with needs_approval waits for a yes first (luagent help approval).]],
  see = "lua/meta/tools.lua (every field), lua/meta/agent.lua (the agent's options).",
}

T.mcp = {
  about = "tools from MCP servers, run on the host or inside the sandbox",
  text = [[
tools.mcp mounts the tools of an MCP (Model Context Protocol) server as
ordinary tools: a server run as a process (stdio) or one reached over HTTP
(Streamable HTTP).

  local files <close> = assert(tools.mcp{  -- the server ends with it
    command = {"npx", "-y", "@modelcontextprotocol/server-filesystem",
               "/srv/notes"},
    only = {"read_text_file", "list_directory"},
    prefix = "notes_"})         -- as notes_read_text_file, ...
  local search = assert(tools.mcp{url = "http://localhost:3001/mcp",
    headers = {authorization = "Bearer " .. token},
    timeout = 300})             -- seconds per call (default 120)
  local helper = agent.new{model = m,
    tools = {tools.run_python(box), table.unpack(files)}}

Text comes back as text, images as images the model sees, resources as
their URI and text. A result the server marks isError, a call past its
timeout (cancelled at the server too) and a server that exits are tool
errors the model reads, naming the server. Progress the server reports
shows in the live view (turn 3  notes_read_text_file  progress 2/5); its
stderr, its start and its end go to the trace. A stdio server gets a small
environment (PATH, HOME, ..., plus env = {...}; never the API keys) and is
killed when the run ends, fails or is interrupted. A command that is not
there, a program that does not speak MCP and a server that never answers
are each one clear error: protocol: the MCP server 'cat' does not speak MCP:
...

With sandbox = box the server runs inside the sandbox, so it acts on
/workspace under the sandbox's limits (memory, pids, no network) and dies
with the box. The sandbox cannot download, so stage the package from the
host (npm install --prefix mcp @modelcontextprotocol/server-filesystem);
node is in the sandbox image:

  local box <close> = assert(sandbox.open{manifest = {
    [".mcp/node_modules"] = sandbox.dir("mcp/node_modules")}})
  local files <close> = assert(tools.mcp{sandbox = box,
    command = {"node", "/workspace/.mcp/node_modules/"
      .. "@modelcontextprotocol/server-filesystem/dist/index.js",
      "/workspace"}})]],
  see = "lua/meta/mcp.lua (every option).",
}

T.checks = {
  about = "an eval's checks: the path a run took, its outputs, a model's grade",
  text = [[
An eval's check file returns function(run) -> {passed, score, note}.
luagent.checks makes the common ones one line each; every helper takes the
run and returns such a verdict, its note saying what was found:

  local checks = require "luagent.checks"
  return function(run)
    return checks.all{
      checks.used_tool(run, "run_python"),
      checks.tool_order(run, {"read_file", "run_python"}),
      checks.max_turns(run, 10),
      checks.no_failed_command(run, "timed_out"),
      checks.csv_columns(run, "anomalies.csv", {"timestamp", "energy_kwh"}),
      checks.output_text(run, "report.md", {"kWh", "2024-03"}),
      function() return checks.graded(run) end,   -- asked only if the rest pass
    }
  end

The path, from the run's trace: used_tool(run, name), not_used_tool(run,
name), tool_order(run, {names}) (in this order, others may come between),
max_turns(run, n) (model turns of all the run's agents), max_commands(run, n)
(sandbox commands), no_failed_command(run [, kind]) (kind: exit, timed_out,
oom_killed, killed, error; none: any), max_cost(run, dollars) (a cached call
counts what it cost when stored, so a rerun judges alike).

What it made: output_text(run, path, text or {texts}) (plain text),
output_matches(run, path, pattern) (a Lua pattern, not a regex),
csv_columns(run, path, {columns}), output_json(run, path, schema) and
answer_schema(run, schema) (JSON Schema as for structured answers). A path
names a declared output ("output/report.md", or "report.md" inside
output/). An absolute path, "..", an output not in the manifest, a link out
of the run's folder, a malformed schema or pattern: that check fails
saying so, the eval goes on.

Composing: all{...} (every item; score the mean), any{...} (one item; score
the best), weighted{{verdict, weight}, ..., pass = 0.7} (the weighted mean
of scores; without pass, passed when every item passed). An item may be a
function returning a verdict: all stops at the first failure, any at the
first pass, so an expensive check runs only when it matters.

A model-graded check, for what code cannot judge: checks.graded(run
[, {rubric, model, outputs, trajectory}]) asks a model for {passed, score,
note} with the rubric, the final answer and the text outputs (trajectory =
true adds the tool calls). The spec's grader key says which model and the
default rubric; a spec with a rubric and no check grades every run with it:

  grader:
    model: {provider: anthropic, model: claude-sonnet-4-5}   # over the recipe's model settings
    rubric: The report names the anomaly's cause and its size in kWh.

The grader's model is the recipe's model settings, --set's over them, then
grader.model (never a variant's: every variant is judged by the same
model). Its call is cached like the runs' (the eval's cache setting), so a
rerun of the same answer asks nothing; its trace is in the run's folder
under grading/. results.jsonl marks the run graded and keeps grading_cost
apart from the run's cost (the budget counts both). The table marks pass
and score with ~ and says how many runs a model judged and what it cost;
the page marks them with a diamond and a legend.]],
  see = "luagent help eval, lua/meta/checks.lua, tests/e2e/checks_check.lua (every helper in one check).",
}

T.structured = {
  about = "answers as JSON that matches a schema",
  text = [[
An agent (or a single call) can be asked for JSON that matches a schema,
written as a plain Lua table; result.value is the decoded answer,
result.output its JSON text:

  local REPORT = {type = "object", additionalProperties = false,
    required = {"kind", "hour", "summary"},
    properties = {
      kind = {type = "string", enum = {"spike", "drop"}},
      hour = {type = "integer", minimum = 0, maximum = 23},
      summary = {type = {"string", "null"}}}}   -- may be null
  local analyst = agent.new{model = m, tools = tools.standard(box),
    output = {schema = REPORT, name = "report"}}
  local result = analyst:run("What happened in input/data.csv?")
  print(result.value.kind, result.value.hour)       -- spike  14
  local r = assert(m:complete{messages = {...}, schema = REPORT})

Each provider is asked its own way: Chat Completions response_format
(json_schema), the Responses API text.format, Anthropic a tool named after
the answer (offered beside the agent's tools; the model uses its tools, then
calls it, and a turn that ends in plain text is followed by one call that
must). strict is on when the schema allows it (every object closed with
additionalProperties = false, every property required).

luagent checks the answer itself (luagent.schema: type, properties,
required, additionalProperties, items, enum, const, anyOf, $ref, the
bounds). An answer that does not match goes back to the model with each
error's path and what is wrong ($.hour: 30 is more than the maximum 23)
while turns remain; then the run stops with stopped_by = "invalid_output"
and result.output_errors. m:complete{schema = ...} gives nil, err instead
(kind invalid_output, err.errors). A schema that is not valid JSON Schema
(type = "objekt", required = "kind", nullable) is one error naming the
field, before any call.]],
  see = "lua/meta/schema.lua, lua/meta/agent.lua (output).",
}

T.approval = {
  about = "tool calls that wait for a yes",
  text = [[
A tool call can wait for a yes: from a function, or from a person at the
terminal.

  local analyst = agent.new{model = m, tools = tools.standard(box),
    approve = function(call, ctx)
      if call.name ~= "run_shell" then return true end   -- run it
      local command = call.arguments.command
      if command:match("rm ") then
        return false, "do not delete files"   -- the model reads why
      end
      return {command = command .. " --dry-run"}  -- these arguments
    end}
  local careful = agent.new{model = m, tools = tools.standard(box),
                            approve = "ask"}
  local shell = tools.run_shell(box)
  shell.needs_approval = true   -- only this tool asks (or a function)

With approve = "ask" the terminal shows the tool and its arguments as JSON,
then [y]es / [n]o / [e]dit / [a]lways for this tool: "n too risky" gives
the model the reason, e opens the arguments in $EDITOR (asked again while
they are not valid JSON), a approves that tool for the rest of the agent's
run. Answers are read from the terminal itself (/dev/tty), so stdin may be
redirected. Without a terminal every such call is refused ("approval needed
but no terminal: rerun with --yes or in a terminal") unless luagent run
--yes approves them all.

approve alone asks about every call; once some tools say needs_approval,
only theirs ask; a tool with needs_approval in an agent without approve asks
the person. Every decision is an approval event in the trace (tool,
arguments, decision, by function / person / --yes / always / replay,
reason); --record keeps them in the recording and --replay answers from
them without asking. An approve function that raises stops the run with one
error naming the tool; <close> handlers run as for any error.]],
  see = "lua/meta/agent.lua (luagent.ApproveMode), luagent help run (--yes).",
}

T.models = {
  about = "providers, messages, retries, costs, the fake provider",
  text = [[
One interface over the providers: OpenAI Chat Completions, OpenAI Responses
and Anthropic Messages.

  local m = model.openai{model = "gpt-4o-mini"}       -- OPENAI_API_KEY
  -- model.openai{model = "llama3.1",
  --              base_url = "http://localhost:11434/v1"} (no key)
  -- model.openai_responses{model = "gpt-4.1"}
  -- model.anthropic{model = "claude-sonnet-4-5"}
  local r, err = m:complete{messages = {...}, tools = {...},
                            stream = true, on_delta = io.write}
  -- r.text, r.tool_calls[i].{id, name, arguments}, r.finish_reason,
  -- r.usage, r.cost; err.kind: auth, rate_limit, quota, server,
  -- timeout, network, bad_request, bad_response, ...

In a recipe, model.from(cfg.model) makes the model a YAML's model: section
names (provider auto, openai, openai_responses or anthropic; model,
base_url, temperature, max_tokens, timeout, retry, prices). auto is openai
when OPENAI_API_KEY or OPENAI_BASE_URL is set (or base_url is), else
anthropic when ANTHROPIC_API_KEY is, else nothing: then
model.from_or_scripted takes the recipe's scripted driver, as it does for
provider scripted (luagent help recipes). Chat Completions also serves every
OpenAI-compatible server: Ollama, vLLM, llama.cpp server, LM Studio,
OpenRouter.

One message format (system, user, assistant tool calls, tool results,
images) is turned into each provider's own; streamed and plain calls give
the same result. Calls retry by luagent.retry.exponential{attempts = 6,
base = 0.5, max = 30} by default, honouring Retry-After and rate-limit reset
headers, never retrying auth or bad_request; a wait yields to other tasks.
A provider that stops sending is given up after idle_timeout, a whole call
after its deadline (luagent help faults). model.fallback{m1, m2} moves on
when a model keeps failing.

The model table, lua/luagent/model/models.yaml (one file, embedded; edit a
copy or override entries), says per model family: the context window, the
output limit, prices (input, output, cache_read, cache_write), whether it
reasons, its default reasoning effort, which sampling parameters it takes,
the Chat Completions token-limit field. Requests are built from it: an
OpenAI model gets max_completion_tokens (max_tokens is deprecated; an
unknown model, likely a compatible server, keeps max_tokens); a reasoning
model gets no temperature while it reasons, and luagent says once, in the
live view and the trace (a model_note event), that it was left out and why.
Override entries in the recipe's YAML:

  model:
    model: gpt-5.4
    reasoning: {effort: low}         # OpenAI: reasoning effort
    # reasoning: {budget_tokens: 4096}  Anthropic: extended thinking
    models: {gpt-5.4: {prices: {input: 1.5, output: 12}}}

An unknown model works with plain defaults; luagent says once that its
limits and prices are unknown (its cost counts as unknown, never a wrong
number).

Reasoning is kept across turns, as the providers require for stateless use:
Responses asks for the reasoning encrypted (include
reasoning.encrypted_content, store false) and passes reasoning items and
the phase of message items back verbatim; a commentary preamble is kept
apart (r.commentary), not part of the answer. Anthropic's thinking and
redacted_thinking blocks go back with their signatures in the turn that
carries the tool calls. They ride on the assistant message of the
transcript (provider_items); the cache and --record/--replay keep them; the
trace shows encrypted content and signatures as their size only.

Prompt caching: OpenAI caches on its own; for Anthropic the agent places
cache breakpoints on the tools, the instructions and the newest turn (three
of the API's four) once the prompt is long enough for the model's cache
(prompt_cache = false: none). Usage counts cache reads and writes
(cached_tokens, cache_write_tokens) and cost prices them at their own rates;
the live view and the agent's last line say how many input tokens came from
the provider's cache.

Compaction: when the last prompt reached 80% of the context window (the
model table's, or the agent's context_window), the agent replaces all but
the system prompt, the task and the last 4 turns with a summary the same
model writes, asked with the model table's compaction prompt (YAML);
agent.new{compaction = {threshold, keep_turns, prompt, policy}} changes it,
compaction = false turns it off. Over the Responses API the old turns go to
the provider's own compaction (POST /responses/compact) instead, and its
encrypted compaction item replaces them (native = false: the summary call).
Either call is traced, recorded and cached like any call; the trace's
agent_compaction event says what was replaced by what and what it cost.

An answer that is cut off is never taken as final: pause_turn (Anthropic)
goes back and the model goes on; an answer cut at max_tokens or at the
context window ends the run with stopped_by length or context_window.

Keys are redacted from every message, error and trace, and never reach a
sandbox. The tests run against tests/fake_provider.py: a test double, not
a model, that speaks the three wire formats, checks every request against
OpenAI's official OpenAPI spec and Anthropic's rules (an invalid request
gets the service's 400), sends the shapes the services send, and injects
the faults real providers have; the official SDKs read its answers as
luagent does (tests/lua/sdk_parity_spec.lua).]],
  see = "lua/meta/model.lua, lua/meta/retry.lua, luagent help structured.",
}

T.sandboxes = {
  about = "what a session is, what a command in it can do",
  text = [[
sandbox.open makes a session (a box); its methods run commands in it and
move files in and out:

  local box <close> = assert(sandbox.open{memory = "1g", cpus = 1,
    manifest = {["input/data.csv"] = sandbox.file("data.csv"),
                ["notes.md"] = sandbox.text("...")}})
  local r = box:exec("wc -l input/data.csv", {timeout = 30})
  -- r.stdout, stderr, exit_code, timed_out, oom_killed, killed, ...
  box:python("import pandas as pd; df = pd.read_csv('input/data.csv')")
  local server <close> = assert(box:spawn("python3 -m http.server"))
  local cat <close> = assert(box:spawn("cat", {stdin = true}))
  cat:write("to its stdin\n"); cat:close_stdin()
  box:put("a.txt", "text"); box:get("a.txt")
  box:extract("output", "out"); box:snapshot("ws.tar")

Each session is its own container, locked down by default: no network
(network = {allow = {...}} lets out only what the rules allow, through
luagent: luagent help network), memory capped (swap equal to memory), a CPU quota, a pids cap,
no-new-privileges, a read-only root with a writable /workspace (a tmpfs
volume of workspace_size, 512m by default) and a capped /tmp, and only the
environment the recipe passes (a host API key is refused even if passed by
mistake). Relaxing any of it is an explicit option. Inside, a small static C
supervisor (sandbox/supervisor/, embedded in luagent, working in any image,
Python or not) is PID 1 and runs every command, so a command costs a fork
there (about 1.2 ms for true), not a Docker exec (about 40 ms). What a
command can and cannot do:

  - it runs as uid 1000 with no capability at all; it can write
    /workspace and /tmp up to their size (then ENOSPC: the kernel
    enforces it, df shows it), and nothing else;
  - everything it starts stays its own: background jobs, setsid,
    double forks and env -i are killed when it ends or passes its
    timeout, and the result's killed says how many; a process meant to
    outlive the call is an explicit box:spawn, killed at close;
  - it cannot signal, trace, read or replace PID 1 or the supervisor
    (they run as root; a user of uid 0 and cap_add are refused for
    that reason);
  - an OOM kill is reported as oom_killed whatever the command's shape
    (sh -c, argv, box:python); files in /tmp and the workspace live in
    RAM, so the memory cgroup holds memory + tmp_size + workspace_size
    and a writer gets ENOSPC, not an OOM kill;
  - if the supervisor or the container dies anyway (killed from the
    host), the call returns nil, err of kind sandbox_restarted, the
    session is back, and box:python reports state_lost once; a tmpfs
    workspace is staged again from the manifest.

Output over max_output is cut to its first and last halves. Extraction and
snapshot restore refuse absolute paths, .., links leaving the destination,
devices and fifos, and report what they refused or could not read; over
2 GiB or 20,000 entries (max_extract) an entry is refused inside the sandbox
without being read, so a terabyte sparse file costs nothing. Sessions are
removed on close, <close>, errors and Ctrl-C; the first sandbox a run opens
sweeps away leftovers of crashed runs, after rescuing the outputs they hold
(luagent help outputs), and luagent sandbox ls|prune finds them too.

The engine may be on its unix socket or on TCP (DOCKER_HOST=tcp://host:2376,
with TLS by Docker's conventions: DOCKER_TLS_VERIFY=1, DOCKER_CERT_PATH
holding ca.pem, cert.pem, key.pem); sessions work the same over either.
luagent sandbox build makes the image, luagent doctor checks the engine and
the image.

runtime = "runsc" (YAML: sandbox.runtime; also on pools and engine entries)
runs a session under gVisor's user-space kernel, a second wall between the
code and the host, if the engine lists that runtime (luagent doctor shows
its runtimes; one it lacks fails the open, saying how to add it). Every
guarantee above holds there but OOM attribution: a command over the memory
cap ends the whole sandbox (sandbox_restarted); stat and ls -l fail on this
runsc (statx), and a command costs ~25 ms. sandbox/GVISOR.md has the details.]],
  see = "luagent help network, luagent help pool, luagent help engines, luagent help sandbox; "
    .. "every option: lua/meta/sandbox.lua; "
    .. "the supervisor: sandbox/supervisor/DESIGN.md.",
}

T.network = {
  about = "a sandbox that reaches only what the recipe allows, by rule",
  text = [[
A sandbox has no network by default (network = false). network = true
gives it the Docker engine's whole bridge network, and says so in one
warning line per process. A table of rules gives it only what they allow:

  local box <close> = assert(sandbox.open{network = {
    allow = {"*.example.com", "index.internal:8080", "10.0.0.5:8080"},
    deny = {"uploads.example.com"},
    hosts = {["index.internal"] = "10.0.0.5"},     -- like curl --resolve
    secrets = {API_TOKEN = {hosts = {"api.example.com"},
                            value = os.getenv("API_TOKEN")}},
    ca_file = "corp-ca.pem", max_connections = 64, max_bytes = "1g"}})
  box:exec("curl -s -H \"Authorization: Bearer $API_TOKEN\" "
    .. "https://api.example.com/v1/me")

In YAML the same table sits under sandbox.network, and the recipe passes
it on (network = cfg.sandbox.network).

How it works. The container still has no interface but loopback
(NetworkMode none), so nothing in it can go around the rules. Before any
command runs, the sandbox supervisor starts a relay (luagent-supervisor
egress 3128, a Docker exec of its own) listening on 127.0.0.1:3128 and
[::1]:3128 inside the sandbox; it passes each connection to luagent over
its own stream, so a download never delays a command's output. luagent
decides and makes the upstream connection itself: over a TCP/TLS engine
the connections leave from the machine luagent runs on, not the engine's.

The sandbox's environment names the proxy: HTTP_PROXY, HTTPS_PROXY,
http_proxy and https_proxy = http://127.0.0.1:3128, NO_PROXY and no_proxy =
localhost,127.0.0.1,::1, npm_config_proxy and npm_config_https_proxy. What
reads them (measured in the sandbox image):

  curl                  only lowercase http_proxy; https_proxy in
                        either case
  python3 urllib, pip   both cases
  node 18               none at all: https.get and fetch go direct and
                        fail; node code must use a proxy agent
  git, npm              not in the image; what they read is set
                        (npm_config_*, GIT_SSL_CAINFO)

A client that ignores the variables gets nowhere: there is no route out.

The rules. allow and deny are lists of strings. A rule is a host name
(api.example.com; *.example.com is every name under example.com, not
example.com itself; * is every name), an IP address or a CIDR (10.0.0.5,
10.0.0.0/8, [fd00::1], fd00::/8), each with an optional :port (:* is every
port; an IPv6 address with a port is bracketed: [fd00::1]:5432). An allow
rule without a port allows 80 and 443; a deny rule without one covers
every port. Deny wins over allow, and nothing is allowed by default.

One host, read once. A request's host is parsed once, in C, into one
canonical form, and the rules, the resolver and the connection all use
that form, never the request's text: a DNS name by the host name grammar
alone (letters, digits, hyphens and dots, lower case, one final dot
dropped, an international name as punycode xn--...) or an IP address in
its strict form (four decimal octets; IPv6 in brackets). Anything else is
refused with a 400 naming the part, before any DNS query or connection:
a NUL byte, userinfo (user@host), percent-escapes, / ? # or \ inside the
authority, spaces, non-ASCII bytes, and an IPv4 address written as a
name (0x0b000001, 184549377, 11.1, 013.0.0.1). Rules are read by the same
parser, so a rule and a request cannot mean two different hosts.

Names are resolved on the host, and a connection to a name passes twice:
the name (with its port) must be allowed, and the address it resolves to
must be public or itself named by an address rule. Loopback, private,
link-local (169.254.169.254, the cloud metadata service), unique-local,
carrier-grade NAT, multicast, reserved, documentation, NAT64, 6to4 and
Teredo addresses are refused otherwise. Addresses are matched by what
they reach: an IPv4-mapped ([::ffff:127.0.0.1]) or IPv4-compatible
([::127.0.0.1]) address is that IPv4 address, 0.0.0.0 and [::] are the
local host, a NAT64 address meets the deny rules of the IPv4 address it
is translated to; so deny = {"127.0.0.0/8"} holds however 127.0.0.1 is
written, and an address rule written as ::ffff:10.0.0.0/104 is
10.0.0.0/8. The check is made
in C at the moment the socket opens, for the exact address it opens, so a
name that resolves to a public address once and a private one the next
time (DNS rebinding) gains nothing. An address rule alone allows
connections to that IP literal on its ports; it never makes a name
allowed. hosts = {["name"] = "addr"} pins a name to an address (like curl
--resolve), and the pinned address is checked the same way: a private one
needs an address rule, as 10.0.0.5:8080 above.

What passes. HTTP proxy requests in absolute form (GET http://host/path):
the Host header must name the same host and port, and the request goes
upstream in origin form with Connection: close and the hop-by-hop and
Proxy-* headers dropped. A client gets 30 s to send its request head, of
at most 64 KiB and 128 header lines however it arrives (431 beyond);
lines end in CRLF, and a folded line, a bare CR, a NUL or a control byte
is a 400. One request per connection: luagent forwards exactly one
request, its body framed as its head says (Content-Length bytes, or
chunked: decoded and framed again), refuses a request with both
Content-Length and Transfer-Encoding (400) or another transfer coding
(501), and never forwards a byte past the body (a pipelined or smuggled
request); the connection ends with the response, even when the upstream
would serve more. An https:// URL in absolute form is refused: HTTPS goes
through CONNECT. CONNECT host:port answers 200 only once the upstream
connection is made; a tunnel to a name must start with a TLS ClientHello
that names that one server (SNI) and no other: a hello naming another
host (domain fronting), two hosts, or carrying encrypted_client_hello
(whose real name is hidden; Chromium sends it, start it with
--disable-features=EncryptedClientHello) is closed. A tunnel to an IP
literal carries anything. No UDP (so no QUIC), no DNS, no
raw sockets: the sandbox resolves nothing, luagent resolves for it.

Limits. max_connections (default 64) at once; one more is refused.
max_bytes counts both ways over every connection of the session: the
connection that passes it is cut, and later ones are refused. A refusal
is never a hang: an HTTP 403 (400 for a malformed request, 502 when the
upstream cannot be reached) with an X-Luagent-Refused header and a
one-line body starting "luagent: " that says why, which is what the agent
and the model read, e.g.

  luagent: no rule allows files.example.org:443
  luagent: more than 64 connections at once (network.max_connections)

Secrets. secrets = {NAME = {hosts = {...}, value = ...}} puts a
per-session placeholder in the sandbox's environment, never the value:
NAME=luagent-secret-<name>-<32 hex>. Each of a secret's hosts must be
allowed. For those hosts only, TLS ends at luagent with a per-session CA
(EC P-256; its key never leaves luagent), the placeholder is replaced by
the value in the headers a credential belongs in (Authorization,
X-Api-Key, Api-Key, X-Auth-Token, X-Access-Token, Private-Token,
X-Goog-Api-Key, Cookie; headers = {...} on the secret adds others), and the
request goes upstream over TLS verified against the host's system CAs
plus network.ca_file. A placeholder anywhere else (the request target,
another header) is refused: an upstream that quotes the request back has
no value to quote. What comes back from those hosts is searched, head and
body, across every read and chunk boundary: each secret's value is
replaced by its placeholder before the sandbox sees it (an endpoint that
echoes the request's headers gives back the placeholder). luagent asks
those hosts for an uncompressed answer (Accept-Encoding: identity) and
refuses one that is compressed anyway (502): it could not be searched.
A host that quotes only part of a value is not caught: bind a secret to
hosts you trust with it. The sandbox trusts the session CA through
/tmp/.luagent/ca-bundle.pem (the image's own
/etc/ssl/certs/ca-certificates.crt, network.ca_file and the session CA),
named by SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, PIP_CERT,
NODE_EXTRA_CA_CERTS and GIT_SSL_CAINFO; these are set whenever there are
secrets or a ca_file. Python requests and pip then take REQUESTS_CA_BUNDLE
over their own --cert: trust another CA through network.ca_file.

A placeholder in a request luagent can read that goes to any other host
(plain HTTP, or TLS ending at luagent for another secret's host) is
refused and reported, and a bound placeholder over plain HTTP is refused
too: a value is never sent in clear. Through a tunnel to another host
luagent cannot see it, and there it is a random string that means nothing.
The value never appears in the sandbox, the trace, a recording or the
outputs (luagent.secrets redacts it). A session with secrets has
placeholders of its own, so a warm pool never matches it (luagent help
pool).

Seen, not guessed. Every connection is one trace event of type network
(its fields below). box:network() returns {rules (no secret values),
connections, open, allowed, denied, bytes_up, bytes_down, recent: the last
20 events, newest first}, or nil for a box without rules.
box:allow{...} and box:deny{...} change the rules of a live session for
the connections made from then on, each change a network_rules trace
event; deny still wins (allow never undoes a deny), so a recipe can
tighten after installing its dependencies:

  box:exec("pip install -r requirements.txt")
  box:deny{"*"}                 -- nothing more by name from here on

Bad input is one error from sandbox.open naming the field, before any
session opens: a malformed rule, a wildcard that is not the first label
(sandbox.open: network.allow[1] = "api.*.com": a wildcard may only be the
first label ('*.example.com')), a port out of range, a CIDR with host bits
(did you mean 10.0.0.0/8?), a secret without hosts, a secret whose value
is nil (is the environment variable set?) or shorter than 8 bytes (it
could not be told apart in what comes back), a secret host that is not
allowed, a ca_file that is missing or not PEM, an unknown key. A bad rule
given to box:allow or box:deny raises, naming it (box:allow[1] = "...").

The fields of a network event:]],
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
  text = [[
A warm pool keeps sessions started ahead of time, their supervisor up and
nothing staged, so an open takes one instead of starting a container:

  local warm <close> = assert(sandbox.pool{size = 4, memory = "1g"})
  local box <close> = assert(sandbox.open{memory = "1g",
                                          manifest = {...}})
  -- box.pooled == true; the pool starts another in the background

An open whose options make the same session spec (image, limits, network,
env, labels, user, engine, ...) takes a pooled session, never one handed out
before, and stages its own manifest (or restore) into it. Options that are
each open's own (manifest, restore, save, timeout, max_output) do not
matter; any other difference opens cold. For evals and settings,
sandbox.open{..., pool = N} makes the pool itself: the first such open
starts cold, the next ones take from it, and it lives until the process
ends. The energy recipe wires it to sandbox.pool in its YAML (pool: 0), so
luagent eval recipes/energy_anomaly.eval.yaml --set sandbox.pool=2 runs
each eval run in a pooled session.

Measured here (bench/sandbox, 2 cores under other load, medians of 10): an
open from the pool takes 0.2 ms against 149 ms cold, and 8.8 ms against
182 ms with a one-file manifest (open + the first command: 12 ms against
249 ms). A small manifest goes in through the pooled session's supervisor
(a tar -x run as the command user, where an archive upload costs 40-70 ms);
over 1 MiB, with restore, or in an image without tar, the upload is used.

Pooled sessions carry the labels of any session of the process (luagent=1,
the owner's pid, start time and host) plus luagent.pool=<id>, which they
keep after hand-out (Docker cannot relabel a container): a handed-out
session is the box's, closed with it, and owned by the same process. The
idle ones are removed when the pool is drained (at the end of the run that
made it, on an error, on Ctrl-C, by pool:close()) and after a crash by the
next run's sweep or luagent sandbox prune (their owner is gone). A pool the
engine cannot hold (size x the session's memory + tmp_size + workspace_size
over the engine's memory), an unknown option or a bad size is one error
naming it, with nothing left running.]],
  see = "luagent help sandboxes; lua/meta/sandbox.lua (sandbox.pool).",
}

T.fork = {
  about = "box:fork: n sessions that start from a copy of one",
  text = [[
box:fork(n [, opts]) makes n new sessions of a box's spec, each starting
with a copy of what that box's commands wrote, so work that prepares a
workspace (a download, a build, pip install --user, a dataset cut) runs once
and every variant starts from its result:

  local base <close> = assert(sandbox.open{manifest = {...}})
  assert(base:exec("python3 prepare.py"))          -- once
  local forks = assert(base:fork(#variants))       -- sandbox.fork(base, n, opts) too
  for i, v in ipairs(variants) do
    luagent.spawn(function()
      local box <close> = forks[i]
      run_variant(box, v)                          -- each its own session
    end)
  end

What is copied: /workspace and /tmp (the sandbox user's HOME: pip --user
installs, caches, matplotlib's config), byte for byte: modes, mtimes, links,
hard links, empty folders. Not copied: the persistent Python interpreter
(state in memory cannot be copied: box:python in a fork starts clean, with
the files there), running processes (box:spawn), sockets and fifos, and
what a writable_root session wrote outside those two folders. Afterwards
the forks and the source are independent sessions.

The forks are opened like sandbox.open would, all at once, with the options
the source was opened with (not its manifest, restore or save: the copy is
their workspace; give save in opts for a fork's outputs) and opts on top
(labels, timeout, workspace_size, ...); a warm pool of that spec serves them
(luagent help pool). The copy is read once from the source's supervisor and
written into every fork at once, through the host and never onto its disk;
the slowest fork paces the source, so the host holds a few MiB whatever the
size. On the way it is checked like an extraction: no absolute name, no ..,
nothing written through a link, nothing outside the folder; links keep their
targets (a venv's python -> /usr/bin/python3 works in the fork).

Errors: what the source holds over a fork's workspace_size or tmp_size is
said before anything opens (kind too_large, naming the setting to raise); a
file over max_extract or more entries than max_extract_entries (too_large);
a closed source (closed); a fork that cannot open (its error, naming which
of the n). On any error every fork opened is closed. The trace has one
sandbox_fork event: source, n, sessions, bytes, ms, pooled.

Measured (bench/fork, 2 cores under other load, medians of 3): a 50 MB
workspace into 8 sessions takes 2.7 s (0.7 s opening the 8, 2.0 s copying:
400 MB through the engine's exec streams), where 8 cold opens staging the
same 50 MB take 1.8 s. So a fork pays where preparing the workspace costs
more than copying it (commands, installs, downloads), not for what a
manifest stages anyway.]],
  see = "luagent help sandboxes, luagent help pool; lua/meta/sandbox.lua (box:fork).",
}

T.engines = {
  about = "sessions over several Docker engines, by socket or TLS",
  text = [[
sandbox.open{engines = {"unix:///var/run/docker.sock#8",
"tcp://build-2.example:2376#4"}, ...} (also sandbox.pool,
sandbox.defaults.engines, or LUAGENT_ENGINES for every run and for luagent
doctor, sandbox ls|prune|build) spreads sessions over several Docker
engines. Each entry is an address (unix:///path or tcp://HOST:PORT),
optionally with a capacity (URL#N or {host = URL, capacity = N}: at most N
sessions of this process there; none: no limit).

A session goes to the engine with the lowest load against its capacity
(load: this process's sessions there, pooled ones included) among those that
answer and have the image. When none with room has it, the image is copied
to the least loaded one from an engine that has it, through the engine API
(GET /images/NAME/get into a temporary file, POST /images/load from it: the
1.26 GB sandbox image took 23 s here, the process's RSS staying at 12 MB),
and luagent sandbox build builds once and copies to the other engines the
same way. When every engine is full the open waits for a session to close,
up to capacity_wait seconds (default 3600, saying so once), then fails with
kind capacity; capacity_wait = 0 fails at once.

A tcp:// engine speaks TLS by Docker's conventions (DOCKER_TLS_VERIFY,
DOCKER_CERT_PATH), or by its own tls = "DIR" (holding ca.pem, cert.pem,
key.pem), tls = {ca = ..., cert = ..., key = ...} or tls = false; sessions
there run through the supervisor over the TLS connection, as on a socket.

An engine that stops answering fails its sessions' calls with kind
docker_unreachable naming it, is said once, and gets no new session until it
answers again (asked every 15 s); the run goes on on the others. A malformed
address, a missing TLS file, a wrong certificate, an engine that does not
answer (when it is the only one), or a pool over the engines' capacities (or
memory) is one error naming the engine or the option, with nothing left
running. luagent doctor and luagent sandbox ls show every engine (address,
whether it answers, its Docker version, the sandbox image, the sandboxes on
it, its capacity); the sweep of leftovers and sandbox prune go over each.
Placement costs nothing measurable: a cold open took the same ~100 ms over
one engine or two.]],
  see = "luagent help sandboxes, luagent help faults; lua/meta/sandbox.lua (engines, capacity_wait).",
}

T.outputs = {
  about = "bringing outputs home: save, manifest, mirror, rescue",
  text = [[
A box opened with save = {from = "output", to = luagent.run_dir("output"),
required = {...}} brings its outputs home whatever happens: at its close, on
an error, on Ctrl-C. luagent.outputs.collect(box, from, to, {required})
does it at a moment of the recipe's choosing and returns a report: the
files with sizes and sha256, what is missing, what was refused or failed.
Both extract safely (nothing lands outside to) and write manifest.json
beside the folder. A partly written file is never left looking whole: a cut
file is removed (which also frees room for the manifest on a full disk), and
the manifest lists what was saved and what failed with why (failed).

The mirror. A box with save copies its declared outputs home as the run
goes: after every command (exec, python, a spawned process's end) the files
under from that changed since the last copy go to to (through the
supervisor's pack, with the same safe extraction), before the command's
result is returned. So at any moment the host holds what the agent saved up
to its last finished command, and manifest.json marks those files mirrored
until the box's close reads the final state. A command that changed nothing
costs nothing: the supervisor watches from (inotify) and says in each
result whether anything under it changed, and the mirror lists the folder
only then (or when in doubt: a folder it cannot watch, a restart; a listing
costs about 0.3-0.5 ms here, bench/sandbox). A mirror copy is
whole: a file some process holds open for writing waits for a later
command, and one that changed while it was copied is dropped and taken next
time; regular files only (links and empty folders come with the close). A
file removed in the sandbox stays on the host until the close reads the
whole folder. A mirror that fails (the engine gone, a full disk) is said
once on stderr and in the trace and never fails a command.
save = {..., mirror = false} turns it off. When the close cannot read the
sandbox (the engine gone, the workspace emptied), the mirror's copies count
as saved, and the manifest says which files they are and after which turn
they were made: the outputs check says saved (mirrored after turn N).

Outputs that could not be read are never called missing: collect returns
nil, err saying so, the manifest lists them as unreadable, and the sandbox
is kept (said once). The rescue: the next run's sweep of leftovers and
luagent sandbox prune first bring the outputs a leftover's run declared
(recorded in the sandbox's labels at open) into that run's folder, with its
manifest, and say so (rescued 3 outputs of run R into DIR). What the rescue
adds to the mirror is the last state, e.g. what the agent wrote in the
command the run died in, when the workspace survived (on disk, or the
container still runs); a workspace in memory whose container stopped is
lost, and the sweep says the mirror's copies are what there is. A session
taken from a warm pool carries no save spec in its labels, so no rescue
finds it: the mirror is what brings its outputs home. luagent sandbox ls
shows each sandbox's outputs (saved, unsaved, mirrored, lost, or -); one
whose outputs could not be rescued is kept, and prune asks (y/N) before
removing it.]],
  see = "luagent help faults, luagent help sandbox; lua/meta/outputs.lua (the report), lua/meta/sandbox.lua (save).",
}

T.traces = {
  about = "a run's trace, the trace page, recording and replay",
  text = [[
Every recipe run that uses a model, an agent or a sandbox writes
runs/<run-id>/trace.jsonl: one JSON line per event (run start with its
settings, model requests and responses with usage and timing, tool calls
and results, sandbox commands, approvals, errors, run end), with keys
redacted. The terminal shows one line per step (-q: none; --json: the
events as JSON lines). luagent trace show reads one back, luagent trace
html writes a page, luagent trace diff compares two runs.

Recording and replay. luagent run RECIPE --record rec.jsonl saves the model
exchanges; --replay rec.jsonl answers every model call from the recording
(no model, no network, the same run) and stops with a diff the moment a
request differs (the durations tools report excepted): iterate on a recipe
without paying. The model-call cache (luagent help cache) does the same per
request, going live where the run changed.

The trace page (luagent trace html RUN) is one self-contained HTML file
(inline CSS and a little script, images as data: URIs, nothing fetched)
that reads like the run. At the top: status, recipe, start, duration;
totals (model calls, tokens in/out/cached, cost, tool calls, sandbox
commands, errors); each agent's model, turns, why it stopped, its tokens and
cost; the run's settings; the outputs from manifest.json, PNG and JPEG
shown; the final answer. A timeline per agent: model calls, tool calls and
the sandbox commands they ran, as bars on one time axis. The conversation:
each agent's instructions and task, each model turn as rendered Markdown
(code highlighted for Python, shell, JSON, SQL and Lua) with its tokens and
cost, each tool call beside its result, long results folded, view_image
images inline. A filter (all, model, tools, sandbox, errors), and
trace.html#filter=errors opens with one chosen; errors and limits stand out.

Nothing from a trace becomes markup: the Markdown renderer escapes every
character and keeps only http(s) links. An event type the page does not
know is shown with its fields, never dropped. A 5,000-event trace gives a
2.7 MB page built in about 0.3 s. The eval page links to each run's page.]],
  examples = {
    {"luagent run recipes/energy_anomaly.lua --record rec.jsonl", "save the model exchanges"},
    {"luagent run recipes/energy_anomaly.lua --replay rec.jsonl", "no model, no network, the same run"},
    {"luagent trace html runs/<run-id>", "-> runs/<run-id>/trace.html"},
  },
  see = "luagent help trace, luagent help cache; lua/meta/trace.lua.",
}

T.faults = {
  about = "when things go wrong: what luagent guarantees",
  text = [[
Ctrl-C or SIGTERM stops the run within 2 s: the task in the middle of a
model call, a sandbox command or a tool is cancelled, and the cancellation
goes through every tool and the agent loop. A tool that catches it or
returns it as nil, err cannot turn it into a result the model reads, and no
model call is made after the signal (luagent.loop.cancelled() tells code
that caught it that the run is stopping). <close> handlers and at_exit hooks
run, a box's save outputs are saved, the trace ends with run_end status
interrupted, and the process exits 130 (SIGTERM: 143). A second Ctrl-C
exits at once; cleanup that hangs is given up after 10 s
(LUAGENT_CANCEL_GRACE).

A full disk. A trace line that cannot be written is said on stderr at once,
naming the file and how many whole events it holds; the run goes on (its
outputs are still saved) and exits 1, naming the file again (--record files
likewise). luagent trace show reads a cut trace up to the cut and says at
which line it is. Outputs are never left partly written looking whole
(luagent help outputs). A run that fails before its first event (a missing
image, a bad input) still writes its trace, with the error.

Bad recordings. --replay checks the whole file before anything runs: a file
that is not a recording, one damaged at line N (a broken line, a cut last
line) and one recorded for another recipe are each refused with their own
message and exit 2. "No more model exchanges" is said only of a whole
recording the run asked more of.

Model calls that hang. A provider that answered and then stops sending is
given up after idle_timeout (30 s without a byte once the answer began,
streamed or not; a model thinking before its answer begins is not cut) and
retried; a whole call, retries and waits included, ends by its deadline
(600 s) with kind timeout, saying how long it tried. A streamed answer that
stalls after part of it was shown is not retried.

The Docker engine going away. A command running when the engine stops (or
dies) ends at once with kind docker_unreachable ("the Docker engine went
away while the command ran"), which is what the model reads; nothing is
restarted while the engine is gone. Bringing the outputs home (save,
box:extract, outputs.collect) waits up to the box's engine_grace (a
sandbox.open option, 30 s) for the engine to come back, says so once, and
tries again; what it still cannot read is unreadable, never missing, and
the sandbox is kept for the rescue (luagent help outputs). A workspace kept
in memory (the default workspace_size) does not survive its container
stopping, which an engine restart does unless it runs with live-restore;
what the agent saved before that is already home (the mirror), and only what
the sandbox held after the last mirror is reported lost.
workspace_size = false keeps the workspace on disk, where it survives whole.

An engine that hangs (stopped, wedged: it keeps its connections and answers
nothing). While a command runs, luagent pings the engine every 15 s; two
pings without an answer end the command with docker_unreachable naming the
engine (about 45 s, whatever the command's timeout). Engine calls that time
out name the engine and how long they waited, and closing a box on an engine
known to be down asks it once (5 s) instead of waiting out the removal
calls; the sandbox is left for the next sweep or luagent sandbox prune.

Leftovers of runs that died (kill -9, a lost engine) are found by label:
the next run's sweep and luagent sandbox prune rescue their outputs, then
remove them (luagent help outputs).]],
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
  text = [[
Expected failures come back as nil, err, where err is one kind of value
whichever layer made it (C or Lua): a luagent.errors table with kind,
message and details (status, path, retry_after, ...), and tostring(err)
reads kind: message. Policies (retry, model fallback, the agent loop, eval
checks) decide on kind alone: luagent.retry takes from the catalogue below
which kinds trying again can help. Misuse (a wrong argument type) raises,
naming the argument. Handles (tasks, streams, sandboxes) can be closed any
number of times; using one after close raises "... is closed" (a box
returns nil, err of kind closed), never crashes.

The kinds (luagent.errors.KINDS):]],
  rows = error_kinds(),
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
  {"LUAGENT_RUNS_DIR", "where run folders go (default runs/ in the current folder)", topics = {"run"}},
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

-- luagent.cli.help_pages: the ONE source of luagent's command-line help. The
-- usage summary (`luagent help`), each command's page (`luagent help TOPIC`)
-- and the man page (`luagent help --man` -> luagent.1) are all rendered from
-- these tables by luagent.cli.help, so they cannot drift apart.
--
--   pages.ORDER        the topics, in the order of the summary and the man page
--   pages.TOPICS       topic -> page:
--     about            one line: what the command does
--     synopsis         {"luagent run RECIPE.lua [options] [-- args]", ...}
--     usage            its lines of the usage summary (as printed, 2-space indent)
--     text             the description: paragraphs split by blank lines; a
--                      paragraph whose lines all start with two spaces is shown as is
--     options          {{"--flag VALUE", "what it does"}, ...}
--     examples         {{"luagent ...", "what it does"}, ...}
--     exit             {{"0", "when"}, ...}
--   pages.ENVIRONMENT  {{name, what, topics = {...}}, ...}: a page lists those naming it
--   pages.FILES        {{path, what}, ...} (the man page's FILES)
--   pages.INTRO        the man page's DESCRIPTION
-- ASCII only (the man page is plain roff). tests/lua/help_spec.lua checks
-- that every command of src/main.c has a page and every option of `run` is on it.
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
recipes/ run their scripted driver, which says so plainly: it makes the tool
calls a model would, and each of them really runs in the sandbox.

Errors print FILE:LINE: message and a traceback. Ctrl-C cancels every task,
runs their <close> handlers (sandboxes are removed, what the agent saved is
kept) and exits 130.]],
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
                                                    NAME.yaml, NAME.eval.yaml, NAME_check.lua]],
  text = [[
Writes a recipe to start from into DIR (the current folder by default, made
when missing): NAME.lua, its settings and prompts NAME.yaml, an eval spec
NAME.eval.yaml and the eval's check NAME_check.lua, with what the template
needs beside them. They run as they are: with the model the environment or
--set points at, or, with none, with the recipe's scripted driver, which says
so.

The default template is a small agent with a sandbox and the standard tools
(run_python, run_shell, read_file, write_file, list_files, view_image) that
profiles a CSV file; a tiny sample, NAME_sample.csv, is written beside it.
--from energy_anomaly copies the energy-anomaly case study and its helpers
under the new name (NAME_script.lua, NAME_steps.lua, NAME_data.lua,
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

build makes the image from the recipe embedded in the binary, and skips it
when the image is already up to date. It pulls its base from a registry when
one answers, else (or with --offline) builds it from the machine's Debian
mirror.

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
same sweep, keeping what it could not rescue.]],
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
outputs (sizes, sha256 and diffs of text files).]],
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
  about = "run a recipe over variants x inputs x epochs, check and compare",
  synopsis = {"luagent eval SPEC.yaml [--concurrency N] [--set key=value]... [-q]"},
  usage = [[
  eval SPEC.yaml [--concurrency N] [--set k=v] [-q] variants x inputs x epochs of a recipe, checked
                                                    and compared (evals/<id>/: results, summary, a page)]],
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
results.jsonl (a line per run), summary.csv, index.html (the variants side by
side) and every run's folder, and prints the table per variant. A spec with an
unknown key, a missing file, a setting the recipe's YAML does not have or a
glob that matches nothing is refused before anything runs, naming the file,
line and key. luagent new writes a spec and a check beside a new recipe.]],
  options = {
    {"--concurrency N, -j N", "runs at once (beats the spec's concurrency)"},
    {"--set key=value, -s key=value", "a setting for every run, on top of the variant's and the input's"},
    {"-q, --quiet", "no progress lines"},
  },
  examples = {
    {"luagent eval recipes/energy_anomaly.eval.yaml", "the energy recipe's eval"},
    {"luagent eval demo.eval.yaml --set model.provider=anthropic --concurrency 1", "another model, one run at a time"},
  },
  exit = {
    {"0", "the eval ran (whatever the checks said)"},
    {"1", "the eval could not run"},
    {"2", "bad usage or a bad spec (nothing ran)"},
    {"130", "Ctrl-C: what finished is written"},
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
complete answer; the sandbox work still runs for real. Keys hash the whole
request (never the API key).

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
alone and what to add is printed. DIR is the current folder by default.]],
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
  help [TOPIC]                                      this summary; a command's page (luagent help run)]],
  text = [[
Without a TOPIC, prints the usage summary of every command (also luagent
--help). With one (a command: run, new, sandbox, trace, eval, cache, doctor,
meta, repl, version, help), prints its page: what it does, its options,
examples, exit status and environment; luagent COMMAND --help does the same.
--man prints the man page (roff) made from the same pages; make install puts
it in PREFIX/share/man/man1/luagent.1, for man luagent.]],
  options = {{"--man", "the man page, roff, on stdout"}},
  examples = {
    {"luagent help run", "everything about luagent run"},
    {"luagent help --man | man -l -", "the man page, without installing it"},
  },
  exit = {{"0", "printed"}, {"2", "an unknown topic (the topics are listed)"}},
}

pages.ENVIRONMENT = {
  {"OPENAI_API_KEY", "the key for OpenAI (model.provider openai or auto)", topics = {"run", "eval", "doctor"}},
  {"OPENAI_BASE_URL", "an OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter)",
   topics = {"run", "eval", "doctor"}},
  {"ANTHROPIC_API_KEY", "the key for Anthropic (model.provider anthropic or auto)", topics = {"run", "eval", "doctor"}},
  {"DOCKER_HOST", "the Docker engine (default unix:///var/run/docker.sock); DOCKER_TLS_VERIFY and "
    .. "DOCKER_CERT_PATH for TLS", topics = {"run", "eval", "sandbox", "doctor"}},
  {"LUAGENT_PATH", "load the Lua library from this folder instead of the binary (like --lua-path)",
   topics = {"run", "eval", "repl"}},
  {"LUAGENT_RUNS_DIR", "where run folders go (default runs/ in the current folder)", topics = {"run"}},
  {"LUAGENT_CACHE", "the model-call cache folder (default .luagent/cache/ beside the recipe)",
   topics = {"run", "eval", "cache"}},
  {"LUAGENT_EVALS_DIR", "where eval folders go (default evals/ beside the spec)", topics = {"eval"}},
  {"LUAGENT_CANCEL_GRACE", "seconds tasks get to stop after Ctrl-C before luagent exits 130",
   topics = {"run", "eval", "repl"}},
}

pages.FILES = {
  {"RECIPE.yaml", "a recipe's settings and prompts, beside it (luagent.config)"},
  {"runs/<run-id>/", "a run's folder: trace.jsonl, output/, manifest.json (sizes and sha256 of the outputs)"},
  {".luagent/cache/", "the model-call cache, beside the recipe"},
  {"evals/<eval-id>/", "an eval's results.jsonl, summary.csv, index.html and run folders"},
  {"PREFIX/share/luagent/meta/", "the LuaLS annotations (also written by luagent meta)"},
}

return pages

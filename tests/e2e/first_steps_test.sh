# needs: docker
# A recipe built the way a person who writes no Lua builds one (`luagent help
# start`): `luagent new`, then only edits of its YAML and its Python — a
# folder as the input, a changed prompt, a step added to the scripted driver —
# then run, eval, change the eval, eval again and `eval diff`. Every error on
# the way is one for people: the first cause first, no Lua internals.
. tests/e2e/lib.sh
BIN=$(cd "$(dirname "$LUAGENT")" && pwd)/$(basename "$LUAGENT")
export LUAGENT_RUNS_DIR="$TMP/runs" LUAGENT_EVALS_DIR="$TMP/evals"
W="$TMP/work"
mkdir -p "$W"

# in_w ARGS...: luagent in the work folder with no model key in the environment
in_w() {
  (cd "$W" && env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u OPENAI_BASE_URL "$BIN" "$@") > "$TMP/stdout" 2> "$TMP/stderr"
  echo $? > "$TMP/status"
}
latest_run() { ls -td "$LUAGENT_RUNS_DIR"/*triage* | head -1; }

in_w new triage
check "luagent new triage: the recipe, its YAML, its scripted driver as YAML and its step's Python" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ -s $W/triage.yaml ] && [ -s $W/triage.script.yaml ] && [ -s $W/triage_profile.py ]"

# ---- YAML and Python edits only ----
mkdir -p "$W/logs"
printf 'ts,level,ms\n2024-05-01T10:00,info,12\n2024-05-01T10:01,error,950\n2024-05-01T10:02,info,\n' > "$W/logs/app.csv"
printf 'ts,host,requests\n2024-05-01T10:00,web1,120\n2024-05-01T10:01,web2,131\n' > "$W/logs/web.csv"
sed -i 's|^input: .*|input: logs/             # the folder of logs|' "$W/triage.yaml"
sed -i 's#Profile each of them column by column#Profile each log file column by column#' "$W/triage.yaml"
sed -i 's#^  - output/summary.md#  - output/summary.md\n  - output/files.txt#' "$W/triage.yaml"
# a first step: the list of the input files, saved as an output
sed -i 's#^steps:#&\n  - say: First the list of input files.\n    tool: run_shell\n    command: mkdir -p output \&\& ls input > output/files.txt#' \
  "$W/triage.script.yaml"
# the Python step says one more thing (a .py edit)
sed -i 's#^print(open("output/summary.md").read())#print("log files:", len(files))\n&#' "$W/triage_profile.py"
check "the edits are YAML and Python only: no .lua file changed from what luagent new wrote" sh -c "
  cd $W && for f in triage.lua triage_check.lua; do
    sed 's/{{name}}/triage/g' $(pwd)/recipes/templates/basic/recipe\${f#triage}  | cmp -s - \$f || exit 1; done"

in_w run triage.lua -q
run=$(latest_run)
check "the run over the folder exits 0: both files profiled, the added step ran and its output came home" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] || { cat $TMP/stdout $TMP/stderr; exit 1; }
  grep -q '^app.csv,level,text' $run/output/columns.csv && grep -q '^web.csv,requests,number' $run/output/columns.csv &&
  [ \"\$(cat $run/output/files.txt)\" = \"\$(printf 'app.csv\nweb.csv')\" ] && grep -q 'log files: 2' $run/trace.jsonl"
check "... the scripted driver says once that it ignores the prompts; the answer is the profile's last line" sh -c "
  [ \"\$(grep -c 'It ignores the instructions and the task' $TMP/stdout)\" = 1 ] &&
  grep -q 'The input has 2 CSV file(s) with 5 rows' $TMP/stdout"

in_w run triage.lua -q --set limits.max_turns=1
check "a run stopped by max_turns says it has no answer, not the agent's last remark as one; exit 1" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q '^No answer: the run stopped by max_turns after 1 turns' $TMP/stdout &&
  ! grep -q '^Answer' $TMP/stdout && ! grep -q 'First the list of input files' $TMP/stdout"

# ---- mistakes, as a person makes them ----
sed -i 's#tool: run_python#tool: run_pyton#' "$W/triage.script.yaml"
in_w run triage.lua -q
check "a misspelt tool in the script: its file:line and a did-you-mean first, the knock-on after, no Lua internals" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && $NO_INTERNALS &&
  head -1 $TMP/stderr | grep -q \"^luagent: triage.script.yaml:[0-9]*: tool: run_pyton is not one of the agent's tools (did you mean 'run_python'?)\" &&
  tail -1 $TMP/stderr | grep -q 'after that error, the outputs in output were not all saved'"
sed -i 's#tool: run_pyton#tool: run_python#' "$W/triage.script.yaml"
in_w run triage.lua -q --set limits.max_turns=three
check "--set limits.max_turns=three: one line, the first cause, exit 2" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && [ \$(wc -l < $TMP/stderr) -eq 1 ] && $NO_INTERNALS &&
  grep -q 'limits.max_turns is a number in triage.yaml (12), not text' $TMP/stderr"
in_w run triage.lua -q --set tools.add=[apply_pach]
check "tools.add with a misspelt built-in: did you mean apply_patch, no Lua internals" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && $NO_INTERNALS && grep -q \"'apply_pach' is not a built-in tool (did you mean 'apply_patch'?)\" $TMP/stderr"
in_w run triage
check "luagent run triage (no .lua): the command that runs it" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q \"did you mean 'luagent run triage.lua'\" $TMP/stderr"

# ---- eval, a changed eval, eval diff ----
in_w eval triage.eval.yaml -q
first=$(ls -td "$LUAGENT_EVALS_DIR"/* | head -1)
check "luagent eval: both variants pass the check (luagent.checks) over the folder input" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] || { cat $TMP/stdout $TMP/stderr; exit 1; }
  [ \"\$(grep -c '\"passed\":true' $first/results.jsonl)\" = 2 ]"
sed -i 's#^  - input: triage_sample.csv#  - input: triage_sample.csv\n  - input: logs/#' "$W/triage.eval.yaml"
sed -i 's#You are a data analyst with a Python sandbox.#You are a site reliability engineer with a Python sandbox.#' "$W/triage.eval.yaml"
in_w eval triage.eval.yaml -q
second=$(ls -td "$LUAGENT_EVALS_DIR"/* | head -1)
check "the eval with a folder added as an input: four runs, all passed" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] || { cat $TMP/stdout $TMP/stderr; exit 1; }
  [ \"\$(grep -c '\"passed\":true' $second/results.jsonl)\" = 4 ]"
in_w eval diff "$first" "$second"
check "eval diff: the prompt edit word by word, the new input by its name; exit 1 (the evals differ in their inputs)" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] || { cat $TMP/stdout $TMP/stderr; exit 1; }
  grep -q 'You are a \[-data analyst-\] {+site reliability engineer+}' $TMP/stdout &&
  grep -q '^inputs only in B: logs$' $TMP/stdout && grep -q 'the evals differ: inputs in one eval only' $TMP/stdout"

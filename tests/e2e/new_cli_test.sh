# `luagent new` without running a recipe (tests/e2e/new_test.sh runs them in
# the sandbox): the files it writes, from the templates embedded in the
# binary; the recipe is an agent of 20-55 lines with its scripted driver as
# data beside it (NAME.script.yaml and the step's Python); its eval spec and check are valid; --from energy_anomaly renames
# every file, require and path; a file already there, a bad NAME or an
# unknown template is exit 2 with nothing written.
. tests/e2e/lib.sh
BIN=$(cd "$(dirname "$LUAGENT")" && pwd)/$(basename "$LUAGENT")
ROOT=$(pwd)
export LUAGENT_EVALS_DIR="$TMP/evals"

# in DIR ARGS...: runs luagent in DIR, keeping stdout, stderr and status in $TMP
in_dir() {
  dir=$1; shift
  (cd "$dir" && "$BIN" "$@") > "$TMP/stdout" 2> "$TMP/stderr"
  echo $? > "$TMP/status"
}

# lua_in DIR CODE [ARGS]: runs Lua code with luagent in DIR (the code reads its args as ...)
lua_in() {
  dir=$1 code=$2; shift 2
  printf '%s\n' "$code" > "$TMP/snippet.lua"
  (cd "$dir" && "$BIN" run -q "$TMP/snippet.lua" -- "$@")
}

# ---- the default template ----
mkdir -p "$TMP/p"
in_dir "$TMP/p" new demo
check "'luagent new demo' in an empty folder exits 0 and writes the recipe, its YAML, its scripted driver, an eval spec, its check and a skill" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ -s $TMP/p/demo.lua ] && [ -s $TMP/p/demo.yaml ] && [ -s $TMP/p/demo.eval.yaml ] &&
  [ -s $TMP/p/demo_check.lua ] && [ -s $TMP/p/demo_sample.csv ] && [ -s $TMP/p/demo.script.yaml ] &&
  [ -s $TMP/p/demo_profile.py ] && [ \$(ls $TMP/p | wc -l) = 8 ] &&
  [ -s $TMP/p/skills/csv-profile/SKILL.md ] && [ -s $TMP/p/skills/csv-profile/profile.py ] &&
  grep -q '^  - skills/csv-profile' $TMP/p/demo.yaml"
check "... it lists each file with what it is, and says what to run next" sh -c "
  for f in demo.lua demo.yaml demo.script.yaml demo_profile.py demo.eval.yaml demo_check.lua demo_sample.csv; do grep -q \"^  \$f  \" $TMP/stdout || exit 1; done
  grep -q '^next:' $TMP/stdout && grep -q 'luagent run demo.lua' $TMP/stdout && grep -q 'luagent eval demo.eval.yaml' $TMP/stdout"
check "... the files carry the name, no template placeholder is left, and they are the embedded templates filled in" sh -c "
  ! grep -rq '{{name}}' $TMP/p && grep -q 'luagent.config(\"demo.yaml\")' $TMP/p/demo.lua &&
  grep -q '^recipe: demo.lua' $TMP/p/demo.eval.yaml && grep -q '^check: demo_check.lua' $TMP/p/demo.eval.yaml &&
  grep -q '^input: demo_sample.csv' $TMP/p/demo.yaml &&
  sed 's/{{name}}/demo/g' $ROOT/recipes/templates/basic/recipe.lua | cmp - $TMP/p/demo.lua &&
  sed 's/{{name}}/demo/g' $ROOT/recipes/templates/basic/recipe.script.yaml | cmp - $TMP/p/demo.script.yaml &&
  sed 's/{{name}}/demo/g' $ROOT/recipes/templates/basic/recipe_profile.py | cmp - $TMP/p/demo_profile.py &&
  cmp $ROOT/recipes/templates/basic/recipe_sample.csv $TMP/p/demo_sample.csv"
check "... the recipe and its check compile, luacheck finds nothing in them, and the step's Python compiles" sh -c "
  luac5.4 -p $TMP/p/demo.lua $TMP/p/demo_check.lua 2>/dev/null ||
    lua5.4 -e 'for _, f in ipairs{\"demo.lua\", \"demo_check.lua\"} do assert(loadfile(\"$TMP/p/\" .. f)) end'
  python3 -m py_compile $TMP/p/demo_profile.py &&
  cd $TMP/p && luacheck --no-color -q --globals luagent --std lua54 demo.lua demo_check.lua"
# The recipe a user edits reads as an agent: 20-55 lines, its scripted driver
# (not a model, and named so) as data beside it, and its check a few lines of
# luagent.checks.
check "... the recipe is 20-55 lines and takes its scripted driver from demo.script.yaml, which says it is not a model" sh -c "
  n=\$(wc -l < $TMP/p/demo.lua); [ \$n -ge 20 ] && [ \$n -le 55 ] || { echo \"demo.lua has \$n lines\"; exit 1; }
  grep -q 'model.from_or_scripted(cfg.model, script.driver(\"demo.script.yaml\"))' $TMP/p/demo.lua &&
  ! grep -q 'model.scripted' $TMP/p/demo.lua && grep -q 'It is NOT a model' $TMP/p/demo.script.yaml &&
  grep -q 'file: demo_profile.py' $TMP/p/demo.script.yaml"
check "... its check is under 20 lines of luagent.checks, with no CSV parsing of its own" sh -c "
  n=\$(wc -l < $TMP/p/demo_check.lua); [ \$n -lt 20 ] || { echo \"demo_check.lua has \$n lines\"; exit 1; }
  grep -q 'require \"luagent.checks\"' $TMP/p/demo_check.lua && grep -q 'checks.csv_columns' $TMP/p/demo_check.lua &&
  ! grep -q 'gmatch\\|io.open\\|fs.read' $TMP/p/demo_check.lua"

SPEC_LOADS='local spec = assert(require("luagent.eval.spec").load((...)))
print(spec.name, spec.recipe:match("[^/]+$"), #spec.variants, #spec.inputs, spec.check ~= nil)'
lua_in "$TMP/p" "$SPEC_LOADS" demo.eval.yaml > "$TMP/spec.out" 2>&1
check "... its eval spec is valid: the recipe, the check, two variants, the sample as its input" sh -c "
  [ \"\$(cat $TMP/spec.out)\" = \"\$(printf 'demo\tdemo.lua\t2\t1\ttrue')\" ] || { cat $TMP/spec.out; exit 1; }"


# ---- nothing is ever overwritten ----
mkdir -p "$TMP/q"
echo 'mine' > "$TMP/q/demo.yaml"
in_dir "$TMP/q" new demo
check "a file already there: exit 2 naming it, nothing written, the file untouched" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'demo.yaml already there' $TMP/stderr && ! grep -q 'demo.lua' $TMP/stderr &&
  [ \"\$(ls $TMP/q)\" = demo.yaml ] && [ \"\$(cat $TMP/q/demo.yaml)\" = mine ] && [ ! -s $TMP/stdout ]"
in_dir "$TMP/p" new demo
check "'luagent new demo' twice: the second exits 2 naming every file, and the first's files are kept" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] &&
  grep -q 'demo.lua, demo.yaml, demo.script.yaml, demo_profile.py, demo_sample.csv, demo.eval.yaml, demo_check.lua, skills/csv-profile/SKILL.md, skills/csv-profile/profile.py already there' $TMP/stderr &&
  sed 's/{{name}}/demo/g' $ROOT/recipes/templates/basic/recipe.lua | cmp - $TMP/p/demo.lua"

# ---- names and options ----
mkdir -p "$TMP/n"
bad_name() {
  in_dir "$TMP/n" new "$1"
  status_is 2 && stderr_has "$2" && [ -z "$(ls "$TMP/n")" ]
}
check "a NAME starting with a digit: exit 2, nothing written" bad_name 9lives "'9lives' is not a recipe name"
check "a NAME with a hyphen: exit 2" bad_name my-recipe "'my-recipe' is not a recipe name"
check "a NAME with a path: exit 2" bad_name ../up "'../up' is not a recipe name"
check "a Lua keyword: exit 2" bad_name end "'end' is a Lua keyword"
check "a NAME YAML reads as null: exit 2" bad_name null "'null' reads as null in YAML"
in_dir "$TMP/n" new
check "no NAME: exit 2 with an example" sh -c "[ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'new needs a NAME' $TMP/stderr"
in_dir "$TMP/n" new x --from nope
check "an unknown template: exit 2 listing the templates" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q \"no such template; there are: basic, energy_anomaly\" $TMP/stderr && [ -z \"\$(ls $TMP/n)\" ]"
templates_on_help_page() {
  for t in $(sed -n "s/.*there are: \(.*\) (see.*/\1/p" "$TMP/stderr" | tr -d ','); do
    "$BIN" help new | grep -q -- "--from.*$t\|$t.*--from\|the template: .*$t" || { echo "$t is not on 'luagent help new'"; return 1; }
  done
}
check "... and 'luagent help new' names each of them" templates_on_help_page
in_dir "$TMP/n" new x --bogus
check "an unknown option: exit 2" sh -c "[ \"\$(cat $TMP/status)\" = 2 ] && grep -q \"unknown option '--bogus'\" $TMP/stderr"
in_dir "$TMP/n" new two --dir "$TMP/made/here"
check "--dir DIR writes there, making the folder; the next steps name the paths" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ -s $TMP/made/here/two.lua ] && [ -s $TMP/made/here/two_check.lua ] &&
  [ -s $TMP/made/here/two.script.yaml ] && grep -q 'script.driver(\"two.script.yaml\")' $TMP/made/here/two.lua &&
  grep -q 'luagent run $TMP/made/here/two.lua' $TMP/stdout && [ -z \"\$(ls $TMP/n)\" ]"

# ---- --from energy_anomaly ----
in_dir "$TMP/n" new grid --from=energy_anomaly --dir mine
E="$TMP/n/mine"
check "--from energy_anomaly copies the recipe, its YAML, helpers, eval spec, check and data generators under the name" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] &&
  [ \"\$(cd $E && ls | tr '\n' ' ')\" = 'grid.eval.yaml grid.lua grid.yaml grid_check.lua grid_data.lua grid_eval_data.lua grid_script.lua grid_steps.lua ' ]"
check "... with every name, require and path fixed: no energy_anomaly, energy_data, recipes/ or make eval left" sh -c "
  ! grep -rn 'energy_anomaly\|energy_data\|energy_eval_data\|recipes/\|make eval' $E &&
  grep -q 'luagent.config(\"grid.yaml\")' $E/grid.lua && grep -q 'require(\"grid_script\")' $E/grid.lua &&
  grep -q 'require(\"grid_data\")' $E/grid.lua && grep -q 'require \"grid_steps\"' $E/grid_script.lua &&
  grep -q 'require \"grid_data\"' $E/grid_eval_data.lua && grep -q '^name: grid$' $E/grid.eval.yaml &&
  grep -q '^recipe: grid.lua$' $E/grid.eval.yaml && grep -q 'luagent run mine/grid.lua ' $E/grid.lua"
check "... and otherwise the energy recipe's own text" sh -c "
  for f in energy_anomaly_steps.lua:grid_steps.lua energy_anomaly_script.lua:grid_script.lua energy_data.lua:grid_data.lua; do
    sed 's/energy_anomaly/grid/g; s/energy_data/grid_data/g' $ROOT/recipes/\${f%:*} | cmp - $E/\${f#*:} || exit 1
  done"
(cd "$E" && "$BIN" run -q grid_eval_data.lua) > "$TMP/gen.out" 2>&1
lua_in "$E" "$SPEC_LOADS" grid.eval.yaml > "$TMP/spec.out" 2>&1
check "... its eval data generator writes eval_data/, and then its eval spec is valid" sh -c "
  ls $E/eval_data/*.truth.json > /dev/null &&
  [ \"\$(cat $TMP/spec.out)\" = \"\$(printf 'grid\tgrid.lua\t2\t4\ttrue')\" ] || { cat $TMP/gen.out $TMP/spec.out; exit 1; }"

# ---- from an installed binary: the templates are in it ----
cp "$BIN" "$TMP/luagent-copy"
mkdir -p "$TMP/far"
(cd "$TMP/far" && env -u LUAGENT_PATH "$TMP/luagent-copy" new solo > /dev/null 2>&1 &&
  env -u LUAGENT_PATH "$TMP/luagent-copy" new solo2 --from energy_anomaly > /dev/null 2>&1)
check "a copy of the binary elsewhere writes both templates (they are embedded)" sh -c "
  [ -s $TMP/far/solo.lua ] && [ -s $TMP/far/solo_sample.csv ] && [ -s $TMP/far/solo.script.yaml ] && [ -s $TMP/far/solo2_steps.lua ]"

# The model-call cache from the command line, against the fake provider (a
# test double): --cache, --cache=refresh, --no-cache, cache: in the YAML, the
# live line and the run-end line, two processes filling one cache, a full
# disk, and `luagent cache stats|clear`.
. tests/e2e/lib.sh
export LUAGENT_RUNS_DIR="$TMP/runs"
unset LUAGENT_CACHE
mkdir -p "$TMP/recipe"
RECIPE="$TMP/recipe/calc.lua"
cp tests/e2e/cache_recipe.lua "$RECIPE"
CACHE="$TMP/recipe/.luagent/cache"

# script QUEUE 'LUA STEPS': adds steps to a queue of the fake provider, prints its base URL
script() { "$LUAGENT" run -q /dev/stdin <<LUA
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
fake.script("$1", $2)
print(fake.base_url("$1", "openai"))
LUA
}
requests_of() { "$LUAGENT" run -q /dev/stdin <<LUA
package.path = "tests/lua/?.lua;" .. package.path
print(#require("fake_provider_client").requests("$1"))
LUA
}
entries() { find "$1" -path '*/runs' -prune -o -name '*.json' -print 2>/dev/null | grep -c '/[0-9a-f][0-9a-f]/[0-9a-f]*\.json$'; }

CALC='{tool_calls = {{id = "c1", name = "add", arguments = {a = 1, b = 2}}}},
      {tool_calls = {{id = "c2", name = "add", arguments = {a = 3, b = 3}}}}, {text = "The sum is 6."}'

# ---- (a) a run, then the same run from the cache ----
q=calc-$$
base=$(script "$q" "{$CALC, {text = \"OK\"}}")
run_luagent run "$RECIPE" --set "base_url=$base"
check "without --cache nothing is cached and no cache line is printed" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ ! -e $CACHE ] && ! grep -q 'from cache' $TMP/stderr"
base=$(script "$q" "{$CALC, {text = \"OK\"}}")
run_luagent run "$RECIPE" --cache --set "base_url=$base"
cp "$TMP/stdout" "$TMP/first.out"
check "--cache: the first run goes live (4 calls) and fills the cache beside the recipe" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ $(entries $CACHE) -eq 4 ] && grep -q 'REVIEW: OK' $TMP/stdout &&
  grep -q '^4 model calls: 0 from cache, 4 live, \\\$0.0000 saved' $TMP/stderr"
seen=$(requests_of "$q")
run_luagent run "$RECIPE" --cache --set "base_url=$base"
check "the same run with --cache makes no request and gives the same answer" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ $(requests_of $q) -eq $seen ] && diff $TMP/first.out $TMP/stdout"
check "... the live view marks the turns from the cache and the run end counts them" sh -c "
  grep -q 'turn 1  model cached -> add' $TMP/stderr && grep -q '^4 model calls: 4 from cache, 0 live, ' $TMP/stderr"
run=$(ls -td "$LUAGENT_RUNS_DIR"/*calc* | head -1)
check "... the trace marks the hits (model_request and model_response cached) and has the summary" sh -c "
  [ \$(grep '\"type\":\"model_response\"' $run/trace.jsonl | grep -c '\"cached\":true') -eq 4 ] &&
  [ \$(grep '\"type\":\"model_request\"' $run/trace.jsonl | grep -c '\"cached\":true') -eq 4 ] &&
  grep -q '\"type\":\"cache_summary\"' $run/trace.jsonl"
run_luagent run "$RECIPE" --cache -q --set "base_url=$base"
check "-q: no cache lines" sh -c "[ \"\$(cat $TMP/status)\" = 0 ] && [ ! -s $TMP/stderr ]"

# ---- (b) a change goes live from the first request it changes ----
seen=$(requests_of "$q")
base=$(script "$q" '{{text = "WRONG"}}')
run_luagent run "$RECIPE" --cache --set "base_url=$base" --set "instructions=Be strict."
check "changed instructions of the second agent: only its request goes out" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ $(requests_of $q) -eq $(($seen + 1)) ] && grep -q 'REVIEW: WRONG' $TMP/stdout"
check "... and one line says where and why" sh -c "
  [ \$(grep -c 'from cache; live from' $TMP/stderr) -eq 1 ] &&
  grep -q '^3 model calls from cache; live from turn 1 of reviewer: instructions changed$' $TMP/stderr"
seen=$(requests_of "$q")
base=$(script "$q" '{{tool_calls = {{id = "c2", name = "add", arguments = {a = 3, b = 4}}}}, {text = "The sum is 7."}, {text = "OK"}}')
run_luagent run "$RECIPE" --cache --set "base_url=$base" --set offset=1 --set "instructions=Be strict."
check "a changed tool result: turn 1 from the cache, live from turn 2 (3 requests)" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ $(requests_of $q) -eq $(($seen + 3)) ] &&
  grep -q '^turn 1 from cache; live from turn 2: tool result of turn 1 changed$' $TMP/stderr &&
  grep -q 'CALCULATOR: The sum is 7.' $TMP/stdout"

# ---- (d) streaming from the cache ----
q=stream-$$
base=$(script "$q" "{$CALC, {text = \"OK\"}}")
run_luagent run "$RECIPE" --cache -q --set "base_url=$base" --set stream=true
cp "$TMP/stdout" "$TMP/streamed.out"
seen=$(requests_of "$q")
run_luagent run "$RECIPE" --cache -q --set "base_url=$base" --set stream=true
check "a streaming recipe gets the cached text through on_delta" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ $(requests_of $q) -eq $seen ] && grep -q 'STREAMED: The sum is 6.$' $TMP/stdout &&
  grep -q 'STREAMED: The |sum |is 6|.' $TMP/streamed.out"

# ---- (e) refresh, and the YAML against the command line ----
q=refresh-$$
SIX='{tool_calls = {{id = "c1", name = "add", arguments = {a = 1, b = 2}}}},
     {tool_calls = {{id = "c2", name = "add", arguments = {a = 3, b = 3}}}}, {text = "The sum is six."}'
base=$(script "$q" "{$CALC, {text = \"OK\"}, $SIX, {text = \"OK\"}}")
run_luagent run "$RECIPE" --cache -q --set "base_url=$base" --set "instructions=Refresh me."
run_luagent run "$RECIPE" --cache=refresh --set "base_url=$base" --set "instructions=Refresh me."
check "--cache=refresh never reads: every call goes live" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q '^4 model calls: 0 from cache, 4 live' $TMP/stderr &&
  [ $(requests_of $q) -eq 8 ] && ! grep -q 'live from' $TMP/stderr"
run_luagent run "$RECIPE" --cache --set "base_url=$base" --set "instructions=Refresh me."
check "... but refills: the next --cache run answers with the refreshed answers" sh -c "
  [ $(requests_of $q) -eq 8 ] && grep -q 'CALCULATOR: The sum is six.' $TMP/stdout"

q=yaml-$$
printf 'cache: true\n' > "$TMP/recipe/calc.yaml"
base=$(script "$q" "{$CALC, {text = \"OK\"}, $CALC, {text = \"OK\"}}")
run_luagent run "$RECIPE" -q --set "base_url=$base" --set config=calc.yaml --set "instructions=From YAML."
run_luagent run "$RECIPE" --set "base_url=$base" --set config=calc.yaml --set "instructions=From YAML."
check "cache: true in the recipe's YAML turns the cache on" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ $(requests_of $q) -eq 4 ] && grep -q '^4 model calls: 4 from cache' $TMP/stderr"
run_luagent run "$RECIPE" --no-cache --set "base_url=$base" --set config=calc.yaml --set "instructions=From YAML."
check "--no-cache beats the YAML" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ $(requests_of $q) -eq 8 ] && ! grep -q 'model calls:' $TMP/stderr"
printf 'cache: sometimes\n' > "$TMP/recipe/calc.yaml"
run_luagent run "$RECIPE" --set "base_url=$base" --set config=calc.yaml
check "a cache: value that is not true, false or refresh stops the run naming the file" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q 'calc.yaml: cache: must be true, false or refresh' $TMP/stderr"
run_luagent run "$RECIPE" --cache=sometimes --set "base_url=$base"
check "--cache=sometimes is bad usage (exit 2)" sh -c "[ \"\$(cat $TMP/status)\" = 2 ] && grep -q \"unknown option '--cache=sometimes'\" $TMP/stderr"
touch "$TMP/not-a-folder"
run_luagent run "$RECIPE" --cache --set "cache.dir=$TMP/not-a-folder" --set "base_url=$base"
check "a cache.dir that is a file is bad usage (exit 2), named" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'not-a-folder is not a folder' $TMP/stderr"
q=env-$$
base=$(script "$q" "{$CALC, {text = \"OK\"}}")
(export LUAGENT_CACHE="$TMP/env-cache"; run_luagent run "$RECIPE" --cache -q --set "base_url=$base")
check "LUAGENT_CACHE chooses the folder" sh -c "[ \"\$(cat $TMP/status)\" = 0 ] && [ $(entries $TMP/env-cache) -eq 4 ]"

# ---- (c) two processes filling one cache at once ----
q=burst-$$
base=$(script "$q" "{$(for i in $(seq 1 61); do printf '{echo = true},'; done)}")
SHARED="$TMP/shared"
"$LUAGENT" run tests/e2e/cache_burst.lua --cache -q --set "cache.dir=$SHARED" --set "base_url=$base" --set from=1 --set to=30 > "$TMP/a.out" 2> "$TMP/a.err" &
a=$!
"$LUAGENT" run tests/e2e/cache_burst.lua --cache -q --set "cache.dir=$SHARED" --set "base_url=$base" --set from=16 --set to=45 > "$TMP/b.out" 2> "$TMP/b.err" &
b=$!
wait $a; sa=$?
wait $b; sb=$?
check "two processes fill one cache at once (same and different keys): both succeed, 45 whole entries" sh -c "
  [ $sa = 0 ] && [ $sb = 0 ] && [ $(entries $SHARED) -eq 45 ] &&
  $LUAGENT cache stats $SHARED | grep -q '^entries 45 ' && ! $LUAGENT cache stats $SHARED | grep -q unreadable &&
  [ -z \"\$(find $SHARED -name '*.tmp-*')\" ]"
seen=$(requests_of "$q")
"$LUAGENT" run tests/e2e/cache_burst.lua --cache -q --set "cache.dir=$SHARED" --set "base_url=$base" --set from=1 --set to=45 > "$TMP/all.out" 2>&1
"$LUAGENT" run tests/e2e/cache_burst.lua --cache -q --set "cache.dir=$SHARED" --set "base_url=$base" --set from=1 --set to=30 > "$TMP/a2.out" 2>&1
check "... nothing was lost: all 45 answered from the cache, with the same answers" sh -c "
  [ $(requests_of $q) -eq $seen ] && grep -q 'ANSWERS 45 ' $TMP/all.out && diff $TMP/a.out $TMP/a2.out"
victim=$(find "$SHARED" -name '*.json' -path '*/[0-9a-f][0-9a-f]/*' | head -1)
head -c 100 "$victim" > "$TMP/torn" && cp "$TMP/torn" "$victim"
"$LUAGENT" run tests/e2e/cache_burst.lua --cache -q --set "cache.dir=$SHARED" --set "base_url=$base" --set from=1 --set to=45 > "$TMP/all2.out" 2>&1
check "a hand-torn entry is a miss (one request), and is rewritten whole" sh -c "
  [ $(requests_of $q) -eq $(($seen + 1)) ] && diff $TMP/all.out $TMP/all2.out &&
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' $victim"

# ---- (f) a full disk is a warning, not a failed run ----
if [ "$(id -u)" != 0 ]; then
  echo "ok - $SUITE: a full disk while caching is a warning # SKIP not root (the test mounts a tiny tmpfs)"
elif ! mkdir -p "$TMP/full" || ! mount -t tmpfs -o size=16k tmpfs "$TMP/full" 2> "$TMP/mount.err"; then
  echo "ok - $SUITE: a full disk while caching is a warning # SKIP cannot mount a tmpfs: $(cat "$TMP/mount.err")"
else
  trap 'umount "$TMP/full" 2>/dev/null; rm -rf "$TMP"' EXIT
  mkdir -p "$TMP/full/cache"
  dd if=/dev/zero of="$TMP/full/filler" bs=1k count=64 2>/dev/null
  q=full-$$
  base=$(script "$q" "{$CALC, {text = \"OK\"}}")
  run_luagent run "$RECIPE" --cache --set "cache.dir=$TMP/full/cache" --set "base_url=$base"
  umount "$TMP/full"
  check "a full disk while caching: the run succeeds with its answer and one warning" sh -c "
    [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'REVIEW: OK' $TMP/stdout &&
    [ \$(grep -c 'warning: the model-call cache cannot write' $TMP/stderr) -eq 1 ] &&
    grep -q 'No space left on device' $TMP/stderr"
fi

# ---- (g) luagent cache stats | clear ----
run_luagent cache stats "$SHARED"
check "cache stats: entries, bytes, oldest/newest, by model" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q '^entries 45 (' $TMP/stdout && grep -q '^oldest  20' $TMP/stdout &&
  grep -q 'gpt-4o-mini .* 45 entries' $TMP/stdout"
run_luagent cache stats "$RECIPE"
check "cache stats RECIPE.lua: the cache beside the recipe" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q \"^cache   $CACHE\" $TMP/stdout"
old=0
for f in $(find "$SHARED" -path '*/[0-9a-f][0-9a-f]/*.json' | head -10); do touch -d '20 days ago' "$f"; old=$((old + 1)); done
echo mine > "$SHARED/notes.txt"
run_luagent cache clear "$SHARED" --older-than 14d
check "cache clear --older-than 14d removes only the older entries" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q '^removed 10 entries .* 35 kept' $TMP/stdout && [ $(entries $SHARED) -eq 35 ]"
run_luagent cache clear "$SHARED" --older-than 2w
check "cache clear --older-than with an unknown unit is bad usage (exit 2)" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'a number and a unit s, m, h or d' $TMP/stderr && [ $(entries $SHARED) -eq 35 ]"
run_luagent cache clear "$SHARED"
check "cache clear removes every entry and leaves files that are not the cache's" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && [ $(entries $SHARED) -eq 0 ] && [ \"\$(cat $SHARED/notes.txt)\" = mine ]"
bin="$(cd "$(dirname "$LUAGENT")" && pwd)/$(basename "$LUAGENT")"
(cd "$TMP/recipe" && "$bin" cache stats) > "$TMP/stdout" 2>&1
check "cache stats without DIR: .luagent/cache here" grep -q '^cache   .luagent/cache' "$TMP/stdout"
run_luagent cache frobnicate
check "an unknown cache command is bad usage (exit 2)" sh -c "[ \"\$(cat $TMP/status)\" = 2 ] && grep -q 'usage: luagent cache' $TMP/stderr"

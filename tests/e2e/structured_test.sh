# Structured answers from the command line: an agent fixes an invalid answer
# (Chat Completions and Anthropic's answer tool), the run records and replays,
# and a schema that is not valid JSON Schema is one error naming the field,
# with the recipe's <close> handlers run. The model is the fake provider (a test double).
. tests/e2e/lib.sh
export LUAGENT_RUNS_DIR="$TMP/runs"
RECIPE=tests/e2e/structured_recipe.lua

# queue NAME PROVIDER: a bad answer, then a good one; prints the base URL
queue() { "$LUAGENT" run -q /dev/stdin -- "$1-$$" "$2" <<'LUA'
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
local queue, provider = ...
fake.script(queue, {{json = {kind = "bump", hour = 14}, tool = "report"}, {json = {kind = "spike", hour = 14}, tool = "report"}})
print(fake.base_url(queue, provider))
LUA
}

for provider in openai anthropic; do
  base=$(queue fix "$provider")
  run_luagent run -q "$RECIPE" --set "base_url=$base" --set "provider=$provider" --record "$TMP/$provider.jsonl"
  cp "$TMP/stdout" "$TMP/$provider.out"
  check "$provider: an answer that does not match goes back to the model; the fixed one is result.value" sh -c "
    [ \"\$(cat $TMP/status)\" = 0 ] && grep -q '^STOPPED: answer\$' $TMP/stdout && grep -q '^VALUE: kind=spike hour=14\$' $TMP/stdout &&
    grep -q '\"type\":\"agent_invalid_output\"' \$(ls -td $LUAGENT_RUNS_DIR/*/ | head -1)/trace.jsonl"
  run_luagent run -q "$RECIPE" --set "base_url=http://127.0.0.1:1/v1" --set "provider=$provider" --replay "$TMP/$provider.jsonl"
  check "$provider: the run replays from its recording, same answer" sh -c "
    [ \"\$(cat $TMP/status)\" = 0 ] && diff $TMP/$provider.out $TMP/stdout"
done

run_luagent run -q "$RECIPE" --set "base_url=http://127.0.0.1:1/v1" --set bad_schema=true
check "a schema that is not valid JSON Schema: one error naming the field, before any call; <close> handlers run" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && grep -q '^CLOSED\$' $TMP/stdout &&
  grep -q 'agent.new: output.schema.properties.kind.type: \"objekt\" is not a JSON type' $TMP/stderr &&
  ! grep -q 'STOPPED' $TMP/stdout"

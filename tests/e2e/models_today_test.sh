# needs: docker
# The energy recipe against the fake provider (a test double) posing as the
# models of today: gpt-5.4 over Chat Completions and over
# Responses with reasoning on, and Claude with extended thinking. Every
# request must be one the service takes (the fake checks each against the
# official spec or the SDK's rules), reasoning and thinking go back with each
# turn, Claude's prompt gets cache breakpoints, and the run ends with its answer.
. "$(dirname "$0")/lib.sh"

queue_of() { "$LUAGENT" run -q tests/e2e/script_fake.lua -- "$1" "$2" "${3:-openai}"; }
requests_of() { "$LUAGENT" run -q /dev/stdin -- "$1" > "$TMP/requests.json" <<'LUA'
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
print(luagent.json.encode(fake.requests((...))))
LUA
}

q=models-chat-$$
base=$(queue_of "$q" energy)
run_luagent run recipes/energy_anomaly.lua --set model.provider=openai --set model.model=gpt-5.4 \
  --set "model.base_url=$base" --set model.reasoning.effort=low
requests_of "$q"
check "gpt-5.4 over Chat Completions, reasoning effort low: the run ends with its answer" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'The anomaly is in the report.' $TMP/stdout"
check "... every request valid, with no temperature (said once, and why) and reasoning_effort low" python3 - "$TMP/requests.json" "$TMP/stderr" <<'PY'
import json, sys
reqs = json.load(open(sys.argv[1]))
assert len(reqs) == 6, len(reqs)
for r in reqs:
    assert "refused" not in r, r.get("refused")
    b = r["body"]
    assert b["model"] == "gpt-5.4" and "temperature" not in b and b.get("reasoning_effort") == "low", b.keys()
    assert "max_tokens" not in b
err = open(sys.argv[2]).read()
assert err.count("temperature 0 was left out") == 1, err
PY

q=models-responses-$$
base=$(queue_of "$q" energy_reasoning)
run_luagent run recipes/energy_anomaly.lua -q --set model.provider=openai_responses --set model.model=gpt-5.4 \
  --set "model.base_url=$base" --set model.reasoning.effort=medium
requests_of "$q"
check "gpt-5.4 over Responses, reasoning on: the run ends with its answer" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'The anomaly is in the report.' $TMP/stdout"
check "... every request valid; encrypted reasoning asked for and passed back verbatim with each phase" python3 - "$TMP/requests.json" <<'PY'
import json, sys
reqs = json.load(open(sys.argv[1]))
assert len(reqs) == 6, len(reqs)
for n, r in enumerate(reqs):
    assert "refused" not in r, r.get("refused")
    b = r["body"]
    assert b["store"] is False and b["include"] == ["reasoning.encrypted_content"], b
    assert "temperature" not in b and b["reasoning"]["effort"] == "medium"
    kept = [i["encrypted_content"] for i in b["input"] if i.get("type") == "reasoning"]
    assert kept == ["gAAAA-enc-%d" % (k + 1) for k in range(n)], (n, kept)
    phases = [i.get("phase") for i in b["input"] if i.get("type") == "message"]
    assert phases == ["commentary"] * n, phases
PY

q=models-claude-$$
base=$(queue_of "$q" energy_thinking anthropic)
run_luagent run recipes/energy_anomaly.lua --set model.provider=anthropic --set model.model=claude-sonnet-4-5 \
  --set "model.base_url=$base" --set model.reasoning.budget_tokens=2048
requests_of "$q"
check "Claude with extended thinking: the run ends with its answer" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'The anomaly is in the report.' $TMP/stdout"
check "... every request valid; signed thinking blocks go back; the prompt has cache breakpoints; turns read the cache" python3 - "$TMP/requests.json" "$TMP/stderr" <<'PY'
import json, sys
reqs = json.load(open(sys.argv[1]))
assert len(reqs) == 6, len(reqs)
def breakpoints(v):
    if isinstance(v, dict):
        return ("cache_control" in v) + sum(breakpoints(x) for x in v.values())
    if isinstance(v, list):
        return sum(breakpoints(x) for x in v)
    return 0
for n, r in enumerate(reqs):
    assert "refused" not in r, r.get("refused")
    b = r["body"]
    assert b["thinking"] == {"type": "enabled", "budget_tokens": 2048} and "temperature" not in b
    turns = [m for m in b["messages"] if m["role"] == "assistant"]
    assert len(turns) == n
    for k, t in enumerate(turns):
        assert t["content"][0] == {"type": "thinking", "thinking": t["content"][0]["thinking"],
                                   "signature": "sig-%d" % (k + 1)}, t["content"][0]
    assert breakpoints(b) <= 4
    if n >= 1:
        assert breakpoints(b) == 3, breakpoints(b)
err = open(sys.argv[2]).read()
assert "from the provider's cache" in err, err[-2000:]
PY

# needs: docker
# The energy recipe with the unified exec pair and each provider's own
# editing tools (--set tools.shell=unified --set tools.edit=native) against
# the fake provider (a test double) speaking Chat Completions, Responses and
# Anthropic's Messages: every request one the service takes, the tools in
# each wire's own form, and the files the editor wrote come home.
. "$(dirname "$0")/lib.sh"

queue_of() { "$LUAGENT" run -q tests/e2e/script_fake.lua -- "$1" energy_native "$2"; }
requests_of() { "$LUAGENT" run -q /dev/stdin -- "$1" > "$TMP/requests.json" <<'LUA'
package.path = "tests/lua/?.lua;" .. package.path
local fake = require "fake_provider_client"
print(luagent.json.encode(fake.requests((...))))
LUA
}

for provider in openai openai_responses anthropic; do
  case $provider in
    anthropic) name=claude-sonnet-4-5 ;;
    *) name=gpt-4.1 ;;
  esac
  q=native-$provider-$$
  base=$(queue_of "$q" "$provider")
  run_luagent run recipes/energy_anomaly.lua --set model.provider=$provider --set model.model=$name \
    --set "model.base_url=$base" --set tools.shell=unified --set tools.edit=native
  requests_of "$q"
  check "$provider, tools.shell=unified, tools.edit=native: the run ends with its answer" sh -c "
    [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'The anomaly is in the report.' $TMP/stdout"
  notes=$(awk '/notes\.md/ { print $NF }' "$TMP/stdout" | tail -1)
  check "... the file its editor wrote came home with the outputs (output/notes.md)" sh -c "
    [ -n '$notes' ] && printf '# Notes\nchecked by the editor\n' | cmp - '$notes'"
  check "... every request valid, with the wire's own tools" python3 - "$TMP/requests.json" "$provider" <<'PY'
import json, sys
reqs, provider = json.load(open(sys.argv[1])), sys.argv[2]
assert len(reqs) == 10, len(reqs)
for r in reqs:
    assert "refused" not in r, r.get("refused")
def names(t):
    if provider == "openai":
        return t["function"]["name"]
    if provider == "openai_responses":
        return t["name"] if t["type"] == "function" else t["type"]
    return t.get("type", "custom") + ":" + t["name"]
got = [names(t) for t in reqs[0]["body"]["tools"]]
want = {"openai": ["run_python", "exec_command", "write_stdin", "read_file", "apply_patch", "edit_file", "list_files",
                   "view_image", "read_output"],
        "openai_responses": ["run_python", "exec_command", "write_stdin", "read_file", "apply_patch", "list_files",
                             "view_image", "read_output"],
        "anthropic": ["custom:run_python", "custom:exec_command", "custom:write_stdin", "custom:read_file",
                      "text_editor_20250728:str_replace_based_edit_tool", "custom:list_files", "custom:view_image",
                      "custom:read_output"]}[provider]
assert got == want, got
# the poll saw the command's end: its output came back as the session's
text = json.dumps(reqs[2]["body"])
assert "looked" in text and "Process exited with code 0" in text, text[:2000]
PY
done

# `luagent meta DIR`: the LuaLS annotation files and a .luarc.json pointing at
# them; an existing .luarc.json is merged into or left alone, never clobbered.
# With lua-language-server installed, correct API use checks clean and a typo
# is caught.
. tests/e2e/lib.sh
LUAGENT_ABS=$(cd "$(dirname "$LUAGENT")" && pwd)/$(basename "$LUAGENT")

valid_json() { python3 -m json.tool "$1" > /dev/null; }

# json_has FILE PYTHON-EXPR: the decoded file as `c` makes the expression true
json_has() {
  python3 - "$1" "$2" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
assert eval("(" + sys.argv[2].strip() + ")"), "%s is false for %s" % (sys.argv[2], json.dumps(c))
PY
}

WANTS='c["runtime"]["version"] == "Lua 5.4" and c["workspace"]["library"] == [".luagent/meta"] and c["diagnostics"]["globals"] == ["luagent"]'

# ---- a fresh folder ----
mkdir -p "$TMP/recipe"
run_luagent meta "$TMP/recipe"
check "luagent meta DIR exits 0 and says what it wrote" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'wrote $(ls lua/meta/*.lua | wc -l) annotation files' $TMP/stdout"
same_files() {
  for f in lua/meta/*.lua; do cmp "$f" "$TMP/recipe/.luagent/meta/$(basename "$f")" || return 1; done
  [ "$(ls "$TMP/recipe/.luagent/meta" | wc -l)" = "$(ls lua/meta/*.lua | wc -l)" ]
}
check "it writes every annotation file of lua/meta into DIR/.luagent/meta" same_files
check "it writes a valid .luarc.json" valid_json "$TMP/recipe/.luarc.json"
check ".luarc.json: Lua 5.4, the library .luagent/meta, the luagent global" json_has "$TMP/recipe/.luarc.json" "$WANTS"

cp "$TMP/recipe/.luarc.json" "$TMP/first.json"
run_luagent meta "$TMP/recipe"
check "a second run keeps the .luarc.json as it is" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && cmp $TMP/first.json $TMP/recipe/.luarc.json && grep -q 'already points' $TMP/stdout"

# ---- the current folder by default ----
mkdir -p "$TMP/here"
(cd "$TMP/here" && "$LUAGENT_ABS" meta > /dev/null 2>&1)
check "without DIR it writes into the current folder" sh -c "
  [ -f $TMP/here/.luagent/meta/sandbox.lua ] && [ -f $TMP/here/.luarc.json ]"

# ---- a .luarc.json of the user's ----
mkdir -p "$TMP/custom"
cat > "$TMP/custom/.luarc.json" <<'JSON'
{
  "diagnostics": {"disable": ["lowercase-global"], "globals": ["love"]},
  "workspace": {"library": ["../shared"], "checkThirdParty": false},
  "hint": {"enable": true}
}
JSON
run_luagent meta "$TMP/custom"
check "a custom .luarc.json is merged into, and the run says so" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q 'updated .*other settings kept' $TMP/stdout"
check "the merged .luarc.json is valid JSON" valid_json "$TMP/custom/.luarc.json"
check "the merged .luarc.json keeps every custom setting and adds luagent's" json_has "$TMP/custom/.luarc.json" '
  c["diagnostics"]["disable"] == ["lowercase-global"] and c["diagnostics"]["globals"] == ["love", "luagent"]
  and c["workspace"]["library"] == ["../shared", ".luagent/meta"] and c["workspace"]["checkThirdParty"] is False
  and c["hint"] == {"enable": True} and c["runtime"]["version"] == "Lua 5.4"'
cp "$TMP/custom/.luarc.json" "$TMP/merged.json"
run_luagent meta "$TMP/custom"
check "a second run leaves the merged .luarc.json alone" cmp "$TMP/merged.json" "$TMP/custom/.luarc.json"

mkdir -p "$TMP/comments"
printf '// my settings\n{"runtime.version": "Lua 5.4"}\n' > "$TMP/comments/.luarc.json"
cp "$TMP/comments/.luarc.json" "$TMP/comments.orig"
run_luagent meta "$TMP/comments"
check "a .luarc.json that is not plain JSON is left byte for byte, with what to add (exit 1)" sh -c "
  [ \"\$(cat $TMP/status)\" = 1 ] && cmp $TMP/comments.orig $TMP/comments/.luarc.json &&
  grep -q 'left as it is' $TMP/stderr && grep -q '.luagent/meta' $TMP/stderr &&
  [ -f $TMP/comments/.luagent/meta/luagent.lua ]"

run_luagent meta a b
check "two folders is bad usage (exit 2)" status_is 2

# ---- the language server, where it is installed ----
if command -v lua-language-server > /dev/null 2>&1; then
  cat > "$TMP/recipe/main.lua" <<'LUA'
local sandbox, model, agent, tools = require "luagent.sandbox", require "luagent.model",
                                     require "luagent.agent", require "luagent.tools"
local cfg = luagent.config("main.yaml")
local box <close> = assert(sandbox.open{image = cfg.image, memory = "1g", cpus = 1,
  manifest = {["input/data.csv"] = sandbox.file("data.csv")}})
local r, err = box:exec("wc -l input/data.csv", {timeout = 30})
if not r then error(tostring(err.kind) .. err.message) end
print(r.stdout, r.exit_code, r.timed_out, r.oom_killed, r.duration)
local report = assert(box:extract("output", luagent.run_dir("output")))
print(#report.files, #report.refused, report.bytes)
local m = assert(model.from{provider = "openai", model = "gpt-4o-mini"})
local answer = assert(m:complete{messages = {{role = "user", content = "hi"}}})
print(answer.text, answer.usage.input_tokens, answer.cost, #answer.tool_calls)
local a = agent.new{model = m, tools = tools.standard(box), max_turns = 5, budget = {tokens = 1000}}
local result = a:run("go")
print(result.output, result.stopped_by, result.usage.output_tokens)
local t = luagent.spawn(function() return 1 end)
print(t:wait(), luagent.json.encode({}), luagent.errors.is(err), luagent.retry.exponential{attempts = 2}.attempts)
LUA
  cat > "$TMP/recipe/typo.lua" <<'LUA'
local sandbox = require "luagent.sandbox"
local box = assert(sandbox.open{})
local r = assert(box:exce("ls"))
print(r.stdot)
LUA
  lls_check() { # FILE: the diagnostics of one file of the recipe folder
    rm -rf "$TMP/lls"
    mkdir -p "$TMP/lls-ws" && cp "$TMP/recipe/.luarc.json" "$TMP/lls-ws/" && rm -f "$TMP/lls-ws"/*.lua
    cp -r "$TMP/recipe/.luagent" "$TMP/lls-ws/" && cp "$TMP/recipe/$1" "$TMP/lls-ws/"
    lua-language-server --check "$TMP/lls-ws" --logpath "$TMP/lls" --checklevel=Information > "$TMP/lls.out" 2>&1
    cat "$TMP/lls.out" "$TMP/lls"/*.json 2>/dev/null
  }
  lls_check main.lua > "$TMP/main.diag"
  check "lua-language-server: correct API use gives no undefined-field or undefined-global" sh -c "
    ! grep -E 'undefined-field|undefined-global|undefined-doc' $TMP/main.diag"
  lls_check typo.lua > "$TMP/typo.diag"
  check "lua-language-server: a misspelt method is caught (undefined-field)" grep -q 'undefined-field' "$TMP/typo.diag"
else
  echo "ok - $SUITE: lua-language-server --check # SKIP lua-language-server is not installed (not packaged in Debian 12)"
fi

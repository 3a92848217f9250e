-- Writes the OpenAPI spec (YAML) as JSON, for the fake provider's request
-- checks (tests/fake_provider/validate.py), with luagent's own YAML reader:
--   luagent run -q tests/openapi_json.lua SPEC.yaml OUT.json
local src, dst = luagent.args[1], luagent.args[2]
local doc = assert(luagent.yaml.load(assert(luagent.fs.read(src)), src))
assert(luagent.fs.write(dst, luagent.json.encode(doc)))

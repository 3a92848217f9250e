-- luagent.json: exact round trips of model API payloads.
local t = require "helper"
local json = luagent.json

t.test("a chat completion payload round-trips byte for byte", function()
  local text = '{"choices":[{"finish_reason":"tool_calls","index":0,"logprobs":null,"message":{"annotations":[],'
    .. '"content":null,"refusal":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\\"code\\":\\"print(1)\\"}",'
    .. '"name":"run_python"},"id":"call_abc","type":"function"}]}}],"created":1732950000,"id":"chatcmpl-1",'
    .. '"model":"gpt-4o-2024-08-06","object":"chat.completion","system_fingerprint":"fp_1","usage":{"completion_tokens":20,'
    .. '"completion_tokens_details":{"reasoning_tokens":0},"prompt_tokens":100,"total_tokens":120}}'
  local v = assert(json.decode(text))
  t.eq(v.choices[1].message.content, json.null)
  t.eq(#v.choices[1].message.annotations, 0)
  t.eq(math.type(v.usage.prompt_tokens), "integer")
  t.eq(json.encode(v), text)
end)

t.test("integers stay integers, beyond 2^53 too", function()
  local v = assert(json.decode('[3, -7, 9007199254740993, -9223372036854775807, 1.5, 2.0, 1e2]'))
  t.eq(math.type(v[1]), "integer"); t.eq(v[1], 3)
  t.eq(v[3], 9007199254740993)
  t.eq(v[4], -9223372036854775807)
  t.eq(v[5], 1.5)
  t.eq(json.encode(v), "[3,-7,9007199254740993,-9223372036854775807,1.5,2,100]")
  t.eq(json.encode({big = math.maxinteger}), '{"big":9223372036854775807}')
  t.eq(json.encode(0.1 + 0.2), "0.30000000000000004")
end)

t.test("empty arrays and empty objects stay apart", function()
  local v = assert(json.decode('{"a":[],"o":{},"n":[[],[ ]]}'))
  t.ok(json.is_array(v.a)); t.ok(not json.is_array(v.o))
  t.eq(json.encode(v), '{"a":[],"n":[[],[]],"o":{}}')
  t.eq(json.encode({tools = json.array{}}), '{"tools":[]}')
  t.eq(json.encode({}), "{}")
  local list = json.decode("[1]"); table.remove(list)
  t.eq(json.encode(list), "[]", "a decoded array emptied later is still an array")
end)

t.test("strings: escapes, unicode and invalid UTF-8", function()
  local v = assert(json.decode('"caf\\u00e9 \\ud83d\\ude00 \\n \\"q\\""'))
  t.eq(v, 'café 😀 \n "q"')
  t.eq(json.encode("tab\there\0nul"), '"tab\\there\\u0000nul"')
  t.eq(json.encode("bad \xff byte"), '"bad \u{FFFD} byte"', "invalid UTF-8 becomes U+FFFD")
  t.eq(json.decode(json.encode("é\u{1F600}")), "é\u{1F600}")
end)

t.test("a sentinel-looking string in data is left alone", function()
  local v = assert(json.decode('["\\u0000luagentish", "[]"]'))
  t.eq(v[1], "\0luagentish"); t.eq(v[2], "[]")
end)

t.test("decode errors are values with the position", function()
  local v, err = json.decode('{"a": [1, 2,, 3]}')
  t.eq(v, nil)
  t.eq(err.kind, "json")
  t.eq(err.position, 13)
  t.match(err.message, "character 13")
  local _, err2 = json.decode('{"unterminated": "abc')
  t.eq(err2.kind, "json")
  local _, err3 = json.decode("NaN")
  t.eq(err3.kind, "json", "NaN is not JSON")
end)

t.test("encode refuses what JSON cannot hold, naming where", function()
  t.raises(function() json.encode({messages = {{content = print}}}) end, "value%.messages%[1%]%.content")
  t.raises(function() json.encode({x = 0 / 0}) end, "NaN")
  local cycle = {}; cycle.self = cycle
  t.raises(function() json.encode(cycle) end, "cycle")
end)

t.test("keys are sorted, so the same table always encodes the same", function()
  t.eq(json.encode({b = 1, a = 2, c = {z = 1, y = 2}}), '{"a":2,"b":1,"c":{"y":2,"z":1}}')
  t.eq(json.encode({[1] = "a", [3] = "c"}), '{"1":"a","3":"c"}', "sparse tables are objects")
end)

t.test("indent pretty-prints", function()
  t.eq(json.encode({a = {1, 2}}, {indent = 2}), '{\n  "a": [\n    1,\n    2\n  ]\n}')
end)

return t.done()

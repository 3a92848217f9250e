-- Writes the synthetic eval folder of tests/lua/eval_fixture.lua into DIR and
-- its comparison page (luagent.eval.page), for tests/e2e/eval_page_test.sh:
--   luagent run tests/e2e/eval_page_fixture.lua DIR   -> prints DIR/index.html
package.path = "tests/lua/?.lua;" .. package.path
local fixture = require "eval_fixture"
local dir = assert(..., "usage: eval_page_fixture.lua DIR")
assert(luagent.fs.mkdir(dir))
fixture.make(dir)
print(assert(require("luagent.eval.page").write(dir)))

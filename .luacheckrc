-- luacheck configuration: `luacheck lua recipes tests bench` (run by tests/run)
std = "lua54"
globals = {"luagent"}
max_line_length = 130
ignore = {"211/_.*"}                     -- unused locals named _x are deliberate (<close> guards)
files["tests/lua"] = {ignore = {"212"}}  -- unused arguments in test callbacks

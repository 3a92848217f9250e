-- `luagent` with no command: the usage summary (luagent.cli.help) on stderr,
-- exit status 2 (bad usage).
local cli = {}

function cli.main()
  io.stderr:write(require("luagent.cli.help").summary())
  return 2
end

return cli

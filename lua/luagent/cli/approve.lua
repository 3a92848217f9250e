-- luagent approve RUN [--deny CALL --why TEXT]: the decision a run waits for
-- (agent.new{approve = "defer"}), recorded in its folder; `luagent run
-- --resume RUN` goes on with it (luagent.approval_deferred).
local cli = {}

function cli.main(args)
  return require("luagent.approval_deferred").main(args)
end

return cli

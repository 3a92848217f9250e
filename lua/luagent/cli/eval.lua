-- luagent eval SPEC.yaml [--concurrency N|auto] [--set key=value ...] [-q] [--resume [EVAL_ID]] [--rerun-failed-checks]
-- Runs every variant x input x epoch of the spec (luagent.eval), then prints
-- the table per variant, the runs that wait for a person's approval (listed
-- apart, with the commands to go on) and where everything was written. Exit
-- status: 0 when the eval ran (whatever the checks said), 3 when it ran and a
-- run waits for an approval (agent.new{approve = "defer"}), 2 for a bad command
-- line or spec (one error naming the file, line and key; nothing runs), 1 when
-- the eval could not run, 130 after Ctrl-C (what finished is written).
-- luagent eval diff A B: two evals compared (luagent.cli.eval_diff).
local errors = require "luagent.errors"

local cli = {}

local USAGE = [=[
usage: luagent eval SPEC.yaml [--concurrency N|auto] [--set key=value]... [-q]
                    [--resume [EVAL_ID]] [--rerun-failed-checks]
       luagent eval diff A B [-o PAGE.html]   two evals compared (A, B: eval ids or folders)
  --concurrency N   runs at once (beats the spec's concurrency); auto: as many as the
                    engines and cores allow, fewer while the engine slows
  --resume [ID]     continue an eval that stopped (default: the newest of this spec):
                    finished runs are kept, the missing and failed ones run, and the
                    waiting ones a person decided (luagent approve) go on
  --rerun-failed-checks   with --resume: also run again the runs whose check failed
  --set key=value   a setting for every run, on top of the variant's and the input's
  -q, --quiet       no progress lines]=]

local function usage(message)
  io.stderr:write("luagent: ", message, "\n", USAGE, "\n")
  return 2
end

-- args -> {spec, sets, concurrency, quiet} | nil, message
local function parse(args)
  local o = {sets = {}}
  local i = 1
  while i <= #args do
    local a = args[i]
    local name, inline = a:match("^(%-%-[%w-]+)=(.*)$")
    name = name or a
    local function value()
      if inline then return inline end
      i = i + 1
      return args[i]
    end
    if name == "--set" or name == "-s" then
      local kv = value()
      if not kv or not kv:match("^[^=]+=") then return nil, ("--set needs key=value, got '%s'"):format(tostring(kv)) end
      o.sets[#o.sets + 1] = kv
    elseif name == "--concurrency" or name == "-j" then
      local v = value()
      local n = v == "auto" and "auto" or tonumber(v or "")
      if n ~= "auto" and (not n or math.type(n) ~= "integer" or n < 1) then
        return nil, "--concurrency needs a whole number >= 1, or auto"
      end
      o.concurrency = n
    elseif name == "--resume" then
      o.resume = true
      -- its EVAL_ID: --resume=ID, or the next word unless it is an option or the spec
      local nxt = inline or args[i + 1]
      if inline or (nxt and nxt:sub(1, 1) ~= "-" and not nxt:match("%.ya?ml$")) then o.resume_id = value() end
      if o.resume_id == "" then return nil, "--resume= needs an eval id (or give --resume alone: the newest)" end
    elseif a == "--rerun-failed-checks" then
      o.rerun_failed_checks = true
    elseif a == "-q" or a == "--quiet" then
      o.quiet = true
    elseif a == "-h" or a == "--help" then
      o.help = true
    elseif a:sub(1, 1) == "-" and a ~= "-" then
      return nil, ("unknown option '%s'"):format(a)
    elseif o.spec then
      return nil, ("one spec at a time ('%s' and '%s')"):format(o.spec, a)
    else
      o.spec = a
    end
    i = i + 1
  end
  if not o.spec and not o.help then return nil, "eval needs a spec file, e.g. 'luagent eval recipes/energy_anomaly.eval.yaml'" end
  if o.rerun_failed_checks and not o.resume then return nil, "--rerun-failed-checks goes with --resume" end
  return o
end

local relative = require("luagent.eval.folders").relative

-- A word as the shell reads it.
local function shell_word(w)
  if w:match("^[%w%._/=:,+@%-]+$") then return w end
  return "'" .. w:gsub("'", "'\\''") .. "'"
end

-- The runs that wait for an approval, and the command that goes on, or nil.
local function waiting_text(o, report)
  if (report.waiting or 0) == 0 then return nil end
  local again = {"luagent eval", shell_word(o.spec)}
  for _, kv in ipairs(o.sets) do again[#again + 1] = "--set " .. shell_word(kv) end
  again[#again + 1] = "--resume " .. shell_word(report.id)
  local resume = require "luagent.eval.resume"
  return require("luagent.eval.view").waiting(report.records, {dir = relative(report.dir),
    resume = table.concat(again, " "),
    decided = function(r)
      local d = resume.decision(report.dir, r)
      return d and d.decision
    end})
end

function cli.main(args)
  if args[1] == "diff" then return require("luagent.cli.eval_diff").main(table.move(args, 2, #args, 1, {})) end
  local o, why = parse(args)
  if not o then return usage(why) end
  if o.help then
    print(USAGE)
    return 0
  end
  local spec, err = require("luagent.eval.spec").load(o.spec, {sets = o.sets, concurrency = o.concurrency})
  if not spec then
    io.stderr:write("luagent: ", err.message, "\n")
    return err.usage and 2 or 1
  end
  local eval = require "luagent.eval"
  local resumed
  if o.resume then
    resumed, err = require("luagent.eval.resume").prepare(spec, o.resume_id, {rerun_failed_checks = o.rerun_failed_checks})
    if not resumed then
      io.stderr:write("luagent: ", err.message, "\n")
      return 2
    end
  end
  local report
  report, err = eval.run(spec, {quiet = o.quiet, resume = resumed})
  if not report then
    io.stderr:write("luagent: ", errors.from(err).message, "\n")
    return 1
  end
  io.stdout:write("\n", report.table, "\n")
  local waiting = waiting_text(o, report)
  if waiting then io.stdout:write(waiting, "\n") end
  if report.status == "interrupted" then
    io.stderr:write(("interrupted: %d of %d runs finished; what finished is in %s\n"):format(
      report.finished, report.runs, relative(report.dir)))
  end
  print("results: " .. relative(report.results))
  print("summary: " .. relative(report.summary))
  if report.page then print("page:    " .. relative(report.page)) end
  print("runs:    " .. relative(report.dir .. "/runs/"))
  return waiting and 3 or 0
end

return cli

---@meta luagent.eval
-- luagent.eval: a recipe run many times in one process — every variant x input
-- x epoch of an eval spec — with a check per run, results.jsonl, summary.csv
-- and a table per variant (lua/luagent/eval.lua, lua/luagent/eval/*.lua).
-- `luagent eval SPEC.yaml` is the usual way in. LuaLS annotations: definitions only.
--
--   local spec = assert(require("luagent.eval.spec").load("recipes/energy_anomaly.eval.yaml"))
--   local report = assert(require("luagent.eval").run(spec, {concurrency = 1}))
--   io.write(report.table)
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---One variant or one input of a spec: its name (a folder name) and settings (nested, like --set).
---@class luagent.EvalCase
---@field name string
---@field settings table

---A checked eval spec (luagent.eval.spec.load).
---@class luagent.EvalSpec
---@field file string the spec file
---@field dir string its folder (absolute): evals/ goes there unless LUAGENT_EVALS_DIR is set
---@field name string
---@field recipe string the recipe file (absolute)
---@field defaults {file: string, name: string, value: table, positions: table, missing?: boolean} the recipe's YAML
---@field variants luagent.EvalCase[] in the spec's order
---@field inputs luagent.EvalCase[] in the spec's order (a glob: its files, sorted)
---@field epochs integer
---@field concurrency integer
---@field budget? {tokens?: number, cost?: number}
---@field check? fun(run: luagent.EvalRun): luagent.EvalVerdict
---@field check_file? string
---@field cache? "on"|"refresh" nil: off
---@field sets table the --set settings, on top of every run's
---@field grader {model: table, rubric?: string} the model luagent.checks.graded asks (see the spec's grader key)

---What a check gets, once per run.
---@class luagent.EvalRun
---@field dir string the run's folder
---@field output string? the final answer
---Declared outputs (manifest.json) by workspace path ("output/report.md"); path: the file on the host.
---@field outputs table<string, {path: string, size: integer, sha256: string}>
---@field settings table the run's settings (variant, input, --set)
---@field trace string the trace file
---@field stopped_by string? "answer", "max_turns", "budget", ...
---@field usage {input_tokens: integer, output_tokens: integer}?
---@field cost number?
---@field status "ok"|"failed"
---@field error string? why the run failed
---@field variant string
---@field input string
---@field epoch integer
---The model luagent.checks.graded asks (the spec's grader.model over the recipe's model
---settings and --set), the spec's rubric, the eval's cache mode and recipe.
---@field grader {model: table, rubric?: string, cache?: "on"|"refresh", recipe: string}
---What a model-graded check asked (set by luagent.checks.graded; the eval records it).
---@field grading? {asked: integer, live_calls: integer, cached_calls: integer, cost: number, tokens: integer, model: string}

---A check's answer. Anything else (or a raise) is that run's failure with the message.
---@class luagent.EvalVerdict
---@field passed boolean
---@field score? number 0..1
---@field note? string

---One run as the run_job gets it.
---@class luagent.EvalJob
---@field recipe string
---@field settings table
---@field dir string the run's folder: evals/<eval-id>/runs/<variant>/<input>/<epoch>
---@field run_dir string the same, relative to the eval's folder
---@field cache? "on"|"refresh"
---@field capture boolean print of the recipe goes to the run's stdout.txt
---@field quiet boolean
---@field variant string
---@field input string
---@field epoch integer

---A run's model calls and what they cost.
---@class luagent.EvalRunStats
---@field model_calls integer
---@field cached_calls integer
---@field live_calls integer
---@field saved_cost number
---@field cost number
---@field input_tokens integer
---@field output_tokens integer

---What a run_job returns (luagent.run's r:execute()).
---@class luagent.EvalRunResult
---@field status "ok"|"failed"|"interrupted"
---@field error? any
---@field final? {output: string?, stopped_by: string?, usage: table?, cost: number?, turns: integer?}
---@field stats? luagent.EvalRunStats
---@field dir? string
---@field trace? string
---@field cancelled? boolean the eval was interrupted (Ctrl-C) while this run ended: no run starts after it

---@class luagent.EvalOptions
---@field run_job? fun(job: luagent.EvalJob): luagent.EvalRunResult runs one run (default: luagent.run's)
---@field quiet? boolean no progress lines
---@field say? fun(line: string) where lines for people go (default: stderr)
---@field evals_dir? string instead of evals/ beside the spec or LUAGENT_EVALS_DIR

---@class luagent.EvalReport
---@field id string
---@field dir string evals/<eval-id>
---@field status "ok"|"interrupted"|"budget"
---@field records table[] the results.jsonl lines
---@field rows table[] summary.csv's rows, one per variant
---@field table string the terminal table
---@field runs integer
---@field finished integer runs that ended ok or failed (not the interrupted ones)
---@field skipped integer
---@field results string results.jsonl
---@field summary string summary.csv
---@field page? string index.html, when this build writes it

---@class luagent.eval
local eval = {}

---Runs every variant x input x epoch of a checked spec, `concurrency` at a time.
---nil, err when the eval cannot start (its folder, no run_job).
---@param spec luagent.EvalSpec
---@param opts? luagent.EvalOptions
---@return luagent.EvalReport|nil report
---@return luagent.Error? err
function eval.run(spec, opts) end

---Every run of the spec in starting order (epoch, input, variant), with folders under root.
---@param spec luagent.EvalSpec
---@param root string the eval's folder
---@return luagent.EvalJob[]
function eval.plan(spec, root) end

---The run_job that runs a recipe in its own run context (luagent.run), or nil, err.
---@return (fun(job: luagent.EvalJob): luagent.EvalRunResult)|nil
---@return luagent.Error? err
function eval.default_run_job() end

---The variants that would run the recipe's scripted driver (no model configured for them).
---@param spec luagent.EvalSpec
---@return string[]
function eval.scripted_variants(spec) end

---@class luagent.eval.spec
local spec = {}

---Reads and checks an eval spec: one error (kind "config", err.usage, err.file, err.line,
---err.key) naming the file, line and key of the first thing wrong, before anything runs.
---@param path string
---@param opts? {sets?: string[], concurrency?: integer}
---@return luagent.EvalSpec|nil
---@return luagent.Error? err
function spec.load(path, opts) end

return eval

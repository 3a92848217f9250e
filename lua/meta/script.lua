---@meta luagent.script
-- luagent.script: a scripted driver written as data (lua/luagent/script.lua):
-- a YAML file of steps, each the tool call a model would make (it really runs
-- in the sandbox), the last the answer. For a recipe run with no model; it is
-- not a model and says so. `luagent help start` shows the file.
--
--   local llm = model.from_or_scripted(cfg.model, script.driver("report.script.yaml"))
--
-- LuaLS annotations: definitions only.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---@class luagent.script
local script = {}

---The driver of a script file (relative to the recipe's folder): a function
---that loads the file, checks it whole (an error value naming file:line) and
---returns the scripted model. Give it to model.from_or_scripted.
---@param file string
---@return fun(): luagent.Model
function script.driver(file) end

---Loads a script file now: the scripted model, or raises an error value of
---kind config naming the file and line of the mistake.
---@param path string
---@return luagent.Model
function script.load(path) end

---How many turns of a transcript called tools: a script's next step is this + 1.
---@param messages table[]
---@return integer
function script.steps_done(messages) end

return script

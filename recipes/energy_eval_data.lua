-- The datasets of the energy recipe's eval (energy_anomaly.eval.yaml): one per
-- anomaly kind the generator knows, and a second seed of the first kind, each
-- with its truth sidecar (NAME.truth.json) for the eval's check.
--
--   luagent run recipes/energy_eval_data.lua [DIR]     DIR defaults to recipes/eval_data
--
-- The same bytes on every machine (energy_data is seeded); `make eval` runs it
-- when the folder is missing.
local data = require "energy_data"

local SEEDS = {night_hvac = {11, 42}, surge = {5}, chiller_fault = {23}}

local dir = ... or (luagent.recipe_dir .. "/eval_data")
local n = 0
for _, kind in ipairs(data.KINDS) do
  for _, seed in ipairs(SEEDS[kind] or {7}) do
    local name = ("%s-%d"):format(kind, seed)
    local _, _, truth = data.generate{kind = kind, seed = seed, dir = dir, name = name}
    print(("%s/%s.csv  %s  %s .. %s"):format(dir, name, truth.description, truth.start, truth["end"]))
    n = n + 1
  end
end
print(("%d datasets in %s"):format(n, dir))

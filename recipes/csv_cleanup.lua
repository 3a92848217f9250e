-- A second recipe, to show how little a new one takes: a messy CSV in, a clean
-- CSV and a change log out, with a custom tool (country codes, answered on the
-- host) and a custom retry policy.
--   luagent run recipes/csv_cleanup.lua [--set input=my.csv]
local agent, sandbox, model, tools = luagent.agent, luagent.sandbox, luagent.model, luagent.tools
local cfg = luagent.config("csv_cleanup.yaml")

-- A custom tool: a plain table with a schema and a handler.
local CODES = {brazil = "BR", usa = "US", ["united states"] = "US", us = "US", china = "CN", ["czech republic"] = "CZ",
               czechia = "CZ", morocco = "MA", italy = "IT", italia = "IT", japan = "JP", portugal = "PT", pt = "PT",
               germany = "DE", deutschland = "DE", nigeria = "NG", sweden = "SE", france = "FR", spain = "ES"}
local country_code = {
  name = "country_code",
  description = "ISO 3166-1 alpha-2 codes for country names, as people write them (any language or case).",
  parameters = {type = "object", required = {"names"},
                properties = {names = {type = "array", items = {type = "string"}}}},
  handler = function(args)
    local out = {}
    for _, name in ipairs(args.names) do out[name] = CODES[name:lower():match("^%s*(.-)%s*$")] or "unknown" end
    return luagent.json.encode(out)
  end,
}

-- A custom retry policy: fewer, slower attempts, and a cut or garbled answer is retried too.
local patient = luagent.retry.exponential{attempts = 3, base = 2, max = 10,
  on = {"rate_limit", "server", "timeout", "network", "bad_response"}}

local llm = model.from_or_scripted(cfg.model, require("csv_cleanup_script"))

local input = cfg.input:match("^/") and cfg.input or luagent.recipe_dir .. "/" .. cfg.input
local box <close> = assert(sandbox.open{memory = cfg.sandbox.memory,
                                        manifest = {["input/customers.csv"] = sandbox.file(input)},
                                        save = {from = "output", to = luagent.run_dir("output")}})
local cleaner = agent.new{name = "CSV cleaner", instructions = cfg.instructions, model = llm, retry = patient,
  tools = {tools.run_python(box), tools.read_file(box), tools.write_file(box), country_code},
  max_turns = cfg.max_turns, outputs = cfg.outputs}

local result = cleaner:run(cfg.task)
local saved, not_saved = luagent.outputs.collect(box, "output", luagent.run_dir("output"), {required = cfg.outputs})
print(result.output)
if not saved then -- e.g. a full disk: say what could not be written, never crash on it
  print("The outputs could not be saved: " .. not_saved.message)
  return 1
end
for _, f in ipairs(saved.files) do print(("  %s (%d bytes) -> %s"):format(f.path, f.size, saved.dir)) end
if #saved.missing > 0 then print("MISSING: " .. table.concat(saved.missing, ", ")) return 1 end
return 0

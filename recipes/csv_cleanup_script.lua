-- csv_cleanup_script: the scripted driver of csv_cleanup (no model configured):
-- the tool calls a capable model makes, whose code really runs in the sandbox.
local model = require "luagent.model"

local LOOK = [=[
import pandas as pd
raw = pd.read_csv("input/customers.csv", dtype=str, keep_default_na=False)
print(raw.to_string(index=False))
print(sorted(raw.country.str.strip().unique()))
]=]

-- the country codes come from the previous tool result (the country_code tool)
local function clean_code(codes_json)
  return ([=[
import json, re
codes = json.loads(%q)
df = raw.copy()
changes = []
before = len(df)
df = df.drop_duplicates()
changes.append(f"dropped {before - len(df)} exact duplicate row(s)")
df["name"] = df.name.str.strip().str.title()
df["email"] = df.email.str.strip().str.lower()
bad_email = ~df.email.str.match(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$")
df["email_ok"] = ~bad_email
changes.append(f"lower-cased e-mails; {int(bad_email.sum())} invalid one(s) flagged: " + ", ".join(df.email[bad_email]))
df["country"] = df.country.str.strip().map(lambda c: codes.get(c, "unknown"))
changes.append("countries as ISO codes: " + ", ".join(sorted(set(df.country))))
def parse_date(s):
    for fmt in ("%%Y-%%m-%%d", "%%m/%%d/%%Y", "%%Y/%%m/%%d", "%%d.%%m.%%Y", "%%b %%d %%Y"):
        try:
            return pd.to_datetime(s.strip(), format=fmt).strftime("%%Y-%%m-%%d")
        except ValueError:
            pass
    return ""
dates = df.signup_date.map(parse_date)
unparsed = df.signup_date[dates == ""]
df["signup_date"] = dates
changes.append(f"dates as YYYY-MM-DD; {len(unparsed)} left empty for a person to check: " + ", ".join(unparsed))
spend = pd.to_numeric(df.spend.str.replace(",", "").str.strip(), errors="coerce")
changes.append(f"spend as numbers; {int(spend.isna().sum())} empty or unreadable value(s) left empty")
df["spend"] = spend
import os
os.makedirs("output", exist_ok=True)
df.to_csv("output/clean.csv", index=False)
log = ["# Changes to customers.csv", "", f"{before} rows in, {len(df)} rows out.", ""] + [f"- {c}" for c in changes]
open("output/changes.md", "w").write("\n".join(log) + "\n")
print("\n".join(log))
]=]):format(codes_json)
end

local function last_tool_text(messages)
  for i = #messages, 1, -1 do
    if messages[i].role == "tool" then return model.text_of(messages[i].content) end
  end
  return ""
end

return function()
  return model.scripted(function(request, n)
    if n == 1 then
      return {text = "Let me look at the file first.", tool_calls = {{name = "run_python", arguments = {code = LOOK}}}}
    end
    if n == 2 then
      local names = {}
      local list = last_tool_text(request.messages):match("%[(.-)%]%s*$") or ""
      for name in list:gmatch("'([^']+)'") do names[#names + 1] = name end
      return {text = "Country names vary; I'll ask for their codes.",
              tool_calls = {{name = "country_code", arguments = {names = names}}}}
    end
    if n == 3 then
      local code = clean_code(last_tool_text(request.messages))
      return {text = "Now the clean-up.", tool_calls = {{name = "run_python", arguments = {code = code}}}}
    end
    local counts = last_tool_text(request.messages):match("(%d+ rows in, %d+ rows out%.)") or ""
    return {text = "Done: output/clean.csv and output/changes.md. " .. counts}
  end, {name = "scripted-csv-cleaner"})
end

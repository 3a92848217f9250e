# A step of the scripted driver ({{name}}.script.yaml): it profiles every CSV
# file under input/ column by column, saves output/columns.csv and
# output/summary.md, and prints as its last line the two-sentence answer
# (the script's answer is "{last_line}"). Plain Python: change it freely.
import collections, csv, glob, os, statistics

def number(text):
    try:
        return float(text)
    except ValueError:
        return None

def profile(path, notes):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    name = os.path.relpath(path, "input")
    out = []
    for column in (rows[0].keys() if rows else []):
        present = [(r[column] or "").strip() for r in rows if (r[column] or "").strip() != ""]
        p = {"file": name, "column": column, "missing": len(rows) - len(present),
             "min": "", "mean": "", "max": "", "top": ""}
        nums = [number(v) for v in present]
        if present and None not in nums:
            med = statistics.median(nums)
            p.update(type="number", min=min(nums), mean=round(statistics.mean(nums), 3), max=max(nums))
            odd = [v for v in nums if med and abs(v) > 5 * abs(med)]
            if odd:
                listed = ", ".join(f"{v:g}" for v in odd)
                notes.append(f"{name} {column}: {len(odd)} value(s) over 5 times the median {med:g}: {listed}")
        else:
            p.update(type="text", top=collections.Counter(present).most_common(1)[0][0] if present else "")
        if p["missing"]:
            notes.append(f"{name} {column}: {p['missing']} missing value(s)")
        out.append(p)
    return rows, out

files = sorted(glob.glob("input/**/*.csv", recursive=True))
notes, table, total_rows = [], [], 0
for path in files:
    rows, columns = profile(path, notes)
    total_rows += len(rows)
    table += columns

keys = ["file", "column", "type", "missing", "min", "mean", "max", "top"]
os.makedirs("output", exist_ok=True)
with open("output/columns.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(keys)
    w.writerows([p[k] for k in keys] for p in table)
with open("output/summary.md", "w") as f:
    f.write(f"# {len(files)} file(s), {total_rows} rows, {len(table)} columns\n\n")
    f.write("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys) + "\n")
    f.write("".join("| " + " | ".join(str(p[k]) for k in keys) + " |\n" for p in table))
    f.write("\n## Worth a look\n\n" + ("\n".join("- " + n for n in notes) or "- nothing odd") + "\n")
print(open("output/summary.md").read())
odd = ("Worth a look: " + "; ".join(notes) + ".") if notes else "Nothing in it looks odd."
print(f"The input has {len(files)} CSV file(s) with {total_rows} rows and {len(table)} columns in all; "
      f"the profile is in output/columns.csv and output/summary.md. {odd}")

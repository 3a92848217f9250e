"""Prints one JSON line per column of a CSV: name, type, missing, min, mean, max, top."""
import csv
import json
import sys
from collections import Counter


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def profile(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for name in (rows[0].keys() if rows else []):
        present = [r[name] for r in rows if r[name] not in ("", None)]
        values = [number(v) for v in present]
        is_number = bool(present) and all(v is not None for v in values)
        out = {"column": name, "type": "number" if is_number else "text", "missing": len(rows) - len(present)}
        if is_number:
            out.update(min=min(values), mean=sum(values) / len(values), max=max(values))
        else:
            out["top"] = Counter(present).most_common(1)[0][0] if present else None
        print(json.dumps(out))


if __name__ == "__main__":
    profile(sys.argv[1])

-- energy_anomaly_steps: the Python a capable analyst runs on this task, step
-- by step, as the scripted driver's tool calls (used when no model is
-- configured). It is honest analysis: nothing in it knows the injected event;
-- it finds an anomaly in any hourly CSV with timestamp, energy_kwh and
-- outdoor_temp_c columns.
local steps = {}

steps.inspect = [=[
import pandas as pd, numpy as np
df = pd.read_csv("input/building_energy.csv")
print(df.shape, "columns:", list(df.columns))
print(df.head(3).to_string(index=False))
df["timestamp"] = pd.to_datetime(df["timestamp"])
df = df.sort_values("timestamp").drop_duplicates("timestamp").reset_index(drop=True)
step = df.timestamp.diff().median()
print("period:", df.timestamp.min(), "to", df.timestamp.max(), "| step:", step,
      "| missing values:", int(df[["energy_kwh", "outdoor_temp_c"]].isna().sum().sum()))
print(df[["energy_kwh", "outdoor_temp_c"]].describe().round(2).to_string())
]=]

steps.baseline = [=[
# Expected energy = a weekly profile (one level per hour of the week) plus
# heating and cooling degree-hours, separately for occupied hours. The balance
# temperatures are chosen by fit; the fit is repeated without outliers so an
# anomaly cannot shape its own baseline.
d = df.dropna(subset=["energy_kwh"]).copy()
d["outdoor_temp_c"] = d["outdoor_temp_c"].interpolate(limit_direction="both")
how = (d.timestamp.dt.dayofweek * 24 + d.timestamp.dt.hour).to_numpy()
occupied = ((d.timestamp.dt.dayofweek < 5) & d.timestamp.dt.hour.between(8, 17)).to_numpy()
temp, y = d.outdoor_temp_c.to_numpy(), d.energy_kwh.to_numpy()

def design(heat_base, cool_base):
    X = np.zeros((len(d), 172))
    X[np.arange(len(d)), how] = 1
    heat, cool = np.maximum(0, heat_base - temp), np.maximum(0, temp - cool_base)
    X[:, 168], X[:, 169], X[:, 170], X[:, 171] = heat, cool, heat * occupied, cool * occupied
    return X

def robust_fit(X):
    keep = np.ones(len(y), bool)
    for _ in range(4):
        coef, *_ = np.linalg.lstsq(X[keep], y[keep], rcond=None)
        resid = y - X @ coef
        center = np.median(resid[keep])
        scale = 1.4826 * np.median(np.abs(resid[keep] - center))
        keep = np.abs(resid - center) < 3.5 * scale
    return coef, resid, keep, scale

best = None
for heat_base in range(8, 19, 2):
    for cool_base in range(14, 27, 2):
        X = design(heat_base, cool_base)
        coef, resid, keep, scale = robust_fit(X)
        if best is None or scale < best[0]:
            best = (scale, heat_base, cool_base, X, coef, resid, keep)
scale, heat_base, cool_base, X, coef, resid, keep = best
d["expected_kwh"] = X @ coef
d["residual"] = d.energy_kwh - d.expected_kwh
center = np.median(d.residual[keep])
d["robust_z"] = (d.residual - center) / scale
print(f"baseline: weekly hour profile + degree-hours (heating below {heat_base} C, cooling above {cool_base} C)")
print(f"typical deviation on normal hours: {scale:.2f} kWh; hours left out of the fit as unusual: {int((~keep).sum())}")
]=]

steps.detect = [=[
# Unusual hours: |robust z| > 4. Hours less than 18 h apart belong to one
# event (an event that recurs every night is one event). Events are ranked by
# the energy they add (or remove).
flag = d.robust_z.abs() > 4
f = d[flag].copy()
events = pd.DataFrame(columns=["start", "end", "hours", "excess_kwh", "mean_excess_kwh", "peak_z"])
if len(f):
    f["event"] = (f.timestamp.diff() > pd.Timedelta(hours=18)).cumsum()
    events = f.groupby("event").agg(start=("timestamp", "min"), end=("timestamp", "max"),
                                    hours=("timestamp", "size"), excess_kwh=("residual", "sum"),
                                    mean_excess_kwh=("residual", "mean"),
                                    peak_z=("robust_z", lambda z: float(z.abs().max())))
    events = events[events.hours >= 2]
    events = events.loc[events.excess_kwh.abs().sort_values(ascending=False).index]
    events.insert(0, "event_id", range(1, len(events) + 1))
    f = f[f.event.isin(events.index)]
    f["event_id"] = f.event.map(events.event_id)
import os
os.makedirs("output", exist_ok=True)
cols = ["event_id", "timestamp", "energy_kwh", "expected_kwh", "residual", "robust_z"]
out = f[cols].rename(columns={"residual": "excess_kwh"}) if len(f) else pd.DataFrame(columns=cols)
out.sort_values(["event_id", "timestamp"]).round(2).to_csv("output/anomalies.csv", index=False)
print(f"{len(out)} unusual hours in {len(events)} event(s); saved output/anomalies.csv")
print(events.round(2).to_string(index=False) if len(events) else "no anomaly found")
]=]

steps.plot = [=[
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, (top, zoom) = plt.subplots(2, 1, figsize=(12, 7.5))
top.plot(d.timestamp, d.energy_kwh, lw=0.5, color="tab:blue", label="measured")
top.plot(d.timestamp, d.expected_kwh, lw=0.5, color="tab:orange", alpha=0.8, label="expected (baseline)")
for _, e in events.iterrows():
    top.axvspan(e.start, e.end, color="red", alpha=0.25 if e.event_id == 1 else 0.1)
top.set_title("Hourly energy use, with the detected anomaly shaded")
top.set_ylabel("kWh"); top.legend(loc="upper left")
if len(events):
    e = events.iloc[0]
    w = d[(d.timestamp >= e.start - pd.Timedelta(days=2)) & (d.timestamp <= e.end + pd.Timedelta(days=2))]
    zoom.plot(w.timestamp, w.energy_kwh, lw=1, color="tab:blue", label="measured")
    zoom.plot(w.timestamp, w.expected_kwh, lw=1, color="tab:orange", label="expected")
    hit = f[f.event_id == 1]
    zoom.scatter(hit.timestamp, hit.energy_kwh, s=12, color="red", zorder=3, label="unusual hours")
    zoom.axvspan(e.start, e.end, color="red", alpha=0.15)
    zoom.set_title(f"The anomaly: {e.start:%Y-%m-%d %H:%M} to {e.end:%Y-%m-%d %H:%M}")
else:
    zoom.plot(d.timestamp, d.residual, lw=0.5); zoom.set_title("Residuals (no anomaly found)")
zoom.set_ylabel("kWh"); zoom.legend(loc="upper left")
for ax in (top, zoom):
    ax.tick_params(axis="x", labelrotation=20)
fig.tight_layout()
fig.savefig("output/energy.png", dpi=110)
print("saved output/energy.png")
]=]

steps.report = [=[
import json
lines = ["# Energy anomaly report", "",
         f"Data: {len(d)} hourly readings from {d.timestamp.min():%Y-%m-%d} to {d.timestamp.max():%Y-%m-%d} "
         f"(mean {d.energy_kwh.mean():.1f} kWh, outdoor {d.outdoor_temp_c.min():.1f} to {d.outdoor_temp_c.max():.1f} C).", ""]
if len(events):
    e = events.iloc[0]
    expected = d[(d.timestamp >= e.start) & (d.timestamp <= e.end)].expected_kwh.sum()
    lines += ["## Finding", "",
              f"The main anomaly runs from **{e.start:%Y-%m-%d %H:%M}** to **{e.end:%Y-%m-%d %H:%M}** "
              f"({(e.end - e.start).total_seconds() / 3600 + 1:.0f} hours, {int(e.hours)} of them unusual). "
              f"Over that window the building used {e.excess_kwh:+.0f} kWh against its expected load "
              f"({100 * e.excess_kwh / expected:+.0f}%), {e.mean_excess_kwh:+.1f} kWh per unusual hour; "
              f"the largest deviation is {e.peak_z:.0f} times the typical one.", ""]
    night = f[f.event_id == 1].timestamp.dt.hour.isin(list(range(0, 7)) + list(range(19, 24))).mean()
    if night > 0.8:
        lines += ["Almost all the unusual hours are at night, when the building should be idle: "
                  "equipment (for example HVAC) left running out of hours is the likely cause.", ""]
    lines += ["## All events", "", "| event | start | end | unusual hours | excess kWh | peak z |", "|---|---|---|---|---|---|"]
    for _, r in events.iterrows():
        lines.append(f"| {r.event_id} | {r.start:%Y-%m-%d %H:%M} | {r.end:%Y-%m-%d %H:%M} | {int(r.hours)} | "
                     f"{r.excess_kwh:+.0f} | {r.peak_z:.1f} |")
else:
    lines += ["## Finding", "", "No hour deviates more than 4 typical deviations from the expected load: no anomaly found."]
lines += ["", "## Method", "",
          f"Expected load: least squares on a weekly hour-of-week profile plus heating (below {heat_base} C) and cooling "
          f"(above {cool_base} C) degree-hours, refitted without outliers. An hour is unusual when its residual is more "
          "than 4 robust standard deviations (1.4826 x MAD) from the median; unusual hours less than 18 h apart form "
          "one event. The unusual hours are in `anomalies.csv`.", "", "![energy](energy.png)", ""]
open("output/report.md", "w").write("\n".join(lines))
top_event = None
if len(events):
    e = events.iloc[0]
    top_event = {"start": f"{e.start:%Y-%m-%d %H:%M}", "end": f"{e.end:%Y-%m-%d %H:%M}",
                 "excess_kwh": round(float(e.excess_kwh)), "hours": int(e.hours), "events": len(events)}
print("saved output/report.md")
print("SUMMARY " + json.dumps(top_event))
]=]

return steps

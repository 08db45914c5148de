"""Fit the Advanced Write Cache's destage reordering to the study's given random-write figures.

    python calibration/demartek/calibrate_awc.py [--runtime S] [--workers 1]

Free parameter: ``cache.destage_window`` of the AWC drives (how many dirty extents the firmware
reorders over when destaging; the profile's 128 is an assumption). Target: the published sustained
gain of AWC on pure 4 KiB random writes, random_write_iops(512n+AWC) / random_write_iops(512n) =
7828 / 4591 (calibration/reference/demartek_15e900.csv, both given figures). The gain, not the
absolute AWC figure, is fitted: the baseline's absolute level is set by the drive mechanics (not a
cache parameter, and not fitted), and fitting the absolute figure would make the destage window
absorb the baseline's error. Everything else of the study is simulated with the fitted window and is
a prediction with respect to it (the 512e+AWC+TurboBoost random-write figure, OLTP and web server).

Each candidate is the study's own Iometer point (task_iometer: RAID 10 over 24 drives, QD = the
highest of the study, the compressed AWC preconditioning and ramp of the study file), run for
``--runtime`` seconds (default: the study's own Iometer runtime, so the fit is made on exactly the
points the study runs); the ratio's 95 % CI combines the two points' batch-means CIs. Writes awc_fit.md and
awc_fit.json next to this file.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

WINDOWS = [8, 12, 16, 24, 32, 48, 64, 128]


def _point(raw: dict, label: str, window: int | None) -> dict:
    from simulator.experiment import appstudy as A

    raw = json.loads(json.dumps(raw))
    if window is not None:
        raw["awc"] = {**raw.get("awc", {}), "destage_window": window}
    qd = max(raw["iometer"]["qd"])
    r = A.task_iometer(raw, label, "write", qd)
    return {"window": window, "iops": r["iops"], "iops_ci": r["iops_ci"], "steady": r["steady"], "nv_fill": r["nv_fill"], "ios": r["ios"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtime", type=float, default=None, help="measured seconds per point (default: the study's iometer.runtime)")
    ap.add_argument("--workers", type=int, default=1)
    a = ap.parse_args()
    from simulator.experiment import appstudy as A

    spec = A.load_study(ROOT / "experiments" / "exos15e900_cache.yaml")
    raw = spec.model_dump(mode="json")
    if a.runtime is None:
        a.runtime = float(raw["iometer"]["runtime"])
    raw["iometer"]["runtime"] = a.runtime
    raw["iometer"]["mixes"] = {"write": 0}
    pub = A.published(spec, ROOT / "experiments")["random_write_iops"]
    target = pub["512n+AWC"] / pub["512n"]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(a.workers) as pool:
        base_f = pool.submit(_point, raw, "512n", None)
        futs = [pool.submit(_point, raw, "512n+AWC", w) for w in WINDOWS]
        base = base_f.result()
        rows = [f.result() for f in futs]
    for r in rows:
        r["gain"] = r["iops"] / base["iops"]
        rel = math.hypot(r["iops_ci"] / r["iops"], base["iops_ci"] / base["iops"])
        r["gain_ci"] = r["gain"] * rel
        r["err"] = r["gain"] / target - 1.0
    best = min(rows, key=lambda r: abs(r["err"]))
    doc = {"target_gain": target, "published": pub, "baseline": base, "candidates": rows, "fitted_window": best["window"],
           "runtime_s": a.runtime, "wall_s": time.perf_counter() - t0, "date": time.strftime("%Y-%m-%d")}
    (HERE / "awc_fit.json").write_text(json.dumps(doc, indent=1, default=float) + "\n")
    md = ["# AWC destage window fitted to the published random-write gain", "",
          f"`python calibration/demartek/calibrate_awc.py --runtime {a.runtime:g}` on {doc['date']}, "
          f"{doc['wall_s']:.0f} s wall. Target: published AWC gain on 4 KiB random writes at the highest QD, "
          f"{pub['512n+AWC']:.0f} / {pub['512n']:.0f} = {target:.3f} (given figures). Baseline 512n simulated: "
          f"{base['iops']:.0f} ± {base['iops_ci']:.0f} IOPS ({base['ios']} IOs). Each point: {a.runtime:g} s measured after the "
          f"study's {raw['iometer']['write_ramp'] or raw['iometer']['ramp']:g} s ramp, with its compressed AWC preconditioning "
          f"(non-volatile cache {int(raw['iometer']['precondition']['nv_cache']) // 2**20} MiB per drive), QD {max(raw['iometer']['qd'])}, "
          "the study's seed: the study's own random-write points; ± = 95 % batch-means CI.", "",
          "| destage_window | AWC IOPS | gain | gain vs published | AWC fill at end | steady |", "|---|---|---|---|---|---|"]
    for r in rows:
        st = all(v["steady"] is not False for v in r["steady"].values())
        md.append(f"| {r['window']}{' (fitted)' if r is best else ''} | {r['iops']:.0f} ± {r['iops_ci']:.0f} | "
                  f"{r['gain']:.3f} ± {r['gain_ci']:.3f} | {100 * r['err']:+.1f}% | {r['nv_fill']:.2f} | {'yes' if st else 'no'} |")
    md += ["", f"Fitted: destage_window = {best['window']} (set in experiments/exos15e900_cache.yaml for both AWC "
           "configurations). Fitted to this one gain only; every other figure of the study is a prediction with "
           "respect to it.", ""]
    (HERE / "awc_fit.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()

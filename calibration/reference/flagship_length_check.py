#!/usr/bin/env python3
"""Shortened flagship runs vs the full-length one (issue 14, item 1): writes flagship_length_check.csv and prints the
per-setting counts and per-point tables for flagship_length_check.md.

    python calibration/reference/flagship_length_check.py --rev REV RUNTIME_S:STATE_SCALE:OUT_DIR ...

Each OUT_DIR is ``simrun run experiments/mach2_vs_single.yaml --set workload.global.runtime=RUNTIME_S
--set system.cluster.params.state_scale=STATE_SCALE --out OUT_DIR``; the reference is the committed full-length run
(flagship_900s_ci.csv). Only croit's measured random points (QD 1, 4, 16, 64, 256) are compared. No simulation here.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from simulator.calibration.length import compare, load_summary, load_table, render, write_checks

HERE = Path(__file__).resolve().parent
MEASURED_QDS = (1, 4, 16, 64, 256)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("settings", nargs="+", help="RUNTIME_S:STATE_SCALE:OUT_DIR")
    ap.add_argument("--rev", required=True, help="the main commit the shortened runs were made on")
    ap.add_argument("--csv", type=Path, default=HERE / "flagship_length_check.csv")
    a = ap.parse_args()
    full = load_table(HERE / "flagship_900s_ci.csv")
    pts = sorted({k for k, _ in full if k[0] == "random" and k[1] in MEASURED_QDS})
    runs = []
    for s in a.settings:
        rt, sc, out = s.split(":", 2)
        runs.append((float(rt), float(sc), load_summary(Path(out))))
    write_checks(a.csv, runs, full, points=pts, header=[
        "Shortened flagship runs (experiments/mach2_vs_single.yaml, clusters/croit_mach2_fitted, seed 1, compiled core) vs the",
        f"full-length run (flagship_900s_ci.csv: 900 s x state_scale 1, main 9123152); shortened runs on main {a.rev}.",
        "Derived by calibration/reference/flagship_length_check.py from each run's summary.csv; croit's measured random points only.",
        "verdict_full: |short - full| <= the full run's 95 % half-width (floor 0.2 %); verdict_difference: <= hypot of both half-widths.",
    ])
    for rt, sc, short in runs:
        for rule in ("full", "difference"):
            cs = compare(full, short, rule=rule, points=pts)
            n_ok = sum(c.ok for c in cs)
            iops = [c for c in cs if c.metric == "iops"]
            print(f"{rt:g} s x {sc:g}, rule {rule}: {n_ok}/{len(cs)} point-metrics agree, IOPS {sum(c.ok for c in iops)}/{len(iops)}")
        print("\n".join(render(compare(full, short, rule="full", points=pts), f"{rt:g} s x state_scale {sc:g} (rule full)")))
        print()


if __name__ == "__main__":
    main()

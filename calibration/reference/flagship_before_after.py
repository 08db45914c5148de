#!/usr/bin/env python3
"""Before/after table of the flagship (`simrun experiments/mach2_vs_single.yaml`) around the issue-10 HDD work.

Reads the ``comparison.csv`` of two runs of the flagship (simulated vs croit's measured figures, as the
experiment reports them), keeps the 4 KiB random points that croit measured (QD 1, 4, 16, 64, 256 per pool and
direction) and the metrics IOPS, mean, p50 and p99 latency, and writes one derived CSV with both runs' simulated
values and errors. Prints the markdown table for docs/validation.md.

    python calibration/reference/flagship_before_after.py BEFORE_OUT AFTER_OUT \
        --before-rev REV --after-rev REV [--csv calibration/reference/flagship_hdd_before_after.csv]

No simulation here: the runs are made with ``simrun run experiments/mach2_vs_single.yaml --out DIR`` in a checkout
of each revision.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

METRICS = ("iops", "lat_mean_ms", "p50_ms", "p99_ms")


def _read(out: Path) -> dict[tuple[str, str, int, str], tuple[float, float | None]]:
    """(pool, rw, qd, metric) -> (measured, simulated) for croit's measured random points."""
    rows: dict[tuple[str, str, int, str], tuple[float, float | None]] = {}
    with (out / "comparison.csv").open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r.get("mode") != "random" or not r.get("published"):
                continue
            d, _, m = r["metric"].partition(".")
            if m not in METRICS or d not in ("read", "write"):
                continue
            sim = float(r["simulated"]) if r.get("simulated") not in (None, "") else None
            rows[(r["pool"], r["rw"], int(r["qd"]), m)] = (float(r["published"]), sim)
    return rows


def _steady(out: Path) -> dict[tuple[str, str, int], str]:
    """(pool, rw, qd) -> MSER verdict of the run's direction ('1' steady, '0' not, '' not reported by that revision)."""
    p = out / "summary.csv"
    res: dict[tuple[str, str, int], str] = {}
    if not p.is_file():
        return res
    with p.open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r.get("mode") != "random":
                continue
            d = "read" if r["rw"] == "randread" else "write"
            v = r.get(f"{d}.steady", "")
            res[(r["pool"], r["rw"], int(r["qd"]))] = "" if v in ("", None) else str(int(float(v)))
    return res


def _err(sim: float | None, meas: float) -> float | None:
    return None if sim is None or not meas else 100.0 * (sim / meas - 1.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--before-rev", required=True)
    ap.add_argument("--after-rev", required=True)
    ap.add_argument("--csv", type=Path, default=Path(__file__).with_name("flagship_hdd_before_after.csv"))
    a = ap.parse_args()
    b, af = _read(a.before), _read(a.after)
    sb, sa = _steady(a.before), _steady(a.after)
    keys = sorted({k[:3] for k in af} | {k[:3] for k in b}, key=lambda k: (k[0], k[1], k[2]))
    out_rows = []
    for pool, rw, qd in keys:
        for m in METRICS:
            meas_b, sim_b = b.get((pool, rw, qd, m), (None, None))
            meas_a, sim_a = af.get((pool, rw, qd, m), (None, None))
            meas = meas_a if meas_a is not None else meas_b
            if meas is None:
                continue
            out_rows.append({"pool": pool, "rw": rw, "qd": qd, "metric": m, "measured": meas,
                             "before": sim_b, "before_err_pct": _err(sim_b, meas),
                             "after": sim_a, "after_err_pct": _err(sim_a, meas),
                             "before_steady": sb.get((pool, rw, qd), ""), "after_steady": sa.get((pool, rw, qd), "")})
    with a.csv.open("w", newline="", encoding="utf-8") as f:
        f.write(f"# flagship experiments/mach2_vs_single.yaml (defaults: 90 s per point, state_scale 0.1, seed 1); "
                f"before = {a.before_rev}, after = {a.after_rev}; measured = croit (calibration/croit-mach2/measured.csv, "
                f"900 s runs); derived by calibration/reference/flagship_before_after.py from each run's comparison.csv\n")
        w = csv.DictWriter(f, fieldnames=list(out_rows[0]))
        w.writeheader()
        for r in out_rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else ("" if v is None else v)) for k, v in r.items()})
    from simulator.calibration.validation import hdd_flagship_table

    print("\n".join(hdd_flagship_table(a.csv)))


if __name__ == "__main__":
    main()

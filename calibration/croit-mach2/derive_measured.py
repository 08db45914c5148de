"""Derive the committed table of measured figures from croit's raw fio JSON.

    python calibration/croit-mach2/derive_measured.py [../shared/data/croit-mach2]

Source: public repository croit/benchmarks, folder mach2-disks/results, commit
942125b41e897affa2976ce0bd68c0fbedc47a44 (Ceph 14.2.5, fio 3.12 rbd engine, 4 KiB, numjobs 1,
900 s per run; see ../shared/data/croit-mach2/PROVENANCE.md). The raw JSON is not copied into this
repository; this script writes measured.csv (one row per file: its pass (2 = rerun after the sweep), IOPS, bandwidth, mean latency and
fio's full completion-latency percentile list) with the source named, read through the same fio
reader the simulator uses for every measured run.
"""

from __future__ import annotations

import csv
import re
import sys
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from simulator.fio.reader import read_fio  # noqa: E402

PCTS = (1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99)
NAME = re.compile(r"^(read|write)-(mach2|normal)-(\d+)\.json$")


def fraction_below(lat, ns: float) -> float:
    """Fraction of IOs faster than ``ns`` from the percentile table (linear interpolation)."""
    import numpy as np

    ps, vs = lat.table()
    if ns <= vs[0]:
        return ps[0] / 100 * (ns / vs[0])
    if ns >= vs[-1]:
        return ps[-1] / 100
    return float(np.interp(ns, vs, ps)) / 100


def main(src: Path) -> Path:
    rows = []
    for f in sorted(src.glob("*.json")):
        m = NAME.match(f.name)
        if not m:
            continue
        rw, pool, qd = m.group(1), m.group(2), int(m.group(3))
        run = read_fio(f)
        job = run.merged()
        d = job.read if rw == "read" else job.write
        row = {"pool": pool, "rw": "rand" + rw, "qd": qd, "pass": 0, "fio_time": run.time.strip(), "runtime_s": round(d.runtime_s, 3),
               "file": f.name}
        pre = d.name
        row[f"{pre}.total_ios"] = d.total_ios
        row[f"{pre}.iops"] = round(d.iops, 3)
        row[f"{pre}.bw_MBps"] = round(d.bw_bytes / 1e6, 4)
        row[f"{pre}.lat_mean_ms"] = round(d.lat.mean_ns / 1e6, 4)
        row[f"{pre}.clat_mean_ms"] = round(d.clat.mean_ns / 1e6, 4)
        for p in PCTS:
            row[f"{pre}.p{p:g}_ms"] = round(d.clat.percentile_ns(p) / 1e6, 4)
        row[f"{pre}.frac_below_2ms"] = round(fraction_below(d.clat, 2e6), 3)
        rows.append(row)
    # croit's loop ran QD outermost overnight; a run that started after a run of a higher QD was repeated the next
    # morning (PROVENANCE.md: read-normal-4 is such a rerun, which replaced the night's file): pass 2, else 1
    started = {id(r): datetime.strptime(" ".join(r["fio_time"].split()), "%a %b %d %H:%M:%S %Y") for r in rows}
    for r in rows:
        later = any(o["qd"] > r["qd"] and started[id(o)] < started[id(r)] for o in rows)
        r["pass"] = 2 if later else 1
    order = {"mach2": 0, "normal": 1}
    rows.sort(key=lambda r: (r["qd"], order[r["pool"]], r["rw"]))
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    out = HERE / "measured.csv"
    with out.open("w", newline="") as fh:
        fh.write("# croit/benchmarks mach2-disks/results @942125b4 (fio 3.12, rbd, 4k, QD per row, 900 s); derived by derive_measured.py\n")
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    return out


if __name__ == "__main__":
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "data" / "croit-mach2"
    print(main(src))

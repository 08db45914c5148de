#!/usr/bin/env python3
"""Which threads carry the lab's CPU per IO, and how much of it no IO waits for (docs/ceph-model.md, Mechanism 4).

    python3 calibration/ceph-lab/threads.py [--data calibration/ceph-lab/data/background]

Reads runs.csv (per run: CPU µs per IO by OSD thread role, from /proc/<pid>/task/*/stat; lab.py derive) and
idle.csv (the daemons' CPU without client IO) of a campaign with per-thread counters (background.yaml), and
writes threads.csv: per (rw, QD) the mean over runs of CPU µs per IO by role, the OSDs' and fio's totals, and
the off-path share = CPU of threads no IO waits for (op history, timers, mempool, heartbeats: role ``other``
and ``bstore_other``) over all CPU per IO (OSDs + fio); ``off_path_share_hi`` also counts the aio completion
thread of writes (its deferred-apply completions are off the path; its WAL completions are not). Also the
kv_sync thread's CPU per write against txcs per kv commit (least squares: per write = 3 (K / txcs + k)).
"""

from __future__ import annotations

import argparse
import csv
import statistics as st
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROLES = ("op_workers", "messenger", "kv_sync", "kv_final", "aio", "rocksdb", "finisher", "bstore_other", "other")


def _f(x: str | None) -> float | None:
    try:
        return float(x) if x not in (None, "") else None
    except ValueError:
        return None


def _rows(p: Path) -> list[dict[str, str]]:
    with p.open(newline="") as f:
        return list(csv.DictReader(ln for ln in f if not ln.startswith("#")))


def analyse(data: Path) -> tuple[list[dict], dict[str, float]]:
    runs = [r for r in _rows(data / "runs.csv") if r.get("cpu_osd_op_workers_us_per_io")]
    groups: dict[tuple[str, int], list[dict[str, str]]] = {}
    for r in runs:
        groups.setdefault((r["rw"], int(r["qd"])), []).append(r)
    out = []
    for (rw, qd), rs in sorted(groups.items()):
        row: dict[str, object] = {"rw": rw, "qd": qd, "n": len(rs)}

        def mean(k: str, rs=rs) -> float:
            v = [_f(r.get(k)) or 0.0 for r in rs]
            return st.mean(v)

        row["iops"] = mean("iops")
        row["loadavg_1m"] = mean("loadavg_1m_before")
        for role in ROLES:
            row[f"{role}_us"] = mean(f"cpu_osd_{role}_us_per_io")
        row["osd_us"] = mean("cpu_osd_us_per_io")
        row["fio_us"] = mean("cpu_fio_us_per_io")
        tot = row["osd_us"] + row["fio_us"]
        off = row["other_us"] + row["bstore_other_us"] + row["rocksdb_us"]
        row["off_path_share"] = off / tot
        row["off_path_share_hi"] = (off + (row["aio_us"] if "write" in rw else 0.0)) / tot
        shares = [((_f(r.get("cpu_osd_other_us_per_io")) or 0) + (_f(r.get("cpu_osd_bstore_other_us_per_io")) or 0)
                   + (_f(r.get("cpu_osd_rocksdb_us_per_io")) or 0))
                  / ((_f(r["cpu_osd_us_per_io"]) or 0) + (_f(r["cpu_fio_us_per_io"]) or 0)) for r in rs]
        row["off_path_share_min"], row["off_path_share_max"] = min(shares), max(shares)
        row["txc_per_kv_commit"] = mean("txc_per_kv_commit") if "write" in rw else None
        out.append(row)
    # kv_sync thread CPU per write = 3 (K / txcs_per_commit + k): least squares over the write runs
    xs, ys = [], []
    for r in runs:
        if "write" in r["rw"] and _f(r.get("txc_per_kv_commit")):
            xs.append(1.0 / float(r["txc_per_kv_commit"]))
            ys.append(float(r["cpu_osd_kv_sync_us_per_io"]) / 3.0)
    fit: dict[str, float] = {}
    if len(xs) >= 3:
        mx, my = st.mean(xs), st.mean(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        k_cycle = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
        fit = {"kv_sync_us_per_cycle": k_cycle, "kv_sync_us_per_txc": my - k_cycle * mx, "runs": len(xs)}
    return out, fit


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=HERE / "data" / "background")
    a = ap.parse_args(argv)
    rows, fit = analyse(a.data)
    idle = _rows(a.data / "idle.csv") if (a.data / "idle.csv").is_file() else []
    cols = list(rows[0])
    with (a.data / "threads.csv").open("w", newline="") as f:
        f.write("# CPU us per IO by OSD thread role (mean over runs; threads.py); off_path_share = (other + bstore_other"
                " + rocksdb) / (OSDs + fio)\n")
        if fit:
            f.write(f"# kv_sync thread per write and OSD = K / (txcs per commit) + k over {fit['runs']} write runs: "
                    f"K = {fit['kv_sync_us_per_cycle']:.0f} us per commit cycle, k = {fit['kv_sync_us_per_txc']:.0f} us per txc\n")
        if idle:
            cores = [float(r["cpu_osd_cores"]) for r in idle]
            f.write(f"# idle windows ({len(idle)}): the three OSDs used {min(cores):.4f}-{max(cores):.4f} cores without client IO\n")
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()})
    for r in rows:
        print(f"{r['rw']:9} QD{r['qd']:<3} n={r['n']} IOPS {r['iops']:7.0f}  OSD {r['osd_us']:6.0f} us (op {r['op_workers_us']:.0f}, "
              f"msgr {r['messenger_us']:.0f}, kv_sync {r['kv_sync_us']:.0f}, kv_final {r['kv_final_us']:.0f}, aio {r['aio_us']:.0f}, "
              f"other {r['other_us'] + r['bstore_other_us']:.0f})  fio {r['fio_us']:.0f}  off-path {100 * r['off_path_share']:.1f} % "
              f"({100 * r['off_path_share_min']:.1f}-{100 * r['off_path_share_max']:.1f}; with aio {100 * r['off_path_share_hi']:.1f} %)")
    if fit:
        print(f"kv_sync: K = {fit['kv_sync_us_per_cycle']:.0f} us per cycle, k = {fit['kv_sync_us_per_txc']:.0f} us per txc")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

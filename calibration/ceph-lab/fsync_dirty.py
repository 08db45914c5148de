#!/usr/bin/env python3
"""Does an fsync on this VM's ext4 cost more with more dirty data? (docs/ceph-model.md, the lab's commit path)

    python3 calibration/ceph-lab/fsync_dirty.py [--dir /tmp] [--runtime 10] [--repeats 3] [--out data/device/fsync_vs_dirty_ext4.csv]

A rival explanation of the lab's kv commit latency growing with QD (0.86 / 1.30 / 1.80 ms at QD 1 / 4 / 16)
is that the commit's fsync costs more when more data was written since the last one (2.7 txcs per commit at
QD16). This measures it directly: fio (ioengine sync, one job) overwrites a preallocated 256 MiB file on the
same ext4 file system as the lab's loop files (the root fs on the virtio disk), bs = 4, 16 or 32 KiB, and
fsyncs after every write (fsync=1), so each fsync finds exactly bs bytes dirty (buffered) or none in the page
cache but the same write done (direct=1, as the lab's loop devices do: only the journal/metadata and the
disk's cache flush remain). fio's json+ gives the fsync latencies (the "sync" section) apart from the writes.
Repeats interleave the configurations; the load average before and after each run is recorded (other jobs
may share the VM). Writes the derived table (no raw JSON) to ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics as st
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BS_KIB = (4, 16, 32)
MODES = ("buffered", "direct")
COLUMNS = ("level", "repeat", "mode", "bs_kib", "dirty_kib", "n_runs", "fsyncs", "fsync_mean_ms", "fsync_mean_ms_sd", "fsync_p50_ms",
           "fsync_p99_ms", "write_mean_ms", "loadavg_1m_before", "loadavg_1m_after", "started_utc")


def _loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def fio_run(path: Path, mode: str, bs_kib: int, runtime: int) -> dict:
    cmd = ["fio", "--name=fsync", f"--filename={path}", "--ioengine=sync", "--rw=write", f"--bs={bs_kib}k",
           "--size=256m", "--overwrite=1", "--fsync=1", f"--direct={int(mode == 'direct')}", "--time_based",
           f"--runtime={runtime}", "--output-format=json+"]
    la0 = _loadavg()
    p = subprocess.run(cmd, capture_output=True, text=True)
    la1 = _loadavg()
    if p.returncode:
        raise SystemExit(f"fio failed ({p.returncode}): {p.stderr.strip()[-400:]}")
    job = json.loads(p.stdout[p.stdout.find("{"):])["jobs"][0]
    sync = job["sync"]["lat_ns"]
    pct = sync.get("percentile", {})
    return {"mode": mode, "bs_kib": bs_kib, "fsyncs": sync["N"], "fsync_mean_ms": sync["mean"] / 1e6,
            "fsync_p50_ms": pct.get("50.000000", float("nan")) / 1e6, "fsync_p99_ms": pct.get("99.000000", float("nan")) / 1e6,
            "write_mean_ms": job["write"]["lat_ns"]["mean"] / 1e6, "la0": la0, "la1": la1}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp"), help="directory on the file system to test (default /tmp)")
    ap.add_argument("--runtime", type=int, default=10, help="seconds per run (default 10)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per configuration, interleaved (default 3)")
    ap.add_argument("--out", type=Path, default=HERE / "data" / "device" / "fsync_vs_dirty_ext4.csv")
    a = ap.parse_args(argv)
    if not a.dir.is_dir():
        print(f"error: {a.dir} is not a directory")
        return 2
    if subprocess.run(["which", "fio"], capture_output=True).returncode:
        print("error: fio is not installed (apt-get install fio)")
        return 2
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    runs = []
    with tempfile.TemporaryDirectory(dir=a.dir, prefix="fsync_dirty.") as td:
        path = Path(td) / "f.dat"
        for rep in range(a.repeats):
            for mode in MODES:
                for bs in BS_KIB:
                    r = fio_run(path, mode, bs, a.runtime)
                    r["repeat"] = rep
                    runs.append(r)
                    print(f"[{rep}] {mode:8s} {bs:2d} KiB: fsync mean {r['fsync_mean_ms']:.3f} ms p50 {r['fsync_p50_ms']:.3f} "
                          f"p99 {r['fsync_p99_ms']:.3f} ({r['fsyncs']} fsyncs), load {r['la0']:.1f}->{r['la1']:.1f}", flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with a.out.open("w", newline="") as f:
        f.write(f"# fsync latency vs dirty data per fsync on ext4 (root fs, virtio disk {os.uname().release}); "
                f"measured by calibration/ceph-lab/fsync_dirty.py, fio ioengine=sync rw=write fsync=1 overwrite=1 "
                f"size=256m runtime={a.runtime}s x {a.repeats} interleaved repeats; other jobs shared the VM (load average columns)\n")
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in runs:  # every run: the spread between repeats is the finding's bound
            w.writerow({
                "level": "run", "repeat": r["repeat"], "mode": r["mode"], "bs_kib": r["bs_kib"],
                "dirty_kib": r["bs_kib"] if r["mode"] == "buffered" else 0, "n_runs": 1, "fsyncs": r["fsyncs"],
                "fsync_mean_ms": f"{r['fsync_mean_ms']:.4g}", "fsync_p50_ms": f"{r['fsync_p50_ms']:.4g}",
                "fsync_p99_ms": f"{r['fsync_p99_ms']:.4g}", "write_mean_ms": f"{r['write_mean_ms']:.4g}",
                "loadavg_1m_before": f"{r['la0']:.2f}", "loadavg_1m_after": f"{r['la1']:.2f}", "started_utc": started,
            })
        for mode in MODES:
            for bs in BS_KIB:
                rs = [r for r in runs if r["mode"] == mode and r["bs_kib"] == bs]
                means = [r["fsync_mean_ms"] for r in rs]
                w.writerow({
                    "level": "mean", "repeat": "", "mode": mode, "bs_kib": bs, "dirty_kib": bs if mode == "buffered" else 0, "n_runs": len(rs),
                    "fsyncs": sum(r["fsyncs"] for r in rs), "fsync_mean_ms": f"{st.mean(means):.4g}",
                    "fsync_mean_ms_sd": f"{st.stdev(means):.3g}" if len(means) > 1 else "",
                    "fsync_p50_ms": f"{st.median(r['fsync_p50_ms'] for r in rs):.4g}",  # median over runs
                    "fsync_p99_ms": f"{st.median(r['fsync_p99_ms'] for r in rs):.4g}",
                    "write_mean_ms": f"{st.mean(r['write_mean_ms'] for r in rs):.4g}",
                    "loadavg_1m_before": f"{st.mean(r['la0'] for r in rs):.2f}",
                    "loadavg_1m_after": f"{st.mean(r['la1'] for r in rs):.2f}", "started_utc": started,
                })
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

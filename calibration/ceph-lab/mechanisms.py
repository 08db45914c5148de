#!/usr/bin/env python3
"""Mechanism tables from the lab's committed data (no cluster, no simulator needed).

    python calibration/ceph-lab/mechanisms.py [--data calibration/ceph-lab/data]

Reads: for every read run, the BlueStore buffer-cache hit share (perf counters) beside the share that pure
offset replay predicts: with fio's randrepeat=1 every run of a sequence starts the same offset sequence, and
fio's random map visits each block once per run, so a read run's first N_prev offsets were read by the
previous read run (N_prev = its IO count) and the first W offsets were since overwritten by the write runs
in between (buffered_write=false drops them from the cache): replay share = max(0, N_prev - W) / N (capped
by the data cache's capacity, not binding here). Without replay (randrepeat=0) or after an OSD restart
the prediction is 0.
Writes: deferred share, txcs per kv_sync commit (group commit), kv commit latency, time a committed
deferred write waits before its in-place write is submitted (state_deferred_queued_lat), op queue wait.
Writes data/mechanisms.csv.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _f(x: str | None) -> float | None:
    try:
        return float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=HERE / "data")
    a = ap.parse_args(argv)
    rows = list(csv.DictReader((a.data / "runs.csv").open()))
    by_seq: dict[tuple[str, str], list[dict[str, str]]] = {}
    for r in rows:
        by_seq.setdefault((r["sequence"], r["repeat"]), []).append(r)   # one fresh cluster each
    out = []
    for _, rs in sorted(by_seq.items()):
        rs.sort(key=lambda r: r["id"])
        order = sorted(rs, key=lambda r: (int(r["qd"]), 0 if r["rw"] == "randread" else 1))
        prev_reads = 0.0
        writes_since = 0.0
        for r in order:
            seq = r["sequence"]
            ios = _f(r["ios"]) or 0.0
            replay = seq not in ("norepeat", "cold") and int(r.get("randrepeat") or 1) == 1
            row = {"id": r["id"], "sequence": seq, "repeat": r["repeat"], "rw": r["rw"], "qd": r["qd"], "ios": ios,
                   "iops": _f(r["iops"]), "p50_ms": _f(r["p50_ms"]), "lat_mean_ms": _f(r["lat_mean_ms"]),
                   "loadavg_1m": _f(r["loadavg_1m_before"])}
            if r["rw"] == "randread":
                pred = max(0.0, min(prev_reads, ios) - writes_since) / ios if (replay and ios) else 0.0
                row.update({"hit_share_counter": _f(r["cache_hit_share"]), "hit_share_replay": pred,
                            "data_cache_MiB": (_f(r.get("data_cache_bytes_mean")) or 0) / 2**20})
                prev_reads = ios
                writes_since = 0.0
            else:
                writes_since = max(writes_since, ios)
                row.update({"deferred_share": _f(r["deferred_share"]), "txc_per_kv_commit": _f(r["txc_per_kv_commit"]),
                            "kv_commit_ms": _f(r["kv_commit_mean_ms"]),
                            "op_queue_wait_ms": _f(r["op_queue_wait_mean_ms"]),
                            "throttle_deferred_waits": _f(r["throttle_deferred_wait_count"])})
            out.append(row)
    cols = list(dict.fromkeys(k for r in out for k in r))
    with (a.data / "mechanisms.csv").open("w", newline="") as f:
        f.write("# per run: cache hit share (counters) vs offset-replay arithmetic; write-path counters (mechanisms.py)\n")
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in out:
            w.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()})
    for r in out:
        if r["rw"] == "randread":
            print(f"{r['sequence']:10} r{r['repeat']} QD{r['qd']:>2} read  hit {r['hit_share_counter']:.3f} "
                  f"replay {r['hit_share_replay']:.3f}  p50 {r['p50_ms']:.3f} mean {r['lat_mean_ms']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

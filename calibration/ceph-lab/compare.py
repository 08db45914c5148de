#!/usr/bin/env python3
"""Model vs lab: run the lab's experiments on the model and join them with the measured points.

    python calibration/ceph-lab/compare.py [--sim-dir DIR] [--runtime S] [--profile clusters/ceph_lab_fitted] [--tag T]

Runs experiment.yaml (croit and norepeat sequences), experiment_smallcache.yaml and experiment_cold.yaml (fresh
cluster per run)
unless --sim-dir holds their outputs, then writes
  data/prediction.csv  per (variant, rw, qd): measured mean, sd and range over repeats, simulated, error, and
                       whether the point was fitted (croit QD1) or predicted, and whether the measured spread
                       is below the acceptance bound (IOPS 25 %, p50/p99 35 %);
  data/counters.csv    per point: measured perf counters (cache hit share, deferred share, kv commit latency,
                       txcs per kv commit, op queue wait, CPU per IO) beside the simulator's own statistics.
With --tag T the tables are prediction_T.csv / counters_T.csv (e.g. --profile clusters/ceph_lab_batching_fitted
--tag batching: the model with the lab's CPU-batching and stall mechanisms).
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import commit_path  # noqa: E402
import labparse  # noqa: E402

BOUNDS = {"iops": 0.25, "p50_ms": 0.35, "p99_ms": 0.35}
FITTED = {("croit", "randread", 1), ("croit", "randwrite", 1)}


def _read_csv(p: Path) -> list[dict[str, str]]:
    with p.open(newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _f(x: Any) -> float | None:
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def run_sim(exp: Path, out: Path, profile: str | None, runtime: float | None) -> None:
    cmd = [sys.executable, "-m", "simulator.cli", "run", str(exp), "--out", str(out)]
    if profile:
        cmd += ["--set", f"system.cluster.profile={profile}"]
    if runtime:
        cmd += ["--set", f"workload.global.runtime={runtime}s"]
    subprocess.run(cmd, check=True, cwd=ROOT)


def _cpu_per_io(cl: dict[str, Any], iops: float | None) -> float | None:
    hosts = cl.get("hosts") or {}
    if not iops or not hosts:
        return None
    busy = sum(h.get("cpu_utilisation", 0.0) * h.get("cpu_servers", 0) for h in hosts.values())
    return 1e6 * busy / iops


def sim_points(sim_dir: Path, variant_default: str | None = None) -> dict[tuple[str, str, int], dict[str, Any]]:
    """(variant, rw, qd) -> simulated figures and statistics of one `simrun run` output directory."""
    out = {}
    for row in _read_csv(sim_dir / "summary.csv"):
        variant = row.get("variant") or variant_default
        rw, qd = row["rw"], int(float(row["qd"]))
        d = "read" if "read" in rw else "write"
        run = json.loads((sim_dir / "runs" / f"p{int(row['point']):03d}_r00.json").read_text())
        cl = run["sim"]["cluster"]
        bs = [o["bluestore"] for o in cl["osds"]]
        n_def = sum(b.get("deferred_ops", 0) for b in bs)
        n_dir = sum(b.get("direct_writes", 0) for b in bs)
        batches = sum(b.get("kv_batches", 0) for b in bs)
        out[(variant, rw, qd)] = {
            "iops": _f(row[f"{d}.iops"]), "p50_ms": _f(row[f"{d}.p50_ms"]), "p99_ms": _f(row[f"{d}.p99_ms"]),
            # weighted by each OSD's client reads (the counters sum hit and miss bytes over the OSDs)
            "cache_hit_share": (sum(b.get("cache_hit_ratio", 0.0) * o["client_ops"].get("read", 0)
                                    for b, o in zip(bs, cl["osds"], strict=True))
                                / max(1, sum(o["client_ops"].get("read", 0) for o in cl["osds"])))
            if d == "read" else None,
            "deferred_share": n_def / (n_def + n_dir) if d == "write" and n_def + n_dir > 0 else None,
            "txc_per_kv_commit": (sum(b.get("kv_txcs_per_batch", 0) * b.get("kv_batches", 0) for b in bs) / batches
                                  if batches else None),
            "kv_commit_mean_ms": (1000 * sum(b.get("kv_commit_s", 0) * b.get("kv_batches", 0) for b in bs) / batches
                                  if batches else None),
            "throttled_share": cl["summary"].get("throttled_share"),
            "cpu_util": cl["summary"].get("cpu_util_max"),
            # CPU seconds per client IO of the whole host (OSDs + client), comparable to the lab's OSD + fio sum
            "cpu_us_per_io": _cpu_per_io(cl, _f(row[f"{d}.iops"])),
        }
    return out


def build(sim: dict[tuple[str, str, int], dict[str, Any]], data: Path,
          fitted: set[tuple[str, str, int]] | None = None) -> tuple[list[dict], list[dict]]:
    fitted = FITTED if fitted is None else fitted
    runs = _read_csv(data / "runs.csv")
    groups: dict[tuple[str, str, int], list[dict[str, str]]] = {}
    for r in runs:
        groups.setdefault((r["sequence"], r["rw"], int(r["qd"])), []).append(r)
    pred, cnt = [], []
    # the whole host's busy CPU per IO (daemons, fio and the kernel work no process is charged for: commit_path.py)
    host_us = ({r["id"]: 1e6 * r["busy_cpu_s"] / r["ios"] for r in commit_path.per_run(data) if r["ios"]}
               if (data / "manifest.json").is_file() else {})
    order = {"croit": 0, "norepeat": 1, "cold": 2, "smallcache": 3}
    for key in sorted(groups, key=lambda k: (order.get(k[0], 9), k[2], k[1])):
        rs = groups[key]
        s = sim.get(key)
        row: dict[str, Any] = {"variant": key[0], "rw": key[1], "qd": key[2], "n": len(rs),
                               "set": "fit" if key in fitted else "prediction"}
        for m, bound in BOUNDS.items():
            sp = labparse.spread([_f(r[m]) for r in rs])
            row[f"meas_{m}"] = sp["mean"]
            row[f"meas_{m}_cv"] = sp["cv"]
            row[f"meas_{m}_range_rel"] = sp["range_rel"]
            row[f"sim_{m}"] = s[m] if s else None
            row[f"err_{m}_pct"] = (100 * (s[m] / sp["mean"] - 1)) if s and s[m] and sp["mean"] else None
            # the acceptance bound applies where the measured run-to-run range (max-min)/mean is below it
            row[f"{m}_testable"] = sp["range_rel"] is not None and sp["range_rel"] < bound
            row[f"{m}_ok"] = (row[f"err_{m}_pct"] is not None and abs(row[f"err_{m}_pct"]) <= 100 * bound)
        row["loadavg_1m"] = labparse.spread([_f(r["loadavg_1m_before"]) for r in rs])["mean"]
        pred.append(row)
        c: dict[str, Any] = {"variant": key[0], "rw": key[1], "qd": key[2], "n": len(rs)}
        for m in ("cache_hit_share", "deferred_share", "txc_per_kv_commit", "kv_commit_mean_ms",
                  "op_queue_wait_mean_ms", "cpu_osd_us_per_io", "cpu_fio_us_per_io", "throttle_deferred_wait_count"):
            sp = labparse.spread([_f(r.get(m)) for r in rs if _f(r.get(m)) is not None])
            c[f"meas_{m}"] = sp["mean"]
            c[f"meas_{m}_sd"] = sp["sd"]
        for m in ("cache_hit_share", "deferred_share", "txc_per_kv_commit", "kv_commit_mean_ms", "throttled_share",
                  "cpu_util", "cpu_us_per_io"):
            c[f"sim_{m}"] = s.get(m) if s else None
        osd_cpu, fio_cpu = c.get("meas_cpu_osd_us_per_io"), c.get("meas_cpu_fio_us_per_io")
        c["meas_cpu_us_per_io"] = osd_cpu + fio_cpu if osd_cpu is not None and fio_cpu is not None else None
        hv = [host_us[r["id"]] for r in rs if r["id"] in host_us]
        c["meas_cpu_host_us_per_io"] = sum(hv) / len(hv) if hv else None
        for m in ("cache_hit_share", "deferred_share"):
            me, si = c[f"meas_{m}"], c[f"sim_{m}"]
            c[f"{m}_ok"] = (None if me is None or si is None
                            else abs(si - me) <= max(0.1, 0.2 * abs(me)))
        cnt.append(c)
    return pred, cnt


def write_csv(path: Path, rows: list[dict[str, Any]], header: str) -> None:
    cols = list(dict.fromkeys(k for r in rows for k in r))
    with path.open("w", newline="") as f:
        f.write(f"# {header}\n")
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sim-dir", type=Path, default=Path("/tmp/ceph-lab-sim"))
    ap.add_argument("--reuse", action="store_true", help="use existing simulation outputs in --sim-dir")
    ap.add_argument("--runtime", type=float)
    ap.add_argument("--profile")
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--tag", default="", help="write prediction_TAG.csv / counters_TAG.csv (another profile's tables)")
    ap.add_argument("--fitted", help="the points in the profile's fit, as variant/rw/qd,... (default: croit/randread/1,"
                    "croit/randwrite/1)")
    a = ap.parse_args(argv)
    main_dir, cold_dir, small_dir = a.sim_dir / "main", a.sim_dir / "cold", a.sim_dir / "smallcache"
    if not a.reuse:
        run_sim(HERE / "experiment.yaml", main_dir, a.profile, a.runtime)
        run_sim(HERE / "experiment_cold.yaml", cold_dir, a.profile, a.runtime)
        run_sim(HERE / "experiment_smallcache.yaml", small_dir, a.profile, a.runtime)
    sim = sim_points(main_dir)
    sim.update(sim_points(cold_dir, "cold"))
    sim.update(sim_points(small_dir, "smallcache"))
    fitted = ({(v, rw, int(q)) for v, rw, q in (x.split("/") for x in a.fitted.split(","))} if a.fitted else None)
    pred, cnt = build(sim, a.data, fitted)
    prof = a.profile or "clusters/ceph_lab_fitted"
    sfx = f"_{a.tag}" if a.tag else ""
    write_csv(a.data / f"prediction{sfx}.csv", pred,
              f"model ({prof}) vs lab (calibration/ceph-lab/compare.py); set=fit: in the calibration's loss")
    write_csv(a.data / f"counters{sfx}.csv", cnt,
              f"measured perf counters (mean, sd over repeats) beside the model's statistics ({prof})")
    for r in pred:
        print(f"{r['variant']:10} {r['rw']:9} QD{r['qd']:<3} {r['set']:10} "
              + "  ".join(f"{m} {r[f'meas_{m}']:.4g}/{r[f'sim_{m}'] or float('nan'):.4g} ({r[f'err_{m}_pct'] or 0:+.0f}%)"
                          for m in BOUNDS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

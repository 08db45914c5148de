"""Reference study 1 (croit, MACH.2 vs single-actuator HDDs under Ceph): run croit's sweep on the
cluster profile ``clusters/croit_mach2`` and put the simulated figures beside the measured ones.

The sweep runs like croit's script: queue depth outermost (1, 2, 4, ..., 256), and for each: read
MACH.2, write MACH.2, read normal, write normal; every run replays the same offset sequence
(fio's default randrepeat=1), on one cluster object that keeps its state (BlueStore caches, drive
state) from run to run. ``scale`` < 1 shortens every run to ``scale x 900 s`` and shrinks the
BlueStore data caches by the same factor, which keeps the ratio "IOs per run / cache size" that
decides how much of a run the previous runs left in cache.

The measured figures are read at run time from ../shared/data/croit-mach2 (never copied).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from simulator.ceph.bench import ClosedLoop, build_cluster_from_profile
from simulator.engine import Simulation

__all__ = ["POOLS", "measured", "run_sweep"]

POOLS = {"mach2": "test-mach2", "normal": "test-normal-hdd"}
QDS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def _shared() -> Path:
    return Path(__file__).resolve().parents[3] / "shared" / "data" / "croit-mach2"


def measured(rw: str, pool: str, qd: int, root: Path | None = None) -> dict[str, float] | None:
    """IOPS, p50/p99 (ms) and the fraction of IOs under 2 ms from croit's fio JSON, if present."""
    f = (root or _shared()) / f"{rw}-{pool}-{qd}.json"
    if not f.is_file():
        return None
    j = json.loads(f.read_text())["jobs"][0][rw]
    pct = {float(k): v / 1e6 for k, v in j["clat_ns"]["percentile"].items()}
    below = [p for p, v in sorted(pct.items()) if v < 2.0]
    return {
        "iops": j["iops"],
        "mean_ms": j["clat_ns"]["mean"] / 1e6,
        "p50_ms": pct[50.0],
        "p99_ms": pct[99.0],
        "frac_lt_2ms": (max(below) / 100.0) if below else 0.0,
    }


def run_sweep(
    scale: float = 0.1,
    qds: tuple[int, ...] = QDS,
    seed: int = 1,
    stand_in: bool = False,
    params: dict[str, Any] | None = None,
    offset_seed: int = 0x89,
    verbose: bool = True,
    overrides: dict[str, Any] | None = None,
    pools: tuple[str, ...] = ("mach2", "normal"),
    rws: tuple[str, ...] = ("read", "write"),
) -> list[dict[str, Any]]:
    """Run the sweep; returns one row per run (order of execution). ``overrides``: dotted keys
    over the profile's params (what-if runs)."""
    sim = Simulation(seed=seed)
    over: dict[str, Any] = dict(params or {})
    if scale != 1.0:
        from simulator.devices.registry import load_profile

        size = load_profile("clusters/croit_mach2")["params"]["bluestore"]["cache"]["size"]
        from simulator.units import parse_size

        bs = dict(over.get("bluestore", {}))
        cache = dict(bs.get("cache", {}))
        cache.setdefault("size", int(parse_size(size) * scale))
        bs["cache"] = cache
        over["bluestore"] = bs
    cl = build_cluster_from_profile(sim, params=over, stand_in=stand_in, overrides=overrides)
    runtime = 900.0 * scale
    rows = []
    for qd in qds:
        for pool in pools:
            for rw in rws:
                img = cl.image(POOLS[pool], "test")
                cl.reset_stats()
                t0 = time.perf_counter()
                loop = ClosedLoop(sim, img, qd=qd, bs=4096, rw=f"rand{rw}", runtime=runtime, seed=offset_seed)
                r = loop.run()
                wall = time.perf_counter() - t0
                lat = r.lat
                row = {
                    "rw": rw, "pool": pool, "qd": qd, "ios": r.ios, "iops": r.iops,
                    "mean_ms": float(lat.mean() * 1e3), "p50_ms": r.pct(50) * 1e3, "p99_ms": r.pct(99) * 1e3,
                    "frac_lt_2ms": float(np.mean(lat < 2e-3)), "wall_s": wall,
                    "measured": measured(rw, pool, qd),
                }
                rows.append(row)
                if verbose:
                    m = row["measured"]
                    ms = (f" | measured iops {m['iops']:.0f} p50 {m['p50_ms']:.2f} p99 {m['p99_ms']:.1f} <2ms {m['frac_lt_2ms']:.2f}"
                          if m else "")
                    print(
                        f"{rw:5} {pool:6} QD{qd:<3} iops {row['iops']:7.0f} p50 {row['p50_ms']:7.2f} p99 {row['p99_ms']:8.1f} "
                        f"<2ms {row['frac_lt_2ms']:.2f} ({r.ios} IOs, {wall:.0f}s wall){ms}",
                        flush=True,
                    )
    return rows


if __name__ == "__main__":  # pragma: no cover
    import sys

    sc = float(sys.argv[1]) if len(sys.argv) > 1 else 0.1
    out = run_sweep(scale=sc, stand_in="--stand-in" in sys.argv)
    if "--json" in sys.argv:
        print(json.dumps(out, indent=1))

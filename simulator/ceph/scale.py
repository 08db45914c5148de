"""Scale cases of the Ceph layer: the croit host layout (``clusters/croit_mach2``: one host of 24
OSDs, 12 on MACH.2 LUNs and 12 on LVs of single-actuator drives) repeated ``hosts`` times, with
croit's PGs and data per OSD: each pool gets 256 PGs and 1 TiB of pre-filled RBD image per host
(64 PGs and 256 GiB per OSD at size 3).

``measure(hosts, n_ios, rw, qd)`` builds such a cluster and runs a closed loop of 4 KiB random IOs
on the MACH.2 pool's image, by default at croit's QD64 per host (the same load per OSD at every
size; at a fixed QD64 a larger cluster batches fewer transactions per commit, so a write costs more
events); it returns the build time, CPU time per client IO, events per IO and the process's peak
RSS. ``python -m simulator.ceph.scale`` prints them for 24, 96, 288 and
1,008 OSDs, each size in a fresh process (peak RSS is per process). ``simrun bench`` runs the
``ceph-build-N`` and ``ceph-scale-N`` cases of :data:`SCALE_CASES`.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["SCALE_CASES", "build_scaled", "measure", "scale_overrides"]

OSDS_PER_HOST = 24  # the croit host
SIZES = (4, 12, 42)  # hosts of the bench cases: 96, 288 and 1,008 OSDs


def scale_overrides(hosts: int) -> dict[str, Any]:
    """Dotted overrides of ``clusters/croit_mach2`` for ``hosts`` copies of its OSD host."""
    return {
        "hosts.0.count": hosts,
        "pools.0.pg_num": 256 * hosts,
        "pools.1.pg_num": 256 * hosts,
        "images.0.size": (1 << 40) * hosts,
        "images.1.size": (1 << 40) * hosts,
    }


def build_scaled(sim: Any, hosts: int) -> Any:
    from simulator.ceph.bench import build_cluster_from_profile

    return build_cluster_from_profile(sim, overrides=scale_overrides(hosts) if hosts != 1 else None)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measure(hosts: int, n_ios: int = 20000, rw: str = "randwrite", seed: int = 1, warm_ios: int = 2000,
            qd: int | None = None) -> dict[str, Any]:
    """Build (CPU seconds, wall seconds), then ``warm_ios`` untimed IOs, then ``n_ios`` timed IOs at
    ``qd`` (default 64 per host)."""
    from simulator.ceph.bench import ClosedLoop
    from simulator.engine import Simulation

    qd = 64 * hosts if qd is None else qd
    sim = Simulation(seed=seed)
    c0, w0 = time.process_time(), time.perf_counter()
    cl = build_scaled(sim, hosts)
    build_cpu, build_wall = time.process_time() - c0, time.perf_counter() - w0
    img = cl.image("test-mach2", "test")
    if warm_ios:
        ClosedLoop(sim, img, qd=qd, bs=4096, rw=rw, n_ios=warm_ios, seed=seed).run()
    env = sim.env
    e0 = next(env._eid)
    loop = ClosedLoop(sim, img, qd=qd, bs=4096, rw=rw, n_ios=n_ios, seed=seed + 1)
    c0, w0 = time.process_time(), time.perf_counter()
    res = loop.run()
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    events = next(env._eid) - e0
    return {
        "hosts": hosts,
        "osds": len(cl.osds),
        "rw": rw,
        "qd": qd,
        "build_cpu_s": build_cpu,
        "build_wall_s": build_wall,
        "ios": n_ios,
        "cpu_us_per_io": 1e6 * cpu / n_ios,
        "wall_us_per_io": 1e6 * wall / n_ios,
        "events_per_io": events / n_ios,
        "peak_rss_mb": _peak_rss_mb(),
        "sim_iops": res.iops,
    }


# ------------------------------------------------------------------------------- simrun bench cases
def _build_case(hosts: int) -> Callable[[int], float]:
    def run(n: int) -> float:
        from simulator.engine import Simulation

        sim = Simulation(1)
        t = time.perf_counter()
        cl = build_scaled(sim, hosts)
        return len(cl.osds) / (time.perf_counter() - t)

    return run


def _run_case(hosts: int) -> Callable[[int], float]:
    def run(n: int) -> float:
        from simulator.ceph.bench import ClosedLoop
        from simulator.engine import Simulation

        sim = Simulation(1)
        cl = build_scaled(sim, hosts)
        loop = ClosedLoop(sim, cl.image("test-mach2", "test"), qd=64 * hosts, bs=4096, rw="randwrite", n_ios=n, seed=1)
        t = time.perf_counter()
        loop.run()
        return n / (time.perf_counter() - t)

    return run


SCALE_CASES: dict[str, tuple[str, Callable[[int], float]]] = {}
for _h in SIZES:
    _n = _h * OSDS_PER_HOST
    SCALE_CASES[f"ceph-build-{_n}"] = (
        f"Ceph build, croit host x{_h} ({_n:,} OSDs, pre-filled): OSDs built per second (not IOs)", _build_case(_h)
    )
    SCALE_CASES[f"ceph-scale-{_n}"] = (
        f"Ceph croit host x{_h} ({_n:,} OSDs), MACH.2 pool 4KiB randwrite QD64/host (client IOs)", _run_case(_h)
    )


def main(argv: list[str]) -> None:  # pragma: no cover - command line
    """``python -m simulator.ceph.scale [--ios N] [--hosts 1 4 12 42] [--rw randwrite randread] [--qd Q]``:
    one fresh process per (size, rw); a table and one JSON line per measurement."""
    ios = 20000
    hosts = [1, 4, 12, 42]
    rws = ["randwrite", "randread"]
    qd = int(argv[argv.index("--qd") + 1]) if "--qd" in argv else None  # default: 64 per host
    if "--one" in argv:
        h, n, rw = int(argv[argv.index("--one") + 1]), int(argv[argv.index("--one") + 2]), argv[argv.index("--one") + 3]
        print(json.dumps(measure(h, n, rw, qd=qd)))
        return
    if "--ios" in argv:
        ios = int(argv[argv.index("--ios") + 1])
    for flag, dst in (("--hosts", hosts), ("--rw", rws)):
        if flag in argv:
            i = argv.index(flag) + 1
            vals = []
            while i < len(argv) and not argv[i].startswith("--"):
                vals.append(argv[i])
                i += 1
            dst[:] = [int(v) for v in vals] if flag == "--hosts" else vals
    import os

    print(f"load average {os.getloadavg()}", flush=True)
    print(f"{'OSDs':>5} {'rw':>9} {'QD':>5} {'build s':>8} {'CPU us/IO':>10} {'events/IO':>9} {'peak RSS MB':>11}", flush=True)
    for h in hosts:
        for rw in rws:
            out = subprocess.run(
                [sys.executable, "-m", "simulator.ceph.scale", "--one", str(h), str(ios), rw,
                 *(["--qd", str(qd)] if qd is not None else [])],
                capture_output=True, text=True, check=True,
            ).stdout.strip().splitlines()[-1]
            r = json.loads(out)
            print(f"{r['osds']:>5} {rw:>9} {r['qd']:>5} {r['build_cpu_s']:>8.2f} {r['cpu_us_per_io']:>10.1f} "
                  f"{r['events_per_io']:>9.2f} {r['peak_rss_mb']:>11.0f}   {out}", flush=True)
    print(f"load average {os.getloadavg()}", flush=True)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])

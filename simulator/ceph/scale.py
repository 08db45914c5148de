"""Scale cases of the Ceph layer: the croit host layout (``clusters/croit_mach2``: one host of 24
OSDs, 12 on MACH.2 LUNs and 12 on LVs of single-actuator drives) repeated ``hosts`` times, with
croit's PGs and data per OSD: each pool gets 256 PGs and 1 TiB of pre-filled RBD image per host
(64 PGs and 256 GiB per OSD at size 3).

``measure(hosts, n_ios, rw, qd)`` builds such a cluster and runs a closed loop of 4 KiB random IOs
on the MACH.2 pool's image, by default at croit's QD64 per host (the same load per OSD at every
size; at a fixed QD64 a larger cluster batches fewer transactions per commit, so a write costs more
events); it returns the build time, CPU time per client IO, events per IO, the cyclic garbage
collector's passes and CPU time per IO by generation (:class:`GcMeter`) and the process's peak RSS. ``python -m simulator.ceph.scale`` prints them for 24, 96, 288 and
1,008 OSDs, each size in a fresh process (peak RSS is per process). ``simrun bench`` runs the
``ceph-build-N`` and ``ceph-run-N`` cases of :data:`SCALE_CASES` (each in a fresh process; the
bench table's notes give build seconds, CPU per IO, events per IO, GC time per IO and peak RSS).
"""

from __future__ import annotations

import gc
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["SCALE_CASES", "GcMeter", "build_scaled", "measure", "scale_overrides"]

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
    """This process's own peak RSS. Linux carries ru_maxrss across fork + exec (the parent's high-water mark at
    the fork), so a fresh interpreter started by a large bench process would report the parent's peak; the
    memory map's own high-water mark (VmHWM, reset at exec) is read where /proc has it."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class GcMeter:
    """The cyclic garbage collector's passes and their CPU time per generation while it is installed
    (``gc.callbacks``): ``with GcMeter() as m: ...`` then ``m.passes``, ``m.seconds``."""

    def __init__(self) -> None:
        self.passes = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self._t0 = 0.0

    def _cb(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._t0 = time.process_time()
        else:
            g = info["generation"]
            self.passes[g] += 1
            self.seconds[g] += time.process_time() - self._t0

    def __enter__(self) -> GcMeter:
        gc.callbacks.append(self._cb)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._cb)


def _fio(sim: Any, img: Any, qd: int, rw: str, n_ios: int, seed: int) -> list[Any]:
    """``n_ios`` IOs of 4 KiB at ``qd`` through the one IO driver (libaio without submission
    latency, offsets uniform with replacement from fio's stream ``randseed``)."""
    from simulator.workloads.runner import run_fio

    job = {"name": "scale", "ioengine": "libaio", "sim_slat": 0, "rw": rw, "bs": 4096, "iodepth": qd,
           "number_ios": n_ios, "norandommap": 1, "randseed": seed}
    return run_fio(sim, [img], job, source="scale")


def measure(hosts: int, n_ios: int = 20000, rw: str = "randwrite", seed: int = 1, warm_ios: int | None = None,
            qd: int | None = None) -> dict[str, Any]:
    """Build (CPU seconds, wall seconds), then ``warm_ios`` untimed IOs (default: 3 x QD, at least
    2,000: every queue slot has cycled), then ``n_ios`` timed IOs at ``qd`` (default 64 per host).
    ``n_ios`` 0: the build alone."""
    from simulator.engine import Simulation

    qd = 64 * hosts if qd is None else qd
    warm_ios = max(2000, 3 * qd) if warm_ios is None else warm_ios
    sim = Simulation(seed=seed)
    c0, w0 = time.process_time(), time.perf_counter()
    with GcMeter() as bgc:
        cl = build_scaled(sim, hosts)
    build_cpu, build_wall = time.process_time() - c0, time.perf_counter() - w0
    build = {"build_cpu_s": build_cpu, "build_wall_s": build_wall, "build_gc_s": sum(bgc.seconds),
             "build_gc_passes": bgc.passes}
    if n_ios <= 0:
        return {"hosts": hosts, "osds": len(cl.osds), **build, "peak_rss_mb": _peak_rss_mb()}
    img = cl.image("test-mach2", "test")
    if warm_ios:
        _fio(sim, img, qd, rw, warm_ios, seed)
    env = sim.env
    e0 = next(env._eid)
    c0, w0 = time.process_time(), time.perf_counter()
    with GcMeter() as rgc:
        (res,) = _fio(sim, img, qd, rw, n_ios, seed + 1)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    events = next(env._eid) - e0
    return {
        "hosts": hosts,
        "osds": len(cl.osds),
        "rw": rw,
        "qd": qd,
        **build,
        "ios": n_ios,
        "cpu_us_per_io": 1e6 * cpu / n_ios,
        "wall_us_per_io": 1e6 * wall / n_ios,
        "events_per_io": events / n_ios,
        # the cyclic collector during the timed IOs: passes and CPU us per IO by generation (0, 1, 2)
        "gc_passes": rgc.passes,
        "gc_us_per_io": [1e6 * s / n_ios for s in rgc.seconds],
        "peak_rss_mb": _peak_rss_mb(),
        "sim_iops": sum(d.iops for d in res.present_dirs()),
    }


# ------------------------------------------------------------------------------- simrun bench cases
def measure_fresh(hosts: int, n_ios: int, rw: str = "randwrite", qd: int | None = None) -> dict[str, Any]:
    """:func:`measure` in a fresh interpreter (peak RSS is per process)."""
    out = subprocess.run(
        [sys.executable, "-m", "simulator.ceph.scale", "--one", str(hosts), str(n_ios), rw,
         *(["--qd", str(qd)] if qd is not None else [])],
        capture_output=True, text=True, check=True,
    ).stdout.strip().splitlines()[-1]
    return json.loads(out)


def _build_case(hosts: int) -> Callable[[int], tuple[float, str]]:
    def run(n: int) -> tuple[float, str]:
        r = measure_fresh(hosts, 0)
        return r["osds"] / r["build_wall_s"], (
            f"build {r['build_wall_s']:.1f} s wall, {r['build_cpu_s']:.1f} s CPU (GC {r['build_gc_s']:.2f} s in "
            f"{sum(r['build_gc_passes'])} passes); peak RSS {r['peak_rss_mb']:,.0f} MB"
        )

    run.fresh_process = True  # type: ignore[attr-defined]
    return run


def _gc_note(r: dict[str, Any]) -> str:
    """The collector's share of CPU per IO by generation, e.g. ``11.9/0.4/0.0 us/IO (52/5/0 passes)``."""
    us, n = r["gc_us_per_io"], r["gc_passes"]
    return f"{'/'.join(f'{u:.1f}' for u in us)} us/IO ({'/'.join(str(k) for k in n)} passes, gen 0/1/2)"


def _run_case(hosts: int) -> Callable[[int], tuple[float, str]]:
    def run(n: int) -> tuple[float, str]:
        r = measure_fresh(hosts, n)
        return 1e6 / r["wall_us_per_io"], (
            f"CPU {r['cpu_us_per_io']:.0f} us/IO, {r['events_per_io']:.1f} events/IO, GC {_gc_note(r)}; "
            f"peak RSS {r['peak_rss_mb']:,.0f} MB"
        )

    run.fresh_process = True  # type: ignore[attr-defined]
    return run


SCALE_CASES: dict[str, tuple[str, Callable[[int], Any]]] = {}
for _h in SIZES:
    _n = _h * OSDS_PER_HOST
    SCALE_CASES[f"ceph-build-{_n}"] = (
        f"Ceph build, croit host x{_h} ({_n:,} OSDs, pre-filled; fresh process): OSDs built per second (not IOs)",
        _build_case(_h),
    )
    SCALE_CASES[f"ceph-run-{_n}"] = (
        f"Ceph croit host x{_h} ({_n:,} OSDs), MACH.2 pool 4KiB randwrite QD64/host, after 3 x QD warm-up IOs (fresh process)",
        _run_case(_h),
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
    print(f"{'OSDs':>5} {'rw':>9} {'QD':>5} {'build s':>8} {'CPU us/IO':>10} {'events/IO':>9} {'GC us/IO':>9} "
          f"{'peak RSS MB':>11}", flush=True)
    for h in hosts:
        for rw in rws:
            r = measure_fresh(h, ios, rw, qd)
            print(f"{r['osds']:>5} {rw:>9} {r['qd']:>5} {r['build_cpu_s']:>8.2f} {r['cpu_us_per_io']:>10.1f} "
                  f"{r['events_per_io']:>9.2f} {sum(r['gc_us_per_io']):>9.1f} {r['peak_rss_mb']:>11.0f}   {json.dumps(r)}",
                  flush=True)
    print(f"load average {os.getloadavg()}", flush=True)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])

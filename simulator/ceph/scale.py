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

``measure(..., compiled=True)`` (``--compiled``; bench cases ``ceph-build-N-compiled``,
``ceph-run-N-compiled``, ``ceph-read-N-compiled``) builds the fitted croit profile
(:data:`COMPILED_REF`) and runs through the compiled Ceph core, reporting the compiled state's build
time apart, the loop's CPU per IO and the whole call's (docs/design.md, "The compiled Ceph core at
1,000 OSDs").
"""

from __future__ import annotations

import contextlib
import gc
import importlib
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


def build_scaled(sim: Any, hosts: int, ref: str = "clusters/croit_mach2") -> Any:
    from simulator.ceph.bench import build_cluster_from_profile

    return build_cluster_from_profile(sim, ref, overrides=scale_overrides(hosts) if hosts != 1 else None)


def _vm_mb() -> tuple[float, float]:
    """This process's (VmRSS, VmHWM) in MB: its resident memory now and its own peak. Linux carries
    ru_maxrss across fork + exec (the parent's high-water mark at the fork), so a fresh interpreter
    started by a large bench process would report the parent's peak; the memory map's own high-water
    mark (VmHWM, reset at exec) is read where /proc has it (else ru_maxrss for both)."""
    vm = {}
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    vm[line[:5]] = int(line.split()[1]) / 1024.0
    except OSError:
        pass
    if len(vm) < 2:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        return peak, peak
    return vm["VmRSS"], vm["VmHWM"]


def _peak_rss_mb() -> float:
    """This process's own peak RSS (VmHWM: :func:`_vm_mb`)."""
    return _vm_mb()[1]


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


#: the cluster profile of the compiled cases: croit as fitted (the MACH.2 LUNs' persistent write cache,
#: onode misses, BlueStore's data cache); the Python cases keep ``clusters/croit_mach2`` (the 2X14's media
#: cache, which the compiled core also runs since its extent table grows: the choice keeps the figures comparable)
COMPILED_REF = "clusters/croit_mach2_fitted"


class _Timed:
    """CPU seconds spent in ``module.name`` while installed (``with _Timed(mod, "f") as t: ...; t.cpu``):
    how the compiled measurement splits the Ceph core's state build off the run that calls it. With
    ``log`` (a list), each call also appends its memory: VmRSS and VmHWM (MB) on entry and on return."""

    def __init__(self, module: Any, name: str, log: list[dict[str, Any]] | None = None) -> None:
        self.module, self.name, self.cpu, self.calls, self.log = module, name, 0.0, 0, log
        self._orig = getattr(module, name)

    def __enter__(self) -> _Timed:
        orig, log = self._orig, self.log

        def timed(*a: Any, **k: Any) -> Any:
            rec = None
            if log is not None:
                rss, hwm = _vm_mb()
                rec = {"phase": f"{self.module.__name__.rsplit('.', 1)[-1]}.{self.name}", "rss_in_mb": rss,
                       "hwm_in_mb": hwm}
                log.append(rec)
            c0 = time.process_time()
            try:
                return orig(*a, **k)
            finally:
                self.cpu += time.process_time() - c0
                self.calls += 1
                if rec is not None:
                    rec["rss_out_mb"], rec["hwm_out_mb"] = _vm_mb()
                    rec["cpu_s"] = time.process_time() - c0

        setattr(self.module, self.name, timed)
        return self

    def __exit__(self, *exc: object) -> None:
        setattr(self.module, self.name, self._orig)


#: the compiled run's phases whose memory ``measure(phases=True)`` logs (module, function), in call order
PHASES = (
    ("simulator.core.ceph_fio", "run_workload_ceph"),
    ("simulator.core.ceph_build", "build_state"),
    ("simulator.core.ceph_build", "_bluestore_tables"),
    ("simulator.core.ceph_onode_build", "build"),
    ("simulator.core.ceph_dcache", "build"),
    ("simulator.core.ceph_build", "write_back_bluestore"),
    ("simulator.core.ceph_build", "write_back"),
    ("simulator.core.ceph_build", "_write_back_core_devices"),
    ("simulator.core.ceph_onode_build", "write_back"),
    ("simulator.core.ceph_dcache", "write_back"),
)


def _fio_compiled(sim: Any, img: Any, qd: int, rw: str, n_ios: int, seed: int) -> dict[str, Any]:
    """The job of :func:`_fio` through the compiled Ceph core (``ceph_fio.run_workload_ceph``, refused by
    name if it does not cover the run); returns its run figures plus the CPU seconds of the state build
    (``build_state``) and of the whole call."""
    from simulator.core import ceph_build, ceph_fio
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload

    job = {"name": "scale", "ioengine": "libaio", "sim_slat": 0, "rw": rw, "bs": 4096, "iodepth": qd,
           "number_ios": n_ios, "norandommap": 1, "randseed": seed}
    wl = Workload(sim, resolve_jobs({}, [job], "scale"), lambda _j: [img])
    why = ceph_fio.unsupported_workload(sim, wl)
    if why:
        raise RuntimeError(f"the compiled Ceph core does not cover the scale case: {why}")
    c0 = time.process_time()
    with _Timed(ceph_build, "build_state") as t:
        info = ceph_fio.run_workload_ceph(sim, wl)
    return {**info, "state_cpu_s": t.cpu, "call_cpu_s": time.process_time() - c0, "results": wl.results()}


def measure(hosts: int, n_ios: int = 20000, rw: str = "randwrite", seed: int = 1, warm_ios: int | None = None,
            qd: int | None = None, compiled: bool = False, phases: bool = False) -> dict[str, Any]:
    """Build (CPU seconds, wall seconds), then ``warm_ios`` untimed IOs (default: 3 x QD, at least
    2,000: every queue slot has cycled), then ``n_ios`` timed IOs at ``qd`` (default 64 per host).
    ``n_ios`` 0: the build alone. ``compiled``: the cluster is :data:`COMPILED_REF` and both runs go
    through the compiled Ceph core; the figures add the state build's CPU seconds (``state_cpu_s``,
    part of the timed run's call), the loop's CPU per IO and the rest of the call (hand-over both ways).
    ``phases`` (compiled): the result's ``phases`` lists every call of :data:`PHASES` after the
    cluster's build with VmRSS / VmHWM on entry and return (where the peak is reached)."""
    if phases and compiled:
        log: list[dict[str, Any]] = []
        with contextlib.ExitStack() as stack:
            for mod, name in PHASES:
                stack.enter_context(_Timed(importlib.import_module(mod), name, log))
            r = measure(hosts, n_ios, rw, seed, warm_ios, qd, compiled)
        return {**r, "phases": log}
    from simulator.engine import Simulation

    qd = 64 * hosts if qd is None else qd
    warm_ios = max(2000, 3 * qd) if warm_ios is None else warm_ios
    sim = Simulation(seed=seed)
    c0, w0 = time.process_time(), time.perf_counter()
    with GcMeter() as bgc:
        cl = build_scaled(sim, hosts, COMPILED_REF) if compiled else build_scaled(sim, hosts)
    build_cpu, build_wall = time.process_time() - c0, time.perf_counter() - w0
    build = {"build_cpu_s": build_cpu, "build_wall_s": build_wall, "build_gc_s": sum(bgc.seconds),
             "build_gc_passes": bgc.passes, "peak_rss_build_mb": _peak_rss_mb()}  # the cluster's build alone
    img = cl.image("test-mach2", "test")
    if n_ios <= 0:
        if compiled:  # the compiled core's state of a run on the MACH.2 image, as the run path builds it
            from simulator.core.ceph_build import build_state

            c0, w0 = time.process_time(), time.perf_counter()
            build_state(cl, n_ops=max(4096, 8 * qd), n_req=0, images=[img])
            build = {**build, "state_cpu_s": time.process_time() - c0, "state_wall_s": time.perf_counter() - w0}
        return {"hosts": hosts, "osds": len(cl.osds), **build, "peak_rss_mb": _peak_rss_mb()}
    if compiled:
        w = _fio_compiled(sim, img, qd, rw, warm_ios, seed) if warm_ios else None
        rss_warm = _peak_rss_mb()
        w0 = time.perf_counter()
        r = _fio_compiled(sim, img, qd, rw, n_ios, seed + 1)
        wall = time.perf_counter() - w0
        (res,) = r["results"]
        return {
            "hosts": hosts, "osds": len(cl.osds), "rw": rw, "qd": qd, "engine": "compiled", **build,
            "ios": n_ios,
            "state_cpu_s": r["state_cpu_s"],  # build_state of the timed run
            "warm_state_cpu_s": w["state_cpu_s"] if w else 0.0,
            "call_cpu_s": r["call_cpu_s"],  # the timed run's whole call: state build, loop, write-back, statistics
            "cpu_us_per_io": 1e6 * r["cpu_s"] / n_ios,  # the loop's
            "call_us_per_io": 1e6 * r["call_cpu_s"] / n_ios,
            "wall_us_per_io": 1e6 * wall / n_ios,
            "events_per_io": r["events"] / n_ios,
            "peak_rss_warm_mb": rss_warm,
            "peak_rss_mb": _peak_rss_mb(),
            "sim_iops": sum(d.iops for d in res.present_dirs()),
        }
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
def measure_fresh(hosts: int, n_ios: int, rw: str = "randwrite", qd: int | None = None,
                  compiled: bool = False, phases: bool = False) -> dict[str, Any]:
    """:func:`measure` in a fresh interpreter (peak RSS is per process)."""
    out = subprocess.run(
        [sys.executable, "-m", "simulator.ceph.scale", "--one", str(hosts), str(n_ios), rw,
         *(["--qd", str(qd)] if qd is not None else []), *(["--compiled"] if compiled else []),
         *(["--phases"] if phases else [])],
        capture_output=True, text=True, check=True,
    ).stdout.strip().splitlines()[-1]
    return json.loads(out)


def _build_case(hosts: int, compiled: bool = False) -> Callable[[int], tuple[float, str]]:
    def run(n: int) -> tuple[float, str]:
        r = measure_fresh(hosts, 0, compiled=compiled)
        if compiled:
            wall = r["build_wall_s"] + r["state_wall_s"]
            return r["osds"] / wall, (
                f"build {wall:.1f} s wall: cluster {r['build_cpu_s']:.1f} s CPU + compiled state "
                f"{r['state_cpu_s']:.1f} s CPU; peak RSS {r['peak_rss_mb']:,.0f} MB"
            )
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


def _compiled_run_case(hosts: int, rw: str) -> Callable[[int], tuple[float, str]]:
    def run(n: int) -> tuple[float, str]:
        r = measure_fresh(hosts, n, rw, compiled=True)
        return 1e6 / r["call_us_per_io"], (
            f"loop CPU {r['cpu_us_per_io']:.1f} us/IO, {r['events_per_io']:.1f} events/IO; state build "
            f"{r['state_cpu_s']:.1f} s CPU; peak RSS {r['peak_rss_mb']:,.0f} MB"
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
    SCALE_CASES[f"ceph-build-{_n}-compiled"] = (
        f"Ceph build, croit (fitted) host x{_h} ({_n:,} OSDs), then the compiled core's state for the MACH.2 "
        "pool (fresh process): OSDs built per second",
        _build_case(_h, compiled=True),
    )
    SCALE_CASES[f"ceph-run-{_n}-compiled"] = (
        f"Ceph croit (fitted) host x{_h} ({_n:,} OSDs) through the compiled Ceph core, MACH.2 pool 4KiB randwrite "
        "QD64/host after 3 x QD warm-up IOs (fresh process): client IOs per CPU second of the whole call",
        _compiled_run_case(_h, "randwrite"),
    )
    SCALE_CASES[f"ceph-read-{_n}-compiled"] = (
        f"Ceph croit (fitted) host x{_h} ({_n:,} OSDs) through the compiled Ceph core, MACH.2 pool 4KiB randread "
        "QD64/host of the pre-filled image (fresh process): client IOs per CPU second of the whole call",
        _compiled_run_case(_h, "randread"),
    )


def main(argv: list[str]) -> None:  # pragma: no cover - command line
    """``python -m simulator.ceph.scale [--ios N] [--hosts 1 4 12 42] [--rw randwrite randread] [--qd Q]``:
    one fresh process per (size, rw); a table and one JSON line per measurement. ``--one H N RW
    [--compiled] [--phases]``: one measurement in this process, its JSON line (``--phases``: with the
    memory of each compiled phase, :func:`measure`)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m simulator.ceph.scale", description=main.__doc__.split("\n")[0])
    ap.add_argument("--ios", type=int, default=20000, help="timed IOs per measurement (default 20000)")
    ap.add_argument("--hosts", type=int, nargs="+", default=[1, 4, 12, 42], help="croit hosts per cluster (24 OSDs each)")
    ap.add_argument("--rw", nargs="+", choices=["randwrite", "randread"], default=["randwrite", "randread"])
    ap.add_argument("--qd", type=int, default=None, help="client queue depth (default 64 per host)")
    ap.add_argument("--one", nargs=3, metavar=("H", "N", "RW"), help="one measurement in this process (its JSON line)")
    ap.add_argument("--compiled", action="store_true", help="the compiled Ceph core on the fitted croit profile")
    ap.add_argument("--phases", action="store_true", help="--one: the memory of each compiled phase")
    a = ap.parse_args(argv)
    for v, name in ((a.ios, "--ios"), (a.qd, "--qd"), *((h, "--hosts") for h in a.hosts)):
        if v is not None and v < 1:
            ap.error(f"{name} must be at least 1, got {v}")
    qd = a.qd
    if a.one:
        try:
            h, n, rw = int(a.one[0]), int(a.one[1]), a.one[2]
        except ValueError:
            ap.error(f"--one H N RW: H and N are integers, got {a.one[0]!r} {a.one[1]!r}")
        if rw not in ("randwrite", "randread") or h < 1 or n < 0:  # N 0: the build alone (simrun bench's ceph-build-N)
            ap.error(f"--one H N RW: H >= 1, N >= 0 and RW randwrite or randread, got {a.one}")
        print(json.dumps(measure(h, n, rw, qd=qd, compiled=a.compiled, phases=a.phases)))
        return
    ios, hosts, rws = a.ios, a.hosts, a.rw
    import os

    print(f"load average {os.getloadavg()}", flush=True)
    if a.compiled:
        print(f"{'OSDs':>5} {'rw':>9} {'QD':>5} {'build s':>8} {'state s':>8} {'loop us/IO':>10} {'call us/IO':>10} "
              f"{'events/IO':>9} {'peak RSS MB':>11}", flush=True)
    else:
        print(f"{'OSDs':>5} {'rw':>9} {'QD':>5} {'build s':>8} {'CPU us/IO':>10} {'events/IO':>9} {'GC us/IO':>9} "
              f"{'peak RSS MB':>11}", flush=True)
    for h in hosts:
        for rw in rws:
            if a.compiled:
                r = measure_fresh(h, ios, rw, qd, compiled=True)
                print(f"{r['osds']:>5} {rw:>9} {r['qd']:>5} {r['build_cpu_s']:>8.2f} {r['state_cpu_s']:>8.2f} "
                      f"{r['cpu_us_per_io']:>10.2f} {r['call_us_per_io']:>10.2f} {r['events_per_io']:>9.2f} "
                      f"{r['peak_rss_mb']:>11.0f}   {json.dumps(r)}", flush=True)
                continue
            r = measure_fresh(h, ios, rw, qd)
            print(f"{r['osds']:>5} {rw:>9} {r['qd']:>5} {r['build_cpu_s']:>8.2f} {r['cpu_us_per_io']:>10.1f} "
                  f"{r['events_per_io']:>9.2f} {sum(r['gc_us_per_io']):>9.1f} {r['peak_rss_mb']:>11.0f}   {json.dumps(r)}",
                  flush=True)
    print(f"load average {os.getloadavg()}", flush=True)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])

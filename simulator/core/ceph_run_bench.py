"""Bench driver of the run path into the compiled Ceph core (``simrun bench`` cases ``ceph-exp-*``):
an experiment point's fio job through the experiment runner's :func:`~simulator.experiment.execute.run_jobs_on`,
once with engine "python" (the model of record), once with engine "auto" (simulator.core.choose sends
it to the compiled Ceph core, with the same results: tests/test_core_ceph_wire.py)."""

from __future__ import annotations

import time
from typing import Any

__all__ = ["bench_exp_chain", "bench_exp_qd64write", "croit_stand_in_system"]


def croit_stand_in_system(seed: int = 1, bluestore: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """(Simulation, experiment System) of the croit cluster profile with stand-in queue devices and
    no block layer: what the compiled Ceph core covers for writes (``bluestore``: settings merged into
    the profile's BlueStore section)."""
    from simulator.ceph.bench import stand_in_profile
    from simulator.devices.registry import load_profile
    from simulator.engine import Simulation
    from simulator.experiment.model import SystemSpec
    from simulator.experiment.system import System

    params = stand_in_profile(load_profile("clusters/croit_mach2")["params"])
    params["block_layer"] = {"enabled": False}
    for k, v in (bluestore or {}).items():
        bs = params.setdefault("bluestore", {})
        bs[k] = {**bs.get(k, {}), **v} if isinstance(v, dict) else v
    spec = SystemSpec.model_validate({"cluster": {"kind": "ceph_cluster", "params": params}})
    sim = Simulation(seed)
    return sim, System(sim, spec, "bench")


def bench_exp_qd64write(n: int, compiled: bool) -> tuple[float, str]:
    """croit MACH.2 pool (stand-in devices, no block layer), fio rbd job 4 KiB randwrite QD64 with a
    ramp of 0.2 s then ``n`` IOs' worth of runtime (time_based), through the experiment runner's
    run_jobs_on: client IOs recorded per wall second (cluster build not timed); note: fio's IOPS and
    the engine that ran it."""
    from simulator.experiment.execute import run_jobs_on
    from simulator.workloads.options import resolve_jobs

    sim, system = croit_stand_in_system()
    # runtime from the job's rate on this cluster (~290 IOPS simulated: 8 ms stand-in drives): about n IOs recorded
    runtime = max(0.05, n / 290.0)
    jobs = resolve_jobs({"ioengine": "rbd", "pool": "test-mach2", "rbdname": "test", "rw": "randwrite", "bs": "4k",
                         "iodepth": 64, "time_based": 1, "runtime": f"{runtime:.4f}s", "ramp_time": "0.2s",
                         "randseed": 1}, [{"name": "bench"}], "bench")
    used: dict[str, Any] = {}
    t0 = time.perf_counter()
    res, _ = run_jobs_on(sim, system, jobs, engine="auto" if compiled else "python", used=used)
    wall = time.perf_counter() - t0
    w = res[0].write
    return w.total_ios / wall, f"fio: {w.iops:,.0f} IOPS, {w.total_ios:,} IOs; engine {used['engine']}"


def bench_exp_chain(n: int) -> tuple[float, str]:
    """A croit-style chain on one cluster that keeps its state (what a full-length croit sweep does between
    its runs): randread, randwrite, randread, randwrite at QD64, ``n`` / 4 IOs each (number_ios), the MACH.2
    pool with stand-in devices, a 2Q BlueStore data cache of 1 GiB per OSD holding what was read and written
    (buffered writes), through the experiment runner's run_jobs_on (engine auto: the compiled Ceph core) —
    client IOs per CPU second of the whole chain, the hand-over of the caches between runs included; note:
    units held in the data caches at the end and the engine."""
    import os

    from simulator.experiment.execute import run_jobs_on
    from simulator.workloads.options import resolve_jobs

    sim, system = croit_stand_in_system(bluestore={"cache": {"size": 1 << 30, "buffered_write": True}})
    per = max(1, n // 4)
    used: dict[str, Any] = {}
    ios = 0
    t0 = time.process_time()
    for rw in ("randread", "randwrite", "randread", "randwrite"):
        jobs = resolve_jobs({"ioengine": "rbd", "pool": "test-mach2", "rbdname": "test", "rw": rw, "bs": "4k",
                             "iodepth": 64, "number_ios": per, "randseed": 1}, [{"name": "bench"}], "bench")
        res, _ = run_jobs_on(sim, system, jobs, engine="auto", used=used)
        ios += res[0].read.total_ios + res[0].write.total_ios
    cpu = time.process_time() - t0
    held = sum(len(o.bs.cache) for o in system.cluster.osds if getattr(o.bs, "cache", None) is not None)
    return ios / cpu, f"IO per CPU-s; {held:,} units cached at the end; engine {used['engine']}; load {os.getloadavg()[0]:.1f}"

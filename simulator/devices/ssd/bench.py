"""A minimal closed-loop driver for device studies (used by the DSYNC calibration and the tests).

``run_jobs`` mimics fio with ``iodepth=1`` and ``numjobs=N``: N independent workers, each keeping
exactly one request in flight. After each completion the worker spends ``host_overhead`` seconds
in the host (syscall, block layer, driver, interrupt) before it submits the next request; the
completion latency fio reports therefore includes that overhead, as it does on a real host.

Offsets: ``rw="write"`` — each job writes sequentially through its own region (capacity / N,
aligned to ``bs``), wrapping at its end; ``rw="randwrite"``/``"randread"`` — uniform random
``bs``-aligned offsets over the job's region from the driver's own stream. ``sync=True`` sets FUA on
every write (fio ``--sync=1`` as the device sees it); ``fsync=k`` issues a FLUSH after every k
writes of a job.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import simpy

from simulator.devices.base import Device, Op, Request
from simulator.engine import succeed_at

__all__ = ["JobsResult", "run_jobs"]


@dataclass
class JobsResult:
    numjobs: int
    ios: int
    seconds: float
    iops: float
    mib_s: float
    mean_lat: float
    max_ratio_service: float  # max over IOs of service / latency (must be <= 1)
    completions_ok: bool  # every submitted IO completed exactly once (after draining)

    def __str__(self) -> str:
        return f"jobs={self.numjobs} iops={self.iops:.0f} MiB/s={self.mib_s:.2f} lat={self.mean_lat * 1e6:.1f}us"


def run_jobs(
    dev: Device,
    numjobs: int,
    runtime: float,
    *,
    rw: str = "write",
    bs: int = 4096,
    sync: bool = True,
    fsync: int = 0,
    host_overhead: float = 0.0,
    warmup: float = 0.0,
    seed: int = 1,
    span: int | None = None,
) -> JobsResult:
    """Run ``numjobs`` closed-loop workers against ``dev`` for ``warmup + runtime`` simulated seconds
    (from the environment's current time) and report the window after the warmup."""
    env = dev.env
    span = span or dev.capacity
    region = (span // numjobs) // bs * bs
    if region < bs:
        raise ValueError("span too small for the number of jobs")
    rng = np.random.Generator(np.random.PCG64(seed))
    t0 = env.now
    t_meas = t0 + warmup
    t_end = t_meas + runtime
    stats = {"ios": 0, "lat": 0.0, "ratio": 0.0}
    submitted: dict[int, int] = {}
    completed: dict[int, int] = {}
    pos = [0] * numjobs
    nwrites = [0] * numjobs
    op = Op.READ if rw == "randread" else Op.WRITE
    rand = rw.startswith("rand")
    nblocks = region // bs

    def submit(j: int) -> None:
        if env.now >= t_end:
            return
        if fsync and op == Op.WRITE and nwrites[j] and nwrites[j] % fsync == 0 and pos[j] >= 0:
            nwrites[j] = 0
            req = Request(Op.FLUSH, tag=(j, len(submitted)))
        else:
            if rand:
                off = j * region + int(rng.integers(0, nblocks)) * bs
            else:
                off = j * region + pos[j]
                pos[j] = (pos[j] + bs) % region
            req = Request(op, off, bs, fua=sync and op == Op.WRITE, tag=(j, len(submitted)))
            nwrites[j] += 1
        submitted[req.tag[1]] = 1
        ev = dev.submit(req)
        ev.callbacks.append(done)

    def done(ev: simpy.Event) -> None:
        req: Request = ev.value
        completed[req.tag[1]] = completed.get(req.tag[1], 0) + 1
        now = env.now
        lat = now - req.t_submit
        if req.t_submit >= t_meas and now <= t_end and req.op != Op.FLUSH:
            stats["ios"] += 1
            stats["lat"] += lat + host_overhead
        if lat > 0:
            stats["ratio"] = max(stats["ratio"], req.service / lat)
        j = req.tag[0]
        if host_overhead > 0:
            nxt = simpy.Event(env)
            nxt.callbacks.append(lambda _e, j=j: submit(j))
            succeed_at(env, nxt, host_overhead)
        else:
            submit(j)

    for j in range(numjobs):
        submit(j)
    env.run(until=t_end)
    env.run()  # drain: no new submissions after t_end, every IO in flight completes
    ios = stats["ios"]
    ok = len(completed) == len(submitted) and all(v == 1 for v in completed.values())
    return JobsResult(
        numjobs=numjobs,
        ios=ios,
        seconds=runtime,
        iops=ios / runtime,
        mib_s=ios * bs / runtime / 2**20,
        mean_lat=stats["lat"] / ios if ios else float("nan"),
        max_ratio_service=stats["ratio"],
        completions_ok=ok,
    )

"""fio jobs on an RBD image through the compiled Ceph core: :func:`run_fio_ceph` is
:func:`simulator.workloads.runner.run_fio` for the jobs the compiled closed loop covers, with the
same results (the job thread's statistics are fed the compiled run's completions in completion
order, as the device core does; tests/test_core_ceph.py checks they equal run_fio's).

Covered: one job, one thread, one image, closed loop (an asynchronous engine, no submission
latency), one direction (write; read of objects never written), a fixed block size, number_ios /
size limits, no ramp_time / runtime / startdelay / thinktime / fsync; the cluster as
``ceph_build.unsupported_writes`` allows. :func:`unsupported_job` names what is not.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["run_fio_ceph", "unsupported_job"]


def unsupported_job(th: Any) -> str | None:
    """Why the compiled Ceph core cannot run job thread ``th`` (None = it can)."""
    job = th.job
    checks = (
        (th._nfiles != 1, "several files"),
        (th._streams is not None or th._app is not None, "sim_mix / application IO"),
        (th._mixed or len(job.ddirs) != 1, f"rw={job.rw} (one direction only)"),
        (th._ddir0 not in (0, 1), f"rw={job.rw}"),
        (th._varbs, "bssplit/bsrange"),
        (th._rate is not None, "rate_iops (open loop)"),
        (th._slat != 0.0, "a submission latency (sim_slat)"),
        (th._tt > 0.0, "thinktime"),
        (bool(th._fsync_n or th._fdsync_n or job.end_fsync), "fsync/fdatasync/end_fsync"),
        (th._fua, "sync (FUA writes)"),
        (job.ramp_time > 0, "ramp_time"),
        (th._runtime != math.inf or job.time_based, "runtime/time_based"),
        (job.startdelay[1] > 0, "startdelay"),
    )
    for bad, what in checks:
        if bad:
            return f"job {job.name!r}: {what} (the compiled Ceph core runs closed-loop jobs of one direction)"
    return None


def run_fio_ceph(sim: Any, image: Any, job: dict[str, Any], *, source: str = "run_fio_ceph") -> list:
    """Run one fio job on RBD ``image`` through the compiled Ceph core; returns run_fio's results."""
    from simulator.core.ceph_build import obj_base_of, run_closed, unsupported_reads, unsupported_writes
    from simulator.errors import ConfigError
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload

    fjobs = resolve_jobs({}, [job], source)
    if len(fjobs) != 1 or fjobs[0].numjobs != 1:
        raise ConfigError("the compiled Ceph core runs one job of one thread", source=source)
    wl = Workload(sim, fjobs, lambda _j: [image])
    th = wl.threads[0]
    why = unsupported_job(th) or (unsupported_writes(image.cluster) if th._ddir0 == 1 else None)
    if not why and th._ddir0 == 0 and bool((obj_base_of(image) >= 0).any()):
        why = unsupported_reads(image.cluster)
    if why:
        raise ConfigError(f"compiled Ceph core: {why}", source=source)
    ddir = th._ddir0
    bs = th._bs[ddir]
    n = th._ios_limit
    if th._bytes_limit != math.inf:
        n = min(n, -(-int(th._bytes_limit) // bs))
    if n == math.inf:
        raise ConfigError("the job has no IO limit (number_ios or size)", source=source)
    n = int(n)
    gen = th.files[0].gen
    offs = np.fromiter((gen.next(ddir, bs) for _ in range(n)), dtype=np.int64, count=n)
    # Workload.start -> JobThread._begin / _ramp_end (the device's statistics restart), without issuing
    env = sim.env
    now = env.now
    wl._started = True
    th._t0 = now
    th._tt_last = now
    th._t_rec = now
    th._t_stop = math.inf
    th._cpu_free = now
    th._limits_on = True
    image.reset_stats()
    wl._phase_devs.add(id(image))
    t_issue, t_done, info = run_closed(image.cluster, image, np.full(n, ddir, np.int64), offs, np.full(n, bs, np.int64),
                                       th._depth)
    order = info["done_order"]
    rows = np.empty((n, 5))
    rows[:, 0] = ddir
    rows[:, 1] = t_done[order]
    rows[:, 2] = 0.0  # slat: no submission latency
    rows[:, 3] = (t_done - t_issue)[order]
    rows[:, 4] = bs
    th.stats.add_many(rows)
    t_end = float(t_done.max()) if n else now
    th._c_ios = n
    th._c_bytes = n * bs
    th._issues[ddir] = n
    th._issuing = False
    th.done = True
    th._t_end = t_end
    th.stats.set_window(th._t_rec, max(t_end, th._t_rec))
    if env._now < t_end:
        env._now = t_end
    return wl.results()

"""Device- and cluster-level tests drive their devices with the simulator's one IO driver, the
fio workload runner (:func:`simulator.workloads.runner.run_fio`), through three small adapters
that translate the tests' historical parameters into fio options:

* :func:`closed_loop` - ``iodepth`` requests in flight, ``number_ios`` measured IOs after a
  warm-up of ``warmup`` IOs (a separate fio run on the same device: its state carries over),
  then the simulation runs until the device is idle (write-back caches destaged);
* :class:`ClosedLoop` - the same against an RBD image, ending after ``n_ios`` or ``runtime``.

(The SSD tests build their fio jobs themselves: tests/test_ssd.py ``run_jobs``.)

Per-IO figures (latency, service time, offsets) come from a :class:`RequestLog` on the device.
Offsets are uniform with replacement (``norandommap=1``) from fio's seeded streams
(``randseed``), so a seed replays its offsets (fio's randrepeat).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulator.workloads.runner import RequestLog, run_fio

__all__ = ["ClosedLoop", "LoopResult", "closed_loop"]

#: the base options: libaio (asynchronous, no per-IO submission latency unless asked), offsets
#: uniform with replacement, streams from randseed
_BASE = {"ioengine": "libaio", "sim_slat": 0, "norandommap": 1}


def _rw(write_frac: float, sequential: bool) -> dict[str, Any]:
    if write_frac <= 0:
        return {"rw": "read" if sequential else "randread"}
    if write_frac >= 1:
        return {"rw": "write" if sequential else "randwrite"}
    return {"rw": "rw" if sequential else "randrw", "rwmixwrite": round(100 * write_frac)}


@dataclass
class LoopResult:
    """Per-IO arrays of the measured IOs in completion order (and counts over the whole run)."""

    latency: np.ndarray
    service: np.ndarray
    t_submit: np.ndarray
    t_start: np.ndarray
    op: np.ndarray
    offsets: np.ndarray
    elapsed: float  # simulated seconds from the start of the measured run to its last completion
    completed: int  # measured completions
    submitted: int  # every request submitted (warm-up included)
    completions_total: int
    wall: float
    ios: int = 0
    lat: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.ios = self.completed
        self.lat = self.latency

    @property
    def iops(self) -> float:
        return self.completed / self.elapsed if self.elapsed > 0 else 0.0

    def pct(self, p: float) -> float:
        return float(np.percentile(self.latency, p)) if self.latency.size else float("nan")

    def mean_ci(self, x: np.ndarray | None = None, batches: int = 20) -> tuple[float, float]:
        """Mean and 95% half-width by batch means (honest under autocorrelation)."""
        x = self.latency if x is None else x
        n = len(x) // batches * batches
        if n < batches * 2:
            return float(np.mean(x)), float("inf")
        bm = x[:n].reshape(batches, -1).mean(axis=1)
        return float(np.mean(x)), float(2.093 * bm.std(ddof=1) / np.sqrt(batches))


def _result(log: RequestLog, t0: float, skip: int = 0, t_end: float | None = None, wall: float = 0.0) -> LoopResult:
    a = log.arrays()
    keep = np.arange(len(a["op"])) >= skip
    if t_end is not None:
        keep &= a["t_done"] <= t_end + 1e-15
    sel = {k: v[keep] for k, v in a.items()}
    start = t0
    if skip:
        done_all = a["t_done"]
        start = float(done_all[skip - 1]) if len(done_all) >= skip else t0
    end = t_end if t_end is not None else (float(sel["t_done"][-1]) if sel["t_done"].size else start)
    return LoopResult(sel["latency"], sel["service"], sel["t_submit"], sel["t_start"], sel["op"], sel["offset"],
                      end - start, int(keep.sum()), log.submitted, log.completed, wall)


def closed_loop(sim, dev, *, n_ios: int, qd: int = 1, bs: int = 4096, span: int | None = None, base: int = 0,
                write_frac: float = 0.0, fua: bool = False, sequential: bool = False, warmup: int = 0,
                seed: int = 1) -> LoopResult:
    """``warmup`` IOs, then ``n_ios`` measured ones, ``qd`` in flight, offsets over [base, base+span)."""
    span = int(dev.capacity - base if span is None else span)
    log = RequestLog(dev)
    opts = {**_BASE, **_rw(write_frac, sequential), "iodepth": qd, "bs": bs, "offset": base, "size": span,
            "sync": int(fua)}
    w0 = time.perf_counter()
    if warmup:
        log.recording = False
        run_fio(sim, [log], {**opts, "name": "warmup", "number_ios": warmup, "randseed": seed + 7919,
                             "loops": math.ceil(warmup * bs / span) + 1})
        log.recording = True
    t0 = sim.now
    run_fio(sim, [log], {**opts, "name": "loop", "number_ios": n_ios, "randseed": seed, "loops": math.ceil(n_ios * bs / span) + 1})
    wall = time.perf_counter() - w0
    sim.run()  # then the device drains (write-back destaging, deferred work) until it is idle
    return _result(log, t0, wall=wall)


class ClosedLoop:
    """``qd`` requests of ``bs`` bytes in flight on ``dev`` until ``n_ios`` (after ``ramp_ios``)
    complete or ``runtime`` simulated seconds pass. ``rw``: randread, randwrite, read, write, or
    randrw (50/50)."""

    def __init__(self, sim, dev, qd: int = 1, bs: int = 4096, rw: str = "randwrite", n_ios: int | None = None,
                 runtime: float | None = None, seed: int = 0, span: int | None = None, ramp_ios: int = 0):
        if n_ios is None and runtime is None:
            raise ValueError("give n_ios or runtime")
        self.sim, self.dev = sim, dev
        span = int(dev.capacity if span is None else min(span, dev.capacity))
        self.opts: dict[str, Any] = {**_BASE, "rw": rw, "iodepth": qd, "bs": bs, "size": span, "randseed": seed}
        if rw == "randrw":
            self.opts["rwmixread"] = 50
        self.n_ios, self.runtime, self.ramp = n_ios, runtime, ramp_ios
        self.log: RequestLog | None = None
        if n_ios is not None:
            total = n_ios + ramp_ios
            self.opts.update(number_ios=total, loops=math.ceil(total * bs / span) + 1)
            if runtime is not None:
                self.opts.update(runtime=runtime)
        else:
            self.opts.update(time_based=1, runtime=runtime)

    @property
    def issued(self) -> int:
        return self.log.submitted if self.log is not None else 0

    @property
    def completed(self) -> int:
        return self.log.completed if self.log is not None else 0

    @property
    def inflight(self) -> int:
        return self.issued - self.completed

    def run(self) -> LoopResult:
        self.log = log = RequestLog(self.dev)
        t0 = self.sim.now
        w0 = time.perf_counter()
        run_fio(self.sim, [log], {**self.opts, "name": "loop"})
        t_end = t0 + self.runtime if self.n_ios is None else None
        return _result(log, t0, skip=self.ramp, t_end=t_end, wall=time.perf_counter() - w0)

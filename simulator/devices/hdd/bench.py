"""A tiny closed-loop driver for any Device (used by the HDD tests and the speed benchmark) and
``bench_hdd_sptf_qd32``: simulated IOs per wall-clock second for one HDD, SPTF, 4 KiB random
read, QD32.

The driver is deliberately independent of the workload layer: ``qd`` requests in flight, offsets
from a numpy generator, every completion resubmits the next request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from simulator.devices.base import Device, Request
from simulator.engine import Simulation

__all__ = ["LoopResult", "bench_hdd_sptf_qd32", "closed_loop", "make_hdd"]


@dataclass
class LoopResult:
    """Per-IO arrays of the measured (post-warm-up) requests, in completion order."""

    latency: np.ndarray
    service: np.ndarray
    t_submit: np.ndarray
    t_start: np.ndarray
    op: np.ndarray
    elapsed: float  # simulated seconds from the first measured submit to the last completion
    completed: int  # completions counted (measured ones)
    submitted: int
    completions_total: int
    wall: float

    @property
    def iops(self) -> float:
        return self.completed / self.elapsed if self.elapsed > 0 else 0.0

    def mean_ci(self, x: np.ndarray | None = None, batches: int = 20) -> tuple[float, float]:
        """Mean and 95% half-width by batch means (honest under autocorrelation)."""
        x = self.latency if x is None else x
        n = len(x) // batches * batches
        if n < batches * 2:
            return float(np.mean(x)), float("inf")
        bm = x[:n].reshape(batches, -1).mean(axis=1)
        return float(np.mean(x)), float(2.093 * bm.std(ddof=1) / np.sqrt(batches))


def closed_loop(
    sim: Simulation,
    dev: Device,
    *,
    n_ios: int,
    qd: int = 1,
    bs: int = 4096,
    span: int | None = None,
    base: int = 0,
    write_frac: float = 0.0,
    fua: bool = False,
    sequential: bool = False,
    warmup: int = 0,
    seed: int = 1,
) -> LoopResult:
    """Run ``warmup + n_ios`` requests through ``dev`` with ``qd`` in flight; return the measured ones.

    Offsets are uniform over [base, base+span) aligned to ``bs`` (or sequential from ``base``).
    """
    rng = np.random.default_rng(seed)
    span = dev.capacity - base if span is None else span
    nblk = max(1, span // bs)
    total = warmup + n_ios
    if sequential:
        offs = (base + (np.arange(total) % nblk) * bs).tolist()
    else:
        offs = (base + rng.integers(0, nblk, size=total) * bs).tolist()
    ops = (rng.random(total) < write_frac).astype(np.int64).tolist() if write_frac > 0 else [0] * total
    lat: list[float] = []
    svc: list[float] = []
    tsub: list[float] = []
    tst: list[float] = []
    opa: list[int] = []
    env = sim.env
    submit = dev.submit
    issued = 0
    done = 0
    t0: float | None = None
    tlast = 0.0

    def issue() -> None:
        nonlocal issued, t0
        i = issued
        issued = i + 1
        op = ops[i]
        r = Request(op, offs[i], bs, fua=fua and op == 1, tag=i)
        if i == warmup:
            t0 = env.now
        submit(r).callbacks.append(on_done)

    def on_done(ev: Any) -> None:
        nonlocal done, tlast
        r = ev._value
        done += 1
        if r.tag >= warmup and len(lat) < n_ios:
            now = env.now
            lat.append(now - r.t_submit)
            svc.append(r.service)
            tsub.append(r.t_submit)
            tst.append(r.t_start)
            opa.append(r.op)
            tlast = now
        if issued < total:
            issue()

    w0 = time.perf_counter()
    for _ in range(min(qd, total)):
        issue()
    if warmup == 0:
        t0 = env.now
    sim.run()
    wall = time.perf_counter() - w0
    m = len(lat)
    start = t0 if t0 is not None else 0.0
    return LoopResult(
        np.array(lat),
        np.array(svc),
        np.array(tsub),
        np.array(tst),
        np.array(opa, dtype=np.int64),
        tlast - start,
        m,
        issued,
        done,
        wall,
    )


def make_hdd(
    profile: str | None = None, seed: int = 1, name: str = "sda", **overrides: Any
) -> tuple[Simulation, Device]:
    """A Simulation with one HDD built from a profile (path under models/, e.g. 'hdd/seagate_st91000640ns')
    or the defaults, with dotted-key ``overrides`` ({"queue.policy": "fifo"} via keyword dict)."""
    from simulator.config.base import set_dotted
    from simulator.devices.registry import build_device

    params: dict[str, Any] = {}
    for k, v in overrides.items():
        params = set_dotted(params, k.replace("__", "."), v)
    spec: dict[str, Any] = {"kind": "hdd", "params": params}
    if profile:
        spec["profile"] = profile
    sim = Simulation(seed)
    dev = build_device(spec, name, sim.root)
    return sim, dev


def bench_hdd_sptf_qd32(
    n_ios: int = 200_000, profile: str = "hdd/seagate_st91000640ns", seed: int = 1, repeats: int = 1
) -> float:
    """Simulated IOs per wall-clock second: one HDD, SPTF, 4 KiB random read over the whole drive,
    QD32, closed loop (the driver above). numba compilation and cache loading are excluded by a
    short warm-up run first. With ``repeats`` > 1 the best of that many runs is returned (wall
    time on a shared machine is noisy; the best run is the least disturbed)."""
    sim, dev = make_hdd(profile, seed=seed, **{"queue.policy": "sptf", "queue.depth": 32})
    closed_loop(sim, dev, n_ios=2000, qd=32, bs=4096, seed=seed)
    best = 0.0
    for k in range(max(1, repeats)):
        sim, dev = make_hdd(profile, seed=seed + k, **{"queue.policy": "sptf", "queue.depth": 32})
        res = closed_loop(sim, dev, n_ios=n_ios, qd=32, bs=4096, seed=seed + 1 + k)
        best = max(best, res.completions_total / res.wall)
    return best


if __name__ == "__main__":  # pragma: no cover
    import sys

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    print(f"{bench_hdd_sptf_qd32(n, repeats=3):,.0f} simulated IO/s (best of 3)")

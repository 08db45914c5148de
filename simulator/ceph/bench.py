"""A minimal closed-loop driver (fio-like: ``iodepth`` requests in flight, uniform random aligned
offsets from a seeded generator that replays with the same seed, like fio's randrepeat=1) and the
speed benchmark of the Ceph layer.

The real workload layer lives in ``simulator.workloads``; this driver exists so the Ceph model can
be exercised and benchmarked on its own (tests, ``bench_ceph_randwrite_qd64``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import simpy

from simulator.devices.base import Device, Op, Request
from simulator.engine import Simulation

__all__ = ["ClosedLoop", "LoopResult", "bench_ceph_randwrite_qd64", "build_cluster_from_profile", "stand_in_profile"]


@dataclass
class LoopResult:
    ios: int
    elapsed: float  # simulated seconds of the measured window
    lat: np.ndarray = field(repr=False)  # seconds, completion order
    offsets: np.ndarray = field(repr=False)  # offset of each completed IO, completion order

    @property
    def iops(self) -> float:
        return self.ios / self.elapsed if self.elapsed > 0 else 0.0

    def pct(self, p: float) -> float:
        return float(np.percentile(self.lat, p)) if self.lat.size else float("nan")

    def summary(self) -> dict[str, float]:
        return {
            "iops": self.iops,
            "mean_ms": float(self.lat.mean() * 1e3) if self.lat.size else float("nan"),
            "p50_ms": self.pct(50) * 1e3,
            "p99_ms": self.pct(99) * 1e3,
        }


class ClosedLoop:
    """Keep ``qd`` requests of ``bs`` bytes in flight on ``dev`` until ``n_ios`` complete or
    ``runtime`` simulated seconds pass (the first ``ramp_ios`` completions are not recorded).

    ``rw``: randread, randwrite, read, write, or randrw (50/50 by a second seeded stream).
    ``span``: bytes of the device addressed from offset 0 (default: all of it).
    """

    def __init__(
        self,
        sim: Simulation,
        dev: Device,
        qd: int = 1,
        bs: int = 4096,
        rw: str = "randwrite",
        n_ios: int | None = None,
        runtime: float | None = None,
        seed: int = 0,
        span: int | None = None,
        ramp_ios: int = 0,
        offsets: np.ndarray | None = None,
    ):
        if n_ios is None and runtime is None:
            raise ValueError("give n_ios or runtime")
        self.sim = sim
        self.env = sim.env
        self.dev = dev
        self.qd = qd
        self.bs = bs
        self.rw = rw
        self.n_ios = n_ios
        self.runtime = runtime
        self.ramp = ramp_ios
        span = dev.capacity if span is None else min(span, dev.capacity)
        self.nblocks = max(1, span // bs)
        self._rng = np.random.Generator(np.random.PCG64(seed))
        self._mix = np.random.Generator(np.random.PCG64(seed + 7919))
        self._given = offsets
        self._buf: list[int] = []
        self._bi = 0
        self._seq = 0
        self.issued = 0
        self.completed = 0
        self.inflight = 0
        self._lat: list[float] = []
        self._off: list[int] = []
        self._stop = False
        self._t_start = 0.0
        self._t_end = 0.0

    def _next_offset(self) -> int:
        if self._given is not None:
            o = int(self._given[self.issued % len(self._given)])
            return o
        if self.rw in ("read", "write"):
            o = (self._seq % self.nblocks) * self.bs
            self._seq += 1
            return o
        if self._bi >= len(self._buf):
            self._buf = (self._rng.integers(0, self.nblocks, 8192) * self.bs).tolist()
            self._bi = 0
        o = self._buf[self._bi]
        self._bi += 1
        return o

    def _op(self) -> int:
        if self.rw in ("randread", "read"):
            return Op.READ
        if self.rw in ("randwrite", "write"):
            return Op.WRITE
        return Op.READ if self._mix.random() < 0.5 else Op.WRITE

    def _submit(self) -> None:
        req = Request(self._op(), self._next_offset(), self.bs)
        self.issued += 1
        self.inflight += 1
        self.dev.submit(req).callbacks.append(self._done)

    def _done(self, ev: Any) -> None:
        req = ev._value
        req.event = None  # break the request <-> event cycle
        self.inflight -= 1
        if self._stop:  # draining after the end: not recorded
            return
        self.completed += 1
        now = self.env._now
        if self.completed == self.ramp:
            self._t_start = now
        elif self.completed > self.ramp:
            self._lat.append(now - req.t_submit)
            self._off.append(req.offset)
        if self.n_ios is not None and self.completed - self.ramp >= self.n_ios:
            self._stop = True
            self._t_end = now
            self.done.succeed()
        else:
            self._submit()

    def _timeout(self, ev: Any) -> None:
        if not self.done.triggered:
            self._stop = True
            self._t_end = self.env._now
            self.done.succeed()

    def run(self) -> LoopResult:
        env = self.env
        self.done = simpy.Event(env)
        self._t_start = env.now
        if self.runtime is not None:
            t = simpy.Event(env)
            t.callbacks.append(self._timeout)
            t._ok = True
            t._value = None
            env.schedule(t, delay=self.runtime)
        for _ in range(self.qd):
            self._submit()
        self.sim.run(until=self.done)
        # let the requests still in flight finish so the next run starts from a quiet queue
        # (as fio waits for its in-flight IOs at the end of a job)
        while self.inflight > 0 and env.peek() != float("inf"):
            env.step()
        lat = np.asarray(self._lat)
        return LoopResult(len(lat), self._t_end - self._t_start, lat, np.asarray(self._off, dtype=np.int64))


# ------------------------------------------------------------------------------------------- bench
def _models_dir() -> Path:
    from simulator.devices.registry import models_dir

    return models_dir()


def stand_in_profile(params: dict[str, Any]) -> dict[str, Any]:
    """Replace every drive/DB device spec in ``params`` by a queue device (service 8 ms
    exponential; a drive split into LUNs becomes two independent 7 TB devices; others keep the
    capacity given in their params, else 10 TB): for running a cluster description before the
    HDD/SSD kinds exist, and for speed measurements of the Ceph layer alone."""
    import copy

    p = copy.deepcopy(params)
    for h in p.get("hosts", []):
        for g in h.get("drives", []):
            cap = (g.get("device", {}).get("params") or {}).get("capacity", "10TB")
            if g.get("split") == "luns":  # two independent half-size devices per drive
                g["split"] = 1
                g["count"] = 2 * g.get("count", 1)
                cap = "7TB"
            g["device"] = {"kind": "queue", "params": {"capacity": cap, "service": {"dist": "exponential", "mean": "8ms"}}}
        if h.get("db_devices"):
            h["db_devices"]["device"] = {"kind": "queue", "params": {"capacity": "1TB", "service": {"dist": "deterministic", "value": "50us"}}}
    return p


def build_cluster_from_profile(sim: Simulation, ref: str = "clusters/croit_mach2", params: dict[str, Any] | None = None,
                               stand_in: bool = False, name: str = "cluster",
                               overrides: dict[str, Any] | None = None) -> Any:
    """Build a cluster profile (``models/<ref>.yaml``) in ``sim``: ``params`` deep-merged over the
    profile's, then ``overrides`` (dotted keys, e.g. ``hosts.0.drives.1.split: 1``); ``stand_in``
    replaces the drives by queue devices."""
    import simulator.ceph  # noqa: F401
    from simulator.ceph.cluster import Cluster
    from simulator.ceph.config import ClusterConfig
    from simulator.config.base import apply_overrides, validate
    from simulator.devices.registry import deep_merge, load_profile

    prof = load_profile(ref)
    p = prof["params"]
    if params:
        p = deep_merge(p, params)
    if overrides:
        p = apply_overrides(p, overrides, source="overrides")
    if stand_in:
        p = stand_in_profile(p)
    cfg = validate(ClusterConfig, p, source=prof["file"], prefix="params")
    return Cluster(cfg, name, sim.root)


def bench_ceph_randwrite_qd64(n_ios: int = 20000, seed: int = 1, stand_in: bool | None = None) -> float:
    """Simulated client IO/s per wall-clock second: croit MACH.2 pool, 4 KiB randwrite, QD64.

    The cluster is built first (not timed); ``stand_in=None`` uses the real HDD profiles when
    the ``hdd`` device kind is available, else queue devices.
    """
    from simulator.devices.registry import device_kinds

    if stand_in is None:
        stand_in = "hdd" not in device_kinds()
    sim = Simulation(seed=seed)
    cl = build_cluster_from_profile(sim, stand_in=stand_in)
    img = cl.image("test-mach2", "test")
    loop = ClosedLoop(sim, img, qd=64, bs=4096, rw="randwrite", n_ios=n_ios, seed=seed, ramp_ios=0)
    t0 = time.perf_counter()
    loop.run()
    wall = time.perf_counter() - t0
    return n_ios / wall


if __name__ == "__main__":  # pragma: no cover
    import sys

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    print(f"{bench_ceph_randwrite_qd64(n):.0f} simulated IO/s per wall second")

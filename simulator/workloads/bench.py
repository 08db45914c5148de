"""Throughput of the workload layer: simulated IOs per wall-clock second.

Runs one fio job against a :class:`~simulator.devices.simple.QueueDevice` with deterministic
service, so the figure measures the per-IO path (completion callback -> record -> next offset ->
new Request -> device.submit) plus the SimPy event and the queue device, nothing else.
"""

from __future__ import annotations

import time
from typing import Any

from simulator.devices.simple import QueueDevice, QueueDeviceConfig
from simulator.engine import Simulation
from simulator.workloads.options import resolve_jobs
from simulator.workloads.runner import Workload

__all__ = ["NullStats", "workload_bench"]


class NullStats:
    """A JobStats stand-in that records nothing (isolates the workload layer's own cost)."""

    def __init__(self, name: str, options: dict[str, str], groupid: int = 0, jobs: int = 1):
        self.name = name

    def add(self, ddir: int, t_done: float, slat: float, clat: float, nbytes: int) -> None:
        pass

    def add_sync(self, t_done: float, lat: float) -> None:
        pass

    def set_window(self, t_start: float, t_end: float) -> None:
        pass

    def result(self) -> None:
        return None


def workload_bench(
    n_ios: int = 300_000,
    iodepth: int = 16,
    rw: str = "randread",
    stats: str = "null",
    extra: dict[str, Any] | None = None,
    seed: int = 1,
) -> dict[str, float]:
    """Simulate ``n_ios`` IOs of one libaio job (slat 0) at ``iodepth`` on a 100 µs queue device.

    ``stats``: "null" (no recording) or "real" (the metrics layer's JobStats).
    Returns ``{"ios", "wall_s", "cpu_s", "ios_per_s", "ios_per_cpu_s"}``; the per-CPU-second figure
    is the one-core throughput and is less disturbed by other load on the machine.
    """
    sim = Simulation(seed)
    cfg = QueueDeviceConfig.model_validate(
        {"capacity": "1TiB", "service": {"dist": "deterministic", "value": 1e-4}}
    )
    dev = QueueDevice(cfg, "dev", sim.root)
    opts = {"ioengine": "libaio", "sim_slat": 0, "rw": rw, "iodepth": iodepth, "number_ios": n_ios}
    opts.update(extra or {})
    jobs = resolve_jobs({}, [opts])
    factory = NullStats if stats == "null" else None
    wl = Workload(sim, jobs, lambda job: [dev], stats_factory=factory)
    done = wl.start()
    t = time.perf_counter()
    c = time.process_time()
    sim.run(until=done)
    if stats != "null":
        wl.results()
    cpu = time.process_time() - c
    wall = time.perf_counter() - t
    return {
        "ios": float(n_ios),
        "wall_s": wall,
        "cpu_s": cpu,
        "ios_per_s": n_ios / wall,
        "ios_per_cpu_s": n_ios / max(cpu, 1e-9),
    }

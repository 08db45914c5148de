"""One fio job against one HDD profile, optionally behind the Linux block layer: the measurement
the HDD queue-depth validation and the tests use (through the one IO driver,
:mod:`simulator.workloads.runner`).

``run_job(profile, {"rw": "randread", "iodepth": 8, ...}, params=..., block_layer=...)`` builds a
simulation, the drive (profile + parameter overrides), a :class:`BlockLayer` in front of it unless
``block_layer`` is None, runs the job and returns the job's result and the devices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.devices.blocklayer import BlockLayer, BlockLayerConfig
from simulator.devices.registry import build_device, deep_merge

__all__ = ["JobRun", "run_job"]

#: fio options of the raw-device job of the issue-10 sweeps (4 KiB, libaio, direct, whole device)
RAW_JOB = {"bs": "4k", "ioengine": "libaio", "direct": 1, "numjobs": 1, "time_based": None, "norandommap": None}


@dataclass
class JobRun:
    result: Any  # JobResult of the job
    device: Any  # the drive
    front: Any  # what the job submitted to (the block layer, or the drive)
    sim: Any

    def dir(self, rw: str) -> Any:
        return self.result.dirs[1 if "write" in rw else 0]


def run_job(
    profile: str,
    job: dict[str, Any],
    *,
    params: dict[str, Any] | None = None,
    block_layer: BlockLayerConfig | dict[str, Any] | None = None,
    seed: int = 1,
) -> JobRun:
    """Run one fio job (option mapping) against ``profile`` with ``params`` deep-merged over it."""
    from simulator.engine import Simulation
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload

    sim = Simulation(seed)
    spec: dict[str, Any] = {"profile": profile}
    if params:
        spec["params"] = deep_merge({}, params)
    dev = build_device(spec, "hdd", sim.root)
    front = dev
    if block_layer is not None:
        cfg = block_layer if isinstance(block_layer, BlockLayerConfig) else BlockLayerConfig(**block_layer)
        if cfg.enabled:
            front = BlockLayer("blk", sim.root, dev, cfg)
    opts = {**RAW_JOB, **job}
    jobs = resolve_jobs({}, [{"name": "job", **opts}], "sweep")
    wl = Workload(sim, jobs, lambda _j: [front])
    done = wl.start()
    sim.run(until=done)
    return JobRun(wl.results()[0], dev, front, sim)

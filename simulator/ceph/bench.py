"""Building a cluster profile outside an experiment (tests, studies, ``simrun bench``), with
optional stand-in queue devices for the drives, and the Ceph case of the speed benchmark. IO goes
through the one driver, :func:`simulator.workloads.runner.run_fio`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from simulator.engine import Simulation

__all__ = ["bench_ceph_randrw_4m", "bench_ceph_randwrite_qd64", "build_cluster_from_profile", "stand_in_profile"]


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
    """Simulated client IO/s per wall-clock second: croit MACH.2 pool, 4 KiB randwrite, QD64,
    through the fio workload runner (libaio, no submission latency, offsets uniform with
    replacement).

    The cluster is built first (not timed); ``stand_in=None`` uses the real HDD profiles when
    the ``hdd`` device kind is available, else queue devices.
    """
    from simulator.devices.registry import device_kinds
    from simulator.workloads.runner import run_fio

    if stand_in is None:
        stand_in = "hdd" not in device_kinds()
    sim = Simulation(seed=seed)
    cl = build_cluster_from_profile(sim, stand_in=stand_in)
    img = cl.image("test-mach2", "test")
    job = {"name": "bench", "ioengine": "libaio", "sim_slat": 0, "rw": "randwrite", "bs": 4096, "iodepth": 64,
           "number_ios": n_ios, "norandommap": 1, "randseed": seed}
    t0 = time.perf_counter()
    run_fio(sim, [img], job, source="bench")
    wall = time.perf_counter() - t0
    return n_ios / wall


def bench_ceph_randrw_4m(n_ios: int = 2000, seed: int = 1) -> float:
    """Simulated client IO/s per wall-clock second: croit MACH.2 pool (real HDD profiles), 4 MiB
    random read/write 50/50 at QD16 over the first 2 GiB of the image, after one untimed pass of
    200 IOs: the data cache's range operations (a 4 MiB IO is 1,024 read units) dominate the
    Ceph layer's cost."""
    from simulator.workloads.runner import run_fio

    sim = Simulation(seed=seed)
    cl = build_cluster_from_profile(sim)
    img = cl.image("test-mach2", "test")
    job = {"name": "bench", "ioengine": "libaio", "sim_slat": 0, "rw": "randrw", "bs": "4M", "iodepth": 16,
           "norandommap": 1, "randseed": seed, "size": "2G"}
    run_fio(sim, [img], {**job, "number_ios": 200}, source="bench")
    t0 = time.perf_counter()
    run_fio(sim, [img], {**job, "number_ios": n_ios}, source="bench")
    return n_ios / (time.perf_counter() - t0)


if __name__ == "__main__":  # pragma: no cover
    import sys

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    print(f"{bench_ceph_randwrite_qd64(n):.0f} simulated IO/s per wall second")

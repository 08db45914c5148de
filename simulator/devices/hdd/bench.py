"""Building one HDD for a study or a test (``make_hdd``). Runs go through the one IO driver,
:func:`simulator.workloads.runner.run_fio`; the speed benchmark is ``simrun bench``
(:mod:`simulator.bench`)."""

from __future__ import annotations

from typing import Any

from simulator.devices.base import Device
from simulator.engine import Simulation

__all__ = ["make_hdd"]


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

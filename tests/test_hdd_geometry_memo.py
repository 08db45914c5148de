"""HDD drives built from one config object share its derived geometry and seek table
(simulator.devices.hdd.drive._geometry): the same numbers derive gives, once per (config, actuators),
and the memo forgets a config when it is gone (a later config at the same address gets its own)."""

from __future__ import annotations

import gc

import numpy as np

from simulator.devices.hdd import drive as D
from simulator.devices.hdd.config import derive
from simulator.devices.registry import build_device, resolve_params
from simulator.engine import Simulation


def test_drives_of_one_config_share_its_geometry() -> None:
    kind, cfg, _ = resolve_params({"profile": "hdd/seagate_exos_2x18"})
    sim = Simulation(1)
    drives = [kind.build(cfg, f"d{i}", sim.root) for i in range(3)]
    luns = [a for d in drives for a in d.actuators]
    assert len(luns) == 6 and len({id(a.geo) for a in luns}) == 1 and len({id(a._et) for a in luns}) == 1
    want = derive(cfg, 2)
    got = luns[0].geo
    assert (got.heads, got.total_sectors, got.ncyl, got.rev_time) == (want.heads, want.total_sectors, want.ncyl, want.rev_time)
    for f in ("zt", "sk", "tt"):
        assert np.array_equal(getattr(got, f), getattr(want, f))
    assert np.array_equal(luns[0]._et, D._seek_table(want, cfg.queue.estimate_bins))
    other = cfg.model_copy()  # an equal config, another object: its own entry, gone with it
    assert D._geometry(other, 1)[0] is not D._geometry(cfg, 1)[0]
    key = (id(other), 1)
    assert key in D._GEOMETRY
    del other
    gc.collect()
    assert key not in D._GEOMETRY


def test_another_config_gets_its_own_geometry() -> None:
    sim = Simulation(1)
    a = build_device({"profile": "hdd/seagate_exos_2x18", "params": {"rotation": {"rpm": 7200}}}, "a", sim.root)
    b = build_device({"profile": "hdd/seagate_exos_2x18", "params": {"rotation": {"rpm": 5400}}}, "b", sim.root)
    assert a.actuators[0].geo.rev_time != b.actuators[0].geo.rev_time

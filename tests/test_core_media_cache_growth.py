"""The device core's media-cache extent table grows in place (loop._h_grow_extents, HI_ECAP): each
HDD's table is a block reserved for its worst case (one extent per sector of the media cache:
13.7 M per LUN of the Exos 2X14) of which a run uses a start (run.MC_SLOTS_START beyond the DRAM
stage) and doubles it as the Python drive's HDD._grow does. The compiled Ceph core, which cannot swap
its arrays between events, used to size the table once and refuse a media cache over 2^20 extents
(run.fixed_table_why): every Ceph run on the 2X14's own mode fell back to the Python engine.

The oracle is the Python model (tests/test_core_ceph_devices.py's check: every request's issue and
completion time, OSD / BlueStore / device counters); the start is shrunk so a short run doubles the
table several times, with the cleaning list and the DRAM stage wrapped around their rings.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from resident import resident_bytes

MACH2 = "hdd/seagate_exos_2x14"




@pytest.mark.parametrize("start", [8, 32])
def test_bluestore_over_a_media_cache_larger_than_its_first_table_identical(monkeypatch, start):
    """The compiled Ceph core over MACH.2 LUNs (behind the block layer) with a 1 GiB media cache
    (2 M extents per LUN at most, far over the table's first ``start`` slots): it runs compiled, the
    tables double in place (capacity a power-of-two multiple of the start, above it), and the run is
    identical to the Python model's, appends and cleaning writes included."""
    from test_core_ceph_devices import _check_identical, _drives, _params

    from simulator.core import layout as DL
    from simulator.core import run as R
    from simulator.devices.hdd import wcache_kernels as W

    monkeypatch.setattr(R, "MC_SLOTS_START", start)
    caps: list[np.ndarray] = []
    real = R.device_state

    def spy(*a, **kw):
        st, meta = real(*a, **kw)
        caps.append(st.hi)  # the State's HDD rows: read after the run
        return st, meta

    monkeypatch.setattr(R, "device_state", spy)
    dev = {"kind": "hdd", "profile": MACH2, "params": {"cache": {"write_cache": "media_cache", "media_cache_size": "1GiB"}}}
    r = _check_identical(_params(dev, True, {}, split="luns"), n=2000)
    appends = cleaned = 0
    for a, b in zip(_drives(r["py"]), _drives(r["cc"]), strict=True):
        ha, hb = a.stats().get("hdd"), b.stats().get("hdd")
        if ha is not None:
            for k in ("media_cache_appends", "destaged_extents", "media_cache_bytes", "dirty_bytes", "write_coalesced"):
                assert ha[k] == hb[k], (a.path, k)
            appends += ha["media_cache_appends"]
            cleaned += ha["destaged_extents"]
    assert appends > 0 and cleaned > 0
    (hi,) = caps
    luns = {id(d): d for d in _drives(r["cc"]) if getattr(d, "_wc", None) == "media_cache"}
    first = R._table_slots(next(iter(luns.values())))[0]  # DRAM-stage slots + 2 + start
    assert first == R._extent_slots(next(iter(luns.values()))) + 2 + start
    grown = hi[hi[:, DL.HI_WC] == W.WC_MEDIA, DL.HI_ECAP]
    assert len(grown) >= 3, grown  # the LUNs the run's OSDs reach
    # every LUN's table started at ``first`` slots and doubled: a power of two times it (a LUN holding
    # few extents keeps its start; the busiest doubled at least twice)
    assert (grown > first).sum() >= 3 and grown.max() >= 4 * first, grown
    for c in grown.tolist():
        q = c // first
        assert c == q * first and q & (q - 1) == 0, (c, first)


def test_standalone_media_cache_grows_from_a_tiny_start_identical(monkeypatch):
    """An Exos X24 (its own media cache, idle cleaning) under 4 KiB random writes at QD32 from a start of
    2 slots beyond the DRAM stage: thousands of extents wait in the media cache, the table doubles 8
    times (20 -> 5,120 slots) with the DRAM stage's ring moving, and the fio document, the drive's
    counters, the log pointer and the extents left in DRAM equal the Python drive's."""
    from test_core_hdd_wcache import _BASE, _run_pair

    from simulator.core import run as R

    monkeypatch.setattr(R, "MC_SLOTS_START", 2)
    spec = {"profile": "hdd/seagate_exos_x24", "params": {"cache": {"write_cache": "media_cache", "cleaning_interleave": 0}}}
    out = _run_pair(spec, {**_BASE, "rw": "randwrite", "iodepth": 32, "number_ios": 5000}, 4)
    assert out[1] == out[0]
    assert out[0][4] // 4096 > 2000  # extents left in the media cache at the end


def test_the_2x14_profile_runs_compiled_under_ceph():
    """The croit cluster on the drives' own mode (clusters/croit_mach2: the 2X14 LUNs' 7 GB media
    caches) is no longer refused: the reservation check passes (13.4 GiB of address space for its 12
    LUNs' blocks, none of it memory until used) and a short MACH.2 randwrite point of the flagship
    experiment runs in the compiled Ceph core (the runner's engine report)."""
    import simulator

    sets = {
        "system.cluster.profile": "clusters/croit_mach2",
        "system.cluster.params": {},
        "sweep.axes.mode.values": {"random": {}},
        "sweep.axes.qd.values": [16],
        "sweep.axes.pool.values": {"mach2": {"workload.global.pool": "test-mach2"}},
        "sweep.axes.rw.values": {"randwrite": {"workload.global.rw": "randwrite"}},
        "sweep.exclude": [],
        "sweep.reruns": [],
        "workload.global.runtime": "0.5s",
        "report.plots": [],
        "report.ratio": None,
    }
    res = simulator.simulate("experiments/mach2_vs_single.yaml", set=sets, workers=1).result
    (o,) = res.run.outputs
    assert o.extra["engine"] == "compiled", o.extra.get("why")
    assert o.ios > 0


def test_reservation_beyond_the_address_space_budget_is_refused(monkeypatch):
    """What stays refused is what no table can hold: worst-case blocks over EXTENT_RESERVE_MAX bytes of
    address space (here the budget lowered below the 12 LUNs' 13.4 GiB)."""
    from test_core_ceph_devices import _cluster, _params

    from simulator.core import run as R
    from simulator.core.ceph_build import unsupported_writes

    dev = {"kind": "hdd", "profile": MACH2}
    _sim, cl = _cluster(_params(dev, True, {}, split="luns"))
    assert unsupported_writes(cl) is None
    monkeypatch.setattr(R, "EXTENT_RESERVE_MAX", 1 << 30)
    why = unsupported_writes(cl)
    assert why is not None and "address space" in why and "13,671,886 extents" in why and "13.4 GiB" in why, why


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="page residency is read from Linux's pagemap")
def test_media_cache_table_memory_follows_the_extents_used():
    """A 2X14 LUN's worst-case block (13.7 M slots, 1.2 GB of address space over the five tables)
    costs memory only for the slots a run reaches: after 6,000 random writes that leave thousands of
    extents in the media cache, the resident pages of the five tables are within what their capacity
    HI_ECAP covers (plus a page per table), and the capacity is far below the block."""
    from simulator.core import layout as DL
    from simulator.core.run import EXTENT_SLOT_WORDS, _table_slots, run_workload
    from simulator.devices.registry import build_device
    from simulator.engine import Simulation
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload

    sim = Simulation(2)
    dev = build_device({"profile": MACH2, "params": {"cache": {"cleaning_interleave": 0}}}, "dev", sim.root)
    lun = dev.actuators[0]
    job = {"name": "j", "bs": "4k", "ioengine": "libaio", "sim_slat": 0, "norandommap": 1, "rw": "randwrite",
           "iodepth": 32, "number_ios": 6000}
    wl = Workload(sim, resolve_jobs({}, [job], "t"), lambda _j: [lun])
    st = run_workload(sim, wl).st
    cap = int(st.hi[0, DL.HI_ECAP])
    start, worst = _table_slots(lun)
    assert st.hext.shape[1] == worst and worst > 13_000_000
    assert cap > start and cap < worst // 1000, (cap, start, worst)
    resident = sum(resident_bytes(a) for a in (st.hext, st.hlive, st.hefree, st.hdq, st.hdr))
    caps = int(st.hi[:, DL.HI_ECAP].sum())  # every HDD row of the State (the LUN's)
    bound = caps * EXTENT_SLOT_WORDS * 8 + 5 * 2 * 4096 * st.hi.shape[0]
    assert resident <= bound, (resident, bound)

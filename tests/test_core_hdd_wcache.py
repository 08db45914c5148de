"""The HDD write-cache modes beyond off/volatile in the compiled device core (simulator.core.loop),
against the Python drive (devices/hdd/drive.py, the reference): ``persistent`` (a non-volatile
cache, Seagate AWC) and ``media_cache`` (a DRAM stage appended to an on-platter media cache, cleaned
home later). Both engines take the mode's rules from one place (wcache_kernels: wc_write_rule,
wc_flush_waits, wc_destage_mode, mc_append_due, mc_append_start, the extent table), so the runs must
be identical: completion times, fio documents, every counter of Device.stats() (destages = cleaning
writes, appends, media-cache bytes) and the final dirty state. ``cache.queued_write_candidates``
(queued writes a full volatile cache refused stay reordering candidates) is covered too.

Mutation notes (checked by hand while writing the tests; each made the named test fail):
* not adding the non-volatile commit (HF_NV_ACK) to a cached write's ack in loop._h_accept ->
  test_hdd_persistent_write_cache_identical_to_python (every case with persistent_ack > 0);
* letting a FLUSH wait for the dirty extents of a persistent cache (wc_flush_waits returning
  ndirty for WC_PERSISTENT) -> test_persistent_flush_costs_its_overhead_only and the identity cases
  with fsync (the Python drive calls the same kernel, so both move: the theory test is what pins it).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from simulator.core import run_fio_compiled
from simulator.devices.registry import build_device
from simulator.engine import Simulation
from simulator.fio.writer import to_fio_json
from simulator.workloads.runner import run_fio

#: offsets with replacement (norandommap): fio's random map of a 14-24 TB drive is a 0.4-0.7 GB bitmap
#: per run that only the cyclic GC frees, so a file of such runs would hold gigabytes at once
_BASE = {"name": "j", "bs": "4k", "ioengine": "libaio", "sim_slat": 0, "norandommap": 1}
AWC = "hdd/seagate_exos_15e900_awc"
MACH2 = "hdd/seagate_exos_2x14"
_SPAN = {"size": "512k", "io_size": "1g", "norandommap": 1}


@pytest.fixture(autouse=True)
def _collect():
    """Free each test's simulations (drives, fio generators: reference cycles) before the next."""
    yield
    gc.collect()


def _spec(profile: str, **cache) -> dict:
    return {"profile": profile, "params": {"cache": {"write_cache": "persistent", **cache}}}


def _dirty(dev) -> list:
    acts = getattr(dev, "actuators", None)
    if acts:
        return [_dirty(a) for a in acts]
    return dev.dirty_extents() if dev._nlive else []


def _both(spec: dict, job: dict, seed: int = 1, target=None, blk: bool = False):
    """(fio document, target stats, drive stats, end time) from the Python engine and the compiled core."""
    from simulator.devices.blocklayer import BlockLayer

    out = []
    for runner in (run_fio, run_fio_compiled):
        sim = Simulation(seed)
        dev = build_device(spec, "dev", sim.root)
        tgt = dev if target is None else dev.actuators[target]
        if blk:
            tgt = BlockLayer("blk", tgt, tgt)
        res = runner(sim, [tgt], job)
        doc = to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0)
        out.append((doc, tgt.stats(), dev.stats(), sim.now))
    return out


# (drive spec, job, counters of stats()["hdd"] that must be > 0)
_CASES = [
    # cache smaller than the run: writes wait for destage (blocked), destage at idle priority
    (_spec(AWC, persistent_size="1MiB"), {"rw": "randwrite", "iodepth": 32}, ("destaged_extents",)),
    # overwrites, joins and reads of dirty data in a small span; FLUSH every 3 writes (cheap)
    (_spec(AWC), {"rw": "randrw", "rwmixread": 50, "iodepth": 16, "fsync": 3, **_SPAN},
     ("write_overwrites", "write_coalesced", "dirty_read_hits")),
    # FUA writes: durable once in the cache (no write-through, no FLUSH wait); fua honoured or not
    (_spec(AWC, persistent_size="2MiB"), {"rw": "randwrite", "iodepth": 8, "sync": 1}, ("destaged_extents",)),
    (_spec(AWC, persistent_size="2MiB", fua_supported=False), {"rw": "randrw", "iodepth": 8, "sync": 1, **_SPAN},
     ("write_coalesced",)),
    # destage competing with host commands, mixed sizes, an explicit write_cache_size, no commit time
    (_spec(AWC, destage="mixed", destage_window=8, write_cache_size="256k", persistent_ack="0s"),
     {"rw": "randwrite", "iodepth": 32, "bssplit": "512/30:4k/40:64k/30", "size": "1m", "io_size": "1g",
      "norandommap": 1}, ("write_coalesced",)),
    # sequential small writes append to the newest extent
    (_spec(AWC, persistent_size="4MiB"), {"rw": "write", "iodepth": 4, "bs": "512"}, ("write_coalesced",)),
    # writes larger than the cache go through; reads behind them
    (_spec(AWC, persistent_size="64k"), {"rw": "randrw", "iodepth": 4, "bs": "128k", "fdatasync": 2,
                                         "end_fsync": 1}, ()),
    # the cache kept on the platter: destage reads it back in batches (mixed sizes: some extents
    # larger than a batch), refused queued writes written home directly
    (_spec(AWC, persistent_size="1MiB", persistent_readback="16KiB"),
     {"rw": "randwrite", "iodepth": 32, "bssplit": "4k/70:64k/30"}, ("readbacks",)),
    (_spec(AWC, persistent_size="1MiB", persistent_readback="256KiB", queued_write_candidates=True),
     {"rw": "randrw", "rwmixread": 10, "iodepth": 32, "fsync": 16},
     ("readbacks", "queued_writes_direct")),
]  # fmt: skip


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("case", range(len(_CASES)))
def test_hdd_persistent_write_cache_identical_to_python(case, seed):
    """Standalone HDD with the non-volatile write cache: the fio document, the drive's stats (destage,
    overwrite, join and dirty-read counters, dirty bytes), the end time and the extents left in the
    cache are identical in the compiled core and the Python drive."""
    spec, job, counters = _CASES[case]
    out = []
    from simulator.workloads.runner import run_fio as py

    for runner in (py, run_fio_compiled):
        sim = Simulation(seed)
        dev = build_device(spec, "dev", sim.root)
        res = runner(sim, [dev], {**_BASE, "number_ios": 2500, **job})
        doc = to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0)
        out.append((doc, dev.stats(), sim.now, dev.dirty_extents(), dev._dirty_bytes))
    assert out[1] == out[0]
    st = out[0][1]["hdd"]
    for c in counters:
        assert st[c] > 0, c
    if case != 6:
        assert st["destaged_extents"] > 0


def test_hdd_persistent_dual_actuator_and_block_layer_identical():
    """The MACH.2 with the fitted croit profile's persistent cache (28.8 MB of the drive, split per
    actuator) behind a block layer, and one LUN alone: identical to Python."""
    fitted = _spec(MACH2, write_cache_size=28828598)
    small = _spec(MACH2, write_cache_size="2MiB")
    destaged = []
    for spec, target, blk, job in ((fitted, None, True, {"rw": "randrw", "iodepth": 32, "fsync": 8}),
                                   (fitted, 0, False, {"rw": "randwrite", "iodepth": 16, **_SPAN}),
                                   (small, None, True, {"rw": "randwrite", "iodepth": 32, "sync": 1}),
                                   (small, None, False, {"rw": "randrw", "iodepth": 32, "fsync": 8})):
        out = _both(spec, {**_BASE, "number_ios": 2000, **job}, seed=3, target=target, blk=blk)
        assert out[1] == out[0]
        destaged.append(sum(a["hdd"]["destaged_extents"] for a in out[0][2]["actuators"]))
    assert destaged[2] > 0 and destaged[3] > 0  # the small cache filled: writes waited for destage


def test_persistent_flush_costs_its_overhead_only():
    """Theory: a FLUSH to a non-volatile cache waits for nothing, so every fio sync takes exactly the
    drive's flush overhead, in both engines, while the same job on a volatile cache waits for destages."""
    job = {**_BASE, "rw": "randwrite", "iodepth": 1, "fsync": 2, "number_ios": 600}
    for runner in (run_fio, run_fio_compiled):
        sim = Simulation(4)
        dev = build_device(_spec(AWC), "dev", sim.root)
        res = runner(sim, [dev], job)
        doc = to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0)["jobs"][0]
        ovh = dev._ovh_flush
        assert doc["sync"]["total_ios"] == pytest.approx(300, abs=2)
        assert doc["sync"]["lat_ns"]["min"] == doc["sync"]["lat_ns"]["max"] == pytest.approx(ovh * 1e9, rel=1e-6)
    sim = Simulation(4)
    dev = build_device({"profile": AWC, "params": {"cache": {"write_cache": "volatile"}}}, "dev", sim.root)
    res = run_fio_compiled(sim, [dev], job)
    doc = to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0)["jobs"][0]
    assert doc["sync"]["lat_ns"]["mean"] > 10 * dev._ovh_flush * 1e9


def _closed_rates(spec: dict, qd: int, n: int, seed: int = 5) -> tuple[np.ndarray, np.ndarray, object]:
    """Completion times and latencies of a compiled closed-loop 4 KiB random-write run."""
    sim = Simulation(seed)
    dev = build_device(spec, "dev", sim.root)
    (res,) = run_fio_compiled(sim, [dev], {**_BASE, "rw": "randwrite", "iodepth": qd, "number_ios": n,
                                            "norandommap": 1, "randseed": seed})
    return res, dev


def test_persistent_sustained_rate_is_bounded_by_the_destage_rate():
    """Physics: once a 4 MiB non-volatile cache is full, 4 KiB random writes at QD32 are acknowledged
    no faster than the drive destages them. The destage rate is bounded by what the mechanism can
    write with ``destage_window`` candidates: WCE=0 at QD=window (the same SPTF over the same number of
    candidates) measured in the compiled core, with its 95 % interval. Every write's latency is at
    least the ack path (overhead + link transfer + non-volatile commit)."""
    size = 4 * 2**20
    window = 32
    n = 12000
    res, dev = _closed_rates(_spec(AWC, persistent_size=size, destage_window=window), 32, n)
    c = dev.cfg
    ack = float(c.interface.write_overhead) + 4096 / c.interface.bytes_per_second + float(c.cache.persistent_ack)
    assert res.write.lat.min_ns >= ack * 1e9 - 1.0  # fio's ns, rounded
    hd = dev.stats()["hdd"]
    assert hd["destaged_extents"] > n // 2
    # host write rate over the run <= destage rate + what the cache absorbed
    t_run = res.write.runtime_s
    host = res.write.io_bytes
    off_res, _ = _closed_rates({"profile": "hdd/seagate_exos_15e900"}, window, 6000)
    ci = off_res.write.iops_ci
    bound = ci.hi + (ci.hi - ci.lo)  # the WCE=0 rate's 95 % upper end, plus one more interval width
    # measured (seed 5): (host - cache) / run = 428.6 IOPS against WCE=0 QD32 427.8 [423.2, 432.5]
    assert (host - size) / t_run / 4096 <= bound, ((host - size) / t_run / 4096, ci)
    assert hd["destaged_bytes"] / t_run / 4096 <= bound
    # ... and the cache does not slow the drive down either: the same rate within the interval
    assert (host - size) / t_run / 4096 >= ci.lo - (ci.hi - ci.lo)


_CEPH = [
    # (drive, block layer, split, BlueStore options): the fitted croit MACH.2 cache on the LUNs behind
    # the block layer; a small cache that fills (destage paces BlueStore) on LVM volumes of a
    # single-actuator drive; the whole MACH.2 with direct writes
    ("mach2-luns-fitted", {"write_cache_size": 28828598}, "hdd/seagate_exos_2x14", True, "luns", {}),
    ("lvm-small", {"persistent_size": "1MiB", "persistent_ack": "50us"}, "hdd/toshiba_mg06sca10te", True, 2,
     {"deferred_batch_ops": 8}),
    ("mach2-drive-direct", {"write_cache_size": "2MiB"}, "hdd/seagate_exos_2x14", False, 1, {"prefer_deferred_size": 0}),
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(_CEPH)))
def test_bluestore_over_persistent_cache_drives_identical(case):
    """The compiled Ceph core over the device core's HDDs with the non-volatile cache (BlueStore's
    deferred and direct writes, its FLUSHes, through block layers, LVM volumes, MACH.2 LUNs and the
    whole dual-actuator drive), replicated 4 KiB writes at QD16: every request's issue and completion
    time, the OSD and BlueStore counters and every device's counters identical to the Python model
    (tests/test_core_ceph_devices.py's check), and the drives' destage counters equal too."""
    from test_core_ceph_devices import _check_identical, _drives, _params

    _name, cache, profile, bl, split, bs = _CEPH[case]
    dev = {"kind": "hdd", "profile": profile, "params": {"cache": {"write_cache": "persistent", **cache}}}
    r = _check_identical(_params(dev, bl, bs, split=split))
    destaged = 0
    for a, b in zip(_drives(r["py"]), _drives(r["cc"]), strict=True):
        ha, hb = a.stats().get("hdd"), b.stats().get("hdd")
        if ha is not None:
            for k in ("destaged_extents", "destaged_bytes", "write_overwrites", "write_coalesced", "dirty_bytes"):
                assert ha[k] == hb[k], (a.path, k)
            destaged += ha["destaged_extents"]
    assert destaged > 0


# ---------------------------------------------------------------------------------------- media cache
X24 = "hdd/seagate_exos_x24"


def _mc(profile: str = X24, **cache) -> dict:
    return {"profile": profile, "params": {"cache": {"write_cache": "media_cache", **cache}}}


# (drive spec, job, counters of stats()["hdd"] that must be > 0)
_MC_CASES = [
    # the X24 as shipped (WCE on, one cleaning write after each append): sustained random writes
    (_mc(), {"rw": "randwrite", "iodepth": 32}, ("media_cache_appends", "destaged_extents")),
    # WCE off: a write is acknowledged once appended (it waits as a FLUSH would)
    (_mc(media_cache_wce=False), {"rw": "randwrite", "iodepth": 16}, ("media_cache_appends", "destaged_extents")),
    # idle cleaning only (no interleave), FLUSHes wait for the append, joins and reads of DRAM data
    (_mc(cleaning_interleave=0, dirty_segments=8), {"rw": "randrw", "rwmixread": 50, "iodepth": 16, "fsync": 4, **_SPAN},
     ("media_cache_appends", "write_coalesced", "dirty_read_hits")),
    # a media cache that fills: appends wait for cleaning; the cleaning watermark lets cleaning compete
    (_mc(media_cache_size="1MiB", cleaning_interleave=0, cleaning_watermark=0.3, media_cache_batch="64k"),
     {"rw": "randwrite", "iodepth": 32, "bssplit": "4k/50:16k/50"}, ("media_cache_appends", "destaged_extents")),
    # FUA writes (wait for their append), sequential small writes that join in DRAM, a far location
    (_mc(media_cache_location=0.6, media_cache_append_overhead="50us"), {"rw": "write", "iodepth": 8, "bs": "512",
                                                                        "sync": 1}, ("media_cache_appends",)),
    # writes larger than the DRAM stage go home directly; reads behind them; end_fsync
    (_mc(write_cache_size="64k"), {"rw": "randrw", "iodepth": 4, "bs": "128k", "fdatasync": 2, "end_fsync": 1}, ()),
]  # fmt: skip


def _run_pair(spec: dict, job: dict, seed: int):
    out = []
    for runner in (run_fio, run_fio_compiled):
        sim = Simulation(seed)
        dev = build_device(spec, "dev", sim.root)
        res = runner(sim, [dev], job)
        doc = to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0)
        out.append((doc, dev.stats(), sim.now, _dirty(dev), dev._mc_bytes, dev._mc_log, dev._ndram, dev.appends))
    return out


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("case", range(len(_MC_CASES)))
def test_hdd_media_cache_identical_to_python(case, seed):
    """Standalone HDD with the media cache: the fio document, the drive's stats (appends, cleaning
    writes = destaged extents, media-cache bytes, DRAM dirty bytes), the end time, the log pointer and
    the extents left in DRAM identical in the compiled core and the Python drive."""
    spec, job, counters = _MC_CASES[case]
    out = _run_pair(spec, {**_BASE, "number_ios": 2500, **job}, seed)
    assert out[1] == out[0]
    st = out[0][1]["hdd"]
    for c in counters:
        assert st[c] > 0, c


def test_hdd_media_cache_table_grows_in_a_run_identical():
    """Thousands of 4 KiB random writes into a media cache cleaned only at idle: more extents wait
    in it than the compiled run's first table holds (run.MC_SLOTS_START), so the run grows its table
    in place (loop._h_grow_extents); the result is still identical to Python's."""
    from simulator.core.run import MC_SLOTS_START

    job = {**_BASE, "rw": "randwrite", "iodepth": 32, "number_ios": 9000}
    out = _run_pair(_mc(cleaning_interleave=0), job, 5)
    assert out[1] == out[0]
    assert out[0][4] // 4096 > MC_SLOTS_START  # extents left in the media cache at the end


def test_hdd_media_cache_dual_actuator_identical():
    """The Exos 2X14 (media cache per actuator) behind a block layer, and one LUN alone: identical."""
    for target, blk, job in ((None, True, {"rw": "randrw", "iodepth": 32, "fsync": 8}),
                             (1, False, {"rw": "randwrite", "iodepth": 16, **_SPAN})):
        out = _both(_mc(MACH2), {**_BASE, "number_ios": 2000, **job}, seed=3, target=target, blk=blk)
        assert out[1] == out[0]
        assert sum(a["hdd"]["media_cache_appends"] for a in out[0][2]["actuators"]) > 0


def test_media_cache_flush_waits_for_the_append_only():
    """Theory: with the media cache a FLUSH waits for the DRAM stage to be appended (one media
    operation), never for the cleaning list: at QD1 with fsync=1 and idle cleaning, a sync waits at
    most for the cleaning write in progress and one append (each at most a full-stroke seek or the
    append set-up, plus two revolutions) plus the flush overhead, while data waits in the media cache."""
    job = {**_BASE, "rw": "randwrite", "iodepth": 1, "fsync": 1, "number_ios": 400}
    sim = Simulation(2)
    dev = build_device(_mc(cleaning_interleave=0), "dev", sim.root)
    res = run_fio_compiled(sim, [dev], job)
    doc = to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0)["jobs"][0]
    op = max(dev.seek(dev.geo.ncyl - 1, write=True), dev._mc_setup) + 2 * dev.rev_time
    assert doc["sync"]["total_ios"] == pytest.approx(400, abs=2)
    assert doc["sync"]["lat_ns"]["max"] <= (2 * op + dev._ovh_flush) * 1e9
    st = dev.stats()["hdd"]
    assert st["media_cache_appends"] >= 390
    assert st["media_cache_bytes"] > 0  # the syncs did not wait for the cleaning home


# ---------------------------------------------------------------------------- queued write candidates
MG06 = "hdd/toshiba_mg06sca10te"  # 16 dirty segments: a QD32 random-write job fills the cache


def _qwc(profile: str = MG06, **cache) -> dict:
    return {"profile": profile, "params": {"cache": {"write_cache": "volatile", "queued_write_candidates": True,
                                                     **cache}}}


_QWC_CASES = [
    (_qwc(), None, False, {"rw": "randwrite", "iodepth": 32}),
    (_qwc(), None, False, {"rw": "randwrite", "iodepth": 64, "bssplit": "4k/60:64k/40"}),
    # writes over dirty data wait outside the cache; FLUSHes and reads of dirty data meanwhile
    (_qwc(dirty_segments=4), None, False, {"rw": "randrw", "rwmixread": 30, "iodepth": 32, "fsync": 16, **_SPAN}),
    (_qwc(fua_supported=False), None, True, {"rw": "randwrite", "iodepth": 32, "sync": 1}),
    (_qwc(MACH2), None, True, {"rw": "randrw", "rwmixread": 20, "iodepth": 64, "fsync": 32}),
    # a persistent cache kept on the platter (read back before destage), both actuators, block layer
    (_qwc(MACH2, write_cache="persistent", write_cache_size="2MiB", persistent_readback="128KiB"), None, True,
     {"rw": "randwrite", "iodepth": 64}),
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(_QWC_CASES)))
def test_hdd_queued_write_candidates_identical_to_python(case):
    """A full volatile cache whose refused queued writes stay candidates (written home directly when
    picked, moved into the cache oldest first when a segment frees): identical to the Python drive,
    through a block layer and on both actuators of a MACH.2 too; the direct path was taken."""
    spec, target, blk, job = _QWC_CASES[case]
    out = _both(spec, {**_BASE, "number_ios": 2500, **job}, seed=7, target=target, blk=blk)
    assert out[1] == out[0]
    drive = out[0][2]
    hdds = [a["hdd"] for a in drive["actuators"]] if "actuators" in drive else [drive["hdd"]]
    if case != 3:  # cached FUA writes wait as flushes: never candidates
        assert sum(h["queued_writes_direct"] for h in hdds) > 0


def test_media_trace_is_still_refused_by_name():
    from simulator.core.run import _dev_kind

    sim = Simulation(1)
    dev = build_device(_spec(AWC), "dev", sim.root)
    assert _dev_kind(dev) == (1, None)
    dev.trace = []
    kind, why = _dev_kind(dev)
    assert kind < 0 and "media trace" in why


def test_bluestore_over_a_small_media_cache_identical():
    """The compiled Ceph core over MACH.2 LUNs with a small media cache (64 MiB per drive: 65,537
    extents per LUN at most) behind the block layer: identical to the Python model, appends and
    cleaning writes included (a media cache over the table's start: test_core_media_cache_growth.py)."""
    from test_core_ceph_devices import _check_identical, _params

    dev = {"kind": "hdd", "profile": MACH2, "params": {"cache": {"write_cache": "media_cache", "media_cache_size": "64MiB"}}}
    r = _check_identical(_params(dev, True, {}, split="luns"))
    appends, _ = media_cache_counts_identical(r)
    assert appends > 0


def media_cache_counts_identical(r: dict) -> tuple[int, int]:
    """Assert the Python and compiled runs ``r`` (test_core_ceph_devices._check_identical) left every
    drive with the same media-cache counters; return the drives' appends and cleaning writes summed."""
    from test_core_ceph_devices import _drives

    appends = cleaned = 0
    for a, b in zip(_drives(r["py"]), _drives(r["cc"]), strict=True):
        ha, hb = a.stats().get("hdd"), b.stats().get("hdd")
        if ha is not None:
            for k in ("media_cache_appends", "destaged_extents", "media_cache_bytes", "dirty_bytes"):
                assert ha[k] == hb[k], (a.path, k)
            appends += ha["media_cache_appends"]
            cleaned += ha["destaged_extents"]
    return appends, cleaned

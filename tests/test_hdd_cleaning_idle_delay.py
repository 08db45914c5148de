"""``cache.cleaning_idle_delay``: the media cache's idle cleaning begins only once no host command has
been in the drive for the delay (one decision, wcache_kernels.mc_clean_hold, called by the Python
drive and the compiled core alike).

Oracles:
* delay 0 is the default and changes nothing (the existing media-cache tests, test_hdd_media_cache.py
  and the media-cache cases of test_core_hdd_wcache.py, pass unchanged);
* physics: with a delay longer than the gap between two QD1 commands, 4 KiB writes with the write
  cache off never clean during the run: each write is one append, and back-to-back appends wait for
  the log pointer to come round, so the drive completes exactly one write per (revolution + the
  append's media transfer) and no write takes longer than set-up + one revolution + transfer +
  overheads; once the run ends and the drive stays idle for the delay, cleaning starts and empties
  the media cache;
* a workload with idle gaps longer than the delay cleans in them, and no cleaning write starts
  less than the delay after a host command completed (unless the media cache is above its cleaning
  watermark: pressure cleans at once);
* every write completes exactly once; the compiled core gives results identical to the Python drive.

Mutation notes (checked by monkeypatching the Python drive while writing the tests): mc_clean_hold
called with ``out`` = 0 (the timer ignoring host commands still in the drive), and HDD._finish not
restarting the timer at a completion, each make test_no_cleaning_starts_within_the_delay fail.
"""

from __future__ import annotations

import gc

import pytest

from simulator.devices.base import Op
from simulator.devices.hdd.config import CacheConfig
from simulator.devices.hdd.sweep import run_job

X24 = "hdd/seagate_exos_x24"
WD = "hdd/wd_gold_24tb"
_BASE = {"name": "j", "bs": "4k", "ioengine": "libaio", "sim_slat": 0, "norandommap": 1}


@pytest.fixture(autouse=True)
def _collect():
    yield
    gc.collect()


def _wcd(delay: float, **cache) -> dict:
    """WCE=0 media cache, no interleaved cleaning (only idle cleaning), the given idle delay."""
    return {
        "cache": {"media_cache_wce": False, "cleaning_interleave": 0, "cleaning_idle_delay": delay, **cache}
    }


def _fio(profile: str, params: dict, job: dict, seed: int):
    """Run one fio job (``number_ios``) on a bare drive in the Python engine: (simulation, drive)."""
    from simulator.devices.registry import build_device
    from simulator.engine import Simulation
    from simulator.workloads.runner import run_fio

    sim = Simulation(seed)
    dev = build_device({"profile": profile, "params": params}, "dev", sim.root)
    dev.trace = []
    run_fio(sim, [dev], {**_BASE, **job})
    return sim, dev


def _record_host(dev) -> list[list[float]]:
    """Wrap the drive's submit and completion accounting: [arrival, completion] of every host command
    (request objects are reused, so a span is found by the request's current one)."""
    spans: list[list[float]] = []
    open_: dict[int, list[float]] = {}
    sub = dev.submit
    fin = dev._finish

    def on_submit(req):
        open_[id(req)] = span = [dev.env.now, float("inf")]
        spans.append(span)
        return sub(req)

    def on_finish(req):
        fin(req)
        open_.pop(id(req))[1] = dev.env.now

    dev.submit = on_submit
    dev._finish = on_finish
    return spans


def test_default_is_zero_and_bounds_are_enforced():
    assert CacheConfig().cleaning_idle_delay == 0.0
    assert CacheConfig(cleaning_idle_delay="500ms").cleaning_idle_delay == pytest.approx(0.5)
    for bad in (-0.001, 61):
        with pytest.raises(ValueError):
            CacheConfig(cleaning_idle_delay=bad)


@pytest.mark.parametrize("profile", [X24, WD])
def test_qd1_sync_writes_are_appends_only(profile: str):
    """Delay 0.1 s >> the QD1 gap: no cleaning in the run, one write per revolution + transfer."""
    r = run_job(
        profile,
        {"rw": "randwrite", "iodepth": 1, "runtime": "4s", "ramp_time": "1s"},
        params=_wcd(0.1),
        seed=3,
    )
    dev = r.device
    d = r.dir("randwrite")
    st = dev.stats()["hdd"]
    assert st["destaged_extents"] == 0
    assert st["media_cache_bytes"] > 0
    rev = dev.rev_time
    xfer = 4096 / dev._ss / dev._mc_sps
    # one append per write, one write per (revolution + media transfer of the 4 KiB)
    assert d.iops * (rev + xfer) == pytest.approx(1.0, rel=0.01)
    bound = dev._ovh_w + 4096 / dev._lrate + dev._mc_setup + rev + xfer + dev._ovh_flush
    assert d.lat.max_ns <= bound * 1e9 * (1 + 1e-9)
    # today's behaviour (delay 0): a cleaning write between two writes, each write waits for it
    r0 = run_job(
        profile,
        {"rw": "randwrite", "iodepth": 1, "runtime": "4s", "ramp_time": "1s"},
        params=_wcd(0.0),
        seed=3,
    )
    assert r0.device.stats()["hdd"]["destaged_extents"] > 0.9 * r0.dir("randwrite").total_ios
    assert r0.dir("randwrite").lat.mean_ns > 2 * d.lat.mean_ns


def test_the_drive_cleans_once_idle_and_every_write_completes_once():
    """After the run the drive is idle: cleaning starts the delay after the last completion and
    empties the media cache; every write completed exactly once and every appended byte is cleaned."""
    delay = 0.25
    sim, dev = _fio(X24, _wcd(delay), {"rw": "randwrite", "iodepth": 1, "number_ios": 300}, 5)
    assert dev.stats()["hdd"]["destaged_extents"] == 0
    assert dev.completed[int(Op.WRITE)] == 300
    t_end = sim.now
    sim.run(until=t_end + delay + 30.0)
    st = dev.stats()["hdd"]
    assert st["media_cache_bytes"] == 0
    assert st["destaged_extents"] == 300 and st["destaged_bytes"] == 300 * 4096
    assert dev.completed[int(Op.WRITE)] == 300
    first = min(t for t, kind, *_ in dev.trace if kind == 1)
    assert first == pytest.approx(dev._t_host + delay, abs=1e-9)


def test_no_cleaning_starts_within_the_delay():
    """Poisson arrivals at 40/s (mean gap 25 ms) and a 20 ms delay: the drive cleans in the longer
    gaps, and every cleaning write starts with no host command in the drive and at least the delay
    after the last host completion."""
    delay = 0.02
    job = {"rw": "randwrite", "iodepth": 4, "number_ios": 1500, "rate_iops": 40, "rate_process": "poisson"}
    from simulator.devices.registry import build_device
    from simulator.engine import Simulation
    from simulator.workloads.runner import run_fio

    sim = Simulation(7)
    dev = build_device({"profile": X24, "params": _wcd(delay)}, "dev", sim.root)
    spans = _record_host(dev)
    dev.trace = []
    run_fio(sim, [dev], {**_BASE, **job})
    cleans = [t for t, kind, *_ in dev.trace if kind == 1]
    assert len(cleans) > 50
    assert dev.completed[int(Op.WRITE)] == 1500
    iv = sorted(spans)
    assert len(iv) == 1500 and all(b < float("inf") for _a, b in iv)
    for t in cleans:
        # no host command in the drive in (t - delay, t]: arrived by t and completed after t - delay
        busy = [(a, b) for a, b in iv if a <= t and b > t - delay + 1e-9]
        assert not busy, (t, busy[:2])


def test_pressure_cleans_at_once():
    """A 1 MiB media cache with watermark 0.25 and a 10 s delay: under continuous QD1 writes the
    media cache reaches the watermark and cleaning then competes at once (no waiting for idle)."""
    _sim, dev = _fio(
        X24,
        _wcd(10.0, media_cache_size="1MiB", cleaning_watermark=0.25),
        {"rw": "randwrite", "iodepth": 1, "number_ios": 600},
        2,
    )
    st = dev.stats()["hdd"]
    assert st["destaged_extents"] > 100
    assert st["media_cache_bytes"] <= 0.25 * 2**20 + 4096
    # cleaning began under continuous writes, long before any 10 s idle period
    assert min(t for t, kind, *_ in dev.trace if kind == 1) < 1.0


AWC = "hdd/seagate_exos_15e900_awc"


def _nv(delay: float, **cache) -> dict:
    """A persistent (non-volatile) cache destaged at idle, the given idle delay."""
    return {"cache": {"write_cache": "persistent", "destage": "idle", "cleaning_idle_delay": delay, **cache}}


def test_persistent_cache_destages_only_after_the_idle_delay():
    """The persistent cache's idle destage waits for the timer too: Poisson writes at 40/s (mean gap
    25 ms) and a 20 ms delay: destage writes start only with no host command in the drive for the
    delay; with the delay 0 some start sooner; every write completes once."""
    from simulator.devices.registry import build_device
    from simulator.engine import Simulation
    from simulator.workloads.runner import run_fio

    job = {"rw": "randrw", "rwmixread": 30, "iodepth": 4, "number_ios": 1500, "rate_iops": 40,
           "rate_process": "poisson"}
    soon = {}
    for delay in (0.02, 0.0):
        sim = Simulation(7)
        dev = build_device({"profile": AWC, "params": _nv(delay, persistent_size="4MiB")}, "dev", sim.root)
        spans = _record_host(dev)
        dev.trace = []
        run_fio(sim, [dev], {**_BASE, **job})
        destages = [t for t, kind, *_ in dev.trace if kind == 1]
        assert len(destages) > 50
        assert sum(dev.completed[int(op)] for op in (Op.READ, Op.WRITE)) == 1500
        iv = sorted(spans)
        soon[delay] = sum(1 for t in destages if any(a <= t and b > t - 0.02 + 1e-9 for a, b in iv))
    assert soon[0.02] == 0
    assert soon[0.0] > 10


def test_persistent_pressure_destages_at_once():
    """Above high_watermark the persistent cache destages at once, whatever the delay: continuous QD4
    writes into a 1 MiB cache with a 10 s delay keep it below the watermark + one write."""
    _sim, dev = _fio(AWC, _nv(10.0, persistent_size="1MiB", high_watermark=0.5),
                     {"rw": "randwrite", "iodepth": 4, "number_ios": 1500}, 2)
    st = dev.stats()["hdd"]
    assert st["destaged_extents"] > 500
    assert min(t for t, kind, *_ in dev.trace if kind == 1) < 1.0


# ---------------------------------------------------------------------------- compiled core == Python
MACH2 = "hdd/seagate_exos_2x14"

_CASES = [
    # QD1 WCE=0 writes with Poisson gaps around the delay: cleaning in the long gaps only
    (X24, _wcd(0.03), {"rw": "randwrite", "iodepth": 1, "rate_iops": 40, "rate_process": "poisson", "number_ios": 800}),
    # WCE=1, mixed reads and fsyncs at QD8, interleaved cleaning kept (not delayed), a 5 ms delay
    (WD, {"cache": {"cleaning_idle_delay": 0.005}}, {"rw": "randrw", "rwmixread": 50, "iodepth": 8, "fsync": 4,
                                                      "number_ios": 2000}),
    # reads held to host-first while cleaning waits, destage mixed, a small media cache under pressure
    (X24, _wcd(0.05, destage="mixed", media_cache_size="2MiB", cleaning_watermark=0.5),
     {"rw": "randrw", "rwmixread": 30, "iodepth": 4, "number_ios": 2000}),
    # a persistent cache read back from the platter, destaged after a 10 ms idle timer, under pressure at times
    (AWC, _nv(0.01, persistent_size="1MiB", persistent_readback="64KiB"),
     {"rw": "randwrite", "iodepth": 8, "rate_iops": 150, "rate_process": "poisson", "number_ios": 2000}),
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(_CASES)))
def test_compiled_core_identical_to_python(case):
    from simulator.core import run_fio_compiled
    from simulator.devices.registry import build_device
    from simulator.engine import Simulation
    from simulator.fio.writer import to_fio_json
    from simulator.workloads.runner import run_fio

    profile, params, job = _CASES[case]
    out = []
    for runner in (run_fio, run_fio_compiled):
        sim = Simulation(4)
        dev = build_device({"profile": profile, "params": params}, "dev", sim.root)
        res = runner(sim, [dev], {**_BASE, **job})
        doc = to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0)
        out.append((doc, dev.stats(), sim.now, dev._mc_bytes, getattr(dev, "_mc_log", None), dev._t_host))
    assert out[1] == out[0]
    st = out[0][1]["hdd"]
    assert (st["readbacks"] if profile == AWC else st["media_cache_appends"]) > 0


def test_dual_actuator_identical_to_python():
    """The Exos 2X14 (a media cache and an idle timer per actuator) behind a block layer."""
    from simulator.core import run_fio_compiled
    from simulator.devices.blocklayer import BlockLayer
    from simulator.devices.registry import build_device
    from simulator.engine import Simulation
    from simulator.fio.writer import to_fio_json
    from simulator.workloads.runner import run_fio

    spec = {
        "profile": MACH2,
        "params": {"cache": {"write_cache": "media_cache", "cleaning_idle_delay": 0.01}},
    }
    job = {**_BASE, "rw": "randwrite", "iodepth": 16, "fsync": 8, "number_ios": 2000}
    out = []
    for runner in (run_fio, run_fio_compiled):
        sim = Simulation(3)
        dev = build_device(spec, "dev", sim.root)
        blk = BlockLayer("blk", dev, dev)
        res = runner(sim, [blk], job)
        doc = to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0)
        out.append((doc, dev.stats(), sim.now))
    assert out[1] == out[0]


@pytest.mark.parametrize("delay", [0.002, 0.05])
def test_bluestore_over_a_media_cache_with_an_idle_delay_identical(delay: float):
    """The compiled Ceph core over MACH.2 LUNs (a small media cache, idle cleaning only, an idle
    delay) behind the block layer: identical to the Python model, appends and cleaning writes included."""
    from test_core_ceph_devices import _check_identical, _params
    from test_core_hdd_wcache import media_cache_counts_identical

    cache = {"write_cache": "media_cache", "media_cache_size": "64MiB", "cleaning_interleave": 0,
             "cleaning_idle_delay": delay}  # fmt: skip
    r = _check_identical(_params({"kind": "hdd", "profile": MACH2, "params": {"cache": cache}}, True, {}, split="luns"))
    appends, cleaned = media_cache_counts_identical(r)
    assert appends > 0 and cleaned > 0  # (delay 0: 6,383 cleaning writes; 0.002 s: 6,287; 0.05 s: 6,266)

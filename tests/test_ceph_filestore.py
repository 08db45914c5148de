"""FileStore (objectstore: filestore): journal entry layout, ack on journal commit (not on apply),
journal batching and FileJournal's adaptive aio rule, the throttles and the WBThrottle limits,
journal-full stalls, sustained writes at the data device's rate, PLP vs non-PLP journal SSD,
co-located journal, page-cache reads, and the drain invariants (every applied page written, the
journal trimmed, every IO completed exactly once)."""

from __future__ import annotations

import pytest
from fio_drive import ClosedLoop

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.devices.base import Op
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation
from simulator.errors import ConfigError

MiB = 1 << 20
WT = {"write_cache": "write through"}  # oracle devices: no volatile cache, flushes stop in the block layer
PLP = {"profile": "ssd/intel_dc_s3700_400gb"}
NOPLP = {"profile": "ssd/samsung_850_pro_256gb"}
HDD = {"profile": "hdd/toshiba_mg06sca10te"}


def _q(svc: float, servers: int = 1, cap: str = "2TiB") -> dict:
    return {"kind": "queue", "params": {"capacity": cap, "servers": servers, "service": {"dist": "deterministic", "value": svc}}}


def _cluster(n: int, data: dict, journal: dict | None, size: int = 1, journal_size: str = "5GiB",
             img: str = "200GiB", pg_num: int = 64, **filestore) -> tuple[Simulation, Cluster]:
    host = {"name": "h", "cpu": {"cores": 16}, "drives": [{"count": n, "device": data}]}
    if journal is not None:
        host["db_devices"] = {"count": 1, "device": journal, "db_size": journal_size}
    p = {
        "hosts": [host],
        "pools": [{"name": "p", "size": size, "min_size": 1, "pg_num": pg_num, "rule": {"failure_domain": "osd"}}],
        "images": [{"pool": "p", "name": "img", "size": img}],
        "objectstore": "filestore",
        "filestore": filestore,
        "block_layer": WT,
    }
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": p})
    sim = Simulation(1)
    return sim, Cluster(cfg, "cluster", sim.root)


def _loop(sim, cl, **kw) -> ClosedLoop:
    kw.setdefault("rw", "randwrite")
    kw.setdefault("seed", 1)
    return ClosedLoop(sim, cl.image("p", "img"), **kw)


# ----------------------------------------------------------------------------- journal entries
def test_journal_entry_layout() -> None:
    _, cl = _cluster(1, _q(1e-3), _q(50e-6, cap="200GiB"))
    fs = cl.osds[0].bs
    # header + 1200 B transaction + 4 KiB data + footer -> two journal blocks
    assert fs.entry_size(4096) == 8192
    assert fs.entry_size(0) == 4096
    # from journal_align_min_size the data is page-aligned inside the entry: header + pre_pad + txn = 4096
    assert fs.entry_size(65536) == 4096 + 65536 + 4096
    assert fs.entry_size(4 * MiB) == 4096 + 4 * MiB + 4096


def test_journal_smaller_than_max_write_is_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError) as e:
        _cluster(1, _q(1e-3), _q(50e-6, cap="200GiB"), journal_size="64MiB")
    assert e.value.field == "params.hosts.0.db_devices.db_size"
    assert "osd_max_write_size" in str(e.value)


# ----------------------------------------------------------------------------- commit vs apply
def test_write_is_acked_on_journal_commit_not_on_apply() -> None:
    # data device 5 ms per IO, journal 50 us: a QD1 write waits for the journal only
    sim, cl = _cluster(1, _q(5e-3), _q(50e-6, servers=8, cap="200GiB"))
    r = _loop(sim, cl, qd=1, n_ios=400).run()
    fs = cl.osds[0].bs
    assert r.lat.min() >= 50e-6  # at least the journal write
    assert r.pct(50) < 1e-3  # far below one data-device IO
    st = fs.stats()
    assert st["journal_entries_per_write"] == 1.0  # nothing to batch at QD1
    assert st["journal_write_s"] == pytest.approx(50e-6, rel=0.05)


def test_journal_batches_under_load_and_aio_in_flight_follows_filejournal_rule() -> None:
    # a slow journal (1 ms, one server) and a fast data device: entries pile up behind the writes
    sim, cl = _cluster(1, _q(20e-6, servers=8), _q(1e-3, cap="200GiB"))
    _loop(sim, cl, qd=64, n_ios=3000).run()
    st = cl.osds[0].bs.stats()
    assert st["journal_entries_per_write"] > 4
    # n writes in flight need 2^(2n) queued bytes for another; at most 50 x 8 KiB are queued
    # (the op queue throttle), so n <= 9 + 1
    assert 2 <= st["journal_aio_peak"] <= 10
    assert st["op_queue_peak"] <= 50
    assert st["journal_queue_peak"] <= 300


def test_without_aio_one_journal_write_at_a_time() -> None:
    sim, cl = _cluster(1, _q(20e-6, servers=8), _q(1e-3, servers=8, cap="200GiB"), journal_aio=False)
    _loop(sim, cl, qd=32, n_ios=1500).run()
    st = cl.osds[0].bs.stats()
    assert st["journal_aio_peak"] == 1
    assert st["journal_entries_per_write"] > 4


# ----------------------------------------------------------------------------- sustained rate
def test_sustained_writes_run_at_the_data_device_rate() -> None:
    # every client write becomes one 4 KiB write in place (no inode writeback, no omap bytes); the
    # data device does 500 IO/s; a small WBThrottle keeps the page-cache backlog to ~200 writes
    sim, cl = _cluster(1, _q(2e-3), _q(20e-6, servers=8, cap="200GiB"), wb_ios_start_flusher=50,
                       wb_ios_hard_limit=200, inode_writeback=0, omap_bytes=0, xfs_log_bytes=0)
    _loop(sim, cl, qd=64, runtime=12.0).run()
    cl.reset_stats()
    r = _loop(sim, cl, qd=64, runtime=20.0, seed=2).run()
    fs = cl.osds[0].bs
    st = fs.stats()
    dev = cl.osds[0].device.stats()
    assert dev["utilisation"] > 0.99
    # at most 500 writes/s plus what the bounded backlogs (WBThrottle + op queue) absorb in 20 s
    assert r.iops <= 500 * 1.02 + (200 + 2 + 50) / 20.0
    assert r.iops >= 0.85 * 500
    # applies block at the hard limit and the flusher works
    assert st["wb_dirty_ios_peak"] <= 200 + 2
    assert st["apply_wbthrottle_waits"] > 0 and st["fdatasyncs"] > 0
    # Little: latency = QD / rate
    assert r.lat.mean() == pytest.approx(64 / r.iops, rel=0.05)


def test_journal_full_stalls_writes_until_a_sync_trims_it() -> None:
    # no WBThrottle, rare syncs, a 100 MiB journal and a slow data device: the journal fills,
    # passes half (a sync starts) and the writer waits for the sync to trim it
    sim, cl = _cluster(1, _q(5e-3, servers=8), _q(50e-6, servers=8, cap="200GiB"), journal_size="100MiB",
                       wbthrottle=False, max_sync_interval=60.0, queue_max_ops=500)
    loop = _loop(sim, cl, qd=64, n_ios=40000)
    r = loop.run()
    fs = cl.osds[0].bs
    st = fs.stats()
    assert st["journal_full_waits"] > 0
    assert st["journal_used_peak"] <= st["journal_capacity"]
    assert st["syncs"] >= 2
    assert r.ios == 40000
    sim.run()  # drain: every issued IO completes (the loop stops recording after 40000)
    assert loop.inflight == 0


def test_drain_leaves_nothing_dirty_and_the_journal_trimmed() -> None:
    sim, cl = _cluster(3, _q(2e-3), _q(50e-6, servers=8, cap="200GiB"), size=3, pg_num=32)
    loop = _loop(sim, cl, qd=32, n_ios=3000)
    loop.run()
    sim.run()  # no more client IO: the sync timer fires once more, then the model goes idle
    assert loop.completed == 3000 and loop.inflight == 0  # everything issued has completed
    for osd in cl.osds:
        fs = osd.bs
        assert not fs.pages and not fs.wb and not fs.unapplied and not fs.writeq
        assert fs.j_used == 0 and not fs.j_entries
        assert fs.applied == fs.seq == osd.subops + osd.ops[Op.WRITE] > 0
        # every journal write went to the journal SSD; the data drive got the applied data
        assert osd.db_device.completed[Op.WRITE] >= fs.journal_writes
        assert osd.device.completed[Op.WRITE] >= fs.sync_ios + fs.flusher_ios


# ----------------------------------------------------------------------------- journal devices
def _qd1_write_p50(journal: dict | None, data: dict) -> tuple[float, float]:
    sim, cl = _cluster(1, data, journal)
    r = _loop(sim, cl, qd=1, n_ios=300).run()
    return r.pct(50), cl.osds[0].bs.stats()["journal_write_s"]


def test_plp_journal_ssd_acks_from_dram_non_plp_programs_nand() -> None:
    plp_p50, plp_j = _qd1_write_p50(PLP, _q(1e-3, servers=4))
    nop_p50, nop_j = _qd1_write_p50(NOPLP, _q(1e-3, servers=4))
    assert plp_j < 0.3e-3  # the O_DSYNC write lands in protected DRAM
    assert nop_j > 1e-3  # FUA without PLP: programmed to NAND first
    assert nop_p50 - plp_p50 == pytest.approx(nop_j - plp_j, rel=0.25)


def test_colocated_journal_puts_every_write_twice_on_the_hdd() -> None:
    sim, cl = _cluster(1, HDD, None)
    r = _loop(sim, cl, qd=1, n_ios=200).run()
    fs = cl.osds[0].bs
    assert fs.jdev is cl.osds[0].io_device and fs.same_device
    # the journal partition is the first 5 GiB of the drive, data after it
    assert fs.jbase == 0 and fs.jend == 5 << 30 and fs.data_lo > fs.jend
    # a FUA write with the drive's cache off waits for the platter: milliseconds, not microseconds
    assert fs.stats()["journal_write_s"] > 1e-3
    with_ssd, _ = _qd1_write_p50(PLP, HDD)
    assert r.pct(50) > 3 * with_ssd


# ----------------------------------------------------------------------------- reads
def test_reads_of_written_data_hit_the_page_cache() -> None:
    sim, cl = _cluster(1, _q(2e-3), _q(50e-6, servers=8, cap="200GiB"), img="1GiB")
    _loop(sim, cl, qd=8, rw="write", bs=65536, n_ios=16384).run()  # the whole 1 GiB image, sequentially
    sim.run()
    dev = cl.osds[0].device
    reads0 = dev.completed[Op.READ]
    r = _loop(sim, cl, qd=8, rw="randread", n_ios=2000, seed=3).run()
    st = cl.osds[0].bs.stats()
    assert st["cache_hit_ratio"] == 1.0 and dev.completed[Op.READ] == reads0
    assert r.pct(50) < 1e-3  # no device IO
    # with a page cache too small for it, reads go to the device
    sim, cl = _cluster(1, _q(2e-3), _q(50e-6, servers=8, cap="200GiB"), img="1GiB", page_cache={"size": "64MiB"})
    _loop(sim, cl, qd=8, rw="write", bs=65536, n_ios=16384).run()
    sim.run()
    r = _loop(sim, cl, qd=1, rw="randread", n_ios=500, seed=3).run()
    st = cl.osds[0].bs.stats()
    assert st["cache_hit_ratio"] < 0.2
    assert r.pct(50) >= 2e-3

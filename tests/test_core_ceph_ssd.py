"""Issue 13: SSDs below BlueStore in the compiled Ceph core, against the Python model (the reference).

The Ceph core hands BlueStore's device requests to the device core, which runs SSDs (DK_SSD,
devices/ssd/kernels.py) as it runs HDDs. What SSDs brought in is a block layer short of tags: the
Ceph lab's three OSDs share one layer of 128 tags over their SSD-class drive, and a deferred batch of
several IOs (BlueStore._deferred_submit -> Partition.submit_batch -> BlockLayer.submit_batch) then
sleeps for tags as one submitter (its ``_Batch`` waiter: after each tag it gets, the submitter goes to
the back of the wait queue). core.loop.batch_sleep is that waiter in the compiled cores. A chain of
points (persist_state) keeps the SSD's NAND work pending at the end of each compiled run (die
batches, garbage collection, metadata commits) in the held state, so the next run's IOs interleave
with it as the Python model's do.

Each test compares whole fio documents (jobs, latency percentiles, the cluster's and every device's
statistics, the block layers' tag counters included) and simulated times. Mutation checked:
``test_mutation_a_batch_keeping_its_place_changes_the_chain`` (the Python reference with the batch's
submitter kept at the head of the wait queue instead of going to its back: the documents differ, so
the identity is not vacuous).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.experiment.execute import execute_task
from simulator.experiment.load import load_experiment, parse_sets
from simulator.experiment.runner import plan_tasks

ROOT = Path(__file__).resolve().parents[1]


def _lab(runtime: str, variant: str = "croit", sets: tuple[str, ...] = ()) -> dict:
    """The Ceph lab's chain (calibration/ceph-lab/experiment.yaml: clusters/ceph_lab_fitted, one
    SSD-class drive split into the three OSDs' volumes behind one block layer of 128 tags; QD 1, 4,
    16 x randread, randwrite, state kept from point to point), with short runs."""
    exp = load_experiment(ROOT / "calibration" / "ceph-lab" / "experiment.yaml",
                          parse_sets([f"workload.global.runtime={runtime}", *sets]))
    return next(t for t in plan_tasks(exp) if t["points"][0][1]["variant"] == variant)


def _doc(o) -> str:
    return json.dumps(o.doc, sort_keys=True, default=str)


def _slept_batches(monkeypatch) -> list[int]:
    """Count the Python model's deferred batches that slept for tags (submit_batch leaving a _Batch waiter)."""
    from simulator.devices import blocklayer as B

    n = [0]
    orig = B.BlockLayer.submit_batch

    def submit_batch(self, reqs):
        evs = orig(self, reqs)
        n[0] += any(type(w) is B._Batch for w in self._waiters)
        return evs

    monkeypatch.setattr(B.BlockLayer, "submit_batch", submit_batch)
    return n


@pytest.fixture(scope="module")
def lab_chains():
    """The lab's croit chain in Python (with the sleeping batches counted) and with engine=auto."""
    task = _lab("0.25s")
    with pytest.MonkeyPatch.context() as mp:
        slept = _slept_batches(mp)
        py = execute_task({**task, "engine": "python"})
    auto = execute_task({**task, "engine": "auto"})
    return task, py, auto, slept[0]


def test_the_lab_chain_at_128_tags_equals_the_python_chain(lab_chains):
    """Every point of the lab's chain (reads and writes at QD 1, 4, 16 on the SSD-class drive, its
    block layer at the shipped 128 tags, state kept) runs compiled, and each point's whole fio
    document and simulated time equal the Python chain's; the Python chain had deferred batches
    sleeping for tags (the waiter is exercised, not just compiled)."""
    _task, py, auto, slept = lab_chains
    assert [o.extra["engine"] for o in auto] == ["compiled"] * len(auto), [o.extra.get("why") for o in auto]
    assert slept > 0
    waits = 0
    for a, b in zip(py, auto, strict=True):
        assert a.sim_s == b.sim_s, a.labels
        assert a.doc["jobs"] == b.doc["jobs"], a.labels
        assert _doc(a) == _doc(b), a.labels
        waits += sum(d["blocklayer"]["tag_waits"] for d in a.doc["sim"]["devices"] if "blocklayer" in d)
    assert waits > 0


def test_mutation_a_batch_keeping_its_place_changes_the_chain(lab_chains, monkeypatch):
    """The waiter's order matters: with the Python reference's sleeping batch keeping its place at the
    head of the wait queue after each tag (``appendleft`` instead of ``append`` in BlockLayer._refill)
    the chain leaves the compiled one's results."""
    from simulator.devices import blocklayer as B

    task, _py, auto, _slept = lab_chains

    def refill(self):
        w = self._waiters
        while self._tags > 0 and w:
            x = w.popleft()
            self._tags -= 1
            if type(x) is B._Batch:
                req = x.reqs[x.i]
                x.i += 1
                if x.i < len(x.reqs):
                    w.appendleft(x)  # the mutation: the batch's submitter does not go to the back
            else:
                req = x
            self._insert(req)
        self._dispatch()

    monkeypatch.setattr(B.BlockLayer, "_refill", refill)
    mutated = execute_task({**task, "engine": "python"})
    assert any(_doc(a) != _doc(b) for a, b in zip(mutated, auto, strict=True))


def test_the_lab_chain_alternating_engines_equals_the_python_chain(lab_chains, monkeypatch):
    """Engines alternating point by point (compiled, python, ...): a Python point after a compiled one
    does not start from a drained hand-over of the held state (the SSD's pending NAND work, the
    deferred writes and the sleeping batches) but from the runner's replay of the chain in Python
    (``HandOver``); a compiled point after a Python one runs where nothing is pending. Every document
    equals the Python chain's."""
    from tests.test_core_ceph_resume import _per_point

    task, py, _auto, _slept = lab_chains
    _per_point(monkeypatch, {(labels["rw"], labels["qd"]): ("auto" if i % 2 == 0 else "python")
                             for i, (_x, labels, _r) in enumerate(task["points"])})
    alt = execute_task({**task, "engine": "auto"})
    engines = [o.extra["engine"] for o in alt]
    assert "compiled" in engines and "python" in engines
    for a, b in zip(py, alt, strict=True):
        assert _doc(a) == _doc(b), (a.labels, b.extra)


# ------------------------------------------------------------------------------------------------ small clusters on SSDs
def _ssd(profile: str, capacity: str = "4GiB", state: str = "full", **params) -> dict:
    return {"kind": "ssd", "profile": profile, "params": {"capacity": capacity, "precondition": {"state": state}, **params}}


# 32 command slots: mq-deadline's default of 64 tags (1 MiB blocks: spare blocks for GC on a small drive)
_SATA = _ssd("ssd/class/consumer_sata", "8GiB", flash={"block_size": "1MiB"})
_NVME = _ssd("ssd/class/enterprise_plp_nvme")
_VIRTIO = {"kind": "ssd", "profile": "local/dev_vm_virtio"}  # the lab's stand-in (2.5 GiB, full, volatile cache)

#: name: (drive, block layer, split, BlueStore options)
_VARIANTS = {
    "sata-deadline": (_SATA, {}, 1, {"deferred_batch_ops": 16}),
    "sata-deadline-8tags-lvm": (_SATA, {"nr_requests": 8}, 2, {"deferred_batch_ops": 16}),
    "nvme-none-16tags": (_NVME, {"scheduler": "none", "nr_requests": 16}, 1, {}),
    "virtio-none-lvm3": (_VIRTIO, {"scheduler": "none", "nr_requests": 32}, 3, {"deferred_batch_ops": 32}),
    "sata-no-block-layer": (_SATA, {"enabled": False}, 1, {"deferred_batch_ops": 16}),
    "nvme-direct-writes": (_NVME, {"nr_requests": 8}, 1, {"prefer_deferred_size": 0}),
}


#: variants whose first write run ends with NAND events (die batches, metadata commits) pending
_NAND_PENDING = ("nvme-none-16tags", "sata-deadline-8tags-lvm")


def _params(dev: dict, blk: dict, split: object, bs: dict) -> dict:
    return {
        "hosts": [{"name": "h", "count": 3, "cpu": {"cores": 2},
                   "drives": [{"count": 1, "device": dev, "split": split}]}],
        "pools": [{"name": "p", "size": 3, "min_size": 2, "pg_num": 16}],
        "images": [{"pool": "p", "name": "img", "size": "1GiB"}],
        "osd": {"cost_cv": 0.3},
        "bluestore": bs,
        "block_layer": {"enabled": True, **blk},
    }


def _chain(params: dict, engine: str, jobs: list[dict], seed: int = 3) -> tuple[list, list, tuple]:
    """``jobs`` one after the other on one cluster (state kept) with ``engine``: each job's result
    (repr), which engine ran it with the SSDs' NAND events pending in the held state after it
    (compiled), the devices' statistics at the end and the end time."""
    import numpy as np

    from simulator.ceph.cluster import Cluster
    from simulator.core import choose
    from simulator.core import layout as DL
    from simulator.core.ceph_fio import held_state
    from simulator.devices.registry import resolve_params
    from simulator.engine import Simulation
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload, run_fio

    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": params})
    sim = Simulation(seed)
    cl = Cluster(cfg, "cluster", sim.root)
    img = cl.image("p", "img")
    out, ran = [], []
    for job in jobs:
        if engine != "python":
            wl = Workload(sim, resolve_jobs({}, [job], "test"), lambda _j: [img])
            ran.append(choose(sim, wl, engine) or "compiled")
        out.append(repr(run_fio(sim, [img], job, engine=engine)[0]))
        held = held_state(cl)
        if held is not None:
            ds = held.st.dev
            ran[-1] = (ran[-1], int(np.isin(ds.hk[: ds.gi[DL.GI_HN]], (DL.EV_SSD_DIE, DL.EV_SSD_META)).sum()))
    devs = []  # as the held state reports them (write_back(report=True)): no hand-over

    for o in cl.osds:
        d = o.io_device
        while d is not None:
            s = d.stats()
            devs.append((d.path, d.completed, d.bytes, s.get("blocklayer"), s["utilisation"], s["mean_queue_depth"]))
            d = getattr(d, "base", None) if getattr(d, "base", None) is not d else None
    return out, ran, (devs, sim.env.now)


def _job(**kw) -> dict:
    return {"name": "j", "ioengine": "libaio", "sim_slat": 0, "norandommap": 1, "bs": 4096, "randseed": 5, **kw}


_JOBS = [_job(rw="randwrite", iodepth=16, number_ios=1500), _job(rw="randread", iodepth=4, number_ios=600),
         _job(rw="randwrite", iodepth=64, number_ios=2500), _job(rw="randread", iodepth=32, number_ios=1500)]


@pytest.mark.parametrize("variant", sorted(_VARIANTS))
def test_small_ssd_clusters_chain_identical_and_auto_never_fails(variant):
    """Three hosts, BlueStore on SSDs (consumer SATA, PLP NVMe, the lab's virtio stand-in; LVM volumes of
    one drive; block layers of 8 to 64 tags, mq-deadline or none, or none at all; deferred and direct
    writes): a chain of writes and reads at QD 4 to 64 on one cluster with engine=auto runs every job
    compiled, with the Python chain's results (every job's fio result, every device's counters, the
    block layers' tag figures, utilisation, mean queue depth and the end time)."""
    dev, blk, split, bs = _VARIANTS[variant]
    p = _params(dev, blk, split, bs)
    ref, _, ref_devs = _chain(p, "python", _JOBS)
    out, ran, devs = _chain(p, "auto", _JOBS)
    assert [e for e, _n in ran] == ["compiled"] * len(_JOBS), ran
    if variant in _NAND_PENDING:  # the first write run left NAND work pending that the read run continued
        assert ran[0][1] > 0
    assert out == ref
    assert devs == ref_devs


# ------------------------------------------------------------------------------------------------ DB/WAL on SSDs
@pytest.mark.parametrize("pool,overrides", [("test-normal-hdd", {}), ("test-mach2", "croit-hdd")])
def test_croit_with_db_wal_on_ssd_identical(pool, overrides):
    """clusters/croit_mach2_ssd_wal (every OSD's DB and WAL on an LVM volume of a shared PLP NVMe SSD
    behind its block layer, the data on the HDDs): 4 KiB random writes at QD64 to one pool (the MACH.2
    pool with its drives' write cache volatile, as the croit HDD bench runs it: its media cache is
    refused by name): completion times, BlueStore's counters and every OSD's data and WAL devices'
    counters (the SSDs' and their block layers' included) identical to the Python model."""
    import numpy as np

    from simulator.ceph.bench import build_cluster_from_profile
    from simulator.core.ceph_bench import CROIT_HDD_OVERRIDES, py_closed
    from simulator.core.ceph_build import run_closed, unsupported_writes
    from simulator.engine import Simulation

    ov = CROIT_HDD_OVERRIDES if overrides else {}

    def build():
        sim = Simulation(seed=1)
        return sim, build_cluster_from_profile(sim, "clusters/croit_mach2_ssd_wal", overrides=ov)

    sim_py, py = build()
    _, cc = build()
    assert unsupported_writes(cc, [cc.image(pool, "test")]) is None
    n = 2500
    rng = np.random.default_rng(5)
    img = py.image(pool, "test")
    req = (np.ones(n, np.int64), rng.integers(0, img.capacity // 4096, n) * 4096, np.full(n, 4096, np.int64))
    _, ref = py_closed(sim_py, img, *req, 64)
    _, out, info = run_closed(cc, cc.image(pool, "test"), *req, 64)
    np.testing.assert_array_equal(out, ref)
    assert info["bluestore"]["kv_batches"] > 0
    ssd_ios = 0
    for a, b in zip(py.osds, cc.osds, strict=True):
        assert (a.bs.kv_batches, a.bs.deferred_ops, a.bs.wal_pos) == (b.bs.kv_batches, b.bs.deferred_ops, b.bs.wal_pos)
        for x, y in ((a.bs.dev, b.bs.dev), (a.bs.wal_dev, b.bs.wal_dev), (a.bs.wal_dev.base, b.bs.wal_dev.base),
                     (a.bs.wal_dev.base.dev, b.bs.wal_dev.base.dev)):
            assert x.path == y.path
            assert (x.completed, x.bytes) == (y.completed, y.bytes), x.path
            sx, sy = x.stats(), y.stats()
            assert sx["utilisation"] == pytest.approx(sy["utilisation"], rel=1e-9, abs=1e-12), x.path
            assert sx["mean_queue_depth"] == pytest.approx(sy["mean_queue_depth"], rel=1e-9, abs=1e-12), x.path
        ssd_ios += sum(a.bs.wal_dev.base.dev.completed)
    assert ssd_ios > 0


def test_an_ssd_read_beyond_the_core_table_is_refused_by_name():
    """What the compiled core cannot run on SSDs is refused before the run, by name, and engine=auto
    runs Python instead (never a run that stops midway): reads of 32 MiB objects (order 25) span more
    mapping units than the core's SSD read table (core.run.SSD_READ_UNITS); 4 MiB objects run compiled."""
    from simulator.ceph.cluster import Cluster
    from simulator.core import choose
    from simulator.devices.registry import resolve_params
    from simulator.engine import Simulation
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload, run_fio

    job = _job(rw="randread", iodepth=8, bs=65536, number_ios=300)
    out = {}
    for order in (22, 25):
        p = _params(*_VARIANTS["nvme-none-16tags"])
        p["images"] = [{"pool": "p", "name": "img", "size": "1GiB", "order": order, "prefilled": True}]
        res = []
        for engine in ("python", "auto"):
            _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": p})
            sim = Simulation(3)
            cl = Cluster(cfg, "cluster", sim.root)
            img = cl.image("p", "img")
            why = choose(sim, Workload(sim, resolve_jobs({}, [job], "test"), lambda _j, i=img: [i]), engine)
            res.append((why, repr(run_fio(sim, [img], job, engine=engine)[0])))
        assert res[0][1] == res[1][1]
        out[order] = res[1][0]
    assert out[22] is None
    assert "SSD read table" in out[25] and "8193 mapping units" in out[25]

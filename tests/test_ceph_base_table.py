"""The RBD image's object-location table (``simulator.ceph.rbd.BaseTable``): 4 bytes per (object,
position) in allocation units, 8 bytes when the largest device has more than 2^31 - 1 units.

* The accessors refuse offsets that are negative, not multiples of the unit or not below the largest
  device, and positions outside the table; bytes go in and come out unchanged (round trip, both widths).
* The 8-byte fallback is chosen exactly when the largest device needs more than 2^31 - 1 units.
* A differential oracle: the same runs (replicated pre-filled image with small and whole-object writes
  and reads; an erasure-coded pool with backfill after an OSD goes out) give identical per-request
  logs, statistics and object locations with the 4-byte table and with the 8-byte one.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import simulator.ceph.rbd as rbd
from simulator.ceph.rbd import BaseTable

sys.path.insert(0, str(Path(__file__).parent))
from fio_drive import ClosedLoop

KIB = 1024
TIB = 1 << 40


def _table(unit: int = 64 * KIB, limit: int = 7 * 10**12, n: int = 10, width: int = 3) -> BaseTable:
    return BaseTable(n, width, unit, limit, "t")


# ---------------------------------------------------------------------------------------- accessors
def test_new_table_has_nothing_allocated() -> None:
    t = _table()
    assert t.code == "i" and t.nbytes == 10 * 3 * 4
    assert t.base_of(0, 0) == -1 and t.base_of(9, 2) == -1
    assert not t.exists(4)
    assert not t.allocated().any()
    assert (t.bases() == -1).all() and t.bases().dtype == np.int64 and t.bases().shape == (10, 3)


@pytest.mark.parametrize("bad", [-1, -65536, 4096, 65536 + 1, 7 * 10**12, 7 * 10**12 + 65536, 1 << 62])
def test_set_base_refuses_negative_unaligned_or_out_of_range_offsets(bad: int) -> None:
    t = _table()
    with pytest.raises(ValueError, match="device offset"):
        t.set_base(1, 1, bad)
    assert t.base_of(1, 1) == -1  # nothing written


@pytest.mark.parametrize("bad", [-2, 4096, 7 * 10**12])
def test_bulk_setters_refuse_bad_offsets_and_write_nothing(bad: int) -> None:
    t = _table()
    offs = np.full((10, 3), 65536, dtype=np.int64)
    offs[3, 1] = bad
    with pytest.raises(ValueError, match=f"device offset {bad} is"):
        t.set_bases(slice(None), offs)
    with pytest.raises(ValueError, match=f"device offset {bad} is"):
        t.set_bases_flat(np.arange(30), offs.reshape(-1))
    with pytest.raises(ValueError):
        t.encode_bases([bad])
    assert not t.allocated().any()


def test_a_unit_that_is_not_a_power_of_two_checks_alignment_too() -> None:
    t = _table(unit=12 * KIB, limit=TIB)
    t.set_bases(slice(None), np.arange(30).reshape(10, 3) * 12 * KIB)
    with pytest.raises(ValueError, match="device offset 16384 is not a multiple"):
        t.set_bases_flat(np.array([0, 1]), np.array([-1, 16 * KIB]))
    with pytest.raises(ValueError, match="not a multiple"):
        t.set_base(0, 0, 8 * KIB)
    assert t.bases()[9, 2] == 29 * 12 * KIB


@pytest.mark.parametrize(("objno", "pos"), [(-1, 0), (10, 0), (0, 3), (0, -1)])
def test_positions_outside_the_table_are_index_errors(objno: int, pos: int) -> None:
    t = _table()
    with pytest.raises(IndexError):
        t.base_of(objno, pos)
    with pytest.raises(IndexError):
        t.set_base(objno, pos, 0)


def test_nonpositive_unit_or_limit_is_refused() -> None:
    with pytest.raises(ValueError):
        BaseTable(1, 1, 0, 1 << 30)
    with pytest.raises(ValueError):
        BaseTable(1, 1, 4096, 0)


@pytest.mark.parametrize(("unit", "limit"), [(64 * KIB, 7 * 10**12), (4 * KIB, 16 * TIB), (4 * KIB, 1 << 31), (12 * KIB, TIB)])
def test_offsets_round_trip_through_every_accessor(unit: int, limit: int) -> None:
    rng = np.random.default_rng(7)
    n, w = 200, 4
    t = BaseTable(n, w, unit, limit, "t")
    want = rng.integers(0, limit // unit, (n, w)) * unit
    want[rng.random((n, w)) < 0.2] = -1
    want[0, 0] = (limit - 1) // unit * unit  # the largest offset
    want[1, :] = -1  # an object that does not exist
    for objno in range(n):
        for pos in range(w):
            if want[objno, pos] >= 0:
                t.set_base(objno, pos, int(want[objno, pos]))
    assert np.array_equal(t.bases(), want)
    assert [t.base_of(o, p) for o in range(n) for p in range(w)] == want.reshape(-1).tolist()
    assert all(isinstance(t.base_of(o, 0), int) for o in range(n))
    assert np.array_equal(t.allocated(), (want >= 0).any(axis=1))
    assert [t.exists(o) for o in range(n)] == (want >= 0).any(axis=1).tolist()
    rows = np.array([5, 0, 7])
    assert np.array_equal(t.bases(rows), want[rows])
    t2 = BaseTable(n, w, unit, limit, "t")
    t2.set_bases(slice(None), want)
    assert np.array_equal(t2.bases(), want)
    t3 = BaseTable(n, w, unit, limit, "t")
    perm = rng.permutation(n * w)
    t3.set_bases_flat(perm, want.reshape(-1)[perm])
    assert np.array_equal(t3.bases(), want)
    t3.set_bases(rows, -1)  # bulk clear
    assert (t3.bases(rows) == -1).all() and not t3.allocated()[rows].any()


# ---------------------------------------------------------------------------------------- width
@pytest.mark.parametrize(
    ("unit", "limit", "code"),
    [
        (4 * KIB, ((1 << 31) - 1) * 4 * KIB, "i"),  # exactly 2^31 - 1 units: the largest entry fits
        (4 * KIB, ((1 << 31) - 1) * 4 * KIB + 1, "q"),  # one byte more needs unit 2^31
        (4 * KIB, 16 * TIB, "q"),  # a 16 TiB device at 4 KiB: 2^32 units
        (64 * KIB, 16 * TIB, "i"),  # the same at 64 KiB: 2^28
        (64 * KIB, 200 * TIB, "q"),
    ],
)
def test_eight_byte_fallback_exactly_when_the_device_needs_more_than_2_31_units(unit: int, limit: int, code: str) -> None:
    t = BaseTable(3, 2, unit, limit, "t")
    assert t.code == code
    assert t.nbytes == 3 * 2 * (4 if code == "i" else 8)
    top = (limit - 1) // unit * unit  # the largest valid offset
    t.set_base(2, 1, top)
    assert t.base_of(2, 1) == top
    assert t.bases()[2, 1] == top


def _store(kind: str, unit: int, cap: int) -> SimpleNamespace:
    return SimpleNamespace(KIND=kind, cfg=SimpleNamespace(min_alloc_size=unit), dev=SimpleNamespace(capacity=cap))


def test_unit_and_limit_suit_every_store() -> None:
    """Mixed stores: the unit is the gcd of their units, the limit the largest device (an object may move
    to any OSD on recovery)."""
    t = BaseTable.for_stores(4, 3, [_store("bluestore", 64 * KIB, 5 * 10**12), None,
                                    _store("bluestore", 16 * KIB, 7 * 10**12)], "t")
    assert (t.unit, t.limit, t.code) == (16 * KIB, 7 * 10**12, "i")
    t = BaseTable.for_stores(4, 3, [_store("bluestore", 64 * KIB, 20 * TIB), _store("filestore", 0, TIB)], "t")
    assert (t.unit, t.limit, t.code) == (4 * KIB, 20 * TIB, "q")


# ---------------------------------------------------------------------------------------- oracle
def _replicated_run() -> tuple:
    from simulator.ceph.bench import build_cluster_from_profile
    from simulator.engine import Simulation

    params = {
        "images": [
            {"pool": "test-mach2", "name": "test", "size": "64GiB", "prefilled": True},
            {"pool": "test-normal-hdd", "name": "test", "size": "64GiB", "prefilled": False},
        ],
        "bluestore": {"onode_cache_size": 1000},
    }
    sim = Simulation(seed=3)
    cl = build_cluster_from_profile(sim, params=params, stand_in=True)
    logs = []
    for pool, rw, bs, n in (("test-mach2", "randwrite", 4096, 400), ("test-mach2", "write", 4 << 20, 30),
                            ("test-mach2", "randread", 4096, 400), ("test-normal-hdd", "randrw", 64 * KIB, 300),
                            ("test-normal-hdd", "randread", 4096, 200)):
        loop = ClosedLoop(sim, cl.image(pool, "test"), qd=16, bs=bs, rw=rw, n_ios=n, seed=5)
        loop.run()
        logs.append(loop.log.arrays())
    return sim, cl, logs


def _ec_backfill_run() -> tuple:
    from test_ceph_recovery import _cluster, _params

    p = _params([{"at": "1s", "action": "out", "osd": 2}], ec=True, recovery={"recovery_sleep": "0.01s"})
    p["images"][0].update(prefilled=True, size="256MiB")
    sim, cl = _cluster(p, seed=2)
    loop = ClosedLoop(sim, cl.image("rbd", "img"), qd=4, rw="randrw", runtime=6.0, seed=2)
    loop.run()
    assert cl.stats()["recovery"]["pgs_backfilled"] > 0  # the relayout ran
    return sim, cl, [loop.log.arrays()]


@pytest.mark.parametrize("run", [_replicated_run, _ec_backfill_run])
def test_four_and_eight_byte_tables_give_identical_simulations(run, monkeypatch) -> None:
    sim, cl, logs = run()
    assert {img.base_table.code for img in cl.images.values()} == {"i"}
    monkeypatch.setattr(rbd, "_I32_MAX", 0)  # every table takes the 8-byte fallback
    sim8, cl8, logs8 = run()
    assert {img.base_table.code for img in cl8.images.values()} == {"q"}
    assert sim.env.now == sim8.env.now
    assert len(logs) == len(logs8)
    for a, b in zip(logs, logs8, strict=True):
        assert a.keys() == b.keys() and len(a["op"]) > 0
        for k in a:
            assert np.array_equal(a[k], b[k]), k
    assert repr(cl.stats()) == repr(cl8.stats())
    for key, img in cl.images.items():
        bases = img.bases()
        assert np.array_equal(bases, cl8.images[key].bases())
        assert img.allocated().sum() > 0

"""The data caches on runs of units (simulator.ceph.cache) behave like caches with one entry per unit.

The references below keep one OrderedDict entry per (object, unit) as the caches did before runs:
2Q (Nautilus' TwoQCache: warm_in FIFO, warm_out ghosts, hot LRU) and plain LRU. Random sequences of
range operations (insert, discard, probe + touch) are applied to both; after every step the units
of every list, in LRU order, and the hit/miss answers must agree. A range insert trims once after
the whole range (the reference too: per unit, the trims would be interleaved).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.ceph.cache import LruExtentCache, TwoQExtentCache, _List


class Ref2Q:
    def __init__(self, capacity: int, kin_ratio: float = 0.5, kout_ratio: float = 0.5):
        self.capacity = capacity
        self.kin = int(capacity * kin_ratio)
        self.kout = int(capacity * kout_ratio)
        self.w_in: OrderedDict = OrderedDict()
        self.out: OrderedDict = OrderedDict()
        self.hot: OrderedDict = OrderedDict()

    def contains(self, keys) -> bool:
        return all(k in self.w_in or k in self.hot for k in keys)

    def touch(self, keys) -> None:
        for k in keys:
            if k in self.hot:
                self.hot.move_to_end(k)

    def insert(self, keys) -> None:
        if self.capacity <= 0:
            return
        for key in keys:
            if key in self.w_in:
                continue
            if key in self.hot:
                self.hot.move_to_end(key)
                continue
            if key in self.out:
                del self.out[key]
                self.hot[key] = None
            else:
                self.w_in[key] = None
        self.trim()

    def discard(self, keys) -> None:
        for k in keys:
            self.w_in.pop(k, None)
            self.hot.pop(k, None)
            self.out.pop(k, None)

    def trim(self) -> None:
        cap = self.capacity
        if len(self.w_in) + len(self.hot) <= cap:
            return
        kin = self.kin
        khot = cap - kin
        if len(self.hot) < khot:
            kin += khot - len(self.hot)
        elif len(self.w_in) < kin:
            khot += kin - len(self.w_in)
        while len(self.w_in) > kin:
            self.out[self.w_in.popitem(last=False)[0]] = None
        while len(self.hot) > khot:
            self.hot.popitem(last=False)
        while len(self.out) > self.kout:
            self.out.popitem(last=False)


class RefLru:
    def __init__(self, capacity: int):
        self.capacity = capacity
        self.d: OrderedDict = OrderedDict()

    def contains(self, keys) -> bool:
        return all(k in self.d for k in keys)

    def touch(self, keys) -> None:
        for k in keys:
            if k in self.d:
                self.d.move_to_end(k)

    def insert(self, keys) -> None:
        if self.capacity <= 0:
            return
        for k in keys:  # per unit, evicting as it goes (the same result as trimming at the end)
            if k in self.d:
                self.d.move_to_end(k)
                continue
            self.d[k] = None
            if len(self.d) > self.capacity:
                self.d.popitem(last=False)

    def discard(self, keys) -> None:
        for k in keys:
            self.d.pop(k, None)


def units(lst: _List) -> list[tuple[int, int]]:
    out = []
    r = lst.head
    while r is not None:
        assert r.a < r.b
        out.extend((r.key, u) for u in range(r.a, r.b))
        r = r.next
    return out


def check_index(c) -> None:
    """The per-object index lists every run once, sorted and non-overlapping; list unit counts add up."""
    seen = 0
    for key, (starts, runs) in c._idx.items():
        assert starts == [r.a for r in runs] and starts
        for r, n in itertools.pairwise(runs):
            assert r.b <= n.a
        for r in runs:
            assert r.key == key and r.lst is not None
        seen += len(runs)
    lists = [c._l] if isinstance(c, LruExtentCache) else [c._in, c._hot, c._out]
    n = 0
    for lst in lists:
        u = units(lst)
        assert len(u) == lst.units
        r = lst.head
        while r is not None:
            n += 1
            r = r.next
    assert n == seen


rng_op = st.tuples(
    st.sampled_from(["insert", "insert", "discard", "probe"]),
    st.integers(0, 2),  # object
    st.integers(0, 30),  # first unit
    st.integers(1, 12),  # units
)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 40), st.sampled_from([(0.5, 0.5), (0.25, 0.75), (0.8, 0.2)]), st.lists(rng_op, max_size=60))
def test_2q_runs_equal_per_unit_2q(capacity, ratios, ops):
    c = TwoQExtentCache(capacity, *ratios)
    r = Ref2Q(capacity, *ratios)
    for name, obj, a, n in ops:
        key = 1000 + obj
        keys = [(key, u) for u in range(a, a + n)]
        if name == "insert":
            c.insert_range(key, a, a + n)
            r.insert(keys)
        elif name == "discard":
            c.discard_range(key, a, a + n)
            r.discard(keys)
        else:
            got = c.contains_range(key, a, a + n)
            assert got == r.contains(keys)
            miss = [(key, u) for x, y in c.missing(key, a, a + n) for u in range(x, y)]
            assert miss == [k for k in keys if not (k in r.w_in or k in r.hot)]
            if got:
                c.touch_range(key, a, a + n)
                r.touch(keys)
        assert units(c._in) == list(r.w_in)
        assert units(c._hot) == list(r.hot)
        assert units(c._out) == list(r.out)
        assert len(c) == len(r.w_in) + len(r.hot)
        check_index(c)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 40), st.lists(rng_op, max_size=60))
def test_lru_runs_equal_per_unit_lru(capacity, ops):
    c = LruExtentCache(capacity)
    r = RefLru(capacity)
    for name, obj, a, n in ops:
        key = 7 + obj
        keys = [(key, u) for u in range(a, a + n)]
        if name == "insert":
            c.insert_range(key, a, a + n)
            r.insert(keys)
        elif name == "discard":
            c.discard_range(key, a, a + n)
            r.discard(keys)
        else:
            got = c.contains_range(key, a, a + n)
            assert got == r.contains(keys)
            if got:
                c.touch_range(key, a, a + n)
                r.touch(keys)
        assert units(c._l) == list(r.d)
        check_index(c)


def test_large_io_is_few_runs():
    """A 4 MiB object written and read in 4 KiB units is one run, and a 4 KiB overwrite in its
    middle splits it into three pieces, not 1,024 entries."""
    c = TwoQExtentCache(1 << 20)
    c.insert_range(5, 0, 1024)
    assert c.runs() == 1 and len(c) == 1024
    assert c.contains_range(5, 0, 1024)
    c.discard_range(5, 100, 101)
    assert c.runs() == 2 and len(c) == 1023
    assert not c.contains_range(5, 0, 1024) and c.contains_range(5, 101, 1024)
    assert c.missing(5, 0, 1024) == [(100, 101)]
    c.insert_range(5, 100, 101)
    assert c.runs() == 3 and c.contains_range(5, 0, 1024)


def _apply(c, name, key, a, n):
    if name == "insert":
        c.insert_range(key, a, a + n)
        return None
    if name == "discard":
        c.discard_range(key, a, a + n)
        return None
    got = c.contains_range(key, a, a + n)
    if got:
        c.touch_range(key, a, a + n)
    return got, c.missing(key, a, a + n)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40), st.booleans(), st.lists(rng_op, max_size=40), st.lists(rng_op, max_size=40))
def test_packed_cache_behaves_as_the_one_it_was_packed_from(capacity, twoq, before, after):
    """A cache handed back by the compiled core is packed (arrays, no runs); its first use builds the runs.
    Packed from another cache's unit arrays, it then answers and evolves exactly like that cache."""
    mk = (lambda: TwoQExtentCache(capacity)) if twoq else (lambda: LruExtentCache(capacity))
    a = mk()
    for name, obj, x, n in before:
        _apply(a, name, 50 + obj, x, n)
    b = mk()
    b.insert_range(99, 0, 3)  # contents that the pack must replace
    b.pack(a.unit_arrays())
    assert len(b) == len(a) and [x.units for x in b.lists()] == [x.units for x in a.lists()]
    assert b._idx == {} and all(x.head is None for x in b.lists())  # nothing built yet
    for (k1, u1), (k2, u2) in zip(b.unit_arrays(), a.unit_arrays(), strict=True):
        assert k1.tolist() == k2.tolist() and u1.tolist() == u2.tolist()
    for name, obj, x, n in after:
        assert _apply(b, name, 50 + obj, x, n) == _apply(a, name, 50 + obj, x, n)
        assert [units(x) for x in b.lists()] == [units(x) for x in a.lists()]
        check_index(b)
    assert len(b) == len(a)


def test_pack_checks_its_arrays():

    c = TwoQExtentCache(8)
    with pytest.raises(ValueError, match="3 lists"):
        c.pack([(np.zeros(1, np.int64), np.zeros(1, np.int64))])
    with pytest.raises(ValueError, match="differ in length"):
        c.pack([(np.zeros(2, np.int64), np.zeros(1, np.int64))] * 3)
    c.pack([(np.zeros(0, np.int64), np.zeros(0, np.int64))] * 3)
    assert len(c) == 0 and c.runs() == 0


@pytest.mark.parametrize("twoq", [True, False])
def test_resizing_a_packed_cache_trims_as_the_unpacked_one(twoq):
    from simulator.ceph.autotune import resize_cache

    a = TwoQExtentCache(64) if twoq else LruExtentCache(64)
    for i in range(40):
        a.insert_range(3 + i % 3, 2 * i, 2 * i + 1 + i % 2)
    a.contains_range(3, 0, 1)
    b = TwoQExtentCache(64) if twoq else LruExtentCache(64)
    b.pack(a.unit_arrays())
    resize_cache(a, 20)
    resize_cache(b, 20)
    assert [units(x) for x in b.lists()] == [units(x) for x in a.lists()] and len(b) == len(a) <= 20
    check_index(b)

"""The onode LRU's compact (bulk-loaded, cold) segment behaves exactly like a plain OrderedDict LRU.

The reference below is the LRU as it was before the compact segment: one OrderedDict entry per key,
``move_to_end`` on a hit, ``popitem(last=False)`` when over capacity. Random operation sequences
(bulk loads of sorted and unsorted keys, lookups, inserts, discards, range probes) are applied to
both; after every step the contents, the LRU order and the hit/miss counters must agree.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from simulator.ceph.cache import LruCache


class RefLru:
    def __init__(self, capacity: int):
        self.capacity = capacity
        self.d: OrderedDict[int, None] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def lookup(self, key: int) -> bool:
        if key in self.d:
            self.d.move_to_end(key)
            self.hits += 1
            return True
        self.misses += 1
        return False

    def insert(self, key: int) -> None:
        if self.capacity <= 0:
            return
        if key in self.d:
            self.d.move_to_end(key)
            return
        self.d[key] = None
        if len(self.d) > self.capacity:
            self.d.popitem(last=False)

    def discard(self, key: int) -> None:
        self.d.pop(key, None)

    def contains_all(self, keys: range) -> bool:
        return all(k in self.d for k in keys)

    def touch_all(self, keys: range) -> None:
        for k in keys:
            self.d.move_to_end(k)


def order_of(c: LruCache) -> list[int]:
    """The compact cache's keys, oldest first (cold segment in LRU order, then the dict)."""
    out = []
    if c._cn:
        n = len(c._ck)
        idx = range(n) if c._corder is None else list(c._corder)
        for i in list(idx)[c._cpos:]:
            if c._calive[i]:
                out.append(c._ck[i] + c._cbase)
    return out + list(c._d)


BIG = 5 << 36  # keys like the OSDs' (image key base + object number)

op = st.one_of(
    st.tuples(st.just("load_sorted"), st.lists(st.integers(0, 40), max_size=30)),
    st.tuples(st.just("load_any"), st.lists(st.integers(0, 40), max_size=20)),
    st.tuples(st.just("lookup"), st.integers(0, 40)),
    st.tuples(st.just("insert"), st.integers(0, 40)),
    st.tuples(st.just("discard"), st.integers(0, 40)),
    st.tuples(st.just("range"), st.integers(0, 40)),
)


@given(st.integers(0, 70), st.lists(op, max_size=60), st.booleans())
def test_compact_lru_equals_ordereddict_lru(capacity, ops, wide):
    scale = (1 << 33) if wide else 1  # wide: key spans beyond 32 bits (int64 storage)
    c = LruCache(capacity)
    r = RefLru(capacity)
    for name, arg in ops:
        if name in ("load_sorted", "load_any"):
            keys = sorted(set(arg)) if name == "load_sorted" else arg
            keys = [BIG + k * scale for k in keys]
            c.load(np.array(keys, dtype=np.int64))
            for k in keys:
                r.insert(k)
        elif name == "lookup":
            k = BIG + arg * scale
            assert c.lookup(k) == r.lookup(k)
        elif name == "insert":
            c.insert(BIG + arg * scale)
            r.insert(BIG + arg * scale)
        elif name == "discard":
            c.discard(BIG + arg * scale)
            r.discard(BIG + arg * scale)
        else:
            keys = range(BIG + arg * scale, BIG + (arg + 3) * scale, scale)
            got = c.contains_all(keys)
            assert got == r.contains_all(keys)
            if got:
                c.touch_all(keys)
                r.touch_all(keys)
        assert order_of(c) == list(r.d)
        assert len(c) == len(r.d)
        assert (c.hits, c.misses) == (r.hits, r.misses)
        for k in list(r.d)[:5]:
            assert k in c


def test_prefill_load_is_compact():
    """A pre-filled onode cache (sorted keys, as the cluster loads it) costs a few bytes per key."""
    c = LruCache(1 << 16)
    keys = (1 << 36) + np.arange(0, 1 << 18, 4, dtype=np.int64)
    c.load(keys)
    assert len(c) == 1 << 16 and not c._d and c._corder is None
    nbytes = c._ck.itemsize * len(c._ck) + len(c._calive)
    assert nbytes == 5 * (1 << 16)
    # eviction takes the oldest (smallest) key first, and a hit moves a key to the young end
    assert c.lookup(int(keys[0]))
    c.insert(7)
    assert int(keys[0]) in c and int(keys[1]) not in c


def test_set_order_equals_ordereddict_lru():
    """``set_order`` (the compiled core's write-back: an ascending head, then a run's touches) holds
    exactly the given LRU order, a short tail in the OrderedDict and a long one through ``load``'s
    order array; then lookups, inserts and evictions behave as the reference LRU holding that order."""
    rng = np.random.default_rng(11)
    paths = {"dict": 0, "order": 0}
    for trial in range(300):
        cap = int(rng.integers(1, 200))
        pool = BIG + np.sort(rng.choice(4 * cap + 8, size=min(cap, 4 * cap + 8), replace=False))
        n = int(rng.integers(1, len(pool) + 1))
        keys = pool[:n]
        k = int(rng.integers(0, max(1, n // (8 if trial % 3 else 20)) + 1))  # touched: moved to the end
        moved = rng.choice(n, size=min(k, n), replace=False)
        order = np.concatenate([np.delete(keys, moved), rng.permutation(keys[moved])])
        c = LruCache(cap)
        c.insert(int(BIG - 1))  # replaced by set_order
        c.set_order(order)
        paths["order" if c._corder is not None else "dict"] += bool(c._d) or c._corder is not None
        r = RefLru(cap)
        for key in order.tolist():
            r.insert(key)
        assert order_of(c) == list(r.d) == order.tolist()
        assert np.array_equal(c.order(), order)
        for _ in range(40):
            key = int(BIG + rng.integers(0, 4 * cap + 8))
            if rng.random() < 0.5:
                assert c.lookup(key) == r.lookup(key)
            else:
                c.insert(key)
                r.insert(key)
            assert order_of(c) == list(r.d)
    assert paths["dict"] > 20 and paths["order"] > 20, paths

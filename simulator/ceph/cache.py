"""BlueStore's in-memory caches of one OSD, keyed by integers (block key = object key x blocks per
object + block index; all buffers have the same size, the read unit).

* :class:`TwoQCache` — Nautilus' ``TwoQCache`` for data buffers (bluestore_cache_type = 2q): new
  buffers enter *warm_in* (FIFO, a hit there does not promote — "somewhat counter-intuitively" as
  the source says); buffers trimmed from warm_in leave a ghost key in *warm_out*; a buffer re-read
  while its ghost is in warm_out enters *hot* (LRU). Limits: kin = size x kin_ratio for warm_in
  (slack borrowed from/lent to hot as in ``_trim``), hot gets the rest, warm_out holds at most
  size x kout_ratio / buffer size ghosts.
* :class:`LruCache` — plain LRU (bluestore_cache_type = lru), also used for onodes.

The lists are OrderedDicts: the oldest entry leaves with ``popitem(last=False)`` and a hit moves to
the young end with ``move_to_end``, both O(1). (A plain dict's ``next(iter(d))`` after many deletions
from its front scans the deleted slots until the next resize: quadratic for large caches.)
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import OrderedDict

import numpy as np

__all__ = ["LruCache", "TwoQCache", "make_cache"]


class LruCache:
    """LRU over integer keys. Entries touched since the last bulk :meth:`load` live in an
    OrderedDict (``_d``, oldest first); a bulk-loaded set that has not been touched since (a
    pre-filled onode cache: every object of the OSD) is kept compactly as the *cold* segment: a
    sorted array of keys (``uint32`` offsets from ``_cbase`` when they fit, else ``int64``), one
    byte per key saying whether it is still cached, and the LRU order (``None`` when it is the
    sorted order, as after a pre-fill in object order). Every cold entry is older than every
    entry of ``_d``; a hit moves a cold key to the young end of ``_d``; eviction takes the oldest
    cold key first. The behaviour is exactly that of one OrderedDict LRU (about 5 instead of
    ~120 bytes per cold entry)."""

    __slots__ = ("_calive", "_cbase", "_ck", "_cmax", "_cn", "_corder", "_cpos", "_d", "capacity", "hits", "misses")

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self._d: OrderedDict[int, None] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self._cold_reset()

    def _cold_reset(self) -> None:
        self._cn = 0  # live cold entries
        self._ck: array = array("I")
        self._cbase = 0
        self._cmax = -1
        self._calive = bytearray()
        self._corder: array | None = None
        self._cpos = 0  # next candidate for eviction in LRU order

    def _cold(self, key: int) -> int:
        """Index of ``key`` in the cold arrays if it is a live cold entry, else -1."""
        ck = self._ck
        k = key - self._cbase
        if k < 0 or k > self._cmax:
            return -1
        i = bisect_left(ck, k)
        if i < len(ck) and ck[i] == k and self._calive[i]:
            return i
        return -1

    def _cold_take(self, i: int) -> None:
        self._calive[i] = 0
        self._cn -= 1
        if self._cn == 0:
            self._cold_reset()

    def _evict(self) -> None:
        if self._cn:
            alive = self._calive
            order = self._corder
            p = self._cpos
            while True:
                i = p if order is None else order[p]
                p += 1
                if alive[i]:
                    break
            self._cpos = p
            self._cold_take(i)
        else:
            self._d.popitem(last=False)

    def __len__(self) -> int:
        return len(self._d) + self._cn

    def __contains__(self, key: int) -> bool:
        return key in self._d or (self._cn > 0 and self._cold(key) >= 0)

    def lookup(self, key: int) -> bool:
        """True (and refresh) if cached."""
        d = self._d
        if key in d:
            d.move_to_end(key)
            self.hits += 1
            return True
        if self._cn:
            i = self._cold(key)
            if i >= 0:
                self._cold_take(i)
                d[key] = None
                self.hits += 1
                return True
        self.misses += 1
        return False

    def contains_all(self, keys: range) -> bool:
        d = self._d
        if self._cn:
            return all(k in d or self._cold(k) >= 0 for k in keys)
        return all(k in d for k in keys)

    def touch_all(self, keys: range) -> None:
        d = self._d
        mv = d.move_to_end
        for k in keys:
            if k in d:
                mv(k)
            elif self._cn:
                i = self._cold(k)
                if i >= 0:
                    self._cold_take(i)
                    d[k] = None

    def insert(self, key: int) -> None:
        if self.capacity <= 0:
            return
        d = self._d
        if key in d:
            d.move_to_end(key)
            return
        if self._cn:
            i = self._cold(key)
            if i >= 0:
                self._cold_take(i)
                d[key] = None
                return
        d[key] = None
        if len(d) + self._cn > self.capacity:
            self._evict()

    def load(self, keys: np.ndarray) -> None:
        """Insert ``keys`` in order (oldest first): the same result as ``for k in keys:
        insert(k)``, stored compactly when the cache holds no recently touched entries and the
        keys are distinct and new."""
        keys = np.asarray(keys, dtype=np.int64)
        if self.capacity <= 0 or keys.size == 0:
            return
        if self._d:
            for k in keys.tolist():
                self.insert(k)
            return
        if self._cn:
            n0 = len(self._ck)
            idx = np.arange(n0) if self._corder is None else np.frombuffer(self._corder, dtype=np.int32)
            idx = idx[self._cpos:]
            idx = idx[np.frombuffer(self._calive, dtype=np.uint8)[idx] != 0]
            ckd = np.uint32 if self._ck.typecode == "I" else np.int64
            old = np.frombuffer(self._ck, dtype=ckd)[idx].astype(np.int64) + self._cbase
            allk = np.concatenate([old, keys])
        else:
            allk = keys
        if not self._cn and (keys.size == 1 or bool(np.all(keys[1:] > keys[:-1]))):
            # an empty cache and strictly increasing keys (a pre-fill in object order)
            sk = keys[max(0, keys.size - self.capacity) :]
            self._set_cold(sk, None)
            return
        order = np.argsort(allk, kind="stable")
        sk = allk[order]
        if sk.size > 1 and not np.all(sk[1:] != sk[:-1]):
            for k in keys.tolist():  # repeated keys: the general path
                self.insert(k)
            return
        if allk.size > self.capacity:
            allk = allk[allk.size - self.capacity :]
            order = np.argsort(allk, kind="stable")
            sk = allk[order]
        if np.all(order[1:] > order[:-1]):
            self._set_cold(sk, None)  # LRU order is the sorted order
        else:
            rank = np.empty(sk.size, dtype=np.int32)
            rank[order] = np.arange(sk.size, dtype=np.int32)
            self._set_cold(sk, array("i", rank.tobytes()))

    def _set_cold(self, sk: np.ndarray, corder: array | None) -> None:
        """The cold segment: sorted distinct keys ``sk``, all live, LRU order ``corder``."""
        n = int(sk.size)
        base = int(sk[0])
        span = int(sk[-1]) - base
        self._cbase = base
        self._cmax = span
        small = span <= 0xFFFFFFFF
        self._ck = array("I" if small else "q", (sk - base).astype(np.uint32 if small else np.int64).tobytes())
        self._calive = bytearray(b"\x01") * n
        self._corder = corder
        self._cpos = 0
        self._cn = n

    def discard(self, key: int) -> None:
        if self._d.pop(key, 1) is None:
            return
        if self._cn:
            i = self._cold(key)
            if i >= 0:
                self._cold_take(i)

    def clear(self) -> None:
        self._d.clear()
        self._cold_reset()


class TwoQCache:
    __slots__ = ("_hot", "_in", "_out", "capacity", "hits", "kin", "kout", "misses")

    def __init__(self, capacity: int, kin_ratio: float = 0.5, kout_ratio: float = 0.5):
        self.capacity = int(capacity)  # buffers
        self.kin = int(capacity * kin_ratio)
        self.kout = int(capacity * kout_ratio)
        self._in: OrderedDict[int, None] = OrderedDict()
        self._out: OrderedDict[int, None] = OrderedDict()
        self._hot: OrderedDict[int, None] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._in) + len(self._hot)

    def __contains__(self, key: int) -> bool:
        return key in self._in or key in self._hot

    def contains_all(self, keys: range) -> bool:
        i, h = self._in, self._hot
        return all(k in i or k in h for k in keys)

    def touch_all(self, keys: range) -> None:
        h = self._hot
        for k in keys:
            if k in h:
                h.move_to_end(k)

    def insert(self, key: int) -> None:
        if self.capacity <= 0:
            return
        if key in self._in:
            return
        h = self._hot
        if key in h:
            h.move_to_end(key)
            return
        if key in self._out:
            del self._out[key]
            h[key] = None
        else:
            self._in[key] = None
        self._trim()

    def discard(self, key: int) -> None:
        """Drop a buffer (and its ghost): its data was overwritten."""
        if self._in.pop(key, 1) is None:
            return
        if self._hot.pop(key, 1) is None:
            return
        self._out.pop(key, None)

    def _trim(self) -> None:
        cap = self.capacity
        w_in, hot, out = self._in, self._hot, self._out
        if len(w_in) + len(hot) <= cap:
            return
        kin = self.kin
        khot = cap - kin
        if len(hot) < khot:
            kin += khot - len(hot)
        elif len(w_in) < kin:
            khot += kin - len(w_in)
        while len(w_in) > kin:
            out[w_in.popitem(last=False)[0]] = None
        while len(hot) > khot:
            hot.popitem(last=False)
        while len(out) > self.kout:
            out.popitem(last=False)

    def clear(self) -> None:
        self._in.clear()
        self._out.clear()
        self._hot.clear()


def make_cache(policy: str, capacity: int, kin_ratio: float, kout_ratio: float) -> LruCache | TwoQCache:
    if policy == "2q":
        return TwoQCache(capacity, kin_ratio, kout_ratio)
    return LruCache(capacity)

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

from collections import OrderedDict

__all__ = ["LruCache", "TwoQCache", "make_cache"]


class LruCache:
    __slots__ = ("_d", "capacity", "hits", "misses")

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self._d: OrderedDict[int, None] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, key: int) -> bool:
        return key in self._d

    def lookup(self, key: int) -> bool:
        """True (and refresh) if cached."""
        d = self._d
        if key in d:
            d.move_to_end(key)
            self.hits += 1
            return True
        self.misses += 1
        return False

    def contains_all(self, keys: range) -> bool:
        d = self._d
        return all(k in d for k in keys)

    def touch_all(self, keys: range) -> None:
        mv = self._d.move_to_end
        for k in keys:
            mv(k)

    def insert(self, key: int) -> None:
        if self.capacity <= 0:
            return
        d = self._d
        if key in d:
            d.move_to_end(key)
            return
        d[key] = None
        if len(d) > self.capacity:
            d.popitem(last=False)

    def discard(self, key: int) -> None:
        self._d.pop(key, None)

    def clear(self) -> None:
        self._d.clear()


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

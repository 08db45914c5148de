"""The in-memory caches of one OSD's object store.

* Data (buffer / page cache), in units of the read unit, on *runs* of units per object as BlueStore
  keeps its buffers (a 4 MiB IO is a few run operations, not 1,024 lookups):
  :class:`TwoQExtentCache` — Nautilus' ``TwoQCache`` (bluestore_cache_type = 2q): new units enter
  *warm_in* (FIFO, a hit there does not promote — "somewhat counter-intuitively" as the source
  says); units trimmed from warm_in leave ghosts in *warm_out*; units re-read while their ghosts are
  in warm_out enter *hot* (LRU). :class:`LruExtentCache` — plain LRU (bluestore_cache_type = lru).
* Metadata (onodes, inodes), one integer key per object: :class:`LruCache`, an LRU whose bulk
  pre-filled part is compact.

The onode lists are OrderedDicts: the oldest entry leaves with ``popitem(last=False)`` and a hit
moves to the young end with ``move_to_end``, both O(1). (A plain dict's ``next(iter(d))`` after many
deletions from its front scans the deleted slots until the next resize: quadratic for large caches.)
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import OrderedDict

import numpy as np

__all__ = ["LruCache", "LruDataCache", "LruExtentCache", "TwoQCache", "TwoQExtentCache", "make_cache", "twoq_limits"]



def twoq_limits(cap: int, kin: int, n_in: int, n_hot: int) -> tuple[int, int]:
    """2Q's trim targets (units) for warm_in and hot when ``n_in + n_hot`` exceed ``cap``: warm_in
    keeps ``kin`` and hot the rest, and a list below its share lends the difference to the other
    (Nautilus TwoQCache::_trim). Plain arithmetic, also compiled by the Ceph core (core.ceph_dcache)."""
    khot = cap - kin
    if n_hot < khot:
        kin += khot - n_hot
    elif n_in < kin:
        khot += kin - n_in
    return kin, khot

#: the recently touched keys an LruCache keeps in its OrderedDict are at most 1/HOT_SHARE of it (set_order,
#: replay); beyond that the whole order is stored compactly
HOT_SHARE = 32


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

    def order(self) -> np.ndarray:
        """The cached keys, oldest first (the LRU order), as int64: what the compiled core's onode
        cache is built from (simulator.core.ceph_onode)."""
        parts = []
        if self._cn:
            n0 = len(self._ck)
            idx = np.arange(n0) if self._corder is None else np.frombuffer(self._corder, dtype=np.int32)
            idx = idx[self._cpos :]
            idx = idx[np.frombuffer(self._calive, dtype=np.uint8)[idx] != 0]
            ckd = np.uint32 if self._ck.typecode == "I" else np.int64
            parts.append(np.frombuffer(self._ck, dtype=ckd)[idx].astype(np.int64) + self._cbase)
        if self._d:
            parts.append(np.fromiter(self._d, dtype=np.int64, count=len(self._d)))
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def set_order(self, keys: np.ndarray) -> None:
        """Hold exactly ``keys`` (distinct, oldest first), compactly: the reverse of :meth:`order`. When
        what follows the keys' longest ascending head (a run's touches after the pre-filled keys) is at
        most 1/32 of them, the head goes cold in its sorted order and the rest into the OrderedDict,
        younger than every cold key as the LRU holds them: ~100 bytes for each of those few keys
        instead of the cold segment's LRU order, 4 bytes for every key (:meth:`load`)."""
        self.clear()
        keys = np.asarray(keys, dtype=np.int64)
        n = keys.size
        if 0 < n <= self.capacity:
            up = keys[1:] > keys[:-1]
            h = n if up.all() else int(np.argmin(up)) + 1
            head, tail = keys[:h], keys[h:].tolist()
            if HOT_SHARE * len(tail) <= n and len(set(tail)) == len(tail):
                at = np.minimum(np.searchsorted(head, tail), h - 1)
                if not (head[at] == np.array(tail, np.int64)).any():  # no key twice
                    self._set_cold(head, None)
                    self._d.update(dict.fromkeys(tail))
                    return
        self.load(keys)

    def replay(self, keys: np.ndarray) -> None:
        """``insert`` each of ``keys`` in turn (distinct, oldest first): the LRU a run leaves when the keys
        it moved to the young end or added are among ``keys`` and ``keys`` is the run's youngest
        (the compiled core's write-back, core.ceph_onode_build; the rest kept its order, the oldest
        left). When the recently touched entries (the OrderedDict) then exceed 1/32 of the cache, the
        whole order is stored compactly again (:meth:`set_order`), so repeated replays keep the
        memory of one."""
        ins = self.insert
        for k in np.asarray(keys, dtype=np.int64).tolist():
            ins(k)
        if HOT_SHARE * len(self._d) > len(self):
            self.set_order(self.order())

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


class _Ext:
    """A run of consecutive cached units ``[a, b)`` of object ``key``, a node of one LRU list
    (``lst``; oldest unit first inside the run)."""

    __slots__ = ("a", "b", "key", "lst", "next", "prev")

    def __init__(self, key: int, a: int, b: int):
        self.key = key
        self.a = a
        self.b = b
        self.lst: _List | None = None
        self.prev: _Ext | None = None
        self.next: _Ext | None = None


class _List:
    """A doubly linked list of runs, oldest first, and the number of units it holds."""

    __slots__ = ("head", "tail", "units")

    def __init__(self) -> None:
        self.head: _Ext | None = None
        self.tail: _Ext | None = None
        self.units = 0

    def append(self, n: _Ext) -> None:
        n.lst = self
        n.next = None
        n.prev = t = self.tail
        if t is None:
            self.head = n
        else:
            t.next = n
        self.tail = n
        self.units += n.b - n.a

    def insert_after(self, ref: _Ext, n: _Ext) -> None:
        n.lst = self
        n.prev = ref
        n.next = nx = ref.next
        ref.next = n
        if nx is None:
            self.tail = n
        else:
            nx.prev = n
        self.units += n.b - n.a

    def insert_before(self, ref: _Ext, n: _Ext) -> None:
        n.lst = self
        n.next = ref
        n.prev = pv = ref.prev
        ref.prev = n
        if pv is None:
            self.head = n
        else:
            pv.next = n
        self.units += n.b - n.a

    def remove(self, n: _Ext) -> None:
        pv, nx = n.prev, n.next
        if pv is None:
            self.head = nx
        else:
            pv.next = nx
        if nx is None:
            self.tail = pv
        else:
            nx.prev = pv
        n.prev = n.next = n.lst = None
        self.units -= n.b - n.a

    def clear(self) -> None:
        self.head = self.tail = None
        self.units = 0


class _ExtentCache:
    """Cached units of objects as runs (extents), as BlueStore keeps its data buffers: a read, a
    write or a trim of ``n`` units costs a few run operations, not ``n`` lookups. Every run is in
    one LRU list; ``_idx`` maps an object key to its runs sorted by start (``starts`` and ``runs``,
    non-overlapping). A range operation first cuts the runs at its ends; a cut run's tail stays
    next to it in its list (the units keep their LRU order, oldest first within a run, as if they
    had been inserted one by one in increasing order).

    The per-key methods (``insert``, ``discard``, ``contains_all``, ``touch_all``, ``in``) take the
    keys of :mod:`simulator.ceph.store` (``objkey << BLOCK_BITS`` + unit) and map to ranges of one
    unit; :class:`simulator.ceph.store.ObjectStore` uses the range methods."""

    _BITS = 17  # simulator.ceph.store.BLOCK_BITS (not imported: store imports nothing from here)
    _MASK = (1 << 17) - 1

    def __init__(self, capacity: int) -> None:
        self.capacity = int(capacity)  # units
        self.hits = 0
        self.misses = 0
        self._idx: dict[int, tuple[list[int], list[_Ext]]] = {}
        # the packed form (set by :meth:`pack`): per list, (objects, units) arrays oldest first; the lists'
        # unit counts are kept, their runs and the index are built on first use (:meth:`_unpack`)
        self._packed: list[tuple[np.ndarray, np.ndarray]] | None = None

    # ---------------------------------------------------------------- the packed form
    def lists(self) -> list[_List]:
        """The LRU lists, in the compiled core's order (2Q: warm_in, warm_out, hot; LRU: its one list)."""
        raise NotImplementedError

    def pack(self, parts: list[tuple[np.ndarray, np.ndarray]]) -> None:
        """Replace the contents by ``parts``: per list of :meth:`lists`, the objects and units it holds,
        oldest first (as the compiled Ceph core hands its caches back after a run). Nothing is built until
        a method needs the runs: a sweep of compiled runs passes the arrays from one run to the next without
        a Python object per cached run."""
        lists = self.lists()
        if len(parts) != len(lists):
            raise ValueError(f"{len(parts)} unit arrays for {len(lists)} lists")
        self.clear()
        for pl, (k, u) in zip(lists, parts, strict=True):
            if k.shape != u.shape:
                raise ValueError("objects and units differ in length")
            pl.units = int(k.size)
        self._packed = [(np.asarray(k, np.int64), np.asarray(u, np.int64)) for k, u in parts]

    def unit_arrays(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per list of :meth:`lists`: (objects, units) of the cached units, oldest first (the units of a
        run in increasing order)."""
        if self._packed is not None:
            return list(self._packed)
        return [_units_of(pl) for pl in self.lists()]

    def _unpack(self) -> None:
        """Build the runs and the per-object index from the packed arrays: each list gets its units as
        runs of consecutive units of one object, the index per object sorted by start."""
        parts, self._packed = self._packed, None
        lists = self.lists()
        for pl in lists:
            pl.units = 0
        keys, starts, exts = [], [], []
        for pl, (k, u) in zip(lists, parts or [], strict=True):
            n = k.size
            if not n:
                continue
            cut = np.nonzero((k[1:] != k[:-1]) | (u[1:] != u[:-1] + 1))[0] + 1
            s0 = np.concatenate(([0], cut))
            rk = k[s0]
            ra = u[s0]
            rb = ra + (np.concatenate((cut, [n])) - s0)
            runs = list(map(_Ext, rk.tolist(), ra.tolist(), rb.tolist()))
            prev = None
            for r in runs:
                r.lst = pl
                r.prev = prev
                if prev is not None:
                    prev.next = r
                prev = r
            pl.head, pl.tail, pl.units = runs[0], runs[-1], int(n)
            keys.append(rk)
            starts.append(ra)
            exts.extend(runs)
        if not exts:
            return
        rk = np.concatenate(keys)
        ra = np.concatenate(starts)
        order = np.lexsort((ra, rk))
        rk, ra = rk[order], ra[order]
        bounds = np.concatenate(([0], np.nonzero(rk[1:] != rk[:-1])[0] + 1, [rk.size])).tolist()
        ol = order.tolist()
        ral = ra.tolist()
        idx = self._idx
        for i in range(len(bounds) - 1):
            a, b = bounds[i], bounds[i + 1]
            idx[int(rk[a])] = (ral[a:b], [exts[x] for x in ol[a:b]])

    # ---------------------------------------------------------------- the per-object index
    def _cut(self, key: int, x: int) -> None:
        """Make ``x`` a run boundary of object ``key`` (split the run that strictly contains it)."""
        e = self._idx.get(key)
        if e is None:
            return
        starts, runs = e
        i = bisect_left(starts, x + 1) - 1  # last run starting at or before x
        if i < 0:
            return
        r = runs[i]
        if r.a < x < r.b:
            t = _Ext(key, x, r.b)
            lst = r.lst
            lst.units -= r.b - x  # insert_after adds the tail's units back
            r.b = x
            lst.insert_after(r, t)
            starts.insert(i + 1, x)
            runs.insert(i + 1, t)

    def _span(self, key: int, a: int, b: int) -> tuple[int, int]:
        """Indexes [i, j) of the runs of ``key`` inside [a, b) (after cutting at a and b)."""
        self._cut(key, a)
        self._cut(key, b)
        e = self._idx.get(key)
        if e is None:
            return 0, 0
        starts = e[0]
        return bisect_left(starts, a), bisect_left(starts, b)

    def _drop(self, r: _Ext) -> None:
        """Remove run ``r`` from its list and from the index."""
        r.lst.remove(r)
        e = self._idx[r.key]
        starts, runs = e
        i = bisect_left(starts, r.a)
        del starts[i]
        del runs[i]
        if not starts:
            del self._idx[r.key]

    def _add(self, key: int, a: int, b: int, lst: _List) -> _Ext:
        """A new run [a, b) of ``key`` (no run overlaps it) at the young end of ``lst``."""
        r = _Ext(key, a, b)
        lst.append(r)
        e = self._idx.get(key)
        if e is None:
            self._idx[key] = ([a], [r])
        else:
            i = bisect_left(e[0], a)
            e[0].insert(i, a)
            e[1].insert(i, r)
        return r

    def _trim_front(self, lst: _List, n: int, to: _List | None) -> None:
        """Take the ``n`` oldest units off ``lst``; to the young end of ``to`` (ghosts) or gone."""
        while n > 0:
            r = lst.head
            k = r.b - r.a
            if k <= n:
                n -= k
                if to is None:
                    self._drop(r)
                else:
                    lst.remove(r)
                    to.append(r)
            else:  # the oldest units of the run
                x = r.a + n
                if to is None:
                    e = self._idx[r.key]
                    e[0][bisect_left(e[0], r.a)] = x
                    r.a = x
                    lst.units -= n
                else:
                    self._cut(r.key, x)  # r becomes [a, x): the whole run goes
                    lst.remove(r)
                    to.append(r)
                n = 0

    def _live(self, r: _Ext) -> bool:
        raise NotImplementedError

    def contains_range(self, key: int, a: int, b: int) -> bool:
        """True if every unit of [a, b) of object ``key`` is cached (ghosts do not count)."""
        if self._packed is not None:
            self._unpack()
        e = self._idx.get(key)
        if e is None:
            return False
        starts, runs = e
        i = bisect_left(starts, a + 1) - 1
        if i < 0:
            return False
        cur = a
        n = len(runs)
        live = self._live
        while i < n:
            r = runs[i]
            i += 1
            if r.b <= cur:  # the run before a
                continue
            if r.a > cur or not live(r):
                return False
            cur = r.b
            if cur >= b:
                return True
        return False

    def missing(self, key: int, a: int, b: int) -> list[tuple[int, int]]:
        """The sub-ranges of [a, b) of object ``key`` that are not cached."""
        if self._packed is not None:
            self._unpack()
        e = self._idx.get(key)
        if e is None:
            return [(a, b)]
        starts, runs = e
        i = max(0, bisect_left(starts, a + 1) - 1)
        out = []
        cur = a
        live = self._live
        for j in range(i, len(runs)):
            r = runs[j]
            if r.a >= b:
                break
            if r.b <= cur or not live(r):
                continue
            if r.a > cur:
                out.append((cur, r.a))
            cur = r.b
            if cur >= b:
                break
        if cur < b:
            out.append((cur, b))
        return out

    # ---------------------------------------------------------------- per-key compatibility
    def __contains__(self, key: int) -> bool:
        k = key & self._MASK
        return self.contains_range(key >> self._BITS, k, k + 1)

    def contains_all(self, keys: range) -> bool:
        if not len(keys):
            return True
        k = keys[0] & self._MASK
        return self.contains_range(keys[0] >> self._BITS, k, k + len(keys))

    def touch_all(self, keys: range) -> None:
        if len(keys):
            k = keys[0] & self._MASK
            self.touch_range(keys[0] >> self._BITS, k, k + len(keys))

    def insert(self, key: int) -> None:
        k = key & self._MASK
        self.insert_range(key >> self._BITS, k, k + 1)

    def discard(self, key: int) -> None:
        k = key & self._MASK
        self.discard_range(key >> self._BITS, k, k + 1)

    def touch_range(self, key: int, a: int, b: int) -> None:
        raise NotImplementedError

    def insert_range(self, key: int, a: int, b: int) -> None:
        raise NotImplementedError

    def discard_range(self, key: int, a: int, b: int) -> None:
        """Drop units [a, b) of object ``key`` (and their ghosts): the data was overwritten."""
        if self._packed is not None:
            self._unpack()
        e = self._idx.get(key)
        if e is None:
            return
        i, j = self._span(key, a, b)
        if i < j:
            for r in e[1][i:j]:
                r.lst.remove(r)
            del e[0][i:j]
            del e[1][i:j]
            if not e[0]:
                del self._idx[key]

    def runs(self) -> int:
        """Number of runs (memory: one small object each)."""
        if self._packed is not None:
            self._unpack()
        return sum(len(e[0]) for e in self._idx.values())


class LruExtentCache(_ExtentCache):
    """Plain LRU on runs of units (bluestore_cache_type = lru)."""

    def __init__(self, capacity: int):
        super().__init__(capacity)
        self._l = _List()

    def __len__(self) -> int:
        return self._l.units

    def _live(self, r: _Ext) -> bool:
        return True

    def touch_range(self, key: int, a: int, b: int) -> None:
        if self._packed is not None:
            self._unpack()
        e = self._idx.get(key)
        if e is None:
            return
        i, j = self._span(key, a, b)
        lst = self._l
        for r in e[1][i:j]:
            lst.remove(r)
            lst.append(r)

    def insert_range(self, key: int, a: int, b: int) -> None:
        if self.capacity <= 0 or b <= a:
            return
        if self._packed is not None:
            self._unpack()
        lst = self._l
        e = self._idx.get(key)
        if e is None:
            self._add(key, a, b, lst)
        else:
            i, j = self._span(key, a, b)
            have = e[1][i:j]
            cur = a
            for r in have:
                if r.a > cur:
                    self._add(key, cur, r.a, lst)
                lst.remove(r)
                lst.append(r)
                cur = r.b
            if cur < b:
                self._add(key, cur, b, lst)
        over = lst.units - self.capacity
        if over > 0:
            self._trim_front(lst, over, None)

    def _evict(self) -> None:
        """Drop the oldest unit."""
        if self._packed is not None:
            self._unpack()
        if self._l.units:
            self._trim_front(self._l, 1, None)

    def clear(self) -> None:
        self._l.clear()
        self._idx.clear()
        self._packed = None

    def lists(self) -> list[_List]:
        return [self._l]


class TwoQExtentCache(_ExtentCache):
    """Nautilus' ``TwoQCache`` for data buffers (bluestore_cache_type = 2q) on runs of units: new
    units enter *warm_in* (FIFO, a hit there does not promote — "somewhat counter-intuitively" as
    the source says); units trimmed from warm_in leave ghosts in *warm_out*; units re-read while
    their ghosts are in warm_out enter *hot* (LRU). Limits: kin = size x kin_ratio units for
    warm_in (slack borrowed from/lent to hot as in ``_trim``), hot gets the rest, warm_out holds at
    most size x kout_ratio ghost units. A range insert trims once, after the whole range (per unit
    the trims are interleaved; the kept units are the same unless one range overflows a list)."""

    def __init__(self, capacity: int, kin_ratio: float = 0.5, kout_ratio: float = 0.5):
        super().__init__(capacity)
        self.kin = int(capacity * kin_ratio)
        self.kout = int(capacity * kout_ratio)
        self._in = _List()
        self._out = _List()
        self._hot = _List()

    def __len__(self) -> int:
        return self._in.units + self._hot.units

    def _live(self, r: _Ext) -> bool:
        return r.lst is not self._out

    def touch_range(self, key: int, a: int, b: int) -> None:
        if self._packed is not None:
            self._unpack()
        e = self._idx.get(key)
        if e is None:
            return
        i, j = self._span(key, a, b)
        h = self._hot
        for r in e[1][i:j]:
            if r.lst is h:
                h.remove(r)
                h.append(r)

    def insert_range(self, key: int, a: int, b: int) -> None:
        if self.capacity <= 0 or b <= a:
            return
        if self._packed is not None:
            self._unpack()
        w_in = self._in
        e = self._idx.get(key)
        if e is None:
            self._add(key, a, b, w_in)
        else:
            h = self._hot
            i, j = self._span(key, a, b)
            have = e[1][i:j]
            cur = a
            for r in have:
                if r.a > cur:
                    self._add(key, cur, r.a, w_in)
                lst = r.lst
                if lst is not w_in:  # hot: refresh; a ghost: back as hot
                    lst.remove(r)
                    h.append(r)
                cur = r.b
            if cur < b:
                self._add(key, cur, b, w_in)
        self._trim()

    def _trim(self) -> None:
        if self._packed is not None:  # autotune.resize_cache trims after a capacity change
            self._unpack()
        cap = self.capacity
        w_in, hot, out = self._in, self._hot, self._out
        n_in, n_hot = w_in.units, hot.units
        if n_in + n_hot <= cap:
            return
        kin, khot = twoq_limits(cap, self.kin, n_in, n_hot)
        if n_in > kin:
            self._trim_front(w_in, n_in - kin, out)
        if n_hot > khot:
            self._trim_front(hot, n_hot - khot, None)
        if out.units > self.kout:
            self._trim_front(out, out.units - self.kout, None)

    def clear(self) -> None:
        self._in.clear()
        self._out.clear()
        self._hot.clear()
        self._idx.clear()
        self._packed = None

    def lists(self) -> list[_List]:
        return [self._in, self._out, self._hot]


def _units_of(lst: _List) -> tuple[np.ndarray, np.ndarray]:
    """(objects, units) of a list, oldest first (units of a run in increasing order)."""
    ks, a_s, b_s = [], [], []
    r = lst.head
    while r is not None:
        ks.append(r.key)
        a_s.append(r.a)
        b_s.append(r.b)
        r = r.next
    k = np.asarray(ks, np.int64)
    a = np.asarray(a_s, np.int64)
    n = np.asarray(b_s, np.int64) - a
    tot = int(n.sum())
    start = np.repeat(np.cumsum(n) - n, n)
    return np.repeat(k, n), np.repeat(a, n) + (np.arange(tot, dtype=np.int64) - start)


#: the data caches by their Ceph names
TwoQCache = TwoQExtentCache
LruDataCache = LruExtentCache


def make_cache(policy: str, capacity: int, kin_ratio: float, kout_ratio: float) -> LruExtentCache | TwoQExtentCache:
    """The data cache (units of the read unit size) on runs of units."""
    if policy == "2q":
        return TwoQExtentCache(capacity, kin_ratio, kout_ratio)
    return LruExtentCache(capacity)

"""Placement: CRUSH (straw2 buckets, chooseleaf firstn with the jewel/optimal tunables), pools' PG
-> acting set tables, and an upmap-style balancer.

The map is the usual two-level tree ``root default -> host -> osd``. A rule with a device class
runs on the class's shadow tree (hosts restricted to OSDs of that class, weights summed as Ceph
does). ``crush_choose_firstn`` follows src/crush/mapper.c with choose_local_tries = 0,
choose_local_fallback_tries = 0, chooseleaf_descend_once = 1, chooseleaf_vary_r = 1,
chooseleaf_stable = 1. The straw2 draw is ``ln(u/65536) / weight`` with
``u = crush_hash32_3(x, item, r) & 0xffff``; Ceph evaluates the logarithm with a fixed-point table
(``crush_ln``), we use the floating-point logarithm, so rankings agree except at near-ties.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from simulator import nbcache
from simulator.ceph import hashing as _hashing
from simulator.ceph.hashing import nb_crush_hash32_2, nb_crush_hash32_3, pg_num_mask

nbcache.invalidate_stale(__file__, _hashing.__file__)  # the placement kernels inline the CRUSH hash

__all__ = ["NONE", "CrushMap", "CrushOsd", "balance_upmap", "group_stable", "map_pool"]


@dataclass
class CrushOsd:
    id: int
    weight: float
    device_class: str
    host: int  # index of the host bucket


@dataclass
class _Bucket:
    id: int  # negative
    items: list[int]  # item ids (osd >= 0, bucket < 0)
    weights: list[float]
    type: int  # 0 osd, 1 host, 10 root


@dataclass
class CrushMap:
    """root -> hosts -> osds. ``hosts[i]`` is the name of host bucket i."""

    hosts: list[str]
    osds: list[CrushOsd]
    choose_total_tries: int = 50
    _trees: dict[str | None, dict[int, _Bucket]] = field(default_factory=dict, repr=False)
    _flat: dict[str | None, tuple[np.ndarray, ...]] = field(default_factory=dict, repr=False)

    TYPE_OSD = 0
    TYPE_HOST = 1
    TYPE_ROOT = 10

    def classes(self) -> set[str]:
        return {o.device_class for o in self.osds}

    def tree(self, device_class: str | None) -> dict[int, _Bucket]:
        """Buckets of the (shadow) tree for ``device_class`` (None = all OSDs). Root id is -1."""
        if device_class in self._trees:
            return self._trees[device_class]
        nh = len(self.hosts)
        # shadow tree bucket ids are distinct per class, as Ceph allocates new ids for host~class
        cls_index = 0 if device_class is None else 1 + sorted(self.classes()).index(device_class)
        base = -(2 + cls_index * (nh + 1))
        buckets: dict[int, _Bucket] = {}
        root_items: list[int] = []
        root_weights: list[float] = []
        for h in range(nh):
            osds = [o for o in self.osds if o.host == h and (device_class is None or o.device_class == device_class)]
            if not osds:
                continue
            hid = base - h
            buckets[hid] = _Bucket(hid, [o.id for o in osds], [o.weight for o in osds], self.TYPE_HOST)
            root_items.append(hid)
            root_weights.append(sum(o.weight for o in osds))
        rid = -1 if cls_index == 0 else base + 1
        buckets[-1] = _Bucket(rid, root_items, root_weights, self.TYPE_ROOT)
        self._trees[device_class] = buckets
        return buckets

    def eligible(self, device_class: str | None, failure_domain: str) -> int:
        """Number of distinct failure domains (hosts or OSDs) a rule can choose from."""
        osds = [o for o in self.osds if device_class is None or o.device_class == device_class]
        if failure_domain == "host":
            return len({o.host for o in osds if o.weight > 0})
        return sum(1 for o in osds if o.weight > 0)

    def flat(self, device_class: str | None) -> tuple[np.ndarray, ...]:
        """The (shadow) tree as arrays for the compiled mapper: per bucket (index 0 = root) the
        start and length of its items in ``items``/``weights`` and its type; ``bidx[-id]`` is the
        index of bucket ``id``."""
        got = self._flat.get(device_class)
        if got is not None:
            return got
        buckets = self.tree(device_class)
        order = [-1] + [k for k in buckets if k != -1]
        items: list[int] = []
        weights: list[float] = []
        start = np.zeros(len(order), dtype=np.int64)
        length = np.zeros(len(order), dtype=np.int64)
        btype = np.zeros(len(order), dtype=np.int64)
        bidx = np.full(1 + max(-k for k in order), -1, dtype=np.int64)
        for i, k in enumerate(order):
            b = buckets[k]
            bidx[-k] = i
            start[i] = len(items)
            length[i] = len(b.items)
            btype[i] = b.type
            items.extend(b.items)
            weights.extend(b.weights)
        got = (np.asarray(items, dtype=np.int64), np.asarray(weights, dtype=np.float64), start, length, btype, bidx)
        self._flat[device_class] = got
        return got

    def do_rule(self, x: int, size: int, device_class: str | None, failure_domain: str) -> list[int]:
        """``step take default [class c]; step chooseleaf firstn <size> type <fd>; step emit``."""
        out = np.zeros(size, dtype=np.int64)
        type_ = self.TYPE_HOST if failure_domain == "host" else self.TYPE_OSD
        n = _do_rule(*self.flat(device_class), x, size, type_, self.choose_total_tries, out, np.zeros(0, dtype=np.bool_))
        return out[:n].tolist()


# ---------------------------------------------------------------------- the mapper, compiled
# crush_choose_firstn of src/crush/mapper.c with choose_local_tries = 0, choose_local_fallback_tries
# = 0, chooseleaf_descend_once = 1, chooseleaf_vary_r = 1, chooseleaf_stable = 1, on the arrays of
# CrushMap.flat. Bucket ids are negative; item ids >= 0 are OSDs (type 0).
@njit(cache=True)
def _straw2(items, weights, start, n, x, r):  # pragma: no cover - compiled
    """straw2: the item with the largest ln(u/65536)/weight, u = hash(x, item, r) & 0xffff."""
    best = items[start]
    found = False
    best_draw = -np.inf
    for j in range(start, start + n):
        w = weights[j]
        if w <= 0:
            continue
        item = items[j]
        u = nb_crush_hash32_3(x, item, r) & 0xFFFF
        draw = math.log((u + 1) / 65536.0) / w
        if not found or draw > best_draw:
            best_draw = draw
            best = item
            found = True
    return best


@njit(cache=True)
def _choose_leaf(items, weights, start, length, btype, bidx, b, x, r, out2, outpos, isout):  # pragma: no cover
    """The recursive chooseleaf step (numrep 1, tries 1, down to an OSD): the new out position."""
    in_b = b
    while True:
        if length[in_b] == 0:
            return outpos
        item = _straw2(items, weights, start[in_b], length[in_b], x, r)
        if item < 0:  # a bucket that is not of type osd: descend
            in_b = bidx[-item]
            continue
        break
    for k in range(outpos):
        if out2[k] == item:
            return outpos
    if item < isout.shape[0] and isout[item]:
        return outpos  # reweight 0 ("out"): rejected, the outer loop retries with another r
    out2[outpos] = item
    return outpos + 1


@njit(cache=True)
def _do_rule(items, weights, start, length, btype, bidx, x, numrep, type_, tries, out2, isout):  # pragma: no cover
    """chooseleaf firstn ``numrep`` type ``type_`` from the root: OSDs into ``out2``; their number."""
    out = np.zeros(numrep, dtype=np.int64)
    outpos = 0
    count = numrep
    rep = 0
    while rep < numrep and count > 0:
        ftotal = 0
        skip_rep = False
        item = 0
        while True:  # retry_descent
            in_b = 0
            retry_descent = False
            while True:  # retry_bucket
                r = rep + ftotal
                reject = False
                collide = False
                if length[in_b] == 0:
                    reject = True
                else:
                    item = _straw2(items, weights, start[in_b], length[in_b], x, r)
                    itemtype = 0 if item >= 0 else btype[bidx[-item]]
                    if itemtype != type_:
                        if item >= 0:
                            skip_rep = True
                            break
                        in_b = bidx[-item]
                        continue  # descend
                    for k in range(outpos):
                        if out[k] == item:
                            collide = True
                            break
                    if not collide:
                        if item < 0:
                            got = _choose_leaf(items, weights, start, length, btype, bidx, bidx[-item], x, r, out2, outpos, isout)
                            if got <= outpos:
                                reject = True
                        elif item < isout.shape[0] and isout[item]:
                            reject = True
                        else:
                            out2[outpos] = item
                if reject or collide:
                    ftotal += 1
                    if ftotal < tries:
                        retry_descent = True
                    else:
                        skip_rep = True
                break
            if not retry_descent:
                break
        if not skip_rep:
            out[outpos] = item
            outpos += 1
            count -= 1
        rep += 1
    return outpos


NONE = 0x7FFFFFFF  # CRUSH_ITEM_NONE: an indep slot that could not be filled
_UNDEF = 0x7FFFFFFE


@njit(cache=True)
def _indep_leaf(items, weights, start, length, btype, bidx, b, x, rep, numrep, tries, parent_r, isout):  # pragma: no cover
    """The nested single-slot crush_choose_indep down to an OSD below bucket ``b`` (chooseleaf): the OSD,
    or NONE after ``tries`` attempts (r = rep + parent_r + numrep x ftotal)."""
    for ftotal in range(tries):
        in_b = b
        while True:
            r = rep + parent_r + numrep * ftotal
            if length[in_b] == 0:
                break
            item = _straw2(items, weights, start[in_b], length[in_b], x, r)
            if item < 0:
                in_b = bidx[-item]
                continue
            if item < isout.shape[0] and isout[item]:
                break
            return item
    return NONE


@njit(cache=True)
def _indep(items, weights, start, length, btype, bidx, x, numrep, type_, tries, leaf_tries, acting, isout):  # pragma: no cover
    """crush_choose_indep from the root: fill the ``numrep`` slots positionally (a failed slot is retried
    with r + numrep x ftotal without moving the others); with a bucket failure domain the OSD under each
    chosen bucket (``_indep_leaf``) goes to ``acting``."""
    out = np.full(numrep, _UNDEF, dtype=np.int64)
    for rep in range(numrep):
        acting[rep] = _UNDEF
    left = numrep
    ftotal = 0
    while left > 0 and ftotal < tries:
        for rep in range(numrep):
            if out[rep] != _UNDEF:
                continue
            in_b = 0
            while True:
                r = rep + numrep * ftotal
                if length[in_b] == 0:
                    break
                item = _straw2(items, weights, start[in_b], length[in_b], x, r)
                itemtype = 0 if item >= 0 else btype[bidx[-item]]
                if itemtype != type_:
                    if item >= 0:
                        out[rep] = NONE
                        left -= 1
                        break
                    in_b = bidx[-item]
                    continue
                collide = False
                for i in range(numrep):
                    if out[i] == item:
                        collide = True
                        break
                if collide:
                    break
                if item < 0:
                    leaf = _indep_leaf(items, weights, start, length, btype, bidx, bidx[-item], x, rep, numrep,
                                       leaf_tries, r, isout)
                    if leaf == NONE:
                        break
                    acting[rep] = leaf
                else:
                    if item < isout.shape[0] and isout[item]:
                        break
                    acting[rep] = item
                out[rep] = item
                left -= 1
                break
        ftotal += 1
    for rep in range(numrep):
        if out[rep] == _UNDEF or out[rep] == NONE:
            acting[rep] = NONE


@njit(cache=True)
def _map_pool(items, weights, start, length, btype, bidx, pool_id, pg_num, mask, size, type_, tries, isout, indep,
              leaf_tries):  # pragma: no cover
    acting = np.full((pg_num, size), -1, dtype=np.int64)
    counts = np.zeros(pg_num, dtype=np.int64)
    for ps in range(pg_num):
        m = ps & mask
        if m >= pg_num:
            m = ps & (mask >> 1)  # ceph_stable_mod
        pps = nb_crush_hash32_2(m, pool_id)
        if indep:
            _indep(items, weights, start, length, btype, bidx, pps, size, type_, tries, leaf_tries, acting[ps], isout)
            counts[ps] = size
        else:
            counts[ps] = _do_rule(items, weights, start, length, btype, bidx, pps, size, type_, tries, acting[ps], isout)
    return acting, counts


def map_pool(
    crush: CrushMap, pool_id: int, pg_num: int, size: int, device_class: str | None, failure_domain: str,
    *, indep: bool = False, out: set[int] | None = None, tries: int | None = None, leaf_tries: int = 5,
) -> list[list[int]]:
    """Acting sets of every PG of a pool: pps = crush_hash32_2(stable_mod(ps, pgp_num), pool).

    ``indep``: ``chooseleaf indep`` (erasure-coded pools; positions are shard ids, an unfillable slot is
    ``NONE``), with ``tries`` (default: the map's choose_total_tries; Ceph's default EC rule sets 100) and
    ``leaf_tries`` (set_chooseleaf_tries 5). ``out``: OSD ids with reweight 0 (marked out)."""
    type_ = CrushMap.TYPE_HOST if failure_domain == "host" else CrushMap.TYPE_OSD
    isout = np.zeros(max((o.id for o in crush.osds), default=-1) + 1, dtype=np.bool_)
    for o in out or ():
        isout[o] = True
    acting, counts = _map_pool(
        *crush.flat(device_class), pool_id, pg_num, pg_num_mask(pg_num), size, type_,
        tries if tries is not None else crush.choose_total_tries, isout, indep, leaf_tries,
    )
    return [row[:n] for row, n in zip(acting.tolist(), counts.tolist(), strict=True)]


def balance_upmap(
    crush: CrushMap,
    acting: list[list[int]],
    device_class: str | None,
    failure_domain: str,
    max_deviation: int,
    max_iterations: int = 10000,
) -> list[tuple[int, int, int]]:
    """Even out PG replicas per OSD by replacing members of acting sets (like pg_upmap_items).

    Targets are proportional to CRUSH weight. Each move takes a PG replica from the most loaded
    OSD (relative to target) to the least loaded eligible one that keeps the failure domain rule.
    Modifies ``acting`` in place; returns the moves (ps, from_osd, to_osd). Deterministic.
    """
    osds = [o for o in crush.osds if (device_class is None or o.device_class == device_class) and o.weight > 0]
    if not osds:
        return []
    wsum = sum(o.weight for o in osds)
    total = sum(len(a) for a in acting)
    target = {o.id: total * o.weight / wsum for o in osds}
    host_of = {o.id: o.host for o in crush.osds}
    count = dict.fromkeys(target, 0)
    pgs_of: dict[int, list[int]] = {o: [] for o in target}
    for ps, a in enumerate(acting):
        for o in a:
            count[o] += 1
            pgs_of[o].append(ps)
    moves: list[tuple[int, int, int]] = []
    # the OSDs ordered by deviation from target, most over (over_keys) and most under (under_keys)
    # first, ties by id: kept sorted across moves (a move changes two OSDs' counts), which gives the
    # same orders as sorting every OSD again each iteration, in O(n) memmove instead of O(n log n)
    dev = {o: count[o] - target[o] for o in target}
    over_keys = sorted((-d, o) for o, d in dev.items())
    under_keys = sorted((d, o) for o, d in dev.items())
    for _ in range(max_iterations):
        if -over_keys[0][0] <= max_deviation and under_keys[0][0] >= -max_deviation:
            break
        move = None
        for _nd, over in over_keys:
            if dev[over] <= 0:
                break
            for ps in sorted(pgs_of[over]):
                a = acting[ps]
                for _d, under in under_keys:
                    if dev[under] >= 0 or count[over] - count[under] < 2:
                        break
                    if under in a:
                        continue
                    if failure_domain == "host":
                        others = {host_of[o] for o in a if o != over}
                        if host_of[under] in others:
                            continue
                    move = (ps, over, under)
                    break
                if move is not None:
                    break
            if move is not None:
                break
        if move is None:
            break
        ps, over, under = move
        a = acting[ps]
        a[a.index(over)] = under
        pgs_of[over].remove(ps)
        pgs_of[under].append(ps)
        moves.append(move)
        for o, step in ((over, -1), (under, 1)):
            d = dev[o]
            del over_keys[bisect_left(over_keys, (-d, o))]
            del under_keys[bisect_left(under_keys, (d, o))]
            count[o] += step
            d = dev[o] = count[o] - target[o]
            insort(over_keys, (-d, o))
            insort(under_keys, (d, o))
    return moves


@njit(cache=True)
def _group_stable(keys, nkeys, order):  # pragma: no cover - compiled
    counts = np.zeros(nkeys + 1, dtype=np.int64)
    for i in range(keys.shape[0]):
        counts[keys[i] + 1] += 1
    starts = np.empty(nkeys + 1, dtype=np.int64)
    s = 0
    for j in range(nkeys + 1):
        starts[j] = s
        s += counts[j]
    pos = starts.copy()
    for i in range(keys.shape[0]):
        j = keys[i] + 1
        order[pos[j]] = i
        pos[j] += 1
    return order, counts, starts


def group_stable(keys: np.ndarray, nkeys: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices of ``keys`` (integers in [-1, nkeys)) grouped by key, ascending, in index order within
    a key: ``np.argsort(keys, kind="stable")`` by one counting pass, O(n). Returns (order, counts,
    starts), counts and starts per key + 1 (index 0: the key -1, an unplaced replica). ``order`` is int32
    while the indices fit (half the memory of the pre-fill's largest transient array), else int64."""
    order = np.empty(keys.shape[0], dtype=np.int32 if keys.shape[0] < (1 << 31) else np.int64)
    return _group_stable(keys, nkeys, order)

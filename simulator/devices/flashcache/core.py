"""The cache directory of a flash read cache: numba kernels over plain arrays.

One implementation of the cache policy serves both the timed device (one kernel call per request)
and the functional warm-up (one call per batch of requests). State, all ``int64``:

* ``S[C, 6]`` -- cache entries (slots): region number, validity mask (one bit per 4 KiB block; a
  region holds at most 64 blocks), die, previous, next (doubly linked LRU lists, one per segment; the
  free list reuses ``next``), segment (1 probationary, 2 protected, 0 free);
* ``H[HC, 2]`` -- open-addressing hash table region -> slot (linear probing, backward-shift delete);
* ``G[GC, 4]`` / ``GH`` -- the ghost list (region, miss count, previous, next) and its hash table;
* ``M[64]`` -- list heads and counters (``M_*``) and the parameters (``P_*``).

Capacity is counted in regions (``P_MAX`` = size // region): a promoted region is allocated whole.
Python grows the arrays (:func:`grow`) when fewer than ``HEADROOM`` free slots remain, so a kernel
never runs out of slots.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# meta indices
M_PH, M_PT, M_RH, M_RT, M_NP, M_NR, M_USED, M_FREE = 0, 1, 2, 3, 4, 5, 6, 7
M_GH, M_GT, M_GN, M_GUSED, M_GFREE, M_LAST, M_RR = 8, 9, 10, 11, 12, 13, 14
M_EVICT, M_INVAL, M_PROMO, M_VALID, M_HITS = 15, 16, 17, 18, 19
P_REGION, P_RBLK, P_MAX, P_PROT, P_ADMIT, P_COUNT, P_SLRU, P_MAXADM, P_SEQ, P_GMAX, P_DIES = (
    32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42,
)
K, MSK, DIE, PRV, NXT, SEG = 0, 1, 2, 3, 4, 5
HEADROOM = 64
BLOCK = 4096
_READ, _WRITE, _TRIM = 0, 1, 2


def new_state(region: int, size: int, admit_after: int, count_mode: bool, slru: bool, protected_fraction: float,
              max_admit: int, skip_seq: bool, ghost_max: int, dies: int):
    """Empty state arrays (S, H, G, GH, M)."""
    m = np.full(64, -1, dtype=np.int64)
    m[M_NP] = m[M_NR] = m[M_USED] = m[M_GN] = m[M_GUSED] = 0
    m[M_EVICT] = m[M_INVAL] = m[M_PROMO] = m[M_VALID] = m[M_HITS] = m[M_RR] = 0
    m[M_LAST] = -1
    mx = max(1, size // region)
    m[P_REGION] = region
    m[P_RBLK] = region // BLOCK
    m[P_MAX] = mx
    m[P_PROT] = max(1, int(protected_fraction * mx))
    m[P_ADMIT] = admit_after
    m[P_COUNT] = 1 if count_mode else 0
    m[P_SLRU] = 1 if slru else 0
    m[P_MAXADM] = max_admit
    m[P_SEQ] = 1 if skip_seq else 0
    m[P_GMAX] = ghost_max
    m[P_DIES] = dies
    c = 1024
    return _slots(c, 6), _table(c), _slots(c, 4), _table(c), m


def _slots(c: int, w: int) -> np.ndarray:
    s = np.zeros((c, w), dtype=np.int64)
    s[:, 0] = -1
    return s


def _table(c: int) -> np.ndarray:
    n = 1
    while n < 2 * c:
        n *= 2
    return np.full((n, 2), -1, dtype=np.int64)


def grow(S: np.ndarray, H: np.ndarray, need: int, used: int) -> tuple[np.ndarray, np.ndarray]:
    """Slots and hash table with room for ``need`` more entries beyond ``used``."""
    c = S.shape[0]
    if used + need + HEADROOM <= c:
        return S, H
    nc = c
    while used + need + HEADROOM > nc:
        nc *= 2
    S2 = _slots(nc, S.shape[1])
    S2[:c] = S
    H2 = _table(nc)
    _rehash(H, H2)
    return S2, H2


@njit(cache=True)
def _rehash(H, H2):
    for i in range(H.shape[0]):
        if H[i, 0] >= 0:
            _h_put(H2, H[i, 0], H[i, 1])


@njit(cache=True)
def _hash(key, n):
    h = (key * 0x9E3779B1) ^ (key >> 15)
    return h & (n - 1)


@njit(cache=True)
def _h_find(H, key):
    n = H.shape[0]
    i = _hash(key, n)
    while H[i, 0] != -1:
        if H[i, 0] == key:
            return i
        i = (i + 1) & (n - 1)
    return -1


@njit(cache=True)
def _h_put(H, key, val):
    n = H.shape[0]
    i = _hash(key, n)
    while H[i, 0] != -1 and H[i, 0] != key:
        i = (i + 1) & (n - 1)
    H[i, 0] = key
    H[i, 1] = val


@njit(cache=True)
def _h_del(H, i):
    n = H.shape[0]
    H[i, 0] = -1
    j = i
    while True:
        j = (j + 1) & (n - 1)
        if H[j, 0] == -1:
            return
        k = _hash(H[j, 0], n)
        # move entry j back to the hole i if its home k is not cyclically in (i, j]
        if (j > i and (k <= i or k > j)) or (j < i and (k <= i and k > j)):
            H[i, 0] = H[j, 0]
            H[i, 1] = H[j, 1]
            H[j, 0] = -1
            i = j


@njit(cache=True)
def _popcount(x):
    c = 0
    while x != 0:
        x &= x - 1
        c += 1
    return c


@njit(cache=True)
def _full(M):
    nb = M[P_RBLK]
    if nb >= 64:
        return np.int64(-1)
    return (np.int64(1) << nb) - 1


@njit(cache=True)
def _bits(M, r, a, b, whole):
    base = r * M[P_REGION]
    if whole:
        lo = (a - base + BLOCK - 1) // BLOCK
        hi = (b - base) // BLOCK
    else:
        lo = (a - base) // BLOCK
        hi = (b - base + BLOCK - 1) // BLOCK
    n = hi - lo
    if n <= 0:
        return np.int64(0)
    if n >= 64:
        return np.int64(-1)
    return ((np.int64(1) << n) - 1) << lo


# ---------------------------------------------------------------- linked lists (cache entries)
@njit(cache=True)
def _unlink(S, M, s):
    seg = S[s, SEG]
    hi = M_PH if seg == 1 else M_RH
    p = S[s, PRV]
    q = S[s, NXT]
    if p >= 0:
        S[p, NXT] = q
    else:
        M[hi] = q
    if q >= 0:
        S[q, PRV] = p
    else:
        M[hi + 1] = p
    M[M_NP if seg == 1 else M_NR] -= 1
    S[s, SEG] = 0


@njit(cache=True)
def _push(S, M, s, seg):
    hi = M_PH if seg == 1 else M_RH
    t = M[hi + 1]
    S[s, PRV] = t
    S[s, NXT] = -1
    if t >= 0:
        S[t, NXT] = s
    else:
        M[hi] = s
    M[hi + 1] = s
    S[s, SEG] = seg
    M[M_NP if seg == 1 else M_NR] += 1


@njit(cache=True)
def _free_slot(S, H, M, s):
    hi = _h_find(H, S[s, K])
    if hi >= 0:
        _h_del(H, hi)
    M[M_VALID] -= _popcount(S[s, MSK]) * BLOCK
    S[s, K] = -1
    S[s, MSK] = 0
    S[s, NXT] = M[M_FREE]
    M[M_FREE] = s


@njit(cache=True)
def _alloc(S, M):
    s = M[M_FREE]
    if s >= 0:
        M[M_FREE] = S[s, NXT]
        return s
    s = M[M_USED]
    M[M_USED] = s + 1
    return s


@njit(cache=True)
def _touch(S, M, s):
    """A hit on slot ``s``: MRU of its segment (a probationary hit moves to the protected one)."""
    if S[s, SEG] == 1 and M[P_SLRU] == 1:
        _unlink(S, M, s)
        _push(S, M, s, 2)
        while M[M_NR] > M[P_PROT]:
            d = M[M_RH]
            _unlink(S, M, d)
            _push(S, M, d, 1)
    else:
        seg = S[s, SEG]
        _unlink(S, M, s)
        _push(S, M, s, seg)


@njit(cache=True)
def _evict(S, H, M):
    while M[M_NP] + M[M_NR] > M[P_MAX]:
        s = M[M_PH] if M[M_NP] > 0 else M[M_RH]
        _unlink(S, M, s)
        M[M_EVICT] += 1
        _free_slot(S, H, M, s)


# ---------------------------------------------------------------- ghost list
@njit(cache=True)
def _g_unlink(G, M, g):
    p = G[g, 2]
    q = G[g, 3]
    if p >= 0:
        G[p, 3] = q
    else:
        M[M_GH] = q
    if q >= 0:
        G[q, 2] = p
    else:
        M[M_GT] = p
    M[M_GN] -= 1


@njit(cache=True)
def _g_remove(G, GH, M, g):
    _g_unlink(G, M, g)
    hi = _h_find(GH, G[g, 0])
    if hi >= 0:
        _h_del(GH, hi)
    G[g, 0] = -1
    G[g, 3] = M[M_GFREE]
    M[M_GFREE] = g


@njit(cache=True)
def _g_count(G, GH, M, r):
    """One more miss of region ``r`` (not in the cache); returns its count."""
    hi = _h_find(GH, r)
    if hi >= 0:
        g = GH[hi, 1]
        G[g, 1] += 1
        c = G[g, 1]
        _g_unlink(G, M, g)
    else:
        g = M[M_GFREE]
        if g >= 0:
            M[M_GFREE] = G[g, 3]
        else:
            g = M[M_GUSED]
            M[M_GUSED] = g + 1
        G[g, 0] = r
        G[g, 1] = 1
        c = 1
        _h_put(GH, r, g)
    t = M[M_GT]
    G[g, 2] = t
    G[g, 3] = -1
    if t >= 0:
        G[t, 3] = g
    else:
        M[M_GH] = g
    M[M_GT] = g
    M[M_GN] += 1
    while M[M_GN] > M[P_GMAX]:
        _g_remove(G, GH, M, M[M_GH])
    return c


@njit(cache=True)
def _g_forget(G, GH, M, r):
    hi = _h_find(GH, r)
    if hi >= 0:
        _g_remove(G, GH, M, GH[hi, 1])


# ---------------------------------------------------------------- operations
@njit(cache=True)
def read(S, H, M, off, size, dies):
    """A read: when every block it touches is valid, touch its regions, put the die of each region
    piece in ``dies`` and return the number of pieces; otherwise return -1 (a miss, no change)."""
    rg = M[P_REGION]
    end = off + size
    a = off
    while a < end:
        r = a // rg
        b = min(end, (r + 1) * rg)
        hi = _h_find(H, r)
        if hi < 0:
            return -1
        m = _bits(M, r, a, b, False)
        if S[H[hi, 1], MSK] & m != m:
            return -1
        a = b
    n = 0
    a = off
    while a < end:
        r = a // rg
        b = min(end, (r + 1) * rg)
        s = H[_h_find(H, r), 1]
        _touch(S, M, s)
        dies[n] = S[s, DIE]
        n += 1
        a = b
    M[M_LAST] = end
    M[M_HITS] += 1
    return n


@njit(cache=True)
def miss(S, H, G, GH, M, off, size, allow, out):
    """Admission after a read miss. Promoted regions (made wholly valid, allocated on the next die)
    go to ``out`` as (region, die, 1 if the miss did not cover the whole region else 0); returns
    their number. ``allow`` 0: count accesses but promote nothing (promotion budget exhausted)."""
    eligible = size <= M[P_MAXADM] and not (M[P_SEQ] == 1 and off == M[M_LAST])
    M[M_LAST] = off + size
    if not eligible:
        return 0
    rg = M[P_REGION]
    full = _full(M)
    end = off + size
    a = off
    n = 0
    while a < end:
        r = a // rg
        b = min(end, (r + 1) * rg)
        hi = _h_find(H, r)
        covered = _bits(M, r, a, b, True) == full
        if hi >= 0:
            s = H[hi, 1]
        else:
            s = -1
            if M[P_COUNT] == 1:
                c = _g_count(G, GH, M, r)
                if c < M[P_ADMIT]:
                    a = b
                    continue
            _g_forget(G, GH, M, r)
        if allow == 0:
            a = b
            continue
        die = M[M_RR]
        M[M_RR] = (die + 1) % M[P_DIES]
        if s < 0:
            s = _alloc(S, M)
            S[s, K] = r
            S[s, MSK] = 0
            _h_put(H, r, s)
            _push(S, M, s, 1)
        M[M_VALID] += (_popcount(full) - _popcount(S[s, MSK])) * BLOCK
        S[s, MSK] = full
        S[s, DIE] = die
        M[M_PROMO] += 1
        out[n, 0] = r
        out[n, 1] = die
        out[n, 2] = 0 if covered else 1
        n += 1
        a = b
    _evict(S, H, M)
    return n


@njit(cache=True)
def invalidate(S, H, M, off, size):
    """A write or trim: the blocks it touches are no longer valid; returns the bytes invalidated."""
    rg = M[P_REGION]
    end = off + size
    a = off
    tot = 0
    while a < end:
        r = a // rg
        b = min(end, (r + 1) * rg)
        hi = _h_find(H, r)
        if hi >= 0:
            s = H[hi, 1]
            m = _bits(M, r, a, b, False) & S[s, MSK]
            if m != 0:
                nb = _popcount(m) * BLOCK
                S[s, MSK] &= ~m
                M[M_VALID] -= nb
                M[M_INVAL] += nb
                tot += nb
                if S[s, MSK] == 0:
                    _unlink(S, M, s)
                    _free_slot(S, H, M, s)
        a = b
    return tot


@njit(cache=True)
def warm(S, H, G, GH, M, ops, offs, sizes, start):
    """Replay accesses ``start..`` without timing until done or fewer than HEADROOM free slots
    remain in ``S`` or ``G``; returns (next index, read hits)."""
    dies = np.zeros(64, dtype=np.int64)
    out = np.zeros((64, 3), dtype=np.int64)
    hits = 0
    cs = S.shape[0]
    cg = G.shape[0]
    i = start
    n = ops.shape[0]
    while i < n:
        if M[M_USED] + HEADROOM > cs and M[M_FREE] < 0:
            break
        if M[M_GUSED] + HEADROOM > cg and M[M_GFREE] < 0:
            break
        op = ops[i]
        if op == _READ:
            if read(S, H, M, offs[i], sizes[i], dies) >= 0:
                hits += 1
            else:
                miss(S, H, G, GH, M, offs[i], sizes[i], 1, out)
        elif op in (_WRITE, _TRIM):
            invalidate(S, H, M, offs[i], sizes[i])
        i += 1
    return i, hits

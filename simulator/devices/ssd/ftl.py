"""FTL state: page-level mapping tables, block manager and greedy garbage collection.

All state lives in numpy arrays and every state transition is a numba kernel, so the timed device
(one call per NAND page) and the untimed preconditioning loop (millions of writes) share exactly the
same code.

* ``l2p[lpn]``  = physical slot + 1 (0 = unmapped). A *slot* is one mapping unit (4 KiB) of a page.
* ``p2l[slot]`` = lpn + 1 (0 = invalid, padding or never written).
* blocks are numbered ``plane * blocks_per_plane + b``; slot = block * slots_per_block + offset.
* each plane has two write frontiers (open blocks): 0 = host writes, 1 = GC relocations (hot/cold
  separation as in most firmware); a block becomes a GC candidate only when full *and* sealed.
* greedy GC: while a plane has fewer than ``gc_threshold`` free blocks, the full block with the
  fewest valid slots is chosen, its valid slots are relocated to the plane's GC frontier
  (copyback inside the plane) and it is erased.

Arrays use 0 for "empty" so that ``np.zeros`` (lazily mapped by the OS) costs memory only for the
part of a large drive that is actually written.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["FTL", "greedy_waf_agarwal", "greedy_waf_lru"]

# geo indices
G_BPP, G_SPB, G_SPPG, G_THR, G_NPLANES = 0, 1, 2, 3, 4
# counter indices
C_HOST, C_GC, C_PAD, C_ERASE, C_GCRUNS, C_ERR = 0, 1, 2, 3, 4, 5
FREE, OPEN, FULL = 0, 1, 2


@njit(cache=True)
def _open_block(plane, f, geo, bstate, free_stack, free_top, front, cnt):
    top = free_top[plane]
    if top <= 0:
        cnt[C_ERR] += 1
        return -1
    top -= 1
    free_top[plane] = top
    b = free_stack[plane, top]
    bstate[b] = OPEN
    front[plane, f, 0] = b
    front[plane, f, 1] = 0
    return b


@njit(cache=True)
def _map_slot(lpn, s, geo, l2p, p2l, bvalid):
    """Point ``lpn`` at slot ``s`` (invalidating its previous location)."""
    spb = geo[G_SPB]
    old = l2p[lpn]
    if old > 0:
        o = old - 1
        p2l[o] = 0
        bvalid[o // spb] -= 1
    l2p[lpn] = s + 1
    p2l[s] = lpn + 1
    bvalid[s // spb] += 1


@njit(cache=True)
def reserve_page(plane, geo, bstate, free_stack, free_top, front, cnt):
    """Reserve the next page of the plane's host frontier; returns its first slot (or -1)."""
    spb = geo[G_SPB]
    sppg = geo[G_SPPG]
    b = front[plane, 0, 0]
    if b < 0:
        b = _open_block(plane, 0, geo, bstate, free_stack, free_top, front, cnt)
        if b < 0:
            return -1
    ptr = front[plane, 0, 1]
    s = b * spb + ptr
    ptr += sppg
    if ptr >= spb:
        front[plane, 0, 0] = -1  # block fully reserved; it turns FULL when its last page is sealed
        front[plane, 0, 1] = 0
    else:
        front[plane, 0, 1] = ptr
    return s


@njit(cache=True)
def map_host_slot(lpn, s, geo, l2p, p2l, bvalid, cnt):
    _map_slot(lpn, s, geo, l2p, p2l, bvalid)
    cnt[C_HOST] += 1


@njit(cache=True)
def seal_page(base, filled, geo, bstate, cnt):
    """The page starting at slot ``base`` is closed with ``filled`` data slots (rest is padding)."""
    spb = geo[G_SPB]
    sppg = geo[G_SPPG]
    cnt[C_PAD] += sppg - filled
    if (base % spb) + sppg >= spb:
        bstate[base // spb] = FULL


@njit(cache=True)
def trim_lpn(lpn, geo, l2p, p2l, bvalid):
    old = l2p[lpn]
    if old > 0:
        o = old - 1
        p2l[o] = 0
        bvalid[o // geo[G_SPB]] -= 1
        l2p[lpn] = 0


@njit(cache=True)
def gc_once(plane, geo, l2p, p2l, bvalid, bstate, berase, free_stack, free_top, front, cnt):
    """Greedy GC of one victim in ``plane``; returns the number of relocated slots, -1 if none."""
    bpp = geo[G_BPP]
    spb = geo[G_SPB]
    b0 = plane * bpp
    victim = -1
    best = spb + 1
    for b in range(b0, b0 + bpp):
        if bstate[b] == FULL and bvalid[b] < best:
            best = bvalid[b]
            victim = b
    if victim < 0 or best >= spb:
        cnt[C_ERR] += 1
        return -1
    moved = 0
    base = victim * spb
    for i in range(spb):
        v = p2l[base + i]
        if v > 0:
            g = front[plane, 1, 0]
            if g < 0:
                g = _open_block(plane, 1, geo, bstate, free_stack, free_top, front, cnt)
                if g < 0:
                    return -1
            ptr = front[plane, 1, 1]
            _map_slot(v - 1, g * spb + ptr, geo, l2p, p2l, bvalid)
            ptr += 1
            if ptr >= spb:
                bstate[g] = FULL
                front[plane, 1, 0] = -1
                front[plane, 1, 1] = 0
            else:
                front[plane, 1, 1] = ptr
            moved += 1
    # erase
    bstate[victim] = FREE
    bvalid[victim] = 0
    berase[victim] += 1
    free_stack[plane, free_top[plane]] = victim
    free_top[plane] += 1
    cnt[C_GC] += moved
    cnt[C_ERASE] += 1
    cnt[C_GCRUNS] += 1
    return moved


@njit(cache=True)
def gc_until_free(plane, out, geo, l2p, p2l, bvalid, bstate, berase, free_stack, free_top, front, cnt):
    """Run GC in ``plane`` while it is below the free-block threshold.

    Writes the relocated-slot count of each victim into ``out`` and returns how many victims.
    """
    n = 0
    thr = geo[G_THR]
    while free_top[plane] < thr and n < out.shape[0]:
        m = gc_once(plane, geo, l2p, p2l, bvalid, bstate, berase, free_stack, free_top, front, cnt)
        if m < 0:
            break
        out[n] = m
        n += 1
    return n


@njit(cache=True)
def _write_page_untimed(lpns, k, plane, out, geo, l2p, p2l, bvalid, bstate, berase, free_stack, free_top, front, cnt):
    s = reserve_page(plane, geo, bstate, free_stack, free_top, front, cnt)
    if s < 0:
        return False
    for i in range(k):
        map_host_slot(lpns[i], s + i, geo, l2p, p2l, bvalid, cnt)
    seal_page(s, k, geo, bstate, cnt)
    gc_until_free(plane, out, geo, l2p, p2l, bvalid, bstate, berase, free_stack, free_top, front, cnt)
    return True


@njit(cache=True)
def precondition_kernel(n_lpn, fill, n_random, seed, order, rr0, geo, l2p, p2l, bvalid, bstate, berase,
                        free_stack, free_top, front, cnt):
    """Sequential fill of every LPN (if ``fill``), then ``n_random`` uniform random single-slot overwrites, packed
    ``slots_per_page`` at a time into pages allocated round-robin over ``order``. Returns the next
    round-robin index, or -1 on failure."""
    sppg = geo[G_SPPG]
    lpns = np.empty(sppg, np.int64)
    out = np.empty(1024, np.int64)
    rr = rr0
    nplanes = order.shape[0]
    lpn = 0 if fill else n_lpn
    while lpn < n_lpn:
        k = min(sppg, n_lpn - lpn)
        for i in range(k):
            lpns[i] = lpn + i
        if not _write_page_untimed(lpns, k, order[rr % nplanes], out, geo, l2p, p2l, bvalid, bstate, berase,
                                   free_stack, free_top, front, cnt):
            return -1
        rr += 1
        lpn += k
    np.random.seed(seed)
    done = 0
    while done < n_random:
        k = min(sppg, n_random - done)
        for i in range(k):
            lpns[i] = np.random.randint(0, n_lpn)
        if not _write_page_untimed(lpns, k, order[rr % nplanes], out, geo, l2p, p2l, bvalid, bstate, berase,
                                   free_stack, free_top, front, cnt):
            return -1
        rr += 1
        done += k
    return rr


class FTL:
    """Page-level FTL state of one drive (arrays + geometry). Timing lives in the device."""

    def __init__(self, n_planes: int, blocks_per_plane: int, slots_per_block: int, slots_per_page: int,
                 n_lpn: int, gc_threshold: int):
        self.n_planes = n_planes
        self.bpp = blocks_per_plane
        self.spb = slots_per_block
        self.sppg = slots_per_page
        self.n_lpn = n_lpn
        nb = n_planes * blocks_per_plane
        self.geo = np.array([blocks_per_plane, slots_per_block, slots_per_page, gc_threshold, n_planes], np.int64)
        from simulator.core.lazy import lazy_zeros

        # memory only where written: a terabyte drive's tables are GBs of address space
        self.l2p = lazy_zeros(n_lpn, np.int32)
        self.p2l = lazy_zeros(nb * slots_per_block, np.int32)
        self.bvalid = np.zeros(nb, np.int32)
        self.bstate = np.zeros(nb, np.int8)
        self.berase = np.zeros(nb, np.int32)
        # free stack: pop from the top; initial order so that block 0 of each plane is used first
        self.free_stack = (np.arange(blocks_per_plane, dtype=np.int32)[::-1][None, :]
                           + (np.arange(n_planes, dtype=np.int32) * blocks_per_plane)[:, None]).copy()
        self.free_top = np.full(n_planes, blocks_per_plane, np.int32)
        self.front = np.full((n_planes, 2, 2), -1, np.int64)
        self.front[:, :, 1] = 0
        self.cnt = np.zeros(6, np.int64)
        self._gc_out = np.empty(1024, np.int64)

    # ------------------------------------------------------------------ host-side operations
    def reserve_page(self, plane: int) -> int:
        s = reserve_page(plane, self.geo, self.bstate, self.free_stack, self.free_top, self.front, self.cnt)
        if s < 0:
            raise RuntimeError(f"FTL: plane {plane} has no free block (over-provisioning exhausted)")
        return s

    def map_host(self, lpn: int, slot: int) -> None:
        map_host_slot(lpn, slot, self.geo, self.l2p, self.p2l, self.bvalid, self.cnt)

    def seal(self, base: int, filled: int) -> None:
        seal_page(base, filled, self.geo, self.bstate, self.cnt)

    def trim(self, lpn: int) -> None:
        trim_lpn(lpn, self.geo, self.l2p, self.p2l, self.bvalid)

    def collect(self, plane: int) -> np.ndarray:
        """Greedy GC while the plane is short of free blocks; relocated slots per victim."""
        n = gc_until_free(plane, self._gc_out, self.geo, self.l2p, self.p2l, self.bvalid, self.bstate,
                          self.berase, self.free_stack, self.free_top, self.front, self.cnt)
        if self.cnt[C_ERR]:
            raise RuntimeError(f"FTL: garbage collection failed in plane {plane} (no reclaimable block)")
        return self._gc_out[:n]

    def precondition(self, n_random: int, seed: int, order: np.ndarray, rr: int, fill: bool = True) -> int:
        """Untimed writes (see :func:`precondition_kernel`); returns the next round-robin index."""
        rr = precondition_kernel(self.n_lpn, bool(fill), int(n_random), int(seed), order, int(rr), self.geo, self.l2p,
                                 self.p2l, self.bvalid, self.bstate, self.berase, self.free_stack,
                                 self.free_top, self.front, self.cnt)
        if rr < 0 or self.cnt[C_ERR]:
            raise RuntimeError("FTL: preconditioning ran out of free blocks")
        return int(rr)

    # ------------------------------------------------------------------ counters
    def counters(self) -> dict[str, int]:
        c = self.cnt
        return {"host_slots": int(c[C_HOST]), "gc_slots": int(c[C_GC]), "pad_slots": int(c[C_PAD]),
                "erases": int(c[C_ERASE]), "gc_runs": int(c[C_GCRUNS])}

    def reset_counters(self) -> None:
        self.cnt[:] = 0

    @staticmethod
    def waf(before: dict[str, int], after: dict[str, int]) -> float:
        """Write amplification between two counter snapshots: NAND slots programmed / host slots."""
        host = after["host_slots"] - before["host_slots"]
        nand = host + (after["gc_slots"] - before["gc_slots"]) + (after["pad_slots"] - before["pad_slots"])
        return nand / host if host > 0 else float("nan")


# ---------------------------------------------------------------------- analytical WAF
def greedy_waf_lru(op: float) -> float:
    """WAF of uniform random writes with spare factor ``op`` = (physical − logical)/logical, large
    blocks: the victim's valid fraction u solves u = exp(−(1+op)(1−u)) and WAF = 1/(1−u)
    (Desnoyers 2012, LRU/FIFO cleaning; greedy converges to it as pages per block grow — Van Houdt
    2013). Greedy with finite blocks is slightly better."""
    if op <= 0:
        return math.inf
    a = 1.0 + op
    lo, hi = 0.0, 1.0 - 1e-12  # bisection on f(u) = exp(-a(1-u)) - u: f(0) > 0, f < 0 just below 1
    for _ in range(200):
        u = 0.5 * (lo + hi)
        if math.exp(-a * (1.0 - u)) > u:
            lo = u
        else:
            hi = u
    u = 0.5 * (lo + hi)
    return 1.0 / (1.0 - u)


def greedy_waf_agarwal(op: float) -> float:
    """Closed form (1 + op) / (2 op) (Agarwal & Marrow 2010) for greedy GC under uniform writes."""
    return (1.0 + op) / (2.0 * op) if op > 0 else math.inf

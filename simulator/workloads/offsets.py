"""Offset generators of fio jobs, one per (job thread, file).

The region of a file is ``[start, start + span)`` (fio: ``offset`` .. ``offset + size``). Offsets are
multiples of the block alignment ``align`` (the smallest block size of the job) from ``start``
and every IO fits in the region (fio's ``last_block``: ``nblocks = (span - (max_bs - align)) //
align``).

* :class:`SequentialOffsets` — fio's ``last_pos`` per data direction: each direction continues
  where its previous IO ended and wraps to ``start`` when the next IO would pass the end.
* :class:`RandomOffsets` — the random distributions of fio, generated in blocks of 4096 offsets by
  numba kernels so that the per-IO cost is a ``list.pop()``:

  - ``random`` (uniform): block ``floor(u * nblocks)``. With fio's random map (default,
    ``norandommap=0``) every block is used once per pass: a drawn block that was already used is
    replaced by the next free block after it (wrapping), as fio's ``axmap_next_free`` does; when
    every block has been used the map is cleared and a new pass starts (fio does that for
    time_based jobs; the simulator always does).
  - ``zipf:θ`` — fio's ``zipf_next`` (Gray et al., "Quickly generating billion-record synthetic
    databases"): rank from the inverse of the approximate Zipf CDF with ``zetan`` summed over at
    most 10^7 ranks (fio's ``ZIPF_MAX_GEN``); then fio *hashes* the rank (``rank * 0x61C8864680B583EB``
    mod 2^64, fio's ``__hash_u64``) and adds a random offset, modulo the number of blocks. So the hot
    blocks are scattered over the region instead of packed at its start; different ranks can land
    on one block. ``center`` (``zipf:θ:c``) replaces the random offset with ``c * nblocks``.
  - ``pareto:h`` — fio's ``pareto_next``: ``(nblocks - 1) * u ** (log h / log(1 - h))``, hashed and
    offset the same way.
  - ``normal:σ`` — fio's ``gauss_next``: the average of 12 uniform integers on ``[0, nblocks]``
    (a bell with standard deviation ≈ nblocks/12), plus a uniform jitter of width σ% of the blocks,
    hashed (so, as in fio, the popular blocks are scattered; the bell shapes how often, not where).
  - ``zoned:a1/r1:a2/r2:...`` — a% of the IOs go uniformly into the next r% of the region (fio's
    ``zone_split`` table over 100 slots); ``zoned_abs:a1/s1:...`` with absolute zone sizes.

  The random map applies to ``random`` only (fio does not use it for zipf/pareto/normal; for zoned
  fio consults it with zone-relative block numbers, an inconsistency not reproduced).

Numbers come from the numpy ``Generator`` handed in (the runner seeds it from fio's ``randseed``
and the thread number when ``randrepeat=1``), so a sequence depends only on that seed.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numba import njit

from simulator.core.lazy import lazy_zeros

__all__ = [
    "BLOCK",
    "GOLDEN_RATIO_64",
    "HOTBAND_CURVE",
    "ZIPF_MAX_GEN",
    "HotbandOffsets",
    "OffsetGenerator",
    "PerDirectionOffsets",
    "RandomOffsets",
    "SeqRandOffsets",
    "SequentialOffsets",
    "make_offsets",
    "zipf_zetan",
]

#: offsets generated per refill
BLOCK = 4096
#: fio's ``__hash_u64`` multiplier (hash.h, GOLDEN_RATIO_64 from the Linux kernel)
GOLDEN_RATIO_64 = 0x61C8864680B583EB
#: fio caps the zeta(n) sum at this many ranks (lib/zipf.c)
ZIPF_MAX_GEN = 10_000_000

_U64_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


# --------------------------------------------------------------------------- numba kernels
@njit(cache=True)
def _zetan(theta, n):
    s = 0.0
    for i in range(n):
        s += (1.0 / (i + 1.0)) ** theta
    return s


@lru_cache(maxsize=128)
def zipf_zetan(theta: float, nranges: int) -> float:
    """fio's ``zetan``: sum over the first min(nranges, 10^7) ranks of rank^-θ (pure; memoised)."""
    return float(_zetan(float(theta), int(min(nranges, ZIPF_MAX_GEN))))


@njit(cache=True)
def _hash_mod(val, rand_off, n):
    h = np.uint64(val) * np.uint64(GOLDEN_RATIO_64)
    return np.int64((h + np.uint64(rand_off)) % np.uint64(n))


@njit(cache=True)
def _zipf_kernel(u, n, theta, zetan, rand_off, start, align, out):
    zeta2 = 1.0 + 0.5**theta
    alpha = 1.0 / (1.0 - theta)
    eta = (1.0 - (2.0 / n) ** (1.0 - theta)) / (1.0 - zeta2 / zetan)
    half = 0.5**theta
    for i in range(u.shape[0]):
        r = u[i]
        rz = r * zetan
        if rz < 1.0:
            val = 1
        elif rz < 1.0 + half:
            val = 2
        else:
            val = 1 + np.int64(n * (eta * r - eta + 1.0) ** alpha)
        out[i] = start + _hash_mod(val - 1, rand_off, n) * align


@njit(cache=True)
def _pareto_kernel(u, n, ppow, rand_off, start, align, out):
    for i in range(u.shape[0]):
        v = np.int64((n - 1) * u[i] ** ppow)
        out[i] = start + _hash_mod(v, rand_off, n) * align


@njit(cache=True)
def _gauss_kernel(u, n, stddev, rand_off, start, align, out):
    # u: (m, 13) uniforms: 12 for the sum, 1 for the jitter
    for i in range(u.shape[0]):
        s = 0
        for j in range(12):
            s += np.int64(u[i, j] * (n + 1))
        s = (s + 11) // 12
        if stddev > 0:
            dev = np.int64(stddev * u[i, 12]) - stddev // 2
            while s + dev < 0 or s + dev >= n:
                dev = np.int64(dev / 2)  # C truncation towards zero
            s += dev
        out[i] = start + _hash_mod(s, rand_off, n) * align


@njit(cache=True)
def _uniform_kernel(u, n, start, align, out):
    for i in range(u.shape[0]):
        b = np.int64(u[i] * n)
        if b >= n:
            b = n - 1
        out[i] = start + b * align


@njit(cache=True)
def _lowest_zero(word):
    free = ~word
    k = 0
    while (free & np.uint64(1)) == 0:
        free >>= np.uint64(1)
        k += 1
    return k


@njit(cache=True)
def _clear_map(bitmap, n):
    bitmap[:] = 0
    nw = bitmap.shape[0]
    tail = n - (nw - 1) * 64  # valid bits in the last word (1..64)
    if tail < 64:
        bitmap[nw - 1] = ~((np.uint64(1) << np.uint64(tail)) - np.uint64(1))


@njit(cache=True)
def _uniform_map_kernel(u, n, bitmap, state, start, align, out):
    # state[0] = blocks used in this pass
    nw = bitmap.shape[0]
    for i in range(u.shape[0]):
        if state[0] >= n:
            _clear_map(bitmap, n)
            state[0] = 0
        b = np.int64(u[i] * n)
        if b >= n:
            b = n - 1
        w = b >> 6
        m = np.uint64(1) << np.uint64(b & 63)
        if bitmap[w] & m:
            # next free block after b, wrapping (fio's axmap_next_free)
            bit = (b & 63) + 1
            found = -1
            if bit < 64:
                free = (~bitmap[w]) & (_U64_ALL << np.uint64(bit))
                if free != 0:
                    found = (w << 6) + _lowest_zero(~free)
            if found < 0:
                for k in range(1, nw + 1):
                    ww = (w + k) % nw
                    if bitmap[ww] != _U64_ALL:
                        found = (ww << 6) + _lowest_zero(bitmap[ww])
                        break
            b = found
            w = b >> 6
            m = np.uint64(1) << np.uint64(b & 63)
        bitmap[w] |= m
        state[0] += 1
        out[i] = start + b * align


@njit(cache=True)
def _zoned_kernel(uz, uo, lo, ln, start, align, out):
    for i in range(uz.shape[0]):
        z = np.int64(uz[i] * 100.0)
        if z > 99:
            z = 99
        b = lo[z] + np.int64(uo[i] * ln[z])
        out[i] = start + b * align


#: vdbench's hotband= access curve (Vdb/HotBand.java, vdbench 5.04, Oracle; written for the SNIA
#: Emerald hot band workload): cumulative probability of access (second row) against the distance
#: from the start of the band in units of 10^6 bytes (first row); linear in between, so accesses are
#: uniform within each segment. Beyond the band the offset wraps (modulo the band size). The last
#: segment is as vdbench tabulates its slope (1.313e9 MB over the last 18.2 % of draws).
HOTBAND_CURVE = (
    (0, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288,
     1048576, 2097152, 4194304, 8388608, 16777216, 33554432, 67108864, 134217728, 268435456, 536870912,
     1073741824, 1073741824 + 0.18236 * 1313220630.0),
    (0, 0.087217, 0.10101, 0.132206, 0.159946, 0.201713, 0.262602, 0.32645, 0.366902, 0.386175,
     0.436941, 0.482631, 0.523752, 0.56076, 0.594068, 0.624045, 0.651024, 0.675305, 0.697159,
     0.716827, 0.734528, 0.750459, 0.764797, 0.777701, 0.789314, 0.799767, 0.809174, 0.81764, 1.0),
)


@njit(cache=True)
def _hotband_kernel(u, cdf, mb, n, align, start, out):
    m = cdf.shape[0]
    for i in range(u.shape[0]):
        z = u[i]
        k = np.searchsorted(cdf, z, side="right") - 1
        if k >= m - 1:
            k = m - 2
        x = mb[k] + (z - cdf[k]) * (mb[k + 1] - mb[k]) / (cdf[k + 1] - cdf[k])
        b = np.int64(x * 1e6 / align) % n
        out[i] = start + b * align


# --------------------------------------------------------------------------- generators
class OffsetGenerator:
    """Interface: ``next(ddir) -> absolute byte offset``; ``start``, ``span``, ``nblocks``."""

    __slots__ = ()

    def next(self, ddir: int = 0) -> int:  # pragma: no cover - interface
        raise NotImplementedError


class SequentialOffsets(OffsetGenerator):
    """fio's sequential IO: one position per data direction, wrapping at the end of the region."""

    __slots__ = ("_bs", "_pos", "end", "span", "start")

    def __init__(self, start: int, span: int, bs: tuple[int, int, int], max_bs: tuple[int, int, int] | None = None):
        if span <= 0:
            raise ValueError("empty region")
        largest = max(max_bs or bs)
        if largest > span:
            raise ValueError(f"block size {largest} larger than the region ({span} bytes)")
        self.start = int(start)
        self.span = int(span)
        self.end = self.start + self.span
        self._bs = tuple(int(b) for b in bs)
        self._pos = [self.start, self.start, self.start]

    def next(self, ddir: int = 0, size: int = 0) -> int:
        """Offset of the next IO of ``ddir`` (of ``size`` bytes; default the direction's block
        size). An IO that would pass the end wraps to the start (with variable sizes fio would
        first try a smaller size that fits; the simulator wraps)."""
        p = self._pos[ddir]
        b = size or self._bs[ddir]
        if p + b > self.end:
            p = self.start
        self._pos[ddir] = p + b
        return p


class RandomOffsets(OffsetGenerator):
    """Random offsets of one of fio's distributions (see the module docstring), block-generated."""

    __slots__ = (
        "_args",
        "_bitmap",
        "_buf",
        "_gen",
        "_kind",
        "_out",
        "_state",
        "align",
        "nblocks",
        "span",
        "start",
    )

    def __init__(
        self,
        start: int,
        span: int,
        align: int,
        max_bs: int,
        dist: tuple,
        gen: np.random.Generator,
        randommap: bool = True,
        block: int = BLOCK,
    ):
        if align <= 0:
            raise ValueError("bad block alignment")
        if max_bs > span:
            raise ValueError(f"block size {max_bs} larger than the region ({span} bytes)")
        self.start = int(start)
        self.span = int(span)
        self.align = int(align)
        n = (self.span - (max_bs - self.align)) // self.align
        if n <= 0:
            raise ValueError("region smaller than one block")
        self.nblocks = int(n)
        self._gen = gen
        self._buf: list[int] = []
        self._out = np.empty(int(block), dtype=np.int64)
        self._bitmap = None
        self._state = None
        kind = dist[0]
        self._kind = kind
        if kind == "random":
            if randommap:
                nw = (self.nblocks + 63) // 64
                # 4 KiB pages taken as IO lands (lazy_zeros): with np.zeros' huge pages 50,000 random
                # IOs made a 24 TB drive's whole 732 MB map resident; the bits past the last block are
                # set so they are never "free"
                self._bitmap = lazy_zeros(nw, np.uint64)
                tail = self.nblocks - (nw - 1) * 64
                if tail < 64:
                    self._bitmap[nw - 1] = np.uint64(((1 << 64) - 1) ^ ((1 << tail) - 1))
                self._state = np.zeros(1, dtype=np.int64)
                self._kind = "random_map"
            self._args = ()
        elif kind == "zipf":
            theta, center = dist[1], dist[2]
            rand_off = int(gen.integers(0, 2**32)) if center == -1 else int(self.nblocks * center)
            self._args = (float(theta), zipf_zetan(float(theta), self.nblocks), rand_off)
        elif kind == "pareto":
            h, center = dist[1], dist[2]
            rand_off = int(gen.integers(0, 2**32)) if center == -1 else int(self.nblocks * center)
            self._args = (math.log(h) / math.log(1.0 - h), rand_off)
        elif kind == "normal":
            devp, center = dist[1], dist[2]
            stddev = 0
            if devp != 0.0:
                stddev = min(math.ceil(self.nblocks * devp / 100.0), self.nblocks // 2)
            rand_off = 0 if center == -1 else int(self.nblocks * (center - 0.5)) % 2**32
            self._args = (int(stddev), rand_off)
        elif kind == "sim_hotband":
            self._args = (np.array(HOTBAND_CURVE[1], dtype=np.float64), np.array(HOTBAND_CURVE[0], dtype=np.float64))
        elif kind in ("zoned", "zoned_abs"):
            lo = np.zeros(100, dtype=np.int64)
            ln = np.zeros(100, dtype=np.int64)
            a_prev = 0
            s_prev = 0
            for acc, size in dist[1]:
                if kind == "zoned":
                    z_lo = s_prev * self.nblocks // 100
                    z_len = self.nblocks * size // 100
                else:
                    z_lo = s_prev // self.align
                    z_end = (s_prev + size) // self.align
                    if z_end > self.nblocks:
                        raise ValueError(
                            f"zoned_abs zones end at {s_prev + size} bytes, beyond the region ({self.span} bytes)"
                        )
                    z_len = z_end - z_lo
                lo[a_prev : a_prev + acc] = z_lo
                ln[a_prev : a_prev + acc] = max(z_len, 1)
                a_prev += acc
                s_prev += size
            self._args = (lo, ln)
        else:
            raise ValueError(f"unknown distribution {kind!r}")

    def _refill(self) -> list[int]:
        out = self._out
        m = out.shape[0]
        gen = self._gen
        kind = self._kind
        n = self.nblocks
        if kind == "random_map":
            _uniform_map_kernel(gen.random(m), n, self._bitmap, self._state, self.start, self.align, out)
        elif kind == "random":
            _uniform_kernel(gen.random(m), n, self.start, self.align, out)
        elif kind == "zipf":
            theta, zetan, rand_off = self._args
            _zipf_kernel(gen.random(m), n, theta, zetan, rand_off, self.start, self.align, out)
        elif kind == "pareto":
            ppow, rand_off = self._args
            _pareto_kernel(gen.random(m), n, ppow, rand_off, self.start, self.align, out)
        elif kind == "normal":
            stddev, rand_off = self._args
            _gauss_kernel(gen.random((m, 13)), n, stddev, rand_off, self.start, self.align, out)
        elif kind == "sim_hotband":
            cdf, mb = self._args
            _hotband_kernel(gen.random(m), cdf, mb, n, self.align, self.start, out)
        else:  # zoned
            lo, ln = self._args
            _zoned_kernel(gen.random(m), gen.random(m), lo, ln, self.start, self.align, out)
        buf = out[::-1].tolist()
        self._buf = buf
        return buf

    def next(self, ddir: int = 0, size: int = 0) -> int:
        buf = self._buf
        if not buf:
            buf = self._refill()
        return buf.pop()

    def take(self, count: int) -> np.ndarray:
        """The next ``count`` offsets as an array (tests, analysis)."""
        return np.fromiter((self.next() for _ in range(count)), dtype=np.int64, count=count)


class HotbandOffsets(RandomOffsets):
    """vdbench's ``hotband=`` within a region (``random_distribution=sim_hotband``): offsets drawn
    from :data:`HOTBAND_CURVE` (most accesses near the start of the band, a long tail wrapping over
    it), and a write lands 1 % of the band further on than a read would (vdbench's HotBand adds
    ``num_recs_in_band / 100`` to write records "to allow writes to step away from the hottest
    portion of the hotband")."""

    __slots__ = ("_shift",)

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._shift = self.nblocks // 100

    def next(self, ddir: int = 0, size: int = 0) -> int:
        buf = self._buf
        if not buf:
            buf = self._refill()
        off = buf.pop()
        if ddir == 1 and self._shift:
            b = ((off - self.start) // self.align + self._shift) % self.nblocks
            off = self.start + b * self.align
        return off


class SeqRandOffsets(OffsetGenerator):
    """fio's ``percentage_random`` below 100: each IO of direction ``ddir`` is random (from ``rnd``)
    with probability ``pct[ddir]`` % (fio's should_do_random: a draw 1..100 <= the percentage),
    otherwise it continues where that direction's previous IO ended (fio's ``last_pos``, starting at
    the region's start), wrapping to the start when it would pass the end."""

    __slots__ = ("_last", "_p", "_rand", "_rnd", "end", "span", "start")

    def __init__(self, rnd: OffsetGenerator, pct: tuple[int, int, int], rand) -> None:
        self._rnd = rnd
        self._p = tuple(p / 100.0 for p in pct)
        self._rand = rand
        self.start = rnd.start
        self.span = rnd.span
        self.end = self.start + self.span
        self._last = [self.start] * 3

    def next(self, ddir: int = 0, size: int = 0) -> int:
        p = self._p[ddir]
        if p >= 1.0 or (p > 0.0 and self._rand() < p):
            off = self._rnd.next(ddir, size)
        else:
            off = self._last[ddir]
            if off + size > self.end:
                off = self.start
        self._last[ddir] = off + size
        return off


class PerDirectionOffsets(OffsetGenerator):
    """One generator per data direction (fio's per-direction zoned distributions)."""

    __slots__ = ("_gens", "span", "start")

    def __init__(self, gens: list[OffsetGenerator | None]):
        self._gens = gens
        g0 = next(g for g in gens if g is not None)
        self.start = g0.start
        self.span = g0.span

    def next(self, ddir: int = 0, size: int = 0) -> int:
        return self._gens[ddir].next(ddir, size)


def make_offsets(
    random: bool,
    start: int,
    span: int,
    bs: tuple[int, int, int],
    ddirs: tuple[int, ...],
    dist: tuple,
    gen: np.random.Generator | None,
    randommap: bool = True,
    *,
    max_bs: tuple[int, int, int] | None = None,
    align: int | None = None,
) -> OffsetGenerator:
    """The generator a job thread uses for one file: ``bs`` = the smallest block size per direction,
    ``max_bs`` the largest (default ``bs``), active ``ddirs``; random offsets are multiples of
    ``align`` (fio's blockalign; default the smallest block size of the active directions)."""
    maxb = max_bs or bs
    if not random:
        return SequentialOffsets(start, span, bs, maxb)
    assert gen is not None
    lo = min(bs[d] for d in ddirs)
    hi = max(maxb[d] for d in ddirs)
    if dist[0] == "zoned_ddir":
        # each direction its own table (and its own child stream of ``gen``)
        kind, per = dist[1], dist[2]
        subs = gen.spawn(3)
        gens: list[OffsetGenerator | None] = [None, None, None]
        for d in ddirs:
            sub = (kind, per[d]) if per[d] is not None else ("random",)
            gens[d] = RandomOffsets(start, span, align or lo, hi, sub, subs[d], randommap=randommap and per[d] is None)
        return PerDirectionOffsets(gens)
    cls = HotbandOffsets if dist[0] == "sim_hotband" else RandomOffsets
    return cls(start, span, align or lo, hi, dist, gen, randommap=randommap)

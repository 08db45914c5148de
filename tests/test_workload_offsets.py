"""Offset generators: sequential wrap, fio's random map, zipf/pareto/normal/zoned definitions."""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

from simulator.workloads.offsets import RandomOffsets, SequentialOffsets, zipf_zetan

KB4 = 4096


def gen(seed=7):
    return np.random.Generator(np.random.PCG64(seed))


def test_sequential_per_direction_and_wrap():
    s = SequentialOffsets(1 << 20, 10 * KB4, (KB4, 2 * KB4, KB4))
    reads = [s.next(0) for _ in range(12)]
    assert reads[:10] == [(1 << 20) + i * KB4 for i in range(10)]
    assert reads[10:] == [1 << 20, (1 << 20) + KB4]  # wrapped at the end of the region
    writes = [s.next(1) for _ in range(6)]
    # writes have their own position (fio's last_pos per ddir); 8k IOs: 5 fit, then wrap
    assert writes == [(1 << 20) + i * 2 * KB4 for i in range(5)] + [1 << 20]


def test_bs_larger_than_region_rejected():
    with pytest.raises(ValueError):
        SequentialOffsets(0, KB4, (8192, 8192, 8192))
    with pytest.raises(ValueError):
        RandomOffsets(0, KB4, 8192, 8192, ("random",), gen())


def test_random_map_covers_every_block_once_per_pass():
    n = 1000
    r = RandomOffsets(0, n * KB4, KB4, KB4, ("random",), gen())
    x = r.take(3 * n) // KB4
    for p in range(3):
        assert sorted(x[p * n : (p + 1) * n].tolist()) == list(range(n))
    # without the map blocks repeat within a pass (birthday problem: ~n/e distinct missing)
    r2 = RandomOffsets(0, n * KB4, KB4, KB4, ("random",), gen(), randommap=False)
    distinct = len(set((r2.take(n) // KB4).tolist()))
    assert abs(distinct - n * (1 - math.exp(-1))) < 4 * math.sqrt(n * 0.25)


def test_uniform_alignment_and_range():
    start, span = 12345 * 512, 777 * KB4 + 100
    r = RandomOffsets(start, span, KB4, 16384, ("random",), gen(), randommap=False)
    x = r.take(50_000)
    assert np.all((x - start) % KB4 == 0)
    assert x.min() >= start and np.all(x + 16384 <= start + span)
    nblocks = (span - (16384 - KB4)) // KB4
    counts = np.bincount((x - start) // KB4, minlength=nblocks)
    assert counts.size == nblocks
    # chi-square goodness of fit to uniform; 99.9% critical value for ~770 dof is ~900
    exp = x.size / nblocks
    chi2 = float(((counts - exp) ** 2 / exp).sum())
    assert chi2 < 900


def fio_zipf_rank_mass(n: int, theta: float, k: int) -> float:
    """P(rank < k) for fio's zipf_next before hashing, from its inverse-CDF formula.

    rank-1 = 0 w.p. 1/zetan, 1 w.p. 0.5^θ/zetan, else floor(n·(η·u − η + 1)^α) with u uniform; the
    last term is monotone in u, so P(rank < k) is the measure of the u's that map below k.
    """
    zetan = zipf_zetan(theta, n)
    alpha = 1.0 / (1.0 - theta)
    eta = (1.0 - (2.0 / n) ** (1.0 - theta)) / (1.0 - (1.0 + 0.5**theta) / zetan)
    u = (np.arange(2_000_000) + 0.5) / 2_000_000
    rz = u * zetan
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.where(
            rz < 1.0, 0, np.where(rz < 1.0 + 0.5**theta, 1, np.floor(n * (eta * u - eta + 1.0) ** alpha))
        )
    return float((v < k).mean())


def test_zipf_concentrates_and_is_scattered():
    n, theta, N = 10_000, 1.2, 200_000
    r = RandomOffsets(0, n * KB4, KB4, KB4, ("zipf", theta, -1.0), gen(3))
    b = r.take(N) // KB4
    counts = np.sort(np.bincount(b, minlength=n))[::-1]
    share = counts[: n // 10].sum() / N
    # fio maps each rank to one block (hash), so the top 10% of blocks hold at least the mass of the
    # top 10% of ranks; that mass follows from fio's formula (close to ideal Zipf's H(n/10)/H(n))
    p = fio_zipf_rank_mass(n, theta, n // 10)
    ideal = sum(i**-theta for i in range(1, n // 10 + 1)) / sum(i**-theta for i in range(1, n + 1))
    assert abs(p - ideal) < 0.01
    assert p > 0.85
    assert share >= p - 4 * math.sqrt(p * (1 - p) / N)
    # the hottest blocks are scattered over the region, not packed at its start (fio hashes ranks)
    hot = np.argsort(np.bincount(b, minlength=n))[::-1][:20]
    assert hot.max() - hot.min() > n // 2


def test_zipf_center_and_theta_below_one():
    n = 5000
    r = RandomOffsets(0, n * KB4, KB4, KB4, ("zipf", 0.8, 0.5), gen(3))
    b = r.take(20_000) // KB4
    # rank 0 hashes to 0, so with center=0.5 the hottest block is n*0.5 exactly
    assert np.bincount(b).argmax() == n // 2
    # θ=0.8 is flatter than 1.2
    counts = np.sort(np.bincount(b, minlength=n))[::-1]
    assert 0.2 < counts[: n // 10].sum() / b.size < fio_zipf_rank_mass(n, 1.2, n // 10)


def test_pareto_and_normal_follow_fio():
    n = 10_000
    h = 0.3
    r = RandomOffsets(0, n * KB4, KB4, KB4, ("pareto", h, -1.0), gen(4))
    b = r.take(100_000) // KB4
    # pre-hash value (n-1)·u^p with p = log h / log(1-h): P(value < k) = (k/(n-1))^(1/p)
    p = math.log(h) / math.log(1 - h)
    top = np.sort(np.bincount(b, minlength=n))[::-1][: n // 10].sum() / b.size
    assert top >= (0.1 * n / (n - 1)) ** (1 / p) - 0.01
    r = RandomOffsets(0, n * KB4, KB4, KB4, ("normal", 0.0, -1.0), gen(5))
    c = np.bincount(r.take(100_000) // KB4, minlength=n)
    # the 12-uniform average has sd n/12: about 68% of the IOs on the ~n/6 hottest blocks
    assert 0.6 < np.sort(c)[::-1][: n // 6].sum() / c.sum() < 0.76


def test_zoned():
    n = 1000
    r = RandomOffsets(0, n * KB4, KB4, KB4, ("zoned", ((60, 10), (30, 20), (10, 70))), gen(6))
    b = r.take(100_000) // KB4
    f1 = (b < 100).mean()
    f2 = ((b >= 100) & (b < 300)).mean()
    f3 = (b >= 300).mean()
    for f, p in ((f1, 0.6), (f2, 0.3), (f3, 0.1)):
        assert abs(f - p) < 4 * math.sqrt(p * (1 - p) / b.size)
    r = RandomOffsets(0, n * KB4, KB4, KB4, ("zoned_abs", ((50, 10 * KB4), (50, 90 * KB4))), gen(6))
    b = r.take(10_000) // KB4
    assert b.max() < 100 and abs((b < 10).mean() - 0.5) < 0.03
    with pytest.raises(ValueError, match="beyond the region"):
        RandomOffsets(0, n * KB4, KB4, KB4, ("zoned_abs", ((50, 10 * KB4), (50, n * KB4))), gen(6))


def test_same_seed_same_sequence():
    a = RandomOffsets(0, 1 << 30, KB4, KB4, ("random",), gen(11)).take(10_000)
    b = RandomOffsets(0, 1 << 30, KB4, KB4, ("random",), gen(11)).take(10_000)
    c = RandomOffsets(0, 1 << 30, KB4, KB4, ("random",), gen(12)).take(10_000)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def _resident_bytes(a: np.ndarray) -> int:
    """Resident bytes of the pages holding ``a``'s data (mincore(2) over exactly its range; a mapping in
    /proc/self/smaps can hold other memory the kernel merged into it)."""
    import ctypes

    page = os.sysconf("SC_PAGE_SIZE")
    lo = a.__array_interface__["data"][0] // page * page
    n = (a.__array_interface__["data"][0] + a.nbytes - lo + page - 1) // page
    vec = (ctypes.c_ubyte * n)()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    if libc.mincore(ctypes.c_void_p(lo), ctypes.c_size_t(n * page), vec) != 0:
        raise OSError(ctypes.get_errno(), "mincore")
    return int(np.count_nonzero(np.frombuffer(vec, np.uint8) & 1)) * page


@pytest.mark.skipif(sys.platform != "linux", reason="mincore(2) of anonymous memory: Linux")
def test_random_map_of_a_large_drive_costs_memory_only_where_io_lands():
    """A 24 TB drive's random map is 732 MB of bits; 20,000 random 4 KiB IOs touch at most 20,000 of
    its 4 KiB pages (80 MB). With numpy's transparent huge pages each touch made a 2 MiB page resident
    and the whole map was resident after ~50,000 draws."""
    g = RandomOffsets(0, 24 * 10**12, 4096, 4096, ("random",), np.random.default_rng(1))
    for _ in range(20_000):
        g.next(0, 4096)
    assert g._bitmap.nbytes > 700 * 10**6
    assert _resident_bytes(g._bitmap) <= 20_000 * os.sysconf("SC_PAGE_SIZE") + 2 * 2**20

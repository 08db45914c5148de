"""Sample moments against analytic moments (in the manner of Ciw's distribution tests).

Every service/inter-arrival distribution of simulator.distributions, the engine's buffered draws, and
fio's random_distribution generators (workloads/offsets.py: random, zipf, pareto, normal, zoned,
zoned_abs). Fixed seeds; each tolerance is 4 standard errors of the sample's own estimate (the mean's
SE = s/sqrt(N); the variance's SE = sqrt((m4 - s^4)/N) from the sample's fourth central moment).

The analytic moments are computed here from each distribution's definition, not from the code under
test. fio hashes zipf/pareto/normal ranks onto blocks (rank * GOLDEN_RATIO_64 + offset, mod the number
of blocks); with a power-of-two number of blocks that map is a bijection, so the tests invert it and
check the moments of the rank itself.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import TypeAdapter

from simulator.distributions import Distribution
from simulator.engine import BufferedRandom
from simulator.workloads.offsets import RandomOffsets
from simulator.workloads.options import parse_random_distribution

N = 200_000
Z = 4.0


def check_moments(x: np.ndarray, mean: float, var: float) -> None:
    x = np.asarray(x, dtype=float)
    n = len(x)
    m = x.mean()
    d = x - m
    s2 = float(np.mean(d * d))
    m4 = float(np.mean(d**4))
    se_mean = math.sqrt(s2 / n)
    se_var = math.sqrt(max(m4 - s2 * s2, 0.0) / n)
    assert abs(m - mean) <= Z * se_mean + 1e-12 * abs(mean), f"mean {m:.6g} vs {mean:.6g} (SE {se_mean:.3g})"
    assert abs(s2 - var) <= Z * se_var + 1e-12 * abs(var), f"variance {s2:.6g} vs {var:.6g} (SE {se_var:.3g})"


# ------------------------------------------------------------------------- service-time distributions
_ADAPTER = TypeAdapter(Distribution)

#: config -> (analytic mean, analytic variance) from the textbook definitions, seconds
CASES = [
    ({"dist": "deterministic", "value": "2ms"}, 2e-3, 0.0),
    ({"dist": "exponential", "mean": "5ms"}, 5e-3, 25e-6),
    ({"dist": "uniform", "low": "1ms", "high": "4ms"}, 2.5e-3, (3e-3) ** 2 / 12),
    ({"dist": "lognormal", "mean": "5ms", "cv": 0.5}, 5e-3, (0.5 * 5e-3) ** 2),
    ({"dist": "lognormal", "mean": "1ms", "cv": 1.5}, 1e-3, (1.5e-3) ** 2),
    ({"dist": "erlang", "mean": "6ms", "k": 3}, 6e-3, 3 * (2e-3) ** 2),  # sum of 3 exponentials of mean 2 ms
    ({"dist": "erlang", "mean": "1ms", "k": 1}, 1e-3, 1e-6),
]


@pytest.mark.parametrize(("cfg", "mean", "var"), CASES, ids=lambda c: c["dist"] if isinstance(c, dict) else "")
def test_service_distribution_moments(cfg, mean, var) -> None:
    d = _ADAPTER.validate_python(cfg)
    assert d.mean == pytest.approx(mean, rel=1e-12)
    assert d.variance == pytest.approx(var, rel=1e-12, abs=1e-18)
    assert d.scv == pytest.approx(var / mean**2, rel=1e-12, abs=1e-15)
    rand = BufferedRandom(np.random.default_rng(20240601))
    x = np.fromiter((d.sample(rand) for _ in range(N)), dtype=float, count=N)
    assert x.min() >= 0.0
    if var == 0.0:
        assert np.all(x == mean)
    else:
        check_moments(x, mean, var)


def test_uniform_sample_stays_in_its_bounds() -> None:
    d = _ADAPTER.validate_python({"dist": "uniform", "low": "1ms", "high": "4ms"})
    rand = BufferedRandom(np.random.default_rng(3))
    x = np.array([d.sample(rand) for _ in range(20000)])
    assert x.min() >= 1e-3 and x.max() <= 4e-3


def test_buffered_random_draws() -> None:
    rand = BufferedRandom(np.random.default_rng(11), block=1000)  # several refills
    u = np.array([rand.random() for _ in range(N)])
    assert u.min() >= 0.0 and u.max() < 1.0
    check_moments(u, 0.5, 1 / 12)
    e = np.array([rand.exponential(3.0) for _ in range(N)])
    check_moments(e, 3.0, 9.0)
    w = np.array([rand.uniform(2.0, 5.0) for _ in range(N)])
    check_moments(w, 3.5, 9 / 12)


# ------------------------------------------------------------------------------- fio offset generators
ALIGN = 4096
GOLDEN_RATIO_64 = 0x61C8864680B583EB  # fio's __hash_u64 multiplier (Linux GOLDEN_RATIO_64)
_G_INV = pow(GOLDEN_RATIO_64, -1, 2**64)


def blocks(dist: str, n: int, seed: int, count: int = N) -> np.ndarray:
    r = RandomOffsets(0, n * ALIGN, ALIGN, ALIGN, parse_random_distribution(dist), np.random.default_rng(seed),
                      randommap=False)
    b = r.take(count)
    assert np.all(b % ALIGN == 0) and b.min() >= 0 and b.max() < n * ALIGN
    return b // ALIGN


def unhash(b: np.ndarray, n: int, rand_off: int) -> np.ndarray:
    """Rank v from block (v * GOLDEN_RATIO_64 + rand_off) mod n, n a power of two."""
    assert n & (n - 1) == 0
    with np.errstate(over="ignore"):
        x = (b.astype(np.uint64) - np.uint64(rand_off % n)) & np.uint64(n - 1)
        return ((x * np.uint64(_G_INV)) & np.uint64(n - 1)).astype(np.int64)


def moments_from_tail(tail: np.ndarray) -> tuple[float, float]:
    """Mean and variance of a non-negative integer variable from P(V >= k), k = 1, 2, ..."""
    k = np.arange(1, len(tail) + 1, dtype=float)
    m1 = float(tail.sum())
    m2 = float(((2 * k - 1) * tail).sum())
    return m1, m2 - m1 * m1


def test_uniform_blocks() -> None:
    n = 10_000
    b = blocks("random", n, 1)
    check_moments(b, (n - 1) / 2, (n * n - 1) / 12)


def zipf_tail(theta: float, n: int) -> np.ndarray:
    """P(rank - 1 >= k), k >= 1, for fio's zipf_next (Gray et al.'s approximate inverse CDF)."""
    zetan = float(np.sum(np.arange(1, n + 1, dtype=float) ** -theta))
    half = 0.5**theta
    zeta2 = 1.0 + half
    eta = (1.0 - (2.0 / n) ** (1.0 - theta)) / (1.0 - zeta2 / zetan)
    t0 = (1.0 + half) / zetan  # u below: rank 1 (u < 1/zetan) or rank 2
    k = np.arange(1, n + 1, dtype=float)
    # third branch: rank = 1 + floor(n * (eta*u - eta + 1)^(1/(1-theta))) >= k + 1  <=>  u >= t_k
    tk = 1.0 + ((k / n) ** (1.0 - theta) - 1.0) / eta
    tail = 1.0 - np.clip(np.maximum(t0, tk), 0.0, 1.0)
    tail[0] += min(t0, 1.0) - min(1.0 / zetan, 1.0)  # rank 2 from the second branch
    return tail


@pytest.mark.parametrize("theta", [0.6, 0.9, 1.2])
def test_zipf_rank_moments(theta: float) -> None:
    n = 1 << 14
    center = 0.25
    b = blocks(f"zipf:{theta}:{center}", n, 5)
    v = unhash(b, n, int(n * center))
    mean, var = moments_from_tail(zipf_tail(theta, n))
    check_moments(v, mean, var)
    # the hottest rank is drawn with probability 1/zetan(n)
    p1 = 1.0 / float(np.sum(np.arange(1, n + 1, dtype=float) ** -theta))
    f1 = float(np.mean(v == 0))
    assert abs(f1 - p1) <= Z * math.sqrt(p1 * (1 - p1) / len(v))


@pytest.mark.parametrize("h", [0.2, 0.5, 0.9])
def test_pareto_rank_moments(h: float) -> None:
    n = 1 << 14
    center = 0.5
    b = blocks(f"pareto:{h}:{center}", n, 9)
    v = unhash(b, n, int(n * center))
    p = math.log(h) / math.log(1.0 - h)  # v = floor((n-1) * u^p)
    j = np.arange(1, n, dtype=float)
    tail = 1.0 - (j / (n - 1)) ** (1.0 / p)  # P(v >= j)
    mean, var = moments_from_tail(tail)
    check_moments(v, mean, var)


@pytest.mark.parametrize("dev", [0.0, 10.0])
def test_normal_rank_moments(dev: float) -> None:
    n = 1 << 12
    b = blocks(f"normal:{dev}" if dev else "normal", n, 13)
    v = unhash(b, n, 0)
    # average of 12 uniform integers on [0, n], rounded up: mean n/2 + 5.5/12, variance ((n+1)^2-1)/144
    # (+ the rounding's 1/12 * 143/144); plus a jitter floor(sd*u) - sd//2 of width sd = ceil(n*dev/100)
    sd = min(math.ceil(n * dev / 100.0), n // 2) if dev else 0
    mean = n / 2 + 5.5 / 12 + ((sd - 1) / 2 - sd // 2 if sd else 0.0)
    var = ((n + 1) ** 2 - 1) / 144 + 143 / 1728 + ((sd * sd - 1) / 12 if sd else 0.0)
    check_moments(v, mean, var)


@pytest.mark.parametrize(("dist", "n"), [("zoned:60/10:30/20:10/70", 10_000), ("zoned_abs:50/4m:50/36m", 10_240)])
def test_zoned_moments(dist: str, n: int) -> None:
    b = blocks(dist, n, 17)
    zones = parse_random_distribution(dist)[1]
    start, m1, m2 = 0, 0.0, 0.0
    for acc, size in zones:
        length = n * size // 100 if dist.startswith("zoned:") else size // ALIGN
        zmean = start + (length - 1) / 2
        zvar = (length * length - 1) / 12
        m1 += acc / 100 * zmean
        m2 += acc / 100 * (zvar + zmean * zmean)
        # the share of IOs in each zone: binomial
        frac = float(np.mean((b >= start) & (b < start + length)))
        assert abs(frac - acc / 100) <= Z * math.sqrt(acc / 100 * (1 - acc / 100) / len(b)) + 1e-12
        start += length
    check_moments(b, m1, m2 - m1 * m1)

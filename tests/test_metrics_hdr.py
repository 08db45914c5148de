"""HDR histogram: layout against the reference (hdrh) implementation, percentiles against exact
order statistics, merge, and the standard encoding."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.metrics.hdr import DEFAULT_HIGHEST_NS, HdrHist, hdr_layout

PCTS = [0.0, 1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.99, 100.0]


def _exact_order_stat(sorted_vals: np.ndarray, p: float) -> int:
    """The smallest sample with at least p % of the samples <= it (rank ceil(pN/100), >= 1),
    computed in exact integer arithmetic (p has at most 2 decimals here)."""
    n = sorted_vals.size
    num = round(p * 100) * n  # p*N*100, exactly
    rank = max(-(-num // 10000), 1)
    return int(sorted_vals[rank - 1])


def test_layout_matches_reference_implementation():
    ours = hdr_layout(1, DEFAULT_HIGHEST_NS, 3)
    ref = HdrHistogram(1, DEFAULT_HIGHEST_NS, 3)
    assert ours.counts_len == ref.counts_len
    assert ours.bucket_count == ref.bucket_count
    assert ours.sub_bucket_count == ref.sub_bucket_count
    for sig in (1, 2, 4):
        assert hdr_layout(1, 10**9, sig).counts_len == HdrHistogram(1, 10**9, sig).counts_len


def test_record_many_counts_equal_reference():
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.integers(0, 5000, 3000), rng.lognormal(14, 2, 5000).astype(np.int64)])
    ours = HdrHist()
    ours.record_many(x)
    ref = HdrHistogram(1, DEFAULT_HIGHEST_NS, 3)
    for v in x:
        ref.record_value(int(v))
    assert np.array_equal(ours.counts, np.ctypeslib.as_array(ref.counts).astype(np.int64))
    assert ours.total_count == x.size
    assert ours.min_value == int(x.min()) and ours.max_value == int(x.max())
    assert ours.mean() == pytest.approx(ref.get_mean_value(), rel=1e-12)
    assert ours.stddev() == pytest.approx(ref.get_stddev(), rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 4000),
    scale=st.floats(1e2, 1e10),
    shape=st.sampled_from(["exp", "lognormal", "uniform", "bimodal"]),
)
def test_percentiles_within_resolution_of_exact(seed, n, scale, shape):
    rng = np.random.default_rng(seed)
    if shape == "exp":
        x = rng.exponential(scale, n)
    elif shape == "lognormal":
        x = scale * rng.lognormal(0, 1.5, n)
    elif shape == "uniform":
        x = rng.uniform(0, scale, n)
    else:
        x = np.where(rng.random(n) < 0.4, rng.normal(scale / 20, scale / 200, n), rng.exponential(scale, n))
    v = np.clip(np.rint(x), 0, DEFAULT_HIGHEST_NS // 2).astype(np.int64)
    h = HdrHist()
    h.record_many(v)
    s = np.sort(v)
    got = h.values_at_percentiles(PCTS)
    for p, g in zip(PCTS, got, strict=True):
        exact = _exact_order_stat(s, p) if p > 0 else int(s[0])
        # same bucket: the HDR value is that bucket's highest (p=0: lowest) equivalent value
        assert h.lowest_equivalent_value(int(g)) == h.lowest_equivalent_value(exact)
        # 3 significant digits: relative error below 1/1024
        assert abs(int(g) - exact) <= max(exact / 1024.0, 1.0)
        # numpy's inverted_cdf percentile is the same order statistic whenever pN/100 is not an
        # integer (at integers float rounding may move numpy one rank up)
        if 0 < p < 100 and (round(p * 100) * n) % 10000:
            ref = float(np.percentile(v, p, method="inverted_cdf"))
            assert abs(int(g) - ref) <= max(ref / 1024.0, 1.0)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n1=st.integers(0, 2000), n2=st.integers(0, 2000))
def test_merge_equals_recording_all(seed, n1, n2):
    rng = np.random.default_rng(seed)
    a = rng.lognormal(12, 2, n1).astype(np.int64)
    b = rng.lognormal(15, 1, n2).astype(np.int64)
    ha, hb, hall = HdrHist(), HdrHist(), HdrHist()
    ha.record_many(a)
    hb.record_many(b)
    hall.record_many(np.concatenate([a, b]))
    merged = ha.copy().merge(hb)
    assert merged == hall
    assert merged.total_count == n1 + n2
    assert merged.min_value == hall.min_value and merged.max_value == hall.max_value
    assert HdrHist.merged([ha, None, hb]) == hall


def test_merge_different_layouts_rebuckets():
    fine = HdrHist(1, 10**12, 3)
    coarse = HdrHist(1, 10**12, 2)
    vals = np.array([5, 1000, 123456, 98765432], dtype=np.int64)
    coarse.record_many(vals)
    fine.merge(coarse)
    assert fine.total_count == 4
    for v in vals:  # each value lands within the coarse histogram's resolution
        assert fine.count_at_or_below(int(v * 1.01) + 1) >= 1


def test_encoding_round_trip_and_reference_decoder():
    rng = np.random.default_rng(3)
    h = HdrHist()
    h.record_many(rng.lognormal(13, 1.2, 20000).astype(np.int64))
    blob = h.encode()
    assert isinstance(blob, str) and blob.isascii()
    back = HdrHist.decode(blob)
    assert back == h
    assert back.total_count == h.total_count
    ref = HdrHistogram.decode(blob.encode())  # the reference library reads what we wrote
    for p in (50.0, 99.0, 99.9):
        assert ref.get_value_at_percentile(p) == pytest.approx(h.value_at_percentile(p), rel=2e-3)
    assert ref.get_total_count() == h.total_count
    empty = HdrHist()
    assert HdrHist.decode(empty.encode()) == empty


def test_encoding_of_reference_histogram_decodes():
    ref = HdrHistogram(1, DEFAULT_HIGHEST_NS, 3)
    for v in (1, 2, 1000, 10**6, 10**9):
        ref.record_value(v, 3)
    h = HdrHist.decode(ref.encode())
    assert h.total_count == 15
    assert h.value_at_percentile(100) == ref.get_value_at_percentile(100)


def test_clamping_and_negative_values():
    h = HdrHist(1, 10**6, 3)
    h.record_many(np.array([-5, 0, 10**9], dtype=np.int64))
    assert h.total_count == 3
    assert h.n_clamped == 1
    assert h.counts[0] == 2  # -5 and 0
    assert h.value_at_percentile(100) >= 10**6 - 1


def test_float_input_is_rounded_and_empty_is_safe():
    h = HdrHist()
    assert h.value_at_percentile(50) == 0 and h.mean() == 0.0 and h.stddev() == 0.0
    h.record_many(np.array([1.4, 1.6, 2.6]))
    assert h.total_count == 3
    assert h.counts[1] == 1 and h.counts[2] == 1 and h.counts[3] == 1
    h.record(7.0, count=5)
    assert h.total_count == 8
    assert math.isclose(h.value_at_percentile(100), 7)

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from simulator.config.base import ConfigModel
from simulator.units import Bytes, Seconds, parse_bandwidth, parse_rpm, parse_size, parse_time


@pytest.mark.parametrize(
    "text,expected",
    [
        ("4k", 4096), ("4K", 4096), ("4KiB", 4096), ("4kib", 4096), ("1m", 1 << 20), ("1MiB", 1 << 20),
        ("1TB", 10**12), ("1GB", 10**9), ("900GB", 900 * 10**9), ("512", 512), (512, 512), ("1.5GiB", 3 << 29),
        ("8k", 8192), ("4kb", 4096),
    ],
)
def test_sizes(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [("100us", 1e-4), ("4ms", 4e-3), ("900s", 900.0), ("900", 900.0), (0.5, 0.5), ("15m", 900.0), ("2ns", 2e-9), ("1h", 3600.0)],
)
def test_times(text, expected):
    assert math.isclose(parse_time(text), expected)


def test_rpm_and_bandwidth():
    assert parse_rpm("7200rpm") == 7200
    assert parse_rpm("120rps") == 7200
    assert parse_bandwidth("10Gbit/s") == 1.25e9
    assert parse_bandwidth("6Gb/s") == 0.75e9
    assert parse_bandwidth("163MB/s") == 163e6
    assert parse_bandwidth("1GiB/s") == 1 << 30


@pytest.mark.parametrize("bad", ["4XB", "fast", "", "1e", "4 k b", None, True])
def test_bad_sizes(bad):
    with pytest.raises(ValueError):
        parse_size(bad)


@pytest.mark.parametrize("bad", ["4 parsecs", "ms", "", True, [1]])
def test_bad_times(bad):
    with pytest.raises(ValueError):
        parse_time(bad)


@given(st.integers(min_value=0, max_value=2**50))
def test_size_roundtrip_ints(n):
    assert parse_size(n) == n
    assert parse_size(str(n)) == n


@given(st.integers(min_value=1, max_value=10**6), st.sampled_from(["k", "KiB", "m", "MiB", "g"]))
def test_binary_suffixes(n, suffix):
    f = {"k": 1024, "KiB": 1024, "m": 1 << 20, "MiB": 1 << 20, "g": 1 << 30}[suffix]
    assert parse_size(f"{n}{suffix}") == n * f


class _M(ConfigModel):
    size: Bytes = 0
    t: Seconds = 0.0


def test_config_model_parses_units_and_is_frozen():
    m = _M(size="4KiB", t="100us")
    assert m.size == 4096 and math.isclose(m.t, 1e-4)
    with pytest.raises(ValidationError):
        m.size = 1  # frozen
    with pytest.raises(ValidationError):
        _M(size="4KiB", bogus=1)  # extra=forbid

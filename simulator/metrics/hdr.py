"""HDR-layout latency histogram (HdrHistogram's bucket layout, int64 counts, values in ns).

The layout is exactly HdrHistogram's (Gil Tene): ``bucket_count`` power-of-two buckets, each split
into ``sub_bucket_half_count`` linear sub-buckets, so every value is stored with a relative error
below ``1 / 2**sub_bucket_half_count_magnitude`` (< 0.1 % for 3 significant digits). Counts can be
exported to / imported from the standard compressed base64 encoding through the ``hdrhistogram``
PyPI package (``hdrh``), so histograms written by the simulator open in HdrHistogram tools.

Recording in bulk is numba-compiled (:meth:`HdrHist.record_many`); everything else is vectorised
numpy over the (few tens of thousands of) buckets.

Conventions (HdrHistogram Java):

* ``value_at_percentile(p)``: the count target is ``ceil(p/100 * N)`` (at least 1), i.e. the
  smallest recorded value with at least ``p`` % of the samples at or below it (numpy's
  ``inverted_cdf`` order statistic, and the rule fio uses for its own percentiles); the value
  returned is the *highest equivalent value* of the bucket that holds it.
* ``mean()`` / ``stddev()``: over bucket midpoints ("median equivalent values"), population form.
  Exact sample moments are kept by :class:`simulator.metrics.stats.JobStats`, not here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit

__all__ = [
    "DEFAULT_HIGHEST_NS",
    "DEFAULT_LOWEST_NS",
    "DEFAULT_SIGNIFICANT_DIGITS",
    "HdrHist",
    "HdrLayout",
    "hdr_layout",
]

DEFAULT_LOWEST_NS = 1
DEFAULT_HIGHEST_NS = 3_600_000_000_000  # one hour in ns
DEFAULT_SIGNIFICANT_DIGITS = 3


@dataclass(frozen=True)
class HdrLayout:
    """Bucket layout constants of an HdrHistogram (same formulas as the reference implementations)."""

    lowest: int
    highest: int
    significant_digits: int
    unit_magnitude: int
    sub_bucket_half_count_magnitude: int
    sub_bucket_count: int
    sub_bucket_half_count: int
    sub_bucket_mask: int
    bucket_count: int
    counts_len: int

    @property
    def max_index(self) -> int:
        return self.counts_len - 1


@lru_cache(maxsize=32)
def hdr_layout(
    lowest: int = DEFAULT_LOWEST_NS,
    highest: int = DEFAULT_HIGHEST_NS,
    significant_digits: int = DEFAULT_SIGNIFICANT_DIGITS,
) -> HdrLayout:
    """The layout for ``(lowest, highest, significant_digits)``; pure function, cached."""
    if lowest < 1:
        raise ValueError("lowest trackable value must be >= 1")
    if highest < 2 * lowest:
        raise ValueError("highest trackable value must be >= 2 * lowest")
    if not 1 <= significant_digits <= 5:
        raise ValueError("significant digits must be 1..5")
    unit_magnitude = int(math.floor(math.log2(lowest)))
    largest_single_unit = 2 * 10**significant_digits
    sub_bucket_count_magnitude = int(math.ceil(math.log2(largest_single_unit)))
    half_mag = max(sub_bucket_count_magnitude - 1, 0)
    sub_bucket_count = 1 << (half_mag + 1)
    half = sub_bucket_count // 2
    mask = (sub_bucket_count - 1) << unit_magnitude
    smallest_untrackable = sub_bucket_count << unit_magnitude
    buckets = 1
    while smallest_untrackable <= highest:
        smallest_untrackable <<= 1
        buckets += 1
    counts_len = (buckets + 1) * half
    return HdrLayout(
        lowest=int(lowest),
        highest=int(highest),
        significant_digits=int(significant_digits),
        unit_magnitude=unit_magnitude,
        sub_bucket_half_count_magnitude=half_mag,
        sub_bucket_count=sub_bucket_count,
        sub_bucket_half_count=half,
        sub_bucket_mask=mask,
        bucket_count=buckets,
        counts_len=counts_len,
    )


@lru_cache(maxsize=32)
def _bounds(layout: HdrLayout) -> tuple[np.ndarray, np.ndarray]:
    """(lowest equivalent value, bucket width) for every counts index, int64 arrays (read-only)."""
    idx = np.arange(layout.counts_len, dtype=np.int64)
    half_mag = layout.sub_bucket_half_count_magnitude
    half = layout.sub_bucket_half_count
    bucket = (idx >> half_mag) - 1
    sub = (idx & (half - 1)) + half
    first = bucket < 0
    sub[first] -= half
    bucket[first] = 0
    lo = sub << (bucket + layout.unit_magnitude)
    width = np.left_shift(np.int64(1), bucket + layout.unit_magnitude)
    lo.setflags(write=False)
    width.setflags(write=False)
    return lo, width


# ---------------------------------------------------------------------------------------------
# numba kernels


@njit(cache=True, inline="always")
def _bit_length(x: int) -> int:
    n = 0
    if x >= 4294967296:
        x >>= 32
        n += 32
    if x >= 65536:
        x >>= 16
        n += 16
    if x >= 256:
        x >>= 8
        n += 8
    if x >= 16:
        x >>= 4
        n += 4
    if x >= 4:
        x >>= 2
        n += 2
    if x >= 2:
        x >>= 1
        n += 1
    return n + x


@njit(cache=True, inline="always")
def hdr_index(v: int, unit_mag: int, half_mag: int, sub_mask: int, max_index: int) -> int:
    """Counts index of value ``v`` (int >= 0); values above the range go to the last index."""
    if v < 0:
        v = 0
    bucket = _bit_length(v | sub_mask) - unit_mag - (half_mag + 1)
    sub = v >> (bucket + unit_mag)
    i = ((bucket + 1) << half_mag) + sub - (1 << half_mag)
    if i > max_index:
        i = max_index
    return i


@njit(cache=True)
def _record_many(values, counts, unit_mag, half_mag, sub_mask, max_index, limit):
    n_clamped = 0
    vmin = np.int64(9223372036854775807)
    vmax = np.int64(-1)
    for k in range(values.shape[0]):
        v = np.int64(values[k])
        if v < 0:
            v = 0
        if v >= limit:
            n_clamped += 1
        i = hdr_index(v, unit_mag, half_mag, sub_mask, max_index)
        counts[i] += 1
        if v < vmin:
            vmin = v
        if v > vmax:
            vmax = v
    return vmin, vmax, n_clamped


# ---------------------------------------------------------------------------------------------


class HdrHist:
    """An HDR-layout histogram of non-negative integer values (ns), int64 counts.

    ``min_value``/``max_value`` are the exact extreme values recorded (or, after decoding, the
    bucket-equivalent extremes). Values above ``highest`` are counted in the last bucket and
    tallied in ``n_clamped``; negative values are recorded as 0.
    """

    __slots__ = ("counts", "layout", "max_value", "min_value", "n_clamped", "total_count")

    def __init__(
        self,
        lowest: int = DEFAULT_LOWEST_NS,
        highest: int = DEFAULT_HIGHEST_NS,
        significant_digits: int = DEFAULT_SIGNIFICANT_DIGITS,
        *,
        layout: HdrLayout | None = None,
    ):
        self.layout = (
            layout if layout is not None else hdr_layout(int(lowest), int(highest), int(significant_digits))
        )
        self.counts = np.zeros(self.layout.counts_len, dtype=np.int64)
        self.total_count = 0
        self.min_value: int | None = None
        self.max_value: int | None = None
        self.n_clamped = 0

    # -- recording -----------------------------------------------------------------------------

    def record(self, value: float, count: int = 1) -> None:
        """Record one value ``count`` times (slow path; use :meth:`record_many` in bulk)."""
        if count <= 0:
            return
        v = max(int(round(value)), 0)
        i = self.index_of(v)
        if v >= self.limit:
            self.n_clamped += count
        self.counts[i] += count
        self.total_count += int(count)
        self._update_minmax(v, v)

    def record_many(self, values_ns: np.ndarray) -> None:
        """Record every value of an integer (or float, rounded) ns array; numba-compiled."""
        a = np.asarray(values_ns)
        if a.size == 0:
            return
        if a.dtype.kind == "f":
            a = np.rint(a).astype(np.int64)
        elif a.dtype != np.int64:
            a = a.astype(np.int64)
        a = np.ascontiguousarray(a.ravel())
        L = self.layout
        vmin, vmax, nc = _record_many(
            a,
            self.counts,
            L.unit_magnitude,
            L.sub_bucket_half_count_magnitude,
            L.sub_bucket_mask,
            L.max_index,
            self.limit,
        )
        self.total_count += int(a.size)
        self.n_clamped += int(nc)
        self._update_minmax(int(vmin), int(vmax))

    def add_counts(self, counts: np.ndarray, vmin: int | None = None, vmax: int | None = None) -> None:
        """Add a counts array of the same layout (e.g. filled by another kernel)."""
        c = np.asarray(counts, dtype=np.int64)
        if c.shape != self.counts.shape:
            raise ValueError("counts array does not match this histogram's layout")
        self.counts += c
        n = int(c.sum())
        self.total_count += n
        if n:
            nz = np.flatnonzero(c)
            lo, width = _bounds(self.layout)
            if vmin is None:
                vmin = int(lo[nz[0]])
            if vmax is None:
                vmax = int(lo[nz[-1]] + width[nz[-1]] - 1)
            self._update_minmax(int(vmin), int(vmax))

    def _update_minmax(self, vmin: int, vmax: int) -> None:
        if self.min_value is None or vmin < self.min_value:
            self.min_value = vmin
        if self.max_value is None or vmax > self.max_value:
            self.max_value = vmax

    # -- layout helpers ------------------------------------------------------------------------

    @property
    def limit(self) -> int:
        """Smallest value that no longer fits (values >= limit are clamped into the last bucket)."""
        lo, width = _bounds(self.layout)
        return int(lo[-1] + width[-1])

    def index_of(self, value: int) -> int:
        L = self.layout
        return int(
            hdr_index(
                int(value),
                L.unit_magnitude,
                L.sub_bucket_half_count_magnitude,
                L.sub_bucket_mask,
                L.max_index,
            )
        )

    def lowest_equivalent_value(self, value: int) -> int:
        lo, _ = _bounds(self.layout)
        return int(lo[self.index_of(value)])

    def highest_equivalent_value(self, value: int) -> int:
        lo, width = _bounds(self.layout)
        i = self.index_of(value)
        return int(lo[i] + width[i] - 1)

    def median_equivalent_value(self, value: int) -> int:
        lo, width = _bounds(self.layout)
        i = self.index_of(value)
        return int(lo[i] + (width[i] >> 1))

    def bucket_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(lowest equivalent value, width) per counts index (read-only int64 arrays)."""
        return _bounds(self.layout)

    # -- queries -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self.total_count

    def values_at_percentiles(self, percentiles) -> np.ndarray:
        """Vectorised :meth:`value_at_percentile` (percentiles in 0..100); int64 ns array."""
        p = np.clip(np.atleast_1d(np.asarray(percentiles, dtype=np.float64)), 0.0, 100.0)
        out = np.zeros(p.shape, dtype=np.int64)
        if self.total_count == 0:
            return out
        cum = np.cumsum(self.counts)
        total = int(cum[-1])
        pp = np.nextafter(p, -np.inf).clip(0.0, 100.0)
        target = np.maximum(np.ceil(pp * total / 100.0), 1).astype(np.int64)
        idx = np.searchsorted(cum, target, side="left")
        idx = np.minimum(idx, self.layout.max_index)
        lo, width = _bounds(self.layout)
        out = np.where(p > 0, lo[idx] + width[idx] - 1, lo[idx])
        return out.astype(np.int64)

    def value_at_percentile(self, percentile: float) -> int:
        return int(self.values_at_percentiles([percentile])[0])

    def count_at_or_below(self, value: int) -> int:
        """Number of recorded values in buckets up to and including the one holding ``value``."""
        return int(self.counts[: self.index_of(value) + 1].sum())

    def _mid_values(self) -> tuple[np.ndarray, np.ndarray]:
        nz = np.flatnonzero(self.counts)
        lo, width = _bounds(self.layout)
        return (lo[nz] + (width[nz] >> 1)).astype(np.float64), self.counts[nz].astype(np.float64)

    def mean(self) -> float:
        if self.total_count == 0:
            return 0.0
        v, c = self._mid_values()
        return float(np.dot(v, c) / c.sum())

    def stddev(self) -> float:
        if self.total_count == 0:
            return 0.0
        v, c = self._mid_values()
        m = float(np.dot(v, c) / c.sum())
        return float(math.sqrt(np.dot((v - m) ** 2, c) / c.sum()))

    def distribution(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Non-empty buckets: (lowest equivalent value, width, count), ascending, for CDFs/plots."""
        nz = np.flatnonzero(self.counts)
        lo, width = _bounds(self.layout)
        return lo[nz].copy(), width[nz].copy(), self.counts[nz].copy()

    # -- combining -----------------------------------------------------------------------------

    def copy(self) -> HdrHist:
        h = HdrHist(layout=self.layout)
        h.counts = self.counts.copy()
        h.total_count = self.total_count
        h.min_value = self.min_value
        h.max_value = self.max_value
        h.n_clamped = self.n_clamped
        return h

    def merge(self, other: HdrHist) -> HdrHist:
        """Add ``other`` into this histogram (in place; returns self). Exact for equal layouts."""
        if other.total_count == 0:
            return self
        if other.layout == self.layout:
            self.counts += other.counts
        else:
            lo, width = _bounds(other.layout)
            nz = np.flatnonzero(other.counts)
            mine = np.fromiter(
                (self.index_of(int(v)) for v in lo[nz] + (width[nz] >> 1)), dtype=np.int64, count=nz.size
            )
            np.add.at(self.counts, mine, other.counts[nz])
        self.total_count += other.total_count
        self.n_clamped += other.n_clamped
        if other.min_value is not None:
            self._update_minmax(other.min_value, other.max_value)  # type: ignore[arg-type]
        return self

    def __iadd__(self, other: HdrHist) -> HdrHist:
        return self.merge(other)

    @staticmethod
    def merged(hists) -> HdrHist | None:
        hists = [h for h in hists if h is not None]
        if not hists:
            return None
        out = hists[0].copy()
        for h in hists[1:]:
            out.merge(h)
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HdrHist):
            return NotImplemented
        return self.layout == other.layout and np.array_equal(self.counts, other.counts)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"HdrHist(n={self.total_count}, min={self.min_value}, max={self.max_value}, "
            f"sig={self.layout.significant_digits}, highest={self.layout.highest})"
        )

    # -- standard encoding ---------------------------------------------------------------------

    def to_hdrh(self):
        """An ``hdrh.histogram.HdrHistogram`` with the same counts."""
        from hdrh.histogram import HdrHistogram

        L = self.layout
        h = HdrHistogram(L.lowest, L.highest, L.significant_digits)
        if h.counts_len != L.counts_len:  # pragma: no cover - formulas are the same
            raise RuntimeError("hdrh layout differs from ours")
        view = np.ctypeslib.as_array(h.counts)
        view[:] = self.counts.astype(np.uint64)
        h.total_count = int(self.total_count)
        if self.total_count:
            nz = np.flatnonzero(self.counts)
            lo, width = _bounds(L)
            h.min_value = int(lo[nz[0]])
            h.max_value = int(lo[nz[-1]] + width[nz[-1]] - 1)
        return h

    def encode(self) -> str:
        """The standard compressed, base64 HdrHistogram encoding (V2 payload) as ASCII text."""
        return self.to_hdrh().encode().decode("ascii")

    @classmethod
    def from_hdrh(cls, h) -> HdrHist:
        out = cls(int(h.lowest_trackable_value), int(h.highest_trackable_value), int(h.significant_figures))
        counts = np.ctypeslib.as_array(h.counts).astype(np.int64)
        n = min(counts.size, out.counts.size)
        out.add_counts(np.pad(counts[:n], (0, out.counts.size - n)))
        return out

    @classmethod
    def decode(cls, encoded: str | bytes) -> HdrHist:
        """Inverse of :meth:`encode` (any valid HdrHistogram V2 base64 blob)."""
        from hdrh.histogram import HdrHistogram

        if isinstance(encoded, str):
            encoded = encoded.encode("ascii")
        return cls.from_hdrh(HdrHistogram.decode(encoded))

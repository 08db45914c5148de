"""Per-job statistics in fio's shape: the metrics layer's one import point.

The code lives in three modules along its seams:

* :mod:`simulator.metrics.results` - the result types (:class:`JobResult`, :class:`DirResult`,
  :class:`LatStats`, ...), fio's output constants and the batch-means CIs of a result;
* :mod:`simulator.metrics.jobstats` - :class:`JobStats`, the collector the workload runner feeds
  once per completed IO (the hot path and its numba kernel);
* :mod:`simulator.metrics.merge` - :func:`merge` (fio's group_reporting; runs of one point).
"""

from simulator.metrics.jobstats import JobStats
from simulator.metrics.merge import merge
from simulator.metrics.results import (
    CONFIDENCE,
    DDIR_NAMES,
    DEFAULT_BATCHES,
    DEFAULT_PERCENTILES,
    FLUSH_SAMPLES,
    LAT_BUCKET_KEYS,
    LAT_KINDS,
    BatchData,
    DirResult,
    JobResult,
    LatStats,
    SampleSeries,
    SampleStats,
    fio_bool,
    percentile_key,
    percentile_list_of,
)

__all__ = [
    "CONFIDENCE",
    "DDIR_NAMES",
    "DEFAULT_BATCHES",
    "DEFAULT_PERCENTILES",
    "FLUSH_SAMPLES",
    "LAT_BUCKET_KEYS",
    "LAT_KINDS",
    "BatchData",
    "DirResult",
    "JobResult",
    "JobStats",
    "LatStats",
    "SampleSeries",
    "SampleStats",
    "fio_bool",
    "merge",
    "percentile_key",
    "percentile_list_of",
]

"""Metrics: HDR histograms, per-job statistics in fio's shape, confidence intervals, fio JSON
writer, summaries and the simulated-vs-measured comparison. Plots live in
``simulator.metrics.plots`` (imported on demand: it pulls in matplotlib)."""

from simulator.metrics.ci import CI, batch_means, ratio_batch_means, t_interval
from simulator.metrics.compare import compare, compare_jobs
from simulator.metrics.fiojson import to_fio_json
from simulator.metrics.hdr import HdrHist, hdr_layout
from simulator.metrics.stats import DirResult, JobResult, JobStats, LatStats, merge
from simulator.metrics.summary import combine_replications, summary_row

__all__ = [
    "CI",
    "DirResult",
    "HdrHist",
    "JobResult",
    "JobStats",
    "LatStats",
    "batch_means",
    "combine_replications",
    "compare",
    "compare_jobs",
    "hdr_layout",
    "merge",
    "ratio_batch_means",
    "summary_row",
    "t_interval",
    "to_fio_json",
]

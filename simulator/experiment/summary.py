"""Per-point results of an experiment: the metrics of each point averaged over its replications,
with 95% confidence-interval half-widths."""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from typing import Any

from simulator.metrics.summary import combine_replications

__all__ = ["DIRS", "PointSummary", "combine", "metric_names", "point_summaries"]

DIRS = ("read", "write", "trim")


@dataclass
class PointSummary:
    index: int
    labels: dict[str, Any]
    values: dict[str, float] = field(default_factory=dict)  # metric -> mean over replications
    ci: dict[str, float] = field(default_factory=dict)  # metric -> 95% half-width
    replications: int = 1
    docs: list[dict[str, Any]] = field(default_factory=list)

    def get(self, metric: str) -> float | None:
        v = self.values.get(metric)
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


def combine(rows: list[dict[str, Any]]) -> tuple[dict[str, float], dict[str, float]]:
    """Mean of each metric over replications and its 95% CI half-width (Student-t over
    replications with >= 2 of them, else the run's own batch-means half-width)."""
    row = combine_replications(rows)
    values: dict[str, float] = {}
    ci: dict[str, float] = {}
    for k, v in row.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            continue
        if k.endswith("_ci"):
            ci[k[:-3]] = float(v)
        elif k != "replications":
            values[k] = float(v)
    return values, ci


def point_summaries(run: Any) -> list[PointSummary]:
    """One summary per point that has runs (an :class:`~simulator.experiment.runner.ExperimentRun`)."""
    out = []
    by = run.by_point()
    for p in run.experiment.points:
        outs = by.get(p.index, [])
        if not outs:
            continue
        values, ci = combine([o.summary for o in outs])
        out.append(PointSummary(p.index, dict(p.labels), values, ci, len(outs), [o.doc for o in outs]))
    return out


def metric_names(points: list[PointSummary], wanted: list[str]) -> list[str]:
    """Expand metric names: 'iops' -> read.iops/write.iops (directions present); a dotted name is
    taken as is; shell wildcards ('dev.*.iops') match the available keys."""
    available: list[str] = []
    for p in points:
        available += [k for k in p.values if k not in available]
    names = []
    for m in wanted:
        if any(ch in m for ch in "*?["):
            names += [k for k in available if fnmatch.fnmatchcase(k, m) and k not in names]
        elif m.split(".")[0] in (*DIRS, "dev", "sync", "ceph"):
            if m in available and m not in names:
                names.append(m)
        else:
            for d in DIRS:
                k = f"{d}.{m}"
                if k in available and k not in names:
                    names.append(k)
    return names

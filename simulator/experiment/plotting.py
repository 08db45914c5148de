"""Plots of an experiment: metric vs an axis (IOPS vs queue depth), HDR percentile curves, CDFs.

This module only selects what to draw (which points, which reference rows, which colours); the
drawing is :mod:`simulator.metrics.plots`, the project's one plotting stack (Agg figures without
pyplot state; HdrHistogram's percentile axis). Simulated series are lines (with 95% CI error bars);
reference figures are markers of the same colour.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

from matplotlib import rcParams

from simulator.experiment.references import norm as _norm
from simulator.experiment.references import reference_rows
from simulator.experiment.summary import DIRS, PointSummary
from simulator.metrics.plots import PercentileCurve, Series, plot_cdf, plot_iops_vs_qd, plot_percentiles

_PCT = re.compile(r"^(read|write|trim)\.p([0-9.]+)_ms$")


def _series_key(labels: dict[str, Any], exclude: set[str]) -> tuple:
    return tuple((k, v) for k, v in labels.items() if k not in exclude)


def _series_name(key: tuple) -> str:
    return ", ".join(f"{v}" for _, v in key) or "sim"


def _x_value(v: Any) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _colors():
    return itertools.cycle(rcParams["axes.prop_cycle"].by_key()["color"])


def _reference_rows(run: Any) -> list[tuple[dict[str, str], dict[str, str], dict[str, str]]]:
    """(column->axis, column->metric, row) of every reference row (filtered, unpivoted)."""
    rows = []
    for ref in run.experiment.spec.reference:
        table, match, metrics = reference_rows(ref, run.experiment.path)
        rows += [(match, metrics, r) for r in table]
    return rows


def _ref_points(run: Any, metric: str, key: tuple, x_axis: str) -> list[tuple[float, float]]:
    pts = []
    for match, metrics, r in _reference_rows(run):
        cols = [c for c, m in metrics.items() if m == metric]
        if not cols or not (r.get(cols[0]) or "").strip():
            continue
        axis_vals = {axis: r.get(col) for col, axis in match.items()}
        if any(_norm(axis_vals.get(k)) != _norm(v) for k, v in key if k in axis_vals):
            continue
        x = _x_value(axis_vals.get(x_axis))
        if x is not None:
            pts.append((x, float(r[cols[0]])))
    return sorted(pts)


def _plot_vs_x(run: Any, points: list[PointSummary], spec: Any, out: Path, n: int) -> list[Path]:
    x_axis = spec.x
    metrics = [f"{d}.{spec.metric}" for d in DIRS if any(p.get(f"{d}.{spec.metric}") is not None for p in points)]
    if spec.metric.count(".") and spec.metric.split(".")[0] in DIRS:
        metrics = [spec.metric]
    written = []
    for metric in metrics:
        groups: dict[tuple, list[PointSummary]] = {}
        for p in points:
            groups.setdefault(_series_key(p.labels, {x_axis}), []).append(p)
        sims, measured = [], []
        colors = _colors()
        for key, ps in groups.items():
            xy = sorted((x, p.get(metric), p.ci.get(metric, 0.0)) for p in ps
                        if (x := _x_value(p.labels.get(x_axis))) is not None and p.get(metric) is not None)
            if not xy:
                continue
            c = next(colors)
            sims.append(Series(f"sim {_series_name(key)}", [a for a, _, _ in xy], [b for _, b, _ in xy],
                               [e for _, _, e in xy], color=c))
            refs = _ref_points(run, metric, key, x_axis)
            if refs:
                measured.append(Series(f"measured {_series_name(key)}", [a for a, _ in refs], [b for _, b in refs], color=c))
        path = out / f"plot{n:02d}_{metric.replace('.', '_')}_vs_{x_axis}.png"
        written.append(plot_iops_vs_qd(sims, path, measured=measured, title=spec.title or f"{run.experiment.name}: {metric} vs {x_axis}",
                                       ylabel=metric, xlabel=x_axis, logx=spec.log_x))
    return written


def _percentiles(doc: dict[str, Any], d: str) -> dict[float, float]:
    """Percentile -> latency (ns) of direction ``d`` of a run document: the dense simulated list if
    present, else fio's."""
    for job in doc.get("jobs", []):
        sec = job.get(d) or {}
        if not sec.get("total_ios"):
            continue
        dense = (doc.get("sim") or {}).get("hdr_percentiles", {}).get(d)
        src = dense or (sec.get("clat_ns") or {}).get("percentile") or {}
        return {float(k): float(v) for k, v in src.items()}
    return {}


def _plot_hdr(run: Any, points: list[PointSummary], spec: Any, out: Path, n: int, cdf: bool) -> list[Path]:
    at = spec.at or {}
    combos = list(itertools.product(*[[(k, v) for v in vals] for k, vals in at.items()])) or [()]
    written = []
    for combo in combos:
        sel = [p for p in points if all(_norm(p.labels.get(k)) == _norm(v) for k, v in combo)]
        if not sel:
            continue
        items: list[tuple] = []
        colors = _colors()
        for p in sel:
            key = _series_key(p.labels, {k for k, _ in combo})
            for d in DIRS:
                pts = _percentiles(p.docs[0], d) if p.docs else {}
                if not pts:
                    continue
                c = next(colors)
                items.append((f"sim {_series_name(key)} {d}", PercentileCurve(pts), c))
                ref: dict[float, float] = {}
                for match, metrics, r in _reference_rows(run):
                    axis_vals = {axis: r.get(col) for col, axis in match.items()}
                    if any(_norm(axis_vals.get(k)) != _norm(v) for k, v in (*key, *combo) if k in axis_vals):
                        continue
                    for col in r:  # every percentile column of the table, mapped or not
                        m = _PCT.match(metrics.get(col, col) or "")
                        if m and m.group(1) == d and (r.get(col) or "").strip():
                            ref[float(m.group(2))] = float(r[col]) * 1e6  # ms -> ns
                if ref:
                    items.append((f"measured {_series_name(key)} {d}", ref, c))
        tag = "_".join(f"{k}{v}" for k, v in combo) or "all"
        title = spec.title or f"{run.experiment.name}: {'CDF' if cdf else 'latency by percentile'} {tag}"
        path = out / f"plot{n:02d}_{'cdf' if cdf else 'hdr'}_{tag}.png"
        written.append(plot_cdf(items, path, title=title) if cdf else plot_percentiles(items, path, title=title))
    return written


def _where(points: list[PointSummary], where: dict[str, Any]) -> list[PointSummary]:
    def ok(p: PointSummary) -> bool:
        for axis, want in where.items():
            opts = want if isinstance(want, list) else [want]
            if _norm(p.labels.get(axis)) not in {_norm(o) for o in opts}:
                return False
        return True

    return [p for p in points if ok(p)]


def make_plots(run: Any, all_points: list[PointSummary]) -> list[Path]:
    out = run.out_dir
    if out is None:
        return []
    written: list[Path] = []
    for n, spec in enumerate(run.experiment.spec.report.plots):
        points = _where(all_points, spec.where)
        if spec.kind in ("iops_vs_x", "metric_vs_x"):
            written += _plot_vs_x(run, points, spec, out, n)
        elif spec.kind in ("hdr", "cdf"):
            written += _plot_hdr(run, points, spec, out, n, cdf=spec.kind == "cdf")
    return written

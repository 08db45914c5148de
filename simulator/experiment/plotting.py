"""Plots of an experiment: metric vs an axis (IOPS vs queue depth), HDR percentile curves, CDFs.

Drawing goes through :mod:`simulator.metrics.plots` (one plotting stack: Agg figures without
pyplot state, the HdrHistogram percentile axis); this module only selects what to draw.

Simulated series are lines (with 95% CI error bars); reference figures are markers of the same
colour. The HDR plot uses HdrHistogram's convention: x = percentile on a 1/(1-p) log scale up to
99.99, y = latency on a log scale.
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
from simulator.metrics.plots import hdr_axes, new_figure, save_figure

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


def _reference_rows(run: Any) -> list[tuple[Any, dict[str, str]]]:
    """(ref view, row) pairs; the view carries the effective column->axis and column->metric maps."""
    rows = []
    for ref in run.experiment.spec.reference:
        table, match, metrics = reference_rows(ref, run.experiment.path)
        view = _RefView(match, metrics)
        rows += [(view, r) for r in table]
    return rows


class _RefView:
    def __init__(self, match: dict[str, str], metrics: dict[str, str]):
        self.match = match
        self.metrics = metrics


def _ref_points(run: Any, metric: str, key: tuple, x_axis: str | None) -> list[tuple[float, float]]:
    pts = []
    for ref, r in _reference_rows(run):
        cols = [c for c, m in ref.metrics.items() if m == metric]
        if not cols or not (r.get(cols[0]) or "").strip():
            continue
        axis_vals = {axis: r.get(col) for col, axis in ref.match.items()}
        if any(_norm(axis_vals.get(k)) != _norm(v) for k, v in key if k in axis_vals):
            continue
        if x_axis is not None:
            x = _x_value(axis_vals.get(x_axis))
            if x is None:
                continue
            pts.append((x, float(r[cols[0]])))
    return sorted(pts)


def _plot_vs_x(run: Any, points: list[PointSummary], spec: Any, out: Path, n: int) -> list[Path]:
    x_axis = spec.x
    metrics = [f"{d}.{spec.metric}" for d in DIRS if any(p.get(f"{d}.{spec.metric}") is not None for p in points)]
    if spec.metric.count(".") and spec.metric.split(".")[0] in DIRS:
        metrics = [spec.metric]
    written = []
    for metric in metrics:
        fig, ax = new_figure()
        groups: dict[tuple, list[PointSummary]] = {}
        for p in points:
            groups.setdefault(_series_key(p.labels, {x_axis}), []).append(p)
        colors = itertools.cycle(rcParams["axes.prop_cycle"].by_key()["color"])
        for key, ps in groups.items():
            xs, ys, es = [], [], []
            for p in ps:
                x, y = _x_value(p.labels.get(x_axis)), p.get(metric)
                if x is None or y is None:
                    continue
                xs.append(x)
                ys.append(y)
                es.append(p.ci.get(metric, 0.0))
            if not xs:
                continue
            order = sorted(range(len(xs)), key=lambda i: xs[i])
            c = next(colors)
            ax.errorbar([xs[i] for i in order], [ys[i] for i in order], yerr=[es[i] for i in order], color=c,
                        marker=".", capsize=2, label=f"sim {_series_name(key)}")
            refs = _ref_points(run, metric, key, x_axis)
            if refs:
                ax.plot([a for a, _ in refs], [b for _, b in refs], "o", mfc="none", color=c, ms=7,
                        label=f"measured {_series_name(key)}")
        if spec.log_x:
            ax.set_xscale("log", base=2)
        ax.set_xlabel(x_axis)
        ax.set_ylabel(metric)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(spec.title or f"{run.experiment.name}: {metric} vs {x_axis}")
        ax.legend(fontsize=7)
        path = out / f"plot{n:02d}_{metric.replace('.', '_')}_vs_{x_axis}.png"
        written.append(save_figure(fig, path))
    return written


def _percentiles(doc: dict[str, Any], d: str) -> list[tuple[float, float]]:
    """(percentile, latency ms) from a fio document: the dense simulated list if present, else fio's."""
    pts: dict[float, float] = {}
    for job in doc.get("jobs", []):
        sec = job.get(d) or {}
        if not sec.get("total_ios"):
            continue
        dense = (doc.get("sim") or {}).get("hdr_percentiles", {}).get(d)
        src = dense or (sec.get("clat_ns") or {}).get("percentile") or {}
        for k, v in src.items():
            pts[float(k)] = float(v) / 1e6
        break
    return sorted(pts.items())


def _plot_hdr(run: Any, points: list[PointSummary], spec: Any, out: Path, n: int, cdf: bool) -> list[Path]:
    at = spec.at or {}
    combos = list(itertools.product(*[[(k, v) for v in vals] for k, vals in at.items()])) or [()]
    written = []
    for combo in combos:
        sel = [p for p in points if all(_norm(p.labels.get(k)) == _norm(v) for k, v in combo)]
        if not sel:
            continue
        fig, ax = new_figure()
        colors = itertools.cycle(rcParams["axes.prop_cycle"].by_key()["color"])
        for p in sel:
            key = _series_key(p.labels, {k for k, _ in combo})
            for d in DIRS:
                pts = _percentiles(p.docs[0], d) if p.docs else []
                if not pts:
                    continue
                c = next(colors)
                pcts = [q for q, _ in pts if q < 100]
                lat = [v for q, v in pts if q < 100]
                if cdf:
                    ax.plot(lat, [q / 100 for q in pcts], color=c, label=f"sim {_series_name(key)} {d}")
                else:
                    ax.plot([1 / (1 - q / 100) for q in pcts], lat, color=c, label=f"sim {_series_name(key)} {d}")
                ref = []
                for ref_spec, r in _reference_rows(run):
                    axis_vals = {axis: r.get(col) for col, axis in ref_spec.match.items()}
                    if any(_norm(axis_vals.get(k)) != _norm(v) for k, v in (*key, *combo) if k in axis_vals):
                        continue
                    for col in r:  # every percentile column of the table, mapped or not
                        m = _PCT.match(ref_spec.metrics.get(col, col) or "")
                        if m and m.group(1) == d and (r.get(col) or "").strip():
                            ref.append((float(m.group(2)), float(r[col])))
                if ref:
                    ref.sort()
                    if cdf:
                        ax.plot([v for _, v in ref], [q / 100 for q, _ in ref], "o", mfc="none", color=c, label=f"measured {_series_name(key)} {d}")
                    else:
                        ax.plot([1 / (1 - q / 100) for q, _ in ref], [v for _, v in ref], "o", mfc="none", color=c,
                                label=f"measured {_series_name(key)} {d}")
        if cdf:
            ax.set_xscale("log")
            ax.set_xlabel("latency (ms)")
            ax.set_ylabel("fraction of IOs")
            ax.grid(True, which="both", alpha=0.3)
        else:
            hdr_axes(ax)
        tag = "_".join(f"{k}{v}" for k, v in combo) or "all"
        ax.set_title(spec.title or f"{run.experiment.name}: {'CDF' if cdf else 'latency by percentile'} {tag}")
        ax.legend(fontsize=7)
        path = out / f"plot{n:02d}_{'cdf' if cdf else 'hdr'}_{tag}.png"
        written.append(save_figure(fig, path))
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

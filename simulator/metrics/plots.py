"""Plots (matplotlib, Agg canvas, no pyplot state): IOPS vs queue depth, HDR percentile plots,
latency CDFs. Every function takes several series and writes one PNG, returning its path.

Series sources for latency plots: a :class:`LatStats` (its histogram if it has one, else its
percentile table), an :class:`HdrHist`, or a fio percentile dict (``{"99.000000": ns}``).
Tables are drawn as markers (what was measured), histograms as lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simulator.metrics.hdr import HdrHist
from simulator.metrics.stats import LatStats

__all__ = [
    "PercentileCurve", "Series", "hdr_axes", "new_figure", "plot_cdf", "plot_iops_vs_qd", "plot_percentiles", "save_figure",
]


@dataclass
class Series:
    """One line/point set: ``x``, ``y`` and optional symmetric error ``yerr`` (CI half-widths);
    ``color`` pairs a simulated line with its measured markers."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    yerr: Sequence[float | None] | None = None
    color: str | None = None


@dataclass
class PercentileCurve:
    """A dense percentile -> latency (ns) list drawn as a line (e.g. a simulated run's HDR
    percentiles); a plain dict is a measured fio table, drawn as markers."""

    points: dict[Any, float]


def new_figure(width: float = 7.0, height: float = 4.5):
    """A figure on the Agg canvas (no pyplot state, safe in worker processes) and its one axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot(1, 1, 1)


def save_figure(fig, path: str | Path) -> Path:
    """Write ``fig`` as PNG at ``path`` (parent directories created); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(p, format="png")
    return p


_figure = new_figure  # older names, still used by the calibration reports
_save = save_figure


def hdr_axes(ax, ticks: Sequence[float] = (0, 90, 99, 99.9, 99.99)) -> None:
    """HdrHistogram's percentile axis: x = 1/(1-p) on a log scale labelled in percent, y = latency
    (ms) on a log scale."""
    ax.set_xscale("log")
    ax.set_xticks([1 / (1 - t / 100) for t in ticks])
    ax.set_xticklabels([f"{t:g}%" for t in ticks])
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (ms)")
    ax.grid(True, which="both", alpha=0.3)


def plot_iops_vs_qd(
    series: Sequence[Series],
    path: str | Path,
    *,
    measured: Sequence[Series] = (),
    title: str = "",
    ylabel: str = "IOPS",
    xlabel: str = "queue depth",
    logx: bool = True,
) -> Path:
    """Simulated lines with CI error bars, measured points as markers; log2 x axis by default."""
    fig, ax = new_figure()
    for s in series:
        yerr = None
        if s.yerr is not None:
            yerr = np.array([0.0 if e is None else float(e) for e in s.yerr])
        ax.errorbar(list(s.x), list(s.y), yerr=yerr, marker="o", ms=4, capsize=3, lw=1.5, label=s.label, color=s.color)
    for s in measured:
        ax.plot(list(s.x), list(s.y), ls="none", marker="x", ms=8, mew=2, label=s.label, color=s.color)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    if title:
        ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if series or measured:
        ax.legend(fontsize=8)
    return save_figure(fig, path)


def _points(
    src: Any, max_p: float, n: int = 240, min_percentile: float = 0.0
) -> tuple[np.ndarray, np.ndarray, bool]:
    """(percentiles, values in ns, is_table) of a latency source."""
    if isinstance(src, LatStats):
        if src.hist is not None and src.hist.total_count:
            src = src.hist
        else:
            src = src.percentiles
    if isinstance(src, HdrHist):
        x = np.logspace(
            np.log10(1.0 / (1.0 - min_percentile / 100.0)), np.log10(1.0 / (1.0 - max_p / 100.0)), n
        )
        p = 100.0 * (1.0 - 1.0 / x)
        return p, src.values_at_percentiles(p).astype(np.float64), False
    curve = isinstance(src, PercentileCurve)
    if curve:
        src = src.points
    if isinstance(src, dict):
        items = sorted((float(k), float(v)) for k, v in src.items() if float(k) <= max_p)
        if not items:
            return np.zeros(0), np.zeros(0), not curve
        a = np.asarray(items)
        return a[:, 0], a[:, 1], not curve
    raise TypeError(f"cannot plot latency from {type(src).__name__}")


def _items(series: Sequence[tuple]) -> list[tuple[str, Any, str | None]]:
    """(label, source) or (label, source, color) items."""
    return [(t[0], t[1], t[2] if len(t) > 2 else None) for t in series]


def plot_percentiles(
    series: Sequence[tuple],
    path: str | Path,
    *,
    title: str = "",
    max_percentile: float = 99.99,
    min_percentile: float = 1.0,
) -> Path:
    """HdrHistogram-style percentile plot: x = percentile on the 1/(1-p) log scale (labelled
    50%, 90%, 99%, ...), y = latency in ms on a log scale. Histogram curves start at
    ``min_percentile`` (the far left tail of a log-y plot is noise). Items: (label, source) or
    (label, source, color); sources as in the module doc, or a :class:`PercentileCurve`."""
    fig, ax = new_figure()
    for label, src, color in _items(series):
        p, v, table = _points(src, max_percentile, min_percentile=min_percentile)
        keep = (p < 100.0) & (v > 0)
        x = 1.0 / (1.0 - p[keep] / 100.0)
        y = v[keep] / 1e6
        if table:
            ax.plot(x, y, ls="none", marker="o", mfc="none", ms=6, label=label, color=color)
        else:
            ax.plot(x, y, lw=1.5, label=label, color=color)
    hdr_axes(ax, [p for p in (0.0, 50.0, 90.0, 99.0, 99.9, 99.99, 99.999) if p <= max_percentile + 1e-9])
    ax.set_xlim(1.0, 1.0 / (1.0 - max_percentile / 100.0) * 1.05)
    if title:
        ax.set_title(title)
    if series:
        ax.legend(fontsize=8)
    return save_figure(fig, path)


def plot_cdf(
    series: Sequence[tuple], path: str | Path, *, title: str = "", logx: bool = True
) -> Path:
    """Latency CDFs (x = latency ms, log by default; y = fraction of IOs at or below). Items as for
    :func:`plot_percentiles`."""
    fig, ax = new_figure()
    left = np.inf
    for label, src, color in _items(series):
        if isinstance(src, LatStats) and src.hist is not None and src.hist.total_count:
            src = src.hist
        if isinstance(src, HdrHist):
            lo, width, cnt = src.distribution()
            if cnt.size == 0:
                continue
            cum = np.cumsum(cnt) / cnt.sum()
            x = (lo + width).astype(np.float64) / 1e6
            ax.step(
                np.concatenate([[lo[0] / 1e6], x]),
                np.concatenate([[0.0], cum]),
                where="post",
                lw=1.5,
                label=label,
                color=color,
            )
            left = min(left, src.value_at_percentile(0.1) / 1e6)
        else:
            p, v, table = _points(src, 100.0)
            keep = p < 100.0 if not table else np.ones(p.shape, bool)
            if table:
                ax.plot(v / 1e6, p / 100.0, ls="none", marker="o", mfc="none", ms=6, label=label, color=color)
            else:
                ax.plot(v[keep] / 1e6, p[keep] / 100.0, lw=1.5, label=label, color=color)
            if v.size:
                left = min(left, float(v.min()) / 1e6)
    if logx:
        ax.set_xscale("log")
        if np.isfinite(left) and left > 0:
            ax.set_xlim(left=left / 2.0)
    ax.set_ylim(0.0, 1.0)
    ax.set_xlabel("latency (ms)")
    ax.set_ylabel("fraction of IOs")
    if title:
        ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if series:
        ax.legend(fontsize=8)
    return save_figure(fig, path)


def plot_warmup(st: dict, direction: str, title: str, path: str | Path) -> Path:
    """A run's IOPS time series with its MSER warm-up shaded and the means with and without it
    (``st`` = a run document's ``sim.steady_state[direction]`` entry)."""
    import numpy as np

    y = np.asarray(st["iops_samples"], dtype=float)
    t = (np.arange(y.size) + 0.5) * float(st["period_s"])
    fig, ax = new_figure(7.0, 3.2)
    ax.plot(t, y, lw=0.8, color="C0", label=f"{direction} IOPS per {st['period_s']:g} s")
    ax.axvspan(0, st["warmup_s"], color="C1", alpha=0.2, label=f"MSER warm-up {st['warmup_s']:g} s")
    ax.axhline(st["mean_all"], color="C3", ls="--", lw=1, label=f"mean over the window {st['mean_all']:.4g}")
    ax.axhline(st["mean_after"], color="C2", ls=":", lw=1, label=f"mean after warm-up {st['mean_after']:.4g}")
    ax.set_xlabel("seconds into the measured window")
    ax.set_ylabel("IOPS")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return save_figure(fig, path)

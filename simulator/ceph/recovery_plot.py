"""The client-latency-over-time plot of a failure experiment's runs (``Cluster.stats()["recovery"]``):
``simrun run`` writes it beside the summary of an experiment whose runs have recovery statistics, and
``python -m simulator.ceph.recovery_plot OUT_DIR`` (re)writes OUT_DIR/recovery_timeline.png (p99 and mean per
second of every run, dotted lines at each event -- down, out, up, in, automatic out -- named at the top,
and dashed grey lines where a recovery or backfill ended)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["doc_series", "plot_timeline", "run_series", "write_timeline"]


def plot_timeline(series: list[tuple[str, list[list[float]], list[Any]]], path: str | Path, title: str = "") -> Path:
    """p99 and mean client latency per second of each run (label, bins, marks). A mark is a time (a
    dotted line), a (time, name) pair (a dotted line named at the top: an event) or (time, None) (a
    dashed grey line: the end of a recovery)."""
    from simulator.metrics.plots import new_figure, save_figure

    fig, ax = new_figure(8.0, 4.5)
    named: set[tuple[float, str]] = set()  # an event shared by several runs is named once
    for label, bins, marks in series:
        if not bins:
            continue
        b = np.asarray(bins, dtype=np.float64)
        (line,) = ax.plot(b[:, 0], b[:, 3], label=f"{label} p99")
        ax.plot(b[:, 0], b[:, 2], linestyle="--", color=line.get_color(), label=f"{label} mean")
        for m in marks:
            t, name = (m, "") if not isinstance(m, (tuple, list)) else (m[0], m[1])
            if t is None or not math.isfinite(t):
                continue
            if name is None:
                ax.axvline(t, color="0.6", linestyle="--", linewidth=0.8)
                continue
            ax.axvline(t, color=line.get_color(), linestyle=":", linewidth=1)
            if name and (t, name) not in named:
                named.add((t, name))
                ax.annotate(name, (t, 1.0), xycoords=("data", "axes fraction"), rotation=90, fontsize=7,
                            va="top", ha="right", color="0.3")
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("client latency (ms)")
    ax.set_yscale("log")
    ax.set_title(title or "client latency around the failure (dotted: events; dashed: end of a recovery)")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def doc_series(docs: list[tuple[str, Any]]) -> list[tuple[str, list[list[float]], list[Any]]]:
    """The timeline series of run documents ``(name, doc)`` that carry recovery statistics: (label, bins,
    marks) per run, in the order given; a run without them, or not a document, is left out."""
    series = []
    for name, doc in docs:
        meta = (doc.get("sim") or doc.get("sim_meta") or {}) if isinstance(doc, dict) else {}
        rec = ((meta.get("cluster") or {}).get("recovery")) or {}
        if not rec:
            continue
        labels = meta.get("labels") or {}
        label = ", ".join(str(v) for v in labels.values()) or name
        hist = rec.get("history") or []
        if hist:
            marks: list[Any] = [(h.get("t"), h.get("action", "")) for h in hist]
            marks += [(ep.get("t_done"), None) for ep in rec.get("episodes") or []]
        else:  # a run document written before the event history existed
            marks = [rec.get("t_first_event"), rec.get("t_recovered")]
        series.append((label, rec.get("timeline") or [], marks))
    return series


def run_series(out: Path) -> list[tuple[str, list[list[float]], list[Any]]]:
    """:func:`doc_series` of an experiment's run documents on disk (``OUT_DIR/runs/p*_r*.json``, in file order).
    Raises ValueError naming a file that is not a run document."""
    runs = sorted((out / "runs").glob("p*_r*.json")) if (out / "runs").is_dir() else []
    docs = []
    for r in runs:
        if r.name.endswith(".timing.json"):
            continue
        try:
            docs.append((r.stem, json.loads(r.read_text())))
        except (OSError, ValueError):
            raise ValueError(f"{r}: not a run document") from None
    return doc_series(docs)


def write_timeline(out: Path, docs: list[tuple[str, Any]]) -> list[Path]:
    """``simrun run``'s plot of a failure experiment: OUT_DIR/recovery_timeline.png from its runs' documents
    (``(name, doc)``, as the runner holds them) when any has recovery statistics (a cluster with events), else
    nothing."""
    series = doc_series(docs)
    if not any(bins for _label, bins, _marks in series):
        return []
    return [plot_timeline(series, out / "recovery_timeline.png")]


def _main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m simulator.ceph.recovery_plot OUT_DIR  (an experiment's output directory)", file=sys.stderr)
        return 2
    out = Path(argv[0])
    try:
        series = run_series(out)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    if not series:
        print(f"{out}: no runs with recovery statistics", file=sys.stderr)
        return 2
    p = plot_timeline(series, out / "recovery_timeline.png")
    print(p)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main(sys.argv[1:]))

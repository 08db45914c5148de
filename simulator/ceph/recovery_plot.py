"""The client-latency-over-time plot of a failure experiment's runs (``Cluster.stats()["recovery"]``):
``python -m simulator.ceph.recovery_plot OUT_DIR`` writes OUT_DIR/recovery_timeline.png (p99 and mean per
second of every run, dotted lines at the first failure event and at the end of recovery)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

__all__ = ["plot_timeline"]


def plot_timeline(series: list[tuple[str, list[list[float]], list[float]]], path: str | Path, title: str = "") -> Path:
    """p99 and mean client latency per second of each run (label, bins, event/recovery-end times)."""
    from simulator.metrics.plots import new_figure, save_figure

    fig, ax = new_figure(8.0, 4.5)
    for label, bins, marks in series:
        if not bins:
            continue
        b = np.asarray(bins, dtype=np.float64)
        (line,) = ax.plot(b[:, 0], b[:, 3], label=f"{label} p99")
        ax.plot(b[:, 0], b[:, 2], linestyle="--", color=line.get_color(), label=f"{label} mean")
        for m in marks:
            if m is not None and math.isfinite(m):
                ax.axvline(m, color=line.get_color(), linestyle=":", linewidth=1)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("client latency (ms)")
    ax.set_yscale("log")
    ax.set_title(title or "client latency around the failure (dotted: failure, end of recovery)")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def _main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m simulator.ceph.recovery_plot OUT_DIR  (an experiment's output directory)", file=sys.stderr)
        return 2
    out = Path(argv[0])
    runs = sorted((out / "runs").glob("p*_r*.json")) if (out / "runs").is_dir() else []
    runs = [r for r in runs if not r.name.endswith(".timing.json")]
    series = []
    for r in runs:
        try:
            doc = json.loads(r.read_text())
        except (OSError, ValueError):
            print(f"{r}: not a run document", file=sys.stderr)
            return 2
        meta = doc.get("sim") or doc.get("sim_meta") or {}
        rec = ((meta.get("cluster") or {}).get("recovery")) or {}
        if not rec:
            continue
        labels = meta.get("labels") or {}
        label = ", ".join(str(v) for v in labels.values()) or r.stem
        series.append((label, rec.get("timeline") or [], [rec.get("t_first_event"), rec.get("t_recovered")]))
    if not series:
        print(f"{out}: no runs with recovery statistics", file=sys.stderr)
        return 2
    p = plot_timeline(series, out / "recovery_timeline.png")
    print(p)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main(sys.argv[1:]))

"""What an experiment prints and writes: per-point tables with confidence intervals, simulated vs
reference (published or measured) figures with the error of each, ratios along an axis, plots,
summary.csv and comparison.csv."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from simulator.experiment.load import axis_names, label_of
from simulator.experiment.references import norm as _norm
from simulator.experiment.references import reference_rows
from simulator.experiment.runner import ExperimentRun, atomic_write_text, run_file
from simulator.experiment.summary import DIRS, PointSummary, combine, metric_names, point_summaries

__all__ = [
    "DIRS", "PointSummary", "combine", "compare_references", "csv_text", "point_summaries", "ratio_rows",
    "render_tables", "summary_rows", "write_outputs",
]


def compare_references(run: ExperimentRun, points: list[PointSummary]) -> list[dict[str, Any]]:
    """One row per (reference row, metric) plus prediction rows for points no reference covers."""
    exp = run.experiment
    rows: list[dict[str, Any]] = []
    covered: set[tuple[int, str]] = set()
    for ref in exp.spec.reference:
        table, match_cols, metric_cols = reference_rows(ref, exp.path)
        for trow in table:
            match = [p for p in points if all(_norm(label_of(p.labels, axis)) == _norm(trow[col]) for col, axis in match_cols.items())]
            if len(match) != 1:
                continue
            p = match[0]
            for col, metric in metric_cols.items():
                txt = (trow.get(col) or "").strip()
                if not txt:
                    continue
                refv = float(txt)
                covered.add((p.index, metric))
                sim = p.get(metric)
                err = (sim - refv) / refv if sim is not None and refv else None
                rows.append({
                    **p.labels, "reference": ref.label, "metric": metric, "published": refv,
                    "simulated": sim, "ci": p.ci.get(metric), "error": err,
                    "goal": ref.goal, "within_goal": (abs(err) <= ref.goal) if (err is not None and ref.goal) else None,
                })
    if exp.spec.reference:
        metrics = sorted({m for r in exp.spec.reference if r.predict for m in [*r.metrics.values(), *([r.unpivot.metric] if r.unpivot else [])]})
        for p in points:
            for m in metrics:
                if (p.index, m) in covered or p.get(m) is None:
                    continue
                rows.append({**p.labels, "reference": "prediction (not published)", "metric": m, "published": None,
                             "simulated": p.get(m), "ci": p.ci.get(m), "error": None, "goal": None, "within_goal": None})
    return rows


def _fmt(v: float | None, ci: float | None = None) -> str:
    if v is None:
        return "–"
    a = abs(v)
    s = f"{v:.0f}" if a >= 1000 else f"{v:.3g}"
    if ci is not None and ci > 0:
        s += f" ±{ci:.2g}"
    return s


def ratio_rows(run: ExperimentRun, points: list[PointSummary]) -> list[dict[str, Any]]:
    spec = run.experiment.spec.report.ratio
    if spec is None:
        return []
    others = [a for a in axis_names(run.experiment.spec) if a != spec.axis]
    groups: dict[tuple, dict[str, PointSummary]] = {}
    for p in points:
        key = tuple(_norm(p.labels.get(a)) for a in others)
        groups.setdefault(key, {})[str(p.labels.get(spec.axis))] = p
    rows = []
    for _key, g in groups.items():
        num, den = g.get(str(spec.numerator)), g.get(str(spec.denominator))
        if not num or not den:
            continue
        for m in metric_names([num, den], spec.metrics):
            a, b = num.get(m), den.get(m)
            if a is None or not b:
                continue
            rows.append({**{k: num.labels[k] for k in others}, "metric": m, "ratio": a / b,
                         spec.numerator: a, spec.denominator: b})
    return rows


def render_tables(run: ExperimentRun, points: list[PointSummary], comparisons: list[dict], ratios: list[dict], console: Any) -> None:
    from rich.table import Table

    exp = run.experiment
    metrics = metric_names(points, exp.spec.report.metrics)
    axes = axis_names(exp.spec)
    t = Table(title=f"{exp.name}: simulated (mean ± 95% CI half-width)", show_lines=False)
    if len(metrics) > 8 and len(points) <= 12:  # wide: one column per point
        t.add_column("metric")
        for p in points:
            t.add_column("\n".join(str(p.labels[a]) for a in axes) or "run", justify="right")
        for m in metrics:
            t.add_row(m, *[_fmt(p.get(m), p.ci.get(m)) for p in points])
    else:
        for a in axes:
            t.add_column(a)
        for m in metrics:
            t.add_column(m, justify="right")
        for p in points:
            t.add_row(*[str(p.labels[a]) for a in axes], *[_fmt(p.get(m), p.ci.get(m)) for m in metrics])
    console.print(t)
    for p in points:  # MSER steady-state verdicts (summary columns <dir>.steady / <dir>.warmup_s)
        for m, v in p.values.items():
            if m.endswith(".steady") and v < 1.0:
                where = ", ".join(f"{a}={p.labels[a]}" for a in axes) or "run"
                console.print(f"[yellow]warning[/yellow]: {where}: {m[:-7]} has not reached steady state "
                              f"(MSER warm-up {p.get(m[:-7] + '.warmup_s') or 0:g} s of the window); run longer or add ramp_time")
    published = [r for r in comparisons if r["published"] is not None]
    predicted = [r for r in comparisons if r["published"] is None]
    if published:
        refs = sorted({r["reference"] for r in published})
        ct = Table(title=f"simulated vs {', '.join(refs)}")
        for a in axes:
            ct.add_column(a)
        for c in ("metric", "published", "simulated", "error"):
            ct.add_column(c, justify="left" if c == "metric" else "right")
        for r in published:
            err = r["error"]
            mark = {True: " ✓", False: " ✗"}.get(r.get("within_goal"), "")
            ct.add_row(*[str(r.get(a, "")) for a in axes], r["metric"], _fmt(r["published"]),
                       _fmt(r["simulated"], r.get("ci")), ("–" if err is None else f"{err * 100:+.1f}%") + mark)
        console.print(ct)
    if predicted:
        pt = Table(title="predictions (figures not published or kept aside)")
        for a in axes:
            pt.add_column(a)
        pt.add_column("metric")
        pt.add_column("simulated", justify="right")
        for r in predicted:
            pt.add_row(*[str(r.get(a, "")) for a in axes], r["metric"], _fmt(r["simulated"], r.get("ci")))
        console.print(pt)
    if ratios:
        spec = exp.spec.report.ratio
        rt = Table(title=f"ratio {spec.numerator} / {spec.denominator}")
        keys = [k for k in ratios[0] if k not in ("metric", "ratio", spec.numerator, spec.denominator)]
        for k in keys:
            rt.add_column(k)
        for c in ("metric", spec.numerator, spec.denominator, "ratio"):
            rt.add_column(c, justify="right")
        for r in ratios:
            rt.add_row(*[str(r[k]) for k in keys], r["metric"], _fmt(r[spec.numerator]), _fmt(r[spec.denominator]), f"{r['ratio']:.2f}×")
        console.print(rt)


def csv_text(rows: list[dict[str, Any]], float_format: str | None = None) -> str:
    """Rows (dicts, columns in order of first appearance) as CSV text; None is an empty cell."""
    if not rows:
        return ""
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)

    def cell(v: Any) -> Any:
        if v is None:
            return ""
        return format(v, float_format) if float_format and isinstance(v, float) else v

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols)
    w.writeheader()
    for r in rows:
        w.writerow({k: cell(r.get(k)) for k in cols})
    return buf.getvalue()


def summary_rows(points: list[PointSummary]) -> list[dict[str, Any]]:
    rows = []
    for p in points:
        row: dict[str, Any] = {"point": p.index, **p.labels, "replications": p.replications}
        for k, v in p.values.items():
            row[k] = v
            if k in p.ci:
                row[f"{k}_ci"] = p.ci[k]
        rows.append(row)
    return rows


def write_outputs(run: ExperimentRun, points: list[PointSummary], comparisons: list[dict], ratios: list[dict]) -> list[Path]:
    """summary.csv, comparison.csv, ratio.csv, the plots named in the experiment, warm-up plots of runs that
    did not settle and, for clusters with failure events, the recovery timeline."""
    out = run.out_dir
    if out is None:
        return []
    written = []
    atomic_write_text(out / "summary.csv", csv_text(summary_rows(points)))
    written.append(out / "summary.csv")
    if comparisons:
        atomic_write_text(out / "comparison.csv", csv_text(comparisons))
        written.append(out / "comparison.csv")
    if ratios:
        atomic_write_text(out / "ratio.csv", csv_text(ratios))
        written.append(out / "ratio.csv")
    from simulator.experiment.plotting import make_plots  # matplotlib only when plotting

    written.extend(make_plots(run, points))
    from simulator.metrics.steady import plot_warmups

    written.extend(plot_warmups(points, out))  # time series of runs that have not settled
    from simulator.ceph.recovery_plot import write_timeline

    runs = sorted(run.outputs, key=lambda o: (o.point, o.replication))
    docs = [(run_file(out, o.point, o.replication).stem, o.doc) for o in runs]
    written.extend(write_timeline(out, docs))  # client latency over time around failures (clusters with events)
    return written

"""What an experiment prints and writes: per-point tables with confidence intervals, simulated vs
reference (published or measured) figures with the error of each, ratios along an axis, plots,
summary.csv and comparison.csv."""

from __future__ import annotations

import csv
import fnmatch
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError
from simulator.experiment.load import project_root
from simulator.experiment.model import ReferenceSpec
from simulator.experiment.runner import ExperimentRun, atomic_write_text
from simulator.metrics.summary import combine_replications

__all__ = ["PointSummary", "combine", "compare_references", "point_summaries", "write_outputs"]

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


def point_summaries(run: ExperimentRun) -> list[PointSummary]:
    out = []
    by = run.by_point()
    for p in run.experiment.points:
        outs = by.get(p.index, [])
        if not outs:
            continue
        values, ci = combine([o.summary for o in outs])
        out.append(PointSummary(p.index, dict(p.labels), values, ci, len(outs), [o.doc for o in outs]))
    return out


def _norm(v: Any) -> Any:
    if isinstance(v, bool):
        return str(v).lower()
    try:
        f = float(v)
        return round(f, 9)
    except (TypeError, ValueError):
        return str(v).strip().lower()


def _resolve_table(ref: ReferenceSpec, exp_path: Path) -> Path:
    p = Path(ref.table)
    for cand in ([p] if p.is_absolute() else [exp_path.parent / p, project_root() / p]):
        if cand.is_file():
            return cand
    raise ConfigError(f"reference table {ref.table!r} not found", source=str(exp_path), field="reference.table")


def read_table(path: Path) -> list[dict[str, str]]:
    """A reference CSV; lines starting with '#' (provenance notes) are skipped."""
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


_UNPIVOT_COL = "__value"


def reference_rows(ref: ReferenceSpec, exp_path: Path) -> tuple[list[dict[str, str]], dict[str, str], dict[str, str]]:
    """Rows of a reference table (filtered, unpivoted) with its column->axis and column->metric maps."""
    path = _resolve_table(ref, exp_path)
    table = [r for r in read_table(path) if all(_norm(r.get(c)) == _norm(v) for c, v in ref.filter.items())]
    match, metrics = dict(ref.match), dict(ref.metrics)
    need = [*ref.match, *ref.filter, *ref.metrics, *(ref.unpivot.columns.values() if ref.unpivot else [])]
    for col in need:
        if table and col not in table[0]:
            raise ConfigError(f"column {col!r} not in {path.name} (columns: {', '.join(table[0])})", source=str(exp_path), field="reference")
    if ref.unpivot is not None:
        u = ref.unpivot
        long = []
        for r in table:
            for label, col in u.columns.items():
                long.append({**r, u.axis: str(label), _UNPIVOT_COL: r.get(col, "")})
        table = long
        match[u.axis] = u.axis
        metrics[_UNPIVOT_COL] = u.metric
    return table, match, metrics


def compare_references(run: ExperimentRun, points: list[PointSummary]) -> list[dict[str, Any]]:
    """One row per (reference row, metric) plus prediction rows for points no reference covers."""
    exp = run.experiment
    rows: list[dict[str, Any]] = []
    covered: set[tuple[int, str]] = set()
    for ref in exp.spec.reference:
        table, match_cols, metric_cols = reference_rows(ref, exp.path)
        for trow in table:
            match = [p for p in points if all(_norm(p.labels.get(axis)) == _norm(trow[col]) for col, axis in match_cols.items())]
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


def _metric_names(points: list[PointSummary], wanted: list[str]) -> list[str]:
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
    others = [a for a in (run.experiment.spec.sweep.axes if run.experiment.spec.sweep else {}) if a != spec.axis]
    groups: dict[tuple, dict[str, PointSummary]] = {}
    for p in points:
        key = tuple(_norm(p.labels.get(a)) for a in others)
        groups.setdefault(key, {})[str(p.labels.get(spec.axis))] = p
    rows = []
    for _key, g in groups.items():
        num, den = g.get(str(spec.numerator)), g.get(str(spec.denominator))
        if not num or not den:
            continue
        for m in _metric_names([num, den], spec.metrics):
            a, b = num.get(m), den.get(m)
            if a is None or not b:
                continue
            rows.append({**{k: num.labels[k] for k in others}, "metric": m, "ratio": a / b,
                         spec.numerator: a, spec.denominator: b})
    return rows


def render_tables(run: ExperimentRun, points: list[PointSummary], comparisons: list[dict], ratios: list[dict], console: Any) -> None:
    from rich.table import Table

    exp = run.experiment
    metrics = _metric_names(points, exp.spec.report.metrics)
    axes = list(exp.spec.sweep.axes) if exp.spec.sweep else []
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
    """summary.csv, comparison.csv, ratio.csv and the plots named in the experiment."""
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
    from simulator.experiment.plotting import make_plots

    written.extend(make_plots(run, points))
    from simulator.metrics.steady import plot_warmups

    written.extend(plot_warmups(points, out))  # time series of runs that have not settled
    return written

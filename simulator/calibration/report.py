"""The calibration report: ``report.md``, the CSV tables and the plots of one fit, and the summary of
a multi-case spec. Paths written into a report are relative to the report directory."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from simulator.calibration.optimize import FitResult
from simulator.calibration.problem import Item, Problem
from simulator.calibration.profile import format_value
from simulator.calibration.spec import BW_TAILS, metric_kind, rel_to

__all__ = ["display_value", "item_points", "params_markdown", "points_markdown", "write_cases_summary", "write_report"]


def _csv_text(rows: list[dict[str, Any]]) -> str:
    from simulator.experiment.report import csv_text

    return csv_text(rows, float_format=".6g")


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", s).strip("_")[:90]


def _dense_to_pct(d: dict[str, float]) -> dict[str, float]:
    return {k: float(v) for k, v in d.items()}


def item_points(problem: Problem, items: list[Item], rows: dict[int, dict[str, Any]], extra: dict[int, Any]) -> list[dict[str, Any]]:
    """Per item and direction: IOPS error, log ratios of mean/p50/p99/p99.9 and the demerit."""
    import numpy as np

    from simulator.metrics.compare import compare, log_ratio, rms_distance_table

    out = []
    for i, it in enumerate(items):
        row = rows.get(i, {})
        dirs = sorted({k.split(".")[0] for k in it.measured})
        for d in dirs:
            rec: dict[str, Any] = {"item": it.label, "set": "prediction" if it.predict else "fit", "direction": d}
            if it.kind == "fio":
                from simulator.calibration.problem import measured_job

                mj = measured_job(it.path or "", problem.spec.loss.latency)
                c = compare(extra[i].dir(d), mj.dir(d), kind=problem.spec.loss.latency)
                rec.update({k: c[k] for k in ("iops_measured", "iops_sim", "iops_err_pct", "mean_ms_measured", "mean_ms_sim",
                                               "mean_log_ratio", "p50_log_ratio", "p99_log_ratio", "p99.9_log_ratio",
                                               "demerit_ms", "demerit_pct", "demerit_method")})
            else:
                m = it.measured
                for key, name in ((f"{d}.iops", "iops"), (f"{d}.lat_mean_ms", "mean_ms")):
                    if key in m:
                        rec[f"{name}_measured"] = m[key]
                        rec[f"{name}_sim"] = row.get(key)
                if rec.get("iops_measured") and rec.get("iops_sim") is not None:
                    rec["iops_err_pct"] = 100.0 * (rec["iops_sim"] - rec["iops_measured"]) / rec["iops_measured"]
                for tail in BW_TAILS:
                    key = f"{d}.{tail}"
                    if key in m:
                        rec["bw_unit"] = "MiB/s" if tail == "bw_MiBps" else "MB/s"
                        rec["bw_measured"] = m[key]
                        rec["bw_sim"] = row.get(key)
                        if rec["bw_sim"] is not None:
                            rec["bw_err_pct"] = 100.0 * (rec["bw_sim"] - m[key]) / m[key]
                        break
                if f"{d}.lat_mean_ms" in m and row.get(f"{d}.lat_mean_ms"):
                    rec["mean_log_ratio"] = log_ratio(row[f"{d}.lat_mean_ms"], m[f"{d}.lat_mean_ms"])
                for p in ("p50", "p99", "p99.9"):
                    k = f"{d}.{p}_ms"
                    if k in m and row.get(k):
                        rec[f"{p}_log_ratio"] = log_ratio(row[k], m[k])
                pm = it.percentiles(d)
                sim_dense = (extra.get(i) or {}).get(d) if isinstance(extra.get(i), dict) else None
                if pm and sim_dense:
                    ps = np.array(sorted(float(k) for k in pm))
                    qm = np.array([pm[f"{p:.6f}"] for p in ps])
                    sp = np.array(sorted(float(k) for k in sim_dense))
                    sv = np.array([sim_dense[k] for k in sorted(sim_dense, key=float)])
                    qs = np.interp(ps, sp, sv)
                    dem = rms_distance_table(ps, qs, qm)
                    rec["demerit_ms"] = dem / 1e6
                    if f"{d}.lat_mean_ms" in m:
                        rec["demerit_pct"] = 100.0 * dem / 1e6 / m[f"{d}.lat_mean_ms"]
                    rec["demerit_method"] = "percentiles"
            out.append(rec)
    return out


def _pct_plot(measured: dict[str, float], simulated: dict[str, float], path: Path, title: str) -> Path:
    """HDR-style percentile plot of two percentile tables: measured as markers, simulated (dense) as a
    line (x = percentile on the 1/(1-p) log scale, y = latency in ms, log)."""
    from simulator.metrics.plots import _figure, _save

    fig, ax = _figure()
    for label, d, style in (("measured", measured, {"ls": "none", "marker": "o", "ms": 4}),
                            ("simulated (fitted)", simulated, {"lw": 1.5})):
        pts = sorted((float(k), float(v)) for k, v in d.items() if float(k) < 100.0 and float(v) > 0)
        if pts:
            ax.plot([1.0 / (1.0 - p / 100.0) for p, _ in pts], [v / 1e6 for _, v in pts], label=label, **style)
    ticks = [0.0, 50.0, 90.0, 99.0, 99.9, 99.99]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks([1.0 / (1.0 - p / 100.0) for p in ticks])
    ax.set_xticklabels([f"{p:g}%" for p in ticks])
    ax.minorticks_off()
    ax.set_xlim(1.0, 1.0 / (1.0 - 99.99 / 100.0) * 1.05)
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (ms)")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def _plots(problem: Problem, items: list[Item], rows: dict[int, dict[str, Any]], extra: dict[int, Any], out: Path) -> list[Path]:
    from simulator.metrics.plots import Series, plot_iops_vs_qd, plot_percentiles

    written: list[Path] = []
    for i, it in enumerate(items):
        tag = ("pred_" if it.predict else "fit_") + _slug(it.label)
        if it.kind == "fio":
            from simulator.calibration.problem import measured_job

            mj = measured_job(it.path or "", problem.spec.loss.latency)
            lk = "lat" if problem.spec.loss.latency == "lat" else "clat"
            for d in mj.present_dirs():
                ml, sl = d.latency(lk), extra[i].dir(d.ddir).latency(lk)
                if lk == "lat" and not ml.has_distribution():
                    ml, sl = d.clat, extra[i].dir(d.ddir).clat
                series = [("measured", ml), ("simulated (fitted)", sl)]
                written.append(plot_percentiles(series, out / "hdr" / f"{tag}_{d.name}.png", title=f"{it.label} {d.name}"))
        else:
            for d in ("read", "write"):
                pm = it.percentiles(d)
                sim_dense = extra.get(i, {}).get(d) if isinstance(extra.get(i), dict) else None
                if pm and sim_dense:
                    written.append(_pct_plot(pm, _dense_to_pct(sim_dense), out / "hdr" / f"{tag}_{d}.png", f"{it.label} {d}"))
    # IOPS vs queue depth per group of items that differ by iodepth
    groups: dict[tuple[str, str], list[int]] = {}
    for i, it in enumerate(items):
        for k in it.measured:
            if k.endswith(".iops") or metric_kind(k) == "bw":
                groups.setdefault((it.group, k), []).append(i)
    for (g, k), idx in groups.items():
        qds = {items[i].iodepth for i in idx}
        if len(qds) < 2 or any(q is None for q in qds):
            continue
        idx.sort(key=lambda i: items[i].iodepth or 0)
        sim = Series("simulated (fitted)", [items[i].iodepth for i in idx], [rows.get(i, {}).get(k) or 0.0 for i in idx])
        first = items[idx[0]]
        if first.qd_axis and problem.last_points:  # a sweep: every simulated QD of the group, kept-aside ones too
            from simulator.calibration.problem import _norm

            pts = [(float(p["labels"][first.qd_axis]), p["row"].get(k)) for p in problem.last_points
                   if first.qd_axis in p["labels"] and all(_norm(p["labels"].get(a)) == _norm(v) for a, v in first.group_labels.items())
                   and p["row"].get(k) is not None]
            if pts:
                pts.sort()
                sim = Series("simulated (fitted; all swept QDs)", [x for x, _ in pts], [y for _, y in pts])
        fitm = [i for i in idx if not items[i].predict]
        prdm = [i for i in idx if items[i].predict]
        meas = []
        if fitm:
            meas.append(Series("measured (fitted to)", [items[i].iodepth for i in fitm], [items[i].measured[k] for i in fitm]))
        if prdm:
            meas.append(Series("measured (predicted)", [items[i].iodepth for i in prdm], [items[i].measured[k] for i in prdm]))
        written.append(plot_iops_vs_qd([sim], out / f"iops_vs_qd_{_slug(g + '_' + k)}.png", measured=meas, title=f"{g} {k}"))
    return written


def _residual_plot(rows: list[dict[str, Any]], path: Path) -> Path:
    from simulator.metrics.plots import _figure, _save

    rs = [r for r in rows if r.get("log_ratio") is not None and isinstance(r["log_ratio"], float) and math.isfinite(r["log_ratio"])]
    fig, ax = _figure(9.0, max(3.0, 0.18 * len(rs) + 1.0))
    labels = [f"{r['item']} {r['metric']}" for r in rs]
    colors = ["tab:orange" if r["predict"] else "tab:blue" for r in rs]
    ax.barh(range(len(rs)), [r["log_ratio"] for r in rs], color=colors)
    ax.set_yticks(range(len(rs)))
    ax.set_yticklabels(labels, fontsize=6)
    ax.axvline(0.0, color="k", lw=0.8)
    ax.invert_yaxis()
    ax.set_xlabel("ln(simulated / measured)   (blue: fitted targets, orange: predictions)")
    ax.grid(True, axis="x", alpha=0.3)
    return _save(fig, path)


def _scatter_plot(rows: list[dict[str, Any]], path: Path) -> Path:
    """Simulated vs measured, every metric of every point (log-log, y = x line; circles = fitted
    targets, crosses = predictions), one colour per metric kind."""
    from simulator.metrics.plots import _figure, _save

    fig, ax = _figure(6.5, 6.0)
    kinds = sorted({metric_kind(r["metric"]) or "" for r in rows})
    lo, hi = math.inf, 0.0
    for kd in kinds:
        for pred, marker in ((False, "o"), (True, "x")):
            pts = [(r["measured"], r["simulated"]) for r in rows
                   if (metric_kind(r["metric"]) or "") == kd and (r["set"] == "prediction") == pred
                   and r.get("simulated") and r["measured"] > 0 and r["simulated"] > 0]
            if not pts:
                continue
            xs, ys = zip(*pts, strict=True)
            lo, hi = min(lo, *xs, *ys), max(hi, *xs, *ys)
            ax.plot(xs, ys, ls="none", marker=marker, ms=5, label=f"{kd}{' (predicted)' if pred else ''}")
    if hi > 0:
        ax.plot([lo / 1.5, hi * 1.5], [lo / 1.5, hi * 1.5], color="k", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    ax.set_xlabel("measured / published (IOPS, or ms)")
    ax.set_ylabel("simulated with the fitted parameters")
    ax.grid(True, which="both", alpha=0.3)
    return _save(fig, path)


def _unmatched_points(problem: Problem, items: list[Item]) -> list[dict[str, Any]]:
    """Simulated rows of the sweep points no target or prediction item covers (sweep calibrations)."""
    from simulator.calibration.problem import _norm

    out = []
    for p in getattr(problem, "last_points", []):
        if any(all(_norm(p["labels"].get(a)) == _norm(v) for a, v in it.labels.items()) for it in items):
            continue
        row = {"point": ",".join(f"{k}={v}" for k, v in p["labels"].items())}
        for d in ("read", "write"):
            for k in ("iops", "lat_mean_ms", "p50_ms", "p99_ms", "p99.9_ms"):
                v = p["row"].get(f"{d}.{k}")
                if v is not None:
                    row[f"{d}.{k}"] = v
        out.append(row)
    return out


def _fmt(v: Any, nd: int = 3) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if isinstance(v, float):
        a = abs(v)
        return f"{v:.0f}" if a >= 1000 else f"{v:.{nd}g}"
    return str(v)


def _pct(lr: Any) -> str:
    if lr is None or not isinstance(lr, float) or not math.isfinite(lr):
        return "–"
    return f"{(math.exp(lr) - 1) * 100:+.0f}%"


def points_markdown(points: list[dict[str, Any]]) -> str:
    if any(p.get("bw_measured") is not None for p in points):
        unit = next(p["bw_unit"] for p in points if p.get("bw_unit"))
        lines = [f"| set | item | dir | {unit} meas | {unit} sim | bandwidth err | mean | p99 |", "|---|---|---|---|---|---|---|---|"]
        for p in points:
            err = p.get("bw_err_pct")
            lines.append(f"| {p['set']} | {p['item']} | {p['direction']} | {_fmt(p.get('bw_measured'))} | {_fmt(p.get('bw_sim'))} | "
                         f"{'–' if err is None or not math.isfinite(err) else f'{err:+.1f}%'} | {_pct(p.get('mean_log_ratio'))} | "
                         f"{_pct(p.get('p99_log_ratio'))} |")
        others = [p for p in points if p.get("bw_measured") is None]
        if not others:
            return "\n".join(lines)
        return "\n".join(lines) + "\n\n" + points_markdown(others)
    lines = ["| set | item | dir | IOPS meas | IOPS sim | IOPS err | mean | p50 | p99 | p99.9 | demerit ms | demerit % |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in points:
        err = p.get("iops_err_pct")
        lines.append(
            f"| {p['set']} | {p['item']} | {p['direction']} | {_fmt(p.get('iops_measured'))} | {_fmt(p.get('iops_sim'))} | "
            f"{'–' if err is None or not math.isfinite(err) else f'{err:+.0f}%'} | {_pct(p.get('mean_log_ratio'))} | "
            f"{_pct(p.get('p50_log_ratio'))} | {_pct(p.get('p99_log_ratio'))} | {_pct(p.get('p99.9_log_ratio'))} | "
            f"{_fmt(p.get('demerit_ms'))} | {_fmt(p.get('demerit_pct'), 2)} |"
        )
    return "\n".join(lines)


def display_value(v: Any, kind: str, integer: bool = False) -> str:
    """A value for tables: sizes with binary units, the rest as in the profile."""
    if kind == "size" and isinstance(v, (int, float)):
        from simulator.units import format_bytes

        return format_bytes(v)
    return str(format_value(v, kind, integer))


def params_markdown(problem: Problem, fit: FitResult) -> str:
    lines = ["| parameter | bounds / choices | scale | prior | start | fitted |", "|---|---|---|---|---|---|"]
    for f in problem.params:
        rng = ", ".join(map(str, f.choices)) if f.discrete else " .. ".join(
            str(int(b)) if f.integer and isinstance(b, float) else str(b) for b in f.bounds)  # type: ignore[union-attr]
        pr = f"{f.prior.mean} ± {f.prior.sd}" if f.prior else "–"
        flag = ""
        if not f.discrete:
            u = f.to_unit(fit.values[f.key])
            flag = " (at its lower bound)" if u < 0.005 else " (at its upper bound)" if u > 0.995 else ""
        lines.append(
            f"| `{f.key}` | {rng} | {'–' if f.discrete else f.scale} | {pr} | {display_value(fit.start_values[f.key], f.unit_kind, f.integer)} | "
            f"**{display_value(fit.values[f.key], f.unit_kind, f.integer)}**{flag} |"
        )
    return "\n".join(lines)


def write_report(problem: Problem, fit: FitResult, items: list[Item], rows: dict[int, dict[str, Any]], extra: dict[int, Any],
                 out: Path, profile: Path | None, date: str, final_dir: Path | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    home = final_dir if final_dir is not None else out

    def _rel(q: str | Path) -> str:
        return rel_to(q, home)

    res_all = problem.score(fit.values, rows, items)
    metric_rows = [{**r, "set": "prediction" if r["predict"] else "fit", "err_pct": (math.exp(r["log_ratio"]) - 1) * 100
                    if isinstance(r["log_ratio"], float) and math.isfinite(r["log_ratio"]) else None} for r in res_all.residuals]
    for r in metric_rows:
        r.pop("predict", None)
    points = item_points(problem, items, rows, extra)
    (out / "fit.csv").write_text(_csv_text(metric_rows), encoding="utf-8")
    (out / "points.csv").write_text(_csv_text(points), encoding="utf-8")
    (out / "history.csv").write_text(_csv_text(fit.history), encoding="utf-8")
    prm = [{"key": f.key, "fitted": fit.values[f.key], "start": fit.start_values[f.key],
            "bounds": "" if f.discrete else f"{f.bounds[0]}..{f.bounds[1]}", "choices": "" if not f.discrete else "|".join(map(str, f.choices))}  # type: ignore[index]
           for f in problem.params]
    (out / "params.csv").write_text(_csv_text(prm), encoding="utf-8")
    plots = _plots(problem, items, rows, extra, out)
    plots.append(_residual_plot([{**r, "predict": r["set"] == "prediction"} for r in metric_rows], out / "residuals.png"))
    plots.append(_scatter_plot(metric_rows, out / "fit_vs_measured.png"))
    spec = problem.spec
    md = [f"# Calibration report: {spec.name}", ""]
    if spec.description:
        md += [" ".join(spec.description.split()), ""]
    md += [
        f"Generated by `simrun calibrate {_rel(problem.loaded.path)}`"
        + (f" (case `{problem.loaded.case}`)" if problem.loaded.case else "") + f" on {date}: {fit.evals} evaluations "
        f"(stopped by: {fit.stopped_by}; wall-clock figures in `timing.json`); seed {spec.seed} for every evaluation (common random numbers)"
        + (f"; simulated runtime per trace {spec.runtime}" if spec.runtime else "")
        + (f"; time scale {spec.scale.factor} of {spec.scale.full_runtime} (sizes scaled alike: {', '.join(spec.scale.keys)})" if spec.scale else "")
        + ".",
        "",
        *([fit.note, ""] if fit.note else []),
        f"Loss (½ Σ w (ln ratio / σ)² + priors, σ = {spec.loss.sigma}): start **{fit.start_result.loss:.4g}** "
        f"(rms log error {fit.start_result.rms:.3f}) → fitted **{fit.result.loss:.4g}** (rms log error {fit.result.rms:.3f}). "
        f"Loss metrics and weights: {', '.join(f'{k} {v:g}' for k, v in spec.loss.metrics.items() if v > 0)}.",
        "",
        "## Fitted parameters",
        "",
        params_markdown(problem, fit),
        "",
    ]
    if profile is not None:
        md += [f"Profile written: `{_rel(profile)}`.", ""]
    md += [
        "## Fit and prediction per point",
        "",
        "`fit` rows were in the loss; `prediction` rows were simulated with the fitted parameters and never fitted. "
        "Latency columns are the error of the simulated figure (simulated/measured − 1); the demerit is the RMS horizontal "
        "distance between the latency CDFs (Ruemmler & Wilkes), in ms and % of the measured mean.",
        "",
        points_markdown(points),
        "",
    ]
    unmatched = _unmatched_points(problem, items)
    if unmatched:
        (out / "predicted_points.csv").write_text(_csv_text(unmatched), encoding="utf-8")
        keys = [k for k in ("iops", "lat_mean_ms", "p50_ms", "p99_ms") ]
        md += ["## Points without a measured figure (predictions)", "",
               "Sweep points the targets do not cover (e.g. kept-aside queue depths), simulated in the same sequence with "
               "the fitted parameters (also in `predicted_points.csv`):", "",
               "| point | " + " | ".join(f"{d}.{k}" for d in ("read", "write") for k in keys) + " |",
               "|---|" + "---|" * (2 * len(keys))]
        for u in unmatched:
            md.append(f"| {u['point']} | " + " | ".join(_fmt(u.get(f"{d}.{k}")) for d in ("read", "write") for k in keys) + " |")
        md += [""]
    md += [
        "Every metric: `fit.csv`; per point: `points.csv`; every evaluation: `history.csv`. Plots: "
        + ", ".join(f"`{p.relative_to(out) if p.is_relative_to(out) else p.name}`" for p in [*plots[-2:], *plots[:-2]][:8])
        + (" …" if len(plots) > 8 else "") + ".",
        "",
    ]
    (out / "report.md").write_text("\n".join(md), encoding="utf-8")
    return metric_rows, points



def write_cases_summary(cases: list[Any], base: Path, date: str) -> Path:
    """``report.md`` and ``cases.csv`` of a multi-case spec in ``base`` (the spec's report directory):
    every case's fitted parameters and every figure, fitted or predicted, read back from the case
    reports on disk (so running some cases with ``--case`` keeps the others' rows)."""
    from simulator.calibration.problem import read_csv_rows

    base.mkdir(parents=True, exist_ok=True)
    spec = cases[0].spec
    rows: list[dict[str, Any]] = []
    md = [f"# Calibration report: {spec.name} (all cases)", ""]
    if spec.description:
        md += [" ".join(spec.description.split()), ""]
    md += [f"Summary written by `simrun calibrate {rel_to(cases[0].path, base)}` on {date} from the case reports "
           "(`<case>/report.md`). `fit` figures were in the case's loss; `prediction` figures were simulated with the fitted "
           "parameters and never fitted.", "",
           "| case | fitted parameters | item | metric | set | measured | simulated | error |", "|---|---|---|---|---|---|---|---|"]
    missing = []
    for c in cases:
        d = base / (c.case or "")
        fit_csv, prm_csv = d / "fit.csv", d / "params.csv"
        if not fit_csv.is_file():
            missing.append(c.case)
            continue
        prm = "; ".join(f"{r['key'].split('.')[-1]}={_fmt(_float(r['fitted']))}" for r in read_csv_rows(prm_csv)) if prm_csv.is_file() else ""
        for r in read_csv_rows(fit_csv):
            meas, sim = _float(r.get("measured")), _float(r.get("simulated"))
            err = _float(r.get("err_pct"))
            rows.append({"case": c.case, "item": r.get("item"), "metric": r.get("metric"), "set": r.get("set"),
                         "measured": meas, "simulated": sim, "err_pct": err, "fitted": prm})
            md.append(f"| {c.case} | {prm} | {r.get('item')} | {r.get('metric')} | {r.get('set')} | {_fmt(meas)} | {_fmt(sim)} | "
                      f"{'–' if err is None else f'{err:+.1f}%'} |")
    if missing:
        md += ["", "Cases not run yet: " + ", ".join(str(m) for m in missing) + "."]
    md.append("")
    (base / "cases.csv").write_text(_csv_text(rows), encoding="utf-8")
    out = base / "report.md"
    out.write_text("\n".join(md), encoding="utf-8")
    return out


def _float(v: Any) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None

"""``simrun calibrate SPEC.yaml``: fit, then write the fitted profile and a report.

Order of work: the spec is validated completely (structure, every file and table, every discrete
choice and the mid point of the continuous ranges built into a system) before anything runs or any
file is written; then the optimiser runs (process pool, progress display); then the best point is
simulated once more with full results for the report (targets and predictions), and the report
directory and the profile are written (the report into a temporary directory renamed at the end).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from simulator.calibration.optimize import FitResult, Optimizer
from simulator.calibration.problem import Item, Problem, make_runner
from simulator.calibration.spec import LoadedSpec, load_spec, metric_kind
from simulator.config.base import get_dotted, set_dotted
from simulator.errors import ConfigError

__all__ = ["CalibrationOutcome", "calibrate", "format_value", "open_executor", "write_profile"]


@dataclass
class CalibrationOutcome:
    fit: FitResult
    problem: Problem
    report_dir: Path | None
    profile: Path | None
    rows: list[dict[str, Any]]  # per item and metric, targets and predictions
    points: list[dict[str, Any]]  # per item: IOPS error, log ratios, demerit


def format_value(v: Any, kind: str, integer: bool = False) -> Any:
    """A fitted value in the profile's human units (4 significant digits)."""
    if integer and isinstance(v, (int, float)):
        return int(round(v))
    if not isinstance(v, float) or kind in ("choice", "number"):
        return float(f"{v:.6g}") if isinstance(v, float) else v
    if kind == "time":
        a = abs(v)
        if a >= 1:
            return f"{v:.4g}s"
        if a >= 1e-3:
            return f"{v * 1e3:.4g}ms"
        return f"{v * 1e6:.4g}us"
    if kind == "size":
        return int(round(v))
    if kind == "rate":
        return f"{v / 1e6:.4g}MB/s"
    return v


@contextlib.contextmanager
def open_executor(workers: int | None):
    """A process pool (fork) for ``workers`` > 1, else None (inline)."""
    n = workers if workers is not None else (os.cpu_count() or 1)
    if n <= 1:
        yield None
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    ctx = mp.get_context("fork" if os.name != "nt" else "spawn")
    ex = ProcessPoolExecutor(max_workers=n, mp_context=ctx)
    try:
        yield ex
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _rel(p: Path | str) -> str:
    from simulator.experiment.load import project_root

    try:
        return str(Path(p).resolve().relative_to(project_root()))
    except ValueError:
        return str(p)


# ------------------------------------------------------------------------------------ profile
def _diff(base: Any, new: Any) -> Any:
    """Minimal override turning ``base`` into ``new`` (mappings recursively; lists and scalars whole).
    Returns None when equal."""
    if isinstance(base, dict) and isinstance(new, dict):
        out = {}
        for k, v in new.items():
            if k not in base:
                out[k] = v
                continue
            d = _diff(base[k], v)
            if d is not None:
                out[k] = d
        return out or None
    return None if base == new else new


def _leaves(d: Any, prefix: str = "") -> list[str]:
    if isinstance(d, dict):
        out = []
        for k, v in d.items():
            out += _leaves(v, f"{prefix}{k}.")
        return out
    return [prefix[:-1]]


def targets_description(problem: Problem) -> str:
    parts = []
    for i, t in enumerate(problem.spec.targets):
        its = [it for it in problem.items if it.target == i]
        if t.files is not None:
            names = [Path(it.path or "").name for it in its]
            d = _rel(Path(its[0].path or "").parent) if its else ""
            parts.append(f"{d}/{{{','.join(n.removesuffix('.json') for n in names)}}}.json" if len(names) > 1 else _rel(its[0].path or ""))
        else:
            parts.append(f"{_rel(problem.loaded.find(t.csv or '', 'csv'))} ({len(its)} rows)")
    return "; ".join(parts)


def write_profile(problem: Problem, fit: FitResult, path: Path, date: str) -> Path:
    """Write the fitted profile (registry format: kind, name, extends, params, sources, provenance)."""
    from simulator import __version__
    from simulator.devices.registry import load_profile, resolve_params

    comp = problem.component_of_profile()
    orig = get_dotted(problem.orig_system, comp)
    if not isinstance(orig, dict):
        raise ConfigError(f"the system has no {comp}", source=problem.src, field="output.component")
    full_sys = problem.system_for(fit.values, scaled=False)
    full = get_dotted(full_sys, comp).get("params") or {}
    ref = orig.get("profile")
    if ref:
        base = load_profile(str(ref))
        kind = base["kind"]
        params = _diff(base["params"], full) or {}
    else:
        kind = orig.get("kind") or ("ceph_cluster" if comp == "cluster" else None)
        base = None
        params = full
    prefix = f"{comp}.params."
    spec_rel = _rel(problem.loaded.path)
    tdesc = targets_description(problem)
    fitted_sources = {}
    for f in problem.params:
        if not f.key.startswith(prefix):
            continue
        sub = f.key[len(prefix):]
        v = format_value(fit.values[f.key], f.unit_kind, f.integer)
        params = set_dotted(params, sub, v, source=spec_rel)
        fitted_sources[sub] = (
            f"fitted by {spec_rel} on {tdesc} (loss {fit.result.loss:.4g}, rms log error {fit.result.rms:.3f}, "
            f"{fit.evals} evaluations, {date}, simulator {__version__})"
        )
    sources: dict[str, str] = {}
    for leaf in _leaves(params):
        hit = next((k for k in fitted_sources if leaf == k or leaf.startswith(k + ".") or k.startswith(leaf + ".")), None)
        if hit:
            continue
        reason = next((r for k, r in problem.spec.output.sources.items() if leaf == k or leaf.startswith(k + ".")), None)
        sources[leaf] = reason or f"set in {spec_rel} (fixed, not fitted)"
    sources.update(fitted_sources)
    for k, r in problem.spec.output.sources.items():
        sources.setdefault(k, r)
    name = problem.spec.output.name or ((base["name"] if base else problem.spec.name) + f" (fitted: {problem.spec.name})")
    doc: dict[str, Any] = {"kind": kind, "name": name}
    desc = problem.spec.output.description or problem.spec.description
    if desc:
        doc["description"] = " ".join(desc.split())
    if ref:
        doc["extends"] = str(ref)
    doc["params"] = params
    doc["sources"] = sources
    doc["provenance"] = {
        "spec": spec_rel,
        "date": date,
        "simulator_version": __version__,
        "targets": tdesc,
        "loss": float(f"{fit.result.loss:.6g}"),
        "rms_log_error": float(f"{fit.result.rms:.4g}"),
        "start_loss": float(f"{fit.start_result.loss:.6g}") if fit.start_result else None,
        "evaluations": fit.evals,
        "wall_s": round(fit.wall_s, 1),
        "stopped_by": fit.stopped_by,
        "seed": problem.spec.seed,
        "latency_compared": problem.spec.loss.latency,
        "runtime_per_trace": problem.spec.runtime,
        "scale": problem.spec.scale.model_dump() if problem.spec.scale else None,
    }
    wopts = problem.workload_options(fit.values)
    if wopts:
        kinds = {f.key.split(".", 1)[1]: f.unit_kind for f in problem.params if f.key.startswith("workload.")}
        doc["provenance"]["workload_options"] = {k: format_value(v, kinds.get(k, "number")) for k, v in wopts.items()}
        doc["provenance"]["workload_options_note"] = (
            "fio options of the measured machine's host (not of this device), fitted/set with it: give them to a job "
            "(e.g. sim_slat) to reproduce the measured runs"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "# written by simrun calibrate " + spec_rel + " — rerun it to refit; do not edit by hand\n"
    text += yaml.safe_dump(doc, sort_keys=False, width=110, allow_unicode=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    # the written profile must load and validate like any other
    resolve_params({"profile": str(path), "kind": kind}, source=str(path))
    with contextlib.suppress(ConfigError):
        load_profile(str(path))
    return path


# ------------------------------------------------------------------------------------ report
def _csv_text(rows: list[dict[str, Any]]) -> str:
    from simulator.experiment.report import csv_text

    return csv_text(rows, float_format=".6g")


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", s).strip("_")[:90]


def _dense_to_pct(d: dict[str, float]) -> dict[str, float]:
    return {k: float(v) for k, v in d.items()}


def final_results(problem: Problem, values: dict[str, Any], runner: Any) -> tuple[list[Item], dict[int, dict[str, Any]], dict[int, Any]]:
    """Simulate targets and predictions at ``values`` with full results. Returns (items, summary
    rows, extra) where extra is a JobResult (traces) or the point's dense percentiles (sweeps)."""
    items = problem.items + problem.pred_items
    units = problem.units(values, items, full=True)
    res = runner(units)
    bad = [r for r in res if isinstance(r, BaseException)]
    if bad:
        raise bad[0]
    problem.last_points = [p for r in res for p in r.get("points", [])] if problem.experiment_path is not None else []
    extra: dict[int, Any] = {}
    if problem.experiment_path is None:
        rows = {i: r["row"] for i, r in enumerate(res)}
        extra = {i: r["job"] for i, r in enumerate(res)}
    else:
        rows = problem.rows_of(res, items)
        pts = [p for r in res for p in r["points"]]
        from simulator.calibration.problem import _norm

        for i, it in enumerate(items):
            for p in pts:
                if all(_norm(p["labels"].get(a)) == _norm(v) for a, v in it.labels.items()):
                    extra[i] = p["hdr"]
                    break
    return items, rows, extra


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
            if k.endswith(".iops"):
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


def _write_report(problem: Problem, fit: FitResult, items: list[Item], rows: dict[int, dict[str, Any]], extra: dict[int, Any],
                  out: Path, profile: Path | None, date: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
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
        f"Generated by `simrun calibrate {_rel(problem.loaded.path)}` on {date}: {fit.evals} evaluations in "
        f"{fit.wall_s:.0f} s wall (stopped by: {fit.stopped_by}); seed {spec.seed} for every evaluation (common random numbers)"
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


def _fit_from_profile(problem: Problem, path: Path, runner: Any, report_dir: Path) -> FitResult:
    """The fitted values of an existing profile (and its provenance and evaluation history) as a
    FitResult, with the start and fitted points evaluated again."""
    from simulator.calibration.spec import quantity
    from simulator.devices.registry import load_profile

    prof = load_profile(str(path))
    prov = prof.get("provenance") or {}
    comp = problem.component_of_profile()
    prefix = f"{comp}.params."
    vals: dict[str, Any] = {}
    for f in problem.params:
        if f.key.startswith("workload."):
            v = (prov.get("workload_options") or {}).get(f.key.split(".", 1)[1])
        else:
            v = get_dotted(prof["params"], f.key[len(prefix):])
        if v is None:
            raise ConfigError(f"the profile has no value for {f.key}", source=str(path), field="params")
        vals[f.key] = v if f.discrete else quantity(v)[0]
    start = Optimizer(problem, runner).start_values()
    start_res, res = problem.evaluate_many([start, vals], runner)
    history: list[dict[str, Any]] = []
    h = report_dir / "history.csv"
    if h.is_file():
        from simulator.calibration.problem import read_csv_rows

        history = [dict(r) for r in read_csv_rows(h)]
    return FitResult(values=vals, result=res, start_values=start, start_result=start_res, history=history,
                     evals=int(prov.get("evaluations") or len(history)), wall_s=float(prov.get("wall_s") or 0.0),
                     stopped_by=str(prov.get("stopped_by") or "?"),
                     note=f"This report was regenerated with `--report-only` from `{_rel(path)}` (no refit): the start and fitted "
                          "points were simulated again with the current code; the loss figures below are from that run, "
                          f"the evaluation history is the original fit's (loss then: {prov.get('loss')}).")


def calibrate(
    spec_path: str | Path,
    *,
    report_dir: Path | None = None,
    profile_path: Path | None = None,
    workers: int | None = None,
    max_evals: int | None = None,
    max_wall: str | float | None = None,
    progress: bool = True,
    console: Any = None,
    date: str | None = None,
    write_profile_file: bool = True,
    report_only: bool = False,
) -> CalibrationOutcome:
    """Run a calibration spec (see :mod:`simulator.calibration.spec`). ``report_only``: no fit; the
    values are read from the existing fitted profile and only the report is regenerated."""
    loaded: LoadedSpec = load_spec(spec_path)
    upd: dict[str, Any] = {}
    if max_evals is not None:
        upd["max_evals"] = max_evals
    if max_wall is not None:
        from simulator.calibration.spec import quantity

        try:
            if quantity(max_wall)[0] <= 0:
                raise ValueError
        except (ValueError, TypeError):
            raise ConfigError(f"expected a positive duration (30m, 1800), got {max_wall!r}", source="command line", field="--max-wall") from None
        upd["max_wall"] = max_wall
    if upd:
        loaded.spec = loaded.spec.model_copy(update={"budget": loaded.spec.budget.model_copy(update=upd)})
    problem = Problem(loaded)  # every check before anything runs or is written
    out = report_dir if report_dir is not None else loaded.report_dir()
    prof = profile_path if profile_path is not None else (loaded.profile_out() if write_profile_file else None)
    if prof is not None:
        problem.component_of_profile()
    date = date or _dt.date.today().isoformat()
    n_workers = workers if workers is not None else (loaded.spec.workers or os.cpu_count() or 1)
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    prog = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} evals"),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        console=console,
        disable=not progress,
        transient=False,
    )
    with open_executor(n_workers) as ex, prog:
        task = prog.add_task(f"calibrate {loaded.spec.name}", total=loaded.spec.budget.max_evals, info="")

        plain = progress and console is not None and not getattr(console, "is_terminal", True)
        last = [0.0]

        def cb(s: dict[str, Any]) -> None:
            info = f"{s['stage']}  best loss {s['best']:.4g} (rms {s['best_rms']:.3f})  {s['rate']:.3f} eval/s"
            prog.update(task, completed=s["evals"], info=info)
            if plain and s["wall"] - last[0] >= 30.0:
                last[0] = s["wall"]
                console.print(f"[{s['wall']:.0f} s] {s['evals']}/{s['max_evals']} evals  {info}", highlight=False)

        runner = make_runner(ex)
        if report_only:
            if prof is None or not prof.is_file():
                raise ConfigError("--report-only needs the fitted profile (output.profile) to exist", source=str(spec_path),
                                  field="output.profile")
            fit = _fit_from_profile(problem, prof, runner, out)
        else:
            fit = Optimizer(problem, runner, cb).run()
        prog.update(task, description=f"final runs {loaded.spec.name}")
        items, rows, extra = final_results(problem, fit.values, runner)
    if report_only:
        prof = None
    written_profile = None
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        if prof is not None:
            written_profile = write_profile(problem, fit, prof, date)
        metric_rows, points = _write_report(problem, fit, items, rows, extra, tmp, written_profile, date)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return CalibrationOutcome(fit, problem, out, written_profile, metric_rows, points)


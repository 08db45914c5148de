"""Which fitted parameters the data identify: the loss around a fit, one parameter at a time.

``simrun calibrate SPEC --identify`` evaluates the installed fit (the values in the fitted profile) and its
neighbours: each continuous free parameter moved by ``step`` in the optimiser's unit coordinate (``u`` in [0, 1]:
the bounds, on the parameter's own scale, log or linear) to both sides, or twice to one side at a bound; each
discrete parameter at each of its other choices. All points use the campaign's seed (common random numbers), so
differences between them are the parameters' effect, not sampling noise.

Per continuous parameter the second difference gives the loss curvature ``c = d²L/du²``. The loss is
``½ Σ w (ln ratio / σ)²`` (+ priors); for a model that fits to within σ, ``1/sqrt(c)`` would be the standard error
of ``u``. A fit whose weighted rms log error is larger than σ (every fit of a real cluster so far) is mis-specified
at σ's scale, and its errors are inflated by ``rms / σ`` (the reduced chi-square convention):
``sigma_u = (rms / σ) / sqrt(c)``. Verdicts:

- **identified**: ``c > 0`` and the one-sigma interval ``u0 ± sigma_u`` covers less than half the search range;
  the interval is given in the parameter's units.
- **weakly identified**: ``c > 0`` but the interval covers half the range or more.
- **not identified**: the interval is wider than the whole range, or ``c <= 0`` (the loss does not rise to both
  sides: flat, or the fit is not a minimum along this parameter at this step).

The points that move most per parameter (weighted ``d ln ratio / du``, fitted points only) say which measurements
carry the information. The test is local and one parameter at a time: correlated parameters (a ridge) look
identified one by one and are not jointly; the step sets what "local" means, and a loss with thresholds (caches
that fill or not) is rough at small steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.calibration.problem import EvalResult, Problem
from simulator.calibration.report import display_value

__all__ = ["Identification", "ParamIdent", "identify", "render_csv", "render_md"]


@dataclass(frozen=True)
class ParamIdent:
    """The loss around the fit along one free parameter."""

    key: str
    name: str
    discrete: bool
    fitted: Any
    loss0: float
    # continuous: the evaluated unit coordinates and losses (center first), curvature, sigma, interval, verdict
    points: tuple[tuple[float, float], ...] = ()
    curvature: float | None = None
    sigma_u: float | None = None
    interval: tuple[float, float] | None = None
    verdict: str = ""
    movers: tuple[tuple[str, float], ...] = ()
    # discrete: loss at each other choice
    alternatives: tuple[tuple[Any, float], ...] = ()


@dataclass(frozen=True)
class Identification:
    spec: str
    step: float
    sigma: float
    loss0: float
    rms0: float
    params: tuple[ParamIdent, ...]
    evaluations: int
    failures: tuple[str, ...] = field(default=())


def _neighbours(u0: float, h: float) -> tuple[float, float]:
    """Two evaluation points around u0: central when both fit in [0, 1], else two steps to the open side."""
    if u0 - h >= 0.0 and u0 + h <= 1.0:
        return u0 - h, u0 + h
    if u0 + 2 * h <= 1.0:
        return u0 + h, u0 + 2 * h
    return u0 - h, u0 - 2 * h


def _curvature(pts: list[tuple[float, float]]) -> float:
    """Second derivative of the parabola through three (u, loss) points."""
    (x0, y0), (x1, y1), (x2, y2) = sorted(pts)
    d1 = (y1 - y0) / (x1 - x0)
    d2 = (y2 - y1) / (x2 - x1)
    return 2.0 * (d2 - d1) / (x2 - x0)


def _verdict(pts: list[tuple[float, float]], scale: float) -> tuple[str, float | None]:
    """(verdict, sigma_u) from the fit's point (first) and its two neighbours, with notes: a neighbour with a lower
    loss than the fit (the fit is not a minimum along this parameter), and a rise to one side more than 5x the other
    (a threshold of the loss near the fit: the interval then measures how rough the loss is, not how well the data
    pin the parameter)."""
    (_, y0), *nb = pts
    c = _curvature(pts)
    lower = [(u, y) for u, y in nb if y < y0]
    notes = []
    if lower:
        u, y = min(lower, key=lambda t: t[1])
        notes.append(f"not at a minimum: loss {y:.4g} at u {u:.3f}")
    rises = sorted(y - y0 for _, y in nb)
    if not lower and rises[0] > 0 and rises[1] > 5 * rises[0]:
        notes.append("a threshold near the fit (one side rises >5x the other)")
    if c <= 0:
        return "; ".join(["not identified", *notes]), None
    su = scale / math.sqrt(c)
    v = "identified" if 2 * su < 0.5 else "weakly identified" if 2 * su < 1.0 else "not identified"
    return "; ".join([v, *notes]), su


def _residual_map(r: EvalResult) -> dict[tuple[str, str], tuple[float, float]]:
    out = {}
    for d in r.residuals:
        lr = d.get("log_ratio")
        if d.get("predict") or lr is None or not math.isfinite(lr) or not d.get("weight"):
            continue
        out[(d["item"], d["metric"])] = (float(lr), float(d["weight"]))
    return out


def identify(problem: Problem, values: dict[str, Any], runner: Callable[..., list[Any]], *, step: float = 0.05,
             spec_label: str = "", on_result: Callable[[int, EvalResult], None] | None = None,
             on_plan: Callable[[int], None] | None = None) -> Identification:
    """Evaluate ``values`` and its one-parameter neighbours (see the module docstring). ``on_plan(n)`` is told how
    many evaluations there will be, ``on_result(i, result)`` as each finishes (progress display)."""
    if not 0.0 < step <= 0.25:
        raise ValueError(f"step must be in (0, 0.25], got {step}")
    sets: list[dict[str, Any]] = [dict(values)]
    plan: list[tuple[Any, float, list[tuple[int, float | Any]]]] = []  # (param, its u at the fit, [(set index, u or choice)])
    for f in problem.params:
        idx: list[tuple[int, Any]] = []
        u0 = 0.0
        if f.discrete:
            for c in f.choices:
                if c != values[f.key]:
                    idx.append((len(sets), c))
                    sets.append({**values, f.key: c})
        else:
            u0 = min(1.0, max(0.0, f.to_unit(float(values[f.key]))))
            for u in _neighbours(u0, step):
                idx.append((len(sets), u))
                sets.append({**values, f.key: f.to_value(u)})
        plan.append((f, u0, idx))
    if on_plan is not None:
        on_plan(len(sets))
    results = problem.evaluate_many(sets, runner, on_result=on_result)
    base = results[0]
    failures = tuple(f"{i}: {r.failed}" for i, r in enumerate(results) if r.failed)
    if base.failed or not math.isfinite(base.loss):
        raise RuntimeError(f"the fitted point itself failed to evaluate: {base.failed}")
    sigma = float(problem.spec.loss.sigma)
    scale = max(1.0, base.rms / sigma) if math.isfinite(base.rms) else 1.0
    res0 = _residual_map(base)
    out: list[ParamIdent] = []
    for f, u0, idx in plan:
        if f.discrete:
            out.append(ParamIdent(f.key, f.name, True, values[f.key], base.loss,
                                  alternatives=tuple((c, results[i].loss) for i, c in idx)))
            continue
        pts = [(u0, base.loss)] + [(u, results[i].loss) for i, u in idx]
        if not all(math.isfinite(y) for _, y in pts):
            out.append(ParamIdent(f.key, f.name, False, values[f.key], base.loss, points=tuple(pts),
                                  verdict="not evaluated (a neighbour failed)"))
            continue
        c = _curvature(pts)
        movers: dict[tuple[str, str], float] = {}
        (ua, ra), (ub, rb) = [(u, _residual_map(results[i])) for i, u in idx]
        for k, (_, w) in res0.items():
            if k in ra and k in rb:
                movers[k] = w * (rb[k][0] - ra[k][0]) / (ub - ua)
        top = sorted(movers.items(), key=lambda kv: -abs(kv[1]))[:3]
        mv = tuple((f"{a} {m}", d) for (a, m), d in top)
        verdict, su = _verdict(pts, scale)
        iv = None if su is None else (f.to_value(max(0.0, u0 - su)), f.to_value(min(1.0, u0 + su)))
        out.append(ParamIdent(f.key, f.name, False, values[f.key], base.loss, points=tuple(pts), curvature=c, sigma_u=su,
                              interval=iv, verdict=verdict, movers=mv))
    return Identification(spec_label, step, sigma, base.loss, base.rms, tuple(out), len(sets), failures)


def render_csv(ident: Identification, problem: Problem) -> str:
    import csv
    import io

    kinds = {f.key: f for f in problem.params}
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["key", "name", "fitted", "loss_fitted", "u_points", "losses", "curvature", "sigma_u", "interval_lo",
                "interval_hi", "verdict", "moves_most", "alternatives"])
    for p in ident.params:
        f = kinds[p.key]
        w.writerow([p.key, p.name, p.fitted, f"{p.loss0:.6g}", " ".join(f"{u:.4f}" for u, _ in p.points),
                    " ".join(f"{y:.6g}" for _, y in p.points),
                    "" if p.curvature is None else f"{p.curvature:.6g}", "" if p.sigma_u is None else f"{p.sigma_u:.4f}",
                    "" if p.interval is None else display_value(p.interval[0], f.unit_kind, f.integer),
                    "" if p.interval is None else display_value(p.interval[1], f.unit_kind, f.integer),
                    p.verdict, "; ".join(f"{m} {d:+.3g}" for m, d in p.movers),
                    "; ".join(f"{c}={y:.6g}" for c, y in p.alternatives)])
    return buf.getvalue()


def render_md(ident: Identification, problem: Problem, wall_s: float | None = None) -> str:
    kinds = {f.key: f for f in problem.params}
    lines = [f"# Identifiability of the fit: {ident.spec}", "",
             f"Generated by `simrun calibrate {ident.spec} --identify` (step {ident.step:g} of each parameter's search range, "
             f"on its own scale; {ident.evaluations} evaluations"
             + (f", {wall_s:.0f} s wall" if wall_s is not None else "") + "). "
             f"Loss at the fit {ident.loss0:.4g}, weighted rms log error {ident.rms0:.3f} against the loss's σ = {ident.sigma:g}: "
             f"one-sigma intervals are inflated by rms/σ = {max(1.0, ident.rms0 / ident.sigma):.2f} "
             "(`simulator/calibration/identify.py` gives the method and its limits: local, one parameter at a time).", "",
             "| parameter | fitted | loss at u0 − / + | curvature d²L/du² | sigma_u | one-sigma interval | verdict | moves most (weighted d ln ratio / du) |",
             "|---|---|---|---|---|---|---|---|"]
    for p in ident.params:
        if p.discrete:
            continue
        f = kinds[p.key]
        nb = ", ".join(f"{y:.4g} (u {u:.3f})" for u, y in p.points[1:])
        iv = "–" if p.interval is None else f"{display_value(p.interval[0], f.unit_kind, f.integer)} .. {display_value(p.interval[1], f.unit_kind, f.integer)}"
        lines.append(f"| `{p.name}` | {display_value(p.fitted, f.unit_kind, f.integer)} (u {p.points[0][0]:.3f}) | {nb} | "
                     f"{'–' if p.curvature is None else f'{p.curvature:.4g}'} | {'–' if p.sigma_u is None else f'{p.sigma_u:.3f}'} | "
                     f"{iv} | **{p.verdict}** | {'; '.join(f'{m} {d:+.3g}' for m, d in p.movers) or '–'} |")
    disc = [p for p in ident.params if p.discrete]
    if disc:
        lines += ["", "Discrete parameters (the other choices at the fitted continuous values):", "",
                  "| parameter | fitted | loss at the fit | other choices: loss |", "|---|---|---|---|"]
        for p in disc:
            lines.append(f"| `{p.name}` | {p.fitted} | {p.loss0:.4g} | " + ", ".join(f"{c}: {y:.4g}" for c, y in p.alternatives) + " |")
    if ident.failures:
        lines += ["", "Evaluations that failed: " + "; ".join(ident.failures)]
    return "\n".join(lines) + "\n"


def write_outputs(ident: Identification, problem: Problem, report_dir: Path, wall_s: float | None = None) -> list[Path]:
    """identify.csv and identify.md in the report directory, each written atomically."""
    from simulator.experiment.runner import atomic_write_text

    report_dir.mkdir(parents=True, exist_ok=True)
    paths = [report_dir / "identify.csv", report_dir / "identify.md"]
    atomic_write_text(paths[0], render_csv(ident, problem))
    atomic_write_text(paths[1], render_md(ident, problem, wall_s))
    return paths

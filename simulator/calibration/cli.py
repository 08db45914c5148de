"""Bodies of the ``simrun calibrate`` and ``simrun compare`` commands (kept out of simulator/cli.py)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

__all__ = ["calibrate_main", "compare_main", "status_main"]


def calibrate_main(spec: Path, out: Path | None, profile: Path | None, no_profile: bool, workers: int | None,
                   max_evals: int | None, quiet: bool, console: Any, err_console: Any, max_wall: str | None = None,
                   report_only: bool = False, cases: list[str] | None = None, fresh: bool = False,
                   revalidate: bool = False) -> None:
    from rich.table import Table

    from simulator.calibration.calibrate import calibrate_all
    from simulator.calibration.report import display_value

    outs = calibrate_all(spec, cases=cases, report_dir=out, profile_path=profile, workers=workers, max_evals=max_evals,
                         max_wall=max_wall, progress=not quiet, report_only=report_only, console=err_console,
                         write_profile_file=not no_profile, fresh=fresh, revalidate=revalidate)

    def pct(v: Any) -> str:
        return "–" if v is None or not isinstance(v, float) or not math.isfinite(v) else f"{(math.exp(v) - 1) * 100:+.0f}%"

    def err(e: Any) -> str:
        return "–" if e is None or not isinstance(e, float) or not math.isfinite(e) else f"{e:+.1f}%"

    for o in outs:
        fit = o.fit
        case = o.problem.loaded.case
        t = Table(title=f"{o.problem.spec.name}{f' [{case}]' if case else ''}: fitted parameters")
        for c in ("parameter", "start", "fitted"):
            t.add_column(c, justify="left" if c == "parameter" else "right")
        for f in o.problem.params:
            t.add_row(f.key, display_value(fit.start_values[f.key], f.unit_kind, f.integer),
                      display_value(fit.values[f.key], f.unit_kind, f.integer))
        console.print(t)
        pt = Table(title="fit (targets) and prediction per point")
        for c in ("set", "item", "dir", "IOPS err", "bandwidth err", "mean", "p50", "p99", "demerit %"):
            pt.add_column(c, justify="left" if c in ("set", "item", "dir") else "right")
        for p in o.points:
            d = p.get("demerit_pct")
            pt.add_row(p["set"], p["item"], p["direction"], err(p.get("iops_err_pct")), err(p.get("bw_err_pct")),
                       pct(p.get("mean_log_ratio")), pct(p.get("p50_log_ratio")), pct(p.get("p99_log_ratio")),
                       "–" if d is None or not math.isfinite(d) else f"{d:.0f}")
        console.print(pt)
        console.print(
            f"loss {fit.start_result.loss:.4g} -> {fit.result.loss:.4g} (rms log error {fit.result.rms:.3f}); {fit.evals} evaluations "
            f"(campaign wall {fit.wall_s:.0f} s; stopped by {fit.stopped_by}); report in {_shown(o.report_dir)}"
            + (f"; profile {_shown(o.profile)}" if o.profile else "")
        )


def identify_main(spec: Path, out: Path | None, profile: Path | None, workers: int | None, step: float, cases: list[str] | None,
                  console: Any, err_console: Any = None) -> None:
    from rich.table import Table

    from simulator.calibration.calibrate import identify_all
    from simulator.calibration.report import display_value

    for ident, prob, paths in identify_all(spec, cases=cases, report_dir=out, profile_path=profile, workers=workers, step=step,
                                                   console=err_console):
        kinds = {f.key: f for f in prob.params}
        t = Table(title=f"{ident.spec}: identifiability at the fit (loss {ident.loss0:.4g}, rms log error {ident.rms0:.3f})")
        for c in ("parameter", "fitted", "curvature", "one-sigma interval", "verdict"):
            t.add_column(c, justify="right" if c == "curvature" else "left")
        for p in ident.params:
            f = kinds[p.key]
            if p.discrete:
                t.add_row(p.name, str(p.fitted), "–", ", ".join(f"{c}: loss {y:.4g}" for c, y in p.alternatives), "choice")
                continue
            iv = "–" if p.interval is None else (f"{display_value(p.interval[0], f.unit_kind, f.integer)} .. "
                                                 f"{display_value(p.interval[1], f.unit_kind, f.integer)}")
            t.add_row(p.name, display_value(p.fitted, f.unit_kind, f.integer),
                      "–" if p.curvature is None else f"{p.curvature:.4g}", iv, p.verdict)
        console.print(t)
        console.print(f"written: {', '.join(_shown(x) for x in paths)}")


def _shown(p: Path | None) -> str:
    """A path for the console: relative to the working directory when below it."""
    if p is None:
        return ""
    try:
        return str(Path(p).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def compare_main(system: str, measured: list[str], out: Path | None, runtime: float | None, seed: int, device: str | None,
                 workers: int | None, console: Any, latency: str | None = None, sets: list[tuple[str, Any]] | None = None) -> None:
    from simulator.calibration.compare import compare_files, render

    rows = compare_files(system, measured, out=out, runtime=runtime, seed=seed, device=device, workers=workers, latency=latency,
                         sets=sets)
    render(rows, console, f"simulated ({system}) vs measured")
    if out is not None:
        console.print(f"compare.csv and plots in {out}")


def status_main(spec: Path, out: Path | None, cases: list[str] | None, console: Any) -> None:
    """``simrun calibrate SPEC --status``: how far each campaign's journal is (nothing run or written)."""
    from simulator.calibration.calibrate import _hms, campaign_status
    from simulator.calibration.report import display_value

    for st in campaign_status(spec, cases=cases, report_dir=out):
        name = st["campaign"] + (f" [{st['case']}]" if st["case"] else "")
        console.print(f"[bold]{name}[/bold]: journal {_shown(st['journal'])}", highlight=False)
        if st["running"]:
            console.print(f"  running now (pid {st['running']} holds the lock)", highlight=False)
        if not st["exists"]:
            console.print("  no journal yet: nothing evaluated (the first run creates it)", highlight=False)
            continue
        h = st["header"]
        console.print(f"  started {h.get('created')} at commit {h.get('commit')}"
                      + (f"; evaluations from {st['sessions']} session(s)" if st["sessions"] else ""), highlight=False)
        stages = ", ".join(f"{k} {v}" for k, v in st["stages"].items())
        console.print(f"  evaluations: {st['evals']} of budget {st['max_evals']}" + (f" ({stages})" if stages else "")
                      + f"; failed {st['failed']}"
                      + ("; its last entry is cut off (dropped on resume)" if st["torn"] else ""), highlight=False)
        left = max(0, st["max_evals"] - st["evals"])
        per = st["recent_s_per_eval"]
        eta = f"; ~{_hms(left * per)} left at the recent {per:.0f} s per evaluation" if per and left else ""
        console.print(f"  campaign wall used: {_hms(st['wall_s'])} of budget {_hms(st['max_wall_s'])}{eta}", highlight=False)
        b = st["best"]
        if b is not None:
            vals = ", ".join(f"{f.name}={display_value(b.values[k], f.unit_kind, f.integer)}" for k, f in st["params"].items())
            console.print(f"  best loss so far: {b.loss:.4g} (rms log error {b.rms:.3f}), evaluation {b.n} ({b.stage}): {vals}",
                          highlight=False, markup=False)
        if st["differs"]:
            console.print(f"  [red]inputs changed since it started: {', '.join(st['differs'])}[/red]: a resume refuses this journal "
                          "(run the commit it was made with, --fresh to start over, or --revalidate if only the code differs and "
                          "should not change results)", highlight=False)
        else:
            console.print("  inputs unchanged: running the same command resumes it", highlight=False)

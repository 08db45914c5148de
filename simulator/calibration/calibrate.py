"""``simrun calibrate SPEC.yaml``: fit, then write the fitted profile and a report.

This module is the run (validation, optimiser, final simulation, atomic output); the profile is
written by :mod:`~simulator.calibration.profile`, the report by :mod:`~simulator.calibration.report`.
A spec with ``cases:`` is fitted case by case (:func:`calibrate_all`).

Order of work: the spec is validated completely (structure, every file and table, every discrete
choice and the mid point of the continuous ranges built into a system) before anything runs or any
file is written; then the optimiser runs (process pool, progress display); then the best point is
simulated once more with full results for the report (targets and predictions), and the report
directory and the profile are written (the report into a temporary directory renamed at the end).

Resume: every finished evaluation is journaled in the campaign's work directory (``<report>.work/``,
:mod:`~simulator.calibration.journal`, locked for the run); running the same command again after an
interruption (Ctrl-C, SIGTERM, kill -9, a restart) takes the journaled evaluations instead of simulating
them and carries on, to the byte-identical profile and report. ``--status`` (:func:`campaign_status`)
tells how far a campaign's journal is without running anything.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.calibration.optimize import FitResult, Optimizer
from simulator.calibration.problem import Item, Problem, make_runner
from simulator.calibration.profile import write_profile
from simulator.calibration.report import write_report
from simulator.calibration.spec import LoadedSpec, load_spec, rel_to
from simulator.config.base import get_dotted
from simulator.errors import ConfigError

__all__ = ["CalibrationOutcome", "calibrate", "calibrate_all", "calibrate_loaded", "campaign_status", "final_results", "open_executor"]


@dataclass
class CalibrationOutcome:
    fit: FitResult
    problem: Problem
    report_dir: Path | None
    profile: Path | None
    rows: list[dict[str, Any]]  # per item and metric, targets and predictions
    points: list[dict[str, Any]]  # per item: IOPS error, log ratios, demerit


@contextlib.contextmanager
def open_executor(workers: int | None):
    """A process pool (fork) for ``workers`` > 1, else None (inline). The workers ignore Ctrl-C (the main
    process decides) and end themselves when the main process is gone (killed); an exception or Ctrl-C in
    the main process terminates them at once instead of waiting for their units."""
    n = workers if workers is not None else (os.cpu_count() or 1)
    if n <= 1:
        yield None
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    from simulator.experiment.runner import _init_worker, stop_pool_now

    ctx = mp.get_context("fork" if os.name != "nt" else "spawn")
    ex = ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=_init_worker, initargs=(None, os.getpid()))
    try:
        yield ex
    except BaseException:
        stop_pool_now(ex)
        raise
    else:
        ex.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """SIGTERM (``kill PID``, a shutdown) stops a calibration like Ctrl-C: workers stopped, journal kept."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


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


def profile_values(problem: Problem, path: Path) -> dict[str, Any]:
    """The free parameters' values in an existing fitted profile (its params, or its provenance for variables and
    workload options)."""
    from simulator.calibration.spec import quantity
    from simulator.devices.registry import load_profile

    prof = load_profile(str(path))
    prov = prof.get("provenance") or {}
    comp = problem.component_of_profile()
    prefix = f"{comp}.params."
    vals: dict[str, Any] = {}
    for f in problem.params:
        if f.key.startswith("var."):
            v = (prov.get("fitted_variables") or {}).get(f.key[4:])
        elif f.key.startswith("workload."):
            v = (prov.get("workload_options") or {}).get(f.key.split(".", 1)[1])
        else:
            v = get_dotted(prof["params"], f.key[len(prefix):])
        if v is None:
            raise ConfigError(f"the profile has no value for {f.key}", source=str(path), field="params")
        vals[f.key] = v if f.discrete else quantity(v)[0]
    return vals


def _fit_from_profile(problem: Problem, path: Path, runner: Any, report_dir: Path) -> FitResult:
    """The fitted values of an existing profile (and its provenance and evaluation history) as a
    FitResult, with the start and fitted points evaluated again."""
    from simulator.devices.registry import load_profile

    prov = load_profile(str(path)).get("provenance") or {}
    vals = profile_values(problem, path)
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
                     note=f"This report was regenerated with `--report-only` from `{rel_to(path, report_dir)}` (no refit): the start and fitted "
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
    fresh: bool = False,
    revalidate: bool = False,
) -> CalibrationOutcome:
    """Run a calibration spec without cases (see :mod:`simulator.calibration.spec`). ``report_only``:
    no fit; the values are read from the existing fitted profile and only the report is regenerated.
    ``fresh``: move the campaign's journal aside and start over (default: resume from it)."""
    return calibrate_loaded(load_spec(spec_path), report_dir=report_dir, profile_path=profile_path, workers=workers,
                            max_evals=max_evals, max_wall=max_wall, progress=progress, console=console, date=date,
                            write_profile_file=write_profile_file, report_only=report_only, fresh=fresh,
                            revalidate=revalidate)


def _select_cases(spec_path: str | Path, cases: list[str] | None, profile_path: Path | None) -> tuple[list[LoadedSpec], bool]:
    """The loaded spec (or its cases named in ``cases``, all by default) and whether it has cases."""
    from simulator.calibration.spec import load_cases

    loaded = load_cases(spec_path)
    multi = loaded[0].case is not None
    if cases:
        if not multi:
            raise ConfigError("--case is for a spec with cases:", source=str(spec_path), field="cases")
        names = [x.case for x in loaded]
        for c in cases:
            if c not in names:
                raise ConfigError(f"no case {c!r} (cases: {', '.join(n or '' for n in names)})", source=str(spec_path), field="cases")
        loaded = [x for x in loaded if x.case in cases]
    if multi and profile_path is not None:
        raise ConfigError("--profile names one file; a spec with cases writes one profile per case (output.profile)",
                          source=str(spec_path), field="output.profile")
    return loaded, multi


def calibrate_all(spec_path: str | Path, *, cases: list[str] | None = None, report_dir: Path | None = None,
                  profile_path: Path | None = None, **kw: Any) -> list[CalibrationOutcome]:
    """Run a spec: every case of a multi-case spec (or those named in ``cases``) one after the other,
    each with its own profile and report sub-directory, then the cases' summary (``report.md`` of the
    spec's report directory, from every case report on disk); a plain spec once. Every case is
    validated before the first one runs."""
    loaded, multi = _select_cases(spec_path, cases, profile_path)
    problems = [Problem(x) for x in loaded]  # every case checked before anything runs
    outs = []
    for x, prob in zip(loaded, problems, strict=True):
        rd = None if report_dir is None else (report_dir / x.case if x.case else report_dir)
        outs.append(calibrate_loaded(x, report_dir=rd, profile_path=profile_path, problem=prob, **kw))
    if multi:
        from simulator.calibration.report import write_cases_summary
        from simulator.calibration.spec import load_cases

        base = report_dir if report_dir is not None else loaded[0].report_dir().parent
        write_cases_summary(load_cases(spec_path), base, kw.get("date") or _dt.date.today().isoformat())
    return outs


@contextlib.contextmanager
def _eval_progress(console: Any, title: str):
    """A rich progress bar over a batch of evaluations: yields (on_plan(n), on_result(i, result)); silent without a
    console."""
    if console is None:
        yield (lambda n: None), (lambda i, r: None)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("evaluations"),
                  TimeElapsedColumn(), console=console, transient=False) as prog:
        task = prog.add_task(title, total=None)
        yield (lambda n: prog.update(task, total=n)), (lambda i, r: prog.advance(task))


def identify_all(spec_path: str | Path, *, cases: list[str] | None = None, report_dir: Path | None = None,
                 profile_path: Path | None = None, workers: int | None = None, step: float = 0.05,
                 console: Any = None) -> list[tuple[Any, Problem, list[Path]]]:
    """``--identify``: for each case (or the plain spec), evaluate the installed fit (the fitted profile's values) and
    its one-parameter neighbours and write identify.csv / identify.md into the report directory
    (:mod:`simulator.calibration.identify`). Nothing is fitted and the journal is not touched."""
    import time

    from simulator.calibration.identify import identify, write_outputs

    if not 0.0 < step <= 0.25:
        raise ConfigError(f"expected a step in (0, 0.25] of the search range, got {step:g}", source="command line", field="--step")
    loaded, _ = _select_cases(spec_path, cases, profile_path)
    problems = [Problem(x) for x in loaded]
    out = []
    for x, prob in zip(loaded, problems, strict=True):
        prof = profile_path if profile_path is not None else x.profile_out()
        if prof is None or not Path(prof).is_file():
            raise ConfigError("--identify needs the fitted profile (output.profile) to exist: run the calibration first",
                              source=str(x.path), field="output.profile")
        rd = x.report_dir() if report_dir is None else (report_dir / x.case if x.case else report_dir)
        vals = profile_values(prob, Path(prof))
        n_workers = workers if workers is not None else (x.spec.workers or os.cpu_count() or 1)
        label = rel_to(x.path, Path.cwd()) + (f" --case {x.case}" if x.case else "")
        t0 = time.perf_counter()
        with open_executor(n_workers) as ex, _eval_progress(console, f"identify {x.spec.name}") as (plan, tick):
            ident = identify(prob, vals, make_runner(ex), step=step, spec_label=label, on_plan=plan, on_result=tick)
        out.append((ident, prob, write_outputs(ident, prob, rd, time.perf_counter() - t0)))
    return out


def calibrate_loaded(
    loaded: LoadedSpec,
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
    problem: Problem | None = None,
    fresh: bool = False,
    revalidate: bool = False,
) -> CalibrationOutcome:
    """Fit one validated spec (or case) and write its profile and report. ``revalidate``: a journal made
    with other simulator code (and nothing else different) is resumed if its last evaluation, simulated
    again, gives identical results; otherwise nothing is kept from this run."""
    spec_path = loaded.path
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
    if problem is None:
        problem = Problem(loaded)  # every check before anything runs or is written
    else:
        problem.spec = loaded.spec
    out = report_dir if report_dir is not None else loaded.report_dir()
    prof = profile_path if profile_path is not None else (loaded.profile_out() if write_profile_file else None)
    if prof is not None:
        problem.component_of_profile()
    n_workers = workers if workers is not None else (loaded.spec.workers or os.cpu_count() or 1)
    title = loaded.spec.name + (f" [{loaded.case}]" if loaded.case else "")
    say = (lambda m: console.print(m, highlight=False, markup=False, soft_wrap=True)) if (console is not None and progress) else (lambda m: None)
    if report_only:
        date = date or _dt.date.today().isoformat()
        with open_executor(n_workers) as ex:
            runner = make_runner(ex)
            if prof is None or not prof.is_file():
                raise ConfigError("--report-only needs the fitted profile (output.profile) to exist", source=str(spec_path),
                                  field="output.profile")
            fit = _fit_from_profile(problem, prof, runner, out)
            items, rows, extra = final_results(problem, fit.values, runner)
        return _write_outputs(problem, fit, items, rows, extra, out, None, date, timing=None)
    from simulator.calibration.journal import Journal, campaign_inputs, read_journal, work_dir
    from simulator.experiment.runner import Interrupted, OutputLock

    wdir = work_dir(out)
    jpath = wdir / "journal.jsonl"
    inputs = campaign_inputs(problem)
    if jpath.exists() and not fresh:
        read_journal(jpath)  # a damaged journal stops here: nothing written yet
    with OutputLock(wdir):
        if revalidate and jpath.exists() and not fresh:
            _revalidate(problem, jpath, inputs, n_workers, say)
        journal = Journal.open(jpath, problem, inputs, fresh=fresh, say=say)
        try:
            date = date or journal.date
            if journal.entries:
                say(f"resuming {title} from {jpath}: {len(journal.entries)} evaluations journaled "
                    f"({journal.wall0 / 3600:.2f} h of campaign wall)")
            fit, items, rows, extra, opt = _fit(problem, journal, n_workers, title, progress, console)
            timing = {"campaign_wall_s": round(fit.wall_s, 1), "evaluations": fit.evals, "simulated_this_session": opt.simulated,
                      "reused_from_journal": opt.resumed, "sessions": journal.session, "workers": n_workers,
                      "journal": str(jpath)}
            outcome = _write_outputs(problem, fit, items, rows, extra, out, prof, date, timing=timing)
            journal.end({"date": date, "evaluations": fit.evals, "stopped_by": fit.stopped_by, "loss": fit.result.loss,
                         "wall_s": round(fit.wall_s, 3)})
        except KeyboardInterrupt:
            n = len(journal.entries)
            raise Interrupted(f"interrupted: the workers were stopped; {n} evaluations are journaled in {jpath}. "
                              "Run the same command again to resume (--status shows how far it is)") from None
        finally:
            journal.close()
    return outcome


def _revalidate(problem: Problem, jpath: Path, inputs: dict[str, str], n_workers: int, say: Callable[[str], None]) -> None:
    """--revalidate: if the journal differs from this campaign only in the simulator's code, simulate its last
    successful evaluation again; identical results move the journal onto this code (journal.rebase_code),
    any difference refuses it (a ConfigError naming the first difference; the journal is left as it was)."""
    from simulator.calibration.journal import (
        input_diff,
        mismatch_error,
        read_journal,
        rebase_code,
        rows_differ,
    )

    jf = read_journal(jpath)
    diff = input_diff(jf.header, inputs)
    if not diff:
        return
    done = [e for e in jf.entries if not e.failed]
    if diff != ["code"] or not done:
        raise mismatch_error(jpath, jf, diff)
    e = done[-1]
    say(f"--revalidate: the journal was made with other simulator code (commit {jf.header.get('commit')}); simulating its "
        f"evaluation {e.n} again to check that this code gives the same results")
    with open_executor(n_workers) as ex:
        res = problem.evaluate_many([dict(e.values)], make_runner(ex))[0]
    why = "the evaluation failed now" if res.failed else rows_differ(e.rows, res.rows)
    if why is not None:
        raise ConfigError(f"--revalidate: evaluation {e.n} simulated again differs from the journal ({why}): this code changes "
                          "the results, so the journal cannot be resumed with it; nothing was changed. Run the code it was "
                          "made with, or --fresh to start over", source=str(jpath), field="inputs.code")
    rebase_code(jpath, inputs, e)
    say(f"--revalidate: evaluation {e.n} is identical (every result row); the journal continues on this code")


def _fit(problem: Problem, journal: Any, n_workers: int, title: str, progress: bool, console: Any) -> Any:
    """The optimiser (with the journal) and the final runs, under a progress display."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    prog = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} evals ({task.fields[resumed]} from the journal)"),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        TextColumn("ETA {task.fields[eta]}"),
        console=console,
        disable=not progress,
        transient=False,
    )
    plain = progress and console is not None and not getattr(console, "is_terminal", True)
    last = [-1e9]
    with _sigterm_as_interrupt(), open_executor(n_workers) as ex, prog:
        task = prog.add_task(f"calibrate {title}", total=problem.spec.budget.max_evals, info="", resumed=0, eta="–")

        def cb(s: dict[str, Any]) -> None:
            info = f"{s['stage']}  best loss {s['best']:.4g} (rms {s['best_rms']:.3f})"
            eta = "–" if s["eta"] is None else _hms(s["eta"])
            prog.update(task, completed=s["evals"], info=info, resumed=s["resumed"], eta=eta)
            if plain and (s["wall"] - last[0] >= 60.0 or s["evals"] >= s["max_evals"]):
                last[0] = s["wall"]
                console.print(f"[{_hms(s['wall'])}] {s['evals']}/{s['max_evals']} evals ({s['resumed']} from the journal, "
                              f"{s['simulated']} simulated)  {info}  campaign wall {_hms(s['campaign_wall'])}  ETA {eta}",
                              highlight=False, markup=False, soft_wrap=True)

        runner = make_runner(ex)
        opt = Optimizer(problem, runner, cb, journal=journal)
        fit = opt.run()
        prog.update(task, description=f"final runs {title}")
        items, rows, extra = final_results(problem, fit.values, runner)
    return fit, items, rows, extra, opt


def _hms(s: float) -> str:
    s = max(0, int(round(s)))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _write_outputs(problem: Problem, fit: FitResult, items: list[Item], rows: dict[int, dict[str, Any]], extra: dict[int, Any],
                   out: Path, prof: Path | None, date: str, timing: dict[str, Any] | None) -> CalibrationOutcome:
    """The profile and the report directory (written into a temporary directory, renamed at the end)."""
    import json

    written_profile = None
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        if prof is not None:
            written_profile = write_profile(problem, fit, prof, date)
        metric_rows, points = write_report(problem, fit, items, rows, extra, tmp, written_profile, date, final_dir=out)
        if timing is not None:  # wall-clock figures beside the report, which is a function of the results alone
            (tmp / "timing.json").write_text(json.dumps(timing, indent=1) + "\n", encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return CalibrationOutcome(fit, problem, out, written_profile, metric_rows, points)


def campaign_status(spec_path: str | Path, *, cases: list[str] | None = None, report_dir: Path | None = None) -> list[dict[str, Any]]:
    """How far each campaign (case) of a spec is, from its journal, without running or writing anything:
    evaluations journaled (of the budget), failed ones, best loss so far and its values, campaign wall, the
    stages, whether the current inputs still match (a resume would continue), and whether a calibration holds
    the work directory's lock now."""
    import itertools
    import math

    from simulator.calibration.journal import (
        _INPUT_NAMES,
        campaign_inputs,
        input_diff,
        read_journal,
        work_dir,
    )
    from simulator.calibration.spec import load_cases

    loaded = load_cases(spec_path)
    if cases:
        loaded = [x for x in loaded if x.case in cases]
    out = []
    for x in loaded:
        rd = report_dir if report_dir is None else (report_dir / x.case if x.case else report_dir)
        rd = rd if rd is not None else x.report_dir()
        jpath = work_dir(rd) / "journal.jsonl"
        st: dict[str, Any] = {"campaign": x.spec.name, "case": x.case, "journal": jpath, "max_evals": x.spec.budget.max_evals,
                              "max_wall_s": x.spec.budget.wall_s, "exists": jpath.exists(), "running": _lock_holder(jpath.parent)}
        if st["exists"]:
            jf = read_journal(jpath)
            prob = Problem(x)
            inputs = campaign_inputs(prob)
            diff = [_INPUT_NAMES[k] for k in input_diff(jf.header, inputs)]
            ok = [e for e in jf.entries if not e.failed and math.isfinite(e.loss)]
            best = min(ok, key=lambda e: e.loss) if ok else None
            stages: dict[str, int] = {}
            for e in jf.entries:
                stages[e.stage] = stages.get(e.stage, 0) + 1
            walls = [e.wall_s for e in jf.entries]
            recent = walls[-11:]
            gaps = [b - a for a, b in itertools.pairwise(recent) if b > a]
            st.update({"header": jf.header, "evals": len(jf.entries), "failed": sum(1 for e in jf.entries if e.failed),
                       "torn": jf.torn, "best": best, "wall_s": max(walls, default=0.0), "stages": stages,
                       "sessions": max((e.session for e in jf.entries), default=0), "differs": diff,
                       "recent_s_per_eval": sum(gaps) / len(gaps) if gaps else None,
                       "params": {f.key: f for f in prob.params}})
        out.append(st)
    return out


def _lock_holder(wdir: Path) -> str | None:
    """The pid written in ``wdir/.lock`` when a process holds that lock now, else None (nothing created)."""
    lock = wdir / ".lock"
    if not lock.is_file():
        return None
    try:
        import fcntl

        fd = os.open(lock, os.O_RDONLY)
    except (ImportError, OSError):
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return (os.read(fd, 64).decode(errors="replace").strip() or "?")
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)

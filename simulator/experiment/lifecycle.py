"""The run lifecycle of an experiment, in one place: load (and validate everything) -> plan ->
run -> summarise -> compare -> write. ``simrun run`` and :func:`simulator.simulate` both call
:func:`run`; nothing else assembles these steps.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.experiment.load import Experiment, load_experiment, parse_sets
from simulator.experiment.report import compare_references, ratio_rows, summary_rows, write_outputs
from simulator.experiment.runner import ExperimentRun, OutputLock, execute_runs, output_error
from simulator.experiment.summary import PointSummary, point_summaries

__all__ = ["ExperimentResult", "Simulated", "normalise_sets", "run", "simulate", "tidy"]


@dataclass
class ExperimentResult:
    """Everything one run of an experiment produced."""

    experiment: Experiment
    run: ExperimentRun
    points: list[PointSummary]
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    ratios: list[dict[str, Any]] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)

    @property
    def out_dir(self) -> Path | None:
        return self.run.out_dir

    @property
    def workers(self) -> int:
        """Worker processes the run used (1 = in this process)."""
        return self.run.workers

    def summary_rows(self) -> list[dict[str, Any]]:
        """One row per point: point, axis labels, replications, metrics and their ``_ci`` half-widths
        (the rows of summary.csv)."""
        return summary_rows(self.points)

    def documents(self) -> list[dict[str, Any]]:
        """The fio JSON document of every run, ordered by (point, replication); each has a ``sim``
        section with the point's labels, seed and simulator statistics."""
        out = []
        for o in sorted(self.run.outputs, key=lambda o: (o.point, o.replication)):
            doc = o.doc
            doc.setdefault("sim", {}).update({"point": o.point, "replication": o.replication, "labels": o.labels, "seed": o.seed})
            out.append(doc)
        return out


def normalise_sets(sets: Mapping[str, Any] | list[str] | list[tuple[str, Any]] | None) -> list[tuple[str, Any]]:
    """Overrides as (dotted key, value): a mapping (values taken as they are), ``key=value`` strings
    (values read with YAML rules, as ``--set``) or (key, value) pairs."""
    if not sets:
        return []
    if isinstance(sets, Mapping):
        return [(str(k), v) for k, v in sets.items()]
    out: list[tuple[str, Any]] = []
    for s in sets:
        out += parse_sets([s]) if isinstance(s, str) else [(str(s[0]), s[1])]
    return out


def run(
    source: str | Path | dict[str, Any],
    sets: Mapping[str, Any] | list[str] | list[tuple[str, Any]] | None = None,
    *,
    out: str | Path | Callable[[Experiment], Path] | None = None,
    workers: int | None = None,
    scheduler: str = "processes",
    resume: bool = True,
    progress: Callable[[str, float, float], None] | None = None,
    base_dir: str | Path | None = None,
    on_loaded: Callable[[Experiment], None] | None = None,
    engine: str = "auto",
) -> ExperimentResult:
    """Load, validate, run, summarise, compare and (with ``out``) write an experiment.

    ``source``: an experiment YAML path or the same content as a mapping. ``out``: output directory
    (None: nothing is written; a callable: the directory for the loaded experiment). ``resume=False`` reruns every point (only this experiment's run
    files in ``out/runs`` are replaced). ``on_loaded`` is called once the experiment is validated,
    before anything runs. ``engine`` (simulator.core.ENGINES): which engine runs the points ("auto":
    the compiled Ceph core for the RBD runs it covers, the Python model otherwise).
    """
    exp = load_experiment(source, normalise_sets(sets), base_dir=base_dir)
    if on_loaded is not None:
        on_loaded(exp)
    if callable(out):
        out = out(exp)
    out_dir = Path(out) if out is not None else None
    created = out_dir is not None and not out_dir.exists()
    try:
        with OutputLock(out_dir) if out_dir is not None else contextlib.nullcontext():
            r = execute_runs(exp, out_dir, workers, scheduler, progress, resume, engine=engine)
            points = point_summaries(r)
            comparisons = compare_references(r, points)
            ratios = ratio_rows(r, points)
            try:
                written = write_outputs(r, points, comparisons, ratios)
            except OSError as e:  # a plot on a full or read-only disk
                raise output_error(Path(e.filename or out_dir or "."), e) from None
    except BaseException:
        if created and out_dir is not None and not any(_run_docs(out_dir)):
            shutil.rmtree(out_dir, ignore_errors=True)  # nothing of value was written: leave nothing behind
        raise
    return ExperimentResult(exp, r, points, comparisons, ratios, written)


def _run_docs(out: Path) -> Iterator[Path]:
    runs = out / "runs"
    return runs.glob("p*_r*.json") if runs.is_dir() else iter(())


@dataclass
class Simulated:
    """What :func:`simulator.simulate` returns: ``summary`` (one row per sweep point: labels,
    metrics, ``_ci`` half-widths; a pandas DataFrame when pandas is installed, else a list of
    dicts) and ``runs`` (the fio JSON document of every run). Unpacks as ``summary, runs``."""

    summary: Any
    runs: list[dict[str, Any]]
    result: ExperimentResult

    def __iter__(self) -> Iterator[Any]:
        return iter((self.summary, self.runs))


def tidy(rows: list[dict[str, Any]]) -> Any:
    """Rows as a pandas DataFrame when pandas is importable, else the list itself."""
    try:
        import pandas as pd
    except ImportError:
        return rows
    return pd.DataFrame(rows)


def simulate(
    experiment: str | Path | dict[str, Any],
    set: Mapping[str, Any] | list[str] | None = None,
    out: str | Path | None = None,
    *,
    workers: int | None = None,
    resume: bool = True,
    base_dir: str | Path | None = None,
) -> Simulated:
    """Run an experiment from Python, on the same path as ``simrun run``.

    ``experiment``: a YAML path or a mapping with an experiment's content; ``set``: overrides as
    {dotted.key: value} (as ``--set``; list indices allowed); ``out``: also write the output
    directory (default: write nothing). Bad input raises :class:`simulator.errors.ConfigError`.
    """
    res = run(experiment, set, out=out, workers=workers, resume=resume, base_dir=base_dir)
    return Simulated(tidy(res.summary_rows()), res.documents(), res)

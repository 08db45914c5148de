"""Loading an experiment: YAML -> validated spec -> list of sweep points, every point fully checked.

Validation happens completely before anything runs or any file is written, so a bad experiment
ends with one message naming the file and field and leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.config.base import load_yaml, parse_scalar, set_dotted, validate
from simulator.errors import ConfigError
from simulator.experiment.model import ExperimentSpec
from simulator.limits import check_run_size, check_sweep_size

__all__ = ["Experiment", "Point", "load_experiment", "parse_sets", "project_root"]


def project_root() -> Path:
    return Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Point:
    """One sweep point: its labels (axis name -> label) and its fully resolved raw config."""

    index: int
    labels: dict[str, Any]
    raw: dict[str, Any]
    spec: ExperimentSpec
    jobs: list[Any] = field(default_factory=list)  # list[FioJob]

    @property
    def label_str(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.labels.items()) or "run"


@dataclass
class Experiment:
    path: Path
    raw: dict[str, Any]
    spec: ExperimentSpec
    points: list[Point]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def persist_state(self) -> bool:
        return bool(self.spec.sweep and self.spec.sweep.persist_state)

    def digest(self) -> str:
        """Hash of the resolved experiment (for resuming a sweep into the same output directory)."""
        blob = json.dumps(self.raw, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def parse_sets(sets: list[str] | None) -> list[tuple[str, Any]]:
    """``--set a.b=1`` flags to (key, value) pairs with YAML value rules."""
    out = []
    for s in sets or []:
        if "=" not in s:
            raise ConfigError(f"--set expects dotted.key=value, got {s!r}", source="command line", field="--set")
        k, v = s.split("=", 1)
        k = k.strip()
        if not k:
            raise ConfigError(f"--set expects dotted.key=value, got {s!r}", source="command line", field="--set")
        out.append((k, parse_scalar(v)))
    return out


def _axis_points(spec: ExperimentSpec) -> list[tuple[dict[str, Any], list[tuple[str, Any]]]]:
    sweep = spec.sweep
    if sweep is None:
        return [({}, [])]
    per_axis: list[list[tuple[str, Any, list[tuple[str, Any]]]]] = []
    for name, axis in sweep.axes.items():
        opts = []
        if isinstance(axis.values, list):
            for v in axis.values:
                opts.append((name, v, [(axis.key, v)]))
        else:
            for label, sets in axis.values.items():
                opts.append((name, label, list(sets.items())))
        per_axis.append(opts)
    combos = zip(*per_axis, strict=True) if sweep.mode == "zip" else itertools.product(*per_axis)
    points = []
    for combo in combos:
        labels = {name: label for name, label, _ in combo}
        if any(_excluded(labels, ex) for ex in sweep.exclude):
            continue
        sets = [kv for _, _, kvs in combo for kv in kvs]
        points.append((labels, sets))
    return points


def _excluded(labels: dict[str, Any], ex: dict[str, Any]) -> bool:
    for axis, want in ex.items():
        opts = want if isinstance(want, list) else [want]
        if str(labels.get(axis)) not in {str(o) for o in opts}:
            return False
    return True


def _check_persist(spec: ExperimentSpec, source: str) -> None:
    if not (spec.sweep and spec.sweep.persist_state):
        return
    for name, axis in spec.sweep.axes.items():
        keys = [axis.key] if axis.key else [k for sets in axis.values.values() for k in sets]  # type: ignore[union-attr]
        for k in keys:
            if k and k.startswith("system."):
                raise ConfigError(
                    "with persist_state the system is built once per replication; a sweep axis cannot change it",
                    source=source,
                    field=f"sweep.axes.{name}",
                )


def _resolve_jobs(raw: dict[str, Any], spec: ExperimentSpec, exp_dir: Path, source: str) -> list[Any]:
    from simulator.workloads.options import resolve_jobs

    wl = spec.workload
    if wl.jobfile:
        from simulator.workloads.jobfile import parse_jobfile

        jf = Path(wl.jobfile)
        if not jf.is_absolute():
            jf = exp_dir / jf
        gopts, jobs = parse_jobfile(jf)
        gopts = {**gopts, **raw["workload"].get("global", {})}
        return resolve_jobs(gopts, jobs, str(jf))
    return resolve_jobs(dict(raw["workload"].get("global") or {}), list(raw["workload"]["jobs"]), source, prefix="workload.")


def _check_system(spec: ExperimentSpec, source: str, jobs: list[Any]) -> None:
    """Build the system once in a throw-away simulation and resolve every job's target, so that
    errors only a build reveals (volumes that do not fit, unknown pools or images) are reported
    before anything runs or any file is written."""
    from simulator.engine import Simulation
    from simulator.experiment.execute import System

    system = System(Simulation(0), spec.system, source)
    for j in jobs:
        system.resolve_target(j)


def load_experiment(path: str | Path, sets: list[tuple[str, Any]] | None = None) -> Experiment:
    path = Path(path)
    source = str(path)
    raw = load_yaml(path)
    if not isinstance(raw, dict):
        raise ConfigError("an experiment file must be a mapping (name, system, workload, ...)", source=source)
    for k, v in sets or []:
        raw = set_dotted(raw, k, v, source="command line (--set)")
    spec = validate(ExperimentSpec, raw, source)
    check_sweep_size(spec, source)
    _check_persist(spec, source)
    points: list[Point] = []
    checked_systems: set[str] = set()
    for i, (labels, kvs) in enumerate(_axis_points(spec)):
        praw = raw
        for k, v in kvs:
            praw = set_dotted(praw, k, v, source=f"{source}: sweep")
        pspec = validate(ExperimentSpec, praw, source)
        jobs = _resolve_jobs(praw, pspec, path.parent, source)
        check_run_size(jobs, pspec.system, source)
        sys_key = json.dumps(praw.get("system"), sort_keys=True, default=str)
        if sys_key not in checked_systems:
            _check_system(pspec, source, jobs)
            checked_systems.add(sys_key)
        points.append(Point(i, labels, praw, pspec, jobs))
    if not points:
        raise ConfigError("the sweep's exclude leaves no point to run", source=source, field="sweep.exclude")
    return Experiment(path, raw, spec, points)

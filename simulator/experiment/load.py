"""Loading an experiment: YAML (or a mapping) -> validated spec -> list of sweep points.

Everything is validated here, once, before anything runs or any file is written: the experiment
model, every point's fio jobs, every distinct system (built once in a throw-away simulation, with
every job's target resolved), the reference tables (present, readable, with the columns named),
the plot and ratio axes. A bad experiment ends with one message naming the file and field and
leaves nothing behind. The validated spec and jobs of each point travel with the point to the
workers (:func:`simulator.experiment.runner.plan_tasks`), which do not validate them again.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.config.base import load_yaml, parse_scalar, set_dotted
from simulator.errors import ConfigError
from simulator.experiment.execute import point_digest, prepare_point
from simulator.experiment.model import PASS_AXIS, ExperimentSpec
from simulator.experiment.references import check_references, project_root
from simulator.limits import check_run_size, check_sweep_size

__all__ = ["Experiment", "Point", "apply_sets", "load_experiment", "parse_sets", "project_root"]


@dataclass(frozen=True)
class Point:
    """One sweep point: its labels (axis name -> label), its resolved raw config, and the same
    validated: the experiment model and the fio jobs (``FioJob``) that run at it."""

    index: int
    labels: dict[str, Any]
    raw: dict[str, Any]
    spec: ExperimentSpec
    jobs: list[Any] = field(default_factory=list)  # list[FioJob]
    digest: str = ""

    @property
    def label_str(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.labels.items()) or "run"

    @property
    def system_key(self) -> str:
        """Identity of the point's simulated system (points sharing it can share state)."""
        return json.dumps(self.raw.get("system"), sort_keys=True, default=str)


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
        """Hash of the resolved experiment (ties the run files in an output directory to it)."""
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


_PARAMS_KEY = re.compile(r"^(system\.cluster|system\.devices\.\d+)\.params\.(.+)$")


def _profile_params(raw: Any, owner: str) -> dict[str, Any] | None:
    """The profile's parameters of the device/cluster at dotted ``owner`` (None without a profile)."""
    from simulator.config.base import get_dotted
    from simulator.devices.registry import load_profile

    node = get_dotted(raw, owner)
    if not isinstance(node, dict) or not isinstance(node.get("profile"), str):
        return None
    try:
        return load_profile(node["profile"])["params"]
    except ConfigError:
        return None  # reported, with its field, when the system is validated


def apply_sets(raw: Any, sets: list[tuple[str, Any]], source: str) -> Any:
    """Apply dotted ``key=value`` overrides. A key into a device's or the cluster's ``params`` that
    indexes a list (``system.cluster.params.hosts.0.drives.0.count``) indexes the list of the
    profile merged with the experiment's own params, so lists that only the profile holds can be
    edited element by element."""
    from simulator.config.base import get_dotted
    from simulator.devices.registry import deep_merge

    for k, v in sets:
        m = _PARAMS_KEY.match(k)
        if m and any(part.isdigit() for part in m.group(2).split(".")):
            owner = m.group(1)
            prof = _profile_params(raw, owner)
            if prof is not None:
                own = get_dotted(raw, f"{owner}.params") or {}
                if not isinstance(own, dict):
                    raise ConfigError("params must be a mapping", source=source, field=f"{owner}.params")
                raw = set_dotted(raw, f"{owner}.params", deep_merge(prof, own), source=source)
        raw = set_dotted(raw, k, v, source=source)
    return raw


def _axis_points(spec: ExperimentSpec, source: str = "<experiment>") -> list[tuple[dict[str, Any], list[tuple[str, Any]]]]:
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
    if not sweep.reruns:
        return points
    grid = {_label_key(labels): (labels, sets) for labels, sets in points}
    passes = dict.fromkeys(grid, 1)
    out = [({**labels, PASS_AXIS: 1}, sets) for labels, sets in points]
    for i, rr in enumerate(sweep.reruns):
        key = _label_key(rr.labels)
        if key not in grid:
            want = ", ".join(f"{a}={v}" for a, v in rr.labels.items())
            raise ConfigError(f"{want} is not a point of the sweep (a label that is not on its axis, or excluded)",
                              source=source, field=f"sweep.reruns.{i}.labels")
        passes[key] += 1
        labels, sets = grid[key]
        out.append(({**labels, PASS_AXIS: passes[key]}, [*sets, *rr.sets.items()]))
    return out


def _label_key(labels: dict[str, Any]) -> tuple:
    return tuple(sorted((str(a), str(v)) for a, v in labels.items()))


def _excluded(labels: dict[str, Any], ex: dict[str, Any]) -> bool:
    for axis, want in ex.items():
        opts = want if isinstance(want, list) else [want]
        if str(labels.get(axis)) not in {str(o) for o in opts}:
            return False
    return True


def _axis_labels(spec: ExperimentSpec) -> dict[str, list[str]]:
    if spec.sweep is None:
        return {}
    out = {name: [str(v) for v in (a.values if isinstance(a.values, list) else a.values.keys())] for name, a in spec.sweep.axes.items()}
    if spec.sweep.reruns:
        most = max(Counter(_label_key(r.labels) for r in spec.sweep.reruns).values())
        out[PASS_AXIS] = [str(k) for k in range(1, most + 2)]
    return out


def label_of(labels: dict[str, Any], axis: str) -> Any:
    """A row's label on ``axis``; ``pass`` is 1 on the rows of an experiment without reruns."""
    return labels.get(axis, 1 if axis == PASS_AXIS else None)


def axis_names(spec: ExperimentSpec) -> list[str]:
    """The labels every row of the experiment carries: the sweep's axes, and ``pass`` when it has reruns."""
    return list(_axis_labels(spec))


def _check_report(spec: ExperimentSpec, source: str) -> None:
    """Plot and ratio axes name sweep axes (and labels that exist)."""
    labels = _axis_labels(spec)
    axes = list(labels)
    known = ", ".join(axes) or "none (no sweep)"
    r = spec.report.ratio
    if r is not None:
        if r.axis not in labels:
            raise ConfigError(f"ratio axis {r.axis!r} is not a sweep axis (axes: {known})", source=source, field="report.ratio.axis")
        for which in ("numerator", "denominator"):
            lab = str(getattr(r, which))
            if lab not in labels[r.axis]:
                raise ConfigError(f"{lab!r} is not a label of axis {r.axis!r} (labels: {', '.join(labels[r.axis])})",
                                  source=source, field=f"report.ratio.{which}")
    for i, p in enumerate(spec.report.plots):
        fld = f"report.plots.{i}"
        if p.kind in ("iops_vs_x", "metric_vs_x"):
            if not p.x:
                raise ConfigError(f"a {p.kind} plot needs x (a sweep axis)", source=source, field=f"{fld}.x")
            if p.x not in labels:
                raise ConfigError(f"x {p.x!r} is not a sweep axis (axes: {known})", source=source, field=f"{fld}.x")
        for part in ("at", "where"):
            for a in getattr(p, part):
                if a not in labels:
                    raise ConfigError(f"{a!r} is not a sweep axis (axes: {known})", source=source, field=f"{fld}.{part}")


def _build_system(spec: ExperimentSpec, source: str) -> Any:
    """Build a system once in a throw-away simulation, so that errors only a build reveals (volumes
    that do not fit, clashing names) are reported before anything runs or any file is written."""
    from simulator.engine import Simulation
    from simulator.experiment.system import System

    return System(Simulation(0), spec.system, source)


def load_experiment(
    path: str | Path | dict[str, Any],
    sets: list[tuple[str, Any]] | None = None,
    *,
    base_dir: str | Path | None = None,
) -> Experiment:
    """Load and validate an experiment: a YAML file, or a mapping with the same content (then
    relative paths — job files, reference tables — are taken from ``base_dir``, default the
    current directory). ``sets``: dotted overrides applied first (``--set``)."""
    from simulator.config.base import validate

    if isinstance(path, dict):
        raw: Any = path
        base = Path(base_dir) if base_dir is not None else Path.cwd()
        path = base / "<experiment>.yaml"
        source = "<experiment>"
    else:
        path = Path(path)
        source = str(path)
        raw = load_yaml(path)
    if not isinstance(raw, dict):
        raise ConfigError("an experiment file must be a mapping (name, system, workload, ...)", source=source)
    raw = apply_sets(raw, list(sets or []), "command line (--set)")
    spec = validate(ExperimentSpec, raw, source)
    check_sweep_size(spec, source)
    _check_report(spec, source)
    check_references(list(spec.reference), [*_axis_labels(spec), PASS_AXIS], path)  # pass: 1 on every row without reruns
    points: list[Point] = []
    for i, (labels, kvs) in enumerate(_axis_points(spec, source)):
        praw = apply_sets(raw, kvs, f"{source}: sweep")
        pspec, jobs = prepare_point(praw, source, path.parent)
        check_run_size(jobs, pspec.system, source)
        points.append(Point(i, labels, praw, pspec, jobs, point_digest(praw)))
    if not points:
        raise ConfigError("the sweep's exclude leaves no point to run", source=source, field="sweep.exclude")
    by_system: dict[str, list[Point]] = {}
    for p in points:
        by_system.setdefault(p.system_key, []).append(p)
    for group in by_system.values():  # one system alive at a time
        system = _build_system(group[0].spec, source)
        for p in group:
            for j in p.jobs:  # every job's devices (unknown pools, images, device names)
                system.resolve_target(j)
        del system
    return Experiment(path, raw, spec, points)

"""The calibration problem: free parameters -> simulated targets -> loss.

A :class:`Problem` is built from a validated spec. It resolves the base system (profile parameters
made explicit for the components the free keys touch, so list entries such as
``flash.read_latency.0`` can be set), expands the targets into :class:`Item` s (one per fio file or
CSV row) with their measured figures, and turns a parameter assignment into picklable *units* of
simulation work:

* trace calibration (``system:``): one unit per item — the measured fio run replayed with
  :func:`simulator.calibration.trace.simulate_trace`, or a CSV row's fio job;
* sweep calibration (``experiment:``): one unit per task of the experiment
  (:func:`simulator.experiment.runner.plan_tasks`: with ``persist_state`` a whole sequence of
  points on one simulated system), run by :func:`simulator.experiment.execute.execute_task`.

Units go to a process pool; their results (summary rows) are matched back to items and scored.

The loss is a negative log posterior: ½ Σ_targets weight Σ_items Σ_metrics w_m (r/σ)² with
r = ln(simulated/measured) clipped to ±clip, plus ½((θ − μ)/sd)² per prior. Missing cells of a
table are simply not in the loss (kept-aside figures are never fitted).
"""

from __future__ import annotations

import copy
import csv
import math
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.calibration.spec import DIRECTIONS, LoadedSpec, TargetSpec, metric_kind, quantity
from simulator.config.base import get_dotted, load_yaml, set_dotted
from simulator.errors import ConfigError
from simulator.experiment.model import PASS_AXIS

__all__ = ["EvalResult", "Item", "Problem", "read_csv_rows", "run_unit"]

_DIRS = DIRECTIONS


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    """Rows of a CSV table; lines starting with '#' (provenance notes) are skipped."""
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _norm(v: Any) -> Any:
    if isinstance(v, bool):
        return str(v).lower()
    try:
        return round(float(v), 9)
    except (TypeError, ValueError):
        return str(v).strip().lower()


def _num(v: Any) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def measured_job(path: str, latency: str = "auto") -> Any:
    """A measured fio file's merged job. With ``latency == "lat"`` and no total-latency percentiles
    (fio prints clat percentiles unless lat_percentiles=1), the total-latency percentiles are
    approximated as the clat percentiles shifted by the mean submission latency (fair when slat's
    spread is small against clat's; fio's own slat/clat/lat means and standard deviations show it)."""
    from simulator.fio.reader import read_fio

    job = read_fio(path).merged()
    if latency == "lat":
        for d in job.present_dirs():
            if not d.lat.percentiles and d.clat.percentiles:
                shift = d.slat.mean_ns
                d.lat.percentiles = {k: v + shift for k, v in d.clat.percentiles.items()}
    return job


@dataclass
class Item:
    """One measured/published case: a fio file or a CSV row."""

    label: str
    target: int  # index into spec.targets (or spec.predict with predict=True)
    predict: bool
    weight: float
    kind: str  # "fio" | "csv"
    measured: dict[str, float]  # simulated-metric name (read.iops, ...) -> value
    path: str | None = None  # fio file
    options: dict[str, Any] | None = None  # csv row's fio job (trace calibration)
    labels: dict[str, Any] = field(default_factory=dict)  # csv row's point labels (sweep calibration)
    row: dict[str, str] = field(default_factory=dict)
    iodepth: float | None = None
    group: str = ""  # items differing only by iodepth share a group (IOPS-vs-QD plots)
    group_labels: dict[str, Any] = field(default_factory=dict)  # sweep: the group's labels (all but the QD axis)
    qd_axis: str | None = None  # sweep: the axis holding the queue depth

    def percentiles(self, direction: str) -> dict[str, float]:
        """Measured completion-latency percentiles (fio keys -> ns) of a CSV row, if it has columns
        ``<dir>.p<P>_ms``."""
        out: dict[str, float] = {}
        for k, v in self.row.items():
            if k.startswith(f"{direction}.p") and k.endswith("_ms"):
                try:
                    p = float(k[len(direction) + 2 : -3])
                except ValueError:
                    continue
                x = _num(v)
                if x is not None:
                    out[f"{p:.6f}"] = x * 1e6
        return out


@dataclass
class EvalResult:
    loss: float
    data: float
    penalty: float
    rms: float  # weighted RMS log error over the loss metrics
    rows: dict[int, dict[str, Any]]  # item index -> simulated summary row
    residuals: list[dict[str, Any]]
    failed: str | None = None
    error: BaseException | None = field(default=None, repr=False)


# ------------------------------------------------------------------------------------ units
def run_unit(unit: dict[str, Any]) -> Any:
    """Run one unit of simulation work (in a worker process). Returns what the loss needs, or the
    full results with ``unit['full']``."""
    from simulator.metrics.summary import summary_row

    kind = unit["kind"]
    if kind in ("fio", "opts"):
        from simulator.calibration.trace import simulate_options, simulate_trace

        if kind == "fio":
            job = simulate_trace(unit["path"], unit["system"], runtime=unit.get("runtime"), seed=unit["seed"],
                                 source=unit.get("source"), options=unit.get("options"))
        else:
            job = simulate_options(unit["system"], unit["options"], seed=unit["seed"], source=unit.get("source"))
        row = summary_row(job, kind=unit.get("latency", "auto"))
        return {"row": row, "job": job} if unit.get("full") else {"row": row}
    if kind == "task":
        from simulator.experiment.execute import execute_task

        outs = execute_task(unit["task"])
        res = []
        for o in outs:
            hdr = (o.doc.get("sim") or {}).get("hdr_percentiles") or {}
            res.append({"labels": o.labels, "row": o.summary, "hdr": hdr if unit.get("full") else {}})
        return {"points": res}
    raise ValueError(f"unknown unit kind {kind!r}")


def _template(v: Any, row: dict[str, str], src: str, fld: str) -> Any:
    if isinstance(v, str) and "{" in v:
        try:
            return v.format_map(row)
        except KeyError as e:
            raise ConfigError(f"option template {v!r} names column {e.args[0]!r}, which the table does not have", source=src, field=fld) from None
    return v


class Problem:
    """Free parameters -> units -> loss (see module doc)."""

    def __init__(self, loaded: LoadedSpec):
        self.loaded = loaded
        self.spec = loaded.spec
        self.src = loaded.source
        self.params = list(self.spec.free)
        self.experiment_path: Path | None = None
        self._exp_raw: dict[str, Any] | None = None
        self._task_template: list[dict[str, Any]] | None = None
        self.last_points: list[dict[str, Any]] = []
        if self.spec.experiment is not None:
            self.experiment_path = loaded.find(self.spec.experiment, "experiment")
            raw = load_yaml(self.experiment_path)
            if not isinstance(raw, dict) or not isinstance(raw.get("system"), dict):
                raise ConfigError("the experiment has no system section", source=str(self.experiment_path), field="system")
            for k, v in self.spec.sets.items():
                raw = set_dotted(raw, k, v, source=f"{self.src}: sets")
            self._exp_raw = raw
            base = copy.deepcopy(raw["system"])
        else:
            from simulator.calibration.trace import normalise_system

            base = normalise_system(self.spec.system, self.src)
        self.tied = list(self.spec.tied)
        sys_keys = [k for k in [f.key for f in self.params] + [t.key for t in self.tied] + list(self.spec.fixed)
                    if not k.startswith(("workload.", "var."))]
        touched = sys_keys + (list(self.spec.scale.keys) if self.spec.scale else [])
        self.orig_system = copy.deepcopy(base)
        self.base_system = self._explicit(base, touched)
        self.fixed_options: dict[str, Any] = {}
        for k, v in self.spec.fixed.items():
            if k.startswith("workload."):
                self.fixed_options[k.split(".", 1)[1]] = v
                continue
            self._component(k)
            self.base_system = set_dotted(self.base_system, k, v, source=f"{self.src}: fixed")
        self.base_values = {f.key: self._current(f) for f in self.params}
        self.items: list[Item] = []
        self.pred_items: list[Item] = []
        for i, t in enumerate(self.spec.targets):
            self.items += self._expand(t, i, False)
        for i, t in enumerate(self.spec.predict):
            self.pred_items += self._expand(t, i, True)
        self._check_loss_metrics()
        self._check_system()

    # ------------------------------------------------------------------------- system editing
    def _component(self, key: str) -> tuple[str, list[str]]:
        parts = key.split(".")
        if parts[0] == "devices":
            if len(parts) < 4 or not parts[1].isdigit() or parts[2] != "params":
                raise ConfigError(f"{key!r}: expected devices.<i>.params.<param>", source=self.src, field="free")
            return f"devices.{parts[1]}", parts[3:]
        if parts[0] == "cluster":
            if len(parts) < 3 or parts[1] != "params":
                raise ConfigError(f"{key!r}: expected cluster.params.<param>", source=self.src, field="free")
            return "cluster", parts[2:]
        raise ConfigError(f"{key!r}: must start with devices.<i>.params or cluster.params", source=self.src, field="free")

    def _explicit(self, system: dict[str, Any], keys: list[str]) -> dict[str, Any]:
        """Merge the profile's parameters into the overrides of every component a key touches."""
        from simulator.devices.registry import deep_merge, load_profile

        out = copy.deepcopy(system)
        done: set[str] = set()
        for k in keys:
            comp, _ = self._component(k)
            if comp in done:
                continue
            done.add(comp)
            spec = get_dotted(out, comp)
            if not isinstance(spec, dict):
                raise ConfigError(f"the system has no {comp}", source=self.src, field=f"free ({k})")
            if spec.get("profile"):
                try:
                    prof = load_profile(str(spec["profile"]))
                except ConfigError as e:
                    raise ConfigError(e.message, source=self.src, field=f"{comp}.profile") from None
                spec["params"] = deep_merge(prof["params"], spec.get("params") or {})
                # a snapshot: the workers use the parameters read now, not the profile file at run time
                spec.pop("profile")
                spec["kind"] = prof["kind"]
            else:
                spec.setdefault("params", {})
        return out

    def _current(self, f: Any) -> Any:
        if f.key.startswith("var."):
            return None  # a free variable: starts from its start value, prior mean or mid-range
        if f.key.startswith("workload."):
            v = self.fixed_options.get(f.key.split(".", 1)[1])
        else:
            v = get_dotted(self.base_system, f.key)
        if f.discrete:
            return v if v in f.choices else None
        if v is None:
            return None
        try:
            x = quantity(v)[0]
        except (ValueError, TypeError):
            return None
        return x

    def tied_values(self, values: dict[str, Any]) -> dict[str, float]:
        """The tied parameters' values (key -> SI value) for an assignment of the free ones."""
        from simulator.calibration.expr import ExprError, eval_expr

        env: dict[str, float] = {}
        for f in self.params:
            v = values[f.key]
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                env[f.var] = float(v)
        out: dict[str, float] = {}
        for i, t in enumerate(self.tied):
            try:
                x = eval_expr(t.expr, env)
            except ExprError as e:
                raise ConfigError(f"tied {t.key} = {t.expr}: {e} (at {self._fmt_values(values)})", source=self.src,
                                  field=f"tied.{i}.expr") from None
            if t.integer:
                x = float(round(x))
            env[t.var] = x
            out[t.key] = x
        return out

    def tied_kind(self, t: Any) -> str:
        """Unit kind of a tied parameter (for the profile): the kind of its value in the base system."""
        cur = get_dotted(self.base_system, t.key) if not t.key.startswith("workload.") else self.fixed_options.get(t.key[9:])
        try:
            if isinstance(cur, str):
                return quantity(cur)[1]
        except (ValueError, TypeError):
            pass
        # no value with a unit in the base system: the kind of the free parameters it is computed from, if they agree
        from simulator.calibration.expr import expr_names

        names = expr_names(t.expr)
        kinds = {f.unit_kind for f in self.params if f.var in names and not f.discrete}
        return kinds.pop() if len(kinds) == 1 else "number"

    def workload_options(self, values: dict[str, Any]) -> dict[str, Any]:
        """fio options set on every simulated job (fixed workload.* keys, then free and tied ones)."""
        opts = dict(self.fixed_options)
        for f in self.params:
            if f.key.startswith("workload."):
                opts[f.key.split(".", 1)[1]] = values[f.key]
        for k, v in self.tied_values(values).items():
            if k.startswith("workload."):
                opts[k.split(".", 1)[1]] = v
        return opts

    def component_of_profile(self) -> str:
        comps = {self._component(k)[0] for k in [f.key for f in self.params] + [t.key for t in self.tied]
                 if not k.startswith(("workload.", "var."))}
        if self.spec.output.component:
            return self.spec.output.component
        if len(comps) != 1:
            raise ConfigError(
                f"free keys touch several components ({', '.join(sorted(comps))}); set output.component",
                source=self.src, field="output.component",
            )
        return comps.pop()

    def system_for(self, values: dict[str, Any], scaled: bool = True) -> dict[str, Any]:
        """The system spec with the free parameters set (and the scale applied)."""
        sysd = copy.deepcopy(self.base_system)
        for f in self.params:
            if f.key.startswith(("workload.", "var.")):
                continue
            v = values[f.key]
            if not f.discrete and (f.unit_kind == "size" or f.integer):
                v = int(round(v))
            sysd = set_dotted(sysd, f.key, v, source=self.src)
        tv = self.tied_values(values) if self.tied else {}
        for t in self.tied:
            if t.key.startswith("workload."):
                continue
            v = tv[t.key]
            sysd = set_dotted(sysd, t.key, int(v) if t.integer or self.tied_kind(t) == "size" else v, source=self.src)
        sc = self.spec.scale
        if scaled and sc is not None:
            for k in sc.keys:
                cur = get_dotted(sysd, k)
                if cur is None:
                    raise ConfigError(f"scale key {k!r} has no value in the system", source=self.src, field="scale.keys")
                x, kind = quantity(cur)
                sysd = set_dotted(sysd, k, int(round(x * sc.factor)) if kind == "size" else x * sc.factor, source=self.src)
        return sysd

    def mid_values(self) -> dict[str, Any]:
        out = {}
        for f in self.params:
            out[f.key] = f.choices[0] if f.discrete else f.to_value(0.5)
        return out

    # ------------------------------------------------------------------------- experiment
    def experiment_sets(self, values: dict[str, Any]) -> list[tuple[str, Any]]:
        sets: list[tuple[str, Any]] = [(k, v) for k, v in self.spec.sets.items()]
        sets.append(("system", self.system_for(values)))
        sc = self.spec.scale
        if sc is not None:
            full = quantity(sc.full_runtime)[0]
            sets.append((sc.runtime_key, f"{full * sc.factor:.6g}s"))
        return sets

    def load_experiment(self, values: dict[str, Any]) -> Any:
        from simulator.experiment.load import load_experiment

        assert self.experiment_path is not None
        return load_experiment(self.experiment_path, self.experiment_sets(values))

    def _tasks(self, values: dict[str, Any]) -> list[dict[str, Any]]:
        """The experiment's tasks with the system replaced (the experiment is loaded and every point
        validated once; the system section is the same in every point, as persist_state requires
        and a sweep over system keys would otherwise be validated again by execute_task)."""
        from simulator.experiment.runner import plan_tasks

        if self._task_template is None:
            self._task_template = plan_tasks(self.load_experiment(self.mid_values()))
        sysd = self.system_for(values)
        out = []
        for t in self._task_template:
            pts = []
            for index, labels, raw in t["points"]:
                r = dict(raw)
                r["system"] = sysd
                pts.append((index, labels, r))
            out.append({**t, "points": pts})
        return out

    # ------------------------------------------------------------------------- targets
    def _expand(self, t: TargetSpec, idx: int, predict: bool) -> list[Item]:
        sec = "predict" if predict else "targets"
        fld = f"{sec}.{idx}"
        if t.files is not None:
            if self.experiment_path is not None:
                raise ConfigError("a sweep calibration (experiment:) takes csv targets matched to sweep points", source=self.src, field=f"{fld}.files")
            return self._fio_items(t, idx, predict, fld)
        return self._csv_items(t, idx, predict, fld)

    def _fio_items(self, t: TargetSpec, idx: int, predict: bool, fld: str) -> list[Item]:
        from simulator.fio.reader import job_options_of, read_fio
        from simulator.metrics.summary import summary_row

        items = []
        for p in self.loaded.files(t, f"{fld}.files"):
            run = read_fio(p)
            job = measured_job(str(p), self.spec.loss.latency)
            row = summary_row(job, kind=self.spec.loss.latency)
            measured = {k: float(v) for k, v in row.items() if metric_kind(k) and not k.endswith("_ci") and _num(v)}
            opts = job_options_of(run, 0)
            qd = _num(opts.get("iodepth")) or 1.0
            grp = ",".join(f"{k}={opts.get(k)}" for k in ("rw", "bs", "ioengine", "sync", "numjobs", "pool") if opts.get(k))
            items.append(Item(label=(t.label + ":" if t.label else "") + p.stem, target=idx, predict=predict,
                              weight=t.weight, kind="fio", measured=measured, path=str(p), iodepth=qd, group=grp))
        return items

    def _csv_items(self, t: TargetSpec, idx: int, predict: bool, fld: str) -> list[Item]:
        path = self.loaded.find(t.csv, f"{fld}.csv")  # type: ignore[arg-type]
        rows = read_csv_rows(path)
        if not rows:
            raise ConfigError("the table has no rows", source=str(path))
        cols = list(rows[0])
        for c in [*t.filter, *t.match, *t.metrics]:
            if c not in cols:
                raise ConfigError(f"column {c!r} not in {path.name} (columns: {', '.join(cols)})", source=self.src, field=fld)
        metrics = dict(t.metrics) or {c: c for c in cols if metric_kind(c)}
        for col, m in metrics.items():
            if metric_kind(m) is None or m.split(".")[0] not in _DIRS:
                raise ConfigError(f"{m!r} is not a simulated metric (e.g. read.iops, read.lat_mean_ms, write.p99_ms)", source=self.src, field=f"{fld}.metrics.{col}")
        if not metrics:
            raise ConfigError("no metric columns: name them with metrics: {column: read.lat_mean_ms, ...}", source=self.src, field=f"{fld}.metrics")
        sweep = self.experiment_path is not None
        if sweep and not t.match:
            raise ConfigError("a csv target of an experiment needs match: {column: sweep axis}", source=self.src, field=f"{fld}.match")
        if not sweep and not t.options:
            raise ConfigError("a csv target of a system needs options: (the fio job of each row)", source=self.src, field=f"{fld}.options")
        if not sweep and t.match:
            raise ConfigError("match: is for an experiment; give options: templates", source=self.src, field=f"{fld}.match")
        items = []
        kept = [r for r in rows if all(_norm(r.get(c)) == _norm(v) for c, v in t.filter.items())]
        varying = {c for c in cols if len({r.get(c) for r in kept}) > 1}
        for n, r in enumerate(rows):
            if any(_norm(r.get(c)) != _norm(v) for c, v in t.filter.items()):
                continue
            measured = {}
            for col, m in metrics.items():
                x = _num(r.get(col))
                if x is not None and x > 0:
                    measured[m] = x
            if not measured:
                if not predict:
                    continue  # nothing published in this row (kept aside): not a target
                # a prediction of a cell nobody published: simulated and reported, compared with nothing
                measured = {m: math.nan for m in metrics.values()}
            if sweep:
                labels = {axis: r[col] for col, axis in t.match.items()}
                desc = ",".join(f"{k}={v}" for k, v in labels.items())
                qd_axis = next((a for a in labels if a in ("qd", "iodepth")), None)
                qd = _num(labels[qd_axis]) if qd_axis else None
                glabels = {k: v for k, v in labels.items() if k not in (qd_axis, PASS_AXIS)}  # a rerun stays on its curve
                grp = ",".join(f"{k}={v}" for k, v in glabels.items())
                items.append(Item(label=(t.label or path.stem) + ":" + desc, target=idx, predict=predict, weight=t.weight,
                                  kind="csv", measured=measured, labels=labels, row=dict(r), iodepth=qd, group=grp,
                                  group_labels=glabels, qd_axis=qd_axis))
            else:
                opts = {k: _template(v, r, self.src, f"{fld}.options.{k}") for k, v in t.options.items()}
                used = [c for c in cols if any(isinstance(v, str) and "{" + c + "}" in v for v in t.options.values())]
                desc = (",".join(f"{c}={r[c]}" for c in used if c in varying or len(kept) == 1)
                        or ",".join(str(v) for v in t.filter.values()) or f"row{n + 1}")
                rt = self.spec.runtime_s
                if "runtime" in opts:
                    rt0 = quantity(opts["runtime"] if not str(opts["runtime"]).strip().isdigit() else float(opts["runtime"]))[0]
                    rt = rt0 if rt is None else min(rt, rt0)
                if rt is None:
                    raise ConfigError("a csv target needs a runtime (runtime: in the spec or in options)", source=self.src, field=f"{fld}.options.runtime")
                opts["runtime"] = f"{rt:.6g}s"
                opts.setdefault("time_based", 1)
                qd = _num(opts.get("iodepth")) or 1.0
                grp = ",".join(f"{k}={v}" for k, v in opts.items() if k not in ("iodepth", "runtime", "time_based", "size"))
                items.append(Item(label=(t.label or path.stem) + ":" + desc, target=idx, predict=predict, weight=t.weight,
                                  kind="csv", measured=measured, options=opts, row=dict(r), iodepth=qd, group=grp))
        if not items:
            raise ConfigError(f"no row of {path.name} has a figure to compare (after filter)", source=self.src, field=fld)
        return items

    def _check_loss_metrics(self) -> None:
        w = self.spec.loss.metrics
        for it in self.items:
            if not any(w.get(metric_kind(k) or "", 0) > 0 for k in it.measured):
                raise ConfigError(
                    f"target {it.label} has none of the loss metrics ({', '.join(k for k, v in w.items() if v > 0)}); "
                    f"it gives {', '.join(sorted(it.measured)) or 'nothing'}",
                    source=self.src, field=f"targets.{it.target}",
                )

    def _check_system(self) -> None:
        """Validate the system with every discrete choice and the mid/extreme continuous values, and
        (sweep calibration) that every CSV row matches exactly one point."""
        from simulator.config.base import validate
        from simulator.devices.registry import resolve_params
        from simulator.experiment.model import SystemSpec

        trials = [self.mid_values()]
        for f in self.params:
            if f.discrete:
                for c in f.choices[1:]:
                    trials.append({**self.mid_values(), f.key: c})
        for vals in trials:
            sysd = self.system_for(vals)
            try:
                spec = validate(SystemSpec, sysd, self.src, prefix="system")
                for i, d in enumerate(spec.devices):
                    resolve_params(d.model_dump(exclude={"name", "count"}), source=self.src, field=f"system.devices.{i}")
                if spec.cluster is not None:
                    c = spec.cluster
                    resolve_params({"profile": c.profile, "kind": c.kind or (None if c.profile else "ceph_cluster"), "params": c.params},
                                   source=self.src, field="system.cluster")
            except ConfigError as e:
                raise ConfigError(f"with the free parameters at {self._fmt_values(vals)}: {e.message}", source=self.src, field=e.field) from None
        if self.experiment_path is not None:
            exp = self.load_experiment(self.mid_values())
            self.n_points = len(exp.points)
            if any(p.raw.get("system") != exp.points[0].raw.get("system") for p in exp.points):
                raise ConfigError("a sweep axis of the experiment changes the system; a calibration needs one system "
                                  "(fix such axes with sets:)", source=self.src, field="experiment")
            from simulator.experiment.load import axis_names, label_of

            for it in self.items + self.pred_items:
                hits = [p for p in exp.points if all(_norm(label_of(p.labels, a)) == _norm(v) for a, v in it.labels.items())]
                if len(hits) != 1:
                    raise ConfigError(
                        f"row {it.label} matches {len(hits)} points of the experiment (needs exactly 1; "
                        f"axes: {', '.join(axis_names(exp.spec)) or 'none'})",
                        source=self.src, field=f"{'predict' if it.predict else 'targets'}.{it.target}.match",
                    )

    @staticmethod
    def _fmt_values(vals: dict[str, Any]) -> str:
        return ", ".join(f"{k.split('.params.')[-1]}={v!r}" for k, v in vals.items())

    # ------------------------------------------------------------------------- evaluation
    def units(self, values: dict[str, Any], items: list[Item] | None = None, full: bool = False) -> list[dict[str, Any]]:
        if self.experiment_path is not None:
            return [{"kind": "task", "task": t, "full": full} for t in self._tasks(values)]
        sysd = self.system_for(values)
        wopts = self.workload_options(values)
        out = []
        for it in self.items if items is None else items:
            if it.kind == "fio":
                out.append({"kind": "fio", "path": it.path, "system": sysd, "runtime": self.spec.runtime_s,
                            "seed": self.spec.seed, "source": it.path, "full": full, "options": wopts,
                            "latency": self.spec.loss.latency})
            else:
                out.append({"kind": "opts", "options": {**(it.options or {}), **wopts}, "system": sysd, "seed": self.spec.seed,
                            "source": self.src, "full": full, "latency": self.spec.loss.latency})
        return out

    def rows_of(self, results: list[Any], items: list[Item]) -> dict[int, dict[str, Any]]:
        """Simulated summary row per item index (position in ``items``)."""
        if self.experiment_path is None:
            return {i: r["row"] for i, r in enumerate(results)}
        from simulator.experiment.load import label_of

        pts = [p for r in results for p in r["points"]]
        out = {}
        for i, it in enumerate(items):
            for p in pts:
                if all(_norm(label_of(p["labels"], a)) == _norm(v) for a, v in it.labels.items()):
                    out[i] = p["row"]
                    break
        return out

    def score(self, values: dict[str, Any], rows: dict[int, dict[str, Any]], items: list[Item] | None = None) -> EvalResult:
        items = self.items if items is None else items
        lw = self.spec.loss.metrics
        sig, clip = self.spec.loss.sigma, self.spec.loss.clip
        data = 0.0
        sw = swr = 0.0
        residuals = []
        for i, it in enumerate(items):
            row = rows.get(i, {})
            for k, meas in it.measured.items():
                kind = metric_kind(k)
                w = lw.get(kind or "", 0.0)
                simv = _num(row.get(k))
                if simv is not None and simv > 0:
                    r = math.log(simv / meas)
                    rc = max(-clip, min(clip, r))
                else:
                    r, rc = math.nan, clip
                residuals.append({"item": it.label, "metric": k, "measured": meas, "simulated": simv, "log_ratio": r,
                                  "weight": w * it.weight, "predict": it.predict})
                if w > 0 and not it.predict:
                    data += 0.5 * it.weight * w * (rc / sig) ** 2
                    sw += it.weight * w
                    swr += it.weight * w * rc * rc
        pen = sum(f.penalty(values[f.key]) for f in self.params if not f.discrete)
        rms = math.sqrt(swr / sw) if sw > 0 else math.nan
        return EvalResult(data + pen, data, pen, rms, rows, residuals)

    def evaluate_many(
        self,
        value_sets: list[dict[str, Any]],
        runner: Callable[..., list[Any]],
        on_result: Callable[[int, EvalResult], None] | None = None,
    ) -> list[EvalResult]:
        """Evaluate several assignments with one batch of units (parallel across all of them).
        ``on_result(i, result)`` is called as soon as evaluation ``i`` has all its units back."""
        all_units: list[dict[str, Any]] = []
        spans = []
        owner: list[int] = []
        for i, vals in enumerate(value_sets):
            u = self.units(vals)
            spans.append((len(all_units), len(u)))
            all_units += u
            owner += [i] * len(u)
        results: list[Any] = [None] * len(all_units)
        left = [n for _, n in spans]
        out: list[EvalResult | None] = [None] * len(value_sets)

        def finish(i: int) -> None:
            a, n = spans[i]
            res = results[a : a + n]
            fails = [r for r in res if isinstance(r, BaseException)]
            if fails:
                r = EvalResult(math.inf, math.inf, 0.0, math.nan, {}, [], failed=f"{type(fails[0]).__name__}: {fails[0]}",
                               error=fails[0])
            else:
                r = self.score(value_sets[i], self.rows_of(res, self.items))
            out[i] = r
            if on_result is not None:
                on_result(i, r)

        def done(k: int, r: Any) -> None:
            results[k] = r
            i = owner[k]
            left[i] -= 1
            if left[i] == 0:
                finish(i)

        runner(all_units, done)
        for i, n in enumerate(left):
            if n == 0 and out[i] is None:
                finish(i)  # an evaluation without units
        return out  # type: ignore[return-value]


def make_runner(executor: Executor | None) -> Callable[..., list[Any]]:
    """A function running units in ``executor`` (or inline) and returning their results in order;
    ``done(k, result)`` is called as each unit finishes. An exception of a unit becomes its result
    (the evaluation gets an infinite loss: parameter values the model rejects are infeasible points);
    the optimiser stops on a :class:`ConfigError` at the start point, which is bad input."""

    def run(units: list[dict[str, Any]], done: Callable[[int, Any], None] | None = None) -> list[Any]:
        out: list[Any] = [None] * len(units)
        if executor is None:
            for k, u in enumerate(units):
                try:
                    out[k] = run_unit(u)
                except Exception as e:
                    out[k] = e
                if done is not None:
                    done(k, out[k])
            return out
        from concurrent.futures import as_completed
        from concurrent.futures.process import BrokenProcessPool

        from simulator.errors import SimError

        futs = {executor.submit(run_unit, u): k for k, u in enumerate(units)}
        try:
            for f in as_completed(futs):
                k = futs[f]
                try:
                    out[k] = f.result()
                except BrokenProcessPool:
                    # not a result of the parameters: every later unit would fail alike
                    raise SimError("a worker process died (killed, or out of memory); the finished evaluations are "
                                   "journaled: run the same command again to resume, perhaps with fewer --workers") from None
                except Exception as e:
                    out[k] = e
                if done is not None:
                    done(k, out[k])
        except BaseException:
            for f in futs:
                f.cancel()
            raise
        return out

    return run

"""The calibration spec: what ``simrun calibrate SPEC.yaml`` fits, to what, and how.

::

    name: local-disk                       # campaign name (provenance, report title)
    description: what is fitted and why
    system:                                # the base system, as an experiment's system: section
      devices:
        - {name: vda, profile: ssd/intel_p3700_400gb, params: {capacity: 4GiB}}
    # or, to simulate an experiment's sweep (e.g. a persist_state sequence) instead of traces:
    # experiment: ../../experiments/mach2_vs_single.yaml
    # sets: {workload.global.runtime: 5s}   # fixed --set overrides of the experiment
    # scale: {factor: 0.005, full_runtime: 900s, keys: [cluster.params.bluestore.cache.size]}
    free:                                  # the fitted parameters (dotted keys into the system)
      - {key: devices.0.params.flash.read_latency.0, bounds: [10us, 200us], scale: log,
         prior: {mean: 60us, sd: 40us}}
      - {key: devices.0.params.flash.channels, choices: [2, 4, 8, 16]}
    targets:                               # what the loss compares with
      - {files: "runs/dev-vm-20261122/randread-qd1.json", weight: 1}
      - {csv: ../reference/nutanix_working_set.csv, filter: {random_distribution: uniform},
         options: {rw: "{rw}", bs: "{bs}", iodepth: "{iodepth}", size: "{working_set_GB}GB"},
         metrics: {mean_response_ms: read.lat_mean_ms}}
    predict: [...]                         # same shape; simulated with the fit and reported, never fitted
    loss: {metrics: {iops: 1, p50: 1, p90: 0.5, p99: 0.5, p99.9: 0.25}, sigma: 0.1}
    optimizer: {global: {method: sobol, n: 16}, local: {method: nelder-mead}}
    budget: {max_evals: 120, max_wall: 30m}
    runtime: 1s                            # simulated seconds per trace (never longer than measured)
    seed: 1                                # the SAME seed for every evaluation (common random numbers)
    workers: 2
    output: {profile: local/dev_vm_virtio, component: devices.0, report: report}
    tied:                                  # derived parameters (expression of free ones; simulator.calibration.expr)
      - {key: devices.0.params.controller.write_latency, expr: "(1 - s) * W"}    # free var.W, var.s
    cases:                                 # optional: one fit per case, ${var} replaced, set: keys replaced
      - {name: drive_a, vars: {model: "Drive A"}, set: {predict: []}}

Metrics: every metric of a summary row (``<dir>.iops``, ``<dir>.bw_MBps``, ``<dir>.bw_MiBps``,
``<dir>.lat_mean_ms``, ``<dir>.p<P>_ms``; dir = read, write, trim, sync). A ``predict:`` table row
whose cell is empty is still simulated (a prediction of an unpublished figure).

Paths: inputs (``experiment``, ``files``, ``csv``) are looked up relative to the spec file, then to
the project root, and must resolve inside one of them (not absolute, no ``..`` leading out). ``output.profile`` is a profile reference under ``models/`` (``local/x``) or a
path ending in ``.yaml`` (relative to the spec file); ``output.report`` is relative to the spec
file (a case's report goes to ``<report>/<case>/``). Paths written into a profile or a report are
relative to that file's directory. Every problem is a :class:`ConfigError` naming the spec file and the field.
"""

from __future__ import annotations

import glob as _glob
import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from simulator.config.base import ConfigModel, load_yaml, validate
from simulator.errors import ConfigError
from simulator.units import parse_bandwidth, parse_size, parse_time

__all__ = [
    "DEFAULT_LOSS_METRICS",
    "CalibrationSpec",
    "FreeParam",
    "LoadedSpec",
    "TiedParam",
    "load_cases",
    "load_spec",
    "metric_kind",
    "quantity",
]

#: default weights of the loss metrics (log-space squared errors)
DEFAULT_LOSS_METRICS = {"iops": 1.0, "p50": 1.0, "p90": 0.5, "p99": 0.5, "p99.9": 0.25}
_METRIC_NAMES = ("iops", "lat_mean", "p50", "p90", "p99", "p99.9", "p99.99", "bw")
#: metric tails of a summary row (simulator.metrics.summary) that are bandwidths: all compare as "bw"
BW_TAILS = ("bw_MBps", "bw_MiBps")
#: directions of a summary row a metric may name
DIRECTIONS = ("read", "write", "trim", "sync")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: longest wall-time budget, measured runtime or simulated runtime per trace a spec may give: 30 days, seconds
MAX_DURATION = 30 * 86400.0
#: a duration field: seconds (bounded here) or a string with a unit (bounded by _duration)
Duration = Annotated[float, Field(gt=0, le=MAX_DURATION)] | str


def _duration(v: Any, what: str) -> Any:
    """A Duration's value: > 0 and at most MAX_DURATION whatever its unit."""
    if v is None:
        return v
    q = quantity(v)[0]
    if not 0 < q <= MAX_DURATION:
        raise ValueError(f"{what} must be > 0 and at most 30 days ({MAX_DURATION:.0f} s), got {v!r}")
    return v


_TIME_RE = re.compile(r"^\s*[-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?\s*(ns|us|µs|ms|s|sec|min|m|h)\s*$")


def quantity(v: Any) -> tuple[float, str]:
    """A bound or value: a number, or a string with a time, rate or size unit -> (SI value, kind)."""
    if isinstance(v, bool):
        raise ValueError(f"expected a number, got {v!r}")
    if isinstance(v, (int, float)):
        return float(v), "number"
    if not isinstance(v, str):
        raise ValueError(f"expected a number or a quantity with a unit, got {v!r}")
    s = v.strip()
    if s.endswith("/s"):
        return float(parse_bandwidth(s)), "rate"
    if _TIME_RE.match(s):
        return float(parse_time(s)), "time"
    try:
        return float(s), "number"
    except ValueError:
        pass
    return float(parse_size(s)), "size"


def metric_kind(name: str) -> str | None:
    """``read.p99_ms`` -> ``p99``; ``write.iops`` -> ``iops``; ``read.lat_mean_ms`` -> ``lat_mean``;
    ``write.bw_MBps`` (10^6 B/s) and ``write.bw_MiBps`` (2^20 B/s, fio's "MB/s") -> ``bw``. Every
    metric a summary row reports (see :mod:`simulator.metrics.summary`) has a kind."""
    if "." not in name:
        return None
    head, tail = name.split(".", 1)
    if head not in DIRECTIONS:
        return None
    if tail in BW_TAILS:
        return "bw"
    tail = tail.removesuffix("_ms")
    return tail if tail in _METRIC_NAMES else None


class Prior(ConfigModel):
    """Gaussian penalty ½((θ − mean)/sd)² added to the loss, in the parameter's own units."""

    mean: float | str = Field(
        description="prior mean, in the parameter's units (numbers or quantities such as 50us); no upper bound here: "
        "the fitted field's own bound applies"
    )
    sd: float | str = Field(
        description="prior standard deviation, same units, > 0; no upper bound here: a wide prior is a weak one"
    )


class FreeParam(ConfigModel):
    """One fitted parameter: a continuous one (``bounds``, ``scale``) or a discrete one (``choices``)."""

    key: str = Field(
        description="dotted key into the system spec (devices.0.params.seek.average, cluster.params.osd.write_cost), or "
        "workload.<fio option> (set on every simulated job of a trace calibration, e.g. workload.sim_slat: host CPU per IO)"
    )
    bounds: tuple[float | str, float | str] | None = Field(
        None,
        description="[lo, hi] for a continuous parameter, numbers or quantities with units (10us, 64MiB); no upper "
        "bound here: the fitted field's own bound refuses a value beyond it",
    )
    scale: Literal["linear", "log"] = Field("linear", description="search scale of a continuous parameter (default linear)")
    prior: Prior | None = Field(None, description="optional Gaussian prior (penalty) on a continuous parameter")
    start: float | str | None = Field(
        None,
        description="optional start of the local stage when there is no global stage; within bounds, so no upper bound of its own",
    )
    choices: list[Any] | None = Field(None, description="values of a discrete parameter (e.g. [off, volatile, persistent])")
    integer: bool = Field(False, description="a continuous parameter whose value is rounded to an integer (a count) (default false)")
    label: str = Field("", description="short name in tables (default: the last part of the key)")

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        if not v or any(p == "" for p in v.split(".")):
            raise ValueError(f"invalid dotted key {v!r}")
        if not v.startswith(("devices.", "cluster.", "workload.", "var.")):
            raise ValueError(
                f"key {v!r} must start with devices.<i>. or cluster. (a path into the system spec), workload. "
                "(a fio option set on every simulated job of a trace calibration, e.g. workload.sim_slat) or var. "
                "(a free variable that only tied expressions use)"
            )
        if v.startswith(("workload.", "var.")) and v.count(".") != 1:
            raise ValueError(f"key {v!r}: workload./var. keys name one option or variable (workload.<option>, var.<name>)")
        if v.startswith("var.") and not _IDENT_RE.match(v[4:]):
            raise ValueError(f"key {v!r}: a variable name is an identifier")
        return v

    @field_validator("bounds")
    @classmethod
    def _bounds(cls, v: Any) -> Any:
        if v is None:
            return v
        lo, klo = quantity(v[0])
        hi, khi = quantity(v[1])
        if klo != khi:
            raise ValueError(f"bounds have different units ({klo} vs {khi})")
        if not lo < hi:
            raise ValueError(f"bounds reversed or empty: lo={v[0]!r} must be < hi={v[1]!r}")
        return v

    @model_validator(mode="after")
    def _shape(self) -> FreeParam:
        if (self.bounds is None) == (self.choices is None):
            raise ValueError("give either bounds (continuous) or choices (discrete)")
        if self.choices is not None:
            if len(self.choices) < 2:
                raise ValueError("choices needs at least two values")
            if self.prior is not None:
                raise ValueError("a prior is for continuous parameters")
            return self
        lo, hi = self.lo_hi()
        if self.scale == "log" and lo <= 0:
            raise ValueError("a log-scale parameter needs lo > 0")
        if self.prior is not None:
            if quantity(self.prior.sd)[0] <= 0:
                raise ValueError("prior.sd must be > 0")
            quantity(self.prior.mean)
        if self.start is not None:
            s = quantity(self.start)[0]
            if not lo <= s <= hi:
                raise ValueError(f"start {self.start!r} is outside the bounds")
        return self

    @property
    def discrete(self) -> bool:
        return self.choices is not None

    @property
    def name(self) -> str:
        return self.label or self.key.split(".params.")[-1]

    @property
    def var(self) -> str:
        """The name tied expressions use: the label, else the key's last part."""
        return self.label or self.key.split(".")[-1]

    @property
    def unit_kind(self) -> str:
        return "choice" if self.discrete else quantity(self.bounds[0])[1]  # type: ignore[index]

    def lo_hi(self) -> tuple[float, float]:
        return quantity(self.bounds[0])[0], quantity(self.bounds[1])[0]  # type: ignore[index]

    # the optimiser works on u in [0, 1] for continuous parameters
    def to_value(self, u: float) -> float:
        lo, hi = self.lo_hi()
        u = min(1.0, max(0.0, float(u)))
        if self.scale == "log":
            return math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))
        return lo + u * (hi - lo)

    def to_unit(self, v: float) -> float:
        lo, hi = self.lo_hi()
        if self.scale == "log":
            return (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo))
        return (v - lo) / (hi - lo)

    def penalty(self, v: float) -> float:
        if self.prior is None:
            return 0.0
        m, sd = quantity(self.prior.mean)[0], quantity(self.prior.sd)[0]
        return 0.5 * ((v - m) / sd) ** 2


class TiedParam(ConfigModel):
    """A derived parameter: set from an expression of the free parameters (and earlier tied ones) at
    every evaluation, and written into the fitted profile with its expression as the source."""

    key: str = Field(description="dotted key into the system spec (as a free key), or workload.<fio option>")
    expr: str = Field(
        description="arithmetic expression of free-parameter names (their label, else the key's last part) and "
        "earlier tied names, in SI units (seconds, bytes, bytes/s): numbers, + - * / // % **, parentheses, "
        "min max abs round sqrt log exp; e.g. '0.25 * ftl_update'"
    )
    integer: bool = Field(False, description="round the value to an integer (a count) (default false)")
    label: str = Field("", description="name later expressions and tables use (default: the key's last part)")

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        if v.startswith("var."):
            raise ValueError(f"key {v!r}: a tied parameter sets a system key or a workload option (var. is for free variables)")
        return FreeParam._key(v)

    @field_validator("expr")
    @classmethod
    def _expr(cls, v: str) -> str:
        from simulator.calibration.expr import expr_names

        expr_names(v)  # syntax and allowed constructs
        return v

    @property
    def var(self) -> str:
        return self.label or self.key.split(".")[-1]


class CaseSpec(ConfigModel):
    """One case of a multi-case spec: the spec with ``${var}`` replaced by the case's values and the
    ``set`` keys applied, fitted on its own (its own profile and report sub-directory)."""

    name: str = Field(description="case name: letters, digits, - _ . (the report sub-directory)")
    vars: dict[str, Any] = Field(default_factory=dict, description="values of ${name} placeholders in the spec's strings")
    set: dict[str, Any] = Field(
        default_factory=dict,
        description="dotted keys of the spec replaced in this case (e.g. predict: [...], free.0.bounds: [...])",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$", v) or ".." in v:
            raise ValueError(f"case name {v!r}: use letters, digits and - _ . (at most 100; it names a directory)")
        return v

    @field_validator("vars")
    @classmethod
    def _vars(cls, v: dict[str, Any]) -> dict[str, Any]:
        for k, x in v.items():
            if not _IDENT_RE.match(k):
                raise ValueError(f"variable name {k!r} is not an identifier")
            if not isinstance(x, (str, int, float, bool)) or (isinstance(x, float) and not math.isfinite(x)):
                raise ValueError(f"variable {k}: a string or a finite number")
        return v


class TargetSpec(ConfigModel):
    """Measured/published figures: fio output files, or a CSV table of figures."""

    files: str | list[str] | None = Field(None, description="glob(s) of fio output files (JSON or text)")
    csv: str | None = Field(None, description="CSV of figures (lines starting with # are comments)")
    filter: dict[str, Any] = Field(default_factory=dict, description="csv: keep rows whose column equals the value")
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="csv with a system: fio options of each row's job; values may name columns as {column} "
        "(e.g. size: '{working_set_GB}GB'); a CSV on an experiment matches points instead",
    )
    match: dict[str, str] = Field(default_factory=dict, description="csv with an experiment: column -> sweep axis")
    metrics: dict[str, str] = Field(
        default_factory=dict,
        description="csv: column -> simulated metric (read.iops, read.lat_mean_ms, write.p99_ms...); default: "
        "columns already named like a simulated metric",
    )
    label: str = Field("", description="name of the target in tables (default: file or table name)")
    weight: float = Field(1.0, ge=0, le=1e6, description="weight of the target in the loss, at most 1e6 (default 1)")

    @model_validator(mode="after")
    def _one(self) -> TargetSpec:
        if (self.files is None) == (self.csv is None):
            raise ValueError("a target is either files: (fio output) or csv: (a table of figures)")
        if self.files is not None and (self.filter or self.options or self.match or self.metrics):
            raise ValueError("filter/options/match/metrics are for csv targets")
        return self


class LossSpec(ConfigModel):
    """Weighted squared log-ratio errors ln(sim/measured), Gaussian with sd ``sigma``, plus priors."""

    metrics: dict[str, Annotated[float, Field(le=1e6)]] = Field(
        default_factory=lambda: dict(DEFAULT_LOSS_METRICS),
        description="metric -> weight; metrics: iops, lat_mean, p50, p90, p99, p99.9, p99.99, bw "
        "(default iops 1, p50 1, p90 0.5, p99 0.5, p99.9 0.25); each weight 0-1e6",
    )
    sigma: float = Field(
        0.1, gt=0, le=10,
        description="sd of a log-ratio error (0.1 ~ 10 %), scales the data term against the priors, at most 10 (a factor e^10) (default 0.1)",
    )
    clip: float = Field(
        3.0, gt=0, le=50,
        description="log ratios are clipped to ±clip so one absurd point cannot dominate, at most 50 (default 3)",
    )
    latency: Literal["auto", "clat", "lat"] = Field(
        "auto",
        description="latency of fio output targets compared: clat (completion), lat (submission + completion: use it when "
        "the measured submission latency holds device-side work, e.g. a VM's virtio kick), auto = clat unless only lat "
        "has percentiles (default auto)",
    )

    @field_validator("metrics")
    @classmethod
    def _names(cls, v: dict[str, float]) -> dict[str, float]:
        for k, w in v.items():
            if k not in _METRIC_NAMES:
                raise ValueError(f"unknown loss metric {k!r} (known: {', '.join(_METRIC_NAMES)})")
            if w < 0:
                raise ValueError(f"weight of {k} must be >= 0")
        if not any(w > 0 for w in v.values()):
            raise ValueError("at least one loss metric needs a weight > 0")
        return v


class GlobalStage(ConfigModel):
    method: Literal["de", "sobol", "lhs", "none"] = Field(
        "sobol", description="de = scipy differential_evolution; sobol / lhs = a space-filling screen; none (default sobol)"
    )
    n: int = Field(16, ge=1, le=100000, description="sobol/lhs: points; de: population multiplier (popsize), at most 100000 (default 16)")
    maxiter: int = Field(3, ge=0, le=100000, description="de: generations after the initial population, at most 100000 (default 3)")


class LocalStage(ConfigModel):
    method: Literal["nelder-mead", "powell", "none"] = Field("nelder-mead", description="local refinement of the continuous parameters (default nelder-mead)")
    maxiter: int | None = Field(
        None, ge=1, le=10**7, description="evaluations of the local stage, at most 1e7 (default: what the budget leaves)"
    )
    step: float = Field(0.1, gt=0, le=0.5, description="initial simplex size as a fraction of each parameter's range (default 0.1)")
    xatol: float = Field(
        0.01, gt=0, le=1, description="stop when the simplex is smaller than this fraction of the ranges, at most 1 (default 0.01)"
    )
    fatol: float = Field(
        0.002, gt=0, le=1,
        description="... and the losses of the simplex differ by less than this fraction of the loss at the start of the stage, "
        "at most 1 (default 0.002)",
    )
    per_choice: bool = Field(
        False,
        description="run the local stage once per combination of the discrete parameters (at most 16), each from its best "
        "screened point, sharing the budget; the best is kept (default false: only at the best point's combination)",
    )


class OptimizerSpec(ConfigModel):
    global_: GlobalStage = Field(default_factory=GlobalStage, alias="global", description="global stage")
    local: LocalStage = Field(default_factory=LocalStage, description="local stage")


class BudgetSpec(ConfigModel):
    max_evals: int = Field(
        100, ge=1, le=10**7, description="evaluations (each = every target simulated once), at most 1e7 (default 100)"
    )
    max_wall: Duration = Field("30m", description="wall time, seconds or with a unit (30m), at most 30 days (default 30m)")

    @field_validator("max_wall")
    @classmethod
    def _wall(cls, v: Any) -> Any:
        return _duration(v, "max_wall")

    @property
    def wall_s(self) -> float:
        return quantity(self.max_wall)[0]


class ScaleSpec(ConfigModel):
    """Time scaling of an experiment: every run lasts ``factor × full_runtime`` and the listed sizes
    (caches) are multiplied by ``factor``, which keeps "IOs per run / cache size" as in the full run."""

    factor: float = Field(gt=0, le=1, description="fraction of the full runtime simulated")
    full_runtime: Duration = Field(description="runtime of the measured runs (900s), at most 30 days")
    runtime_key: str = Field("workload.global.runtime", description="experiment key of the runtime")
    keys: list[str] = Field(default_factory=list, description="system keys (sizes) multiplied by factor")

    @field_validator("full_runtime")
    @classmethod
    def _full(cls, v: Any) -> Any:
        return _duration(v, "full_runtime")


class OutputSpec(ConfigModel):
    profile: str | None = Field(None, description="profile to write: a ref under models/ (local/x) or a .yaml path; none = no profile")
    component: str | None = Field(None, description="what the profile describes: devices.<i> or cluster (default: where the free keys are)")
    name: str = Field("", description="profile name (default: the base profile's name + ' (fitted)')")
    description: str = Field("", description="profile description")
    report: str = Field("report", description="report directory, relative to the spec file (default report)")
    sources: dict[str, str] = Field(default_factory=dict, description="param key -> reason, for fixed overrides written into the profile")
    exclude: list[str] = Field(
        default_factory=list,
        description="parameter keys of the component (e.g. controller.write_cache) that describe the measurement's "
        "conditions, not the device: set for the fit, left out of the written profile",
    )


class CalibrationSpec(ConfigModel):
    """A calibration: base system, free parameters, targets, loss, optimiser, budget, output."""

    name: str = Field(description="campaign name (provenance, report title)")
    description: str = Field("", description="what is fitted and why")
    system: dict[str, Any] | str | None = Field(None, description="base system (experiment system: shape) or a profile reference")
    experiment: str | None = Field(None, description="an experiment file whose sweep is simulated per evaluation (instead of system)")
    sets: dict[str, Any] = Field(default_factory=dict, description="experiment: fixed dotted-key overrides")
    scale: ScaleSpec | None = Field(None, description="experiment: time scaling (short runs, caches scaled alike)")
    fixed: dict[str, Any] = Field(
        default_factory=dict,
        description="fixed overrides: dotted keys into the system (like free keys, applied to the profile's parameters "
        "before the free ones), written into the fitted profile; give the reason in output.sources",
    )
    free: list[FreeParam] = Field(min_length=1, description="fitted parameters")
    tied: list[TiedParam] = Field(
        default_factory=list,
        description="derived parameters: key = expression of the free (and earlier tied) parameters, set at every "
        "evaluation and written into the profile",
    )
    targets: list[TargetSpec] = Field(min_length=1, description="figures the loss compares with")
    predict: list[TargetSpec] = Field(default_factory=list, description="figures simulated with the fit and reported, never fitted")
    loss: LossSpec = Field(default_factory=LossSpec, description="loss function")
    optimizer: OptimizerSpec = Field(default_factory=OptimizerSpec, description="global + local stage")
    budget: BudgetSpec = Field(default_factory=BudgetSpec, description="evaluation and wall-time limits")
    runtime: Duration | None = Field(
        None, description="simulated runtime per trace, seconds or with a unit, at most 30 days (default: as measured)"
    )
    seed: int = Field(
        1, ge=0, description="simulation seed, the same for every evaluation (common random numbers); a label, so no upper bound"
    )
    workers: int | None = Field(None, ge=1, le=4096, description="parallel processes, at most 4096 (default: all cores)")
    output: OutputSpec = Field(default_factory=OutputSpec, description="profile and report")

    @model_validator(mode="after")
    def _mode(self) -> CalibrationSpec:
        if (self.system is None) == (self.experiment is None):
            raise ValueError("give either system (trace calibration) or experiment (sweep calibration)")
        if self.system is not None and (self.sets or self.scale):
            raise ValueError("sets and scale are for an experiment")
        for k in self.fixed:
            if not k.startswith(("devices.", "cluster.", "workload.")):
                raise ValueError(f"fixed key {k!r} must start with devices.<i>., cluster. or workload.")
        if self.experiment is not None and any(k.startswith("workload.") for k in [*self.fixed, *(f.key for f in self.free)]):
            raise ValueError("workload.* keys are for trace calibrations; an experiment's workload is changed with sets:")
        keys = [f.key for f in self.free] + [t.key for t in self.tied]
        dup = {k for k in keys if keys.count(k) > 1}
        if dup:
            raise ValueError(f"parameter {sorted(dup)[0]!r} given twice (free/tied)")
        both = sorted(set(keys) & set(self.fixed))
        if both:
            raise ValueError(f"{both[0]!r} is both fixed and free/tied")
        from simulator.calibration.expr import ExprError, check_expr

        known: set[str] = set()
        for f in self.free:
            if f.var in known:
                raise ValueError(f"two free parameters are named {f.var!r}: give one a label")
            known.add(f.var)
        for i, t in enumerate(self.tied):
            if self.experiment is not None and t.key.startswith("workload."):
                raise ValueError("workload.* keys are for trace calibrations")
            try:
                check_expr(t.expr, known)
            except ExprError as e:
                raise ValueError(f"tied.{i}.expr {t.expr!r}: {e}") from None
            if t.var in known:
                raise ValueError(f"tied.{i}: the name {t.var!r} is already used: give it a label")
            known.add(t.var)
        _duration(self.runtime, "runtime")
        if self.optimizer.local.per_choice:
            n = math.prod(len(f.choices or []) for f in self.free if f.discrete)
            if n > 16:
                raise ValueError(f"optimizer.local.per_choice: {n} combinations of the discrete parameters (at most 16)")
        return self

    @property
    def runtime_s(self) -> float | None:
        return None if self.runtime is None else quantity(self.runtime)[0]


# --------------------------------------------------------------------------------------- loading
class LoadedSpec:
    """A validated spec with its paths resolved. A case of a multi-case spec has ``case`` set (its
    name); its report goes into a sub-directory of the spec's report directory."""

    def __init__(self, spec: CalibrationSpec, path: Path, case: str | None = None):
        self.spec = spec
        self.path = path
        self.dir = path.parent
        self.case = case

    @property
    def source(self) -> str:
        return str(self.path)

    def _read_roots(self) -> tuple[Path, ...]:
        from simulator.experiment.load import project_root

        return (self.dir, project_root())

    def _confined_read(self, p: str, field: str) -> None:
        """A path written in the spec that the calibration READS: relative (it must then resolve
        inside the spec's directory or the project, see :meth:`_inside_roots`)."""
        q = Path(p)
        if q.is_absolute() or "\\" in p:
            raise ConfigError(
                "an input path in a spec must be relative to the spec's directory (or the project root), "
                "with no '..' leading out; copy the measured files beside the spec",
                source=self.source,
                field=field,
            )

    def _inside_roots(self, path: Path) -> bool:
        """``path`` resolves (symlinks followed) inside the spec's directory or the project root."""
        try:
            r = path.resolve()
            return any(r.is_relative_to(root.resolve()) for root in self._read_roots())
        except (OSError, RuntimeError, ValueError):
            return False

    def find(self, p: str, field: str) -> Path:
        self._confined_read(p, field)
        for base in self._read_roots():
            cand = base / p
            if cand.exists() and self._inside_roots(cand):
                return cand
        raise ConfigError(
            f"{p!r} not found inside the spec's directory or the project (relative to either; "
            "nothing outside them is read)", source=self.source, field=field)

    def files(self, t: TargetSpec, field: str) -> list[Path]:
        pats = [t.files] if isinstance(t.files, str) else list(t.files or [])
        out: list[Path] = []
        for pat in pats:
            self._confined_read(pat, field)
            hits: list[Path] = []
            for base in self._read_roots():
                hits = [Path(h) for h in sorted(_glob.glob(str(base / pat))) if self._inside_roots(Path(h))]
                if hits:
                    break
            if not hits:
                raise ConfigError(f"no files match {pat!r} inside the spec's directory or the project", source=self.source, field=field)
            out += [h for h in hits if h not in out]
        return out

    def _inside_dir(self, value: str, field: str) -> Path:
        """A path written in the spec that the calibration WRITES to: relative, inside the spec's
        directory (no '..', not absolute). The command line's --out/--profile may go anywhere."""
        q = self.dir / value
        try:
            inside = bool(value) and "\\" not in value and q.resolve().is_relative_to(self.dir.resolve())
        except (OSError, RuntimeError, ValueError):
            inside = False
        if not inside:
            raise ConfigError(
                "must be a path inside the spec's directory (no '..' leading out); "
                "use --out/--profile on the command line to write elsewhere",
                source=self.source,
                field=field,
            )
        return q

    def profile_out(self) -> Path | None:
        p = self.spec.output.profile
        if not p:
            return None
        if p.endswith((".yaml", ".yml")):
            return self._inside_dir(p, "output.profile")
        from simulator.devices.registry import is_profile_name, models_dir

        if not is_profile_name(p) or ".." in Path(p).parts:
            raise ConfigError(
                "must be a profile name under models/ (e.g. local/my_disk) or a relative .yaml path",
                source=self.source,
                field="output.profile",
            )
        return models_dir() / f"{p}.yaml"

    def report_dir(self) -> Path:
        d = self._inside_dir(self.spec.output.report, "output.report")
        return d / self.case if self.case else d


def _substitute(v: Any, values: dict[str, Any], where: str, src: str) -> Any:
    """``${name}`` placeholders in the strings of ``v`` replaced by ``values`` (a string that is exactly
    one placeholder takes the value with its type)."""
    if isinstance(v, dict):
        return {k: _substitute(x, values, f"{where}.{k}" if where else str(k), src) for k, x in v.items()}
    if isinstance(v, list):
        return [_substitute(x, values, f"{where}.{i}", src) for i, x in enumerate(v)]
    if not isinstance(v, str) or "${" not in v:
        return v
    for name in _VAR_RE.findall(v):
        if name not in values:
            raise ConfigError(f"${{{name}}} is not a variable of this case (vars: {', '.join(sorted(values)) or 'none'})",
                              source=src, field=where)
    m = _VAR_RE.fullmatch(v)
    if m:
        return values[m.group(1)]
    return _VAR_RE.sub(lambda mm: str(values[mm.group(1)]), v)


def load_cases(path: str | Path) -> list[LoadedSpec]:
    """Read a calibration spec; a spec with ``cases:`` gives one validated spec per case (``${var}``
    placeholders replaced, ``set`` keys applied), a plain spec a list of itself."""
    p = Path(path)
    raw = load_yaml(p)
    if not isinstance(raw, dict):
        raise ConfigError("a calibration spec is a mapping (name, system/experiment, free, targets, ...)", source=str(p))
    if "cases" not in raw:
        return [_checked(LoadedSpec(validate(CalibrationSpec, raw, str(p)), p))]
    cases_raw = raw.pop("cases")
    if not isinstance(cases_raw, list) or not cases_raw:
        raise ConfigError("cases: a non-empty list of {name, vars, set}", source=str(p), field="cases")
    from simulator.config.base import set_dotted

    out: list[LoadedSpec] = []
    seen: set[str] = set()
    for i, c in enumerate(cases_raw):
        case = validate(CaseSpec, c, str(p), prefix=f"cases.{i}")
        if case.name in seen:
            raise ConfigError(f"case {case.name!r} given twice", source=str(p), field=f"cases.{i}.name")
        seen.add(case.name)
        doc = raw
        for k, v in case.set.items():  # the case's replacements first, then its variables everywhere
            doc = set_dotted(doc, k, v, source=f"{p}: cases.{i}.set")
        doc = _substitute(doc, case.vars, "", f"{p} (case {case.name})")
        spec = validate(CalibrationSpec, doc, f"{p} (case {case.name})")
        out.append(_checked(LoadedSpec(spec, p, case=case.name)))
    return out


def _checked(loaded: LoadedSpec) -> LoadedSpec:
    """Where a spec writes (output.profile, output.report) is checked before anything runs."""
    loaded.profile_out()
    loaded.report_dir()
    return loaded


def load_spec(path: str | Path) -> LoadedSpec:
    """Read and validate a calibration spec without cases (structure only; see ``Problem`` for the
    deep checks). A multi-case spec: :func:`load_cases`."""
    specs = load_cases(path)
    if len(specs) != 1 or specs[0].case is not None:
        raise ConfigError("this spec has cases: use load_cases", source=str(path), field="cases")
    return specs[0]


def rel_to(p: str | Path, start: str | Path) -> str:
    """``p`` as a path relative to the directory ``start`` (POSIX separators): how a file that lives in
    ``start`` refers to ``p``, valid wherever the tree is moved."""
    import os

    try:
        return Path(os.path.relpath(Path(p).resolve(), Path(start).resolve())).as_posix()
    except ValueError:  # another drive (Windows)
        return Path(p).name

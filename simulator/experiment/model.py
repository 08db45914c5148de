"""The experiment file: what a user writes in experiments/*.yaml.

::

    name: working_set_sata_vs_sas
    seed: 1
    replications: 3
    system:
      devices:
        - {name: sda, profile: hdd/seagate_st91000640ns}
    workload:                      # fio's options, fio's names ([global] + job sections)
      global: {rw: randread, bs: 8k, iodepth: 1, time_based: 1, runtime: 60s, filename: sda}
      jobs:
        - {name: randread}
    sweep:
      axes:
        working_set_GB: {key: workload.global.size, values: [1GB, 100GB, 1000GB]}
        drive:
          values:
            sata: {system.devices.0.profile: hdd/seagate_st91000640ns}
            sas:  {system.devices.0.profile: hdd/toshiba_al13seb900}
    reference:
      - table: calibration/reference/nutanix_working_set.csv
        match: {working_set_GB: working_set_GB}
        metrics: {mean_response_ms: read.lat_mean_ms}

The workload sections are validated by the workload layer (fio semantics) for every sweep point;
device parameters by each device kind's model. Everything else is validated here.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from simulator.config.base import ConfigModel
from simulator.devices.blocklayer import BlockLayerConfig

_SIMPLE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+\-]{0,99}$")


def _simple_name(v: str) -> str:
    """An experiment name becomes the directory out/<name>: one path component, nothing more."""
    if not isinstance(v, str) or not _SIMPLE_NAME.match(v):
        raise ValueError(
            "must be a simple name (letters, digits, _ - . +; at most 100 characters; not starting "
            "with a dot): it names the output directory out/<name>"
        )
    return v


def _relative_inside(v: str | None) -> str | None:
    """A file named in an experiment: a relative path that stays inside its base directory."""
    if v is None:
        return v
    p = PurePosixPath(v.replace("\\", "/"))
    if not v or p.is_absolute() or PureWindowsPath(v).is_absolute() or ".." in p.parts or "\x00" in v:
        raise ValueError("must be a relative path inside the experiment's directory or the project (no '..', not absolute)")
    return v


class DeviceSpec(ConfigModel):
    """One top-level device: a profile from models/ (with optional parameter overrides) or an inline kind."""

    name: str = Field(description="device name, used by fio's filename= (e.g. sda); no dots")
    profile: str | None = Field(None, description="profile path under models/ without .yaml (e.g. hdd/seagate_st91000640ns)")
    kind: str | None = Field(None, description="device kind for an inline device (queue, hdd, ssd...) when no profile is given")
    params: dict[str, Any] = Field(default_factory=dict, description="parameter overrides (nested mapping), merged over the profile")
    count: int = Field(
        1, ge=1, le=10_000, description="number of identical devices, 1..10000; >1 names them name0, name1, ... (default 1)"
    )
    block_layer: BlockLayerConfig | None = Field(
        None,
        description="the host's Linux block layer in front of the device (nr_requests, scheduler, device queue_depth; "
        "{} = the kernel's defaults); default none = requests go straight to the device",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v or "." in v or ":" in v or "/" in v or v.strip() != v:
            raise ValueError(f"invalid device name {v!r}: no dots, colons, slashes or spaces")
        return v

    @model_validator(mode="after")
    def _profile_or_kind(self) -> DeviceSpec:
        if not self.profile and not self.kind:
            raise ValueError("a device needs a 'profile' or a 'kind'")
        return self


class ClusterSpec(ConfigModel):
    """A Ceph cluster from models/clusters (or inline) with parameter overrides."""

    name: str = Field("ceph", description="component name of the cluster (default ceph)")
    profile: str | None = Field(None, description="cluster profile under models/ (e.g. clusters/croit_mach2)")
    kind: str | None = Field(None, description="'ceph_cluster' for an inline cluster")
    params: dict[str, Any] = Field(default_factory=dict, description="parameter overrides, merged over the profile")


class SystemSpec(ConfigModel):
    """The simulated hardware: standalone devices and/or one Ceph cluster."""

    devices: list[DeviceSpec] = Field(default_factory=list, description="standalone block devices")
    cluster: ClusterSpec | None = Field(None, description="a Ceph cluster whose RBD images fio's rbd engine can drive")

    @model_validator(mode="after")
    def _something(self) -> SystemSpec:
        if not self.devices and self.cluster is None:
            raise ValueError("the system has no devices and no cluster")
        names = [d.name for d in self.devices]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"duplicate device name {sorted(dup)[0]!r}")
        return self


class WorkloadSpec(ConfigModel):
    """fio job description: a [global] section and job sections, fio option names and values."""

    global_: dict[str, Any] = Field(default_factory=dict, alias="global", description="fio [global] options")
    jobs: list[dict[str, Any]] = Field(min_length=1, description="fio job sections; 'name' names the job")
    jobfile: str | None = Field(None, description="optional: read jobs from a real fio job file instead (path relative to the experiment)")

    _jobfile_inside = field_validator("jobfile")(_relative_inside)


class AxisSpec(ConfigModel):
    """One sweep axis. Either ``key`` + a list of ``values`` (each value is set at the dotted key), or a
    mapping label -> {dotted.key: value, ...} for axes that change several keys at once."""

    key: str | None = Field(None, description="dotted key set to each value (e.g. workload.global.iodepth)")
    values: list[Any] | dict[str | int | float, dict[str, Any]] = Field(description="values of the axis, or label -> overrides")

    @model_validator(mode="after")
    def _shape(self) -> AxisSpec:
        if isinstance(self.values, list):
            if not self.key:
                raise ValueError("an axis with a list of values needs 'key'")
            if not self.values:
                raise ValueError("an axis needs at least one value")
        elif self.key:
            raise ValueError("'key' is only for a list of values; a mapping gives its own dotted keys per label")
        elif not self.values:
            raise ValueError("an axis needs at least one value")
        return self


class RerunSpec(ConfigModel):
    """A sweep point run once more after the grid: a measured sequence that repeated some runs at its end
    (croit's sweep reran three reads the next morning, and the published file of one of them is the rerun).
    With ``persist_state`` the rerun joins the end of its sequence and starts from the state the sequence left."""

    labels: dict[str, Any] = Field(description="axis -> label of the grid point to run again (compared as text); every axis named")
    sets: dict[str, Any] = Field(
        default_factory=dict,
        description="dotted overrides for this rerun only, applied after the point's own (e.g. a shorter runtime)",
    )


#: the label that tells a rerun's row from the grid's run of the same point (see SweepSpec.reruns)
PASS_AXIS = "pass"


class SweepSpec(ConfigModel):
    """Grid (cartesian product, first axis outermost) or zip (lock-step) over named axes."""

    mode: Literal["grid", "zip"] = Field("grid", description="grid = every combination; zip = axes advance together")
    axes: dict[str, AxisSpec] = Field(description="axis name -> axis; names label the runs in tables and plots")
    persist_state: bool = Field(
        False,
        description="run the points of one replication back to back on the same simulated system "
        "(caches, drive state and fio's repeated offsets carry over), in the order listed",
    )
    exclude: list[dict[str, Any]] = Field(
        default_factory=list,
        description="label combinations to skip: a point is dropped when it matches every entry of one "
        "mapping (axis -> label, or axis -> list of labels)",
    )
    persist_by: list[str] = Field(
        default_factory=list,
        description="with persist_state: axes whose labels split the points into independent sequences "
        "(e.g. [pool] when two pools share no state); the sequences run in parallel",
    )
    reruns: list[RerunSpec] = Field(
        default_factory=list,
        max_length=1000,
        description="grid points run again after the grid, in this order (at most 1000); every row then carries "
        "the extra label 'pass': 1 for the grid's run, 2 for a point's first rerun, and so on",
    )

    @model_validator(mode="after")
    def _zip_lengths(self) -> SweepSpec:
        for a in self.persist_by:
            if a not in self.axes:
                raise ValueError(f"persist_by names {a!r}, which is not an axis")
        for ex in self.exclude:
            for a in ex:
                if a not in self.axes:
                    raise ValueError(f"exclude names {a!r}, which is not an axis")
        if self.reruns and PASS_AXIS in self.axes:
            raise ValueError(f"an axis named {PASS_AXIS!r} clashes with the label reruns add; rename the axis")
        for i, rr in enumerate(self.reruns):
            if set(rr.labels) != set(self.axes):
                missing = sorted(set(self.axes) - set(rr.labels))
                extra = sorted(set(rr.labels) - set(self.axes))
                what = f"does not name the axes {missing}" if missing else f"names {extra}, which are not axes"
                raise ValueError(f"reruns.{i}.labels {what} (a rerun names one label of every axis)")
        if self.mode == "zip":
            lens = {len(a.values) for a in self.axes.values()}
            if len(lens) > 1:
                raise ValueError("zip sweep axes must all have the same number of values")
        return self


class UnpivotSpec(ConfigModel):
    """A wide table (one column per value of an axis, e.g. jobs1_MBps, jobs5_MBps) read as long rows."""

    axis: str = Field(description="the sweep axis whose labels the columns stand for (e.g. numjobs)")
    metric: str = Field(description="the simulated metric the cells are compared with (e.g. write.bw_MiBps)")
    columns: dict[str | int | float, str] = Field(description="axis label -> table column")


class ReferenceSpec(ConfigModel):
    """A table of measured/published figures to print beside the simulated ones."""

    table: str = Field(description="CSV path, relative to the project root or the experiment file (no '..', not absolute)")
    label: str = Field("reference", description="name shown in tables and plots")
    source: str = Field("", description="where the figures come from (shown in the report)")
    match: dict[str, str] = Field(default_factory=dict, description="table column -> sweep axis name (values compared as numbers when both parse)")
    filter: dict[str, Any] = Field(default_factory=dict, description="keep only rows whose column equals the value")
    metrics: dict[str, str] = Field(
        default_factory=dict, description="table column -> simulated metric (e.g. read.lat_mean_ms, write.iops, read.p99_ms)"
    )
    unpivot: UnpivotSpec | None = Field(None, description="read a wide table as one row per axis label")
    goal: float | None = Field(None, gt=0, le=10, description="relative error goal shown in the table (0.10 = 10%; at most 10)")
    predict: bool = Field(
        True, description="list this reference's metrics as predictions for points (or cells) it does not give (default true)"
    )

    _table_inside = field_validator("table")(_relative_inside)


class RatioSpec(ConfigModel):
    """Print metric(numerator) / metric(denominator) along one axis (e.g. MACH.2 / single per QD)."""

    axis: str = Field(description="the axis whose two labels are compared")
    numerator: str = Field(description="axis label on top")
    denominator: str = Field(description="axis label below")
    metrics: list[str] = Field(default_factory=lambda: ["iops"], description="metric names (per direction present)")


class PlotSpec(ConfigModel):
    """A plot written to the output directory."""

    kind: Literal["iops_vs_x", "hdr", "cdf", "metric_vs_x"] = Field(description="plot type")
    x: str | None = Field(None, description="axis name on the x axis (iops_vs_x, metric_vs_x)")
    metric: str = Field("iops", description="metric on the y axis for *_vs_x plots")
    at: dict[str, list[Any]] = Field(default_factory=dict, description="for hdr/cdf: one figure per combination of these axis values")
    where: dict[str, Any] = Field(default_factory=dict, description="only points whose labels match (axis -> label or list of labels)")
    log_x: bool = Field(True, description="log2 x axis for *_vs_x plots")
    title: str = Field("", description="plot title")


class ReportSpec(ConfigModel):
    metrics: list[str] = Field(
        default_factory=lambda: ["iops", "lat_mean_ms", "p50_ms", "p99_ms", "p99.9_ms"],
        description="metrics shown in the terminal table (per direction present)",
    )
    ratio: RatioSpec | None = Field(None, description="optional ratio table")
    plots: list[PlotSpec] = Field(default_factory=list, description="plots to write")


class ExperimentSpec(ConfigModel):
    """A runnable experiment: system + fio workload + run control + optional sweep and references."""

    name: str = Field(description="experiment name: the output directory out/<name>, so one simple name (letters, digits, _ - . +)")
    description: str = Field("", description="what the experiment shows")
    seed: int = Field(1, ge=0, le=2**64 - 1, description="experiment seed; each component's stream is derived from it and its path")
    replications: int = Field(
        1,
        ge=1,
        le=10_000,
        description="independent replications per point (CIs over replications when >= 2). Replication 0 "
        "replays fio's offset sequence; replication r > 0 uses its own seed and its own fio randseed",
    )
    system: SystemSpec = Field(description="the simulated hardware")
    workload: WorkloadSpec = Field(description="fio jobs")
    sweep: SweepSpec | None = Field(None, description="optional parameter sweep")
    reference: list[ReferenceSpec] = Field(default_factory=list, description="measured/published tables to compare with")
    report: ReportSpec = Field(default_factory=ReportSpec, description="what to print and plot")

    _name_simple = field_validator("name")(_simple_name)

"""The plan file: what ``simrun plan SPEC.yaml`` reads.

::

    name: plan_rbd_500tb
    requirement:
      usable_capacity: 500TB
      workload: [{rw: randwrite, bs: 4k, clients: 40, iodepth: 32}]
      slo: {percentile: 99, latency: 50ms, target_iops: 20000}
      failure: {survive: host}
    space:
      shapes:                              # families of configurations, each a grid
        - name: hdd
          drive: [hdd_exos_x24_24tb]
          osds_per_host: [12, 24]
          db_device: [none, nvme_pm9a3_3.84tb]
          ...
    simulation: {hosts: 3, ramp: 2s, ...}

The requirement is what the cluster must do; the space is what the planner may build it from
(catalogue part names, see :mod:`simulator.plan.catalog`); ``simulation`` says how each
surviving configuration is simulated (see docs/user-guide.md, "Capacity planning").
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from simulator.config.base import ConfigModel
from simulator.units import Bytes, BytesPerSecond, Seconds

__all__ = ["ClientGroup", "FailureSpec", "PlanSpec", "Protection", "ShapeSpace", "SimulationSpec", "Slo"]

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+\-]{0,99}$")
_PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)


class ClientGroup(ConfigModel):
    """A group of identical RBD clients with one fio-style IO pattern (an open-loop Poisson stream each)."""

    name: str = Field("clients", pattern=r"^[A-Za-z0-9_\-]{1,40}$", description="group name (default clients)")
    rw: Literal["randwrite", "randread", "randrw", "write", "read", "rw"] = Field(
        "randwrite", description="fio rw= of every client of the group (default randwrite)"
    )
    bs: Bytes = Field(4096, ge=512, le=64 << 20, description="fio bs=, bytes, 512 B..64 MiB (default 4k)")
    bssplit: str | None = Field(
        None, description="fio bssplit= (e.g. 4k/70:64k/30); overrides bs for the arrivals (default none)"
    )
    rwmixread: int = Field(50, ge=0, le=100, description="fio rwmixread= for randrw/rw, percent (default 50)")
    clients: int = Field(1, ge=1, le=10000, description="number of clients (fio jobs), each with its own image (default 1)")
    share: float = Field(
        1.0, gt=0, le=1e6, description="relative share of the target load carried by this group (default 1; shares are normalised)"
    )
    iodepth: int = Field(
        64, ge=1, le=65536,
        description="most IOs in flight per client (fio iodepth=); open-loop arrivals beyond it wait, as in fio (default 64)",
    )

    @property
    def mean_bs(self) -> float:
        """Mean IO size, bytes (bssplit weights when given)."""
        if not self.bssplit:
            return float(self.bs)
        from simulator.units import parse_size

        tot = w = 0.0
        for item in self.bssplit.split(":"):
            size, _, pct = item.partition("/")
            p = float(pct) if pct else 0.0
            tot += parse_size(size) * p
            w += p
        return tot / w if w else float(self.bs)

    @field_validator("bssplit")
    @classmethod
    def _bssplit(cls, v: str | None) -> str | None:
        if v is None:
            return v
        from simulator.units import parse_size

        try:
            parts = [p.partition("/") for p in v.split(":")]
            for size, _, pct in parts:
                parse_size(size)
                if pct:
                    float(pct)
        except (ValueError, TypeError) as e:
            raise ValueError(f"not a fio bssplit (size/percent:...): {e}") from None
        return v

    @property
    def write_fraction(self) -> float:
        if self.rw in ("randwrite", "write"):
            return 1.0
        if self.rw in ("randread", "read"):
            return 0.0
        return 1.0 - self.rwmixread / 100.0


class Slo(ConfigModel):
    """The service level: a latency percentile bound at a target load."""

    percentile: float = Field(
        99.0, le=100, description="completion-latency percentile: one of 50, 90, 99, 99.9, 99.99, at most 100 (default 99)"
    )
    latency: Seconds = Field(gt=0, le=600, description="bound on that percentile, seconds (e.g. 50ms)")
    target_iops: float | None = Field(None, gt=0, le=1e9, description="client IOs per second the cluster must carry (all clients)")
    target_bandwidth: BytesPerSecond | None = Field(
        None, gt=0, le=1e13, description="or: client bytes per second (converted to IOPS with the mix's mean IO size)"
    )

    @field_validator("percentile")
    @classmethod
    def _pct(cls, v: float) -> float:
        if float(v) not in _PERCENTILES:
            raise ValueError(f"must be one of {', '.join(f'{p:g}' for p in _PERCENTILES)} (the percentiles every run reports)")
        return float(v)

    @model_validator(mode="after")
    def _one_target(self) -> Slo:
        if (self.target_iops is None) == (self.target_bandwidth is None):
            raise ValueError("give exactly one of target_iops and target_bandwidth")
        return self


class FailureSpec(ConfigModel):
    """What the cluster must survive."""

    survive: Literal["none", "osds", "host"] = Field(
        "none", description="none, a number of OSDs (osds) or one host (host) down, with data re-protected on the rest (default none)"
    )
    osds: int = Field(1, ge=1, le=1000, description="with survive: osds, how many OSDs, count (default 1)")
    slo_during_recovery: bool = Field(
        False,
        description=(
            "the SLO must also hold while the lost data is recovered: every probe fails the host (or the OSDs) and is "
            "judged on the client latency during the backfill that follows (default false)"
        ),
    )

    @model_validator(mode="after")
    def _something_fails(self) -> FailureSpec:
        if self.slo_during_recovery and self.survive == "none":
            raise ValueError("slo_during_recovery needs a failure to recover from: survive: host or osds")
        return self


class Requirement(ConfigModel):
    usable_capacity: Bytes = Field(gt=0, le=2**60, description="data the clients store, bytes, at most 1 EiB (e.g. 500TB)")
    max_fill: float = Field(
        0.8, gt=0.1, le=0.95,
        description="highest fill of the raw space after a failure (Ceph's nearfull ratio is 0.85), fraction (default 0.8)",
    )
    workload: list[ClientGroup] = Field(min_length=1, description="client groups; the target load is split by share")
    slo: Slo = Field(description="latency target")
    failure: FailureSpec = Field(default_factory=FailureSpec, description="failure tolerance")

    @property
    def clients(self) -> int:
        return sum(g.clients for g in self.workload)

    def shares(self) -> list[float]:
        tot = sum(g.share for g in self.workload)
        return [g.share / tot for g in self.workload]

    @property
    def mean_bs(self) -> float:
        return sum(s * g.mean_bs for s, g in zip(self.shares(), self.workload, strict=True))

    @property
    def write_fraction(self) -> float:
        return sum(s * g.write_fraction for s, g in zip(self.shares(), self.workload, strict=True))

    @property
    def target_iops(self) -> float:
        if self.slo.target_iops is not None:
            return float(self.slo.target_iops)
        return float(self.slo.target_bandwidth) / self.mean_bs


class Protection(ConfigModel):
    """Data protection of the pool: ``replicated: 3`` or ``ec: [4, 2]`` (k data + m coding chunks)."""

    replicated: int | None = Field(None, ge=2, le=6, description="replicas (pool size), 2..6")
    ec: tuple[Annotated[int, Field(ge=2, le=16)], Annotated[int, Field(ge=1, le=4)]] | None = Field(
        None, description="erasure code [k, m], k 2..16, m 1..4"
    )
    stripe_unit: Bytes = Field(
        4096, ge=512, le=1 << 24,
        description="with ec: bytes of a data chunk per stripe (osd_pool_erasure_code_stripe_unit, default 4096)",
    )

    @model_validator(mode="after")
    def _one(self) -> Protection:
        if (self.replicated is None) == (self.ec is None):
            raise ValueError("give exactly one of replicated (size) and ec ([k, m])")
        if self.ec is None and self.stripe_unit != 4096:
            raise ValueError("stripe_unit is an erasure-code setting (give ec: [k, m])")
        return self

    @property
    def label(self) -> str:
        if self.replicated:
            return f"rep{self.replicated}"
        su = "" if self.stripe_unit == 4096 else f"su{self.stripe_unit // 1024}k" if self.stripe_unit % 1024 == 0 else f"su{self.stripe_unit}"
        return f"ec{self.ec[0]}+{self.ec[1]}{su}"

    @property
    def efficiency(self) -> float:
        """Usable share of the raw space."""
        return 1.0 / self.replicated if self.replicated else self.ec[0] / (self.ec[0] + self.ec[1])

    @property
    def width(self) -> int:
        """Failure domains one object spans (replicas, or k + m chunks)."""
        return self.replicated if self.replicated else self.ec[0] + self.ec[1]

    @property
    def write_copies(self) -> float:
        """Bytes written to drives per client byte (replicas, or (k+m)/k)."""
        return float(self.replicated) if self.replicated else (self.ec[0] + self.ec[1]) / self.ec[0]


class HostRange(ConfigModel):
    min: int = Field(1, ge=1, le=10000, description="fewest hosts (default 1; the failure domain may need more)")
    max: int = Field(64, ge=1, le=10000, description="most hosts (default 64)")

    @model_validator(mode="after")
    def _order(self) -> HostRange:
        if self.max < self.min:
            raise ValueError("max must be >= min")
        return self


class ShapeSpace(ConfigModel):
    """A family of cluster configurations: the grid of every combination of the lists below."""

    name: str = Field(pattern=r"^[A-Za-z0-9_\-]{1,40}$", description="family name (e.g. hdd, hdd_nvme_db, all_flash)")
    host: list[str] = Field(min_length=1, description="host chassis (catalogue hosts)")
    drive: list[str] = Field(min_length=1, description="OSD data drives (catalogue drives)")
    osds_per_host: list[Annotated[int, Field(ge=1, le=1024)]] = Field(
        min_length=1, description="data drives (= OSDs) per host, each 1-1024"
    )
    db_device: list[str] = Field(default_factory=lambda: ["none"], description="DB/WAL device (catalogue drive) or none")
    db_fanout: list[Annotated[int, Field(ge=1, le=1024)]] = Field(
        default_factory=lambda: [6], description="OSDs sharing one DB/WAL device, each 1-1024"
    )
    db_size: Bytes = Field("60GiB", gt=0, le=2**50, description="DB/WAL volume per OSD, bytes, at most 1 PiB (default 60GiB)")
    protection: list[Protection] = Field(
        default_factory=lambda: [Protection(replicated=3)], description="replicated size or EC k+m (default replicated 3)"
    )
    pgs_per_osd: list[Annotated[int, Field(ge=1, le=100_000)]] = Field(
        default_factory=lambda: [100],
        description="PG replicas per OSD the pg_num aims at, each 1-100000 (power of two rounding; default 100)",
    )
    nic: list[str] = Field(min_length=1, description="network cards (catalogue NICs)")
    ceph_release: list[Literal["nautilus", "octopus", "pacific", "quincy"]] = Field(
        default_factory=lambda: ["quincy"], description="Ceph releases (their option defaults; default quincy)"
    )
    hosts: HostRange = Field(default_factory=HostRange, description="host counts to consider")

    @field_validator("osds_per_host", "db_fanout", "pgs_per_osd")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if any(x < 1 or x > 10000 for x in v):
            raise ValueError("every value must be between 1 and 10000")
        return v


class SimulationSpec(ConfigModel):
    """How a surviving configuration is simulated (a representative slice of the cluster, short runs)."""

    hosts: int = Field(
        3, ge=1, le=64,
        description="hosts in the simulated slice (at least the pool's width); the slice gets its hosts' share of the load (default 3)",
    )
    ramp: Seconds = Field("2s", ge=0, le=3600, description="simulated warm-up before measuring, seconds (default 2s)")
    runtime_min: Seconds = Field("2s", gt=0, le=3600, description="shortest measured window, seconds (default 2s)")
    runtime_max: Seconds = Field("8s", gt=0, le=36000, description="longest measured window, seconds (default 8s)")
    ios_per_probe: int = Field(
        20000, ge=100, le=10**8,
        description="measured IOs a probe aims at: window = ios_per_probe / offered IOPS within [runtime_min, runtime_max] (default 20000)",
    )
    max_data_per_osd: Bytes = Field(
        "128GiB", gt=0, le=2**44,
        description="most data per simulated OSD; more is scaled down with the caches and HDD stroke (default 128GiB)",
    )
    rel_tol: float = Field(0.05, gt=0, lt=1, description="relative width at which the load search stops (default 0.05)")
    max_probes: int = Field(8, ge=2, le=100, description="simulation runs per configuration, at most (default 8)")
    pareto_probes: int = Field(
        3, ge=0, le=20,
        description="when no host count meets the SLO, runs spent finding what the configuration does sustain, for the plot (default 3)",
    )
    refine: int = Field(0, ge=0, le=4, description="re-runs (doubled window) of a probe whose CI straddles the bound (default 0)")
    recovery_settle: Seconds = Field(
        "2s", ge=0, le=3600,
        description=(
            "with slo_during_recovery: simulated time from the failure (at the end of ramp) to the start of the measured "
            "window: the PGs' peering pause and the client backlog it leaves are not measured, the backfill is (default 2s)"
        ),
    )

    @model_validator(mode="after")
    def _order(self) -> SimulationSpec:
        if self.runtime_max < self.runtime_min:
            raise ValueError("runtime_max must be >= runtime_min")
        return self


class Space(ConfigModel):
    shapes: list[ShapeSpace] = Field(min_length=1, description="families of configurations")

    @model_validator(mode="after")
    def _names(self) -> Space:
        names = [s.name for s in self.shapes]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"two shapes are named {dup[0]!r}")
        return self


class PlanSpec(ConfigModel):
    """A capacity-planning question: requirement, catalogue, search space, simulation settings."""

    name: str = Field(description="plan name: the output directory out/<name>")
    description: str = Field("", description="the question, in words")
    seed: int = Field(1, ge=0, le=2**32 - 1, description="seed; every configuration uses the same one (common random numbers)")
    catalog: str = Field(
        "models/catalog", description="catalogue directory, relative to the project root or the plan file (default models/catalog)"
    )
    requirement: Requirement = Field(description="what the cluster must do")
    space: Space = Field(description="what the planner may build it from")
    simulation: SimulationSpec = Field(default_factory=SimulationSpec, description="how candidates are simulated")
    report_top: int = Field(10, ge=1, le=1000, description="rows of the answer table (default 10)")

    @field_validator("name")
    @classmethod
    def _simple(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("must be a simple name (letters, digits, _ - . +): it names the output directory out/<name>")
        return v

    @field_validator("catalog")
    @classmethod
    def _inside(cls, v: str) -> str:
        from pathlib import PurePosixPath

        p = PurePosixPath(v.replace("\\", "/"))
        if not v or p.is_absolute() or ".." in p.parts:
            raise ValueError("must be a relative path inside the project (no '..', not absolute)")
        return v

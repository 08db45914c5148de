"""Candidates of a plan: shapes (one host design) x host counts, their cost, capacity and structure.

A *shape* fixes everything but the number of hosts: chassis, data drive, OSDs per host, DB/WAL
device and fan-out, protection, PG density, NIC, Ceph release. A *candidate* is a shape at a host
count. Cost and capacity are arithmetic on the catalogue:

* cost = hosts x (chassis + OSDs x drive + DB devices x DB device + NIC + switch port)
* raw after the tolerated failure = (hosts - 1) x OSDs x drive capacity (one host), or
  hosts x OSDs x capacity - N x capacity (N OSDs), or all of it (none)
* usable = raw after failure x protection efficiency (1/size, or k/(k+m)) x max_fill
* hosts >= pool width (size, or k+m) + 1 when a host must be survivable (the failure domain is the
  host: the lost host's data needs somewhere to go).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Any

from simulator.plan.catalog import Catalog, DrivePart, HostPart, NicPart, SwitchPortPart
from simulator.plan.spec import PlanSpec, Protection, ShapeSpace

__all__ = ["Candidate", "Shape", "enumerate_shapes", "structural_problem"]


@dataclass(frozen=True)
class Shape:
    family: str
    host: HostPart
    drive: DrivePart
    osds_per_host: int
    db: DrivePart | None
    db_fanout: int
    db_size: int
    protection: Protection
    pgs_per_osd: int
    nic: NicPart
    switch_port: SwitchPortPart | None
    release: str
    host_range: tuple[int, int]

    @property
    def key(self) -> str:
        """Stable short name: family and every choice."""
        db = f"{self.db.name}x{self.db_fanout}" if self.db else "nodb"
        return (f"{self.family}:{self.host.name}:{self.osds_per_host}x{self.drive.name}:{db}:{self.protection.label}:"
                f"pg{self.pgs_per_osd}:{self.nic.name}:{self.release}")

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.key.encode()).hexdigest()[:12]

    @property
    def db_per_host(self) -> int:
        return math.ceil(self.osds_per_host / self.db_fanout) if self.db else 0

    # --------------------------------------------------------------------------- cost
    def host_cost(self) -> float:
        """Price of one built host, USD."""
        c = self.host.price.usd + self.osds_per_host * self.drive.price.usd + self.nic.price.usd
        if self.db:
            c += self.db_per_host * self.db.price.usd
        if self.switch_port:
            c += self.switch_port.price.usd
        return c

    def cost(self, hosts: int) -> float:
        return hosts * self.host_cost()

    def illustrative_prices(self) -> bool:
        parts = [self.host, self.drive, self.nic] + ([self.db] if self.db else []) + ([self.switch_port] if self.switch_port else [])
        return any(p.price.illustrative for p in parts)

    # --------------------------------------------------------------------------- capacity
    def raw(self, hosts: int) -> float:
        return hosts * self.osds_per_host * float(self.drive.capacity)

    def raw_after_failure(self, hosts: int, failure: Any) -> float:
        if failure.survive == "host":
            return self.raw(hosts - 1)
        if failure.survive == "osds":
            return max(0.0, self.raw(hosts) - failure.osds * float(self.drive.capacity))
        return self.raw(hosts)

    def usable(self, hosts: int, failure: Any, max_fill: float) -> float:
        return self.raw_after_failure(hosts, failure) * self.protection.efficiency * max_fill

    def min_hosts_width(self, failure: Any) -> int:
        return self.protection.width + (1 if failure.survive == "host" else 0)

    def min_hosts_capacity(self, need: float, failure: Any, max_fill: float) -> int:
        """Fewest hosts whose usable space (after the failure) holds ``need`` bytes."""
        per_host = self.osds_per_host * float(self.drive.capacity) * self.protection.efficiency * max_fill
        extra = 0.0
        if failure.survive == "osds":
            extra = failure.osds * float(self.drive.capacity) * self.protection.efficiency * max_fill
        h = math.ceil((need + extra) / per_host - 1e-12)
        if failure.survive == "host":
            h += 1
        return max(1, h)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key, "family": self.family, "host": self.host.name, "drive": self.drive.name,
            "osds_per_host": self.osds_per_host, "db_device": self.db.name if self.db else None,
            "db_per_host": self.db_per_host, "db_fanout": self.db_fanout if self.db else None,
            "protection": self.protection.label, "pgs_per_osd": self.pgs_per_osd, "nic": self.nic.name,
            "switch_port": self.switch_port.name if self.switch_port else None, "ceph_release": self.release,
            "host_cost_usd": round(self.host_cost(), 2),
        }


@dataclass
class Candidate:
    """A shape at a host count and what the planner found out about it."""

    shape: Shape
    hosts: int
    status: str = "pending"  # pruned | not-simulated | meets | fails | undecided
    reason: str = ""
    bottleneck: str = ""
    bound_iops: float | None = None
    sustainable: tuple[float | None, float | None, float | None] = (None, None, None)  # lower, estimate, upper (IOPS)
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def cost(self) -> float:
        return self.shape.cost(self.hosts)

    def to_dict(self, spec: PlanSpec) -> dict[str, Any]:
        r = spec.requirement
        return {
            **self.shape.to_dict(), "hosts": self.hosts, "osds": self.hosts * self.shape.osds_per_host,
            "cost_usd": round(self.cost, 2), "raw_TB": self.shape.raw(self.hosts) / 1e12,
            "usable_TB": self.shape.usable(self.hosts, r.failure, r.max_fill) / 1e12,
            "status": self.status, "reason": self.reason, "bottleneck": self.bottleneck,
            "bound_iops": self.bound_iops,
            "sustainable_iops_lower": self.sustainable[0], "sustainable_iops": self.sustainable[1],
            "sustainable_iops_upper": self.sustainable[2], **self.detail,
        }


def structural_problem(shape: Shape) -> str | None:
    """Why a shape cannot be built (bays, fan-out, DB space, memory), or None."""
    bays = dict(shape.host.bays)
    need = {"3.5": 0, "2.5": 0, "u.2": 0, "m.2": 0}
    need[shape.drive.form_factor] += shape.osds_per_host
    if shape.db:
        if shape.db.kind != "ssd":
            return f"DB/WAL device {shape.db.name} is not flash"
        if shape.drive.kind != "hdd":
            return "a separate DB/WAL device only helps HDD OSDs"
        need[shape.db.form_factor] += shape.db_per_host
        if shape.db_size * min(shape.db_fanout, shape.osds_per_host) > shape.db.capacity:
            return (f"fan-out: {min(shape.db_fanout, shape.osds_per_host)} DB volumes of {shape.db_size / 2**30:.0f} GiB "
                    f"do not fit on {shape.db.name}")
    for ff in ("3.5", "u.2", "m.2"):
        if need[ff] > bays.get(ff, 0):
            return f"bays: {need[ff]} {ff}-inch/slot devices, chassis {shape.host.name} has {bays.get(ff, 0)}"
    if need["2.5"] > bays.get("2.5", 0) + bays.get("3.5", 0) - need["3.5"]:
        return f"bays: {need['2.5']} 2.5-inch drives do not fit chassis {shape.host.name}"
    if shape.osds_per_host * shape.host.ram_per_osd > shape.host.ram:
        return (f"memory: {shape.osds_per_host} OSDs x {shape.host.ram_per_osd / 2**30:.0f} GiB > "
                f"{shape.host.ram / 2**30:.0f} GiB in {shape.host.name}")
    if shape.switch_port is None:
        return f"no switch port in the catalogue as fast as {shape.nic.name}"
    return None


def _part(catalog: Catalog, group: str, name: str, where: str) -> Any:
    from simulator.errors import ConfigError

    try:
        return catalog.part(group, name)
    except KeyError:
        known = ", ".join(p.name for p in getattr(catalog, group)) or "none"
        raise ConfigError(f"no {group[:-1].replace('_', ' ')} {name!r} in the catalogue (known: {known})", field=where) from None


def enumerate_shapes(spec: PlanSpec, catalog: Catalog) -> list[Shape]:
    """Every combination of every shape family, parts resolved (unknown part names are input errors)."""
    out: list[Shape] = []
    seen: set[str] = set()
    for si, fam in enumerate(spec.space.shapes):
        out.extend(_family(fam, catalog, f"space.shapes.{si}", seen))
    return out


def _family(fam: ShapeSpace, catalog: Catalog, where: str, seen: set[str]) -> list[Shape]:
    hosts = [_part(catalog, "hosts", n, f"{where}.host") for n in fam.host]
    drives = [_part(catalog, "drives", n, f"{where}.drive") for n in fam.drive]
    dbs = [None if n == "none" else _part(catalog, "drives", n, f"{where}.db_device") for n in fam.db_device]
    nics = [_part(catalog, "nics", n, f"{where}.nic") for n in fam.nic]
    out = []
    for host, drive, osds, db, fan, prot, pgs, nic, rel in itertools.product(
        hosts, drives, fam.osds_per_host, dbs, fam.db_fanout, fam.protection, fam.pgs_per_osd, nics, fam.ceph_release
    ):
        s = Shape(fam.name, host, drive, osds, db, fan if db else 0, fam.db_size, prot, pgs, nic,
                  catalog.switch_port_for(nic.bandwidth), rel, (fam.hosts.min, fam.hosts.max))
        if s.key in seen:
            continue  # e.g. db none x several fan-outs
        seen.add(s.key)
        out.append(s)
    return out


def digest_of(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]

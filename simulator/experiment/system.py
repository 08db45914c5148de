"""The simulated hardware of one run (``system:`` of an experiment): named top-level devices and an
optional Ceph cluster, built into a :class:`~simulator.engine.Simulation`, and the mapping of a fio
job's ``filename=`` (or the rbd engine's pool/image) onto its devices."""

from __future__ import annotations

from typing import Any

from simulator.devices.base import Device
from simulator.engine import Component, Simulation
from simulator.errors import ConfigError
from simulator.experiment.model import SystemSpec

__all__ = ["System"]


def _prefix_field(field: str | None) -> str:
    if not field:
        return "system"
    return field if field.startswith(("system", "workload")) else f"system.cluster.{field}"


class System(Component):
    """The simulated hardware of one run: named devices and an optional Ceph cluster."""

    def __init__(self, sim: Simulation, spec: SystemSpec, source: str | None = None):
        try:
            self._build(sim, spec, source)
        except ConfigError as e:
            if e.source is None:
                raise ConfigError(e.message, source=source, field=_prefix_field(e.field)) from None
            raise
        except ValueError as e:
            # two components on one path (e.g. a Ceph host named like a component of its own):
            # a configuration problem, named as such
            if "duplicate component path" not in str(e):
                raise
            path = str(e).split("duplicate component path", 1)[1].strip().strip("'\"")
            raise ConfigError(
                f"two components would have the same path {path!r}: rename a device, host or cluster "
                "so that it does not clash with another one (or with a component the model creates)",
                source=source,
                field="system",
            ) from None

    def _build(self, sim: Simulation, spec: SystemSpec, source: str | None) -> None:
        super().__init__("system", sim.root)
        from simulator.devices.registry import build_device

        self.devices: dict[str, Device] = {}
        for i, d in enumerate(spec.devices):
            names = [d.name] if d.count == 1 else [f"{d.name}{k}" for k in range(d.count)]
            for n in names:
                dev = build_device(
                    d.model_dump(exclude={"name", "count", "block_layer"}), n, self, source=source, field=f"system.devices.{i}"
                )
                if d.block_layer is not None and d.block_layer.enabled:
                    from simulator.devices.blocklayer import BlockLayer

                    dev = BlockLayer("blk", dev, dev, d.block_layer)  # fio's filename=n reaches the block layer
                self.devices[n] = dev
        self.cluster = None
        self.gc_collected = False  # run_jobs_on's full garbage collection done before its first run
        if spec.cluster is not None:
            c = spec.cluster
            self.cluster = build_device(
                {"profile": c.profile, "kind": c.kind or (None if c.profile else "ceph_cluster"), "params": c.params},
                c.name,
                self,
                source=source,
                field="system.cluster",
            )

    def resolve_target(self, job: Any) -> list[Device]:
        try:
            return self._resolve_target(job)
        except ConfigError as e:
            if e.source is None:
                raise ConfigError(e.message, source=getattr(job, "source", None), field=e.field) from None
            raise

    def _resolve_target(self, job: Any) -> list[Device]:
        """fio's filename=a:b (device names or dotted paths such as sda.lun0) or the rbd engine's image."""
        if getattr(job, "ioengine", None) == "rbd":
            if self.cluster is None:
                raise ConfigError("ioengine=rbd needs a Ceph cluster in system.cluster", field=f"workload.{job.name}.ioengine")
            return [self.cluster.image(job.pool, job.rbdname)]
        names = [n for n in str(getattr(job, "filename", "") or "").split(":") if n]
        if not names:
            if len(self.devices) == 1:
                return list(self.devices.values())
            raise ConfigError("job has no filename= and the system has several devices", field=f"workload.{job.name}.filename")
        out = []
        for n in names:
            dev = self.devices.get(n)
            if dev is None:
                try:
                    dev = self.find(f"system.{n}")
                except KeyError:
                    known = ", ".join(sorted(self.devices)) or "none"
                    raise ConfigError(f"no device {n!r} (devices: {known})", field=f"workload.{job.name}.filename") from None
            if not isinstance(dev, Device):
                raise ConfigError(f"{n!r} is not a block device", field=f"workload.{job.name}.filename")
            out.append(dev)
        return out

    def all_devices(self) -> list[Device]:
        return [c for c in self.walk() if isinstance(c, Device)]

    def reset_stats(self) -> None:
        for d in self.all_devices():
            d.reset_stats()
        if self.cluster is not None and hasattr(self.cluster, "reset_stats"):
            self.cluster.reset_stats()

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"devices": [d.stats() for d in self.all_devices()]}
        if self.cluster is not None and hasattr(self.cluster, "stats"):
            out["cluster"] = self.cluster.stats()
        return out

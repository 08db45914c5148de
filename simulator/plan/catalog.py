"""The parts catalogue of the planner: drives, hosts, NICs and switch ports with prices.

A catalogue is a directory of YAML files (``models/catalog/`` by default; any of ``drives.yaml``,
``hosts.yaml``, ``network.yaml``), each a mapping ``drives: [...]``, ``hosts: [...]``, ``nics: [...]``,
``switch_ports: [...]``. Users edit it: every price carries the date it was seen and its source,
or says ``illustrative: true`` (a round figure for comparing configurations, not a quote).

A drive names the simulator profile that models it (``profile: hdd/seagate_exos_x24``) and may
override the profile's parameters (``params``), e.g. a larger capacity of the same drive family;
the catalogue's ``capacity`` is the marketed capacity used for the capacity arithmetic and must
agree with the simulated device's capacity within 1 %.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from simulator.config.base import ConfigModel, validate
from simulator.errors import ConfigError
from simulator.units import Bytes, BytesPerSecond
from simulator.yamlio import load_yaml_file

__all__ = ["Catalog", "DrivePart", "HostPart", "NicPart", "Price", "SwitchPortPart", "load_catalog"]

_PART = r"^[A-Za-z0-9_][A-Za-z0-9_.+\-]{0,79}$"


class Price(ConfigModel):
    """A unit price: either seen somewhere (``date`` + ``source``) or ``illustrative``."""

    usd: float = Field(gt=0, le=1e7, description="unit price, US dollars (no default; 0 < usd <= 10 million)")
    date: str | None = Field(None, pattern=r"^\d{4}-\d{2}(-\d{2})?$", description="when the price was seen, YYYY-MM[-DD]")
    source: str | None = Field(None, min_length=3, description="where it was seen (URL or document)")
    illustrative: bool = Field(False, description="a round figure for comparisons, not a quote (default false)")
    note: str = Field("", description="free text: what the figure stands for")

    @model_validator(mode="after")
    def _sourced(self) -> Price:
        if not self.illustrative and not (self.date and self.source):
            raise ValueError("a price needs a date and a source, or illustrative: true")
        return self

    @property
    def label(self) -> str:
        return "illustrative" if self.illustrative else f"{self.source} ({self.date})"


class DrivePart(ConfigModel):
    """A data drive or a DB/WAL device."""

    name: str = Field(pattern=_PART, description="part name used by plan specs")
    kind: Literal["hdd", "ssd"] = Field(description="hdd (rotational OSD data device) or ssd (flash, NVMe or SATA)")
    form_factor: Literal["3.5", "2.5", "u.2", "m.2"] = Field(description="drive bay it needs: 3.5, 2.5 (SAS/SATA), u.2 (NVMe) or m.2")
    capacity: Bytes = Field(gt=0, le=2**50, description="marketed capacity, bytes (decimal units as vendors write them)")
    profile: str = Field(description="simulator profile under models/ that models the drive (e.g. hdd/seagate_exos_x24)")
    params: dict[str, Any] = Field(
        default_factory=dict, description="overrides of the profile's parameters (e.g. a larger capacity of the family)"
    )
    watts: float = Field(0.0, ge=0, le=100, description="typical operating power, W (default 0 = not counted)")
    price: Price = Field(description="unit price")


class HostPart(ConfigModel):
    """A storage server chassis with its processors and memory (without data drives and NICs)."""

    name: str = Field(pattern=_PART, description="part name")
    bays: dict[Literal["3.5", "2.5", "u.2", "m.2"], Annotated[int, Field(ge=0, le=1024)]] = Field(
        description="drive bays per form factor, count, each 0-1024 (a 3.5 bay also takes a 2.5 drive)"
    )
    cores: int = Field(ge=1, le=1024, description="physical cores (all sockets)")
    threads_per_core: int = Field(2, ge=1, le=8, description="hardware threads per core (default 2)")
    cpu_speed: float = Field(1.0, gt=0, le=10, description="speed relative to the CPU the Ceph model's CPU costs refer to (default 1)")
    ram: Bytes = Field(gt=0, le=2**46, description="memory, bytes")
    nic_slots: int = Field(ge=1, le=16, description="PCIe slots for network cards, count")
    ram_per_osd: Bytes = Field(
        "6GiB", gt=0, le=2**40,
        description="memory an OSD needs (osd_memory_target 4 GiB plus headroom), bytes, at most 1 TiB (default 6GiB)",
    )
    price: Price = Field(description="unit price of the configured chassis")


class NicPart(ConfigModel):
    """A network card (one port used per host: public and cluster traffic share it, as the model does)."""

    name: str = Field(pattern=_PART, description="part name")
    bandwidth: BytesPerSecond = Field(gt=0, le=1e12, description="line rate per direction of the port used, bytes/s")
    price: Price = Field(description="unit price")


class SwitchPortPart(ConfigModel):
    """One switch port (and its share of the switch) at a line rate."""

    name: str = Field(pattern=_PART, description="part name")
    bandwidth: BytesPerSecond = Field(gt=0, le=1e12, description="line rate, bytes/s")
    price: Price = Field(description="price per port, including optics/cable")


class Catalog(ConfigModel):
    """Every part the planner may use."""

    drives: list[DrivePart] = Field(default_factory=list, description="data drives and DB/WAL devices")
    hosts: list[HostPart] = Field(default_factory=list, description="server chassis")
    nics: list[NicPart] = Field(default_factory=list, description="network cards")
    switch_ports: list[SwitchPortPart] = Field(default_factory=list, description="switch ports")

    @model_validator(mode="after")
    def _unique(self) -> Catalog:
        for group in ("drives", "hosts", "nics", "switch_ports"):
            names = [p.name for p in getattr(self, group)]
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise ValueError(f"{group}: part {dup[0]!r} is listed twice")
        return self

    def part(self, group: str, name: str) -> Any:
        for p in getattr(self, group):
            if p.name == name:
                return p
        raise KeyError(name)

    def switch_port_for(self, bandwidth: float) -> SwitchPortPart | None:
        """The cheapest switch port at least as fast as ``bandwidth``."""
        ok = [p for p in self.switch_ports if p.bandwidth >= bandwidth * (1 - 1e-9)]
        return min(ok, key=lambda p: p.price.usd) if ok else None


_FILES = ("drives.yaml", "hosts.yaml", "network.yaml")


def load_catalog(directory: Path) -> Catalog:
    """Read and validate a catalogue directory; a problem is one ConfigError naming the file and field."""
    if not directory.is_dir():
        raise ConfigError(f"catalogue directory {directory} not found", source=str(directory), field="catalog")
    merged: dict[str, list] = {"drives": [], "hosts": [], "nics": [], "switch_ports": []}
    found = False
    for name in _FILES:
        path = directory / name
        if not path.exists():
            continue
        found = True
        data = load_yaml_file(path)
        if not isinstance(data, dict):
            raise ConfigError("a catalogue file is a mapping (drives:, hosts:, nics:, switch_ports:)", source=str(path))
        # validate each file on its own, so an error names the file it is in
        part = validate(Catalog, {k: v for k, v in data.items() if k not in ("description", "sources")}, str(path))
        for k in merged:
            merged[k].extend(getattr(part, k))
    if not found:
        raise ConfigError(f"no catalogue files ({', '.join(_FILES)}) in {directory}", source=str(directory), field="catalog")
    return validate(Catalog, merged, str(directory))

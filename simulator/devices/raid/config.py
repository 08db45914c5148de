"""Configuration of the ``raid`` device kind (frozen pydantic models, units parsed here)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from simulator.config.base import ConfigModel
from simulator.units import Bytes, BytesPerSecond, Seconds

__all__ = ["HbaPathConfig", "MembersConfig", "RaidConfig", "ReadAheadConfig", "VolumeConfig", "WriteCacheConfig"]


class MembersConfig(ConfigModel):
    """``count`` identical member devices of one device spec (any device kind, a RAID included)."""

    count: int = Field(2, ge=1, le=256, description="number of member devices (default 2)")
    device: dict[str, Any] = Field(
        description="device spec as everywhere else: {profile: hdd/<name>, params: {...}} or {kind: queue, params: {...}}"
    )


class WriteCacheConfig(ConfigModel):
    """The controller's battery- (or flash-) backed write-back cache.

    ``off`` = write-through (what controllers fall back to without a healthy battery). ``write_back``:
    a write is acknowledged once copied into the cache (``ack_latency``); FLUSH and FUA are
    acknowledged at once (the cache is non-volatile). Writes wait when the cache is full. Destage
    policy: when dirty data reaches ``high_watermark`` x ``size`` (or a write waits for room), stripes
    are destaged until it is back to ``low_watermark``, ``destage_depth`` stripes at a time, complete
    stripes first, then in ascending address order from where the last destage ended (circular
    elevator); when the volume has no host IO inside, destaging continues to empty. Reads wholly
    inside dirty data are served from the cache."""

    mode: Literal["off", "write_back"] = Field("off", description="off (write-through) or write_back (default off)")
    size: Bytes = Field("1GiB", gt=0, le=2**40, description="cache capacity for dirty data, bytes (default 1GiB)")
    high_watermark: float = Field(
        0.75, gt=0, le=1, description="fraction of size at which destaging starts (default 0.75)"
    )
    low_watermark: float = Field(
        0.5, ge=0, lt=1, description="fraction of size down to which destaging continues under load (default 0.5)"
    )
    destage_depth: int = Field(16, ge=1, le=4096, description="stripes destaged concurrently (default 16)")
    ack_latency: Seconds = Field(
        2e-5, ge=0, le=1, description="time to take a write into (or serve a read from) the cache, seconds (default 20us)"
    )

    @model_validator(mode="after")
    def _marks(self) -> WriteCacheConfig:
        if self.low_watermark >= self.high_watermark:
            raise ValueError("low_watermark must be below high_watermark")
        return self


class ReadAheadConfig(ConfigModel):
    """Controller read-ahead: after ``trigger`` reads each starting where the previous ended, the next
    ``size`` bytes are read into a buffer ahead of the reader (one stream per volume; re-armed when the
    reader reaches half of the buffered window). Reads wholly inside the buffer are served from it."""

    enabled: bool = Field(False, description="detect sequential reads and read ahead (default false)")
    trigger: int = Field(2, ge=1, le=1024, description="sequential reads in a row that start read-ahead (default 2)")
    size: Bytes = Field("1MiB", gt=0, le=2**31, description="bytes read ahead per prefetch, bytes (default 1MiB)")


class HbaPathConfig(ConfigModel):
    """The HBA/expander path between controller and members: ``channels`` wide ports of ``lanes``
    lanes each (two channels = dual-ported SAS drives on two expanders, multipath)."""

    channels: int = Field(2, ge=1, le=16, description="independent channels (paths), default 2 (multipath)")
    lanes: int = Field(4, ge=1, le=16, description="lanes per channel (wide port), default 4")
    lane_rate: BytesPerSecond = Field(
        "12Gb/s", gt=0, le=1e10, description="line rate of one lane, bytes/s (12Gb/s SAS-3), default 12Gb/s"
    )
    efficiency: float = Field(
        0.8, gt=0, le=1, description="payload share of the line rate (8b/10b coding of SAS-3 = 0.8), default 0.8"
    )
    policy: Literal["least_busy", "round_robin"] = Field(
        "least_busy", description="multipath channel choice (default least_busy)"
    )


class VolumeConfig(ConfigModel):
    """One virtual drive carved out of the RAID (a partition of it, in address order)."""

    name: str = Field(
        pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$",
        description="volume name: the device is <raid name>.<name> (fio filename=vol.<name>)",
    )
    size: Bytes = Field(gt=0, le=2**60, description="volume size, bytes (rounded down to the RAID's sector size)")


class RaidConfig(ConfigModel):
    """A RAID volume over ``members`` (see ``simulator.devices.raid``)."""

    level: Literal["jbod", "0", "1", "10", "5", "6"] = Field(
        "0", description="RAID level: jbod (linear concatenation), 0, 1, 10, 5 or 6 (default 0)"
    )
    chunk: Bytes = Field(
        "64KiB", ge=4096, le=2**30, description="stripe unit (chunk) per member, bytes, a multiple of 4KiB (default 64KiB)"
    )
    members: MembersConfig
    copies: int = Field(2, ge=2, le=8, description="copies of each chunk in RAID 10 (md near layout), default 2")
    failed: list[Annotated[int, Field(le=255)]] = Field(
        default_factory=list, max_length=8,
        description="indices of failed members (at most 255: members.count <= 256): the volume runs degraded (default none)",
    )
    write_policy: Literal["cheaper", "rmw", "reconstruct"] = Field(
        "cheaper",
        description="partial-stripe writes of RAID 5/6: the method with fewer member reads (reconstruct on a tie, as md), "
        "or always read-modify-write / reconstruct-write when possible (default cheaper)",
    )
    controller_overhead: Seconds = Field(
        1e-5, ge=0, le=0.1, description="controller firmware time added to every host IO, seconds (default 10us)"
    )
    write_cache: WriteCacheConfig = Field(default_factory=WriteCacheConfig, description="controller write-back cache")
    read_ahead: ReadAheadConfig = Field(default_factory=ReadAheadConfig, description="controller read-ahead")
    path: HbaPathConfig | None = Field(
        None, description="HBA/expander link in front of the members (default none: members attached directly)"
    )
    volumes: list[VolumeConfig] = Field(
        default_factory=list,
        max_length=64,
        description="virtual drives carved from the RAID in address order, sharing its members and controller cache "
        "(default none: the whole RAID is one volume)",
    )

    @field_validator("level", mode="before")
    @classmethod
    def _level_str(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @model_validator(mode="after")
    def _check(self) -> RaidConfig:
        n = self.members.count
        lv = self.level
        need = {"jbod": 1, "0": 1, "1": 2, "10": 2 * self.copies // 2, "5": 3, "6": 4}[lv]
        if lv == "10":
            need = self.copies
            if n % self.copies:
                raise ValueError(f"RAID 10 needs a member count that is a multiple of copies ({self.copies})")
        if n < need:
            raise ValueError(f"RAID {lv} needs at least {need} members")
        if self.chunk % 4096:
            raise ValueError("chunk must be a multiple of 4KiB")
        names = [v.name for v in self.volumes]
        if len(set(names)) != len(names):
            raise ValueError("volume names must be distinct")
        if any(nm == "hba" or (nm[0] == "d" and nm[1:].isdigit()) for nm in names):
            raise ValueError("volume names 'hba' and d<number> are taken by the RAID's own components")
        f = sorted(set(self.failed))
        if len(f) != len(self.failed) or any(i < 0 or i >= n for i in f):
            raise ValueError(f"failed must list distinct member indices 0..{n - 1}")
        if f:
            if lv in ("jbod", "0"):
                raise ValueError(f"RAID {lv} has no redundancy: no member may fail")
            if lv == "5" and len(f) > 1:
                raise ValueError("RAID 5 survives one failed member")
            if lv == "6" and len(f) > 2:
                raise ValueError("RAID 6 survives two failed members")
            if lv == "1" and len(f) >= n:
                raise ValueError("RAID 1 needs one surviving member")
            if lv == "10":
                for s in range(n // self.copies):
                    if all(m in f for m in range(s * self.copies, (s + 1) * self.copies)):
                        raise ValueError(f"RAID 10 mirror set {s} has no surviving member")
        return self

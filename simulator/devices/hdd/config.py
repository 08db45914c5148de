"""Configuration of the HDD model (kind ``hdd``) and the geometry/seek derivations.

Every field documents its unit and default. Profiles in ``models/hdd/`` set them from datasheets
(and say so in their ``sources``). Derived quantities (cylinders, zone table, seek coefficients,
skews) are computed by :func:`derive` for one actuator.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from simulator.config.base import ConfigModel
from simulator.units import RPM, Bytes, BytesPerSecond, Seconds

from . import kernels as K

__all__ = [
    "ActuatorConfig",
    "CacheConfig",
    "Derived",
    "GeometryConfig",
    "HDDConfig",
    "InterfaceConfig",
    "QueueConfig",
    "RotationConfig",
    "SeekConfig",
    "ZoneRow",
    "ZonesConfig",
    "derive",
]


class ZoneRow(ConfigModel):
    """One row of an explicit zone table (outer diameter first)."""

    fraction: float = Field(
        1.0,
        gt=0, le=1e6,
        description="share of the cylinders in this zone (rows are normalised to sum 1), dimensionless, at most 1e6, default 1",
    )
    sectors_per_track: int = Field(
        1000, ge=1, le=100000, description="logical sectors per track in this zone, sectors, default 1000"
    )


class ZonesConfig(ConfigModel):
    """Zoned recording: sectors per track fall from the outer (OD, LBA 0) to the inner diameter.

    Three ways to say it, in order of precedence: ``table`` (explicit rows), else
    ``od_sectors_per_track``/``id_sectors_per_track``, else ``od_rate``/``id_rate`` (media rate of
    one head at OD/ID, as datasheets quote "internal data rate 84-163 MB/s"). With the two compact
    forms the ``n_zones`` zones have equal radial width (equal cylinder counts) and sectors per track
    fall linearly from OD to ID (constant linear density).
    """

    n_zones: int = Field(
        16, ge=1, le=4096, description="number of zones for the OD/ID forms, count, default 16"
    )
    od_rate: BytesPerSecond = Field(
        "163MB/s",
        gt=0,
        le=2e9, description="media transfer rate of one head at the outer diameter, bytes/s, default 163MB/s",
    )
    id_rate: BytesPerSecond = Field(
        "84MB/s",
        gt=0,
        le=2e9, description="media transfer rate of one head at the inner diameter, bytes/s, default 84MB/s",
    )
    od_sectors_per_track: int | None = Field(
        None,
        ge=1,
        le=100000, description="sectors per track at OD (overrides the rates when both OD and ID are given), sectors, default none",
    )
    id_sectors_per_track: int | None = Field(
        None, ge=1, le=100000, description="sectors per track at ID, sectors, default none"
    )
    table: tuple[ZoneRow, ...] | None = Field(
        None, description="explicit zone table, OD first (overrides everything else), default none"
    )

    @model_validator(mode="after")
    def _check(self) -> ZonesConfig:
        if (self.od_sectors_per_track is None) != (self.id_sectors_per_track is None):
            raise ValueError("give both od_sectors_per_track and id_sectors_per_track, or neither")
        if self.table is not None and len(self.table) == 0:
            raise ValueError("zone table is empty")
        if self.od_rate < self.id_rate:
            raise ValueError(
                f"od_rate {self.od_rate:g} B/s is below id_rate {self.id_rate:g} B/s (OD tracks are the longest)"
            )
        if self.od_sectors_per_track is not None and self.od_sectors_per_track < self.id_sectors_per_track:  # type: ignore[operator]
            raise ValueError("od_sectors_per_track is below id_sectors_per_track (OD tracks are the longest)")
        return self


class GeometryConfig(ConfigModel):
    """Capacity, heads and zones; cylinders are derived."""

    capacity: Bytes = Field(
        "1TB", gt=0, le=1e15, description="user capacity of the whole drive (all actuators), bytes, default 1TB"
    )
    sector_size: Bytes = Field(512, le=4096, description="logical sector size, bytes (512 or 4096), at most 4096, default 512")
    heads: int = Field(
        8,
        ge=1,
        le=64,
        description="data heads (recording surfaces) of the whole drive; a dual-actuator drive splits them between its actuators, count, default 8",
    )
    zones: ZonesConfig = Field(
        default_factory=ZonesConfig, description="zoned-recording layout, default 16 zones 163->84 MB/s"
    )
    physical_sector_size: Bytes | None = Field(
        None, le=65536,
        description="physical sector size, bytes (4096 for a 512e drive), at most 64 KiB, default none = sector_size; media writes "
        "covering a physical sector only in part pay a read-modify-write",
    )
    rmw_revolutions: float = Field(
        2.0,
        ge=0,
        le=100, description="time a read-modify-write adds to such a write, revolutions, default 2 (16-22 ms per "
        "misaligned write at 7.2K = 2-2.6 revolutions, device-facts B)",
    )
    write_verify_revolutions: float = Field(
        0.0,
        ge=0,
        le=10,
        description="revolutions added to every media write for a read-after-write check (the drive reads the "
        "written sectors back on the next pass before it counts the write done), revolutions, default 0 (no "
        "verification); 1 = one verify pass. Some ATA drives of ~2000-2004 verified writes (xbitlabs found an "
        "after-write check in Maxtor drives)",
    )
    layout: Literal["serpentine", "cylinder"] = Field(
        "serpentine",
        description="LBA order: serpentine (each zone is laid surface by surface, alternating direction, as modern drives do) or cylinder (all heads of a cylinder, then the next cylinder: the classic layout), default serpentine",
    )
    track_skew: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="angular offset of sector 0 between adjacent heads of a cylinder, revolutions; default none = just enough to cover a head switch",
    )
    cylinder_skew: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="angular offset of sector 0 from the last head of a cylinder to head 0 of the next, revolutions; default none = just enough to cover a single-track seek",
    )

    @model_validator(mode="after")
    def _check(self) -> GeometryConfig:
        if self.sector_size not in (512, 4096):
            raise ValueError(f"sector_size must be 512 or 4096 bytes, not {self.sector_size}")
        if self.capacity < self.sector_size * self.heads:
            raise ValueError("capacity is smaller than one sector per head")
        ps = self.physical_sector_size
        if ps is not None and (ps < self.sector_size or ps % self.sector_size):
            raise ValueError(
                f"physical_sector_size {ps} must be a multiple of sector_size ({self.sector_size})"
            )
        return self


class RotationConfig(ConfigModel):
    """Spindle. The platter's angle at time t is (phase0 + t*rpm/60) mod 1, phase0 drawn at start."""

    rpm: RPM = Field(
        "7200rpm", gt=0, le=30000, description="spindle speed, revolutions per minute, default 7200rpm"
    )


class SeekConfig(ConfigModel):
    """Seek time as a function of distance, plus settle and head-switch times.

    Models:

    * ``three_point``: seek(d) = t_track + alpha*(d-1) + beta*sqrt(d-1) through the datasheet's
      single-track, average and full-stroke *read* figures (which include read settle).
      ``average_weighting`` says what "average" averages over: ``random_pairs`` (distance between two
      uniformly random cylinders, density 2(1-x): E[x]=1/3, E[sqrt x]=8/15) or ``uniform_distance``
      (every distance equally likely: E[x]=1/2, E[sqrt x]=2/3 — the desim/chs.c formula
      alpha=(4 full-6 avg+2 track)/Ncyl, beta=(-3 full+6 avg-3 track)/sqrt(Ncyl)). A write seek is
      the read curve - read_settle + write_settle, unless write figures are given.
    * ``ruemmler_wilkes``: x=d/Ncyl; a + b*sqrt(x) below ``rw_boundary``, c + e*x above, plus settle.
      With ``rw_from_figures`` the five numbers come from the three datasheet figures instead: the
      curve passes through single_track (d=1) and full_stroke, its mean (``average_weighting``)
      equals average, and the two parts join smoothly (same value and slope at the boundary — the
      point where the arm stops accelerating). Write figures give the write curve the same way.
    * ``table``: measured points (distance as a fraction of the full stroke -> seconds), linearly
      interpolated, plus settle.
    """

    model: Literal["three_point", "ruemmler_wilkes", "table"] = Field(
        "three_point", description="seek curve model, default three_point"
    )
    single_track: Seconds = Field(
        "0.23ms",
        gt=0,
        le=1.0, description="three_point: single-track read seek incl. read settle, seconds, default 0.23ms",
    )
    average: Seconds = Field(
        "7.5ms", gt=0, le=1.0, description="three_point: average read seek incl. read settle, seconds, default 7.5ms"
    )
    full_stroke: Seconds = Field(
        "17.26ms",
        gt=0,
        le=1.0, description="three_point: full-stroke read seek incl. read settle, seconds, default 17.26ms",
    )
    write_single_track: Seconds | None = Field(
        None,
        gt=0, le=1.0,
        description="three_point: single-track write seek incl. write settle, seconds, at most 1 s, default none (derived from the read curve)",
    )
    write_average: Seconds | None = Field(
        None, gt=0, le=1.0, description="three_point: average write seek, seconds, at most 1 s, default none"
    )
    write_full_stroke: Seconds | None = Field(
        None, gt=0, le=1.0, description="three_point: full-stroke write seek, seconds, at most 1 s, default none"
    )
    average_weighting: Literal["random_pairs", "uniform_distance"] = Field(
        "random_pairs", description="three_point: what the average figure averages over, default random_pairs"
    )
    rw_from_figures: bool = Field(
        False,
        description="ruemmler_wilkes: derive a, b, c, e and the boundary from single_track/average/full_stroke (smooth join), default false",
    )
    rw_boundary: float = Field(
        0.195,
        gt=0,
        le=1,
        description="ruemmler_wilkes: boundary between sqrt and linear parts, fraction of the full stroke, default 0.195 (HP 97560: 383/1962 cylinders)",
    )
    rw_short_const: Seconds = Field(
        "3.24ms", ge=0, le=1.0, description="ruemmler_wilkes: a, seconds, at most 1 s, default 3.24ms (HP 97560 fit)"
    )
    rw_short_sqrt: Seconds = Field(
        "17.72ms",
        ge=0, le=1.0,
        description="ruemmler_wilkes: b (times sqrt of the stroke fraction), seconds, at most 1 s, default 17.72ms (0.400ms*sqrt(1962))",
    )
    rw_long_const: Seconds = Field("8.0ms", ge=0, le=1.0, description="ruemmler_wilkes: c, seconds, at most 1 s, default 8.0ms")
    rw_long_linear: Seconds = Field(
        "15.7ms",
        ge=0, le=1.0,
        description="ruemmler_wilkes: e (times the stroke fraction), seconds, at most 1 s, default 15.7ms (0.008ms*1962)",
    )
    table: tuple[tuple[Annotated[float, Field(le=1)], Annotated[Seconds, Field(le=1.0)]], ...] | None = Field(
        None,
        description="table: (stroke fraction in (0,1], seconds at most 1 s) points, increasing fraction, default none",
    )
    read_settle: Seconds = Field(
        "0ms",
        ge=0, le=1.0,
        description="settle before reading after a seek, seconds, at most 1 s, default 0. The datasheet figures of three_point "
        "and ruemmler_wilkes+rw_from_figures already include it: there it only offsets the write curve "
        "(write = read - read_settle + write_settle) when no write figures are given, and has no effect on reads; "
        "it is added to explicit ruemmler_wilkes and table curves",
    )
    write_settle: Seconds = Field(
        "0.5ms",
        ge=0, le=1.0,
        description="settle before writing after a seek, seconds, at most 1 s, default 0.5ms (desim's guess for a 7.2K drive)",
    )
    head_switch: Seconds = Field(
        "0.5ms",
        ge=0, le=1.0,
        description="switch to another head on the same cylinder, for a read, seconds, at most 1 s, default 0.5ms (desim's guess)",
    )
    write_head_switch: Seconds | None = Field(
        None,
        ge=0, le=1.0,
        description="head switch for a write, seconds, at most 1 s, default none = head_switch + max(0, write_settle - read_settle)",
    )

    @model_validator(mode="after")
    def _check(self) -> SeekConfig:
        figures = self.model == "three_point" or (self.model == "ruemmler_wilkes" and self.rw_from_figures)
        if figures:
            if not (self.single_track <= self.average <= self.full_stroke):
                raise ValueError("need single_track <= average <= full_stroke")
            w = (self.write_single_track, self.write_average, self.write_full_stroke)
            if any(v is not None for v in w):
                if any(v is None for v in w):
                    raise ValueError(
                        "give all three write figures (write_single_track, write_average, write_full_stroke) or none"
                    )
                if not (w[0] <= w[1] <= w[2]):  # type: ignore[operator]
                    raise ValueError("need write_single_track <= write_average <= write_full_stroke")
        if self.model == "table":
            if not self.table or len(self.table) < 1:
                raise ValueError("seek model 'table' needs a non-empty table of (fraction, seconds)")
            xs = [p[0] for p in self.table]
            ys = [p[1] for p in self.table]
            if any(x <= 0 or x > 1 for x in xs) or any(b <= a for a, b in itertools.pairwise(xs)):
                raise ValueError("seek table fractions must be strictly increasing within (0, 1]")
            if any(y < 0 for y in ys) or any(b < a for a, b in itertools.pairwise(ys)):
                raise ValueError("seek table times must be >= 0 and non-decreasing")
        if self.model == "ruemmler_wilkes" and not self.rw_from_figures:
            xb = self.rw_boundary
            if (
                self.rw_long_const + self.rw_long_linear * xb
                < self.rw_short_const + self.rw_short_sqrt * math.sqrt(xb) - 1e-12
            ):
                raise ValueError("ruemmler_wilkes curve drops at the boundary (long part below short part)")
        return self


class InterfaceConfig(ConfigModel):
    """Host interface and command processing."""

    protocol: Literal["sata", "sas"] = Field(
        "sata",
        description="host protocol (informational; FUA and queue depth are set explicitly), default sata",
    )
    link_rate: BytesPerSecond = Field(
        "6Gb/s",
        gt=0,
        le=1e10, description="line rate of the host link, bytes/s (6Gb/s SATA-3/SAS-2, 12Gb/s SAS-3), default 6Gb/s",
    )
    link_efficiency: float = Field(
        0.8,
        gt=0,
        le=1,
        description="payload share of the line rate (8b/10b = 0.8), dimensionless, default 0.8",
    )
    read_overhead: Seconds = Field(
        "0.2ms", ge=0, le=1.0, description="controller overhead per read command, seconds, default 0.2ms"
    )
    write_overhead: Seconds = Field(
        "0.2ms", ge=0, le=1.0, description="controller overhead per write command, seconds, default 0.2ms"
    )
    cache_hit_overhead: Seconds | None = Field(
        None,
        ge=0, le=1.0,
        description="overhead of a read served from the buffer, seconds, at most 1 s, default none = read_overhead",
    )
    flush_overhead: Seconds | None = Field(
        None,
        ge=0, le=1.0,
        description="overhead of a FLUSH (on top of waiting for destage), seconds, at most 1 s, default none = write_overhead",
    )

    @property
    def bytes_per_second(self) -> float:
        return self.link_rate * self.link_efficiency


class QueueConfig(ConfigModel):
    """On-drive command queue (NCQ/TCQ) and its scheduler."""

    depth: int = Field(
        32,
        ge=1,
        le=4096,
        description="commands the drive accepts at once (SATA NCQ 32; SAS TCQ deeper); more wait in a host-side FIFO, count, default 32",
    )
    policy: Literal["sptf", "fifo"] = Field(
        "sptf",
        description="order of service: shortest positioning time first (seek + rotation from the platter's real angle) or arrival order, default sptf",
    )
    max_age: Seconds = Field(
        "0.5s",
        ge=0, le=3600.0,
        description="aging guard: a command older than this goes first (0 disables), seconds, at most 1 h, default 0.5s",
    )
    age_weight: float = Field(
        0.0,
        ge=0, le=1e6,
        description="aged SPTF (Worthington, Ganger & Patt 1994): order by positioning time - age_weight x time "
        "waited, dimensionless, at most 1e6, default 0 (plain SPTF)",
    )
    max_skips: int = Field(
        0,
        ge=0,
        le=1000000, description="aging guard: a command passed over more than this many times goes first (0 disables), count, default 0",
    )
    reorder_window: int = Field(
        0,
        ge=0,
        le=4096,
        description="firmware look-ahead: the oldest queued host commands the drive scores per decision (rotational "
        "position ordering over a bounded window); 0 = every queued command (ideal SPTF), count, default 0. "
        "Physical bound: at most the queue depth matters",
    )
    position_estimate: Literal["exact", "table", "profile"] = Field(
        "exact",
        description="how the firmware estimates positioning: exact (the simulated seek itself: ideal); table (a "
        "coarse seek table by cylinder-distance bin, rounded up to the bin's upper edge, plus estimate_margin, then "
        "the rotational delay from that estimated arrival); profile (the same table sampled at the bins' edges and "
        "read by linear interpolation, as a seek profile, plus estimate_margin), default exact",
    )
    estimate_bins: int = Field(
        32,
        ge=2,
        le=4096,
        description="table/profile: cylinder-distance bins of the firmware seek table (geometric from 1 cylinder to the full "
        "stroke), count, default 32",
    )
    estimate_margin: Seconds = Field(
        "0s",
        ge=0,
        le=0.01,
        description="table/profile: guard band the firmware adds to the estimated seek so that settle-time variation does "
        "not miss the target sector (a missed sector costs a revolution), seconds, default 0; physical range "
        "0-1 ms (a few percent of a revolution)",
    )
    decision_overhead: Seconds = Field(
        "0s",
        ge=0,
        le=0.005,
        description="firmware time per reordering decision among two or more candidates, not overlapped with the "
        "mechanism (delays the start of the move), seconds, default 0; physical range 0-0.5 ms",
    )


class CacheConfig(ConfigModel):
    """DRAM buffer: write cache (off / volatile write-back / persistent) and read look-ahead."""

    buffer_size: Bytes = Field(
        "64MiB", ge=0, le=2**36, description="DRAM buffer of the whole drive, bytes, default 64MiB"
    )
    write_cache: Literal["off", "volatile", "media_cache", "persistent"] = Field(
        "off",
        description="write-cache mode (one implementation, one mode per way the firmware makes a write durable): "
        "off (WCE=0: writes reach their home location before ack, with their rotational latency), volatile (WCE=1: "
        "ack from DRAM, destaged home, FLUSH waits for destage), media_cache (WCE=1 DRAM in front of an on-platter "
        "media cache: destage appends to the reserved region, cleaning writes home later, FLUSH/FUA wait only for "
        "the append), persistent (non-volatile cache: ack once in it, FLUSH cheap; 'awc' is accepted as its name "
        "for Seagate's Advanced Write Cache), default off. In every mode a cached write that overwrites or adjoins "
        "data still waiting in the cache joins it (no new segment), and reads of cached dirty data are served from "
        "the buffer",
    )

    @field_validator("write_cache", mode="before")
    @classmethod
    def _awc_is_persistent(cls, v: object) -> object:
        # Seagate's Advanced Write Cache is the non-volatile mode (bounded by persistent_size, destaged
        # with reordering over destage_window, host reads first below high_watermark)
        return "persistent" if isinstance(v, str) and v.strip().lower() == "awc" else v
    dirty_segments: int = Field(
        0,
        ge=0,
        le=65536,
        description="most dirty extents (cache segments) the DRAM write cache holds before writes wait, whatever "
        "their size (firmware caches are segmented: a random 4 KiB write takes a segment); volatile and "
        "media_cache modes (a persistent cache is bounded by bytes), count, default 0 = bounded by bytes only",
    )
    media_cache_size: Bytes = Field(
        "0",
        ge=0, le=1e15,
        description="media_cache: capacity of the on-platter media cache of the whole drive, bytes, at most 1e15 (the largest capacity), default 0 "
        "(must be set for media_cache); Seagate CMR/SMR drives reserve tens of GB (Aghayev & Desnoyers, FAST'15)",
    )
    media_cache_location: float = Field(
        0.0,
        ge=0,
        le=1,
        description="media_cache, and persistent with persistent_readback: radial position of the reserved region, "
        "fraction of the stroke from the outer diameter, dimensionless, default 0 (OD, where Skylight found it)",
    )
    media_cache_batch: Bytes = Field(
        "4MiB",
        ge=4096, le=2**30,
        description="media_cache: most dirty DRAM data appended to the media cache in one media operation, bytes, at most 1 GiB, "
        "default 4MiB",
    )
    media_cache_wce: bool = Field(
        True,
        description="media_cache: the volatile DRAM stage in front of the media cache is on (WCE=1: ack from DRAM); "
        "false = WCE=0 (hdparm -W0 / sdparm --clear WCE): a write is acknowledged once appended to the media "
        "cache, default true",
    )
    media_cache_append_overhead: Seconds | None = Field(
        None,
        ge=0,
        le=0.005,
        description="media_cache: firmware time to set up each append (gather the dirty DRAM segments, build the log "
        "record and its mapping entries) once the mechanism is free, before the write may start; the log's write "
        "pointer must come under the head after it, so an append that follows another one waits for the pointer to "
        "come round (most of a revolution) instead of continuing on the next sector, seconds, default none = the "
        "interface's write_overhead; physical range 0-5 ms",
    )
    cleaning_interleave: int = Field(
        0,
        ge=0,
        le=64,
        description="media_cache: cleaning writes home the firmware performs after each media-cache append while the "
        "media cache holds data, before the next append (host writes wait in DRAM for them; host reads are not held "
        "back; cleaning done at idle counts) (Seagate's preemptive cleaning under "
        "sustained random writes: each host write is throttled and cleaning runs after it, US 10,176,119 B2 / "
        "US 10,565,128 B2), count, default 0 = clean only when no host command waits or above cleaning_watermark",
    )
    cleaning_watermark: float = Field(
        0.5,
        gt=0,
        le=1,
        description="media_cache: media-cache fill above which cleaning competes with host commands (below it "
        "cleaning runs only when no host command waits), dimensionless, default 0.5",
    )
    cleaning_idle_delay: Seconds = Field(
        "0s",
        ge=0,
        le=60,
        description="media_cache and persistent: idle time before cleaning of the media cache (idle destage of the "
        "persistent cache) begins: cleaning that would start with no host command waiting starts only once no host "
        "command has been in the drive (per actuator) for this long, and a host command arriving earlier restarts the "
        "timer; cleaning owed after an append (cleaning_interleave), above cleaning_watermark (persistent: dirty data "
        "above high_watermark), or while a FLUSH or a write waits for the cache is not delayed (firmware starts background work after an idle timer: Seagate US 10,204,054; no published "
        "figure for media-cache cleaning), seconds, at most 60 s, default 0 = cleaning starts as soon as no host "
        "command waits",
    )
    write_cache_size: Bytes | None = Field(
        None,
        ge=0, le=2**40,
        description="bytes of dirty data the cache holds before writes wait (whole drive), at most 1 TiB, default none = buffer_size (volatile) / persistent_size (persistent)",
    )
    persistent_size: Bytes | None = Field(
        None,
        ge=0, le=2**40,
        description="size of the non-volatile write cache (persistent mode), bytes, at most 1 TiB, default none = buffer_size",
    )
    persistent_ack: Seconds = Field(
        "0s",
        ge=0, le=1.0,
        description="extra time to make a write durable in the non-volatile cache before ack, seconds, at most 1 s, default 0",
    )
    persistent_readback: Bytes = Field(
        "0",
        ge=0, le=2**30,
        description="persistent: the non-volatile cache keeps its data on the platter (an on-disk media cache at "
        "media_cache_location, as Seagate's media-cache drives do; which drives' persistent cache is on the platter "
        "is a hypothesis per profile, see docs/ceph-model.md) and a destage first reads the cached data back from "
        "there: the firmware reads this many bytes of the cache's log per read-back (one seek to the region, the "
        "rotational wait for the log's read pointer, a sequential transfer), then writes the data home with the "
        "destage window's reordering (the model charges the reads, not which blocks they hold), bytes, at most "
        "1 GiB, default 0 = the cache's data is in DRAM or flash and a destage reads nothing",
    )
    destage: Literal["idle", "mixed"] = Field(
        "idle",
        description="idle: dirty data is written when no host command waits (or the cache is above high_watermark, or a FLUSH waits); mixed: destage competes with host commands in the scheduler, default idle",
    )
    high_watermark: float = Field(
        0.75,
        gt=0,
        le=1,
        description="dirty fraction above which destage competes with host commands even in idle mode, dimensionless, default 0.75",
    )
    destage_window: int = Field(
        64,
        ge=1,
        le=4096,
        description="oldest dirty extents the scheduler considers at once, count, default 64",
    )
    queued_write_candidates: bool = Field(
        False,
        description="volatile and persistent: a queued write the write cache has no room for stays a candidate of the "
        "drive's reordering (NCQ/TCQ: the drive asks for a queued write's data when it chooses, so such a write "
        "is written home directly when picked and acknowledged then; when a dirty segment frees, the oldest such "
        "write moves into the cache and is acknowledged), and destage competes with host commands while the cache "
        "is full; false = the write waits outside the cache until a segment frees and is no candidate (the "
        "behaviour before 2026-11-23); a write overlapping dirty data always waits, default false",
    )
    destage_merge: Bytes = Field(
        "1MiB",
        ge=0, le=2**30,
        description="a cached write that continues the newest dirty extent merges into it up to this size, bytes, at most 1 GiB, default 1MiB",
    )
    fua_supported: bool = Field(
        True,
        description="the drive honours FUA; if not, a FUA write is a cached write followed by a full FLUSH (what Linux does for most SATA drives), default true",
    )
    read_lookahead: bool = Field(
        True, description="segment read cache with read-ahead after each media read, default true"
    )
    segments: int = Field(
        16, ge=1, le=1024, description="read cache segments (most recent media reads kept), count, default 16"
    )
    readahead: Bytes = Field(
        "256KiB",
        ge=0,
        le=2**30, description="most data read ahead after a media read while the mechanism is idle, bytes, default 256KiB",
    )

    def write_cache_bytes(self) -> int:
        """Dirty bytes the write cache of the whole drive holds before writes wait."""
        if self.write_cache_size is not None:
            return int(self.write_cache_size)
        if self.write_cache == "persistent" and self.persistent_size is not None:
            return int(self.persistent_size)
        return int(self.buffer_size)

    @model_validator(mode="after")
    def _check_mc(self) -> CacheConfig:
        if self.write_cache == "media_cache" and self.media_cache_size <= 0:
            raise ValueError("write_cache media_cache needs a positive cache.media_cache_size")
        return self


class ActuatorConfig(ConfigModel):
    """Single or dual actuator (Seagate MACH.2)."""

    count: Literal[1, 2] = Field(1, description="independent head stacks on one spindle, count, default 1")
    exposure: Literal["luns", "lba_halves"] = Field(
        "luns",
        description="dual: 'luns' (SAS: children lun0/lun1, half capacity each) or 'lba_halves' (SATA: one device, first half of the LBAs on actuator 0), default luns",
    )
    split_cache: bool = Field(
        True, description="dual: each actuator gets half the buffer and write cache, default true"
    )


class HDDConfig(ConfigModel):
    """A hard disk drive: geometry, spindle, seek, interface, queue, caches, actuators."""

    geometry: GeometryConfig = Field(
        default_factory=GeometryConfig, description="capacity, heads, zones, skews"
    )
    rotation: RotationConfig = Field(default_factory=RotationConfig, description="spindle speed")
    seek: SeekConfig = Field(default_factory=SeekConfig, description="seek curve, settle, head switch")
    interface: InterfaceConfig = Field(
        default_factory=InterfaceConfig, description="host link and command overheads"
    )
    queue: QueueConfig = Field(default_factory=QueueConfig, description="drive queue depth and scheduler")
    cache: CacheConfig = Field(default_factory=CacheConfig, description="buffer, write cache, look-ahead")
    actuators: ActuatorConfig = Field(default_factory=ActuatorConfig, description="single or dual actuator")

    @model_validator(mode="after")
    def _check(self) -> HDDConfig:
        n = self.actuators.count
        if self.geometry.heads % n:
            raise ValueError(
                f"geometry.heads ({self.geometry.heads}) must divide evenly between {n} actuators"
            )
        if self.geometry.capacity % (n * self.geometry.sector_size):
            raise ValueError(f"geometry.capacity must be a multiple of {n} x sector_size")
        if self.cache.write_cache != "off" and self.cache.write_cache_bytes() <= 0:
            raise ValueError(
                "a write cache needs a positive size (cache.write_cache_size / buffer_size / persistent_size)"
            )
        derive(self)  # raises ValueError on an impossible geometry or a non-monotone seek curve
        return self


@dataclass
class Derived:
    """Numbers of one actuator derived from the config (what the kernels use)."""

    heads: int
    total_sectors: int
    sector_size: int
    ncyl: int
    rev_time: float
    zt: np.ndarray  # [nz, 5]
    sk: np.ndarray  # [2, 8]
    tt: np.ndarray  # [2, k] seek table: stroke fraction; seconds
    track_skew: float
    cylinder_skew: float
    head_switch_read: float
    head_switch_write: float
    seek_coeffs: dict

    def media_rate(self, lba: int) -> float:
        """Media transfer rate at an LBA, bytes/s."""
        z = int(np.searchsorted(self.zt[:, 0], lba, side="right") - 1)
        return float(self.zt[z, 3]) * self.sector_size / self.rev_time


def _zone_spts(z: ZonesConfig, rev_time: float, sector_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(sectors per track, cylinder fraction) per zone, OD first."""
    if z.table is not None:
        spt = np.array([r.sectors_per_track for r in z.table], dtype=float)
        frac = np.array([r.fraction for r in z.table], dtype=float)
        return spt, frac / frac.sum()
    n = z.n_zones
    if z.od_sectors_per_track is not None:
        od, idd = float(z.od_sectors_per_track), float(z.id_sectors_per_track)  # type: ignore[arg-type]
    else:
        od = z.od_rate * rev_time / sector_size
        idd = z.id_rate * rev_time / sector_size
    if n == 1:
        spt = np.array([round(od)], dtype=float)
    else:
        spt = np.round(od + (idd - od) * np.arange(n) / (n - 1))
    if spt.min() < 1:
        raise ValueError("zones give less than one sector per track; check the rates and sector_size")
    return spt, np.full(n, 1.0 / n)


def _three_point(t1: float, avg: float, full: float, weighting: str) -> tuple[float, float]:
    """(A, B) with seek = t1 + A*x + B*sqrt(x), x = (d-1)/(dmax-1)."""
    F = full - t1
    V = avg - t1
    if weighting == "uniform_distance":
        return 4 * F - 6 * V, -3 * F + 6 * V
    # random pairs: E[x] = 1/3, E[sqrt x] = 8/15
    B = 5 * V - 5 * F / 3
    return F - B, B


def _rw_parts(xb: float, t1: float, full: float, n: float) -> tuple[float, float, float, float]:
    r = math.sqrt(xb)
    b = (full - t1) / (r / 2 + 1 / (2 * r) - 1 / math.sqrt(n))
    a = t1 - b / math.sqrt(n)
    e = b / (2 * r)
    c = a + b * r / 2
    return a, b, c, e


def _rw_mean(xb: float, t1: float, full: float, n: float, weighting: str) -> float:
    a, b, c, e = _rw_parts(xb, t1, full, n)
    if weighting == "uniform_distance":  # integral of f over [0, 1]
        return a * xb + b * 2 / 3 * xb**1.5 + c * (1 - xb) + e * (1 - xb * xb) / 2
    i1 = 2 * (a * (xb - xb**2 / 2) + b * (2 / 3 * xb**1.5 - 2 / 5 * xb**2.5))
    i2 = 2 * (c * (0.5 - (xb - xb**2 / 2)) + e * ((0.5 - 1 / 3) - (xb**2 / 2 - xb**3 / 3)))
    return i1 + i2


def rw_from_figures(
    t1: float, avg: float, full: float, dmax: float, weighting: str
) -> tuple[float, float, float, float, float]:
    """Ruemmler-Wilkes curve (a, b, c, e, boundary fraction) through the three datasheet figures
    with a smooth join; raises ValueError when no boundary in (0, 1] reproduces ``avg``."""
    n = max(2.0, float(dmax))
    lo, hi = 1.0 / n, 1.0
    f_lo = _rw_mean(lo, t1, full, n, weighting) - avg
    f_hi = _rw_mean(hi, t1, full, n, weighting) - avg
    if f_lo > 0 or f_hi < 0:
        raise ValueError(
            f"no smooth Ruemmler-Wilkes curve has single_track={t1 * 1e3:g}ms, average={avg * 1e3:g}ms, "
            f"full_stroke={full * 1e3:g}ms (average must lie between {(f_lo + avg) * 1e3:.3g} and {(f_hi + avg) * 1e3:.3g} ms)"
        )
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if _rw_mean(mid, t1, full, n, weighting) < avg:
            lo = mid
        else:
            hi = mid
    xb = 0.5 * (lo + hi)
    a, b, c, e = _rw_parts(xb, t1, full, n)
    return a, b, c, e, xb


def derive(cfg: HDDConfig, actuators: int | None = None) -> Derived:
    """Derive one actuator's geometry, zone table and seek coefficients. Raises ValueError."""
    g = cfg.geometry
    n_act = actuators if actuators is not None else cfg.actuators.count
    heads = g.heads // n_act
    ss = int(g.sector_size)
    total = int(g.capacity // ss) // n_act
    rev = 60.0 / cfg.rotation.rpm
    spt, frac = _zone_spts(g.zones, rev, ss)
    # cylinders: total <= sum_z round(frac_z*C) * heads * spt_z
    per_cyl = heads * float((frac * spt).sum())
    C = max(len(spt), int(math.ceil(total / per_cyl)))
    while True:
        zc = np.maximum(1, np.floor(frac * C + 0.5)).astype(np.int64)
        cap = int((zc * heads * spt.astype(np.int64)).sum())
        if cap >= total:
            break
        C += max(1, C // 1000)
    ncyl = int(zc.sum())
    if ncyl < 2:
        raise ValueError("geometry gives fewer than 2 cylinders (too few sectors for the heads and zones)")
    zt = np.zeros((len(spt), 5))
    lba = 0
    cyl = 0
    rows = []
    trk = 0
    for i in range(len(spt)):
        if lba >= total:
            break
        n_sect = int(zc[i]) * heads * int(spt[i])
        end = min(total, lba + n_sect)
        used = int(math.ceil((end - lba) / (heads * spt[i])))  # the last zone may be partly used
        rows.append((lba, end, cyl, spt[i], used, trk))
        trk += used * heads
        lba = end
        cyl += used
    zt = np.array(rows, dtype=float)
    ncyl = max(2, cyl)

    s = cfg.seek
    sk = np.zeros((2, K.NSEEK))
    tt = np.array([[0.0, 1.0], [0.0, 0.0]])
    dmax = ncyl - 1
    coeffs: dict = {"model": s.model, "ncyl": ncyl}
    if s.model == "three_point":
        norm = max(1.0, dmax - 1.0)
        rows3 = [(s.single_track, s.average, s.full_stroke, 0.0)]
        if s.write_single_track is not None:
            rows3.append((s.write_single_track, s.write_average, s.write_full_stroke, 0.0))  # type: ignore[arg-type]
        else:
            rows3.append((s.single_track, s.average, s.full_stroke, s.write_settle - s.read_settle))
        for w, (t1, av, fu, add) in enumerate(rows3):
            A, B = _three_point(t1, av, fu, s.average_weighting)
            if B < -1e-12 or A + B / 2 < -1e-12:
                raise ValueError(
                    f"three_point seek curve through single_track={t1 * 1e3:g}ms, average={av * 1e3:g}ms, "
                    f"full_stroke={fu * 1e3:g}ms with average_weighting={s.average_weighting} is not monotone "
                    f"(A={A * 1e3:.3g}ms, B={B * 1e3:.3g}ms); check the figures, the other average_weighting, or the ruemmler_wilkes/table model"
                )
            if t1 + add < 0:
                raise ValueError("write seek curve negative (write_settle much smaller than read_settle)")
            sk[w] = (0, t1, A / norm, B / math.sqrt(norm), 0.0, 0.0, add, norm)
            coeffs["write" if w else "read"] = {"t_track": t1, "A": A, "B": B, "add": add}
    elif s.model == "ruemmler_wilkes" and s.rw_from_figures:
        figs = [(s.single_track, s.average, s.full_stroke, 0.0)]
        if s.write_single_track is not None:
            figs.append((s.write_single_track, s.write_average, s.write_full_stroke, 0.0))  # type: ignore[arg-type]
        else:
            figs.append((s.single_track, s.average, s.full_stroke, s.write_settle - s.read_settle))
        for w, (t1, av, fu, add) in enumerate(figs):
            a, b, c, e, xb = rw_from_figures(t1, av, fu, dmax, s.average_weighting)
            sk[w] = (1, a, b, c, e, xb * dmax, add, dmax)
            coeffs["write" if w else "read"] = {"a": a, "b": b, "c": c, "e": e, "boundary": xb, "add": add}
    elif s.model == "ruemmler_wilkes":
        for w, add in enumerate((s.read_settle, s.write_settle)):
            sk[w] = (
                1,
                s.rw_short_const,
                s.rw_short_sqrt,
                s.rw_long_const,
                s.rw_long_linear,
                s.rw_boundary * dmax,
                add,
                dmax,
            )
    else:
        pts = s.table or ()
        tt = np.array([[p[0] for p in pts], [p[1] for p in pts]], dtype=float)
        for w, add in enumerate((s.read_settle, s.write_settle)):
            sk[w] = (2, 0, 0, 0, 0, 0, add, dmax)
    # head switch and skews
    hs_r = float(s.head_switch)
    hs_w = (
        float(s.write_head_switch)
        if s.write_head_switch is not None
        else hs_r + max(0.0, s.write_settle - s.read_settle)
    )
    one = K.seek_curve(np.array([1.0]), 1, sk, tt)[0]
    one_r = K.seek_curve(np.array([1.0]), 0, sk, tt)[0]
    tsk = g.track_skew if g.track_skew is not None else min(0.999, max(hs_r, hs_w) / rev * 1.01)
    csk = g.cylinder_skew if g.cylinder_skew is not None else min(0.999, max(one, one_r) / rev * 1.01)
    return Derived(
        heads=heads,
        total_sectors=total,
        sector_size=ss,
        ncyl=ncyl,
        rev_time=rev,
        zt=np.ascontiguousarray(zt),
        sk=sk,
        tt=tt,
        track_skew=float(tsk),
        cylinder_skew=float(csk),
        head_switch_read=hs_r,
        head_switch_write=hs_w,
        seek_coeffs=coeffs,
    )

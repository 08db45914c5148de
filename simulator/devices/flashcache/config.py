"""Configuration of the ``flash_read_cache`` device kind (frozen pydantic models, units parsed here).

Defaults describe Seagate's TurboBoost (the eMLC NAND read cache of the Enterprise Performance 15K /
Exos 15E900 drives). Figures and where they come from (see also models/hdd/*turboboost*):

* Seagate Enterprise Turbo SSHD review, TweakTown, 8 Nov 2013 (the first TurboBoost drive):
  https://www.tweaktown.com/reviews/5863/seagate-turbo-sshd-enterprise-sshd-review/index2.html and
  index5.html -- eMLC NAND in one package; hot data identified at block level and promoted, evicted
  adaptively; sequential data not cached ("only caching the hardest-to-read random data"); random
  data written sequentially to the NAND; 4 KiB random reads from cache 8,800 IOPS; promotion of
  5.56 GB took 16 minutes after 3 minutes of identification, about 355 MB/s of NAND writes.
* Seagate, "Enhanced Caching Advantage -- TurboBoost and Advanced Write Caching", technology paper
  (https://docslib.org/doc/11589081/advanced-write-cache): TurboBoost keeps hot data in flash,
  AWC absorbs random writes.
* ../shared/docs/device-facts.md A: "16 GB eMLC TurboBoost" on 15E900 [U].
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from simulator.config.base import ConfigModel
from simulator.units import Bytes, BytesPerSecond, Seconds

__all__ = ["FlashReadCacheConfig", "NandConfig"]


class NandConfig(ConfigModel):
    """The NAND behind the cache: dies (each a server), one or more channels (shared transfer)."""

    channels: int = Field(1, ge=1, le=64, description="NAND channels (buses), default 1 (one package, one bus)")
    dies: int = Field(16, ge=1, le=1024, description="dies in total, spread evenly over the channels (default 16)")
    planes: int = Field(2, ge=1, le=8, description="planes per die read or programmed together (default 2)")
    page_size: Bytes = Field("16KiB", ge=512, le=2**20, description="NAND page, bytes (default 16KiB)")
    read_latency: Seconds = Field(
        6e-5, gt=0, le=0.01, description="array read time tR per (multi-plane) page read, seconds (default 60us)"
    )
    program_latency: Seconds = Field(
        1.5e-3, gt=0, le=0.1, description="program time tPROG per (multi-plane) page program, seconds (default 1.5ms)"
    )
    channel_rate: BytesPerSecond = Field(
        "400MB/s", gt=0, le=1e11, description="transfer rate of one channel, bytes/s (Toggle 2.0: 400MB/s; default)"
    )


class FlashReadCacheConfig(ConfigModel):
    """A flash read cache in front of a backing device (see :mod:`simulator.devices.flashcache`)."""

    backing: dict[str, Any] = Field(
        description="the cached device, a device spec as everywhere else ({profile: hdd/<name>, params: {...}})"
    )
    enabled: bool = Field(True, description="false: every request goes straight to the backing device (default true)")
    size: Bytes = Field("16GB", gt=0, le=2**50, description="cache capacity for valid data, bytes (default 16GB)")
    region: Bytes = Field(
        "64KiB",
        ge=4096,
        le=2**18,
        description="allocation unit: a region is promoted whole (the part the miss did not read is fetched from "
        "the backing device), recency and access counts are kept per region, validity per 4KiB block inside it; "
        "bytes, 4KiB..256KiB (default 64KiB)",
    )
    admission: Literal["on_miss", "access_count"] = Field(
        "access_count",
        description="on_miss: promote every eligible read miss; access_count: promote a region once it has been "
        "missed admit_after times while remembered in the ghost list (default access_count)",
    )
    admit_after: int = Field(
        2, ge=1, le=64, description="misses of a region (within the ghost list) that promote it (default 2)"
    )
    ghost_regions: int | None = Field(
        None,
        ge=1,
        le=2**32,
        description="regions remembered with their miss counts (LRU); default size/region (as many as the cache holds)",
    )
    eviction: Literal["lru", "slru"] = Field(
        "slru",
        description="lru, or segmented LRU (slru: promoted regions start in a probationary segment, a hit moves "
        "them to the protected one; eviction takes the probationary LRU first); default slru",
    )
    protected_fraction: float = Field(
        0.8, gt=0, lt=1, description="slru: share of size the protected segment may hold (default 0.8)"
    )
    max_admit_size: Bytes = Field(
        "256KiB",
        ge=4096,
        le=2**30,
        description="reads larger than this are not counted for admission (large transfers are cheap on the "
        "platters), bytes (default 256KiB)",
    )
    skip_sequential: bool = Field(
        True, description="reads starting where the previous read ended are not counted for admission (default true)"
    )
    controller_time: Seconds = Field(
        1.1e-4,
        ge=0,
        le=0.01,
        description="firmware time per cache hit, one hit at a time, seconds (default 110us: ~8,800 hits/s)",
    )
    max_pending_promotion: Bytes = Field(
        "32MiB",
        ge=0,
        le=2**34,
        description="promotion data not yet programmed (being fetched or waiting for a die) beyond which new "
        "promotions are dropped, bytes (default 32MiB)",
    )
    nand: NandConfig = Field(default_factory=NandConfig, description="the NAND array")
    series_interval: Seconds = Field(
        10.0, gt=0, le=86400, description="width of the bins of the hit-ratio time series, seconds (default 10)"
    )

    @model_validator(mode="after")
    def _check(self) -> FlashReadCacheConfig:
        if self.region % 4096:
            raise ValueError("region must be a multiple of 4KiB")
        if self.nand.dies % self.nand.channels:
            raise ValueError("nand.dies must be a multiple of nand.channels")
        if self.size < self.region:
            raise ValueError("size must hold at least one region")
        return self

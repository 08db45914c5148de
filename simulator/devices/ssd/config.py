"""Configuration of the ``ssd`` device kind: host interface, controller, FTL, flash back end.

Layer names follow MQSim and real firmware: HIL (host interface layer), controller with its DRAM
data cache manager (DCM), FTL (page-level mapping, garbage collection), TSU (transaction scheduling
unit: per-die queues) and PHY (channels, dies, planes). All times are seconds, sizes bytes, rates
bytes/second after parsing (``simulator.units``).

Geometry: ``channels × chips_per_channel × dies_per_chip`` dies, each with ``planes_per_die``
planes of ``blocks_per_plane`` blocks of ``block_size / page_size`` pages. ``blocks_per_plane`` is
derived from the user capacity and the over-provisioning ratio (``ftl.over_provisioning`` =
(physical − logical) / logical), rounded up to whole blocks.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, model_validator

from simulator.config.base import ConfigModel
from simulator.units import Bytes, BytesPerSecond, Seconds

__all__ = [
    "BITS_PER_CELL",
    "ControllerConfig",
    "FTLConfig",
    "FlashConfig",
    "HostInterfaceConfig",
    "PreconditionConfig",
    "SSDConfig",
]

BITS_PER_CELL = {"slc": 1, "mlc": 2, "tlc": 3, "qlc": 4}

#: per-protocol defaults: (full duplex link, FLUSH is a queued command, max queues, max depth/queue)
_PROTOCOL = {
    "nvme": (True, True, 65535, 65536),
    "sata": (False, False, 1, 32),
    "sas": (True, True, 1, 256),
}


class HostInterfaceConfig(ConfigModel):
    """HIL: the protocol front end (NVMe, SATA/AHCI with NCQ, SAS) and its link."""

    protocol: Literal["nvme", "sata", "sas"] = Field(
        "sata", description="host protocol: nvme | sata | sas (default sata)"
    )
    queues: int = Field(
        1, ge=1, le=65535, description="submission queues (NVMe; SATA and SAS have exactly 1), count, at most 65535, NVMe's largest number of I/O queues (default 1)"
    )
    queue_depth: int = Field(
        32,
        ge=1,
        le=65536, description="commands outstanding per queue (SATA NCQ <= 32, SAS <= 256, NVMe <= 65536), count (default 32)",
    )
    link_rate: BytesPerSecond = Field(
        "600MB/s",
        gt=0,
        le=1e11, description="effective payload rate of the link after line coding, bytes/s "
        "(SATA 6Gb/s ≈ 600MB/s, SAS 12Gb/s ≈ 1.2GB/s, PCIe 3.0 x4 ≈ 3.9GB/s; default 600MB/s)",
    )
    full_duplex: bool | None = Field(
        None,
        description="link carries both directions at once (default: protocol's: SATA half duplex, SAS/NVMe full)",
    )
    command_overhead: Seconds = Field(
        "2us",
        ge=0,
        le=1e-3,
        description="HIL command processing per command (FIS/SQE fetch and decode, doorbell, completion "
        "posting) on one HIL core, seconds, 0..1ms (default 2us)",
    )
    hil_cores: int = Field(
        1,
        ge=1,
        le=64,
        description="firmware cores (or hardware command engines) processing host commands in parallel, "
        "count 1..64; hil_cores / command_overhead caps the command rate (default 1)",
    )
    flush_queued: bool | None = Field(
        None,
        description="FLUSH is a queued command (NVMe, SAS); if false (SATA: FLUSH CACHE EXT is non-NCQ) "
        "the flush waits for the queue to drain and blocks later commands (default: protocol's)",
    )

    @model_validator(mode="after")
    def _check(self) -> HostInterfaceConfig:
        _, _, max_q, max_d = _PROTOCOL[self.protocol]
        if self.queues > max_q:
            raise ValueError(f"{self.protocol} has at most {max_q} submission queue(s), got queues={self.queues}")
        if self.queue_depth > max_d:
            raise ValueError(
                f"{self.protocol} allows at most {max_d} commands per queue, got queue_depth={self.queue_depth}"
            )
        return self

    @property
    def duplex(self) -> bool:
        return _PROTOCOL[self.protocol][0] if self.full_duplex is None else self.full_duplex

    @property
    def queued_flush(self) -> bool:
        return _PROTOCOL[self.protocol][1] if self.flush_queued is None else self.flush_queued

    @property
    def slots(self) -> int:
        """Commands the device holds at once (all queues)."""
        return self.queues * self.queue_depth


class ControllerConfig(ConfigModel):
    """Controller firmware write/read path and the DRAM data cache manager (write buffer)."""

    plp: bool = Field(
        False,
        description="power-loss protection (capacitors): buffered data in DRAM is durable, so FUA and "
        "FLUSH complete once data is in DRAM (default false)",
    )
    write_cache: bool = Field(
        True,
        description="volatile write cache enabled (ATA WCE / NVMe VWC; hdparm -W0 sets false). Without "
        "PLP and with the cache disabled every write is written through to NAND before it completes "
        "(default true)",
    )
    honours_flush: bool = Field(
        True,
        description="firmware makes data durable on FLUSH/FUA/write-through as the protocol requires; "
        "false models firmware that acknowledges them from volatile DRAM (default true)",
    )
    buffer_size: Bytes = Field(
        "64MiB", gt=0, le=2**36, description="DRAM (or SRAM) write buffer for host data, bytes (default 64MiB)"
    )
    write_latency: Seconds = Field(
        "10us",
        ge=0,
        le=0.1,
        description="buffer/acknowledgement stage of the write path: DMA of the data into the DRAM buffer "
        "(protected by capacitors on a PLP drive), buffer slot allocation and completion posting, overlapping "
        "freely between commands (hardware DMA engines, per-command work no lock serialises), seconds per "
        "write command, 0..100ms; the parallel stage that a one-figure calibration of an enterprise NVMe "
        "PLP drive fits, its FTL stage being the class's absolute time (default 10us)",
    )
    ftl_update: Seconds = Field(
        "5us",
        ge=0,
        le=0.1,
        description="FTL stage of the write path: mapping-table update and write-log (journal) entry of one "
        "write command on one FTL core, seconds, 0..100ms; a PLP drive acknowledges a write when this "
        "stage ends (data and mapping are in protected DRAM) (default 5us)",
    )
    ftl_cores: int = Field(
        1,
        ge=1,
        le=64,
        description="FTL cores (or mapping-table partitions updated in parallel), count 1..64; "
        "ftl_cores / ftl_update caps the write command rate (default 1: one core, one lock)",
    )
    ack_commit: Seconds = Field(
        "0s",
        ge=0,
        le=0.1,
        description="group commit after the FTL stage: a write is acknowledged when the next commit of the "
        "write log (journal of mapping updates in protected DRAM) ends; one commit at a time, each covering "
        "every write whose FTL update ended before it started, taking this fixed time whatever it covers, "
        "seconds, 0..100ms (default 0 = no commit step: the ack follows the FTL stage)",
    )
    write_bandwidth: BytesPerSecond | None = Field(
        None,
        gt=0,
        le=1e11, description="controller back-end write throughput (ECC/scrambler/DMA towards the channels): every "
        "page program's data passes it serially before its channel transfer; caps sustained writes below "
        "the NAND array's rate where a datasheet says so, bytes/s (default none = no cap)",
    )
    read_latency: Seconds = Field(
        "5us", ge=0, le=0.1, description="firmware read path before the NAND read (mapping lookup), seconds (default 5us)"
    )
    flush_latency: Seconds = Field(
        "2us",
        ge=0,
        le=0.1, description="firmware cost of a FLUSH with nothing volatile to persist, seconds (default 2us)",
    )


class FlashConfig(ConfigModel):
    """Flash back end (TSU/PHY): geometry, NAND timings, channel bus."""

    cell: Literal["slc", "mlc", "tlc", "qlc"] = Field("mlc", description="cell type, bits per cell 1..4 (default mlc)")
    channels: int = Field(8, ge=1, le=64, description="flash channels (buses), count (default 8)")
    chips_per_channel: int = Field(4, ge=1, le=64, description="chips (ways / chip enables) per channel, count (default 4)")
    dies_per_chip: int = Field(1, ge=1, le=16, description="dies (LUNs) per chip, count (default 1)")
    planes_per_die: int = Field(2, ge=1, le=16, description="planes per die, count (default 2)")
    page_size: Bytes = Field("16KiB", gt=0, le=2**20, description="NAND page (data area), bytes (default 16KiB)")
    block_size: Bytes = Field("4MiB", gt=0, le=2**30, description="erase block, bytes (a whole number of pages; default 4MiB)")
    read_latency: list[Annotated[Seconds, Field(le=0.1)]] = Field(
        default_factory=lambda: [60e-6],
        description="tR per page type (LSB, CSB, MSB; one value = all types), seconds, each at most 100 ms (default [60us])",
    )
    program_latency: list[Annotated[Seconds, Field(le=0.1)]] = Field(
        default_factory=lambda: [500e-6, 2000e-6],
        description="tPROG per page type (LSB..MSB; one value = all types), seconds, each at most 100 ms (default MLC [500us, 2ms])",
    )
    erase_latency: Seconds = Field("3.5ms", gt=0, le=1.0, description="tBERS, seconds (default 3.5ms)")
    channel_rate: BytesPerSecond = Field(
        "400MB/s", gt=0, le=1e10, description="flash bus transfer rate per channel, bytes/s (default 400MB/s)"
    )
    multiplane: bool = Field(
        True, description="a die programs / reads one page on each plane at once (multi-plane ops; default true)"
    )
    nop: int = Field(
        1,
        ge=1,
        le=8,
        description="partial-page programs allowed per page (NOP): 1 for MLC/TLC, so a flushed partial "
        "page is padded; >1 lets later data fill the rest of the page (default 1)",
    )
    slc_cache: bool = Field(
        False,
        description="host writes are programmed in SLC mode (pSLC write cache: TurboWrite, Dynamic "
        "Write Acceleration) with slc_program_latency; GC copies use the native latency (default false)",
    )
    slc_program_latency: Seconds = Field(
        "250us", gt=0, le=0.1, description="tPROG in SLC mode, seconds (used when slc_cache; default 250us)"
    )

    @model_validator(mode="after")
    def _check(self) -> FlashConfig:
        if self.page_size > self.block_size:
            raise ValueError(
                f"flash.page_size ({self.page_size} B) is larger than flash.block_size ({self.block_size} B): "
                "an erase block holds whole pages"
            )
        if self.block_size % self.page_size:
            raise ValueError(
                f"flash.block_size ({self.block_size} B) is not a whole number of pages of {self.page_size} B"
            )
        bits = BITS_PER_CELL[self.cell]
        for name in ("read_latency", "program_latency"):
            v = getattr(self, name)
            if len(v) not in (1, bits):
                raise ValueError(
                    f"flash.{name} needs 1 value or one per page type ({bits} for {self.cell}), got {len(v)}"
                )
            if any(not 0 < x <= 0.1 for x in v):
                raise ValueError(f"flash.{name} values must be > 0 and <= 100ms")
        if self.pages_per_block % bits and not (len(self.program_latency) == 1 and len(self.read_latency) == 1):
            raise ValueError(f"flash.block_size must hold a multiple of {bits} pages (one per page type)")
        return self

    @property
    def dies(self) -> int:
        return self.channels * self.chips_per_channel * self.dies_per_chip

    @property
    def planes(self) -> int:
        return self.dies * self.planes_per_die

    @property
    def pages_per_block(self) -> int:
        return self.block_size // self.page_size

    def page_types(self, which: str) -> list[float]:
        """Per page-type latency list expanded to bits-per-cell entries."""
        v = list(getattr(self, which))
        bits = BITS_PER_CELL[self.cell]
        return v * bits if len(v) == 1 else v

    @property
    def mean_program_latency(self) -> float:
        v = self.page_types("program_latency")
        return sum(v) / len(v)


class FTLConfig(ConfigModel):
    """Flash translation layer: page-level mapping, over-provisioning, greedy GC, durable commit."""

    mapping_unit: Bytes = Field(
        "4KiB", gt=0, le=2**20, description="FTL mapping granularity (logical page), bytes; divides the page (default 4KiB)"
    )
    over_provisioning: float = Field(
        0.07, le=10.0,
        description="spare ratio (physical − logical) / logical, dimensionless, at most 10 = 1000 % (default 0.07 = GB vs GiB)",
    )
    gc_threshold: int = Field(
        3,
        ge=1,
        le=1000, description="garbage collection runs in a plane while it has fewer free blocks than this, blocks (default 3)",
    )
    gc_policy: Literal["greedy"] = Field("greedy", description="victim selection: greedy = fewest valid pages (default)")
    metadata_commit: Seconds = Field(
        "0s",
        ge=0,
        le=1.0, description="durable commit of FTL metadata (mapping journal) after the data pages of a forced flush "
        "are programmed, non-PLP drives only, seconds; one commit at a time (default 0)",
    )

    @model_validator(mode="after")
    def _check(self) -> FTLConfig:
        if self.over_provisioning < 0:
            raise ValueError(
                f"ftl.over_provisioning is {self.over_provisioning}: it must be >= 0 "
                "(physical flash smaller than the user capacity cannot hold the data)"
            )
        return self


class PreconditionConfig(ConfigModel):
    """Drive state at time 0 (fast-forwarded without timing, see ``ftl.precondition``)."""

    state: Literal["fresh", "full", "steady"] = Field(
        "fresh",
        description="fresh = all blocks erased, nothing mapped; full = sequential fill of the whole LBA "
        "range; steady = full then uniform random 4k overwrite until GC is in steady state (default fresh)",
    )
    overwrite: float = Field(
        2.0, ge=0, le=100, description="random overwrite volume for 'steady', multiples of the capacity (default 2.0)"
    )


class SSDConfig(ConfigModel):
    """A NAND SSD: HIL → controller/DCM → FTL → TSU/PHY. See simulator.devices.ssd for semantics."""

    capacity: Bytes = Field("128GiB", gt=0, le=10**15, description="user (logical) capacity, bytes (default 128GiB)")
    sector_size: Bytes = Field(512, le=4096, description="logical block size reported to the host, bytes (512 or 4096; default 512); at most 4096")
    interface: HostInterfaceConfig = Field(default_factory=HostInterfaceConfig, description="host interface (HIL)")
    controller: ControllerConfig = Field(default_factory=ControllerConfig, description="controller and DRAM buffer")
    flash: FlashConfig = Field(default_factory=FlashConfig, description="flash back end geometry and timings")
    ftl: FTLConfig = Field(default_factory=FTLConfig, description="mapping, over-provisioning, GC")
    precondition: PreconditionConfig = Field(default_factory=PreconditionConfig, description="initial drive state")

    @model_validator(mode="after")
    def _check(self) -> SSDConfig:
        if self.sector_size not in (512, 4096):
            raise ValueError(f"sector_size must be 512 or 4096, got {self.sector_size}")
        mu, page = self.ftl.mapping_unit, self.flash.page_size
        if mu > page or page % mu:
            raise ValueError(f"ftl.mapping_unit ({mu} B) must divide flash.page_size ({page} B)")
        if self.controller.buffer_size < page:
            raise ValueError(f"controller.buffer_size ({self.controller.buffer_size} B) must hold at least one page")
        spare = self.blocks_per_plane - self.logical_blocks_per_plane
        need = self.ftl.gc_threshold + 2
        if spare < need:
            raise ValueError(
                f"over-provisioning leaves {spare} spare block(s) per plane; garbage collection needs at least "
                f"{need} (gc_threshold + host and GC write frontiers): raise ftl.over_provisioning or shrink "
                "flash.block_size"
            )
        if self.n_slots >= 2**31 - 1:
            raise ValueError("drive too large for 32-bit mapping tables (more than 2^31 mapping units)")
        return self

    # ---------------------------------------------------------------- derived geometry
    @property
    def logical_blocks_per_plane(self) -> float:
        return self.capacity / (self.flash.planes * self.flash.block_size)

    @property
    def blocks_per_plane(self) -> int:
        return max(1, math.ceil(self.capacity * (1.0 + self.ftl.over_provisioning) / (self.flash.planes * self.flash.block_size)))

    @property
    def slots_per_page(self) -> int:
        return self.flash.page_size // self.ftl.mapping_unit

    @property
    def slots_per_block(self) -> int:
        return self.flash.block_size // self.ftl.mapping_unit

    @property
    def n_slots(self) -> int:
        return self.flash.planes * self.blocks_per_plane * self.slots_per_block

    @property
    def n_lpn(self) -> int:
        return -(-self.capacity // self.ftl.mapping_unit)  # a last partial unit is still a unit

    @property
    def physical_bytes(self) -> int:
        return self.flash.planes * self.blocks_per_plane * self.flash.block_size

    @property
    def effective_op(self) -> float:
        """Over-provisioning after rounding to whole blocks."""
        return self.physical_bytes / self.capacity - 1.0

    # ---------------------------------------------------------------- write pipeline capacity
    def write_stage_rates(self, bs: int = 4096) -> dict[str, float]:
        """Capacity of each stage of the write path, write commands of ``bs`` bytes per second.

        The stages a write passes (see ``simulator.devices.ssd.device``): ``hil`` (hil_cores /
        command_overhead), ``link`` (link_rate / bs), ``ftl`` (ftl_cores / ftl_update) and ``nand``
        (the sustained buffer-to-NAND program rate: every die programming one multi-plane unit of full
        pages at a time, limited by its channel and by ``controller.write_bandwidth``). The
        buffer/acknowledgement stage (``write_latency``) overlaps freely and has no capacity limit: time
        a drive spends there lengthens its 1-job cycle without lowering its ceiling. A PLP drive's sustained
        sync-write rate is the minimum over the stages; a write-through (non-PLP) drive adds the forced
        flush (program and metadata commit of each group) on top, see ``device``.
        """
        inf = math.inf
        ifc, ctl, f = self.interface, self.controller, self.flash
        unit = (f.planes_per_die if f.multiplane else 1) * f.page_size
        tprog = f.slc_program_latency if f.slc_cache else f.mean_program_latency
        per_die = unit / (unit / f.channel_rate + tprog)
        nand = min(f.dies * per_die, f.channels * f.channel_rate)
        if ctl.write_bandwidth:
            nand = min(nand, ctl.write_bandwidth)
        return {
            "hil": ifc.hil_cores / ifc.command_overhead if ifc.command_overhead > 0 else inf,
            "link": ifc.link_rate / bs,
            "ftl": ctl.ftl_cores / ctl.ftl_update if ctl.ftl_update > 0 else inf,
            "nand": nand / bs,
        }

    def write_bound(self, bs: int = 4096) -> tuple[float, str]:
        """(sustained write commands/s, slowest stage) of a PLP drive's write pipeline for ``bs``."""
        rates = self.write_stage_rates(bs)
        name = min(rates, key=rates.__getitem__)
        return rates[name], name

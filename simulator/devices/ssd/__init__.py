"""The ``ssd`` device kind (NAND SSD: HIL, controller/DCM, FTL, TSU/PHY). See ``device`` for semantics."""

from simulator.devices.registry import register_kind
from simulator.devices.ssd.config import SSDConfig
from simulator.devices.ssd.device import SSD, build

register_kind(
    "ssd",
    SSDConfig,
    build,
    "NAND SSD: host interface, DRAM write buffer with/without power-loss protection, page-mapped FTL "
    "with greedy GC, multi-channel/die/plane flash back end",
)

__all__ = ["SSD", "SSDConfig"]

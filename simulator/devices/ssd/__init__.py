"""The ``ssd`` device kind (NAND SSD: HIL, controller/DCM, FTL, TSU/PHY). See ``device`` for semantics."""

from simulator.devices.ssd.config import SSDConfig
from simulator.devices.ssd.device import SSD, build

__all__ = ["SSD", "SSDConfig", "build"]

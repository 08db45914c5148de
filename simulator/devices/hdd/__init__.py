"""Hard disk drives (kind ``hdd``): zoned geometry, seek curves, real rotational position, NCQ/TCQ
with SPTF, write cache (off / volatile / persistent), read look-ahead, dual actuator (MACH.2)."""

from simulator.devices.registry import register_kind

from .config import HDDConfig, derive
from .drive import HDD, DualActuatorHDD, Link, build_hdd

register_kind(
    "hdd",
    HDDConfig,
    build_hdd,
    "hard disk drive: zones, seek curve, rotation, SPTF queue, write cache, look-ahead, dual actuator",
)

__all__ = ["HDD", "DualActuatorHDD", "HDDConfig", "Link", "build_hdd", "derive"]

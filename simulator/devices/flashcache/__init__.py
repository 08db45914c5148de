"""Flash read caches (device kind ``flash_read_cache``): a NAND read cache in front of any device.

Models an on-drive cache such as Seagate's TurboBoost (eMLC NAND inside an enterprise 15K drive,
wrapping the drive's ``hdd`` model) as well as a host-side read cache (an SSD in front of a volume).
See :mod:`.device` for the mechanisms and :mod:`.config` for the parameters and their sources.
"""

from .config import FlashReadCacheConfig, NandConfig
from .device import FlashReadCache, build_flash_read_cache

__all__ = ["FlashReadCache", "FlashReadCacheConfig", "NandConfig", "build_flash_read_cache"]

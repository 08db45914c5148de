"""Devices: one submit interface (request in, event out); kinds registered by their modules."""

from simulator.devices import simple  # noqa: F401  (registers 'queue')
from simulator.devices.base import Device, Op, Request

# Optional kinds register themselves when their modules import cleanly.
for _mod in ("simulator.devices.hdd", "simulator.devices.ssd", "simulator.devices.raid", "simulator.devices.cache"):
    try:
        __import__(_mod)
    except ModuleNotFoundError as _e:  # module not written yet
        if _e.name != _mod:
            raise

__all__ = ["Device", "Op", "Request"]

"""RAID volumes (device kind ``raid``): devices that nest.

A volume's members are ``members.count`` devices of one device spec (any kind: HDDs, SSDs, queue
devices, another RAID), each reached through the one submit interface; optionally through a shared
HBA/expander link (``path``). Levels: ``jbod`` (linear), 0, 1, 10 (md near layout), 5 and 6
(left-symmetric, md's default; RAID 6 with Q on the member after P). The address mapping and the
per-stripe write planning are pure functions in :mod:`.layout`.

Writes to RAID 5/6: full stripes without reads; partial stripes as read-modify-write (old data +
parity read, new data + parity written: 2 + 2 IOs for a small RAID 5 write, 3 + 3 for RAID 6) or
reconstruct-write (read the uncovered data), whichever needs fewer member reads (ties: reconstruct,
as md). Reads are split by chunk; RAID 1/10 reads go to the copy with the fewest outstanding IOs.
Degraded mode (``failed``): reads of a failed member are rebuilt from every surviving data chunk of
the stripe and P; writes skip it.

Controller options: a battery-backed write-back cache (bounded, watermark destage, complete stripes
first then circular address order), sequential read-ahead (one stream per RAID), a fixed firmware
overhead per IO. ``volumes`` carves virtual drives out of the RAID (partitions ``<name>.<volume>``)
that share its members, cache and read-ahead; one cache shared by several RAID devices (drive
groups) of one controller is not modelled. Not modelled: stripe locks between concurrent writes of one stripe, rebuild
traffic, the XOR/Galois computation time (taken as covered by ``controller_overhead``).
"""

from .config import HbaPathConfig, MembersConfig, RaidConfig, ReadAheadConfig, VolumeConfig, WriteCacheConfig
from .layout import Layout, parity_members, plan_read, plan_stripe_write, plan_write, stripe_data_member
from .path import HbaPath, PathPort
from .volume import RaidVolume, build_raid

__all__ = [
    "HbaPath",
    "HbaPathConfig",
    "Layout",
    "MembersConfig",
    "PathPort",
    "RaidConfig",
    "RaidVolume",
    "ReadAheadConfig",
    "VolumeConfig",
    "WriteCacheConfig",
    "build_raid",
    "parity_members",
    "plan_read",
    "plan_stripe_write",
    "plan_write",
    "stripe_data_member",
]

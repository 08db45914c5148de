"""Ceph (Nautilus 14.2) model: RBD images -> objects -> PGs (rjenkins, stable_mod) -> OSDs (CRUSH
straw2), OSDs with sharded op queues and primary-copy replication, BlueStore (deferred WAL writes,
group commit, buffer cache), hosts' CPU pools and NICs. See docs/ceph-model.md.

The device kind ``ceph_cluster`` is listed in ``simulator.devices.registry.KIND_TABLE``.
"""

from simulator.ceph.cluster import Cluster, build_cluster
from simulator.ceph.config import ClusterConfig
from simulator.ceph.rbd import RbdImage

__all__ = ["Cluster", "ClusterConfig", "RbdImage", "build_cluster"]

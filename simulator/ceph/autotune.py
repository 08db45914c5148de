"""BlueStore cache autotuning toward ``osd_memory_target`` (bluestore_cache_autotune, on by default
since Nautilus), as an option beside the fixed cache sizes (``bluestore.autotune.enabled``).

Every ``interval`` (bluestore_cache_autotune_interval 5 s) each BlueStore OSD re-sizes its caches as
the PriorityCache manager does:

1. the OSD's mapped memory is estimated as ``memory_base`` (osd_memory_base: what the OSD needs besides
   its caches) + the bytes its caches hold now + the data of writes in flight;
2. the cache budget moves toward the most it may be, ``max = memory_target x (1 - expected_fragmentation)
   - memory_base`` (at least ``cache_min``): up by (1 - mapped/target) of the distance while mapped memory
   is below the target, down by (1 - target/mapped) of the distance to ``cache_min`` above it
   ("approach the min/max slowly, but bounce away quickly", PriorityCache::Manager::tune_memory);
3. the budget is split: RocksDB's block cache takes ``kv_ratio`` of it (not modelled as a cache; its
   memory is set aside), the onode (meta) cache what it holds plus a tenth of its share to grow into,
   at most ``meta_ratio`` of the budget (``onode_bytes`` per onode), and the data buffer cache the
   rest -- what the meta cache does not use flows to data, as the manager hands unrequested memory on.
   The three capacities never add up to more than the budget.

The caches are resized in place (entries beyond the new capacity are evicted in the cache's own order).
Defaults: osd_memory_target 4 GiB, osd_memory_base 768 MiB, osd_memory_expected_fragmentation 0.15,
osd_memory_cache_min 128 MiB (src/common/options.cc), bluestore_cache_meta_ratio / kv_ratio 0.4 / 0.4
(Nautilus; Pacific 0.45 / 0.45). ``onode_bytes`` (4 KiB: an onode with its extent map) is an estimate.
The tuner runs on the client path (checked at each RBD request, no events of its own), so an idle
cluster is not retuned. The compiled Ceph core runs the same tuning (``ceph_loop._autotune_tick``, the
arithmetic ``core.ceph_arith.autotune_split`` shared with :meth:`Autotuner._tune`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from simulator.ceph.cache import TwoQCache
from simulator.core.ceph_arith import autotune_split

if TYPE_CHECKING:
    from simulator.ceph.cluster import Cluster

__all__ = ["Autotuner", "resize_cache"]


def resize_cache(cache: Any, capacity: int, kin_ratio: float = 0.5, kout_ratio: float = 0.5) -> None:
    """Set a cache's capacity (entries) and evict what no longer fits, in the cache's own order."""
    capacity = max(0, int(capacity))
    if isinstance(cache, TwoQCache):
        cache.capacity = capacity
        cache.kin = int(capacity * kin_ratio)
        cache.kout = int(capacity * kout_ratio)
        if capacity == 0:
            cache.clear()
        else:
            cache._trim()
        return
    cache.capacity = capacity
    while len(cache) > capacity:
        cache._evict()


class Autotuner:
    """The cache autotuner of every BlueStore OSD of a cluster (``tick(now)`` from the client path)."""

    def __init__(self, cluster: Cluster):
        self.cl = cluster
        self.cfg = cfg = cluster.cfg.bluestore.autotune
        self.interval = float(cfg.interval)
        self.next = 0.0
        tgt = cfg.memory_target
        self.max = max(int(cfg.cache_min), int(tgt * (1.0 - cfg.expected_fragmentation) - cfg.memory_base))
        self.min = int(cfg.cache_min)
        self.stores = [o.bs for o in cluster.osds if getattr(o.bs, "KIND", "") == "bluestore"]
        self.budget = {id(bs): self.min for bs in self.stores}
        self.last: dict[int, dict[str, int]] = {}
        self.ticks = 0
        self.tick(cluster.env.now)

    def tick(self, now: float) -> None:
        self.next = now + self.interval
        self.ticks += 1
        for bs in self.stores:
            self._tune(bs)

    def _tune(self, bs: Any) -> None:
        cfg = self.cfg
        unit = bs.unit
        onode_b = int(cfg.onode_bytes)
        writing = sum(b - a for runs in bs.writing.values() for a, b in runs) * unit
        # the arithmetic is written once (core.ceph_arith), the compiled core's tuning uses it too
        b, kv, meta, data, mapped = autotune_split(self.budget[id(bs)], int(cfg.memory_base), len(bs.cache) * unit,
                                                   len(bs.onodes) * onode_b, writing, int(cfg.memory_target), self.max,
                                                   self.min, cfg.kv_ratio, cfg.meta_ratio)
        self.budget[id(bs)] = b
        cc = bs.cfg.cache
        resize_cache(bs.cache, data // unit, cc.kin_ratio, cc.kout_ratio)
        resize_cache(bs.onodes, meta // onode_b)
        self.last[id(bs)] = {"budget": b, "kv": kv, "meta": (meta // onode_b) * onode_b, "data": (data // unit) * unit,
                             "mapped": mapped}

    def stats(self) -> dict[str, Any]:
        vals = list(self.last.values())
        n = len(vals) or 1
        return {
            "ticks": self.ticks,
            "cache_max_bytes": self.max,
            "budget_mean": sum(v["budget"] for v in vals) / n,
            "data_cache_mean": sum(v["data"] for v in vals) / n,
            "meta_cache_mean": sum(v["meta"] for v in vals) / n,
            "kv_cache_mean": sum(v["kv"] for v in vals) / n,
            "mapped_mean": sum(v["mapped"] for v in vals) / n,
        }

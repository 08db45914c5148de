"""The Ceph cluster component (device-registry kind ``ceph_cluster``).

``build_cluster(cfg, name, parent)`` builds hosts (CPU pool, NIC), their drives through the device
registry (``simulator.devices.registry.build_device``), one OSD per LUN / LVM volume / drive,
BlueStore on each OSD's device (WAL + DB on the same device, or on a volume of a shared DB device),
the CRUSH map, the pools' PG -> acting set tables (optionally balanced), the RBD images and the
client host. ``Cluster.image(pool, name)`` is the Device fio's rbd engine drives.

The cluster keeps all state between runs (BlueStore caches, allocation, device state): a sweep
runs one workload after another on the same object; ``reset_stats()`` starts a new statistics
window without touching state.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from simulator.ceph.autotune import Autotuner
from simulator.ceph.bluestore import BlueStore
from simulator.ceph.config import ClusterConfig, CpuConfig, NicConfig
from simulator.ceph.ec import EcStats, shard_size
from simulator.ceph.filestore import FileStore
from simulator.ceph.hashing import pg_num_mask
from simulator.ceph.osd import CLIENT, PG, ObjOp, Osd
from simulator.ceph.placement import NONE, CrushMap, CrushOsd, balance_upmap, group_stable, map_pool
from simulator.ceph.rbd import RbdImage
from simulator.ceph.recovery import Recovery, Timeline
from simulator.ceph.resources import CpuPool, Link, Network
from simulator.ceph.store import ObjectStore
from simulator.devices.base import Device, Op
from simulator.devices.blocklayer import BlockLayer
from simulator.devices.partition import Partition
from simulator.devices.registry import resolve_params
from simulator.engine import Component, collapse_huge_pages
from simulator.engine.core import gc_quiet
from simulator.errors import ConfigError

__all__ = ["Cluster", "Host", "Pool", "build_cluster"]

_READ = int(Op.READ)
_LVM_EXTENT = 4 << 20


class Host(Component):
    """A machine: CPU pool shared by its daemons, one NIC (tx and rx links)."""

    def __init__(self, name: str, parent: Component, cpu: CpuConfig, nic: NicConfig):
        super().__init__(name, parent)
        self.cpu = CpuPool("cpu", self, cpu.servers, cpu.speed, cpu.wakeup_cost, cpu.stall_share, cpu.stall_mean,
                           cpu.background_share, cpu.foreign_cores, cpu.foreign_slice, cpu.thread_wakeup_cost,
                           cpu.thread_wake_delay)
        self.tx = Link(self.env, nic.bandwidth)
        self.rx = Link(self.env, nic.bandwidth)
        self.drives: list[Device] = []
        self.db_devices: list[Device] = []
        self.osds: list[Osd] = []

    def reset_stats(self) -> None:
        self.cpu.reset_stats()
        self.tx.reset_stats()
        self.rx.reset_stats()

    def stats(self) -> dict[str, Any]:
        st = {
            "cpu_servers": self.cpu.servers,
            "cpu_utilisation": self.cpu.utilisation(),
            "nic_tx_utilisation": self.tx.utilisation(),
            "nic_rx_utilisation": self.rx.utilisation(),
            "osds": [o.id for o in self.osds],
        }
        if self.cpu.threaded:  # the per-thread wakeup rule is on
            cs = self.cpu.stats()
            st["cpu_thread_jobs"] = cs["thread_jobs"]
            st["cpu_thread_wakes"] = cs["thread_wakes"]
        return st


class Pool:
    """A replicated or erasure-coded pool at run time (``ec``: the profile, None for replicated)."""

    def __init__(self, cfg: Any, pool_id: int):
        self.cfg = cfg
        self.id = pool_id
        self.name = cfg.name
        self.ec = cfg.ec_profile
        self.ec_stats = EcStats() if self.ec is not None else None
        self.size = cfg.effective_size
        self.min_size = cfg.effective_min_size
        self.pg_num = cfg.pg_num
        self.pg_num_mask = pg_num_mask(cfg.pg_num)
        self.pgs: list[PG] = []
        self.upmap_moves = 0


def _scaled_drive(spec: dict[str, Any], scale: float) -> dict[str, Any]:
    """A drive spec whose explicitly set write-cache capacity is scaled for a time-compressed replay
    (``state_scale``), like the BlueStore data cache: a cache that fills over a run keeps its ratio to
    the IOs of a run. Drives that leave the size to their profile's default are not changed."""
    if scale == 1.0:
        return spec
    cache = ((spec.get("params") or {}).get("cache") or {})
    if cache.get("write_cache_size") is None:
        return spec
    from simulator.units import parse_size

    size = max(4096, int(parse_size(cache["write_cache_size"]) * scale))
    params = {**spec["params"], "cache": {**cache, "write_cache_size": size}}
    return {**spec, "params": params}


#: clusters of at least this many OSDs move their built state to huge pages (the TLB misses of a
#: client IO touching a few OSDs among hundreds cost ~12 % of the CPU per IO at 1,008 OSDs)
HUGE_PAGES_FROM = 256


class Cluster(Component):
    def __init__(self, cfg: ClusterConfig, name: str, parent: Component):
        super().__init__(name, parent)
        self.cfg = cfg
        self.client_cfg = cfg.client
        net = cfg.network
        self.net = Network(net.latency, net.loopback_latency, net.message_overhead)
        #: optional ``tracer(op, t_done)`` called for every completed client object op (tests)
        self.tracer: Any = None
        self.resetting = False
        self.hosts: list[Host] = []
        self.osds: list[Osd] = []
        self.pools: dict[str, Pool] = {}
        self.images: dict[tuple[str, str], RbdImage] = {}
        self._db_kinds: dict[int, tuple[Any, Any]] = {}
        with gc_quiet():  # a large build makes objects by the million and few cycles: fewer collections
            self._build(cfg)

    def _build(self, cfg: ClusterConfig) -> None:
        self._build_hosts()
        self.client = self._client_host(cfg.client, "params.client")
        #: client hosts by name (the default `client` and `clients`), with their configs
        self.clients: dict[str, tuple[Host, Any]] = {cfg.client.name: (self.client, cfg.client)}
        for i, cc in enumerate(cfg.clients):
            if cc.name in self.clients or cc.name in {h.name for h in self.hosts}:
                raise ConfigError(f"duplicate client name {cc.name!r}", field=f"params.clients.{i}.name")
            self.clients[cc.name] = (self._client_host(cc, f"params.clients.{i}"), cc)
        self._build_crush()
        self._build_pools()
        self._build_images()
        #: client latency timeline and failure/recovery events (only when events are configured)
        self.timeline: Timeline | None = None
        self.recovery: Recovery | None = None
        if cfg.events:
            self.timeline = Timeline()
            self.recovery = Recovery(self)
        #: BlueStore cache autotuning (bluestore.autotune.enabled): checked on the client path
        self.autotune: Autotuner | None = None
        self.next_tune = float("inf")
        if cfg.bluestore.autotune.enabled and cfg.objectstore == "bluestore":
            self.autotune = Autotuner(self)
            self.next_tune = self.autotune.next
        if len(self.osds) >= HUGE_PAGES_FROM:
            collapse_huge_pages()  # memory placement only: see simulator.engine.collapse_huge_pages

    # ================================================================== construction
    def _client_host(self, cc: Any, field: str) -> Host:
        if cc.host is not None:  # the client runs on an OSD host and shares its CPU (e.g. a one-host lab)
            match = [h for h in self.hosts if h.name == cc.host]
            if not match:
                raise ConfigError(f"no host named {cc.host!r}", field=f"{field}.host")
            return match[0]
        return Host(cc.name, self, cc.cpu, cc.nic)

    def _build_hosts(self) -> None:
        cfg = self.cfg
        bs_cfg = cfg.bluestore
        fs_cfg = cfg.filestore
        if cfg.state_scale != 1.0:  # time-compressed replay: scale the state carried between runs
            cache = bs_cfg.cache.model_copy(update={"size": max(1, int(bs_cfg.cache.size * cfg.state_scale))})
            bs_cfg = bs_cfg.model_copy(update={"cache": cache})
            pc = fs_cfg.page_cache.model_copy(update={"size": max(1, int(fs_cfg.page_cache.size * cfg.state_scale))})
            fs_cfg = fs_cfg.model_copy(update={"page_cache": pc})
        filestore = cfg.objectstore == "filestore"
        names: set[str] = set()
        resolved: dict[tuple[int, int], tuple[Any, Any]] = {}
        osd_id = 0
        for hi, hc in enumerate(cfg.hosts):
            for k in range(hc.count):
                hname = hc.name if hc.count == 1 else f"{hc.name}{k}"
                if hname in names or hname == cfg.client.name:
                    raise ConfigError(f"duplicate host name {hname!r}", field=f"params.hosts.{hi}.name")
                names.add(hname)
                host = Host(hname, self, hc.cpu, hc.nic)
                self.hosts.append(host)
                volumes: list[tuple[Device, Device, str, float | None, str]] = []
                dn = 0
                for gi, g in enumerate(hc.drives):
                    field = f"params.hosts.{hi}.drives.{gi}"
                    key = (hi, gi)
                    if key not in resolved:  # one profile load and validation per drive group
                        resolved[key] = resolve_params(_scaled_drive(g.device, cfg.state_scale), field=f"{field}.device")[:2]
                    dk, dcfg = resolved[key]
                    for _ in range(g.count):
                        dev = dk.build(dcfg, f"drive{dn}", host)
                        dn += 1
                        host.drives.append(dev)
                        for v, io in self._split(dev, g.split, g.lvm_offset, host, field, g.block_layer):
                            volumes.append((v, io, g.device_class, g.weight, field))
                db_parts = self._db_volumes(hc, hi, host, len(volumes))
                for j, (vol, io, dclass, weight, _field) in enumerate(volumes):
                    osd = Osd(f"osd{osd_id}", self, osd_id, host, self, cfg.osd)
                    osd.device = vol
                    osd.io_device = io
                    osd.device_class = dclass
                    osd.weight = weight if weight is not None else vol.capacity / float(1 << 40)
                    dbv = db_parts[j] if db_parts else None
                    osd.db_device = dbv
                    if filestore:
                        try:
                            osd.bs = FileStore("filestore", osd, fs_cfg, io, host.cpu, journal_device=dbv,
                                               journal_space=dbv.capacity if dbv is not None else 0)
                        except ValueError as e:
                            where = f"params.hosts.{hi}.db_devices.db_size" if dbv is not None else "params.filestore.journal_size"
                            raise ConfigError(f"osd.{osd_id}: {e}", field=where) from None
                    elif dbv is not None:
                        osd.bs = BlueStore("bluestore", osd, bs_cfg, io, wal_device=dbv, wal_base=0, wal_space=dbv.capacity)
                    else:
                        osd.bs = BlueStore("bluestore", osd, bs_cfg, io)
                    host.osds.append(osd)
                    self.osds.append(osd)
                    osd_id += 1

    def _queue(self, dev: Device, bl: Any = None) -> Device:
        """``dev`` behind the host's block layer (request tags, I/O scheduler), if enabled."""
        bl = bl or self.cfg.block_layer
        if not bl.enabled:
            return dev
        return BlockLayer("blk", dev, dev, bl)

    def _split(
        self, dev: Device, split: Any, lvm_offset: int, host: Host, field: str, bl: Any = None
    ) -> list[tuple[Device, Device]]:
        """The OSD volumes of a drive: (volume, the device BlueStore submits to). One block layer
        per LUN (each is its own SCSI device) or per drive (LVs share the drive's request queue)."""
        if split == "luns":
            luns = getattr(dev, "luns", None)
            if luns is None:
                luns = [c for c in dev.children if isinstance(c, Device) and c.name.startswith("lun")]
                luns.sort(key=lambda c: c.name)
            if not luns:
                raise ConfigError(
                    f"split: luns, but device {dev.path} ({type(dev).__name__}) has no LUN child devices",
                    field=f"{field}.split",
                )
            return [(lun, self._queue(lun, bl)) for lun in luns]
        n = int(split)
        if n == 1:
            return [(dev, self._queue(dev, bl))]
        usable = dev.capacity - lvm_offset
        size = (usable // n) // _LVM_EXTENT * _LVM_EXTENT
        if size <= 0:
            raise ConfigError(f"device {dev.path} too small to split into {n} volumes", field=f"{field}.split")
        q = self._queue(dev, bl)
        parts = [Partition(f"{dev.name}_lv{i}", host, q, lvm_offset + i * size, size) for i in range(n)]
        return [(p, p) for p in parts]

    def _db_volumes(self, hc: Any, hi: int, host: Host, n_osds: int) -> list[Device]:
        dbc = hc.db_devices
        if dbc is None or n_osds == 0:
            return []
        field = f"params.hosts.{hi}.db_devices"
        per = -(-n_osds // dbc.count)
        out: list[Device] = []
        dk, dcfg = self._db_kinds.get(hi) or resolve_params(dbc.device, field=f"{field}.device")[:2]
        self._db_kinds[hi] = (dk, dcfg)
        for d in range(dbc.count):
            dev = dk.build(dcfg, f"db{d}", host)
            host.drives.append(dev)
            host.db_devices.append(dev)
            q = self._queue(dev, dbc.block_layer)
            k = min(per, n_osds - len(out))
            if k <= 0:
                break
            if _LVM_EXTENT + k * dbc.db_size > dev.capacity:
                raise ConfigError(
                    f"{k} DB volumes of {dbc.db_size} bytes do not fit on {dev.path} ({dev.capacity} bytes)",
                    field=f"{field}.db_size",
                )
            for i in range(k):
                out.append(Partition(f"db{d}_lv{i}", host, q, _LVM_EXTENT + i * dbc.db_size, dbc.db_size))
        return out

    def _build_crush(self) -> None:
        host_idx = {h.name: i for i, h in enumerate(self.hosts)}
        self.crush = CrushMap(
            [h.name for h in self.hosts],
            [CrushOsd(o.id, o.weight, o.device_class, host_idx[o.host.name]) for o in self.osds],
            choose_total_tries=self.cfg.crush.choose_total_tries,
        )

    def _build_pools(self) -> None:
        cfg = self.cfg
        used_ids: set[int] = set()
        classes = self.crush.classes()
        for i, pc in enumerate(cfg.pools):
            field = f"params.pools.{i}"
            if pc.name in self.pools:
                raise ConfigError(f"duplicate pool name {pc.name!r}", field=f"{field}.name")
            pid = pc.id if pc.id is not None else i + 1
            if pid in used_ids:
                raise ConfigError(f"duplicate pool id {pid}", field=f"{field}.id")
            used_ids.add(pid)
            dc = pc.rule.device_class
            if dc is not None and dc not in classes:
                raise ConfigError(
                    f"no OSD has device class {dc!r} (classes: {', '.join(sorted(classes)) or 'none'})",
                    field=f"{field}.rule.device_class",
                )
            size = pc.effective_size
            if pc.min_size is not None and pc.min_size > size:
                raise ConfigError(f"min_size {pc.min_size} > size {size}", field=f"{field}.min_size")
            fd = pc.rule.failure_domain
            n = self.crush.eligible(dc, fd)
            if size > n:
                what = "hosts" if fd == "host" else "OSDs"
                raise ConfigError(
                    f"pool size {size} > {n} {what} eligible under its rule "
                    f"(device class {dc or 'any'}, failure domain {fd}): replicas cannot be placed",
                    field=f"{field}.erasure" if pc.type == "erasure" else f"{field}.size",
                )
            pool = Pool(pc, pid)
            acting = self.map_pool(pool)
            if pool.ec is not None and any(x == NONE for a in acting for x in a):
                raise ConfigError(
                    f"CRUSH could not place all {size} shards of every PG (failure domain {fd})", field=f"{field}.erasure"
                )
            if cfg.balancer.mode == "upmap":
                pool.upmap_moves = len(
                    balance_upmap(self.crush, acting, dc, fd, cfg.balancer.max_deviation, cfg.balancer.max_iterations)
                )
            by_id = {o.id: o for o in self.osds}
            pool.pgs = [PG(pool, ps, [by_id[x] for x in a], pool.min_size) for ps, a in enumerate(acting)]
            for pg in pool.pgs:
                pg.ppos = pg.primary_pos()
            self.pools[pc.name] = pool

    def map_pool(self, pool: Pool, out: set[int] | None = None) -> list[list[int]]:
        """CRUSH acting sets of ``pool``'s PGs (``out``: OSDs with reweight 0): ``chooseleaf firstn`` for
        replicated pools; ``chooseleaf indep`` with set_choose_tries 100 / set_chooseleaf_tries 5 (Ceph's
        default erasure rule) for erasure-coded pools, where a position is a shard id."""
        pc = pool.cfg
        dc = pc.rule.device_class
        fd = pc.rule.failure_domain
        if pool.ec is not None:
            return map_pool(self.crush, pool.id, pc.pg_num, pool.size, dc, fd, indep=True, out=out, tries=100, leaf_tries=5)
        return map_pool(self.crush, pool.id, pc.pg_num, pool.size, dc, fd, out=out)

    def _build_images(self) -> None:
        seen: set[tuple[str, str]] = set()
        for i, ic in enumerate(self.cfg.images):
            field = f"params.images.{i}"
            if ic.pool not in self.pools:
                raise ConfigError(
                    f"image {ic.name!r} is in pool {ic.pool!r}, which is not defined (pools: {', '.join(self.pools)})",
                    field=f"{field}.pool",
                )
            key = (ic.pool, ic.name)
            if key in seen:
                raise ConfigError(f"duplicate image {ic.pool}/{ic.name}", field=f"{field}.name")
            seen.add(key)
            pool = self.pools[ic.pool]
            if ic.data_pool is not None:
                if ic.data_pool not in self.pools:
                    raise ConfigError(
                        f"image {ic.name!r} has data pool {ic.data_pool!r}, which is not defined (pools: {', '.join(self.pools)})",
                        field=f"{field}.data_pool",
                    )
                if pool.ec is not None:
                    raise ConfigError(
                        f"image {ic.name!r}: its metadata pool {ic.pool!r} is erasure-coded; RBD keeps image metadata "
                        "(omap) in a replicated pool", field=f"{field}.pool",
                    )
                pool = self.pools[ic.data_pool]
            elif pool.ec is not None:
                raise ConfigError(
                    f"image {ic.name!r} is in erasure-coded pool {ic.pool!r}: RBD needs a replicated pool for the image "
                    "metadata; put the image in a replicated pool with data_pool: " + ic.pool, field=f"{field}.pool",
                )
            if pool.ec is not None and not pool.ec.allow_ec_overwrites:
                raise ConfigError(
                    f"data pool {pool.name!r} does not allow EC overwrites (erasure.allow_ec_overwrites: false); RBD needs them",
                    field=f"{field}.data_pool",
                )
            self._check_fits(ic, pool, field)
            if ic.client is not None and ic.client not in self.clients:
                raise ConfigError(
                    f"image {ic.name!r}: no client host {ic.client!r} (clients: {', '.join(self.clients)})", field=f"{field}.client"
                )
            cname = f"img_{ic.pool}_{ic.name}".replace(".", "_")
            img = RbdImage(cname, self, self, pool, ic, i)
            img.client, img.client_cfg = self.clients[ic.client or self.cfg.client.name]
            # the image's fio job thread and librbd completion thread (the per-thread wakeup rule, CpuPool.run)
            img.th_submit = img.client.cpu.thread("client.submit")
            img.th_complete = img.client.cpu.thread("client.complete", queued=False)
            if ic.prefilled:
                self._prefill(img, field)
            self.images[key] = img
        self._build_krbd()

    def _build_krbd(self) -> None:
        """Kernel-mapped images: a block layer (the rbd device's request queue) in front of each."""
        self.krbd: dict[str, BlockLayer] = {}
        taken = {c.name for c in self.children}
        for i, kc in enumerate(self.cfg.krbd):
            field = f"params.krbd.{i}"
            img = self.images.get((kc.pool, kc.image))
            if img is None:
                raise ConfigError(f"no RBD image {kc.pool}/{kc.image} to map", field=f"{field}.image")
            if kc.name in taken or kc.name in self.krbd:
                raise ConfigError(f"duplicate device name {kc.name!r}", field=f"{field}.name")
            bl = kc.block_layer.model_copy(update={"queue_depth": kc.queue_depth, "enabled": True})
            dev = self.krbd[kc.name] = BlockLayer(kc.name, self, img, bl)
            if kc.file_size is not None:
                if kc.file_offset + kc.file_size > img.capacity:
                    raise ConfigError(
                        f"file of {kc.file_size} bytes at {kc.file_offset} does not fit on {kc.pool}/{kc.image} "
                        f"({img.capacity} bytes)", field=f"{field}.file_size",
                    )
                self.krbd[f"{kc.name}_file"] = Partition(f"{kc.name}_file", self, dev, kc.file_offset, kc.file_size)

    def _check_fits(self, ic: Any, pool: Pool, field: str) -> None:
        obj = 1 << ic.order
        n_obj = -(-ic.size // obj)
        if n_obj > (1 << 24):
            raise ConfigError(
                f"image of {n_obj} objects: too many to model (limit 2^24); use a larger order", field=f"{field}.size"
            )
        members = {o for pg in pool.pgs for o in pg.acting}
        free = sum(o.bs.data_capacity() - o.bs.allocated for o in members)
        need = n_obj * shard_size(pool, obj) * pool.size
        if ic.prefilled and need > free:
            raise ConfigError(
                f"image needs {need} bytes with {pool.size} replicas; the pool's OSDs have {free} bytes free",
                field=f"{field}.size",
            )

    def _prefill(self, img: RbdImage, field: str) -> None:
        """Allocate every object of ``img`` on its acting OSDs in object order (a sequential fill),
        and leave the most recently written onodes in each OSD's onode cache."""
        pool = img.pool
        size = pool.size
        acting = np.full((pool.pg_num, size), -1, dtype=np.int64)
        for pg in pool.pgs:
            acting[pg.ps, : len(pg.acting)] = [o.id for o in pg.acting]
        # object replicas grouped by OSD, in object order within an OSD (a counting sort of the OSD
        # ids of the flattened (object, position) table, O(n))
        small = len(self.osds) < (1 << 15)
        flat = acting.astype(np.int16 if small else np.int32)[img.obj_ps_array].ravel()
        order, counts, starts = group_stable(flat, len(self.osds))
        ids = np.nonzero(counts)[0]
        starts = starts[ids]
        counts = counts[ids]
        ids = ids - 1
        plans: dict[int, tuple[int, int, int, int, int]] = {}
        for oid, cnt in zip(ids.tolist(), counts.tolist(), strict=True):
            if oid < 0:
                continue
            try:
                plans[oid] = (*self.osds[oid].bs.alloc_plan(cnt, img.shard_size), cnt)
            except ValueError as e:
                raise ConfigError(f"image {img.cfg.pool}/{img.cfg.name} does not fit on osd.{oid}: {e}", field=f"{field}.size") from None
        # each OSD's allocations in object order: one pass over the image's table, in table order
        img.base_table.set_bases_filled(flat, plans)
        del flat
        for oid, st, cnt in zip(ids.tolist(), starts.tolist(), counts.tolist(), strict=True):
            if oid < 0:
                continue
            bs = self.osds[oid].bs
            keep = min(cnt, bs.onodes.capacity)
            if keep:
                bs.onodes.load(img.key_base + order[st + cnt - keep : st + cnt].astype(np.int64) // size)

    # ================================================================== run time
    def image(self, pool: str, name: str) -> RbdImage:
        """The RBD image ``pool/name`` (fio: ioengine=rbd, pool=, rbdname=) as a Device."""
        img = self.images.get((pool, name))
        if img is None:
            have = ", ".join(f"{p}/{n}" for p, n in self.images) or "none"
            if pool not in self.pools:
                raise ConfigError(f"no pool {pool!r} in the cluster (pools: {', '.join(self.pools)})", field="pool")
            raise ConfigError(f"no RBD image {name!r} in pool {pool!r} (images: {have})", field="rbdname")
        return img

    def send_client_op(self, op: ObjOp, t: float) -> None:
        """The client sends ``op`` at ``t`` (after its librbd CPU) to the PG's primary."""
        pg = op.pg
        pos = pg.ppos
        if pos < 0:  # PG below min_size: IO blocks until enough replicas are up
            pg.blocked.append((op, t))
            return
        rec = self.recovery
        if rec is not None and rec.jobs and rec.hold(op, t):
            return  # its object is being recovered: the op goes on when it is
        prim = pg.acting[pos]
        op.pos = pos
        op.osd = prim
        if rec is not None:  # in flight: resent if its PG re-peers before the reply
            rec.live[op] = None
        payload = op.length if op.kind != _READ else 0
        t = self.net.arrival(op.image.client, prim.host, t, payload)
        ocfg = self.cfg.osd
        if op.kind != _READ and op.role == CLIENT:  # a replicated write: may be dispatched on arrival
            prim.deliver(t, op, ocfg.msgr_recv_cost + ocfg.msgr_cost_per_byte * payload)
        else:
            prim.post(prim.cpu.run(prim.th_msgr, t, ocfg.msgr_recv_cost + ocfg.msgr_cost_per_byte * payload), op)

    def client_reply(self, host: Host, op: ObjOp, t: float) -> None:
        rec = self.recovery
        if rec is not None and op not in rec.live:
            return  # a copy the client had resent after a new map: its reply is discarded
        payload = op.length if op.kind == _READ else 0
        img = op.image
        t = self.net.arrival(host, img.client, t, payload)
        ccfg = img.client_cfg
        t = img.client.cpu.run(img.th_complete, t, ccfg.complete_cost + ccfg.cost_per_byte * payload)
        if rec is not None:
            rec.completed(op, t)
        if self.tracer is not None:
            self.tracer(op, t)
        op.image.complete_op(op, t)

    def mark_down(self, osd_id: int) -> None:
        """Mark an OSD down (no remapping: its PGs run degraded; below min_size they block)."""
        self._mark(osd_id, False)

    def mark_up(self, osd_id: int) -> None:
        self._mark(osd_id, True)

    def _mark(self, osd_id: int, up: bool) -> None:
        """Set an OSD's up flag and re-peer. A compiled state held for this cluster between runs
        (simulator.core.ceph_fio.Held) follows it; if a PG would go inactive (blocked IO is Python only)
        the state is handed over to the Python objects first."""
        from simulator.core.ceph_fio import held_state

        held = held_state(self)
        o = self.osds[osd_id]
        if held is not None:
            was = o.up
            o.up = up
            inactive = any(pg.primary_pos() < 0 for pool in self.pools.values() for pg in pool.pgs)
            o.up = was
            if inactive:
                held.release()
                held = None
        o.up = up
        self._repeer()
        if held is not None:
            held.repeered()

    def _repeer(self) -> None:
        now = self.env._now
        for pool in self.pools.values():
            for pg in pool.pgs:
                pg.ppos = pg.primary_pos()
                if pg.ppos >= 0 and pg.blocked:
                    blocked, pg.blocked = pg.blocked, []
                    for op, t in blocked:
                        self.send_client_op(op, max(t, now))

    # ================================================================== statistics
    def reset_stats(self) -> None:
        """New statistics window for every component of the cluster (state is kept)."""
        self.resetting = True
        try:
            for c in self.walk():
                if c is self:
                    continue
                if isinstance(c, (Device, Host, Osd, ObjectStore, CpuPool)):
                    c.reset_stats()
        finally:
            self.resetting = False
        self._t0 = self.env.now
        if self.timeline is not None:
            self.timeline.reset()

    def pg_counts(self) -> dict[int, dict[str, int]]:
        total: Counter[int] = Counter()
        prim: Counter[int] = Counter()
        for pool in self.pools.values():
            for pg in pool.pgs:
                for i, o in enumerate(pg.acting):
                    total[o.id] += 1
                    if i == 0:
                        prim[o.id] += 1
        return {o.id: {"pgs": total[o.id], "primary_pgs": prim[o.id]} for o in self.osds}

    def summary(self, osds: list[dict[str, Any]] | None = None) -> dict[str, float]:
        """Flat cluster-wide figures of the statistics window (for summary tables):

        * ``db_util_max`` / ``db_util_mean``: utilisation of the shared DB/WAL devices (0 if none),
          ``db_qd_mean``: their mean number of requests inside, ``db_iops``: IOs per second per device
        * ``data_util_max`` / ``data_util_mean`` / ``data_qd_mean``: the OSD data drives
        * ``kv_commit_ms``: mean kv commit latency of a kv_sync batch over the OSDs (BlueStore), as Ceph's
          kv_commit_lat: the cycle after its data-device flush (its CPU with any wait for a core, the WAL write
          and flush); the WAL write + flush alone when bluestore.kv_commit_cost is 0
        * ``deferred_txcs_mean``: deferred transactions in flight per OSD at the end of the window
        * ``throttled_share``: client writes and repops that blocked in an object-store throttle, fraction
        * ``cpu_util_max``: busiest host CPU pool
        * with ``events``: ``recovery_s`` (the first recovery's event to its last PG recovered; NaN while
          running), ``recovered_gib``, ``{before,during,after}_{iops,p50_ms,p99_ms}`` of the client object ops
          completed before the first event, until recovery ended, and after it, and per applied event i
          ``ev{i}_{iops,p50_ms,p99_ms,recovery_s,moved_gib}`` (Recovery.event_figures)
        * FileStore only: ``journal_write_ms`` (mean journal write, FUA, over the OSDs),
          ``journal_entries_per_write``, ``journal_used_max`` (peak fill of the fullest journal, fraction),
          ``journal_full_waits`` (times a journal writer waited for a sync), ``sync_s`` (mean syncfs
          duration), ``wb_dirty_ios_mean`` (dirty writes per OSD at the end of the window)
        """
        if osds is None:
            osds = [o.stats() for o in self.osds]
        span = max(self.env.now - getattr(self, "_t0", 0.0), 1e-300)
        db = [d.stats() for h in self.hosts for d in h.db_devices]
        drives = [d.stats() for h in self.hosts for d in h.drives if d not in h.db_devices]
        bss = [o["bluestore"] for o in osds if o.get("bluestore")]
        fss = [o["filestore"] for o in osds if o.get("filestore")]
        stores = bss + fss
        writes = sum(o["client_ops"].get("write", 0) + o["subops"] for o in osds)
        rec: dict[str, float] = {}
        if self.recovery is not None:
            r = self.recovery.stats(self.timeline, getattr(self, "_t0", 0.0))
            rec["recovery_s"] = r["recovery_s"]
            rec["recovered_gib"] = r["recovered_bytes"] / float(1 << 30)
            for ph, f in r["phases"].items():
                for k in ("iops", "p50_ms", "p99_ms"):
                    rec[f"{ph}_{k}"] = f[k]
            rec.update(self.recovery.event_figures(self.timeline))
        return {
            **rec,
            "db_util_max": max((d["utilisation"] for d in db), default=0.0),
            "db_util_mean": _mean([d["utilisation"] for d in db]),
            "db_qd_mean": _mean([d["mean_queue_depth"] for d in db]),
            "db_iops": _mean([sum(d["completed"].values()) / span for d in db]),
            "data_util_max": max((d["utilisation"] for d in drives), default=0.0),
            "data_util_mean": _mean([d["utilisation"] for d in drives]),
            "data_qd_mean": _mean([d["mean_queue_depth"] for d in drives]),
            "kv_commit_ms": 1e3 * _mean([b["kv_commit_s"] for b in bss if b["kv_batches"]]),
            "deferred_txcs_mean": _mean([b["deferred_txcs_in_flight"] for b in bss]),
            "throttled_share": sum(b["throttled_writes"] for b in stores) / writes if writes else 0.0,
            "cpu_util_max": max((h.cpu.utilisation() for h in self.hosts), default=0.0),
            **({
                "journal_write_ms": 1e3 * _mean([f["journal_write_s"] for f in fss if f["journal_writes"]]),
                "journal_entries_per_write": _mean([f["journal_entries_per_write"] for f in fss if f["journal_writes"]]),
                "journal_used_max": max(f["journal_used_peak"] / f["journal_capacity"] for f in fss),
                "journal_full_waits": sum(f["journal_full_waits"] for f in fss),
                "sync_s": _mean([f["sync_s"] for f in fss if f["syncs"]]),
                "wb_dirty_ios_mean": _mean([f["wb_dirty_ios"] for f in fss]),
            } if fss else {}),
        }

    def stats(self) -> dict[str, Any]:
        """Per-OSD PG counts and load, per-host CPU/NIC utilisation, per-pool placement summary."""
        counts = self.pg_counts()
        osds = []
        for o in self.osds:
            s = o.stats()
            s.update(counts[o.id])
            osds.append(s)
        pools = {}
        for name, pool in self.pools.items():
            tot: Counter[int] = Counter()
            pri: Counter[int] = Counter()
            for pg in pool.pgs:
                for i, o in enumerate(pg.acting):
                    tot[o.id] += 1
                    if i == 0:
                        pri[o.id] += 1
            pools[name] = {
                "id": pool.id,
                "size": pool.size,
                "min_size": pool.min_size,
                "pg_num": pool.pg_num,
                "pgs_per_osd": dict(sorted(tot.items())),
                "primary_pgs_per_osd": dict(sorted(pri.items())),
                "undersized_pgs": sum(1 for pg in pool.pgs if len(pg.acting) < pool.size),
                "inactive_pgs": sum(1 for pg in pool.pgs if pg.ppos < 0),
                "upmap_moves": pool.upmap_moves,
                **({"type": "erasure", "k": pool.ec.k, "m": pool.ec.m, "ec": pool.ec_stats.as_dict()} if pool.ec is not None else {}),
            }
        return {
            "path": self.path,
            "window_s": self.env.now - getattr(self, "_t0", 0.0),
            "summary": self.summary(osds),
            "osds": osds,
            "hosts": {h.name: h.stats() for h in self.hosts},
            "client": self.client.stats(),
            **({"clients": {n: h.stats() for n, (h, _) in self.clients.items()}} if len(self.clients) > 1 else {}),
            **({"krbd": {n: d.stats() for n, d in self.krbd.items()}} if self.krbd else {}),
            "pools": pools,
            "images": {f"{p}/{n}": img.stats() for (p, n), img in self.images.items()},
            **({"recovery": self.recovery.stats(self.timeline, getattr(self, "_t0", 0.0))} if self.recovery is not None else {}),
            **({"autotune": self.autotune.stats()} if self.autotune is not None else {}),
        }


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def build_cluster(cfg: ClusterConfig, name: str, parent: Component) -> Cluster:
    return Cluster(cfg, name, parent)


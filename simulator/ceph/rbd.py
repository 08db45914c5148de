"""An RBD image as a :class:`~simulator.devices.base.Device`: what fio's rbd engine drives.

fio (ioengine=rbd) calls rbd_aio_read/rbd_aio_write on the image for each IO and keeps ``iodepth``
of them in flight; the workload layer does that by submitting requests to this device. librbd maps
the byte range onto objects (format 2, no fancy striping: object number = offset >> order, object
``rbd_data.<id>.<016x objno>``), a request spanning objects becomes one object op per object and
completes when all have. Each object op costs ``client.submit_cost`` of client CPU, travels over
the client's NIC to the PG's primary OSD and back (``client.complete_cost`` on arrival).
FLUSH (rbd_aio_flush) costs client CPU only: with the default write-through librbd cache there
is nothing dirty to flush.
"""

from __future__ import annotations

import hashlib
from array import array
from typing import TYPE_CHECKING, Any

import numpy as np

from simulator.ceph.ec import EC_CLIENT, EcOp, shard_size
from simulator.ceph.hashing import rbd_object_hashes
from simulator.ceph.osd import CLIENT, ObjOp
from simulator.ceph.resources import call_at, then
from simulator.devices.base import Device, Op, Request

if TYPE_CHECKING:
    from simulator.ceph.cluster import Cluster, Pool
    from simulator.ceph.config import ImageConfig

__all__ = ["RbdImage", "default_image_id"]

_FLUSH = int(Op.FLUSH)
_WRITE = int(Op.WRITE)


def default_image_id(pool: str, name: str) -> str:
    """A stable 12-hex-digit image id (real ids come from the client's instance id)."""
    return hashlib.blake2b(f"{pool}/{name}".encode(), digest_size=6).hexdigest()


class RbdImage(Device):
    def __init__(self, name: str, parent: Any, cluster: Cluster, pool: Pool, cfg: ImageConfig, index: int):
        super().__init__(name, parent, capacity=cfg.size, sector_size=512)
        self.cluster = cluster
        self.pool = pool
        self.cfg = cfg
        self.image_name = cfg.name
        self.order = cfg.order
        self.obj_size = 1 << cfg.order
        #: bytes of an object on each acting-set OSD: the object (replicated) or one shard (erasure-coded)
        self.shard_size = shard_size(pool, self.obj_size)
        #: the role of a client op: CLIENT (replicated, the OSD's own path) or EC_CLIENT (simulator.ceph.ec)
        self.client_role = CLIENT if pool.ec is None else EC_CLIENT
        self.op_class = ObjOp if pool.ec is None else EcOp
        #: the client host driving the image and its config (set by the cluster: ``client`` of the image)
        self.client = cluster.client
        self.client_cfg = cluster.cfg.client
        self.n_objects = -(-cfg.size // self.obj_size)
        self.id = cfg.id or default_image_id(pool.name, cfg.name)
        self.key_base = (index + 1) << 36
        h = rbd_object_hashes(self.id, self.n_objects)
        mask = np.uint32(pool.pg_num_mask)
        m = h & mask
        ps = np.where(m < pool.pg_num, m, h & (mask >> np.uint32(1))).astype(np.int32)
        del h, m
        # object -> PG: 4 bytes per object (array.array indexes to Python ints fast on the per-IO
        # path; obj_ps_array is a numpy view of the same memory)
        self.obj_ps: array = array("i", ps.tobytes())
        self.obj_ps_array = np.frombuffer(self.obj_ps, dtype=np.int32)
        # device offset of each object's data on each acting-set position; -1 = not allocated
        self.obj_base = np.full((self.n_objects, pool.size), -1, dtype=np.int64)

    def reset_stats(self) -> None:
        """A new statistics window for the image, and for the cluster behind it (fio resets the
        job's devices at the end of ramp_time: the cluster's utilisations then cover the same
        window as the job's IOPS)."""
        super().reset_stats()
        cl = getattr(self, "cluster", None)
        if cl is not None and not cl.resetting:
            cl.reset_stats()

    def object_name(self, objno: int) -> str:
        return f"rbd_data.{self.id}.{objno:016x}"

    def pg_of(self, offset: int) -> Any:
        return self.pool.pgs[self.obj_ps[offset >> self.order]]

    # ------------------------------------------------------------------ Device interface
    def _start(self, req: Request) -> None:
        cl = self.cluster
        client = self.client
        now = self.env._now
        if now >= cl.next_tune:  # BlueStore cache autotuning is due (never without autotune: inf)
            cl.autotune.tick(now)
            cl.next_tune = cl.autotune.next
        kind = req.op
        ccfg = self.client_cfg
        cost = ccfg.submit_cost
        if kind == _WRITE:
            cost += ccfg.cost_per_byte * req.size + ccfg.write_cost
        if kind == _FLUSH or req.size <= 0:
            self._complete_after(req, client.cpu.book(now, cost) - now)
            return
        self.check_range(req)
        order = self.order
        off = req.offset
        end = off + req.size
        first = off >> order
        last = (end - 1) >> order
        pgs = self.pool.pgs
        obj_ps = self.obj_ps
        tracing = cl.tracer is not None
        if first == last:
            op = self.op_class(kind, self.client_role, pgs[obj_ps[first]], self, first, off - (first << order), req.size)
            op.req = req
            op.t0 = now
            if tracing:
                op.commits = []
            then(client.cpu, client.cpu.book(now, cost), cl.send_client_op, op)
            return
        group = [last - first + 1, req]
        osz = self.obj_size
        for objno in range(first, last + 1):
            lo = max(off, objno << order)
            hi = min(end, (objno << order) + osz)
            op = self.op_class(kind, self.client_role, pgs[obj_ps[objno]], self, objno, lo - (objno << order), hi - lo)
            op.req = req
            op.group = group
            op.t0 = now
            if tracing:
                op.commits = []
            then(client.cpu, client.cpu.book(now, cost), cl.send_client_op, op)

    def complete_op(self, op: ObjOp, t: float) -> None:
        """The reply for ``op`` has been processed by the client at time ``t``."""
        if op.group is None:
            self._complete_after(op.req, t - self.env._now)
        else:
            call_at(self.env, t, self._extent_done, op)

    def _extent_done(self, ev: Any) -> None:
        g = ev._value.group
        g[0] -= 1
        if g[0] == 0:
            self._complete_after(g[1], 0.0)

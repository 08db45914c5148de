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
import math
from array import array
from typing import TYPE_CHECKING, Any

import numpy as np
from numba import njit

from simulator.ceph.ec import EC_CLIENT, EcOp, shard_size
from simulator.ceph.hashing import rbd_object_hashes
from simulator.ceph.osd import CLIENT, ObjOp
from simulator.ceph.resources import CpuThread, call_at, then
from simulator.devices.base import Device, Op, Request

if TYPE_CHECKING:
    from simulator.ceph.cluster import Cluster, Pool
    from simulator.ceph.config import ImageConfig

__all__ = ["BaseTable", "RbdImage", "alloc_unit", "default_image_id"]

_FLUSH = int(Op.FLUSH)
_WRITE = int(Op.WRITE)


#: the largest entry of a 4-byte location table (allocation units); devices needing more use 8 bytes
_I32_MAX = (1 << 31) - 1
_FILESTORE_UNIT = 4096  # FileStore allocates files in 4 KiB pages from 1 MiB-aligned regions


def alloc_unit(store: Any) -> int:
    """The allocation granularity of an object store in bytes: every data offset its ``alloc`` /
    ``alloc_many`` return is a multiple of it (BlueStore: min_alloc_size, from a min_alloc_size-aligned
    start; FileStore: 4 KiB pages)."""
    if store.KIND == "bluestore":
        return int(store.cfg.min_alloc_size)
    return _FILESTORE_UNIT


def default_image_id(pool: str, name: str) -> str:
    """A stable 12-hex-digit image id (real ids come from the client's instance id)."""
    return hashlib.blake2b(f"{pool}/{name}".encode(), digest_size=6).hexdigest()


class BaseTable:
    """Where each object of an image has its data on each acting-set position's device: one entry per
    (object, position), in allocation units of the cluster's object stores (the gcd of their units)
    rather than bytes, so 4 bytes an entry instead of 8 while the largest device has at most 2^31 - 1
    units (8 TiB at 4 KiB, 128 TiB at 64 KiB), 8 bytes beyond. -1: not allocated. The entries live in
    an array.array (indexing yields Python ints fast on the per-IO path) with a numpy view of the same
    memory for bulk accesses. Every access goes through the methods, which take and give bytes and
    refuse offsets that are negative, not multiples of the unit or not below the largest device."""

    def __init__(self, n_objects: int, width: int, unit: int, limit: int, name: str = "image"):
        if unit <= 0 or limit <= 0:
            raise ValueError(f"{name}: allocation unit {unit} and device limit {limit} must be positive")
        self.name = name
        self.n_objects = n_objects
        self.width = width
        #: bytes per table unit: every stored offset is a multiple
        self.unit = unit
        #: every stored offset is below this (bytes): the largest device's capacity
        self.limit = limit
        #: "i" (4-byte entries) or "q" (8-byte: the largest device has more than 2^31 - 1 units)
        self.code = "i" if -(-limit // unit) <= _I32_MAX else "q"
        self._tab = array(self.code, [-1]) * (n_objects * width)
        self._np = np.frombuffer(self._tab, dtype=np.int32 if self.code == "i" else np.int64).reshape(n_objects, width)

    @classmethod
    def for_stores(cls, n_objects: int, width: int, stores: list[Any], name: str = "image") -> BaseTable:
        """A table whose unit and limit suit every store in ``stores`` (an object may move to any OSD)."""
        stores = [bs for bs in stores if bs is not None]
        unit = 0
        for bs in stores:
            unit = math.gcd(unit, alloc_unit(bs))
        limit = max((bs.dev.capacity for bs in stores), default=1 << 62)
        return cls(n_objects, width, unit or _FILESTORE_UNIT, limit, name)

    @property
    def nbytes(self) -> int:
        return self._np.nbytes

    def _index(self, objno: int, pos: int) -> int:
        if 0 <= objno < self.n_objects and 0 <= pos < self.width:
            return objno * self.width + pos
        raise IndexError(f"{self.name}: no object {objno} position {pos} ({self.n_objects} objects x {self.width})")

    def _bad(self, base: int) -> ValueError:
        why = ("negative" if base < 0 else f"not a multiple of the allocation unit {self.unit}" if base % self.unit
               else f"not below the largest OSD device's capacity ({self.limit} bytes)")
        return ValueError(f"{self.name}: device offset {base} is {why}")

    def base_of(self, objno: int, pos: int) -> int:
        """Device offset (bytes) of object ``objno``'s data at acting-set position ``pos``; -1: not allocated."""
        if 0 <= objno < self.n_objects and 0 <= pos < self.width:  # _index inlined: the per-IO path
            u = self._tab[objno * self.width + pos]
            return u * self.unit if u >= 0 else -1
        raise IndexError(f"{self.name}: no object {objno} position {pos} ({self.n_objects} objects x {self.width})")

    def set_base(self, objno: int, pos: int, base: int) -> None:
        """Object ``objno``'s data at position ``pos`` is at device offset ``base`` (bytes)."""
        i = self._index(objno, pos)
        q, r = divmod(base, self.unit)
        if base < 0 or r or base >= self.limit:
            raise self._bad(base)
        self._tab[i] = q

    def exists(self, objno: int) -> bool:
        """Whether object ``objno`` has data at any acting-set position."""
        i = self._index(objno, 0)
        return max(self._tab[i : i + self.width]) >= 0

    def allocated(self) -> np.ndarray:
        """Per object, whether it has data at any acting-set position (bool array)."""
        return self._np.max(axis=1) >= 0

    def any_allocated(self) -> bool:
        """Whether any object has data anywhere (one pass over the table, no copy)."""
        return bool(self._np.size) and int(self._np.max()) >= 0

    def bases(self, rows: Any = slice(None)) -> np.ndarray:
        """Device offsets (bytes, int64, -1: not allocated) of the objects ``rows`` (a numpy index of
        objects) at every position: a copy of shape (objects, width)."""
        u = self._np[rows].astype(np.int64)
        return np.where(u >= 0, u * self.unit, -1)

    def encode_bases(self, offs: Any, out: np.ndarray | None = None) -> np.ndarray:
        """Byte offsets (-1: not allocated) as table entries (units, the table's dtype), into ``out`` if
        given (written only once every offset passed). Checked in a few passes (the pre-fill encodes
        every replica): bounds by min/max; alignment, for a power-of-two unit, by OR-ing the offsets
        (-1 floors to -1 under the shift and the division)."""
        b = np.asarray(offs, dtype=np.int64)
        unit = self.unit
        if b.size:
            lo, hi = int(b.min()), int(b.max())
            if lo < -1 or hi >= self.limit:
                raise self._bad(lo if lo < -1 else hi)
            pos = b if lo >= 0 else b[b >= 0]
            if unit & (unit - 1) == 0:
                misaligned = pos.size and int(np.bitwise_or.reduce(pos, axis=None)) & (unit - 1)
            else:
                misaligned = (pos % unit).any()
            if misaligned:
                raise self._bad(int(pos[pos % unit != 0].flat[0]))
        if out is None:
            out = np.empty(b.shape, dtype=self._np.dtype)
        if unit & (unit - 1) == 0:
            np.right_shift(b, unit.bit_length() - 1, out=out, casting="unsafe")
        else:
            np.floor_divide(b, unit, out=out, casting="unsafe")
        return out

    def set_bases(self, rows: Any, offs: Any) -> None:
        """Set the offsets (bytes, -1: not allocated) of the objects ``rows`` at every position (``offs``
        broadcast to the shape of ``bases(rows)``). A slice of rows is written in place (no encoded copy
        of the whole table: the compiled core's write-back sets every row)."""
        if isinstance(rows, slice):
            self.encode_bases(offs, out=self._np[rows])
        else:
            self._np[rows] = self.encode_bases(offs)

    def set_bases_flat(self, idx: np.ndarray, offs: np.ndarray) -> None:
        """Set entries ``idx`` of the flattened (object, position) table (C order) to ``offs`` (bytes)."""
        self._np.reshape(-1)[idx] = self.encode_bases(offs)

    def set_bases_filled(self, where: np.ndarray, plans: dict[int, tuple[int, int, int, int, int]]) -> None:
        """The pre-fill's table in one pass in table order: ``where`` gives the OSD of each entry of the
        flattened (object, position) table (C order; -1: none, the entry is left as it is); ``plans``
        each OSD's sequential fill (base, step, k, jump, count: ``BlueStore.alloc_plan`` and its
        ``count`` entries), the OSD's r-th entry in table order taking allocation r. The entries
        ``set_bases_flat`` gives with each OSD's entries and ``alloc_many`` offsets, without random
        writes over the table; checked as ``encode_bases`` checks offsets (an OSD's fill rises, so its
        first and last allocations bound it; whole units when base, step and jump are)."""
        no = max(plans, default=-1) + 1
        cols = np.zeros((4, no), np.int64)
        unit = self.unit
        for o, (base, n, k, jump, count) in plans.items():
            last = base + (count - 1) * n + (jump if k < count else 0)
            if base % unit or n % unit or jump % unit or base < 0 or last >= self.limit:
                from simulator.ceph.store import fill_offsets

                self.encode_bases(fill_offsets(base, count, n, k, jump))  # the pre-fill's own error
                raise ValueError(f"{self.name}: a fill of {count} x {n} bytes from {base} is not in whole units of {unit}")
            cols[:, o] = (base // unit, n // unit, k, jump // unit)
        _fill_table(where, self._np.reshape(-1), cols, np.zeros(no, np.int64))


@njit(cache=True)
def _fill_table(where, tab, cols, rank):  # pragma: no cover - compiled
    """``tab[i]`` = OSD ``where[i]``'s next allocation in units (its fill ``cols[:, o]``: base, step, k,
    jump), entries in table order; ``rank`` counts each OSD's entries so far (zeros)."""
    for i in range(where.shape[0]):
        o = where[i]
        if o < 0:
            continue
        r = rank[o]
        rank[o] = r + 1
        u = cols[0, o] + r * cols[1, o]
        if r >= cols[2, o]:
            u += cols[3, o]
        tab[i] = u


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
        #: the client's threads for this image under the per-thread wakeup rule (set with ``client``)
        self.th_submit: CpuThread | None = None
        self.th_complete: CpuThread | None = None
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
        # where each object's data lies on each acting-set position's device (the accessors below)
        t = self.base_table = BaseTable.for_stores(self.n_objects, pool.size, [o.bs for o in cluster.osds], cfg.name)
        self.base_of = t.base_of
        self.set_base = t.set_base
        self.exists = t.exists
        self.allocated = t.allocated
        self.bases = t.bases
        self.encode_bases = t.encode_bases
        self.set_bases = t.set_bases
        self.set_bases_flat = t.set_bases_flat

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
            self._complete_after(req, client.cpu.run(self.th_submit, now, cost) - now)
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
            then(client.cpu, client.cpu.run(self.th_submit, now, cost), cl.send_client_op, op)
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
            then(client.cpu, client.cpu.run(self.th_submit, now, cost), cl.send_client_op, op)

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

"""BlueStore of one OSD: deferred (WAL) writes, direct writes to new allocations, group commit by
the kv_sync thread, batched deferred apply, the deferred-bytes throttle, buffer and onode caches.

Write of ``length`` bytes (after the OSD has prepared the transaction on its CPU):

* ``length <= prefer_deferred_size`` (deferred): the data goes into the RocksDB WAL record of the
  transaction. The transaction is committed (and acknowledged) by the next kv_sync batch: a WAL
  append (all queued transactions of the batch in one write, block-aligned, rewriting the partial
  tail block as BlueFS does) followed by a FLUSH of the WAL device. After commit the data is
  queued for the *deferred apply*: once ``deferred_batch_ops`` are pending they are written in
  place (sorted by offset, adjacent extents merged), competing with foreground IO. When a batch
  has been written, the next kv batch first flushes the data device and then deletes the WAL
  records (``kv_cleanup_bytes`` each).
* larger writes: the data is written to a newly allocated extent (min_alloc_size units, no FUA);
  when that IO is done the transaction joins the kv queue; the kv batch flushes the data device
  before its WAL append (``flush_before_commit``) so metadata never points at volatile data.

Transactions of one PG (Ceph's OpSequencer) enter the kv queue in submission order, so commits of
one PG are in order. kv_sync is one thread: transactions arriving while a batch is being written
wait for the next one (group commit).

Reads look up the data buffer cache (2Q or LRU, per read unit) and the onode cache; a data miss is
a device read of the aligned range (preceded by a DB read when the onode is missing).

Device layout (one OSD's device, no separate DB device): data is allocated upwards from
``min_alloc_size``; the BlueFS extent (WAL ring + DB) sits at ``bluefs_position`` of the device,
and allocations skip it.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from simulator.ceph.cache import LruCache, make_cache
from simulator.ceph.resources import call_later
from simulator.devices.base import Device, Op, Request
from simulator.engine import Component

if TYPE_CHECKING:
    from simulator.ceph.config import BlueStoreConfig

__all__ = ["BlueStore", "Txc"]

_WRITE = int(Op.WRITE)
_READ = int(Op.READ)
_FLUSH = int(Op.FLUSH)
_TRIM = int(Op.TRIM)

BLOCK_BITS = 17  # block index bits in a cache key (objects up to 2^26 bytes at 512-byte units)


class Txc:
    """A BlueStore transaction (one write/trim of one object on one OSD)."""

    __slots__ = ("cb", "dlen", "doff", "had_io", "io_done", "op", "osr", "wal_bytes")

    def __init__(self, op: Any, cb: Any, osr: deque):
        self.op = op
        self.cb = cb
        self.osr = osr
        self.wal_bytes = 0
        self.doff = -1  # deferred data: device offset (-1 = none)
        self.dlen = 0
        self.had_io = False
        self.io_done = False


def _align_up(x: int, a: int) -> int:
    return -(-x // a) * a


class BlueStore(Component):
    def __init__(
        self,
        name: str,
        parent: Component,
        cfg: BlueStoreConfig,
        device: Device,
        wal_device: Device | None = None,
        wal_base: int = 0,
        wal_space: int = 0,
    ):
        super().__init__(name, parent)
        self.cfg = cfg
        self.dev = device
        bs = cfg.block_size
        self.block = bs
        cap = device.capacity
        if wal_device is None:
            # BlueFS extent inside the main device
            size = min(cfg.bluefs_size, cap // 4)
            size = max(size - size % (1 << 20), bs * 16)
            start = int((cap - size) * cfg.bluefs_position)
            start -= start % (1 << 20)
            self.bluefs_start, self.bluefs_end = start, start + size
            self.wal_dev = device
            self.wal_base = start
            ring = min(cfg.wal_size, size // 2)
        else:
            self.bluefs_start = self.bluefs_end = -1
            self.wal_dev = wal_device
            self.wal_base = wal_base
            ring = min(cfg.wal_size, wal_space // 2)
            size = wal_space
        self.wal_ring = max(ring - ring % bs, bs * 8)
        self.db_base = self.wal_base + self.wal_ring
        self.db_span = max(bs, (self.wal_base + size) - self.db_base - bs)
        self.same_device = self.wal_dev is device
        self.data_start = _align_up(8192, cfg.min_alloc_size)
        self.cursor = self.data_start  # next allocation
        self.allocated = 0
        self.wal_pos = 0
        # caches
        self.unit = cfg.read_unit
        cc = cfg.cache
        self.cache = make_cache(cc.policy, cc.size // self.unit, cc.kin_ratio, cc.kout_ratio)
        self.onodes = LruCache(cfg.onode_cache_size)
        self.buffered_read = cc.buffered_read
        self.buffered_write = cc.buffered_write
        #: blocks of deferred writes not yet applied: readable from their 'writing' buffers
        self.writing: dict[int, int] = {}
        # kv sync
        self.kv_queue: list[Txc] = []
        self.kv_busy = False
        self._kv_batch: list[Txc] = []
        self._kv_bytes = 0
        self.cleanup_pending = 0
        # deferred
        self.deferred_pending: list[Txc] = []
        self.deferred_bytes = 0  # throttle: admitted, not yet applied
        self.throttle_waiters: deque = deque()
        self._timer_armed = False
        self.osrs: dict[Any, deque] = {}
        self.reset_stats()

    # ------------------------------------------------------------------ allocation
    def alloc(self, nbytes: int) -> int:
        """Allocate ``nbytes`` (rounded to min_alloc_size) of data space; returns the device offset."""
        a = self.cfg.min_alloc_size
        n = _align_up(nbytes, a)
        cap = self.dev.capacity
        off = self.cursor
        if self.bluefs_start >= 0 and off < self.bluefs_end and off + n > self.bluefs_start:
            off = _align_up(self.bluefs_end, a)
        if off + n > cap:
            off = self.data_start  # wrap: reuse space freed by copy-on-write
            if self.bluefs_start >= 0 and off + n > self.bluefs_start and off < self.bluefs_end:
                off = _align_up(self.bluefs_end, a)
        self.cursor = off + n
        self.allocated += n
        return off

    def alloc_many(self, count: int, nbytes: int) -> np.ndarray:
        """``count`` consecutive allocations of ``nbytes`` (a sequential fill), vectorised.
        Raises ValueError if they do not fit without wrapping."""
        a = self.cfg.min_alloc_size
        n = _align_up(nbytes, a)
        offs = self.cursor + np.arange(count, dtype=np.int64) * n
        if self.bluefs_start >= 0 and count:
            cross = np.nonzero((offs + n > self.bluefs_start) & (offs < self.bluefs_end))[0]
            if cross.size:
                k = int(cross[0])
                offs[k:] += _align_up(self.bluefs_end, a) - int(offs[k])
        end = int(offs[-1]) + n if count else self.cursor
        if end > self.dev.capacity:
            raise ValueError(
                f"{count} x {n} bytes need {end} bytes of a {self.dev.capacity}-byte device"
            )
        self.cursor = end
        self.allocated += count * n
        return offs

    def data_capacity(self) -> int:
        cap = self.dev.capacity - self.data_start
        if self.bluefs_start >= 0:
            cap -= self.bluefs_end - self.bluefs_start
        return cap

    # ------------------------------------------------------------------ statistics
    def reset_stats(self) -> None:
        self.kv_batches = 0
        self.kv_txcs = 0
        self.deferred_batches = 0
        self.deferred_ops = 0
        self.deferred_ios = 0
        self.direct_writes = 0
        self.throttled = 0
        self.cache.hits = self.cache.misses = 0
        self.onodes.hits = self.onodes.misses = 0

    def stats(self) -> dict[str, Any]:
        lookups = self.cache.hits + self.cache.misses
        ol = self.onodes.hits + self.onodes.misses
        return {
            "kv_batches": self.kv_batches,
            "kv_txcs_per_batch": self.kv_txcs / self.kv_batches if self.kv_batches else 0.0,
            "deferred_ops": self.deferred_ops,
            "deferred_batches": self.deferred_batches,
            "deferred_ios": self.deferred_ios,
            "deferred_bytes_in_flight": self.deferred_bytes,
            "direct_writes": self.direct_writes,
            "throttled_writes": self.throttled,
            "cache_hit_ratio": self.cache.hits / lookups if lookups else 0.0,
            "cache_buffers": len(self.cache),
            "onode_hit_ratio": self.onodes.hits / ol if ol else 0.0,
        }

    # ------------------------------------------------------------------ reads
    def probe_read(self, objkey: int, off: int, length: int) -> bool:
        """True if every read unit of [off, off+length) of the object is in the buffer cache."""
        u = self.unit
        base = objkey << BLOCK_BITS
        keys = range(base + off // u, base + (off + length - 1) // u + 1)
        c = self.cache
        w = self.writing
        if c.contains_all(keys):
            c.touch_all(keys)
            c.hits += 1
            return True
        if w and all(k in w or k in c for k in keys):
            c.hits += 1
            return True
        c.misses += 1
        return False

    def probe_onode(self, objkey: int) -> bool:
        return self.onodes.lookup(objkey)

    def read(self, op: Any, base: int, onode_hit: bool, cb: Any) -> None:
        """Device read(s) for a cache miss: [DB read for the onode,] data read; then ``cb(op)``."""
        u = self.unit
        off = op.off
        first = off // u
        last = (off + op.length - 1) // u
        req = Request(_READ, base + first * u, (last - first + 1) * u, tag=op)
        if not onode_hit:
            self.onodes.insert(op.objkey)
            if self.cfg.onode_miss_read > 0:
                db = Request(_READ, self._db_offset(), _align_up(self.cfg.onode_miss_read, self.block), tag=(req, cb))
                self.wal_dev.submit(db).callbacks.append(self._onode_read_done)
                return
        req.parent = cb  # completion callback kept on the request (no closure)
        self.dev.submit(req).callbacks.append(self._read_done)

    def read_onode(self, op: Any, cb: Any) -> None:
        """Load a missed onode (a DB read), then ``cb(op)``."""
        self.onodes.insert(op.objkey)
        db = Request(_READ, self._db_offset(), _align_up(self.cfg.onode_miss_read, self.block), tag=op)
        db.parent = cb
        self.wal_dev.submit(db).callbacks.append(self._onode_only_done)

    def _onode_only_done(self, ev: Any) -> None:
        req = ev._value
        req.parent(req.tag)

    def _db_offset(self) -> int:
        b = self.block
        return self.db_base + int(self.rand.random() * (self.db_span // b)) * b

    def _onode_read_done(self, ev: Any) -> None:
        req, cb = ev._value.tag
        req.parent = cb
        self.dev.submit(req).callbacks.append(self._read_done)

    def _read_done(self, ev: Any) -> None:
        req = ev._value
        op = req.tag
        if self.buffered_read:
            u = self.unit
            off = op.off
            base = op.objkey << BLOCK_BITS
            ins = self.cache.insert
            for k in range(base + off // u, base + (off + op.length - 1) // u + 1):
                ins(k)
        req.parent(op)

    # ------------------------------------------------------------------ writes
    def admit(self, op: Any, resume: Any) -> bool:
        """Deferred-bytes throttle. True = go on; False = the caller (an op thread) blocks and
        ``resume(op)`` is called once there is room."""
        if op.length > self.cfg.prefer_deferred_size or op.kind != _WRITE:
            return True
        bs = self.block
        n = _align_up(op.off + op.length, bs) - (op.off - op.off % bs)
        if self.deferred_bytes == 0 or self.deferred_bytes + n <= self.cfg.throttle_deferred_bytes:
            self.deferred_bytes += n
            return True
        self.throttled += 1
        self.throttle_waiters.append((op, resume, n))
        # deferred_aggressive: submit whatever is pending right away
        if self.deferred_pending:
            self._deferred_submit()
        return False

    def _wake_throttled(self) -> None:
        w = self.throttle_waiters
        limit = self.cfg.throttle_deferred_bytes
        while w and (self.deferred_bytes == 0 or self.deferred_bytes + w[0][2] <= limit):
            op, resume, n = w.popleft()
            self.deferred_bytes += n
            resume(op)

    def write(self, op: Any, base: int, osr_key: Any, cb: Any) -> None:
        """Queue the transaction of a write/trim of ``op`` (object at device offset ``base``);
        ``cb(op)`` when it is committed."""
        cfg = self.cfg
        osr = self.osrs.get(osr_key)
        if osr is None:
            osr = self.osrs[osr_key] = deque()
        txc = Txc(op, cb, osr)
        osr.append(txc)
        length = op.length
        off = op.off
        # the written range leaves the buffer cache (or replaces it when buffered writes are on)
        u = self.unit
        kbase = op.objkey << BLOCK_BITS
        c = self.cache
        if self.buffered_write and op.kind == _WRITE:
            for k in range(kbase + off // u, kbase + (off + length - 1) // u + 1):
                c.insert(k)
        elif len(c):
            for k in range(kbase + off // u, kbase + (off + length - 1) // u + 1):
                c.discard(k)
        if op.kind == _TRIM or length == 0:
            txc.wal_bytes = cfg.kv_txc_bytes
            txc.io_done = True
        elif length <= cfg.prefer_deferred_size:
            bs = self.block
            a = off - off % bs
            dlen = _align_up(off + length, bs) - a
            txc.doff = base + a
            txc.dlen = dlen
            txc.wal_bytes = cfg.kv_txc_bytes + dlen
            txc.io_done = True
            w = self.writing
            for k in range(kbase + off // u, kbase + (off + length - 1) // u + 1):
                w[k] = w.get(k, 0) + 1
        else:
            new = self.alloc(length)
            if off == 0 and length >= op.obj_size:
                op.relocate(new)
            txc.wal_bytes = cfg.kv_txc_bytes
            txc.had_io = True
            self.direct_writes += 1
            req = Request(_WRITE, new, _align_up(length, self.block), tag=txc)
            self.dev.submit(req).callbacks.append(self._direct_done)
            return
        if osr[0] is txc:
            osr.popleft()
            self.kv_queue.append(txc)
            if not self.kv_busy:
                self._kv_start()
        # else: an earlier txc of this PG is still writing data; it will push this one

    def _direct_done(self, ev: Any) -> None:
        txc = ev._value.tag
        txc.io_done = True
        osr = txc.osr
        q = self.kv_queue
        while osr and osr[0].io_done:
            q.append(osr.popleft())
        if q and not self.kv_busy:
            self._kv_start()

    # ------------------------------------------------------------------ kv_sync thread
    def _kv_start(self) -> None:
        batch = self.kv_queue
        self.kv_queue = []
        cleanup = self.cleanup_pending
        self.cleanup_pending = 0
        self.kv_busy = True
        self._kv_batch = batch
        nbytes = cleanup * self.cfg.kv_cleanup_bytes
        flush = cleanup > 0
        for t in batch:
            nbytes += t.wal_bytes
            if t.had_io:
                flush = True
        self._kv_bytes = nbytes
        self.kv_batches += 1
        self.kv_txcs += len(batch)
        if flush and self.cfg.flush_before_commit:
            self.dev.submit(Request(_FLUSH)).callbacks.append(self._kv_write)
        else:
            self._kv_write(None)

    def _kv_write(self, ev: Any) -> None:
        bs = self.block
        pos = self.wal_pos
        nb = max(self._kv_bytes, 1)
        start = pos - pos % bs if self.cfg.wal_rewrite_tail else _align_up(pos, bs)
        end = _align_up(start + (pos - start if pos > start else 0) + nb, bs)
        self.wal_pos = (pos if pos > start else start) + nb
        ring = self.wal_ring
        rel = start % ring
        n = end - start
        if rel + n > ring:  # wrap to the start of the ring (next recycled log file)
            rel = 0
            self.wal_pos = n
        self.wal_dev.submit(Request(_WRITE, self.wal_base + rel, n)).callbacks.append(self._kv_flush)

    def _kv_flush(self, ev: Any) -> None:
        self.wal_dev.submit(Request(_FLUSH)).callbacks.append(self._kv_done)

    def _kv_done(self, ev: Any) -> None:
        batch = self._kv_batch
        self._kv_batch = []
        self.kv_busy = False
        pend = self.deferred_pending
        for t in batch:
            if t.doff >= 0:
                pend.append(t)
            t.cb(t.op)
        if pend:
            if len(pend) >= self.cfg.deferred_batch_ops or self.throttle_waiters:
                self._deferred_submit()
            elif self.cfg.deferred_max_interval is not None and not self._timer_armed:
                self._timer_armed = True
                call_later(self.env, self.cfg.deferred_max_interval, self._deferred_timer, None)
        if (self.kv_queue or self.cleanup_pending) and not self.kv_busy:
            self._kv_start()

    # ------------------------------------------------------------------ deferred apply
    def _deferred_timer(self, ev: Any) -> None:
        self._timer_armed = False
        if self.deferred_pending:
            self._deferred_submit()

    def _deferred_submit(self) -> None:
        batch = self.deferred_pending
        self.deferred_pending = []
        self.deferred_batches += 1
        self.deferred_ops += len(batch)
        ext: list[list[int]] = []
        for off, n in sorted((t.doff, t.dlen) for t in batch):
            if ext and off <= ext[-1][0] + ext[-1][1]:
                last = ext[-1]
                last[1] = max(last[1], off + n - last[0])
            else:
                ext.append([off, n])
        state = [len(ext), batch]
        self.deferred_ios += len(ext)
        dev = self.dev
        for off, n in ext:
            dev.submit(Request(_WRITE, off, n, tag=state)).callbacks.append(self._deferred_io_done)

    def _deferred_io_done(self, ev: Any) -> None:
        state = ev._value.tag
        state[0] -= 1
        if state[0]:
            return
        batch = state[1]
        freed = sum(t.dlen for t in batch)
        w = self.writing
        u = self.unit
        for t in batch:  # the deferred data is on disk: its writing buffers go
            op = t.op
            kbase = op.objkey << BLOCK_BITS
            for k in range(kbase + op.off // u, kbase + (op.off + op.length - 1) // u + 1):
                n = w.get(k, 0) - 1
                if n > 0:
                    w[k] = n
                else:
                    w.pop(k, None)
        self.deferred_bytes -= freed
        if self.deferred_bytes < 0:
            self.deferred_bytes = 0
        self.cleanup_pending += len(batch)
        if self.throttle_waiters:
            self._wake_throttled()
        if not self.kv_busy:
            self._kv_start()

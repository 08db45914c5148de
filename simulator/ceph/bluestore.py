"""BlueStore of one OSD (Nautilus): deferred (WAL) writes, direct writes to new allocations, the two
throttles, group commit by the kv_sync thread, deferred apply per OpSequencer, buffer and onode caches.

Write of ``length`` bytes (after the OSD has prepared the transaction on its CPU):

* **Throttles** (``queue_transactions``, in the op thread, which blocks while it waits): the txc
  cost is ``(1 + data IOs) x throttle_cost_per_io + bytes`` (670000 per IO for an HDD, so a 4 KiB
  deferred write costs ~674 KB). ``throttle_bytes`` (64 MiB: ~99 such txcs) is held from submission
  until kv_sync takes the txc into a commit batch. A deferred write also needs
  ``throttle_deferred_bytes`` (limit = throttle_bytes + throttle_deferred_bytes = 192 MiB: ~298
  txcs), held until its in-place write is done; if it is full the thread sets *deferred_aggressive*
  (submit every pending deferred batch now, wake kv_sync for applied batches) and waits. Both are
  FIFO. This is what makes sustained small writes run at the rate the data device applies them.
* ``length <= prefer_deferred_size`` (deferred): the data goes into the RocksDB WAL record of the
  transaction. The transaction is committed (and acknowledged) by the next kv_sync batch: a WAL
  append (all queued transactions of the batch in one write, block-aligned, rewriting the partial
  tail block as BlueFS does) followed by a FLUSH of the WAL device. After commit the data joins the
  *pending deferred batch of its PG* (OpSequencer). When ``deferred_batch_ops`` txcs are pending in
  all, or the deferred throttle is past half full, every PG's pending batch that has none running
  is written in place (sorted, adjacent extents merged; one ``submit_batch`` per PG, as one
  io_submit). A PG with more than ``max_deferred_txc`` unfinished txcs behind a pending batch
  submits it too.
* larger writes: the data is written to a newly allocated extent (min_alloc_size units, no FUA);
  when that IO is done the transaction joins the kv queue.

kv_sync is one thread: transactions arriving while a batch is being written wait for the next one
(group commit). It runs when transactions are queued (or, while deferred_aggressive, for applied
deferred batches). Before the WAL write it flushes the data device (``flush_before_commit``): with
a separate DB device in every cycle in which data was written since the last flush, which makes the
applied deferred batches stable, their WAL records are deleted in this commit (``kv_cleanup_bytes``
each); with DB and data on one device only for batches that wrote data, and applied deferred
batches are cleaned up one commit later (the WAL flush made them stable). Transactions of one PG
enter the kv queue in submission order, so commits of one PG are in order.

Reads look up the data buffer cache (2Q or LRU, per read unit) and the onode cache; a data miss is
a device read of the aligned range (preceded by a DB read when the onode is missing).

Device layout (one OSD's device, no separate DB device): data is allocated upwards from
``min_alloc_size``; the BlueFS extent (WAL ring + DB) sits at ``bluefs_position`` of the device,
and allocations skip it. With a DB device the WAL ring and DB region are on the OSD's DB volume.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from simulator.ceph.cache import LruCache, make_cache
from simulator.ceph.resources import call_at, call_later
from simulator.ceph.store import ObjectStore, fill_offsets, fill_skip
from simulator.core.ceph_arith import align_up, alloc_offset, throttle_should_wait, txc_cost, wal_extent
from simulator.devices.base import Device, Op, Request
from simulator.engine import Component

if TYPE_CHECKING:
    from simulator.ceph.config import BlueStoreConfig

__all__ = ["BlueStore", "Txc"]

_WRITE = int(Op.WRITE)
_READ = int(Op.READ)
_FLUSH = int(Op.FLUSH)
_TRIM = int(Op.TRIM)



class Throttle:
    """Ceph's Throttle: a counter with a maximum; a get that would pass the maximum waits (FIFO
    behind earlier waiters), except that a single get larger than the maximum passes once the
    counter is at most the maximum."""

    __slots__ = ("cur", "max", "peak")

    def __init__(self, maximum: int):
        self.max = int(maximum)
        self.cur = 0
        self.peak = 0

    def should_wait(self, c: int) -> bool:
        return throttle_should_wait(self.max, self.cur, c)

    def take(self, c: int) -> None:
        self.cur += c
        if self.cur > self.peak:
            self.peak = self.cur

    def put(self, c: int) -> None:
        self.cur = max(0, self.cur - c)

    def past_midpoint(self) -> bool:
        return self.cur >= self.max / 2


class _Osr:
    """BlueStore's OpSequencer (one per PG on an OSD): transactions waiting for their data IO in
    order, the pending and running deferred batch, and the transactions not yet finished."""

    __slots__ = ("live", "pending", "q", "running")

    def __init__(self) -> None:
        self.q: deque[Txc] = deque()
        self.pending: list[Txc] | None = None
        self.running = False
        self.live = 0


class Txc:
    """A BlueStore transaction (one write/trim of one object on one OSD)."""

    __slots__ = ("cb", "cost", "dlen", "doff", "had_io", "io_done", "op", "osr", "wal_bytes")

    def __init__(self, op: Any, cb: Any, osr: _Osr):
        self.op = op
        self.cb = cb
        self.osr = osr
        self.cost = 0
        self.wal_bytes = 0
        self.doff = -1  # deferred data: device offset (-1 = none)
        self.dlen = 0
        self.had_io = False
        self.io_done = False


_align_up = align_up


class BlueStore(ObjectStore):
    KIND = "bluestore"

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
        # BlueFS's own log (bluefs_log_write): a ring of blocks at the start of the DB region
        self.log_base = self.db_base
        lr = min(cfg.bluefs_log_size, self.db_span)
        self.log_ring = max(lr - lr % bs, bs)
        self.log_pos = 0
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
        # what the OSD asks of any object store
        self.meta_miss_read = cfg.onode_miss_read
        self.meta_miss_cost = cfg.onode_miss_cost
        self.hit_cost = cfg.cache_hit_cost
        self.buffered_read = cc.buffered_read
        self.buffered_write = cc.buffered_write
        #: deferred writes not yet applied, readable from their 'writing' buffers: objkey -> unit runs
        self.writing: dict[int, list[tuple[int, int]]] = {}
        # throttles (BlueStore::throttle_bytes / throttle_deferred_bytes): txc costs
        self.cost_per_io = int(cfg.throttle_cost_per_io)
        self.tb = Throttle(cfg.throttle_bytes)
        self.dt = Throttle(cfg.throttle_bytes + cfg.throttle_deferred_bytes)
        self._tb_waiters: deque = deque()  # (op, resume, cost, deferred, t)
        self._dt_waiters: deque = deque()  # (op, resume, cost, t)
        self.aggressive = 0  # deferred_aggressive: op threads blocked on the deferred throttle
        # kv sync
        self._kv_cpu = cfg.kv_commit_cost
        self._cpu = getattr(parent, "cpu", None)  # the OSD host's CpuPool
        if self._cpu is None:
            self._kv_cpu = 0.0
        #: the kv_sync thread under the per-thread wakeup rule (CpuPool.run; None when the rule is off): a
        #: cycle that finds it asleep (every cycle: it sleeps on the flush and WAL IO in between) pays a wakeup
        self._kv_th = self._cpu.thread("bluestore.kv_sync") if self._cpu is not None and self._cpu.threaded else None
        self.kv_queue: list[Txc] = []
        self.kv_busy = False
        self._kv_batch: list[Txc] = []
        self._kv_stable: list[list[Txc]] = []
        self._kv_unstable: list[list[Txc]] = []
        self._kv_bytes = 0
        self._kv_t0 = 0.0
        self._flush_t0 = 0.0
        self._wal_t0 = 0.0
        self.io_since_flush = False  # data-device writes completed since its last FLUSH
        # deferred apply: one pending and at most one running batch per OpSequencer
        self._dq: dict[_Osr, None] = {}  # sequencers with a pending batch, in queueing order
        self.deferred_queue_size = 0  # txcs in pending batches
        self.deferred_done: list[list[Txc]] = []  # applied, not yet known stable
        self.deferred_stable: list[list[Txc]] = []  # stable, WAL records deleted by the next commit
        self.deferred_txcs = 0  # deferred txcs admitted and not yet applied
        self._timer_armed = False
        self.osrs: dict[Any, _Osr] = {}
        dev_batch = getattr(device, "submit_batch", None)
        self._submit_batch = dev_batch
        self.reset_stats()

    # ------------------------------------------------------------------ allocation
    def alloc(self, nbytes: int) -> int:
        """Allocate ``nbytes`` (rounded to min_alloc_size) of data space; returns the device offset."""
        a = self.cfg.min_alloc_size
        n = _align_up(nbytes, a)
        off = alloc_offset(self.cursor, n, a, self.dev.capacity, self.data_start, self.bluefs_start, self.bluefs_end)
        self.cursor = off + n
        self.allocated += n
        return off

    def alloc_plan(self, count: int, nbytes: int) -> tuple[int, int, int, int]:
        """``count`` consecutive allocations of ``nbytes`` (a sequential fill) as arithmetic: (base,
        step, k, jump), allocation r at ``base + r * step``, plus ``jump`` from allocation ``k`` on
        (past BlueFS's span: :func:`simulator.ceph.store.fill_skip`). Raises ValueError if they do
        not fit without wrapping."""
        a = self.cfg.min_alloc_size
        n = _align_up(nbytes, a)
        base = self.cursor
        k, jump = count, 0
        if self.bluefs_start >= 0 and count:
            k, jump = fill_skip(base, count, n, self.bluefs_start, self.bluefs_end, _align_up(self.bluefs_end, a))
        end = base + (count - 1) * n + (jump if k < count else 0) + n if count else self.cursor
        if end > self.dev.capacity:
            raise ValueError(
                f"{count} x {n} bytes need {end} bytes of a {self.dev.capacity}-byte device"
            )
        self.cursor = end
        self.allocated += count * n
        return base, n, k, jump

    def alloc_many(self, count: int, nbytes: int) -> np.ndarray:
        """``count`` consecutive allocations of ``nbytes`` (a sequential fill), vectorised: the offsets
        of :meth:`alloc_plan`. Raises ValueError if they do not fit without wrapping."""
        base, n, k, jump = self.alloc_plan(count, nbytes)
        return fill_offsets(base, count, n, k, jump)

    def data_capacity(self) -> int:
        cap = self.dev.capacity - self.data_start
        if self.bluefs_start >= 0:
            cap -= self.bluefs_end - self.bluefs_start
        return cap

    # ------------------------------------------------------------------ statistics
    def reset_stats(self) -> None:
        self.kv_batches = 0
        self.kv_txcs = 0
        self.kv_time = 0.0
        self.flush_time = 0.0
        self.wal_time = 0.0
        self.kv_data_flushes = 0
        self.deferred_batches = 0
        self.deferred_rounds = 0
        self.deferred_ops = 0
        self.deferred_ios = 0
        self.direct_writes = 0
        self.throttled = 0
        self.throttled_kv = 0
        self.throttled_deferred = 0
        self.throttle_wait = 0.0
        self.aggressive_submits = 0
        self.max_txc_submits = 0
        self.tb.peak = self.tb.cur
        self.dt.peak = self.dt.cur
        self.peak_deferred_txcs = self.deferred_txcs
        self.cache.hits = self.cache.misses = 0
        self.onodes.hits = self.onodes.misses = 0

    def stats(self) -> dict[str, Any]:
        lookups = self.cache.hits + self.cache.misses
        ol = self.onodes.hits + self.onodes.misses
        nb = self.kv_batches
        return {
            "kv_batches": nb,
            "kv_txcs_per_batch": self.kv_txcs / nb if nb else 0.0,
            # per kv_sync cycle, as Ceph's counters (BlueStore::_kv_sync_thread): kv_sync_lat = the whole cycle,
            # kv_flush_lat = its data-device FLUSH, kv_commit_lat = the rest (the cycle's own CPU with its wait for
            # a core, the WAL write and flush); kv_wal_s = the WAL write + flush alone (device time)
            "kv_sync_s": self.kv_time / nb if nb else 0.0,
            "kv_flush_s": self.flush_time / nb if nb else 0.0,
            "kv_commit_s": (self.kv_time - self.flush_time) / nb if nb else 0.0,
            "kv_wal_s": self.wal_time / nb if nb else 0.0,
            "kv_data_flushes": self.kv_data_flushes,
            "deferred_ops": self.deferred_ops,
            "deferred_batches": self.deferred_rounds,
            "deferred_pg_batches": self.deferred_batches,
            "deferred_ios": self.deferred_ios,
            "deferred_txcs_in_flight": self.deferred_txcs,
            "deferred_txcs_peak": self.peak_deferred_txcs,
            "deferred_pending": self.deferred_queue_size,
            "deferred_cost_in_flight": self.dt.cur,
            "deferred_cost_peak": self.dt.peak,
            "deferred_cost_limit": self.dt.max,
            "kv_cost_in_flight": self.tb.cur,
            "kv_cost_peak": self.tb.peak,
            "kv_cost_limit": self.tb.max,
            "direct_writes": self.direct_writes,
            "throttled_writes": self.throttled,
            "throttled_kv": self.throttled_kv,
            "throttled_deferred": self.throttled_deferred,
            "throttle_wait_s": self.throttle_wait,
            "aggressive_submits": self.aggressive_submits,
            "max_deferred_txc_submits": self.max_txc_submits,
            "cache_hit_ratio": self.cache.hits / lookups if lookups else 0.0,
            "cache_buffers": len(self.cache),
            "onode_hit_ratio": self.onodes.hits / ol if ol else 0.0,
        }

    # ------------------------------------------------------------------ reads
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

    def _db_offset(self) -> int:
        b = self.block
        return self.db_base + int(self.rand.random() * (self.db_span // b)) * b

    def _onode_read_done(self, ev: Any) -> None:
        db = ev._value
        db.event = None
        req, cb = db.tag
        req.parent = cb
        self.dev.submit(req).callbacks.append(self._read_done)

    # ------------------------------------------------------------------ throttles
    def txc_cost(self, op: Any) -> tuple[int, bool]:
        """(cost, deferred) of the transaction of ``op``: BlueStore's txc->cost = (1 + data aios) x
        throttle_cost_per_io + bytes; a small write is deferred (no data aio)."""
        return txc_cost(op.kind, op.length, self.cfg.prefer_deferred_size, self.cost_per_io)

    def admit(self, op: Any, resume: Any) -> bool:
        """queue_transactions' throttles, in the op thread: throttle_bytes.get(cost), then for a
        deferred write throttle_deferred_bytes (on failure: deferred_aggressive, submit everything
        pending, wait). True = go on; False = the op thread blocks and ``resume(op)`` is called once
        both are acquired."""
        cost, deferred = txc_cost(op.kind, op.length, self.cfg.prefer_deferred_size, self.cost_per_io)
        op.cost = cost
        tb = self.tb
        m = tb.max
        if self._tb_waiters or (cost <= m and tb.cur + cost > m) or (cost >= m and tb.cur > m):  # tb.should_wait(cost)
            self.throttled += 1
            self.throttled_kv += 1
            self._tb_waiters.append((op, resume, cost, deferred, self.env._now))
            return False
        tb.cur += cost
        if tb.cur > tb.peak:
            tb.peak = tb.cur
        if deferred:
            dt = self.dt
            if not self._dt_waiters and dt.cur + cost <= dt.max:  # the common case of should_wait
                dt.cur += cost
                if dt.cur > dt.peak:
                    dt.peak = dt.cur
                self.deferred_txcs += 1
                if self.deferred_txcs > self.peak_deferred_txcs:
                    self.peak_deferred_txcs = self.deferred_txcs
                return True
            return self._admit_deferred(op, resume, cost, self.env._now, True)
        return True

    def _admit_deferred(self, op: Any, resume: Any, cost: int, t0: float, first: bool) -> bool:
        dt = self.dt
        if not self._dt_waiters and not dt.should_wait(cost):
            dt.take(cost)
            self._deferred_in(1)
            if not first:
                self.throttle_wait += self.env._now - t0
            return True
        if first:
            self.throttled += 1
        self.throttled_deferred += 1
        self.aggressive += 1
        self._dt_waiters.append((op, resume, cost, t0))
        self.aggressive_submits += 1
        self._deferred_try_submit()
        self._kv_kick()
        return False

    def _deferred_in(self, n: int) -> None:
        self.deferred_txcs += n
        if self.deferred_txcs > self.peak_deferred_txcs:
            self.peak_deferred_txcs = self.deferred_txcs

    def _wake_kv_throttle(self) -> None:
        w = self._tb_waiters
        tb = self.tb
        while w and not tb.should_wait(w[0][2]):
            op, resume, cost, deferred, t0 = w.popleft()
            tb.take(cost)
            if deferred and not self._admit_deferred(op, resume, cost, t0, False):
                continue
            if not deferred:
                self.throttle_wait += self.env._now - t0
            resume(op)

    def _wake_deferred_throttle(self) -> None:
        w = self._dt_waiters
        dt = self.dt
        while w and not dt.should_wait(w[0][2]):
            op, resume, cost, t0 = w.popleft()
            dt.take(cost)
            self._deferred_in(1)
            self.aggressive -= 1
            self.throttle_wait += self.env._now - t0
            resume(op)

    # ------------------------------------------------------------------ writes
    def write(self, op: Any, base: int, osr_key: Any, cb: Any) -> None:
        """Queue the transaction of a write/trim of ``op`` (object at device offset ``base``);
        ``cb(op)`` when it is committed. The op must have been admitted (``admit``)."""
        cfg = self.cfg
        osr = self.osrs.get(osr_key)
        if osr is None:
            osr = self.osrs[osr_key] = _Osr()
        txc = Txc(op, cb, osr)
        txc.cost = op.cost
        osr.live += 1
        length = op.length
        off = op.off
        # the written range leaves the buffer cache (or replaces it when buffered writes are on)
        u = self.unit
        key = op.objkey
        ua = off // u
        ub = (off + length - 1) // u + 1
        c = self.cache
        if self.buffered_write and op.kind == _WRITE:
            c.insert_range(key, ua, ub)
        elif len(c):
            c.discard_range(key, ua, ub)
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
            w = self.writing.get(key)
            if w is None:
                self.writing[key] = [(ua, ub)]
            else:
                w.append((ua, ub))
        else:
            new = self.alloc(length)
            if off == 0 and length >= op.obj_size:
                op.relocate(new)
            txc.wal_bytes = cfg.kv_txc_bytes
            txc.had_io = True
            self.direct_writes += 1
            osr.q.append(txc)
            req = Request(_WRITE, new, _align_up(length, self.block), tag=txc)
            self.dev.submit(req).callbacks.append(self._direct_done)
            return
        if osr.q:  # an earlier txc of this PG is still writing data; it will push this one
            osr.q.append(txc)
            return
        self.kv_queue.append(txc)
        if not self.kv_busy:
            self._kv_start()

    def _direct_done(self, ev: Any) -> None:
        r = ev._value
        r.event = None
        txc = r.tag
        txc.io_done = True
        self.io_since_flush = True
        q = txc.osr.q
        kq = self.kv_queue
        while q and q[0].io_done:
            kq.append(q.popleft())
        if kq and not self.kv_busy:
            self._kv_start()

    # ------------------------------------------------------------------ kv_sync thread
    def _kv_kick(self) -> None:
        """Wake kv_sync: it runs for queued transactions, and for applied deferred batches only
        while deferred_aggressive (otherwise their cleanup rides with the next commit)."""
        if not self.kv_busy and (
            self.kv_queue or (self.aggressive and (self.deferred_done or self.deferred_stable))
        ):
            self._kv_start()

    def _kv_start(self) -> None:
        cfg = self.cfg
        batch = self.kv_queue
        self.kv_queue = []
        done = self.deferred_done
        self.deferred_done = []
        stable = self.deferred_stable
        self.deferred_stable = []
        self.kv_busy = True
        self._kv_t0 = self.env._now
        aios = False
        nbytes = 0
        for t in batch:
            nbytes += t.wal_bytes
            if t.had_io:
                aios = True
        if not cfg.flush_before_commit:
            force = False
            stable += done
            done = []
        elif self.same_device:
            # BlueFS shares the data device: the WAL flush makes applied deferred writes stable
            # for the next cycle; flush first only for data written by this batch's txcs
            force = aios or (not batch and not stable) or self.aggressive > 0
        else:
            force = True
        if force:
            stable += done
            done = []
        for b in stable:
            nbytes += len(b) * cfg.kv_cleanup_bytes
        self._kv_batch = batch
        self._kv_stable = stable
        self._kv_unstable = done
        self._kv_bytes = nbytes
        self.kv_batches += 1
        self.kv_txcs += len(batch)
        flush = force and self.io_since_flush
        if flush:
            self.io_since_flush = False
            self.kv_data_flushes += 1
        if self._kv_cpu > 0.0 or self._kv_th is not None:
            # the cycle's own CPU (kv_commit_cost), once per batch, before its device work
            call_at(self.env, self._cpu.run(self._kv_th, self.env._now, self._kv_cpu), self._kv_io, flush)
        elif flush:
            self._flush_t0 = self.env._now
            self.dev.submit(Request(_FLUSH)).callbacks.append(self._kv_write)
        else:
            self._kv_write(None)

    def _kv_io(self, ev: Any) -> None:
        if ev._value:
            self._flush_t0 = self.env._now
            self.dev.submit(Request(_FLUSH)).callbacks.append(self._kv_write)
        else:
            self._kv_write(None)

    def _kv_write(self, ev: Any) -> None:
        if ev is not None:  # after the data-device FLUSH (kv_flush_lat)
            ev._value.event = None
            self.flush_time += self.env._now - self._flush_t0
        # throttle_bytes is released before the commit (the next ops can be prepared meanwhile)
        costs = 0
        for t in self._kv_batch:
            costs += t.cost
        if costs:
            self.tb.put(costs)
            if self._tb_waiters:
                self._wake_kv_throttle()
        rel, n, self.wal_pos = wal_extent(self.wal_pos, max(self._kv_bytes, 1), self.block, self.wal_ring,
                                          self.cfg.wal_rewrite_tail)
        self._wal_t0 = self.env._now
        self.wal_dev.submit(Request(_WRITE, self.wal_base + rel, n)).callbacks.append(self._kv_flush)

    def _kv_flush(self, ev: Any) -> None:
        ev._value.event = None
        self.wal_dev.submit(Request(_FLUSH)).callbacks.append(self._kv_log if self.cfg.bluefs_log_write else self._kv_done)

    def _kv_log(self, ev: Any) -> None:
        """bluefs_log_write: after the WAL append's flush, BlueFS appends one block to its own log (the WAL
        file's metadata) and flushes again; the commit completes after that."""
        ev._value.event = None
        off = self.log_base + self.log_pos
        self.log_pos = (self.log_pos + self.block) % self.log_ring
        self.wal_dev.submit(Request(_WRITE, off, self.block)).callbacks.append(self._kv_log_flush)

    def _kv_log_flush(self, ev: Any) -> None:
        ev._value.event = None
        self.wal_dev.submit(Request(_FLUSH)).callbacks.append(self._kv_done)

    def _kv_done(self, ev: Any) -> None:
        ev._value.event = None
        batch = self._kv_batch
        stable = self._kv_stable
        self._kv_batch = []
        self._kv_stable = []
        self.deferred_stable = self._kv_unstable  # made stable by this commit's flush
        self._kv_unstable = []
        self.kv_busy = False
        now = self.env._now
        self.kv_time += now - self._kv_t0
        self.wal_time += now - self._wal_t0
        # kv_finalize: committed txcs, then the cleanup of stable deferred batches
        dq = self._dq
        maxtxc = self.cfg.max_deferred_txc
        for t in batch:
            t.cb(t.op)
            osr = t.osr
            if t.doff >= 0:  # self._deferred_queue(t), inlined
                if osr.pending is None:
                    osr.pending = [t]
                    dq[osr] = None
                else:
                    osr.pending.append(t)
                self.deferred_queue_size += 1
                if self.aggressive and not osr.running:
                    self.deferred_rounds += 1
                    self._deferred_submit(osr)
            else:  # self._txc_finish(t), inlined
                osr.live -= 1
                if osr.pending is not None and not osr.running and osr.live > maxtxc:
                    self.max_txc_submits += 1
                    self._deferred_try_submit()
        for b in stable:
            for t in b:
                osr = t.osr
                osr.live -= 1
                if osr.pending is not None and not osr.running and osr.live > maxtxc:
                    self.max_txc_submits += 1
                    self._deferred_try_submit()
        if not self.aggressive and self._dq and (
            self.deferred_queue_size >= self.cfg.deferred_batch_ops or self.dt.past_midpoint()
        ):
            self._deferred_try_submit()
        elif self._dq and self.cfg.deferred_max_interval is not None and not self._timer_armed:
            self._timer_armed = True
            call_later(self.env, self.cfg.deferred_max_interval, self._deferred_timer, None)
        if self.kv_queue or (self.aggressive and (self.deferred_done or self.deferred_stable)):
            self._kv_start()

    def _txc_finish(self, t: Txc) -> None:
        osr = t.osr
        osr.live -= 1
        # bluestore_max_deferred_txc: a sequencer pinning too many txcs behind a queued deferred
        # batch submits it
        if osr.pending is not None and not osr.running and osr.live > self.cfg.max_deferred_txc:
            self.max_txc_submits += 1
            self._deferred_try_submit()

    # ------------------------------------------------------------------ deferred apply
    def _deferred_queue(self, t: Txc) -> None:
        osr = t.osr
        if osr.pending is None:
            osr.pending = []
            self._dq[osr] = None
        osr.pending.append(t)
        self.deferred_queue_size += 1
        if self.aggressive and not osr.running:
            self.deferred_rounds += 1
            self._deferred_submit(osr)

    def _deferred_timer(self, ev: Any) -> None:
        self._timer_armed = False
        if self._dq:
            self._deferred_try_submit()

    def _deferred_try_submit(self) -> None:
        n = 0
        for osr in list(self._dq):
            if not osr.running:
                self._deferred_submit(osr)
                n += 1
        if n:
            self.deferred_rounds += 1

    def _deferred_submit(self, osr: _Osr) -> None:
        batch = osr.pending
        osr.pending = None
        del self._dq[osr]
        osr.running = True
        self.deferred_queue_size -= len(batch)
        self.deferred_batches += 1
        self.deferred_ops += len(batch)
        if len(batch) == 1:  # the common case: one write, one IO
            t = batch[0]
            self.deferred_ios += 1
            self.dev.submit(Request(_WRITE, t.doff, t.dlen, tag=[1, osr, batch])).callbacks.append(self._deferred_io_done)
            return
        else:
            ext = []
            for off, n in sorted((t.doff, t.dlen) for t in batch):
                if ext and off <= ext[-1][0] + ext[-1][1]:
                    last = ext[-1]
                    last[1] = max(last[1], off + n - last[0])
                else:
                    ext.append([off, n])
        state = [len(ext), osr, batch]
        self.deferred_ios += len(ext)
        reqs = [Request(_WRITE, off, n, tag=state) for off, n in ext]
        sb = self._submit_batch
        if sb is not None and len(reqs) > 1:
            evs = sb(reqs)
        else:
            dev = self.dev
            evs = [dev.submit(r) for r in reqs]
        cb = self._deferred_io_done
        for ev in evs:
            ev.callbacks.append(cb)

    def _deferred_io_done(self, ev: Any) -> None:
        r = ev._value
        r.event = None
        state = r.tag
        n = state[0] - 1
        if n:
            state[0] = n
            return
        osr = state[1]
        batch = state[2]
        osr.running = False
        self.io_since_flush = True
        writing = self.writing
        u = self.unit
        costs = 0
        for t in batch:  # the deferred data is on disk: its writing buffers go
            costs += t.cost
            op = t.op
            key = op.objkey
            off = op.off
            w = writing[key]
            if len(w) == 1:
                del writing[key]
            else:
                w.remove((off // u, (off + op.length - 1) // u + 1))
        self.deferred_txcs -= len(batch)
        dt = self.dt
        dt.cur -= costs
        if dt.cur < 0:
            dt.cur = 0
        self.deferred_done.append(batch)
        if self.aggressive:
            if osr.pending is not None:
                self._deferred_try_submit()
            if self._dt_waiters:
                self._wake_deferred_throttle()
            self._kv_kick()
        elif self._dt_waiters:
            self._wake_deferred_throttle()

"""FileStore of one OSD (Jewel 10.2 / Luminous 12.2 on XFS, writeahead journal).

A write (after the OSD has prepared the transaction on its CPU):

* **Throttles** (``queue_transactions``, in the op thread, which blocks while it waits): the
  FileStore op queue (``queue_max_ops`` 50 / ``queue_max_bytes`` 100 MiB, held until the
  transaction is applied) and the journal queue (``journal_queue_max_ops`` 300 /
  ``journal_queue_max_bytes`` 32 MiB, held until its journal write is done). FIFO.
* **Journal** (FileJournal): the encoded transaction becomes one entry -- header, transaction
  metadata (``txn_bytes``), the data (page-aligned from ``journal_align_min_size``), footer --
  padded to ``journal_block_size``, so a 4 KiB write costs an 8 KiB journal entry. One writer
  thread packs the queued entries (up to ``journal_max_write_entries`` / ``journal_max_write_bytes``)
  into one write with O_DIRECT|O_DSYNC (a FUA write) at the journal's write position, wrapping
  at the end of the ring. With libaio, while ``n`` writes are in flight a new one starts only once
  2^min(2n, 24) bytes are queued (FileJournal's adaptive rule: 1 write in flight needs 4 bytes
  queued, 6 need 4 KiB, 8 need 64 KiB), so the journal device sees a handful of sequential FUA
  writes. Writes complete in submission order (check_aio_completion): the entries of a completed
  prefix are *committed*: the OSD is called back (the client ack waits for every replica's
  commit) and the entries go to the apply queue.
* **Apply** (``op_threads`` threads, one transaction per PG at a time, in order): the WBThrottle
  may block the thread (dirty writes, bytes or files past their hard limit), then the thread
  spends ``apply_cost`` of host CPU and the data lands in the page cache: dirty pages of the
  object's file, the file joins the WBThrottle's list, the PG log entry is appended to LevelDB's
  log (``omap_bytes``, written at the next sync). The op queue throttle is released.
* **WBThrottle flusher** (one thread): past any start threshold (500 writes, 40 MiB, 500 files)
  it takes the oldest dirty file and fdatasyncs it: the file's dirty pages (merged extents) as
  one batch, then a FLUSH; repeat until below every threshold. Blocked applies resume after each
  fdatasync.
* **Sync** (sync thread): every ``max_sync_interval`` (earlier when the journal passes half
  full, never sooner than ``min_sync_interval`` after the last one) syncfs writes every dirty page
  and the LevelDB log, forces the XFS log (FLUSH + FUA write of ``xfs_log_bytes`` per logged
  inode) and, once done, frees the journal up to the last transaction applied before it started
  and clears the WBThrottle. xfsaild then writes each logged inode's cluster in place, next to
  the file's data, in the background (``inode_writeback``). When the journal is full the writer
  waits for a sync (client writes stall: FileStore's sawtooth).

Reads go through the page cache (``page_cache``; written pages are in it too) and the inode cache
(a miss reads ``inode_miss_read`` bytes next to the file first); a miss reads the pages from the
file's extent, synchronously in the op thread.

Device layout: with the journal on the OSD's own drive (no journal SSD), the journal partition is
the first ``journal_size`` bytes (as ceph-disk lays it out) and XFS the rest; with a journal SSD the
whole partition given there is the journal. In the XFS partition: the LevelDB omap directory at
its start, the internal log in its middle, object files allocated upwards around it; an object's
file is contiguous and overwritten in place.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Any

import numpy as np

from simulator.ceph.cache import LruCache, make_cache
from simulator.ceph.resources import call_at, call_later
from simulator.ceph.store import ObjectStore, fill_offsets, fill_skip
from simulator.devices.base import Device, Op, Request
from simulator.engine import Component

if TYPE_CHECKING:
    from simulator.ceph.config import FileStoreConfig
    from simulator.ceph.resources import CpuPool

__all__ = ["FileStore"]

_WRITE = int(Op.WRITE)
_READ = int(Op.READ)
_FLUSH = int(Op.FLUSH)

_MIB = 1 << 20
_PAGE = 4096


def _align_up(x: int, a: int) -> int:
    return -(-x // a) * a


class _Gate:
    """A Throttle counting ops and bytes; a get larger than the byte limit passes when it is empty."""

    __slots__ = ("bytes", "max_bytes", "max_ops", "ops", "peak_ops")

    def __init__(self, max_ops: int, max_bytes: int):
        self.max_ops = int(max_ops)
        self.max_bytes = int(max_bytes)
        self.ops = 0
        self.bytes = 0
        self.peak_ops = 0

    def blocked(self, n: int) -> bool:
        if self.max_ops > 0 and self.ops + 1 > self.max_ops:
            return True
        return self.max_bytes > 0 and self.bytes > 0 and self.bytes + n > self.max_bytes

    def take(self, n: int) -> None:
        self.ops += 1
        self.bytes += n
        if self.ops > self.peak_ops:
            self.peak_ops = self.ops

    def put(self, n: int) -> None:
        self.ops = max(0, self.ops - 1)
        self.bytes = max(0, self.bytes - n)


class _Entry:
    """One transaction: its journal entry and its apply."""

    __slots__ = ("base", "cb", "op", "osr", "seq", "size")

    def __init__(self, op: Any, cb: Any, osr: _Osr, seq: int, size: int, base: int):
        self.op = op
        self.cb = cb
        self.osr = osr
        self.seq = seq
        self.size = size
        self.base = base


class _Osr:
    """FileStore's OpSequencer (one per PG): journaled transactions waiting to be applied, in order."""

    __slots__ = ("busy", "q")

    def __init__(self) -> None:
        self.q: deque[_Entry] = deque()
        self.busy = False


class _Wb:
    """A WBThrottle entry: writes and bytes to a file since it was last flushed."""

    __slots__ = ("ios", "nbytes")

    def __init__(self) -> None:
        self.ios = 0
        self.nbytes = 0


class FileStore(ObjectStore):
    KIND = "filestore"

    def __init__(
        self,
        name: str,
        parent: Component,
        cfg: FileStoreConfig,
        device: Device,
        cpu: CpuPool | None = None,
        journal_device: Device | None = None,
        journal_base: int = 0,
        journal_space: int = 0,
    ):
        super().__init__(name, parent)
        self.cfg = cfg
        self.dev = device
        self.cpu = cpu
        jb = cfg.journal_block_size
        self.jblock = jb
        cap = device.capacity
        if journal_device is None:
            size = min(cfg.journal_size, cap // 4)
            self.jdev = device
            self.jbase = 0
            data_lo = _align_up(size + _MIB, _MIB)
        else:
            size = journal_space
            self.jdev = journal_device
            self.jbase = journal_base
            data_lo = _MIB
        size -= size % jb
        need = cfg.max_write_size + 2 * cfg.journal_entry_header + jb
        if size < need:
            raise ValueError(
                f"journal of {size} bytes cannot hold osd_max_write_size ({cfg.max_write_size} bytes) plus its header; "
                f"FileJournal refuses journals under {need} bytes"
            )
        # the ring after the header block (FileJournal::get_top)
        self.jtop = jb
        self.jend = size
        self.jcap = size - jb
        self.jpos = self.jtop
        self.same_device = self.jdev is device
        # XFS partition: omap directory, internal log in the middle, object files
        span = cap - data_lo
        if span <= 16 * _MIB:
            raise ValueError(f"device of {cap} bytes leaves no room for the FileStore data partition")
        self.data_lo = data_lo
        self.omap_lo = data_lo
        self.omap_span = max(_MIB, min(1 << 30, span // 16) // _MIB * _MIB)
        self.omap_pos = 0
        log = max(_MIB, min(cfg.xfs_log_size, span // 8) // _MIB * _MIB)
        self.log_lo = data_lo + (span // 2) // _MIB * _MIB
        self.log_hi = self.log_lo + log
        self.log_pos = 0
        self.cursor = self.omap_lo + self.omap_span
        self.allocated = 0
        # caches
        self.unit = cfg.read_unit
        pc = cfg.page_cache
        self.cache = make_cache(pc.policy, pc.size // self.unit, pc.kin_ratio, pc.kout_ratio)
        self.buffered_read = pc.buffered_read
        self.buffered_write = pc.buffered_write
        self.writing: dict[int, list[tuple[int, int]]] = {}  # (BlueStore's unapplied deferred writes; none here)
        self.onodes = LruCache(cfg.inode_cache_size)  # inode + dentry cache (the OSD's "onode" interface)
        self.meta_miss_read = cfg.inode_miss_read
        self.meta_miss_cost = cfg.inode_miss_cost
        self.hit_cost = cfg.cache_hit_cost
        # throttles
        self.opq = _Gate(cfg.queue_max_ops, cfg.queue_max_bytes)
        self.jq = _Gate(cfg.journal_queue_max_ops, cfg.journal_queue_max_bytes)
        self._waiters: deque = deque()  # (op, resume, nbytes, jsize, t0)
        # journal
        self.seq = 0
        self.writeq: deque[_Entry] = deque()
        self.wq_bytes = 0
        self.aio_q: deque[list] = deque()  # [ios left, entries, bytes, done, t0]
        self.aio_num = 0
        self.j_used = 0
        self.j_entries: deque[tuple[int, int]] = deque()  # (seq, size) written, not yet trimmed
        self.j_full = False
        self.unapplied: set[int] = set()
        # apply
        self.osrs: dict[Any, _Osr] = {}
        self.ready: deque[_Osr] = deque()
        self.free_threads = cfg.op_threads
        self.wb_blocked: deque[tuple[_Osr, _Entry]] = deque()
        # page cache: dirty pages per file (objkey -> (file offset on the device, page indexes))
        self.pages: dict[int, tuple[int, set[int]]] = {}
        # WBThrottle: files written since their last fdatasync / the last sync, oldest first
        self.wb: OrderedDict[int, _Wb] = OrderedDict()
        self.wb_ios = 0
        self.wb_bytes = 0
        self.flushing = False
        self._flush_state: list[int] | None = None
        self._flush_key = -1
        self.omap_pending = 0
        self.logged: dict[int, int] = {}  # inodes changed since the last sync: objkey -> file offset
        self._sync_left: dict[int, int] = {}  # sync IOs in flight per file
        # sync
        self.syncing = False
        self._sync_again = False
        self._sync_logged: dict[int, int] = {}
        self._sync_cp = 0
        self._sync_t0 = 0.0
        self.last_sync = 0.0
        self._sync_at = -1.0  # time of the scheduled sync start, -1 = none
        self._sync_gen = 0
        self._submit_batch = getattr(device, "submit_batch", None)
        self.reset_stats()
        self._schedule_sync(cfg.max_sync_interval)

    # ------------------------------------------------------------------ allocation
    def alloc(self, nbytes: int) -> int:
        """Allocate a file extent of ``nbytes`` (4 KiB units); returns the device offset."""
        n = _align_up(nbytes, _PAGE)
        off = self.cursor
        if off < self.log_hi and off + n > self.log_lo:
            off = self.log_hi
        if off + n > self.dev.capacity:
            off = self.omap_lo + self.omap_span  # wrap: reuse freed space
            if off < self.log_hi and off + n > self.log_lo:
                off = self.log_hi
        self.cursor = off + n
        self.allocated += n
        return off

    def alloc_plan(self, count: int, nbytes: int) -> tuple[int, int, int, int]:
        """``count`` consecutive files of ``nbytes`` (a sequential fill) as arithmetic: (base, step, k,
        jump), file r at ``base + r * step``, plus ``jump`` from file ``k`` on (past the journal's span:
        :func:`simulator.ceph.store.fill_skip`). Raises ValueError if they do not fit."""
        n = _align_up(nbytes, _PAGE)
        base = self.cursor
        k, jump = fill_skip(base, count, n, self.log_lo, self.log_hi, self.log_hi)
        end = base + (count - 1) * n + (jump if k < count else 0) + n if count else self.cursor
        if end > self.dev.capacity:
            raise ValueError(f"{count} x {n} bytes need {end} bytes of a {self.dev.capacity}-byte device")
        self.cursor = end
        self.allocated += count * n
        return base, n, k, jump

    def alloc_many(self, count: int, nbytes: int) -> np.ndarray:
        """``count`` consecutive files of ``nbytes`` (a sequential fill), vectorised: the offsets of
        :meth:`alloc_plan`. Raises ValueError if they do not fit."""
        base, n, k, jump = self.alloc_plan(count, nbytes)
        return fill_offsets(base, count, n, k, jump)

    def data_capacity(self) -> int:
        return self.dev.capacity - self.omap_lo - self.omap_span - (self.log_hi - self.log_lo)

    # ------------------------------------------------------------------ statistics
    def reset_stats(self) -> None:
        self.journal_writes = 0
        self.journal_entries = 0
        self.journal_bytes = 0
        self.journal_time = 0.0
        self.journal_full_waits = 0
        self.peak_aio = self.aio_num
        self.peak_journal_used = self.j_used
        self.applied = 0
        self.apply_wb_waits = 0
        self.syncs = 0
        self.sync_time = 0.0
        self.sync_ios = 0
        self.fdatasyncs = 0
        self.flusher_ios = 0
        self.inode_writes = 0
        self.throttled = 0
        self.throttle_wait = 0.0
        self.peak_wb_ios = self.wb_ios
        self.opq.peak_ops = self.opq.ops
        self.jq.peak_ops = self.jq.ops
        self.cache.hits = self.cache.misses = 0
        self.onodes.hits = self.onodes.misses = 0

    def stats(self) -> dict[str, Any]:
        c = self.cache
        o = self.onodes
        return {
            "objectstore": "filestore",
            "journal_writes": self.journal_writes,
            "journal_entries_per_write": self.journal_entries / self.journal_writes if self.journal_writes else 0.0,
            "journal_bytes": self.journal_bytes,
            "journal_write_s": self.journal_time / self.journal_writes if self.journal_writes else 0.0,
            "journal_used": self.j_used,
            "journal_used_peak": self.peak_journal_used,
            "journal_capacity": self.jcap,
            "journal_full_waits": self.journal_full_waits,
            "journal_aio_peak": self.peak_aio,
            "applied": self.applied,
            "apply_wbthrottle_waits": self.apply_wb_waits,
            "syncs": self.syncs,
            "sync_s": self.sync_time / self.syncs if self.syncs else 0.0,
            "sync_ios": self.sync_ios,
            "fdatasyncs": self.fdatasyncs,
            "flusher_ios": self.flusher_ios,
            "inode_writes": self.inode_writes,
            "wb_dirty_ios": self.wb_ios,
            "wb_dirty_ios_peak": self.peak_wb_ios,
            "wb_dirty_files": len(self.wb),
            "op_queue_in_flight": self.opq.ops,
            "op_queue_peak": self.opq.peak_ops,
            "journal_queue_in_flight": self.jq.ops,
            "journal_queue_peak": self.jq.peak_ops,
            "throttled_writes": self.throttled,
            "throttle_wait_s": self.throttle_wait,
            "cache_hit_ratio": c.hits / (c.hits + c.misses) if c.hits + c.misses else 0.0,
            "inode_hit_ratio": o.hits / (o.hits + o.misses) if o.hits + o.misses else 0.0,
        }

    # ------------------------------------------------------------------ reads
    def _meta_offset(self, base: int) -> int:
        """Where a file's inode sits: just before its data (XFS allocates data near the inode)."""
        return max(self.omap_lo + self.omap_span, base - 65536)

    def read(self, op: Any, base: int, onode_hit: bool, cb: Any) -> None:
        """Page-cache miss: [inode read,] read of the file's pages; then ``cb(op)``."""
        u = self.unit
        off = op.off
        first = off // u
        last = (off + op.length - 1) // u
        req = Request(_READ, base + first * u, (last - first + 1) * u, tag=op)
        req.parent = cb
        if not onode_hit:
            self.onodes.insert(op.objkey)
            if self.meta_miss_read > 0:
                m = Request(_READ, self._meta_offset(base), _align_up(self.meta_miss_read, _PAGE), tag=req)
                self.dev.submit(m).callbacks.append(self._inode_read_done)
                return
        self.dev.submit(req).callbacks.append(self._read_done)

    def _inode_read_done(self, ev: Any) -> None:
        ev._value.event = None
        self.dev.submit(ev._value.tag).callbacks.append(self._read_done)

    def read_onode(self, op: Any, cb: Any) -> None:
        """Load a missed inode (the object context's getxattr), then ``cb(op)``."""
        self.onodes.insert(op.objkey)
        base = op.image.base_of(op.objno, op.pos)
        m = Request(_READ, self._meta_offset(max(base, 0)), _align_up(self.meta_miss_read, _PAGE), tag=op)
        m.parent = cb
        self.dev.submit(m).callbacks.append(self._onode_only_done)

    # ------------------------------------------------------------------ throttles
    def entry_size(self, nbytes: int) -> int:
        """Journal bytes of the entry of a transaction carrying ``nbytes`` of data."""
        cfg = self.cfg
        h = cfg.journal_entry_header
        pre = 0
        if nbytes >= cfg.journal_align_min_size and nbytes > 0:
            pre = (-(h + cfg.txn_bytes)) % _PAGE
        return _align_up(2 * h + pre + cfg.txn_bytes + nbytes, self.jblock)

    def admit(self, op: Any, resume: Any) -> bool:
        """queue_transactions' throttles, in the op thread: the op queue throttle, then the journal
        throttle. True = go on; False = the op thread blocks and ``resume(op)`` is called later."""
        n = op.length if op.kind == _WRITE else 0
        js = op.cost = self.entry_size(n)  # write() takes the entry size from here
        if self._waiters or self.opq.blocked(n) or self.jq.blocked(js):
            self.throttled += 1
            self._waiters.append((op, resume, n, js, self.env._now))
            return False
        self.opq.take(n)
        self.jq.take(js)
        return True

    def _wake_throttle(self) -> None:
        w = self._waiters
        while w:
            op, resume, n, js, t0 = w[0]
            if self.opq.blocked(n) or self.jq.blocked(js):
                return
            w.popleft()
            self.opq.take(n)
            self.jq.take(js)
            self.throttle_wait += self.env._now - t0
            resume(op)

    # ------------------------------------------------------------------ journal
    def write(self, op: Any, base: int, osr_key: Any, cb: Any) -> None:
        """Queue the transaction of a write/trim of ``op`` (file at device offset ``base``);
        ``cb(op)`` once it is journaled (committed). The op must have been admitted (``op.cost`` is
        its journal entry size)."""
        osr = self.osrs.get(osr_key)
        if osr is None:
            osr = self.osrs[osr_key] = _Osr()
        self.seq += 1
        e = _Entry(op, cb, osr, self.seq, op.cost, base)
        self.unapplied.add(e.seq)
        self.writeq.append(e)
        self.wq_bytes += e.size
        if self._sync_at < 0 and not self.syncing:
            self._schedule_sync(self.cfg.max_sync_interval)
        self._kick_writer()

    def _kick_writer(self) -> None:
        cfg = self.cfg
        wq = self.writeq
        while wq and not self.j_full:
            if self.aio_num > 0 and (not cfg.journal_aio or self.wq_bytes < (1 << min(2 * self.aio_num, 24))):
                return  # wait for a write to complete
            batch = []
            nb = 0
            room = self.jcap - self.j_used
            while wq and len(batch) < cfg.journal_max_write_entries:
                e = wq[0]
                if batch and nb + e.size > cfg.journal_max_write_bytes:
                    break
                if nb + e.size > room:
                    break
                wq.popleft()
                batch.append(e)
                nb += e.size
            if not batch:  # journal full: wait for a sync to trim it
                self.j_full = True
                self.journal_full_waits += 1
                self._request_sync()
                return
            self.wq_bytes -= nb
            half = self.jcap // 2
            if self.j_used < half <= self.j_used + nb:
                self._request_sync()  # passing the half-full mark starts a commit
            self.j_used += nb
            if self.j_used > self.peak_journal_used:
                self.peak_journal_used = self.j_used
            je = self.j_entries
            for e in batch:
                je.append((e.seq, e.size))
            self._journal_submit(batch, nb)

    def _journal_submit(self, batch: list[_Entry], nb: int) -> None:
        pos = self.jpos
        reqs = []
        if pos + nb > self.jend:  # wraps: the tail of the ring, then from the top
            first = self.jend - pos
            reqs.append(Request(_WRITE, self.jbase + pos, first, fua=True))
            pos = self.jtop
            nb2 = nb - first
        else:
            nb2 = nb
        reqs.append(Request(_WRITE, self.jbase + pos, nb2, fua=True))
        pos += nb2
        self.jpos = pos if pos < self.jend else self.jtop
        rec = [len(reqs), batch, nb, False, self.env._now]
        for r in reqs:
            r.tag = rec
        self.aio_q.append(rec)
        self.aio_num += 1
        if self.aio_num > self.peak_aio:
            self.peak_aio = self.aio_num
        self.journal_writes += 1
        self.journal_entries += len(batch)
        self.journal_bytes += nb
        for r in reqs:
            self.jdev.submit(r).callbacks.append(self._journal_done)

    def _journal_done(self, ev: Any) -> None:
        r = ev._value
        r.event = None
        rec = r.tag
        rec[0] -= 1
        if rec[0]:
            return
        rec[3] = True
        now = self.env._now
        self.journal_time += now - rec[4]
        q = self.aio_q
        jq = self.jq
        ready = self.ready
        while q and q[0][3]:
            r = q.popleft()
            self.aio_num -= 1
            for e in r[1]:
                jq.put(e.size)
                e.cb(e.op)  # committed: the OSD acks (or replies to its primary)
                osr = e.osr
                osr.q.append(e)
                if not osr.busy and len(osr.q) == 1:
                    ready.append(osr)
        self._apply_kick()
        if self._waiters:
            self._wake_throttle()
        self._kick_writer()

    # ------------------------------------------------------------------ apply
    def _apply_kick(self) -> None:
        ready = self.ready
        while self.free_threads > 0 and ready:
            osr = ready.popleft()
            if osr.busy or not osr.q:
                continue
            e = osr.q.popleft()
            osr.busy = True
            self.free_threads -= 1
            if self.cfg.wbthrottle and self._need_flush():
                self.apply_wb_waits += 1
                self.wb_blocked.append((osr, e))  # the thread blocks in WBThrottle::throttle()
                continue
            self._apply_run(osr, e)

    def _apply_run(self, osr: _Osr, e: _Entry) -> None:
        cost = self.cfg.apply_cost
        if self.cpu is not None and cost > 0:
            call_at(self.env, self.cpu.book(self.env._now, cost), self._apply_done, (osr, e))
        else:
            call_later(self.env, 0.0, self._apply_done, (osr, e))

    def _apply_done(self, ev: Any) -> None:
        osr, e = ev._value
        op = e.op
        cfg = self.cfg
        n = op.length
        if op.kind == _WRITE and n > 0:
            u = self.unit
            key = op.objkey
            first = op.off // u
            last = (op.off + n - 1) // u
            if self.buffered_write:
                self.cache.insert_range(key, first, last + 1)
            pg = self.pages.get(key)
            if pg is None:
                pg = self.pages[key] = (e.base, set())
            pg[1].update(range(first, last + 1))
            w = self.wb.get(key)
            if w is None:
                w = self.wb[key] = _Wb()
            w.ios += 1
            w.nbytes += n
            self.wb_ios += 1
            self.wb_bytes += n
            if self.wb_ios > self.peak_wb_ios:
                self.peak_wb_ios = self.wb_ios
        elif op.kind != _READ and len(self.cache):  # trim: the range leaves the page cache
            u = self.unit
            self.cache.discard_range(op.objkey, op.off // u, (op.off + max(n, 1) - 1) // u + 1)
        self.omap_pending += cfg.omap_bytes
        self.logged[op.objkey] = e.base
        self.unapplied.discard(e.seq)
        self.applied += 1
        self.opq.put(n if op.kind == _WRITE else 0)
        osr.busy = False
        self.free_threads += 1
        if osr.q:
            self.ready.append(osr)
        if self._waiters:
            self._wake_throttle()
        self._apply_kick()
        if cfg.wbthrottle and not self.flushing and self._beyond_limit():
            self._flusher_next()

    # ------------------------------------------------------------------ WBThrottle
    def _beyond_limit(self) -> bool:
        c = self.cfg
        return bool(self.wb) and (
            self.wb_ios >= c.wb_ios_start_flusher
            or self.wb_bytes >= c.wb_bytes_start_flusher
            or len(self.wb) >= c.wb_inodes_start_flusher
        )

    def _need_flush(self) -> bool:
        c = self.cfg
        return self.wb_ios > c.wb_ios_hard_limit or self.wb_bytes > c.wb_bytes_hard_limit or len(self.wb) > c.wb_inodes_hard_limit

    def _extents(self, base: int, pages: set[int]) -> list[Request]:
        u = self.unit
        reqs = []
        start = prev = -2
        for p in sorted(pages):
            if p != prev + 1:
                if start >= 0:
                    reqs.append(Request(_WRITE, base + start * u, (prev - start + 1) * u))
                start = p
            prev = p
        if start >= 0:
            reqs.append(Request(_WRITE, base + start * u, (prev - start + 1) * u))
        return reqs

    def _submit_all(self, reqs: list[Request], cb: Any) -> None:
        sb = self._submit_batch
        if sb is not None and len(reqs) > 1:
            evs = sb(reqs)
        else:
            evs = [self.dev.submit(r) for r in reqs]
        for ev in evs:
            ev.callbacks.append(cb)

    def _flusher_next(self) -> None:
        """The flusher thread takes the oldest file of the WBThrottle and fdatasyncs it: its dirty
        pages, after any of its pages a running sync is writing, then a FLUSH."""
        key, w = self.wb.popitem(last=False)
        self.wb_ios -= w.ios
        self.wb_bytes -= w.nbytes
        self.flushing = True
        pg = self.pages.pop(key, None)
        reqs = self._extents(*pg) if pg is not None else []
        st = [len(reqs) + (1 if key in self._sync_left else 0)]
        self._flush_state = st
        self._flush_key = key
        self.flusher_ios += len(reqs)
        if st[0] == 0:
            self._fdatasync_flush()
            return
        for r in reqs:
            r.tag = st
        if reqs:
            self._submit_all(reqs, self._fdatasync_io)

    def _fdatasync_io(self, ev: Any) -> None:
        r = ev._value
        r.event = None
        st = r.tag
        st[0] -= 1
        if st[0] == 0:
            self._fdatasync_flush()

    def _fdatasync_flush(self) -> None:
        self._flush_state = None
        self.dev.submit(Request(_FLUSH)).callbacks.append(self._fdatasync_done)

    def _fdatasync_done(self, ev: Any) -> None:
        ev._value.event = None
        self.fdatasyncs += 1
        self.flushing = False
        self._wb_wake()
        if self.cfg.wbthrottle and self._beyond_limit():
            self._flusher_next()

    def _wb_wake(self) -> None:
        b = self.wb_blocked
        while b and not self._need_flush():
            osr, e = b.popleft()
            self._apply_run(osr, e)

    # ------------------------------------------------------------------ sync
    def _schedule_sync(self, delay: float) -> None:
        t = self.env._now + delay
        if self._sync_at >= 0 and self._sync_at <= t:
            return
        self._sync_at = t
        self._sync_gen += 1
        call_later(self.env, delay, self._sync_timer, self._sync_gen)

    def _request_sync(self) -> None:
        """Start a commit as soon as min_sync_interval allows (journal half full or full)."""
        if self.syncing:
            self._sync_again = True
            return
        self._schedule_sync(max(0.0, self.last_sync + self.cfg.min_sync_interval - self.env._now))

    def _sync_timer(self, ev: Any) -> None:
        if ev._value != self._sync_gen:
            return  # superseded
        self._sync_at = -1.0
        if self.syncing:
            return
        if not self.j_entries and not self.pages and not self.omap_pending and not self.logged:
            return  # nothing to commit: the next write re-arms the timer (no events while idle)
        self._sync_start()

    def _sync_start(self) -> None:
        """syncfs: every dirty page of the file system and the LevelDB log, then the XFS log force."""
        self.syncing = True
        self._sync_again = False
        self._sync_t0 = self.env._now
        un = self.unapplied
        self._sync_cp = (min(un) - 1) if un else self.seq
        files = self.pages
        self.pages = {}
        reqs: list[Request] = []
        left = self._sync_left
        st = [0]
        for key, (base, pages) in files.items():
            rs = self._extents(base, pages)
            left[key] = len(rs)
            for r in rs:
                r.tag = (st, key)
            reqs.extend(rs)
        if self.omap_pending:
            nb = _align_up(self.omap_pending, _PAGE)
            self.omap_pending = 0
            pos = self.omap_pos
            if pos + nb > self.omap_span:
                pos = 0
            reqs.append(Request(_WRITE, self.omap_lo + pos, min(nb, self.omap_span), tag=(st, None)))
            self.omap_pos = pos + nb
        self._sync_logged = self.logged
        self.logged = {}
        st[0] = len(reqs)
        self.sync_ios += len(reqs)
        if not reqs:
            self._sync_log(None)
            return
        reqs.sort(key=lambda r: r.offset)
        self._submit_all(reqs, self._sync_io)

    def _sync_io(self, ev: Any) -> None:
        r = ev._value
        r.event = None
        st, key = r.tag
        if key is not None:
            left = self._sync_left
            n = left[key] - 1
            if n:
                left[key] = n
            else:
                del left[key]
                if self.flushing and self._flush_key == key and self._flush_state is not None:
                    fs = self._flush_state  # the flusher's fdatasync waited for these pages
                    fs[0] -= 1
                    if fs[0] == 0:
                        self._fdatasync_flush()
        st[0] -= 1
        if st[0] == 0:
            self._sync_log(None)

    def _sync_log(self, ev: Any) -> None:
        """XFS log force: a cache flush, then the log write with FUA."""
        self.dev.submit(Request(_FLUSH)).callbacks.append(self._sync_log_write)

    def _sync_log_write(self, ev: Any) -> None:
        ev._value.event = None
        nb = _align_up(max(1, len(self._sync_logged) * self.cfg.xfs_log_bytes), _PAGE)
        span = self.log_hi - self.log_lo
        nb = min(nb, span)
        pos = self.log_pos
        if pos + nb > span:
            pos = 0
        self.log_pos = pos + nb
        self.dev.submit(Request(_WRITE, self.log_lo + pos, nb, fua=True)).callbacks.append(self._sync_done)

    def _sync_done(self, ev: Any) -> None:
        ev._value.event = None
        now = self.env._now
        self.syncs += 1
        self.sync_time += now - self._sync_t0
        self.syncing = False
        self.last_sync = now
        # trim the journal up to the committed sequence
        cp = self._sync_cp
        je = self.j_entries
        freed = 0
        while je and je[0][0] <= cp:
            freed += je.popleft()[1]
        self.j_used -= freed
        # WBThrottle::clear(): everything the sync wrote (and whatever was dirtied meanwhile) leaves it
        self.wb = OrderedDict()
        self.wb_ios = 0
        self.wb_bytes = 0
        # xfsaild writes the logged inodes' clusters in place, in the background
        iw = self.cfg.inode_writeback
        if iw and self._sync_logged:
            meta = self._meta_offset
            reqs = [Request(_WRITE, meta(b), iw) for b in self._sync_logged.values()]
            reqs.sort(key=lambda r: r.offset)
            self.inode_writes += len(reqs)
            self._submit_all(reqs, _ignore)
        self._sync_logged = {}
        self._wb_wake()
        if self.j_full and freed:
            self.j_full = False
        self._kick_writer()
        if self._sync_again or self.j_full:
            self._request_sync()
        else:
            self._schedule_sync(self.cfg.max_sync_interval)


def _ignore(ev: Any) -> None:
    ev._value.event = None

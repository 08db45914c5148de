"""ceph-osd: messenger, sharded op queue with per-PG ordering, primary-copy replication.

An op reaches an OSD as an already-decoded message (the receiver's messenger CPU cost was booked
on the host CPU at the message's arrival). It is queued on shard ``ps % op_num_shards``; each shard
has ``op_num_threads_per_shard`` worker threads, and a worker takes the oldest op whose PG is not
being processed by another worker (the PG lock), so ops of one PG are processed one at a time and
in arrival order. Processing books the op's CPU cost on the host's CPU pool; then:

* client read (primary): buffer-cache hit -> reply; miss -> the worker stays blocked while
  BlueStore reads the device (BlueStore reads are synchronous in the op thread in Nautilus), then
  reply. At most ``shards x threads`` reads per OSD are therefore at the device at once.
* client write (primary): BlueStore's throttles may block the worker; then the repops go to
  the up replicas (messages booked on the sender's CPU + network + receiver's CPU), the local
  transaction is queued, and the worker is free. The primary replies to the client once its own
  commit and every up replica's commit reply are in: a write is as slow as the slowest replica.
* repop (replica): CPU, throttle, local transaction; on commit a reply message to the primary,
  which processes it through its op queue like any op (``reply_cost``).

A job whose length is known when it starts (a commit reply, a cache-hit read) books its CPU and its
consequences at once and releases its worker lazily, at the job's end, without an event of its own
unless an op waits for that worker (then one wake-up event).
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING, Any

from simulator.ceph.resources import CpuThread, call_at, then
from simulator.core.ceph_arith import lognormal_cost
from simulator.devices.base import Op
from simulator.engine import Component

if TYPE_CHECKING:
    from simulator.ceph.cluster import Cluster, Host
    from simulator.ceph.config import OsdConfig
    from simulator.ceph.store import ObjectStore

__all__ = ["PG", "ObjOp", "Osd"]

_READ = int(Op.READ)
_WRITE = int(Op.WRITE)
_TRIM = int(Op.TRIM)

CLIENT, SUBOP, REPLY = 0, 1, 2

#: handlers of the op roles other modules add (erasure-coded client ops and shard reads in
#: simulator.ceph.ec, recovery pushes in simulator.ceph.recovery): role -> f(osd, shard, op), called
#: by the worker that took the op (it holds the op's PG until the handler releases it)
EXT_ROLES: dict[int, Any] = {}


class PG:
    """A placement group at run time: acting set (OSD objects; position 0 = CRUSH primary)."""

    __slots__ = ("acting", "blocked", "min_size", "pgid", "pool", "ppos", "ps", "shard_seed")

    def __init__(self, pool: Any, ps: int, acting: list[Osd], min_size: int):
        self.pool = pool
        self.ps = ps
        self.acting = acting
        self.min_size = min_size
        self.blocked: list[ObjOp] = []
        self.pgid = f"{pool.id}.{ps:x}"
        self.shard_seed = ps
        self.ppos = 0  # acting-set index of the acting primary, -1 = inactive (set by the cluster)

    def primary_pos(self) -> int:
        """Index in the acting set of the acting primary (first up OSD), -1 if the PG is inactive."""
        up = 0
        first = -1
        for i, o in enumerate(self.acting):
            if o.up:
                up += 1
                if first < 0:
                    first = i
        return first if up >= self.min_size else -1

    def __repr__(self) -> str:
        return f"<PG {self.pgid} {[o.id for o in self.acting]}>"


class ObjOp:
    """One object operation (client op at the primary, or a repop at a replica)."""

    __slots__ = (
        "commits", "cost", "group", "image", "kind", "length", "obj_size", "objkey", "objno", "off", "onode_hit",
        "osd", "pending", "pg", "pos", "primary_op", "req", "role", "shard", "t0", "t_local",
    )
    #: queued in the shard's background (recovery) queue, see simulator.ceph.recovery (class attribute)
    background = False

    def __init__(self, kind: int, role: int, pg: PG, image: Any, objno: int, off: int, length: int):
        self.kind = kind
        self.role = role
        self.pg = pg
        self.image = image
        self.objno = objno
        self.objkey = image.key_base + objno
        self.obj_size = image.obj_size
        self.off = off
        self.length = length
        self.pos = 0
        self.osd: Osd | None = None
        self.primary_op: ObjOp | None = None
        self.pending = 0
        self.onode_hit = True
        self.t_local = 0.0
        self.group: list | None = None
        self.req = None
        self.shard = None
        self.t0 = 0.0
        self.commits: list | None = None
        self.cost = 0

    def relocate(self, new_base: int) -> None:
        """A full-object overwrite went to a new extent: later reads go there."""
        self.image.set_base(self.objno, self.pos, new_base)

    def __repr__(self) -> str:
        return f"<ObjOp {Op(self.kind).name} role={self.role} pg={self.pg.pgid} obj={self.objno} off={self.off} len={self.length}>"


class _Shard:
    """An op queue shard: its idle worker threads, its queue, and the workers that finish a job of
    known length at a known time (``lazy``: (t_end, pg)) and are released without an event of
    their own unless an op is waiting for them (``wake_at``: time of the scheduled release).
    ``rq``: recovery ops; while any wait, the cluster's Recovery picks the next op (wpq / mClock).
    ``inflight``: messages on their way to this shard that will be queued on arrival (an op sent
    while it is non-zero is never dispatched ahead of them: see :meth:`Osd.deliver`)."""

    __slots__ = ("free", "inflight", "lazy", "q", "rq", "th", "wake_at")

    def __init__(self, threads: int):
        self.free = threads
        self.inflight = 0
        self.q: deque[ObjOp] = deque()
        self.rq: deque[ObjOp] = deque()
        self.lazy: list[tuple[float, PG]] = []
        self.wake_at = -1.0
        #: the shard's workers' wake state under the per-thread wakeup rule (set by the OSD)
        self.th: CpuThread | None = None


class Osd(Component):
    """``osd.<id>``: op queue shards, CPU costs on its host, BlueStore on its device."""

    def __init__(self, name: str, parent: Component, osd_id: int, host: Host, cluster: Cluster, cfg: OsdConfig):
        super().__init__(name, parent)
        self.id = osd_id
        self.host = host
        self.cluster = cluster
        self.cfg = cfg
        self.up = True
        self.device_class = ""
        self.weight = 1.0
        self.bs: ObjectStore | None = None  # BlueStore or FileStore, set by the cluster builder
        self.device = None  # the OSD's volume (drive, LUN or LV) as the cluster describes it
        self.io_device = None  # what BlueStore submits to (the volume behind the host's block layer)
        self.db_device = None  # DB/WAL volume on a shared device, if any
        self.shards = [_Shard(cfg.op_num_threads_per_shard) for _ in range(cfg.op_num_shards)]
        self.nshards = cfg.op_num_shards
        self.busy_pgs: set[PG] = set()
        self.cpu = host.cpu
        #: this OSD's threads under the per-thread wakeup rule (CpuPool.run): the messenger thread that carries
        #: its messages, the op-shard workers (one wake state per shard), the commit finisher (kv_final)
        self.th_msgr = host.cpu.thread("osd.msgr", queued=False)
        self.th_final = host.cpu.thread("osd.finisher")
        for sh in self.shards:
            sh.th = host.cpu.thread("osd.op_worker")
        cv = cfg.cost_cv
        self._jitter = cv > 0
        self._ln_s = math.sqrt(math.log1p(cv * cv)) if cv > 0 else 0.0
        self._ln_mu = -0.5 * self._ln_s * self._ln_s
        self.reset_stats()

    def _cost(self, mean: float) -> float:
        """An op processing cost: ``mean``, or log-normal with mean ``mean`` and cv ``cost_cv``."""
        if not self._jitter or mean <= 0.0:
            return mean
        r = self.rand
        u1 = r.random()
        return lognormal_cost(mean, self._ln_mu, self._ln_s, u1, r.random())

    def reset_stats(self) -> None:
        self.ops = [0, 0, 0, 0]  # client ops by kind
        self.subops = 0
        self.replies = 0

    # ------------------------------------------------------------------ queueing
    def post(self, t: float, op: ObjOp) -> None:
        """A message carrying ``op`` is decoded by this OSD's messenger at ``t``: it joins its
        shard's queue then (one event)."""
        self.shards[op.pg.shard_seed % self.nshards].inflight += 1
        call_at(self.env, t, self.on_op, op)

    def deliver(self, t: float, op: ObjOp, recv_cost: float) -> None:
        """A message carrying ``op`` (a replicated write, a repop or a commit reply) arrives at
        ``t`` and costs ``recv_cost`` of messenger CPU. When the op's shard has a worker free now,
        nothing queued, no message on its way and the op's PG idle, the op is dispatched now for
        the time its decoding ends: the worker is taken from now (a few tens of microseconds
        early, while the message is on the wire) and the op's processing is booked after its
        decoding, so the message's arrival costs no event of its own (the fold of issue 13).
        The fold needs a host CPU with a core still idle now once the decoding is booked
        (:meth:`CpuPool.idle`): a job booked ahead of its start holds its core from now (see
        simulator.ceph.resources), and must not hold back the jobs that arrive before it on a busy
        or small CPU. Otherwise (or while recovery runs, or when the decoding stalls) it is posted as before."""
        cpu = self.cpu
        sh = self.shards[op.pg.shard_seed % self.nshards]
        if sh.lazy:
            self._settle(sh)
        if (sh.free > 0 and not sh.inflight and not sh.q and not sh.rq and op.pg not in self.busy_pgs
                and self.cluster.recovery is None):
            t = cpu.run(self.th_msgr, t, recv_cost)
            if not cpu.stalled and cpu.idle(self.env._now):
                self._dispatch_at(sh, op, t)
                return
        else:
            t = cpu.run(self.th_msgr, t, recv_cost)
        sh.inflight += 1
        call_at(self.env, t, self.on_op, op)

    def _dispatch_at(self, sh: _Shard, op: ObjOp, t: float) -> None:
        """:meth:`_dispatch` of a write, repop or commit reply whose decoding ends at ``t`` (booked
        now, see :meth:`deliver`)."""
        sh.free -= 1
        pg = op.pg
        self.busy_pgs.add(pg)
        op.shard = sh
        role = op.role
        cfg = self.cfg
        cpu = self.cpu
        if role == REPLY:
            self.replies += 1
            t = cpu.run(sh.th, t, self._cost(cfg.reply_cost))
            then(cpu, t, self._commit_in, op.primary_op)
            self._release_at(sh, pg, t)
        elif role == SUBOP:
            self.subops += 1
            call_at(self.env, cpu.run(sh.th, t, self._cost(cfg.subop_cost)), self._write_prepared, op)
        else:
            self.ops[op.kind] += 1
            call_at(self.env, cpu.run(sh.th, t, self._cost(cfg.write_cost)), self._write_prepared, op)

    def on_op(self, ev: Any) -> None:
        op = ev._value
        self.shards[op.pg.shard_seed % self.nshards].inflight -= 1
        self.enqueue(op)

    def enqueue(self, op: ObjOp) -> None:
        sh = self.shards[op.pg.shard_seed % self.nshards]
        if sh.lazy:
            self._settle(sh)
        if sh.free > 0 and not sh.q and not sh.rq and op.pg not in self.busy_pgs:
            self._dispatch(sh, op)
        else:
            (sh.rq if op.background else sh.q).append(op)
            if sh.rq and sh.free > 0:
                self._next(sh)
            if sh.lazy:
                self._arm(sh)

    def _settle(self, sh: _Shard) -> None:
        """Release the lazily finishing workers whose job has ended by now."""
        now = self.env._now
        keep = []
        busy = self.busy_pgs
        for t, pg in sh.lazy:
            if t <= now:
                sh.free += 1
                busy.discard(pg)
            else:
                keep.append((t, pg))
        sh.lazy = keep

    def _arm(self, sh: _Shard) -> None:
        """Ops wait in ``sh``: make sure an event releases the next lazily finishing worker."""
        t = min(t for t, _ in sh.lazy)
        if sh.wake_at < 0 or t < sh.wake_at:
            sh.wake_at = t
            call_at(self.env, t, self._wake, sh)

    def _wake(self, ev: Any) -> None:
        sh = ev._value
        if sh.wake_at != self.env._now:
            return  # superseded by an earlier wake-up
        sh.wake_at = -1.0
        self._settle(sh)
        if sh.q or sh.rq:
            self._next(sh)
        if (sh.q or sh.rq) and sh.lazy:
            self._arm(sh)

    def _release_at(self, sh: _Shard, pg: PG, t: float) -> None:
        """The worker holding ``pg`` is busy until ``t`` (a CPU job whose end is known), then free."""
        sh.lazy.append((t, pg))
        if sh.q or sh.rq:
            self._arm(sh)

    def _next(self, sh: _Shard) -> None:
        if sh.rq:  # recovery ops wait too: the op-queue scheduler picks (simulator.ceph.recovery)
            self.cluster.recovery.serve(self, sh)
            return
        q = sh.q
        busy = self.busy_pgs
        if self.cpu.threaded and sh.th.until < self.env._now:  # the per-thread wakeup rule (CpuPool.run)
            sh.th.until = self.env._now  # a worker just freed takes the queued op without going to sleep
        while sh.free > 0 and q:
            op = q[0]
            if op.pg in busy:
                for i in range(1, len(q)):
                    if q[i].pg not in busy:
                        op = q[i]
                        del q[i]
                        break
                else:
                    return
            else:
                q.popleft()
            self._dispatch(sh, op)

    def _release(self, op: ObjOp) -> None:
        self._free(op.shard, op.pg)

    def _free(self, sh: _Shard, pg: PG) -> None:
        sh.free += 1
        self.busy_pgs.discard(pg)
        if sh.q or sh.rq:
            if sh.lazy:
                self._settle(sh)
            self._next(sh)
            if (sh.q or sh.rq) and sh.lazy:
                self._arm(sh)

    def _dispatch(self, sh: _Shard, op: ObjOp) -> None:
        sh.free -= 1
        self.busy_pgs.add(op.pg)
        op.shard = sh
        env = self.env
        role = op.role
        cfg = self.cfg
        if role == CLIENT:
            kind = op.kind
            self.ops[kind] += 1
            if kind == _READ:
                base = op.image.base_of(op.objno, op.pos)
                bs = self.bs
                if base < 0:  # object does not exist: zeros, no IO
                    t = self.cpu.run(sh.th, env._now, self._cost(cfg.read_cost))
                    then(self.cpu, t, self._reply_client, op)
                    self._release_at(sh, op.pg, t)
                    return
                hit = bs.probe_read(op.objkey, op.off, op.length)
                onode_hit = bs.probe_onode(op.objkey)
                cost = self._cost(cfg.read_cost)
                if not onode_hit:
                    cost += bs.meta_miss_cost
                if hit:  # served from the cache: the worker's job and the reply time are known now
                    cost += bs.hit_cost
                    t = self.cpu.run(sh.th, env._now, cost)
                    then(self.cpu, t, self._reply_client, op)
                    self._release_at(sh, op.pg, t)
                else:
                    op.onode_hit = onode_hit
                    call_at(env, self.cpu.run(sh.th, env._now, cost), self._read_miss, op)
            else:
                call_at(env, self.cpu.run(sh.th, env._now, self._cost(cfg.write_cost)), self._write_prepared, op)
        elif role == SUBOP:
            self.subops += 1
            call_at(env, self.cpu.run(sh.th, env._now, self._cost(cfg.subop_cost)), self._write_prepared, op)
        elif role == REPLY:
            # a replica's commit reply: the worker holds the PG for reply_cost; the write is
            # answered once every reply and the local commit are in (no event of its own)
            self.replies += 1
            t = self.cpu.run(sh.th, env._now, self._cost(cfg.reply_cost))
            then(self.cpu, t, self._commit_in, op.primary_op)
            self._release_at(sh, op.pg, t)
        else:
            EXT_ROLES[role](self, sh, op)

    # ------------------------------------------------------------------ reads
    def _read_miss(self, ev: Any) -> None:
        op = ev._value
        base = op.image.base_of(op.objno, op.pos)
        self.bs.read(op, base, op.onode_hit, self._read_done)

    def _read_done(self, op: ObjOp) -> None:
        # the reply is sent before the worker takes its next op (whose bookings follow)
        self._reply_client(op, self.env._now)
        self._release(op)

    # ------------------------------------------------------------------ writes
    def _write_prepared(self, ev: Any) -> None:
        op = ev._value
        bs = self.bs
        if not bs.probe_onode(op.objkey) and bs.meta_miss_read > 0:
            # the transaction needs the object's onode: a synchronous DB read in the op thread
            bs.read_onode(op, self._write_onode_loaded)
            return
        if bs.admit(op, self._write_admitted):
            self._write_admitted(op)
        # else: the worker thread stays blocked until the throttle lets the op in

    def _write_onode_loaded(self, op: ObjOp) -> None:
        if self.bs.admit(op, self._write_admitted):
            self._write_admitted(op)

    def _write_admitted(self, op: ObjOp) -> None:
        # the worker queues the repops and the transaction, then takes its next op
        bs = self.bs
        sh = op.shard
        if op.role == CLIENT:
            pg = op.pg
            env = self.env
            now = env._now
            net = self.cluster.net
            cfg = self.cfg
            payload = op.length if op.kind == _WRITE else 0
            pending = 1
            for i, r in enumerate(pg.acting):
                if r is self or not r.up:
                    continue
                sub = ObjOp(op.kind, SUBOP, pg, op.image, op.objno, op.off, op.length)
                sub.pos = i
                sub.primary_op = op
                sub.osd = r
                per_byte = cfg.msgr_cost_per_byte * payload
                t = self.cpu.run(self.th_msgr, now, cfg.msgr_send_cost + per_byte)
                if self.cpu.stalled:
                    then(self.cpu, t, self._send_sub, sub)
                else:
                    r.deliver(net.arrival(self.host, r.host, t, payload), sub, cfg.msgr_recv_cost + per_byte)
                pending += 1
            rec = self.cluster.recovery
            if rec is not None and pg in rec.jobs:  # backfill targets get the write too
                pending += rec.mirror(self, op, None, now)
            op.pending = pending
            bs.write(op, self._base(op), pg, self._local_committed)
        else:
            bs.write(op, self._base(op), op.pg, self._subop_committed)
        self._free(sh, op.pg)

    def _send_sub(self, sub: ObjOp, t: float) -> None:
        """A repop leaves at ``t`` (its send was stalled; called at ``t``)."""
        payload = sub.length if sub.kind == _WRITE else 0
        r = sub.osd
        t = self.cluster.net.arrival(self.host, r.host, t, payload)
        r.deliver(t, sub, self.cfg.msgr_recv_cost + self.cfg.msgr_cost_per_byte * payload)

    def _base(self, op: ObjOp) -> int:
        b = op.image.base_of(op.objno, op.pos)
        if b < 0:
            b = self.bs.alloc(op.obj_size)
            op.image.set_base(op.objno, op.pos, b)
        return b

    def _local_committed(self, op: ObjOp) -> None:
        now = self.env._now
        if op.commits is not None:
            op.commits.append((self.id, now))
        then(self.cpu, self.cpu.run(self.th_final, now, self.cfg.commit_cost), self._commit_in, op)

    def _commit_in(self, op: ObjOp, t: float) -> None:
        """A commit of client write ``op`` (local, or a replica's reply) is processed by ``t``; the last one
        answers the client."""
        if t > op.t_local:
            op.t_local = t
        op.pending -= 1
        if op.pending == 0:
            self._reply_client(op, op.t_local)

    def _subop_committed(self, sub: ObjOp) -> None:
        env = self.env
        now = env._now
        prim = sub.primary_op
        if prim.commits is not None:
            prim.commits.append((self.id, now))
        cfg = self.cfg
        sub.role = REPLY
        then(self.cpu, self.cpu.run(self.th_final, now, cfg.commit_cost + cfg.msgr_send_cost), self._send_reply, sub)

    def _send_reply(self, sub: ObjOp, t: float) -> None:
        """A replica's commit reply leaves at ``t`` for the primary."""
        posd = sub.primary_op.osd
        posd.deliver(self.cluster.net.arrival(self.host, posd.host, t, 0), sub, self.cfg.msgr_recv_cost)

    # ------------------------------------------------------------------ to the client
    def _reply_client(self, op: ObjOp, t: float) -> None:
        cfg = self.cfg
        cost = cfg.msgr_send_cost
        if op.kind == _READ:
            cost += cfg.msgr_cost_per_byte * op.length
        then(self.cpu, self.cpu.run(self.th_msgr, t, cost), self._to_client, op)

    def _to_client(self, op: ObjOp, t: float) -> None:
        self.cluster.client_reply(self.host, op, t)

    def stats(self) -> dict[str, Any]:
        dev = self.device.stats() if self.device is not None else {}
        io = self.io_device
        while io is not None and not hasattr(io, "nr_requests"):
            io = getattr(io, "base", None)
        return {
            "osd": self.id,
            "host": self.host.name,
            "device_class": self.device_class,
            "up": self.up,
            "client_ops": {Op(i).name.lower(): n for i, n in enumerate(self.ops) if i < 3},
            "subops": self.subops,
            "replies": self.replies,
            "device": dev.get("path"),
            "device_utilisation": dev.get("utilisation", 0.0),
            "device_mean_queue_depth": dev.get("mean_queue_depth", 0.0),
            "db_device": self.db_device.path if self.db_device is not None else None,
            "block_layer": io.stats()["blocklayer"] if io is not None else None,
            (self.bs.KIND if self.bs is not None else "bluestore"): self.bs.stats() if self.bs is not None else {},
        }

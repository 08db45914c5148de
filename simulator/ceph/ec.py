"""Erasure-coded pools: the primary's side of ECBackend (stripe layout, read/write plans, sub-reads,
read-modify-write, encode/decode CPU) on top of the OSD's op queue and object store.

Layout (``ErasureCodeConfig``): a stripe is ``k x stripe_unit`` bytes of an object; data chunk i of
stripe s is object bytes [s*sw + i*su, s*sw + (i+1)*su) and lives at [s*su, (s+1)*su) of shard i;
shards k..k+m-1 hold the coding chunks of each stripe. Shard j is on the OSD at position j of the PG's
acting set (``chooseleaf indep``: positions are stable when another shard's OSD fails). An object of
``obj_size`` bytes takes ``shard_size = ceil(obj_size / sw) x su`` bytes on each of its k+m OSDs.

Client op at the primary (role ``EC_CLIENT``, queued like any client op; its worker holds the PG for
the op's CPU and while it issues the sub-operations):

* **read**: ``read_cost``, then sub-reads (role ``EC_SUBREAD``; ``ec_subread_cost`` and a BlueStore read
  at the shard, synchronous in its op thread as client reads are; a reply message carrying the data;
  ``reply_cost`` at the primary per reply). Healthy: the k data shards over the stripe-aligned range
  (ECBackend through Reef), or with ``partial_reads`` only the data shards whose chunks cover the
  range. A needed data shard on a down OSD: the stripes are read from k up shards (data shards first,
  then coding shards) and decoded on the primary's CPU (``decode_rate``).
* **write**: ``write_cost``; a write covering whole stripes needs no read. Otherwise (allow_ec_overwrites)
  the partial head/tail stripes are read first (``full_stripe``: every data chunk of those stripes;
  ``touched_chunks``: only the data chunks the write does not fully cover; a missing shard: k up shards
  and a decode), then encoded (``encode_rate`` over the touched stripes) and written: ``full_stripe``
  writes all k+m shards over the touched stripes; ``touched_chunks`` writes the data shards the write
  touches and all m coding shards. Shard writes are repops to the other positions (the OSD's SUBOP path:
  CPU, throttles, BlueStore transaction, commit reply) and a local transaction for the primary's own
  shard; the client is answered when every up shard has committed. Shards on down OSDs are skipped
  (degraded write).

Not modelled: ECBackend's extent cache and pipeline ordering of overlapping RMW writes of one
object, hash-info xattrs, the object-map of the image.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from simulator.ceph.osd import EXT_ROLES, REPLY, SUBOP, ObjOp
from simulator.ceph.resources import call_at, then
from simulator.devices.base import Op

if TYPE_CHECKING:
    from simulator.ceph.osd import Osd

__all__ = ["EC_CLIENT", "EC_READREPLY", "EC_SUBREAD", "EcOp", "EcStats", "shard_size", "stripe_plan"]

EC_CLIENT, EC_SUBREAD, EC_READREPLY = 3, 4, 5
_READ = int(Op.READ)
_WRITE = int(Op.WRITE)
_TRIM = int(Op.TRIM)


def shard_size(pool: Any, obj_size: int) -> int:
    """Bytes of an object of ``obj_size`` on each acting-set OSD of ``pool`` (one shard for EC)."""
    ec = getattr(pool, "ec", None)
    if ec is None:
        return obj_size
    sw = ec.stripe_width
    return -(-obj_size // sw) * ec.stripe_unit


class EcOp(ObjOp):
    """A client op of an erasure-coded pool (``plan``: the sub-reads and shard writes it issued, as
    (position, shard offset, length) lists; ``decode``: bytes to decode; ``stripes``)."""

    __slots__ = ("decode", "plan", "stripes")

    def __init__(self, *a: Any) -> None:
        super().__init__(*a)
        self.plan: dict[str, list[tuple[int, int, int]]] = {"reads": [], "writes": []}
        self.decode = 0
        self.stripes = (0, 0)


class EcStats:
    """Per-pool counters of the erasure-coded data path."""

    __slots__ = ("client_reads", "client_writes", "decode_bytes", "degraded_reads", "encode_bytes", "full_stripe_writes",
                 "rmw_writes", "shard_write_bytes", "shard_writes", "subread_bytes", "subreads")

    def __init__(self) -> None:
        for k in self.__slots__:
            setattr(self, k, 0)

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__slots__}


def stripe_plan(ec: Any, off: int, length: int) -> tuple[int, int, list[int]]:
    """(first stripe, last stripe, the partial stripes among them) of object range [off, off+length)."""
    sw = ec.stripe_width
    end = off + length
    s0 = off // sw
    s1 = (end - 1) // sw
    partial = []
    if off % sw:
        partial.append(s0)
    if end % sw and s1 not in partial:
        partial.append(s1)
    return s0, s1, partial


def _chunk_range(ec: Any, s: int, i: int) -> tuple[int, int]:
    """Object byte range of data chunk ``i`` of stripe ``s``."""
    a = s * ec.stripe_width + i * ec.stripe_unit
    return a, a + ec.stripe_unit


def _up(pg: Any, pos: int) -> bool:
    return pg.acting[pos].up


def _k_up(pg: Any, ec: Any, prefer: list[int]) -> list[int]:
    """k positions of up shards: those in ``prefer`` first, then data shards, then coding shards."""
    out = [p for p in prefer if _up(pg, p)]
    for p in range(ec.k + ec.m):
        if len(out) >= ec.k:
            break
        if p not in out and _up(pg, p):
            out.append(p)
    return out[: ec.k]


# ====================================================================== primary: client ops
def _dispatch_client(osd: Osd, sh: Any, op: EcOp) -> None:
    osd.ops[op.kind] += 1
    cfg = osd.cfg
    now = osd.env._now
    if op.kind == _READ:
        call_at(osd.env, osd.cpu.book(now, osd._cost(cfg.read_cost)), _read_start, op)
    else:
        call_at(osd.env, osd.cpu.book(now, osd._cost(cfg.write_cost)), _write_start, op)


def _read_start(ev: Any) -> None:
    op = ev._value
    osd = op.osd
    pool = op.pg.pool
    ec = pool.ec
    st = pool.ec_stats
    st.client_reads += 1
    su = ec.stripe_unit
    s0, s1, _ = stripe_plan(ec, op.off, op.length)
    op.stripes = (s0, s1)
    end = op.off + op.length
    if ec.partial_reads:
        need: dict[int, tuple[int, int]] = {}
        for i in range(ec.k):
            first = last = -1
            for s in range(s0, s1 + 1):
                a, b = _chunk_range(ec, s, i)
                if a < end and b > op.off:
                    if first < 0:
                        first = s
                    last = s
            if first >= 0:
                need[i] = (first * su, (last - first + 1) * su)
    else:
        need = {i: (s0 * su, (s1 - s0 + 1) * su) for i in range(ec.k)}
    pg = op.pg
    if all(_up(pg, p) for p in need):
        reads = [(p, o, n) for p, (o, n) in need.items()]
    else:  # degraded: whole stripes from k up shards, then decode
        st.degraded_reads += 1
        o, n = s0 * su, (s1 - s0 + 1) * su
        reads = [(p, o, n) for p in _k_up(pg, ec, sorted(need))]
        op.decode = (s1 - s0 + 1) * ec.stripe_width
    _issue_reads(osd, op, reads)
    osd._release(op)


def _write_start(ev: Any) -> None:
    op = ev._value
    osd = op.osd
    pool = op.pg.pool
    ec = pool.ec
    st = pool.ec_stats
    st.client_writes += 1
    su = ec.stripe_unit
    s0, s1, partial = stripe_plan(ec, op.off, op.length)
    op.stripes = (s0, s1)
    exists = op.image.exists(op.objno)
    if op.kind == _TRIM or not partial or not exists:
        st.full_stripe_writes += 1
        _write_phase(op)
        osd._release(op)
        return
    st.rmw_writes += 1
    pg = op.pg
    off, end = op.off, op.off + op.length
    reads: list[tuple[int, int, int]] = []
    for s in partial:
        if ec.partial_writes == "full_stripe":
            want = list(range(ec.k))
        else:  # the data chunks of this stripe the write does not fully cover
            want = []
            for i in range(ec.k):
                a, b = _chunk_range(ec, s, i)
                if not (off <= a and end >= b):
                    want.append(i)
        if all(_up(pg, p) for p in want):
            reads += [(p, s * su, su) for p in want]
        else:
            reads += [(p, s * su, su) for p in _k_up(pg, ec, want)]
            op.decode += ec.stripe_width
    if reads:
        _issue_reads(osd, op, reads)
    else:
        _write_phase(op)
    osd._release(op)


def _issue_reads(osd: Osd, op: EcOp, reads: list[tuple[int, int, int]]) -> None:
    """Send the sub-reads (position, shard offset, length) of ``op``; the primary's own shard is read
    through its own op queue without a message."""
    op.plan["reads"] = reads
    op.pending = len(reads)
    st = op.pg.pool.ec_stats
    st.subreads += len(reads)
    env = osd.env
    now = env._now
    cfg = osd.cfg
    pg = op.pg
    for pos, o, n in reads:
        st.subread_bytes += n
        sub = ObjOp(_READ, EC_SUBREAD, pg, op.image, op.objno, o, n)
        sub.pos = pos
        sub.primary_op = op
        r = pg.acting[pos]
        sub.osd = r
        if r is osd:
            r.post(now, sub)
            continue
        then(osd.cpu, osd.cpu.book(now, cfg.msgr_send_cost), _subread_out, sub)


def _subread_out(sub: ObjOp, t: float) -> None:
    """A sub-read request leaves the primary at ``t``."""
    osd = sub.primary_op.osd
    r = sub.osd
    t = osd.cluster.net.arrival(osd.host, r.host, t, 0)
    r.post(r.cpu.book(t, osd.cfg.msgr_recv_cost), sub)


def _write_phase(op: EcOp) -> None:
    """Encode the touched stripes and send the shard writes (or queue the local shard transaction)."""
    osd = op.osd
    pool = op.pg.pool
    ec = pool.ec
    st = pool.ec_stats
    env = osd.env
    s0, s1 = op.stripes
    nstripes = s1 - s0 + 1
    enc = nstripes * ec.stripe_width
    st.encode_bytes += enc
    then(osd.cpu, osd.cpu.book(env._now, enc / ec.encode_rate), _write_send, op)


def _write_send(op: EcOp, t: float) -> None:
    """The stripes are encoded at ``t``: the shard writes go out (and to backfill targets)."""
    osd = op.osd
    pool = op.pg.pool
    ec = pool.ec
    st = pool.ec_stats
    env = osd.env
    cfg = osd.cfg
    su = ec.stripe_unit
    s0, s1 = op.stripes
    nstripes = s1 - s0 + 1
    pg = op.pg
    off, end = op.off, op.off + op.length
    writes: list[tuple[int, int, int]] = []
    if ec.partial_writes == "full_stripe" or op.kind == _TRIM:
        writes = [(p, s0 * su, nstripes * su) for p in range(ec.k + ec.m)]
    else:
        for i in range(ec.k):
            first = last = -1
            for s in range(s0, s1 + 1):
                a, b = _chunk_range(ec, s, i)
                if a < end and b > off:
                    if first < 0:
                        first = s
                    last = s
            if first >= 0:
                writes.append((i, first * su, (last - first + 1) * su))
        writes += [(p, s0 * su, nstripes * su) for p in range(ec.k, ec.k + ec.m)]
    rec = osd.cluster.recovery
    mirrored = rec.mirror(osd, op, writes, t) if rec is not None and pg in rec.jobs else 0  # backfill targets
    writes = [w for w in writes if _up(pg, w[0])]
    op.plan["writes"] = writes
    op.pending = len(writes) + mirrored
    obj = op.image.shard_size
    for pos, o, n in writes:
        st.shard_writes += 1
        st.shard_write_bytes += n
        sub = ObjOp(op.kind, SUBOP, pg, op.image, op.objno, o, n)
        sub.obj_size = obj
        sub.pos = pos
        sub.primary_op = op
        r = pg.acting[pos]
        sub.osd = r
        if r is osd:
            call_at(env, t, _local_write, sub)
            continue
        then(osd.cpu, osd.cpu.book(t, cfg.msgr_send_cost + cfg.msgr_cost_per_byte * n), _shard_write_out, sub)


def _shard_write_out(sub: ObjOp, t: float) -> None:
    """A shard write leaves the primary at ``t``."""
    osd = sub.primary_op.osd
    r = sub.osd
    cfg = osd.cfg
    n = sub.length
    ts = osd.cluster.net.arrival(osd.host, r.host, t, n)
    r.post(r.cpu.book(ts, cfg.msgr_recv_cost + cfg.msgr_cost_per_byte * n), sub)


# ---------------------------------------------------------------------- the primary's own shard write
def _local_write(ev: Any) -> None:
    sub = ev._value
    bs = sub.osd.bs
    if not bs.probe_onode(sub.objkey) and bs.meta_miss_read > 0:
        bs.read_onode(sub, _local_onode_loaded)
        return
    _local_onode_loaded(sub)


def _local_onode_loaded(sub: ObjOp) -> None:
    if sub.osd.bs.admit(sub, _local_admitted):
        _local_admitted(sub)


def _local_admitted(sub: ObjOp) -> None:
    osd = sub.osd
    osd.bs.write(sub, osd._base(sub), sub.pg, _local_committed)


def _local_committed(sub: ObjOp) -> None:
    osd = sub.osd
    prim = sub.primary_op
    now = osd.env._now
    if prim.commits is not None:
        prim.commits.append((osd.id, now))
    then(osd.cpu, osd.cpu.book(now, osd.cfg.commit_cost), osd._commit_in, prim)


# ====================================================================== shard: sub-reads
def _dispatch_subread(osd: Osd, sh: Any, sub: ObjOp) -> None:
    env = osd.env
    base = sub.image.base_of(sub.objno, sub.pos)
    cost = osd._cost(osd.cfg.ec_subread_cost)
    if base < 0:  # the object does not exist: zeros, no IO
        t = osd.cpu.book(env._now, cost)
        then(osd.cpu, t, _read_reply_at, sub)
        osd._release_at(sh, sub.pg, t)
        return
    bs = osd.bs
    hit = bs.probe_read(sub.objkey, sub.off, sub.length)
    onode_hit = bs.probe_onode(sub.objkey)
    if not onode_hit:
        cost += bs.meta_miss_cost
    if hit:
        t = osd.cpu.book(env._now, cost + bs.hit_cost)
        then(osd.cpu, t, _read_reply_at, sub)
        osd._release_at(sh, sub.pg, t)
    else:
        sub.onode_hit = onode_hit
        call_at(env, osd.cpu.book(env._now, cost), _subread_miss, sub)


def _subread_miss(ev: Any) -> None:
    sub = ev._value
    osd = sub.osd
    osd.bs.read(sub, sub.image.base_of(sub.objno, sub.pos), sub.onode_hit, _subread_done)


def _subread_done(sub: ObjOp) -> None:
    osd = sub.osd
    _read_reply(osd, sub, osd.env._now)
    osd._release(sub)


def _read_reply_at(sub: ObjOp, t: float) -> None:
    _read_reply(sub.osd, sub, t)


def _read_reply(osd: Osd, sub: ObjOp, t: float) -> None:
    """The shard's data goes back to the primary (a message, unless the shard is the primary's own)."""
    prim = sub.primary_op.osd
    sub.role = EC_READREPLY
    if prim is osd:
        prim.post(t, sub)
        return
    cfg = osd.cfg
    then(osd.cpu, osd.cpu.book(t, cfg.msgr_send_cost + cfg.msgr_cost_per_byte * sub.length), _read_reply_out, sub)


def _read_reply_out(sub: ObjOp, t: float) -> None:
    osd = sub.osd
    prim = sub.primary_op.osd
    cfg = osd.cfg
    n = sub.length
    t = osd.cluster.net.arrival(osd.host, prim.host, t, n)
    prim.post(prim.cpu.book(t, cfg.msgr_recv_cost + cfg.msgr_cost_per_byte * n), sub)


# ====================================================================== primary: sub-read replies
def _dispatch_readreply(osd: Osd, sh: Any, sub: ObjOp) -> None:
    t = osd.cpu.book(osd.env._now, osd._cost(osd.cfg.reply_cost))
    op = sub.primary_op
    op.pending -= 1
    if op.pending == 0 and op.decode:  # the worker goes on to decode (after the reply job's stall, if any)
        then(osd.cpu, t, _decode, sub)
        return
    if op.pending == 0:
        _gathered(op, t)
    osd._release_at(sh, sub.pg, t)


def _decode(sub: ObjOp, t: float) -> None:
    """Decode the stripes read degraded (k shards), still in the worker that took the last reply."""
    osd = sub.primary_op.osd
    op = sub.primary_op
    op.pg.pool.ec_stats.decode_bytes += op.decode
    t = osd.cpu.book(t, op.decode / op.pg.pool.ec.decode_rate)
    if op.kind == _READ:
        then(osd.cpu, t, osd._reply_client, op)
    else:
        call_at(osd.env, t, _write_after_reads, op)
    osd._release_at(sub.shard, sub.pg, t)


def _gathered(op: EcOp, t: float) -> None:
    """Every sub-read is in by ``t`` (no decode): reply to a read, go on with a write."""
    osd = op.osd
    if op.kind == _READ:
        then(osd.cpu, t, osd._reply_client, op)
    else:
        call_at(osd.env, t, _write_after_reads, op)


def _write_after_reads(ev: Any) -> None:
    _write_phase(ev._value)


EXT_ROLES[EC_CLIENT] = _dispatch_client
EXT_ROLES[EC_SUBREAD] = _dispatch_subread
EXT_ROLES[EC_READREPLY] = _dispatch_readreply
assert REPLY not in (EC_CLIENT, EC_SUBREAD, EC_READREPLY)

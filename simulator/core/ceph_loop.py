"""The compiled Ceph core (numba): CPU pools, NIC links, OSD op-queue shards, PGs, librbd's object
ops, and an event loop for client reads (issue 13, stage 2).

The handlers mirror the Python reference model line by line (``ceph.resources.CpuPool`` /
``Link`` / ``Network`` / ``then``, ``ceph.osd.Osd``, ``ceph.cluster.Cluster.send_client_op`` /
``client_reply``, ``ceph.rbd.RbdImage``) and schedule their events in the same order, so ties break
as SimPy breaks them (event id order) and results are identical where the random streams are the
same ones (each Python component's ``rand`` stream is handed over as a buffer of its next uniforms
and given back unconsumed, see ceph_build). The event heap is the one of the device core
(``core.loop.schedule`` / ``_pop``: the same binary heap on (time, sequence); a copy, as numba
cannot cache one function compiled for two state types); the pure arithmetic is
``core.ceph_arith``, which the Python model calls too.
"""

from __future__ import annotations

import math

from numba import njit

from simulator import nbcache
from simulator.core import ceph_arith as _arith
from simulator.core import ceph_layout as _clayout
from simulator.core import loop as _loop
from simulator.core.ceph_arith import lognormal_cost_nb
from simulator.core.ceph_layout import (
    CF_BG,
    CF_BUSY,
    CF_FGBUSY,
    CF_FGGAP,
    CF_FGNEXT,
    CF_FGSLICE,
    CF_INV,
    CF_STALLMEAN,
    CF_STALLP,
    CF_WAKE,
    CI_JOBS,
    CI_PLAIN,
    CI_SERVERS,
    CI_STALLED,
    CI_STALLS,
    CI_STREAM,
    CLIENT,
    EV_ARRIVAL,
    EV_EXTENT_DONE,
    EV_OSD_OP,
    EV_REQ_DONE,
    EV_RESUME,
    EV_WAKE,
    FN_REPLY_CLIENT,
    FN_SEND_CLIENT_OP,
    FN_TO_CLIENT,
    GF_LAT,
    GF_LOOP,
    GF_NOW,
    GI_EVENTS,
    GI_FULL,
    GI_HN,
    GI_LOW,
    GI_NEXTREQ,
    GI_NREQ,
    GI_OPFREE,
    GI_OUT,
    GI_OVH,
    GI_SEQ,
    HI_CPU,
    HI_RX,
    HI_TX,
    IF_COMPLETE,
    IF_PERBYTE,
    IF_SUBMIT,
    IF_WRITE,
    II_CLIENT,
    II_KEY,
    II_ORDER,
    II_PG0,
    II_PS0,
    II_SIZE,
    LF_BUSY,
    LF_BW,
    LF_BYTES,
    LF_FREE,
    OF_LN_MU,
    OF_LN_S,
    OF_PERBYTE,
    OF_READ,
    OF_RECV,
    OF_SEND,
    OI_CPU,
    OI_HOST,
    OI_JITTER,
    OI_NSHARDS,
    OI_OPS,
    OI_SHARD0,
    OI_STREAM,
    OPF_T0,
    OPI_DOFF,
    OPI_GROUP,
    OPI_IMG,
    OPI_KIND,
    OPI_LEN,
    OPI_NEXT,
    OPI_NEXTW,
    OPI_OBJNO,
    OPI_OFF,
    OPI_ONODE,
    OPI_OSD,
    OPI_PG,
    OPI_POS,
    OPI_PRIM,
    OPI_REQ,
    OPI_ROLE,
    OPI_SHARD,
    PGI_NACT,
    PGI_PPOS,
    PGI_SEED,
    RQF_TDONE,
    RQF_TISSUE,
    RQI_IMG,
    RQI_KIND,
    RQI_LEFT,
    RQI_OFF,
    RQI_SIZE,
    SHF_WAKE_AT,
    SHI_FREE,
    SHI_INFLIGHT,
    SHI_NLAZY,
    SHI_QCNT,
    SHI_QHEAD,
    SHI_QTAIL,
    SI_LEN,
    SI_POS,
    SLOW,
    ST_DONE,
    ST_EMPTY,
    ST_FULL,
    ST_REFILL,
    ST_TIME,
)  # fmt: skip
from simulator.core.loop import _ld, _state_ptr

# the loop inlines the heap of core.loop, the arithmetic and the layout: a change there must recompile it
nbcache.invalidate_stale(__file__, _loop.__file__, _arith.__file__, _clayout.__file__)

#: cache the loop's compilation (the handlers must not call each other in a cycle: see ``_then``)
_CACHE_LOOP = True

_READ = 0
_WRITE = 1
_FLUSH = 3
_INF = math.inf


# =============================================================================== event heap (as core.loop's)
@njit(cache=True, inline="always", _nrt=False)
def _less(sp, i, j):
    st = _ld(sp)
    ti = st.ht[i]
    tj = st.ht[j]
    return ti < tj or (ti == tj and st.hs[i] < st.hs[j])


@njit(cache=True, inline="always", _nrt=False)
def _swap(sp, i, j):
    st = _ld(sp)
    st.ht[i], st.ht[j] = st.ht[j], st.ht[i]
    st.hs[i], st.hs[j] = st.hs[j], st.hs[i]
    st.hk[i], st.hk[j] = st.hk[j], st.hk[i]
    st.hg[i], st.hg[j] = st.hg[j], st.hg[i]
    st.ha[i], st.ha[j] = st.ha[j], st.ha[i]


@njit(cache=True, _nrt=False)
def schedule(sp, t, kind, target, arg):
    """Push an event at absolute time ``t`` (sequence = order of scheduling)."""
    st = _ld(sp)
    n = st.gi[GI_HN]
    seq = st.gi[GI_SEQ]
    st.gi[GI_SEQ] = seq + 1
    st.ht[n] = t
    st.hs[n] = seq
    st.hk[n] = kind
    st.hg[n] = target
    st.ha[n] = arg
    st.gi[GI_HN] = n + 1
    i = n
    while i > 0:
        p = (i - 1) >> 1
        if _less(sp, i, p):
            _swap(sp, i, p)
            i = p
        else:
            break


@njit(cache=True, _nrt=False)
def _pop(sp):
    """Remove the root (the caller has read it)."""
    st = _ld(sp)
    n = st.gi[GI_HN] - 1
    st.gi[GI_HN] = n
    if n == 0:
        return
    st.ht[0] = st.ht[n]
    st.hs[0] = st.hs[n]
    st.hk[0] = st.hk[n]
    st.hg[0] = st.hg[n]
    st.ha[0] = st.ha[n]
    i = 0
    while True:
        a = 2 * i + 1
        if a >= n:
            break
        b = a + 1
        c = a
        if b < n and _less(sp, b, a):
            c = b
        if _less(sp, c, i):
            _swap(sp, c, i)
            i = c
        else:
            break


# =============================================================================== random streams
@njit(cache=True, inline="always", _nrt=False)
def _u(sp, s):
    """The next uniform of stream ``s`` (a Python component's ``rand``, handed over as a buffer)."""
    st = _ld(sp)
    p = st.si[s, SI_POS]
    n = st.si[s, SI_LEN]
    if p >= n:  # cannot happen while refills keep SLOW in reserve: flag it, the run is void
        st.gi[GI_FULL] = 1
        return 0.5
    st.si[s, SI_POS] = p + 1
    if n - p - 1 < SLOW:
        st.gi[GI_LOW] = 1
    return st.su[s, p]


# =============================================================================== CPU pools
@njit(cache=True, inline="always", _nrt=False)
def _heapreplace(a, n, v):
    """heapq.heapreplace on the min-heap a[:n]: the smallest element is replaced by ``v``."""
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        r = c + 1
        if r < n and a[r] < a[c]:
            c = r
        if a[c] < v:
            a[i] = a[c]
            i = c
        else:
            break
    a[i] = v


@njit(cache=True, _nrt=False)
def _foreign(sp, c, t):
    """CpuPool._foreign: book the foreign jobs that arrived up to ``t``."""
    st = _ld(sp)
    free = st.cfree[c]
    n = st.ci[c, CI_SERVERS]
    s = st.ci[c, CI_STREAM]
    sl = st.cf[c, CF_FGSLICE]
    gap = st.cf[c, CF_FGGAP]
    ta = st.cf[c, CF_FGNEXT]
    while ta <= t:
        size = -sl * math.log(1.0 - _u(sp, s))
        f = free[0]
        _heapreplace(free, n, (ta if ta > f else f) + size)
        st.cf[c, CF_FGBUSY] += size
        ta -= gap * math.log(1.0 - _u(sp, s))
    st.cf[c, CF_FGNEXT] = ta


@njit(cache=True, _nrt=False)
def _book(sp, c, t, cost):
    """CpuPool.book (or _book_plain) on pool ``c``: a job of ``cost`` arriving at ``t``; the time
    its result is out."""
    st = _ld(sp)
    if st.ci[c, CI_PLAIN]:
        if cost <= 0.0:
            return t
        cost *= st.cf[c, CF_INV]
        free = st.cfree[c]
        f = free[0]
        end = (t if t >= f else f) + cost
        _heapreplace(free, st.ci[c, CI_SERVERS], end)
        st.cf[c, CF_BUSY] += cost
        st.ci[c, CI_JOBS] += 1
        return end
    wake = st.cf[c, CF_WAKE]
    if cost <= 0.0 and wake == 0.0:
        st.ci[c, CI_STALLED] = 0
        return t
    if st.cf[c, CF_FGGAP] != 0.0 and st.cf[c, CF_FGNEXT] <= t:
        _foreign(sp, c, t)
    cost *= st.cf[c, CF_INV]
    bg = cost * st.cf[c, CF_BG]
    free = st.cfree[c]
    f = free[0]
    if t >= f:
        cost += wake
        end = t + cost
    else:
        end = f + cost
    _heapreplace(free, st.ci[c, CI_SERVERS], end)
    st.cf[c, CF_BUSY] += cost
    st.ci[c, CI_JOBS] += 1
    end -= bg
    p = st.cf[c, CF_STALLP]
    if p != 0.0:
        s = st.ci[c, CI_STREAM]
        if _u(sp, s) < p:
            st.ci[c, CI_STALLS] += 1
            st.ci[c, CI_STALLED] = 1
            return end - st.cf[c, CF_STALLMEAN] * math.log(1.0 - _u(sp, s))
        st.ci[c, CI_STALLED] = 0
    return end


@njit(cache=True, inline="always", _nrt=False)
def _idle(sp, c, t):
    return _ld(sp).cfree[c, 0] <= t


# =============================================================================== network
@njit(cache=True, inline="always", _nrt=False)
def _link_book(sp, k, t, nbytes):
    """Link.book: a FIFO server serialising ``nbytes`` at the link's bandwidth."""
    st = _ld(sp)
    s = nbytes / st.lf[k, LF_BW]
    f = st.lf[k, LF_FREE]
    end = (t if t > f else f) + s
    st.lf[k, LF_FREE] = end
    st.lf[k, LF_BUSY] += s
    st.lf[k, LF_BYTES] += nbytes
    return end


@njit(cache=True, _nrt=False)
def _arrival(sp, src, dst, t, payload):
    """Network.arrival: a message sent at ``t`` from host ``src`` is fully received by ``dst``."""
    st = _ld(sp)
    if src == dst:
        return t + st.gf[GF_LOOP]
    n = payload + st.gi[GI_OVH]
    t = _link_book(sp, st.hoi[src, HI_TX], t, n) + st.gf[GF_LAT]
    return _link_book(sp, st.hoi[dst, HI_RX], t, n)


# =============================================================================== OSD
@njit(cache=True, inline="always", _nrt=False)
def _cost(sp, o, mean):
    """Osd._cost: ``mean``, or log-normal with mean ``mean`` and cv ``cost_cv``."""
    st = _ld(sp)
    if st.oi[o, OI_JITTER] == 0 or mean <= 0.0:
        return mean
    s = st.oi[o, OI_STREAM]
    u1 = _u(sp, s)
    u2 = _u(sp, s)
    return lognormal_cost_nb(mean, st.of[o, OF_LN_MU], st.of[o, OF_LN_S], u1, u2)


@njit(cache=True, inline="always", _nrt=False)
def _pg_of(sp, img, objno):
    """The PG row of object ``objno`` of image ``img`` (RbdImage.pg_of)."""
    st = _ld(sp)
    return st.imi[img, II_PG0] + st.obj_ps[st.imi[img, II_PS0] + objno]


@njit(cache=True, inline="always", _nrt=False)
def _shard_of(sp, o, pg):
    st = _ld(sp)
    return st.oi[o, OI_SHARD0] + st.pgi[pg, PGI_SEED] % st.oi[o, OI_NSHARDS]


# =============================================================================== standalone kernels (tests, bench)
# Each processes items from ``i0`` on and returns the next index: it stops early when a random stream
# runs low (the caller refills, see ``ceph_build.run_kernel``).
@njit(cache=True, _nrt=False)
def book_many(st, i0, c, ts, costs, out):
    """``out[i] = CpuPool.book(ts[i], costs[i])`` on pool ``c``, in order."""
    sp = _state_ptr(st)
    for i in range(i0, ts.shape[0]):
        out[i] = _book(sp, c, ts[i], costs[i])
        if st.gi[GI_LOW]:
            return i + 1
    return ts.shape[0]


@njit(cache=True, _nrt=False)
def arrival_many(st, i0, src, dst, ts, payloads, out):
    sp = _state_ptr(st)
    for i in range(i0, ts.shape[0]):
        out[i] = _arrival(sp, src[i], dst[i], ts[i], payloads[i])
    return ts.shape[0]


@njit(cache=True, _nrt=False)
def cost_many(st, i0, o, means, out):
    sp = _state_ptr(st)
    for i in range(i0, means.shape[0]):
        out[i] = _cost(sp, o[i], means[i])
        if st.gi[GI_LOW]:
            return i + 1
    return means.shape[0]


@njit(cache=True, _nrt=False)
def pg_many(st, i0, img, objnos, out):
    sp = _state_ptr(st)
    for i in range(i0, objnos.shape[0]):
        out[i] = _pg_of(sp, img, objnos[i])
    return objnos.shape[0]


# =============================================================================== ops and requests
@njit(cache=_CACHE_LOOP, _nrt=False)
def _op_new(sp, kind, role, pg, img, objno, off, length):
    """A new object op row (ObjOp.__init__)."""
    st = _ld(sp)
    n = st.gi[GI_OPFREE]
    if n == 0:
        st.gi[GI_FULL] = 1
        return 0
    n -= 1
    st.gi[GI_OPFREE] = n
    op = st.opfree[n]
    for k in range(st.opi.shape[1]):
        st.opi[op, k] = 0
    for k in range(st.opf.shape[1]):
        st.opf[op, k] = 0.0
    st.opi[op, OPI_KIND] = kind
    st.opi[op, OPI_ROLE] = role
    st.opi[op, OPI_PG] = pg
    st.opi[op, OPI_IMG] = img
    st.opi[op, OPI_OBJNO] = objno
    st.opi[op, OPI_OFF] = off
    st.opi[op, OPI_LEN] = length
    st.opi[op, OPI_OSD] = -1
    st.opi[op, OPI_PRIM] = -1
    st.opi[op, OPI_NEXT] = -1
    st.opi[op, OPI_SHARD] = -1
    st.opi[op, OPI_ONODE] = 1
    st.opi[op, OPI_NEXTW] = -1
    st.opi[op, OPI_DOFF] = -1
    return op


@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _op_free(sp, op):
    st = _ld(sp)
    st.opfree[st.gi[GI_OPFREE]] = op
    st.gi[GI_OPFREE] += 1


@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _at(sp, t, kind, target, arg):
    """call_at: an event at ``t``, or now if ``t`` is in the past."""
    now = _ld(sp).gf[GF_NOW]
    schedule(sp, t if t > now else now, kind, target, arg)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _then(sp, c, t, fn, op, check):
    """resources.then and the chain it continues, as one loop: ``fn(op, t)`` at once, or from an
    event at ``t`` when the job just booked on pool ``c`` stalled (``check`` = 0: call ``fn`` at
    once, as an event's resume does). Each continuation that ends with another ``then`` sets the
    next (pool, time, fn) and goes round; written as a loop, not as calls, because numba cannot
    compile functions that call each other in a cycle."""
    st = _ld(sp)
    while True:
        if check and st.ci[c, CI_STALLED]:
            st.ci[c, CI_STALLED] = 0
            if t < st.gf[GF_NOW]:  # the event's time is then not the chain's time: not covered (flagged)
                st.gi[GI_FULL] = 1
            _at(sp, t, EV_RESUME, fn, op)
            return
        check = 1
        if fn == FN_SEND_CLIENT_OP:
            _send_client_op(sp, op, t)
            return
        elif fn == FN_REPLY_CLIENT:  # Osd._reply_client
            o = st.opi[op, OPI_OSD]
            cost = st.of[o, OF_SEND]
            if st.opi[op, OPI_KIND] == _READ:
                cost += st.of[o, OF_PERBYTE] * st.opi[op, OPI_LEN]
            c = st.oi[o, OI_CPU]
            t = _book(sp, c, t, cost)
            fn = FN_TO_CLIENT
        elif fn == FN_TO_CLIENT:  # Osd._to_client
            _client_reply(sp, st.oi[st.opi[op, OPI_OSD], OI_HOST], op, t)
            return
        else:
            st.gi[GI_FULL] = 1  # a continuation of a path not compiled yet
            return


# =============================================================================== librbd (RbdImage)
@njit(cache=_CACHE_LOOP, _nrt=False)
def _img_start(sp, r, now):
    """RbdImage._start: client CPU, then one object op per object the request spans."""
    st = _ld(sp)
    img = st.rqi[r, RQI_IMG]
    kind = st.rqi[r, RQI_KIND]
    size = st.rqi[r, RQI_SIZE]
    c = st.hoi[st.imi[img, II_CLIENT], HI_CPU]
    cost = st.imf[img, IF_SUBMIT]
    if kind == _WRITE:
        cost += st.imf[img, IF_PERBYTE] * size + st.imf[img, IF_WRITE]
    if kind == _FLUSH or size <= 0:
        t = _book(sp, c, now, cost)
        schedule(sp, now + (t - now), EV_REQ_DONE, r, 0)
        return
    order = st.imi[img, II_ORDER]
    off = st.rqi[r, RQI_OFF]
    end = off + size
    first = off >> order
    last = (end - 1) >> order
    if first == last:
        st.rqi[r, RQI_LEFT] = 1
        op = _op_new(sp, kind, CLIENT, _pg_of(sp, img, first), img, first, off - (first << order), size)
        st.opi[op, OPI_REQ] = r
        st.opf[op, OPF_T0] = now
        _then(sp, c, _book(sp, c, now, cost), FN_SEND_CLIENT_OP, op, 1)
        return
    st.rqi[r, RQI_LEFT] = last - first + 1
    osz = 1 << order
    for objno in range(first, last + 1):
        lo = max(off, objno << order)
        hi = min(end, (objno << order) + osz)
        op = _op_new(sp, kind, CLIENT, _pg_of(sp, img, objno), img, objno, lo - (objno << order), hi - lo)
        st.opi[op, OPI_REQ] = r
        st.opi[op, OPI_GROUP] = 1
        st.opf[op, OPF_T0] = now
        _then(sp, c, _book(sp, c, now, cost), FN_SEND_CLIENT_OP, op, 1)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _complete_op(sp, op, t):
    """RbdImage.complete_op: the reply for ``op`` has been processed by the client at ``t``."""
    st = _ld(sp)
    now = st.gf[GF_NOW]
    if st.opi[op, OPI_GROUP] == 0:
        schedule(sp, now + (t - now), EV_REQ_DONE, st.opi[op, OPI_REQ], 0)
        _op_free(sp, op)
    else:
        _at(sp, t, EV_EXTENT_DONE, st.opi[op, OPI_REQ], op)


# =============================================================================== cluster (client side)
@njit(cache=_CACHE_LOOP, _nrt=False)
def _send_client_op(sp, op, t):
    """Cluster.send_client_op: the client sends ``op`` at ``t`` to its PG's primary."""
    st = _ld(sp)
    pg = st.opi[op, OPI_PG]
    pos = st.pgi[pg, PGI_PPOS]
    prim = st.pga[pg, pos]
    st.opi[op, OPI_POS] = pos
    st.opi[op, OPI_OSD] = prim
    kind = st.opi[op, OPI_KIND]
    payload = st.opi[op, OPI_LEN] if kind != _READ else 0
    img = st.opi[op, OPI_IMG]
    t = _arrival(sp, st.imi[img, II_CLIENT], st.oi[prim, OI_HOST], t, payload)
    if kind != _READ and st.opi[op, OPI_ROLE] == CLIENT:
        _deliver(sp, prim, t, op, st.of[prim, OF_RECV] + st.of[prim, OF_PERBYTE] * payload)
    else:
        _post(sp, prim, _book(sp, st.oi[prim, OI_CPU], t, st.of[prim, OF_RECV] + st.of[prim, OF_PERBYTE] * payload), op)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _client_reply(sp, host, op, t):
    """Cluster.client_reply: the reply travels to the client, whose CPU completes it."""
    st = _ld(sp)
    kind = st.opi[op, OPI_KIND]
    payload = st.opi[op, OPI_LEN] if kind == _READ else 0
    img = st.opi[op, OPI_IMG]
    ch = st.imi[img, II_CLIENT]
    t = _arrival(sp, host, ch, t, payload)
    t = _book(sp, st.hoi[ch, HI_CPU], t, st.imf[img, IF_COMPLETE] + st.imf[img, IF_PERBYTE] * payload)
    _complete_op(sp, op, t)


# =============================================================================== OSD op queue
@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _bpos(sp, pg, o):
    """Acting position of OSD ``o`` in PG ``pg`` (the column of its PG lock)."""
    st = _ld(sp)
    for i in range(st.pgi[pg, PGI_NACT]):
        if st.pga[pg, i] == o:
            return i
    return 0


@njit(cache=_CACHE_LOOP, _nrt=False)
def _post(sp, o, t, op):
    """Osd.post: a decoded message joins its shard's queue at ``t`` (one event)."""
    st = _ld(sp)
    st.shi[_shard_of(sp, o, st.opi[op, OPI_PG]), SHI_INFLIGHT] += 1
    _at(sp, t, EV_OSD_OP, o, op)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _deliver(sp, o, t, op, recv_cost):
    st = _ld(sp)
    st.gi[GI_FULL] = 1  # the write path is not compiled yet


@njit(cache=_CACHE_LOOP, _nrt=False)
def _settle(sp, sh):
    """Osd._settle: release the lazily finishing workers whose job has ended by now."""
    st = _ld(sp)
    now = st.gf[GF_NOW]
    o = st.shi[sh, 0]
    n = st.shi[sh, SHI_NLAZY]
    k = 0
    for m in range(n):
        t = st.shl[sh, m]
        pg = st.shp[sh, m]
        if t <= now:
            st.shi[sh, SHI_FREE] += 1
            st.pgb[pg, _bpos(sp, pg, o)] = 0
        else:
            st.shl[sh, k] = t
            st.shp[sh, k] = pg
            k += 1
    st.shi[sh, SHI_NLAZY] = k


@njit(cache=_CACHE_LOOP, _nrt=False)
def _arm(sp, sh):
    """Osd._arm: make sure an event releases the next lazily finishing worker."""
    st = _ld(sp)
    t = _INF
    for m in range(st.shi[sh, SHI_NLAZY]):
        if st.shl[sh, m] < t:
            t = st.shl[sh, m]
    w = st.shf[sh, SHF_WAKE_AT]
    if w < 0 or t < w:
        st.shf[sh, SHF_WAKE_AT] = t
        _at(sp, t, EV_WAKE, sh, 0)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _release_at(sp, sh, pg, t):
    """Osd._release_at: the worker holding ``pg`` is busy until ``t``, then free."""
    st = _ld(sp)
    n = st.shi[sh, SHI_NLAZY]
    st.shl[sh, n] = t
    st.shp[sh, n] = pg
    st.shi[sh, SHI_NLAZY] = n + 1
    if st.shi[sh, SHI_QCNT]:
        _arm(sp, sh)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _enqueue(sp, o, op):
    """Osd.enqueue."""
    st = _ld(sp)
    pg = st.opi[op, OPI_PG]
    sh = _shard_of(sp, o, pg)
    if st.shi[sh, SHI_NLAZY]:
        _settle(sp, sh)
    if st.shi[sh, SHI_FREE] > 0 and st.shi[sh, SHI_QCNT] == 0 and st.pgb[pg, _bpos(sp, pg, o)] == 0:
        _dispatch(sp, o, sh, op)
    else:
        st.opi[op, OPI_NEXT] = -1
        tail = st.shi[sh, SHI_QTAIL]
        if tail < 0:
            st.shi[sh, SHI_QHEAD] = op
        else:
            st.opi[tail, OPI_NEXT] = op
        st.shi[sh, SHI_QTAIL] = op
        st.shi[sh, SHI_QCNT] += 1
        if st.shi[sh, SHI_NLAZY]:
            _arm(sp, sh)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _next(sp, sh):
    """Osd._next: workers take the oldest ops whose PG is not held."""
    st = _ld(sp)
    o = st.shi[sh, 0]
    while st.shi[sh, SHI_FREE] > 0 and st.shi[sh, SHI_QCNT] > 0:
        prev = -1
        op = st.shi[sh, SHI_QHEAD]
        while op >= 0:
            pg = st.opi[op, OPI_PG]
            if st.pgb[pg, _bpos(sp, pg, o)] == 0:
                break
            prev = op
            op = st.opi[op, OPI_NEXT]
        if op < 0:
            return
        nxt = st.opi[op, OPI_NEXT]
        if prev < 0:
            st.shi[sh, SHI_QHEAD] = nxt
        else:
            st.opi[prev, OPI_NEXT] = nxt
        if st.shi[sh, SHI_QTAIL] == op:
            st.shi[sh, SHI_QTAIL] = prev
        st.shi[sh, SHI_QCNT] -= 1
        _dispatch(sp, o, sh, op)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _wake(sp, sh):
    """Osd._wake."""
    st = _ld(sp)
    if st.shf[sh, SHF_WAKE_AT] != st.gf[GF_NOW]:
        return  # superseded by an earlier wake-up
    st.shf[sh, SHF_WAKE_AT] = -1.0
    _settle(sp, sh)
    if st.shi[sh, SHI_QCNT]:
        _next(sp, sh)
    if st.shi[sh, SHI_QCNT] and st.shi[sh, SHI_NLAZY]:
        _arm(sp, sh)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _dispatch(sp, o, sh, op):
    """Osd._dispatch (client reads of objects not written yet; other roles: see the write path)."""
    st = _ld(sp)
    pg = st.opi[op, OPI_PG]
    st.shi[sh, SHI_FREE] -= 1
    st.pgb[pg, _bpos(sp, pg, o)] = 1
    st.opi[op, OPI_SHARD] = sh
    now = st.gf[GF_NOW]
    c = st.oi[o, OI_CPU]
    kind = st.opi[op, OPI_KIND]
    st.oi[o, OI_OPS + kind] += 1
    img = st.opi[op, OPI_IMG]
    base = st.obj_base[st.imi[img, II_KEY] + st.opi[op, OPI_OBJNO] * st.imi[img, II_SIZE] + st.opi[op, OPI_POS]]
    if kind == _READ and base < 0:  # object does not exist: zeros, no IO
        t = _book(sp, c, now, _cost(sp, o, st.of[o, OF_READ]))
        _then(sp, c, t, FN_REPLY_CLIENT, op, 1)
        _release_at(sp, sh, pg, t)
        return
    st.gi[GI_FULL] = 1  # reads of written objects and writes: not compiled yet


# =============================================================================== the event loop
@njit(cache=_CACHE_LOOP, _nrt=False)
def run_until(st, t_end):
    """Process events in (time, sequence) order until ``t_end``, until every request has completed
    and the heap is empty, or until Python is needed (a random stream to refill)."""
    sp = _state_ptr(st)
    cap = st.ht.shape[0] - 64
    while True:
        if st.gi[GI_FULL]:
            return ST_FULL
        if st.gi[GI_LOW]:
            return ST_REFILL
        if st.gi[GI_HN] == 0:
            return ST_DONE if st.gi[GI_OUT] == 0 else ST_EMPTY
        if st.gi[GI_HN] > cap:
            st.gi[GI_FULL] = 1
            return ST_FULL
        t = st.ht[0]
        if t > t_end:
            return ST_TIME
        kind = st.hk[0]
        target = st.hg[0]
        arg = st.ha[0]
        _pop(sp)
        st.gf[GF_NOW] = t
        st.gi[GI_EVENTS] += 1
        if kind == EV_OSD_OP:
            st.shi[_shard_of(sp, target, st.opi[arg, OPI_PG]), SHI_INFLIGHT] -= 1
            _enqueue(sp, target, arg)
        elif kind == EV_REQ_DONE:
            st.rqf[target, RQF_TDONE] = t
            st.gi[GI_OUT] -= 1
        elif kind == EV_ARRIVAL:
            nxt = st.gi[GI_NEXTREQ]
            if nxt < st.gi[GI_NREQ]:
                st.gi[GI_NEXTREQ] = nxt + 1
                _at(sp, st.rqf[nxt, RQF_TISSUE], EV_ARRIVAL, nxt, 0)
            _img_start(sp, target, t)
        elif kind == EV_WAKE:
            _wake(sp, target)
        elif kind == EV_RESUME:
            _then(sp, 0, t, target, arg, 0)
        elif kind == EV_EXTENT_DONE:
            st.rqi[target, RQI_LEFT] -= 1
            _op_free(sp, arg)
            if st.rqi[target, RQI_LEFT] == 0:
                schedule(sp, t + 0.0, EV_REQ_DONE, target, 0)
        else:
            st.gi[GI_FULL] = 1


@njit(cache=_CACHE_LOOP, _nrt=False)
def schedule_at(st, t, kind, target, arg):
    """Schedule an event from Python (the first arrival of a run)."""
    sp = _state_ptr(st)
    schedule(sp, t, kind, target, arg)

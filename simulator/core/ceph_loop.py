"""The compiled Ceph core (numba): CPU pools, NIC links, OSD op-queue shards, PGs, librbd's object
ops, and an event loop for client reads (issue 13, stage 2).

The handlers mirror the Python reference model line by line (``ceph.resources.CpuPool`` /
``Link`` / ``Network`` / ``then``, ``ceph.osd.Osd``, ``ceph.cluster.Cluster.send_client_op`` /
``client_reply``, ``ceph.rbd.RbdImage``) and schedule their events in the same order, so ties break
as SimPy breaks them (event id order) and results are identical where the random streams are the
same ones (each Python component's ``rand`` stream is handed over as a buffer of its next uniforms
and given back unconsumed, see ceph_build). The event heap is the one of the device core
(``core.loop.schedule`` / ``_pop``, on this state's arrays); the pure arithmetic is
``core.ceph_arith``, which the Python model calls too.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from simulator import nbcache
from simulator.core import ceph_arith as _arith
from simulator.core import ceph_layout as _clayout
from simulator.core import loop as _loop
from simulator.core.ceph_arith import lognormal_cost_nb
from simulator.core.ceph_layout import (
    CF_BG, CF_BUSY, CF_FGBUSY, CF_FGGAP, CF_FGNEXT, CF_FGSLICE, CF_INV, CF_STALLMEAN, CF_STALLP, CF_WAKE,
    CI_JOBS, CI_PLAIN, CI_SERVERS, CI_STALLED, CI_STALLS, CI_STREAM,
    CLIENT,
    EV_ARRIVAL, EV_EXTENT_DONE, EV_OSD_OP, EV_REQ_DONE, EV_RESUME, EV_WAKE,
    FN_REPLY_CLIENT, FN_SEND_CLIENT_OP, FN_TO_CLIENT,
    GF_LAT, GF_LOOP, GF_NOW,
    GI_EVENTS, GI_FULL, GI_HN, GI_LOW, GI_NEXTREQ, GI_NREQ, GI_OPFREE, GI_OUT, GI_OVH,
    HI_CPU, HI_RX, HI_TX,
    II_CLIENT, II_KEY, II_NOBJ, II_ORDER, II_PG0, II_PS0, II_SIZE,
    IF_COMPLETE, IF_PERBYTE, IF_SUBMIT, IF_WRITE,
    LF_BUSY, LF_BW, LF_BYTES, LF_FREE,
    OF_LN_MU, OF_LN_S, OF_PERBYTE, OF_READ, OF_RECV, OF_SEND,
    OI_CPU, OI_HOST, OI_JITTER, OI_NSHARDS, OI_OPS, OI_SHARD0, OI_STREAM,
    OPF_T0, OPF_TFN, OPI_FN, OPI_GROUP, OPI_IMG, OPI_KIND, OPI_LEN, OPI_NEXT, OPI_OBJNO, OPI_OFF, OPI_OSD,
    OPI_PG, OPI_POS, OPI_REQ, OPI_ROLE, OPI_SHARD,
    PGI_PPOS, PGI_SEED,
    RQF_TDONE, RQF_TISSUE, RQI_IMG, RQI_KIND, RQI_LEFT, RQI_OFF, RQI_SIZE,
    SHF_WAKE_AT, SHI_FREE, SHI_INFLIGHT, SHI_NLAZY, SHI_QCNT, SHI_QHEAD, SHI_QTAIL,
    SI_LEN, SI_POS, SLOW,
    ST_DONE, ST_EMPTY, ST_FULL, ST_REFILL, ST_TIME,
)  # fmt: skip
from simulator.core.loop import _ld, _pop, _state_ptr, schedule

# the loop inlines the heap of core.loop, the arithmetic and the layout: a change there must recompile it
nbcache.invalidate_stale(__file__, _loop.__file__, _arith.__file__, _clayout.__file__)

_READ = 0
_WRITE = 1
_FLUSH = 3
_INF = math.inf


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

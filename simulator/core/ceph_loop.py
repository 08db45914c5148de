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

from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from simulator import nbcache
from simulator.ceph import cache as _pycache
from simulator.core import ceph_arith as _arith
from simulator.core import ceph_dcache as _DC
from simulator.core import ceph_layout as _clayout
from simulator.core import ceph_onode as _onode
from simulator.core import layout as DL
from simulator.core import loop as _loop
from simulator.core.ceph_arith import (
    align_up_nb,
    alloc_offset_nb,
    autotune_split_nb,
    lognormal_cost_nb,
    throttle_should_wait_nb,
    txc_cost_nb,
    wal_extent_nb,
)
from simulator.core.ceph_layout import (
    BF_FLUSHT0,
    BF_FLUSHTIME,
    BF_KINR,
    BF_KOUTR,
    BF_KVCPU,
    BF_KVT0,
    BF_KVTIME,
    BF_MAXINT,
    BF_TWAIT,
    BF_WALT0,
    BF_WALTIME,
    BS_AGGR,
    BS_AGGSUB,
    BS_ALLOCATED,
    BS_BATCHOPS,
    BS_BFE,
    BS_BFS,
    BS_BLOCK,
    BS_CAP,
    BS_CLEANB,
    BS_CPIO,
    BS_CURSOR,
    BS_DATAFLUSH,
    BS_DEFBATCHES,
    BS_DEFIOS,
    BS_DEFOPS,
    BS_DEFROUNDS,
    BS_DEV,
    BS_DIRECT,
    BS_DONE_H,
    BS_DONE_T,
    BS_DQ_H,
    BS_DQ_T,
    BS_DQSIZE,
    BS_DSTART,
    BS_DTCUR,
    BS_DTMAX,
    BS_DTPEAK,
    BS_DTW_H,
    BS_DTW_T,
    BS_DTXCS,
    BS_FBC,
    BS_IOSF,
    BS_KVB_H,
    BS_KVB_N,
    BS_KVBATCHES,
    BS_KVBUSY,
    BS_KVBYTES,
    BS_KVQ_H,
    BS_KVQ_N,
    BS_KVQ_T,
    BS_KVSTAB_H,
    BS_KVSTAB_T,
    BS_KVTXCB,
    BS_KVTXCS,
    BS_KVUNST_H,
    BS_KVUNST_T,
    BS_LOGBASE,
    BS_LOGPOS,
    BS_LOGRING,
    BS_LOGW,
    BS_MAXTXC,
    BS_MAXTXCSUB,
    BS_MINALLOC,
    BS_PEAKDTXCS,
    BS_PREFER,
    BS_SAMEDEV,
    BS_STAB_H,
    BS_STAB_T,
    BS_TAIL,
    BS_TBCUR,
    BS_TBMAX,
    BS_TBPEAK,
    BS_TBUDGET,
    BS_TBW_H,
    BS_TBW_T,
    BS_TDATA,
    BS_THKV,
    BS_THR_DEF,
    BS_THR_KV,
    BS_THROTTLED,
    BS_TIMER,
    BS_TKV,
    BS_TMAPPED,
    BS_TMETA,
    BS_TUNED,
    BS_UNIT,
    BS_WALBASE,
    BS_WALDEV,
    BS_WALPOS,
    BS_WALRING,
    CF_BG,
    CF_BUSY,
    CF_FGBUSY,
    CF_FGGAP,
    CF_FGNEXT,
    CF_FGSLICE,
    CF_INV,
    CF_STALLMEAN,
    CF_STALLP,
    CF_TWCOST,
    CF_TWDELAY,
    CF_WAKE,
    CI_JOBS,
    CI_PLAIN,
    CI_SERVERS,
    CI_STALLED,
    CI_STALLS,
    CI_STREAM,
    CI_THREADED,
    CLIENT,
    DC_UNIT,
    DC_WU,
    DP_DATA_FLUSH,
    DP_DEFERRED,
    DP_DIRECT,
    DP_LOG,
    DP_LOG_FLUSH,
    DP_ONODE_READ,
    DP_ONODE_WRITE,
    DP_READ,
    DP_WAL,
    DP_WAL_FLUSH,
    DR_ARG,
    DR_DEV,
    DR_NEXT,
    DR_OP,
    DR_OSD,
    DR_PURP,
    DR_SIZE,
    DV_CORE,
    DV_DIST,
    DV_DONE,
    DV_FREE,
    DV_PART,
    DV_QH,
    DV_QN,
    DV_QT,
    DV_SHIFT,
    DV_STREAM,
    DVF_BUSY,
    DVF_BW,
    DVF_FLUSH,
    DVF_P0,
    DVF_P_BSINCE,
    DVF_P_BUSY,
    DVF_P_BYTES,
    DVF_P_COMP,
    DVF_P_INSIDE,
    DVF_P_QAREA,
    DVF_P_T0,
    DVF_P_TQ,
    EC_CLIENT,
    EC_LOCALW,
    EC_READREPLY,
    EC_STEP_START,
    EC_STEP_WAFTER,
    EC_SUBREAD,
    ECS_CREADS,
    ECS_CWRITES,
    ECS_DECB,
    ECS_DEGR,
    ECS_ENCB,
    ECS_FULL,
    ECS_RMW,
    ECS_SR,
    ECS_SRB,
    ECS_SW,
    ECS_SWB,
    EV_ARRIVAL,
    EV_DEFER_TIMER,
    EV_DEV_DONE,
    EV_EC,
    EV_EXTENT_DONE,
    EV_KV_IO,
    EV_OSD_OP,
    EV_PREPARED,
    EV_READ_MISS,
    EV_REQ_DONE,
    EV_RESUME,
    EV_STOP,
    EV_SUBMIT,
    EV_THINK_END,
    EV_WAKE,
    FN_COMMIT_IN,
    FN_EC_DECODE,
    FN_EC_REPLY_AT,
    FN_EC_REPLY_OUT,
    FN_EC_SHARD_OUT,
    FN_EC_SUBREAD_OUT,
    FN_EC_WRITE_SEND,
    FN_REPLY_CLIENT,
    FN_SEND_CLIENT_OP,
    FN_SEND_REPLY,
    FN_SEND_SUB,
    FN_TO_CLIENT,
    GF_KVR,
    GF_LAT,
    GF_LOOP,
    GF_METAR,
    GF_NEXTTUNE,
    GF_NOW,
    GF_RELT,
    GF_TUNEINT,
    GI_CLOSED,
    GI_DEVFREE,
    GI_EVENTS,
    GI_FULL,
    GI_HN,
    GI_LOW,
    GI_NCOMP,
    GI_NEXTREQ,
    GI_NOFOLD,
    GI_NREQ,
    GI_NTHR,
    GI_ONODEB,
    GI_OPFREE,
    GI_OUT,
    GI_OVH,
    GI_READ_WRITTEN_OK,
    GI_RELPG,
    GI_RELSH,
    GI_RUNTICKS,
    GI_SEQ,
    GI_TBASE,
    GI_TICKS,
    GI_TMAX,
    GI_TMIN,
    GI_TTARGET,
    GI_TXFREE,
    GI_WHY,
    HI_CPU,
    HI_RX,
    HI_TX,
    IF_COMPLETE,
    IF_DEC,
    IF_ENC,
    IF_PERBYTE,
    IF_SUBMIT,
    IF_WRITE,
    II_CLIENT,
    II_EC,
    II_ECS,
    II_K,
    II_KB,
    II_KEY,
    II_M,
    II_ORDER,
    II_PG0,
    II_PR,
    II_PS0,
    II_PW,
    II_SHSIZE,
    II_SIZE,
    II_SU,
    II_THCOMP,
    II_THSUB,
    LF_BUSY,
    LF_BW,
    LF_BYTES,
    LF_FREE,
    OF_COMMIT,
    OF_ECSUB,
    OF_LN_MU,
    OF_LN_S,
    OF_PERBYTE,
    OF_READ,
    OF_RECV,
    OF_REPLY,
    OF_SEND,
    OF_SUBOP,
    OF_WRITE,
    OI_CPU,
    OI_HOST,
    OI_JITTER,
    OI_NSHARDS,
    OI_OPS,
    OI_REPLIES,
    OI_SHARD0,
    OI_STREAM,
    OI_SUBOPS,
    OI_THFINAL,
    OI_THMSGR,
    OI_UP,
    ON_BLOCK,
    ON_DBBASE,
    ON_DBN,
    ON_MREAD,
    ON_N,
    ON_STREAM,
    ONF_COST,
    OPF_T0,
    OPF_TLOCAL,
    OPF_TWAIT,
    OPI_COST,
    OPI_DECODE,
    OPI_DEFER,
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
    OPI_PENDING,
    OPI_PG,
    OPI_POS,
    OPI_PRIM,
    OPI_REQ,
    OPI_ROLE,
    OPI_S0,
    OPI_S1,
    OPI_SHARD,
    OS_DQNEXT,
    OS_DQPREV,
    OS_INDQ,
    OS_LIVE,
    OS_PH,
    OS_PN,
    OS_PT,
    OS_QH,
    OS_QT,
    OS_RH,
    OS_RLEFT,
    OS_RN,
    OS_RUNNING,
    PGI_NACT,
    PGI_PPOS,
    PGI_SEED,
    REPLY,
    RQ_ENDFLUSH,
    RQF_TARR,
    RQF_TDONE,
    RQF_TISSUE,
    RQF_TSUB,
    RQI_ALINK,
    RQI_DSEQ,
    RQI_IMG,
    RQI_KIND,
    RQI_LEFT,
    RQI_LINK,
    RQI_OFF,
    RQI_SIZE,
    RQI_THR,
    SHF_WAKE_AT,
    SHI_FREE,
    SHI_INFLIGHT,
    SHI_NLAZY,
    SHI_QCNT,
    SHI_QHEAD,
    SHI_QTAIL,
    SHI_TH,
    SI_LEN,
    SI_POS,
    SLOW,
    ST_DONE,
    ST_EMPTY,
    ST_FULL,
    ST_REFILL,
    ST_STOP,
    ST_TIME,
    SUBOP,
    THF_UNTIL,
    THI_JOBS,
    THI_QUEUED,
    THI_WAKES,
    TR_BACK,
    TR_BLOCKER,
    TR_BLOCKS,
    TR_DEPTH,
    TR_FINAL,
    TR_INFL,
    TR_ISSUING,
    TR_NEXT,
    TR_OPEN,
    TR_STALL,
    TR_THINKING,
    TR_TTBLOCKS,
    TR_TTCOUNT,
    TR_TTON,
    TRF_CPUFREE,
    TRF_IOTIME,
    TRF_SLAT,
    TRF_TEND,
    TRF_TSTOP,
    TRF_TT,
    TRF_TTLAST,
    TX_BLEN,
    TX_CB,
    TX_COST,
    TX_DLEN,
    TX_DOFF,
    TX_HADIO,
    TX_IODONE,
    TX_KEY,
    TX_LEN,
    TX_NEXT,
    TX_NEXTB,
    TX_OFF,
    TX_OP,
    TX_OSD,
    TX_OSR,
    TX_WALB,
    WHY_KV_INNER,
    WHY_NO_DEVICE,
    WHY_PATH,
    WHY_POOL,
    WHY_READ_WRITTEN,
    WHY_RESUME_PAST,
    WHY_STREAM,
)  # fmt: skip
from simulator.core.loop import _ld, _state_ptr, prefetch
from simulator.core.loop import _reset_one as _core_reset_one
from simulator.core.loop import batch_sleep as _core_batch_sleep
from simulator.core.loop import device_submit as _core_device_submit
from simulator.core.loop import step as _core_step
from simulator.devices.hdd import kernels as _K
from simulator.devices.hdd import wcache_kernels as _W

# the loop inlines the heap of core.loop, the arithmetic and the layout, and links the device core's
# handlers (core.loop with the HDD kernels and the device layout): a change there must recompile it
nbcache.invalidate_stale(__file__, _loop.__file__, _arith.__file__, _clayout.__file__, DL.__file__, _K.__file__, _W.__file__,
                         _onode.__file__, _DC.__file__, _pycache.__file__, *_loop.SSD_SOURCES)

#: cache the loop's compilation (the handlers must not call each other in a cycle: see ``_then``)
_CACHE_LOOP = True

_READ = 0
_WRITE = 1
_FLUSH = 3
_INF = math.inf


# =============================================================================== event heap (as core.loop's)
@njit(cache=True, inline="always", _nrt=False)
def _move(sp, src, dst):
    st = _ld(sp)
    st.ht[dst] = st.ht[src]
    st.hs[dst] = st.hs[src]
    st.hk[dst] = st.hk[src]
    st.hg[dst] = st.hg[src]
    st.ha[dst] = st.ha[src]


@njit(cache=True, _nrt=False)
def schedule(sp, t, kind, target, arg):
    """Push an event at absolute time ``t`` (sequence = order of scheduling). A binary heap on
    (time, sequence) as core.loop's, sifting a hole instead of swapping (the same order: the key is total)."""
    st = _ld(sp)
    n = st.gi[GI_HN]
    seq = st.gi[GI_SEQ]
    st.gi[GI_SEQ] = seq + 1
    st.gi[GI_HN] = n + 1
    i = n
    while i > 0:
        p = (i - 1) >> 1
        tp = st.ht[p]
        if t < tp or (t == tp and seq < st.hs[p]):
            _move(sp, p, i)
            i = p
        else:
            break
    st.ht[i] = t
    st.hs[i] = seq
    st.hk[i] = kind
    st.hg[i] = target
    st.ha[i] = arg


@njit(cache=True, _nrt=False)
def _pop(sp):
    """Remove the root (the caller has read it)."""
    st = _ld(sp)
    n = st.gi[GI_HN] - 1
    st.gi[GI_HN] = n
    if n == 0:
        return
    t = st.ht[n]
    seq = st.hs[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        r = c + 1
        tc = st.ht[c]
        if r < n:
            tr = st.ht[r]
            if tr < tc or (tr == tc and st.hs[r] < st.hs[c]):
                c = r
                tc = tr
        if tc < t or (tc == t and st.hs[c] < seq):
            _move(sp, c, i)
            i = c
        else:
            break
    _move(sp, n, i)


@njit(cache=True, inline="always", _nrt=False)
def _void(sp, why):
    """The run cannot go on faithfully: flag it (GI_FULL) and keep the first reason (GI_WHY, WHY_*)."""
    st = _ld(sp)
    st.gi[GI_FULL] = 1
    if st.gi[GI_WHY] == 0:
        st.gi[GI_WHY] = why


# =============================================================================== random streams
@njit(cache=True, inline="always", _nrt=False)
def _u(sp, s):
    """The next uniform of stream ``s`` (a Python component's ``rand``, handed over as a buffer)."""
    st = _ld(sp)
    p = st.si[s, SI_POS]
    n = st.si[s, SI_LEN]
    if p >= n:  # cannot happen while refills keep SLOW in reserve: flag it, the run is void
        _void(sp, WHY_STREAM)
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


@njit(cache=True, _nrt=False)
def _run_threads(sp, c, th, t, cost):
    """CpuPool._run_threads: a job of thread ``th`` (a row of ``thi``) under the per-thread wakeup rule."""
    st = _ld(sp)
    stall = st.cf[c, CF_STALLP] != 0.0
    if th < 0:
        end = _book(sp, c, t, cost)
        if not stall:
            st.ci[c, CI_STALLED] = 0
        return end
    st.thi[th, THI_JOBS] += 1
    if t > st.thf[th, THF_UNTIL]:
        st.thi[th, THI_WAKES] += 1
        end = _book(sp, c, t, cost + st.cf[c, CF_TWCOST])
        if st.cf[c, CF_TWDELAY] > 0.0 and st.thi[th, THI_QUEUED]:
            end += st.cf[c, CF_TWDELAY]
            st.ci[c, CI_STALLED] = 1
        elif not stall:
            st.ci[c, CI_STALLED] = 0
    else:
        end = _book(sp, c, t, cost)
        if not stall:
            st.ci[c, CI_STALLED] = 0
    if end > st.thf[th, THF_UNTIL]:
        st.thf[th, THF_UNTIL] = end
    return end


@njit(cache=True, inline="always", _nrt=False)
def _run(sp, c, th, t, cost):
    """CpuPool.run: a job of thread ``th`` on pool ``c`` (``_book`` unless the per-thread wakeup rule is on)."""
    if _ld(sp).ci[c, CI_THREADED]:
        return _run_threads(sp, c, th, t, cost)
    return _book(sp, c, t, cost)


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
        _void(sp, WHY_POOL)
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
    rel_sh = -1
    rel_pg = 0
    rel_t = 0.0
    while True:
        if check and st.ci[c, CI_STALLED]:
            st.ci[c, CI_STALLED] = 0
            if t < st.gf[GF_NOW]:  # the event's time is then not the chain's time: not covered (flagged)
                _void(sp, WHY_RESUME_PAST)
            _at(sp, t, EV_RESUME, fn, op)
            break
        check = 1
        if fn == FN_SEND_CLIENT_OP:
            _send_client_op(sp, op, t)
            break
        elif fn == FN_REPLY_CLIENT:  # Osd._reply_client
            o = st.opi[op, OPI_OSD]
            cost = st.of[o, OF_SEND]
            if st.opi[op, OPI_KIND] == _READ:
                cost += st.of[o, OF_PERBYTE] * st.opi[op, OPI_LEN]
            c = st.oi[o, OI_CPU]
            t = _run(sp, c, st.oi[o, OI_THMSGR], t, cost)
            fn = FN_TO_CLIENT
        elif fn == FN_TO_CLIENT:  # Osd._to_client
            _client_reply(sp, st.oi[st.opi[op, OPI_OSD], OI_HOST], op, t)
            break
        elif fn == FN_COMMIT_IN:  # Osd._commit_in (op: the client write at its primary)
            if t > st.opf[op, OPF_TLOCAL]:
                st.opf[op, OPF_TLOCAL] = t
            st.opi[op, OPI_PENDING] -= 1
            if st.opi[op, OPI_PENDING] != 0:
                break
            t = st.opf[op, OPF_TLOCAL]  # the last commit answers the client: Osd._reply_client
            fn = FN_REPLY_CLIENT
            check = 0
        elif fn == FN_SEND_SUB:  # Osd._send_sub (op: the repop; its sender is its primary op's OSD)
            r = st.opi[op, OPI_OSD]
            src = st.opi[st.opi[op, OPI_PRIM], OPI_OSD]
            payload = st.opi[op, OPI_LEN] if st.opi[op, OPI_KIND] == _WRITE else 0
            t = _arrival(sp, st.oi[src, OI_HOST], st.oi[r, OI_HOST], t, payload)
            _deliver(sp, r, t, op, st.of[src, OF_RECV] + st.of[src, OF_PERBYTE] * payload)
            break
        elif fn == FN_EC_WRITE_SEND:
            _ec_write_send(sp, op, t)
            break
        elif fn == FN_EC_REPLY_AT:  # ec._read_reply_at (op: the sub-read, at its shard's OSD)
            _ec_read_reply(sp, st.opi[op, OPI_OSD], op, t)
            break
        elif fn == FN_EC_DECODE:  # ec._decode (op: the last sub-read reply, whose worker decodes)
            prim = st.opi[op, OPI_PRIM]
            img = st.opi[prim, OPI_IMG]
            st.imi[img, II_ECS + ECS_DECB] += st.opi[prim, OPI_DECODE]
            c = st.oi[st.opi[prim, OPI_OSD], OI_CPU]
            t = _book(sp, c, t, st.opi[prim, OPI_DECODE] / st.imf[img, IF_DEC])
            rel_sh = st.opi[op, OPI_SHARD]  # the worker is released after what follows (ec._decode's _release_at)
            rel_pg = st.opi[op, OPI_PG]
            rel_t = t
            _op_free(sp, op)
            op = prim
            if st.opi[prim, OPI_KIND] != _READ:
                _at(sp, t, EV_EC, EC_STEP_WAFTER, prim)
                break
            fn = FN_REPLY_CLIENT
        elif fn >= FN_EC_SUBREAD_OUT:
            _leaf(sp, fn, op, t)
            break
        elif fn == FN_SEND_REPLY:  # Osd._send_reply (op: the repop turned reply, at its replica)
            r = st.opi[op, OPI_OSD]
            prim = st.opi[op, OPI_PRIM]
            posd = st.opi[prim, OPI_OSD]
            t = _arrival(sp, st.oi[r, OI_HOST], st.oi[posd, OI_HOST], t, 0)
            if _deliver(sp, posd, t, op, st.of[r, OF_RECV]) == 0:
                break
            # dispatched on arrival: its processing ended at GF_RELT; the chain goes on with the
            # primary's commit, and the worker is released after it (Osd._dispatch_at)
            rel_sh = st.gi[GI_RELSH]
            rel_pg = st.gi[GI_RELPG]
            rel_t = st.gf[GF_RELT]
            c = st.oi[posd, OI_CPU]
            t = rel_t
            _op_free(sp, op)
            op = prim
            fn = FN_COMMIT_IN
        else:
            _void(sp, WHY_PATH)  # a continuation of a path not compiled yet
            break
    if rel_sh >= 0:
        _release_at(sp, rel_sh, rel_pg, rel_t)


# =============================================================================== cache autotuning (Autotuner)
@njit(cache=_CACHE_LOOP, _nrt=False)
def _autotune_tick(sp, now):
    """Autotuner.tick: every BlueStore OSD of the run re-sizes its data and onode caches (Autotuner._tune,
    its arithmetic ``ceph_arith.autotune_split``); the OSDs outside the run replay the tick in Python."""
    st = _ld(sp)
    st.gf[GF_NEXTTUNE] = now + st.gf[GF_TUNEINT]
    st.gi[GI_TICKS] += 1
    st.gi[GI_RUNTICKS] += 1
    onode_b = st.gi[GI_ONODEB]
    dc = st.dc
    for o in range(st.bsi.shape[0]):
        b = st.bsi[o]
        if b[BS_TUNED] == 0:
            continue
        unit = dc.oi[o, DC_UNIT]
        bud, kv, meta, data, mapped = autotune_split_nb(
            b[BS_TBUDGET], st.gi[GI_TBASE], _DC.held(dc, o) * unit, st.oni[o, ON_N] * onode_b, dc.oi[o, DC_WU] * unit,
            st.gi[GI_TTARGET], st.gi[GI_TMAX], st.gi[GI_TMIN], st.gf[GF_KVR], st.gf[GF_METAR])
        cap = data // unit
        _DC.resize(dc, o, cap, int(cap * st.bsf[o, BF_KINR]), int(cap * st.bsf[o, BF_KOUTR]))
        _onode.resize(st.oni, st.oprev, st.onext, o, meta // onode_b)
        b[BS_TBUDGET] = bud
        b[BS_TKV] = kv
        b[BS_TMETA] = (meta // onode_b) * onode_b
        b[BS_TDATA] = cap * unit
        b[BS_TMAPPED] = mapped


# =============================================================================== librbd (RbdImage)
@njit(cache=_CACHE_LOOP, _nrt=False)
def _img_start(sp, r, now):
    """RbdImage._start: client CPU, then one object op per object the request spans."""
    st = _ld(sp)
    if now >= st.gf[GF_NEXTTUNE]:  # BlueStore cache autotuning is due (never without autotune: inf)
        _autotune_tick(sp, now)
    img = st.rqi[r, RQI_IMG]
    kind = st.rqi[r, RQI_KIND]
    size = st.rqi[r, RQI_SIZE]
    c = st.hoi[st.imi[img, II_CLIENT], HI_CPU]
    cost = st.imf[img, IF_SUBMIT]
    if kind == _WRITE:
        cost += st.imf[img, IF_PERBYTE] * size + st.imf[img, IF_WRITE]
    th = st.imi[img, II_THSUB]
    if kind == _FLUSH or size <= 0:
        t = _run(sp, c, th, now, cost)
        schedule(sp, now + (t - now), EV_REQ_DONE, r, 0)
        return
    order = st.imi[img, II_ORDER]
    role = EC_CLIENT if st.imi[img, II_EC] else CLIENT  # RbdImage.client_role
    off = st.rqi[r, RQI_OFF]
    end = off + size
    first = off >> order
    last = (end - 1) >> order
    if first == last:
        st.rqi[r, RQI_LEFT] = 1
        op = _op_new(sp, kind, role, _pg_of(sp, img, first), img, first, off - (first << order), size)
        st.opi[op, OPI_REQ] = r
        st.opf[op, OPF_T0] = now
        _then(sp, c, _run(sp, c, th, now, cost), FN_SEND_CLIENT_OP, op, 1)
        return
    st.rqi[r, RQI_LEFT] = last - first + 1
    osz = 1 << order
    for objno in range(first, last + 1):
        lo = max(off, objno << order)
        hi = min(end, (objno << order) + osz)
        op = _op_new(sp, kind, role, _pg_of(sp, img, objno), img, objno, lo - (objno << order), hi - lo)
        st.opi[op, OPI_REQ] = r
        st.opi[op, OPI_GROUP] = 1
        st.opf[op, OPF_T0] = now
        _then(sp, c, _run(sp, c, th, now, cost), FN_SEND_CLIENT_OP, op, 1)


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
        _post(sp, prim, _run(sp, st.oi[prim, OI_CPU], st.oi[prim, OI_THMSGR], t,
                             st.of[prim, OF_RECV] + st.of[prim, OF_PERBYTE] * payload), op)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _client_reply(sp, host, op, t):
    """Cluster.client_reply: the reply travels to the client, whose CPU completes it."""
    st = _ld(sp)
    kind = st.opi[op, OPI_KIND]
    payload = st.opi[op, OPI_LEN] if kind == _READ else 0
    img = st.opi[op, OPI_IMG]
    ch = st.imi[img, II_CLIENT]
    t = _arrival(sp, host, ch, t, payload)
    t = _run(sp, st.hoi[ch, HI_CPU], st.imi[img, II_THCOMP], t, st.imf[img, IF_COMPLETE] + st.imf[img, IF_PERBYTE] * payload)
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
    """Osd.deliver: a write, repop or commit reply arrives at ``t``; dispatched on arrival when its
    shard is idle (Osd._dispatch_at), else posted. Returns 1 when a commit reply was dispatched on
    arrival: the caller continues with the primary's commit (a chain of ``then``) and then
    releases the worker (GI_RELSH, GI_RELPG at GF_RELT); 0 otherwise."""
    st = _ld(sp)
    if st.opi[op, OPI_ROLE] != REPLY:  # its object's device offset and onode slot, read when it is dispatched
        mi = _omi(sp, op)
        if 0 <= mi < st.obj_base.shape[0]:
            prefetch(st.obj_base, (mi,))
        if 0 <= mi < st.oprev.shape[0]:  # the object's row is its onode node (ceph_onode_build)
            prefetch(st.oprev, (mi,))
    c = st.oi[o, OI_CPU]
    pg = st.opi[op, OPI_PG]
    sh = _shard_of(sp, o, pg)
    if st.shi[sh, SHI_NLAZY]:
        _settle(sp, sh)
    if (st.shi[sh, SHI_FREE] > 0 and st.shi[sh, SHI_INFLIGHT] == 0 and st.shi[sh, SHI_QCNT] == 0
            and st.pgb[pg, _bpos(sp, pg, o)] == 0 and st.gi[GI_NOFOLD] == 0):
        t = _run(sp, c, st.oi[o, OI_THMSGR], t, recv_cost)
        if st.ci[c, CI_STALLED] == 0 and _idle(sp, c, st.gf[GF_NOW]):
            return _dispatch_at(sp, o, sh, op, t)
    else:
        t = _run(sp, c, st.oi[o, OI_THMSGR], t, recv_cost)
    st.shi[sh, SHI_INFLIGHT] += 1
    _at(sp, t, EV_OSD_OP, o, op)
    return 0


@njit(cache=_CACHE_LOOP, _nrt=False)
def _dispatch_at(sp, o, sh, op, t):
    """Osd._dispatch_at: a write, repop or commit reply whose decoding ends at ``t``."""
    st = _ld(sp)
    pg = st.opi[op, OPI_PG]
    st.shi[sh, SHI_FREE] -= 1
    st.pgb[pg, _bpos(sp, pg, o)] = 1
    st.opi[op, OPI_SHARD] = sh
    role = st.opi[op, OPI_ROLE]
    c = st.oi[o, OI_CPU]
    if role == REPLY:
        st.oi[o, OI_REPLIES] += 1
        t = _run(sp, c, st.shi[sh, SHI_TH], t, _cost(sp, o, st.of[o, OF_REPLY]))
        st.gi[GI_RELSH] = sh
        st.gi[GI_RELPG] = pg
        st.gf[GF_RELT] = t
        return 1
    _onode_prefetch(sp, op)
    if role == SUBOP:
        st.oi[o, OI_SUBOPS] += 1
        _at(sp, _run(sp, c, st.shi[sh, SHI_TH], t, _cost(sp, o, st.of[o, OF_SUBOP])), EV_PREPARED, o, op)
    else:
        st.oi[o, OI_OPS + st.opi[op, OPI_KIND]] += 1
        _at(sp, _run(sp, c, st.shi[sh, SHI_TH], t, _cost(sp, o, st.of[o, OF_WRITE])), EV_PREPARED, o, op)
    return 0


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
    th = st.shi[sh, SHI_TH]
    if st.ci[st.oi[o, OI_CPU], CI_THREADED] and st.thf[th, THF_UNTIL] < st.gf[GF_NOW]:  # the per-thread wakeup rule
        st.thf[th, THF_UNTIL] = st.gf[GF_NOW]  # a worker just freed takes the queued op without going to sleep
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
    th = st.shi[sh, SHI_TH]
    kind = st.opi[op, OPI_KIND]
    img = st.opi[op, OPI_IMG]
    base = st.obj_base[st.imi[img, II_KEY] + st.opi[op, OPI_OBJNO] * st.imi[img, II_SIZE] + st.opi[op, OPI_POS]]
    role = st.opi[op, OPI_ROLE]
    if role == CLIENT and kind == _READ:
        st.oi[o, OI_OPS + kind] += 1
        if base < 0:  # object does not exist: zeros, no IO
            t = _run(sp, c, th, now, _cost(sp, o, st.of[o, OF_READ]))
            _then(sp, c, t, FN_REPLY_CLIENT, op, 1)
            _release_at(sp, sh, pg, t)
            return
        if st.gi[GI_READ_WRITTEN_OK] == 0:
            _void(sp, WHY_READ_WRITTEN)
            return
        # the data cache (ObjectStore.probe_read), then the onode (its decode CPU on a miss): a hit is answered
        # after the worker's job, a miss keeps the worker blocked through the device read(s)
        cost = _cost(sp, o, st.of[o, OF_READ])
        hit = _DC.probe(st.dc, o, st.imi[img, II_KB] + st.opi[op, OPI_OBJNO], st.opi[op, OPI_OFF], st.opi[op, OPI_LEN])
        if not _onode_probe(sp, o, op):  # BlueStore.read loads it on a miss (EV_READ_MISS)
            cost += st.onf[o, ONF_COST]
            st.opi[op, OPI_ONODE] = 0
        if hit:
            t = _run(sp, c, th, now, cost + st.dc.of[o])
            _then(sp, c, t, FN_REPLY_CLIENT, op, 1)
            _release_at(sp, sh, pg, t)
            return
        _at(sp, _run(sp, c, th, now, cost), EV_READ_MISS, o, op)
    elif role == CLIENT:
        _onode_prefetch(sp, op)
        st.oi[o, OI_OPS + kind] += 1
        _at(sp, _run(sp, c, th, now, _cost(sp, o, st.of[o, OF_WRITE])), EV_PREPARED, o, op)
    elif role == SUBOP:
        _onode_prefetch(sp, op)
        st.oi[o, OI_SUBOPS] += 1
        _at(sp, _run(sp, c, th, now, _cost(sp, o, st.of[o, OF_SUBOP])), EV_PREPARED, o, op)
    elif role == EC_CLIENT:  # ec._dispatch_client
        st.oi[o, OI_OPS + kind] += 1
        _at(sp, _book(sp, c, now, _cost(sp, o, st.of[o, OF_READ] if kind == _READ else st.of[o, OF_WRITE])), EV_EC,
            EC_STEP_START, op)
    elif role == EC_SUBREAD:
        _ec_dispatch_subread(sp, o, sh, op, base)
    elif role == EC_READREPLY:
        _ec_dispatch_readreply(sp, o, sh, op)
    else:  # a replica's commit reply: the worker holds the PG for reply_cost
        st.oi[o, OI_REPLIES] += 1
        t = _run(sp, c, th, now, _cost(sp, o, st.of[o, OF_REPLY]))
        prim = st.opi[op, OPI_PRIM]
        _op_free(sp, op)
        _then(sp, c, t, FN_COMMIT_IN, prim, 1)
        _release_at(sp, sh, pg, t)


# =============================================================================== the event loop
@njit(cache=_CACHE_LOOP, _nrt=False)
def run_until(st, t_end):
    """Process events in (time, sequence) order until ``t_end``, until every request has completed
    and the heap is empty, or until Python is needed (a random stream to refill)."""
    sp = _state_ptr(st)
    cap = st.ht.shape[0] - 64
    ds = st.dev
    dcap = ds.ht.shape[0] - 16
    while True:
        if st.gi[GI_FULL]:
            return ST_FULL
        if st.gi[GI_LOW]:
            return ST_REFILL
        dn = ds.gi[DL.GI_HN]
        if dn:  # the device core's heap: its first event, if it comes before this heap's (time, sequence)
            if dn > dcap:
                _void(sp, WHY_POOL)
                return ST_FULL
            td = ds.ht[0]
            if st.gi[GI_HN] == 0 or td < st.ht[0] or (td == st.ht[0] and ds.hs[0] < st.hs[0]):
                if td > t_end:
                    return ST_TIME
                st.gf[GF_NOW] = td
                st.gi[GI_EVENTS] += 1
                _core_event(sp)
                continue
        if st.gi[GI_HN] == 0:
            return ST_DONE if st.gi[GI_OUT] == 0 else ST_EMPTY
        if st.gi[GI_HN] > cap:
            _void(sp, WHY_POOL)
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
        elif kind == EV_PREPARED:
            _write_prepared(sp, target, arg)
        elif kind == EV_DEV_DONE:
            _dev_done(sp, target, arg)
        elif kind == EV_REQ_DONE:
            st.rqf[target, RQF_TDONE] = t
            st.rqi[target, RQI_DSEQ] = st.gi[GI_NCOMP]
            st.gi[GI_NCOMP] += 1
            st.gi[GI_OUT] -= 1
            if st.gi[GI_CLOSED] and st.gi[GI_NTHR]:  # job threads: a slot frees (JobThread._on_done)
                thr = st.rqi[target, RQI_THR]
                st.trn[thr, TR_INFL] -= 1
                if st.trn[thr, TR_BLOCKER] == target:
                    st.trn[thr, TR_BLOCKER] = -1
                if st.trf[thr, TRF_TT] > 0.0 and st.trn[thr, TR_ISSUING]:  # thinktime (counted, due, then taken)
                    if st.rqi[target, RQI_KIND] < _FLUSH and not st.trn[thr, TR_TTON]:
                        st.trn[thr, TR_TTCOUNT] += 1
                    if not st.trn[thr, TR_STALL] and _think_due(sp, thr, t):
                        st.trn[thr, TR_STALL] = 1
                    if st.trn[thr, TR_STALL]:  # no issue: once nothing is in flight, the think time
                        if st.trn[thr, TR_INFL] == 0 and not st.trn[thr, TR_THINKING]:
                            _think(sp, thr, t)
                    else:
                        _fill(sp, thr, t)
                else:
                    _fill(sp, thr, t)
                if st.gi[GI_CLOSED] == 2 and st.gi[GI_OUT] == 0:  # the run's end, queued as the runner's done event
                    schedule(sp, t, EV_STOP, 0, 0)
            elif st.gi[GI_CLOSED] == 2 and st.gi[GI_OUT] == 0:
                schedule(sp, t, EV_STOP, 0, 0)
            elif st.gi[GI_CLOSED]:  # closed loop: the completion issues the next request
                nxt = st.gi[GI_NEXTREQ]
                if nxt < st.gi[GI_NREQ]:
                    st.gi[GI_NEXTREQ] = nxt + 1
                    st.rqf[nxt, RQF_TISSUE] = t
                    _img_start(sp, nxt, t)
                    if nxt + 1 == st.gi[GI_NREQ]:  # the last row is out: Python may add rows (ceph_fio)
                        st.gi[GI_LOW] = 1
        elif kind == EV_KV_IO:  # BlueStore._kv_io
            if arg:
                st.bsf[target, BF_FLUSHT0] = st.gf[GF_NOW]
                _dev_submit(sp, st.bsi[target, BS_DEV], _FLUSH, 0, 0, DP_DATA_FLUSH, 0, target)
            else:
                _kv_write(sp, target)
        elif kind == EV_READ_MISS:  # Osd._read_miss -> BlueStore.read (ec._subread_miss too)
            _read_miss(sp, target, arg)
        elif kind == EV_EC:
            if target == EC_STEP_START:
                if st.opi[arg, OPI_KIND] == _READ:
                    _ec_read_start(sp, arg)
                else:
                    _ec_write_start(sp, arg)
            else:  # ec._write_after_reads
                _ec_write_phase(sp, arg)
        elif kind == EV_DEFER_TIMER:  # BlueStore._deferred_timer
            st.bsi[target, BS_TIMER] = 0
            if st.bsi[target, BS_DQ_H] >= 0:
                _deferred_try_submit(sp, target)
        elif kind == EV_ARRIVAL and st.gi[GI_NTHR]:  # a job thread's arrival (JobThread._on_arrival)
            nxt = st.rqi[target, RQI_ALINK]  # the next arrival of any thread (its timer)
            if nxt >= 0:
                _at(sp, st.rqf[nxt, RQF_TARR], EV_ARRIVAL, nxt, 0)
            thr = st.rqi[target, RQI_THR]
            if st.trn[thr, TR_NEXT] >= 0:  # not stopped
                st.trn[thr, TR_BACK] += 1
                _fill(sp, thr, t)
        elif kind == EV_ARRIVAL:
            nxt = st.gi[GI_NEXTREQ]
            if nxt < st.gi[GI_NREQ]:
                st.gi[GI_NEXTREQ] = nxt + 1
                _at(sp, st.rqf[nxt, RQF_TISSUE], EV_ARRIVAL, nxt, 0)
            _img_start(sp, target, t)
        elif kind == EV_WAKE:
            _wake(sp, target)
        elif kind == EV_STOP:  # the last completion's done event: what is queued after it stays pending
            return ST_STOP
        elif kind == EV_THINK_END:
            _think_end(sp, target, t)
            if st.gi[GI_CLOSED] == 2 and st.gi[GI_OUT] == 0:  # the thread ends with its think: the run's end
                schedule(sp, t, EV_STOP, 0, 0)
        elif kind == EV_SUBMIT:  # JobThread._on_slat: the image takes it now
            st.rqf[target, RQF_TSUB] = t
            _img_start(sp, target, t)
        elif kind == EV_RESUME:
            _then(sp, 0, t, target, arg, 0)
        elif kind == EV_EXTENT_DONE:
            st.rqi[target, RQI_LEFT] -= 1
            _op_free(sp, arg)
            if st.rqi[target, RQI_LEFT] == 0:
                schedule(sp, t + 0.0, EV_REQ_DONE, target, 0)
        else:
            _void(sp, WHY_PATH)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _fill(sp, thr, now):
    """JobThread._fill (closed loop) / _pump (open loop: the arrivals waiting in its backlog): job thread ``thr``
    issues its queued rows while it has slots and no blocking flush is in flight; an end_fsync flush
    (JobThread._wind_up) once nothing else is in flight. A closed loop whose last queued row went out flags
    GI_LOW: Python may add rows (ceph_fio), then fills again."""
    st = _ld(sp)
    open_ = st.trn[thr, TR_OPEN]
    while True:
        r = st.trn[thr, TR_NEXT]
        if r >= 0 and st.rqi[r, RQI_KIND] == RQ_ENDFLUSH and not st.trn[thr, TR_ISSUING]:
            if st.trn[thr, TR_INFL] > 0:  # stopped: the end flush once nothing is in flight, whatever the stall
                return
        else:
            if not (st.trn[thr, TR_INFL] < st.trn[thr, TR_DEPTH] and st.trn[thr, TR_BLOCKER] < 0
                    and not st.trn[thr, TR_STALL]):
                return
            if r < 0:
                if st.trn[thr, TR_FINAL]:  # JobThread._issue finds its limit or its runtime's end: _stop
                    st.trn[thr, TR_ISSUING] = 0
                return
            if st.rqi[r, RQI_KIND] == RQ_ENDFLUSH:  # its IO rows are over (_stop); the end flush (_wind_up)
                st.trn[thr, TR_ISSUING] = 0
                if st.trn[thr, TR_INFL] > 0:
                    return
            elif open_ and st.trn[thr, TR_BACK] <= 0:  # (a flush due in an open loop waits for an issue attempt)
                return
        kind = st.rqi[r, RQI_KIND]
        st.trn[thr, TR_NEXT] = st.rqi[r, RQI_LINK]
        if open_ and kind < _FLUSH:  # an arrival leaves the backlog (a flush takes a slot, not an arrival)
            st.trn[thr, TR_BACK] -= 1
        st.trn[thr, TR_INFL] += 1
        st.gi[GI_NEXTREQ] += 1  # (rows issued)
        st.rqf[r, RQF_TISSUE] = now
        if kind == _FLUSH and st.trn[thr, TR_BLOCKS]:
            st.trn[thr, TR_BLOCKER] = r
        slat = st.trf[thr, TRF_SLAT]
        if slat > 0.0:  # JobThread._submit: after the submission latency, one submission after another
            tc = max(st.trf[thr, TRF_CPUFREE], now) + slat
            st.trf[thr, TRF_CPUFREE] = tc
            schedule(sp, now + (tc - now), EV_SUBMIT, r, 0)
        else:
            st.rqf[r, RQF_TSUB] = now
            _img_start(sp, r, now)
        if not open_ and st.trn[thr, TR_NEXT] < 0:
            st.gi[GI_LOW] = 1
        if kind < _FLUSH and st.trf[thr, TRF_TT] > 0.0:  # thinktime: an issue counts (blocks_type issue), it may be due
            if st.trn[thr, TR_TTON]:
                st.trn[thr, TR_TTCOUNT] += 1
            if not st.trn[thr, TR_STALL] and _think_due(sp, thr, now):
                st.trn[thr, TR_STALL] = 1


@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _think_due(sp, thr, now):
    """JobThread._think_due: thinktime_iotime elapsed since the last think, or thinktime_blocks counted."""
    st = _ld(sp)
    io = st.trf[thr, TRF_IOTIME]
    if io > 0.0 and now - st.trf[thr, TRF_TTLAST] >= io:
        return True
    b = st.trn[thr, TR_TTBLOCKS]
    return b > 0 and st.trn[thr, TR_TTCOUNT] >= b


@njit(cache=_CACHE_LOOP, _nrt=False)
def _think(sp, thr, now):
    """JobThread._think: nothing of the thread in flight, it thinks (cut at its runtime's end); the think counts as
    outstanding work of the run (the thread may end at its end)."""
    st = _ld(sp)
    d = min(st.trf[thr, TRF_TT], st.trf[thr, TRF_TSTOP] - now)
    st.trn[thr, TR_THINKING] = 1
    st.gi[GI_OUT] += 1
    if d > 0.0:
        schedule(sp, now + d, EV_THINK_END, thr, 0)
    else:
        _think_end(sp, thr, now)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _think_end(sp, thr, now):
    """JobThread._think_end: the count restarts, the thread fills again (or stops there: its end flush, its end;
    the caller schedules the run's end if nothing is left)."""
    st = _ld(sp)
    st.trn[thr, TR_THINKING] = 0
    st.trn[thr, TR_STALL] = 0
    st.trn[thr, TR_TTCOUNT] = 0
    st.trf[thr, TRF_TTLAST] = now
    st.trf[thr, TRF_TEND] = now
    st.gi[GI_OUT] -= 1
    _fill(sp, thr, now)  # (issuing: its refill; stopped: its end flush, _wind_up)


@njit(cache=_CACHE_LOOP, _nrt=False)
def fill_now(st, thr):
    """_fill from Python (a thread's start, after Python added rows)."""
    sp = _state_ptr(st)
    _fill(sp, thr, st.gf[GF_NOW])


@njit(cache=_CACHE_LOOP, _nrt=False)
def schedule_at(st, t, kind, target, arg):
    """Schedule an event from Python (the first arrival of a run)."""
    sp = _state_ptr(st)
    schedule(sp, t, kind, target, arg)


# =============================================================================== the write path
# Replicated writes (Osd._write_prepared / _write_admitted, the repops and commit replies) and
# BlueStore's transaction path (throttles, deferred and direct writes, kv_sync group commit,
# deferred apply per OpSequencer) on queue devices. numba cannot compile functions that call each
# other in a cycle; the one cycle of the Python model (kv_sync's _kv_write wakes a throttle waiter
# whose _write_admitted may start kv_sync) never recurses at run time (kv_sync is busy while it
# wakes waiters), so the waiters are resumed by ``_write_admitted_in`` / ``_kv_kick_in``, which
# flag (GI_FULL) instead of starting kv_sync.
@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _tx_append(sp, arr, row, ch, ct, x):
    """Append txc ``x`` to the list whose head / tail are arr[row, ch] / arr[row, ct]."""
    st = _ld(sp)
    st.txi[x, TX_NEXT] = -1
    t = arr[row, ct]
    if t < 0:
        arr[row, ch] = x
    else:
        st.txi[t, TX_NEXT] = x
    arr[row, ct] = x


@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _batch_append(sp, o, ch, ct, b):
    """Append batch ``b`` (its first txc) to a list of batches of BlueStore ``o``."""
    st = _ld(sp)
    st.txi[b, TX_NEXTB] = -1
    t = st.bsi[o, ct]
    if t < 0:
        st.bsi[o, ch] = b
    else:
        st.txi[t, TX_NEXTB] = b
    st.bsi[o, ct] = b


@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _batches_concat(sp, o, ah, at, bh, bt):
    """List a += list b; b emptied."""
    st = _ld(sp)
    h = st.bsi[o, bh]
    if h < 0:
        return
    if st.bsi[o, at] < 0:
        st.bsi[o, ah] = h
    else:
        st.txi[st.bsi[o, at], TX_NEXTB] = h
    st.bsi[o, at] = st.bsi[o, bt]
    st.bsi[o, bh] = -1
    st.bsi[o, bt] = -1


@njit(cache=_CACHE_LOOP, _nrt=False)
def _tx_new(sp):
    st = _ld(sp)
    n = st.gi[GI_TXFREE]
    if n == 0:
        _void(sp, WHY_POOL)
        return 0
    n -= 1
    st.gi[GI_TXFREE] = n
    x = st.txfree[n]
    for k in range(st.txi.shape[1]):
        st.txi[x, k] = 0
    st.txi[x, TX_DOFF] = -1
    st.txi[x, TX_NEXT] = -1
    st.txi[x, TX_NEXTB] = -1
    return x


@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _tx_free(sp, x):
    st = _ld(sp)
    st.txfree[st.gi[GI_TXFREE]] = x
    st.gi[GI_TXFREE] += 1


# ------------------------------------------------------------------------------- queue devices
@njit(cache=_CACHE_LOOP, _nrt=False)
def _dev_dispatch(sp, d, r):
    """QueueDevice._dispatch: service from the distribution (+ size / bandwidth), or flush_time."""
    st = _ld(sp)
    if st.dri[r, DR_OP] == _FLUSH:
        s = st.dvf[d, DVF_FLUSH]
    else:
        if st.dvi[d, DV_DIST] == 0:
            s = st.dvf[d, DVF_P0]
        else:
            s = -st.dvf[d, DVF_P0] * math.log(1.0 - _u(sp, st.dvi[d, DV_STREAM]))
        bw = st.dvf[d, DVF_BW]
        if bw != 0.0:
            s += st.dri[r, DR_SIZE] / bw
    st.dvf[d, DVF_BUSY] += s
    schedule(sp, st.gf[GF_NOW] + s, EV_DEV_DONE, d, r)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _dev_submit(sp, d, opk, off, size, purp, arg, o):
    """Device.submit of a request to BlueStore's device row ``d``: a queue device of this core
    (QueueDevice._start), or a device of the device core (_core_submit)."""
    _dev_submit_b(sp, d, opk, off, size, purp, arg, o, -1)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _dev_submit_b(sp, d, opk, off, size, purp, arg, o, prev):
    """_dev_submit, or (``prev`` != -1) the submission of a request of a batch whose submitter sleeps for
    the block layer's tags (core.loop.batch_sleep: ``prev`` -2 the first, else the device-core row of
    the batch's previous one). Returns the request's device-core row (-1: none)."""
    st = _ld(sp)
    if d < 0:
        _void(sp, WHY_NO_DEVICE)
        return -1
    n = st.gi[GI_DEVFREE]
    if n == 0:
        _void(sp, WHY_POOL)
        return -1
    n -= 1
    st.gi[GI_DEVFREE] = n
    r = st.drfree[n]
    st.dri[r, DR_DEV] = d
    st.dri[r, DR_OP] = opk
    st.dri[r, DR_SIZE] = size
    st.dri[r, DR_PURP] = purp
    st.dri[r, DR_ARG] = arg
    st.dri[r, DR_OSD] = o
    st.dri[r, DR_NEXT] = -1
    c = st.dvi[d, DV_CORE]
    if c >= 0:
        if st.dvi[d, DV_PART]:  # Partition._enter: PassThroughBusy._enter_inside
            f = st.dvf[d]
            now = st.gf[GF_NOW]
            f[DVF_P_QAREA] += f[DVF_P_INSIDE] * (now - f[DVF_P_TQ])
            f[DVF_P_TQ] = now
            if f[DVF_P_INSIDE] == 0.0:
                f[DVF_P_BSINCE] = now
            f[DVF_P_INSIDE] += 1.0
        return _core_submit(sp, c, r, opk, off + st.dvi[d, DV_SHIFT], size, prev)
    if st.dvi[d, DV_FREE] > 0:
        st.dvi[d, DV_FREE] -= 1
        _dev_dispatch(sp, d, r)
    else:
        t = st.dvi[d, DV_QT]
        if t < 0:
            st.dvi[d, DV_QH] = r
        else:
            st.dri[t, DR_NEXT] = r
        st.dvi[d, DV_QT] = r
        st.dvi[d, DV_QN] += 1
    return -1


# ------------------------------------------------------------------------------- the device core below BlueStore
# HDDs, dual-actuator drives' LUNs and block layers run in the device core (core.loop), whose State is
# this State's ``dev``: its own heap, request pool and handlers, not a copy of them. A request goes in
# through core.loop.device_submit (one device-core request row, RI_THR = -2 - this core's device-request
# row); run_until advances whichever heap has the earlier event, the two heaps sharing one sequence
# counter (GI_SEQ, copied in and out around each call into the device core), so simultaneous events
# run in scheduling order, as SimPy's one heap runs them; a completion is logged by core.loop._t_done
# and handed to _dev_done right after the device event, where the Python model's BlueStore callback runs
# (after the device's, the block layer's and the partition's callbacks).
@intrinsic
def _dev_ptr(typingctx, sp):
    """The address of the device core's State inside this State (``sp`` points at a CephState): its
    helpers take it as they take their own State's (core.loop._ld)."""
    if not isinstance(sp, types.CPointer):
        return None
    tup = sp.dtype
    i = list(tup.fields).index("dev")

    def codegen(context, builder, sig, args):
        return cgutils.gep_inbounds(builder, args[0], 0, i)

    return types.CPointer(tup.types[i])(sp), codegen


@njit(cache=_CACHE_LOOP, _nrt=False)
def _core_submit(sp, c, r, opk, off, size, prev):
    """Submit this core's device request ``r`` to device ``c`` of the device core (a request row of
    its pool, as a job thread's _t_new fills one); ``prev`` != -1: a request of a sleeping batch
    (see _dev_submit_b). Returns the device-core row."""
    st = _ld(sp)
    dsp = _dev_ptr(sp)
    ds = _ld(dsp)
    nf = ds.gi[DL.GI_FREE]
    if nf == 0:
        _void(sp, WHY_POOL)
        return -1
    nf -= 1
    ds.gi[DL.GI_FREE] = nf
    q = ds.rfree[nf]
    ds.rqi[q, DL.RI_OP] = opk
    ds.rqi[q, DL.RI_OFF] = off
    ds.rqi[q, DL.RI_SIZE] = size
    ds.rqi[q, DL.RI_THR] = -2 - r
    ds.rqi[q, DL.RI_DEV] = c
    ds.rqi[q, DL.RI_FUA] = 0
    now = st.gf[GF_NOW]
    ds.rqf[q, DL.RF_TISSUE] = now
    ds.rqf[q, DL.RF_TSTART] = 0.0
    ds.rqf[q, DL.RF_SERVICE] = 0.0
    ds.gi[DL.GI_SEQ] = st.gi[GI_SEQ]
    if prev == -1:
        _core_device_submit(dsp, c, q, now)
    else:
        _core_batch_sleep(dsp, c, q, prev, now)
    st.gi[GI_SEQ] = ds.gi[DL.GI_SEQ]
    return q


@njit(cache=_CACHE_LOOP, _nrt=False)
def _core_event(sp):
    """Process the device core's first event (its time is now), then hand the requests it completed
    to _dev_done, in the order the device core completed them."""
    st = _ld(sp)
    dsp = _dev_ptr(sp)
    ds = _ld(dsp)
    ds.gi[DL.GI_SEQ] = st.gi[GI_SEQ]
    _core_step(dsp)
    st.gi[GI_SEQ] = ds.gi[DL.GI_SEQ]
    n = ds.gi[DL.GI_LOGN]
    if n == 0:
        return
    ds.gi[DL.GI_LOGN] = 0  # the callbacks below cannot complete a device request (completions are events)
    for i in range(n):
        q = ds.lgt[i]
        r = -2 - ds.rqi[q, DL.RI_THR]
        ds.rfree[ds.gi[DL.GI_FREE]] = q
        ds.gi[DL.GI_FREE] += 1
        _dev_done(sp, st.dri[r, DR_DEV], r)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _batch_sleeps(sp, d):
    """BlockLayer.submit_batch's loop condition: the batch's submitter sleeps for tags from its next
    request on (the block layer below device row ``d`` has no free tag, or a sleeping submitter);
    False for a device without a block layer (Partition.submit_batch: one submit per request)."""
    st = _ld(sp)
    c = st.dvi[d, DV_CORE]
    if c < 0:
        return False
    ds = _ld(_dev_ptr(sp))
    if ds.dvi[c, 0] != DL.DK_BLK:
        return False
    b = ds.dvi[c, 1]
    return ds.bi[b, DL.BI_TAGS] == 0 or ds.bi[b, DL.BI_W_CNT] > 0


@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _obj_base(sp, op):
    """The device offset of ``op``'s object on its OSD (RbdImage.base_of)."""
    st = _ld(sp)
    img = st.opi[op, OPI_IMG]
    return st.obj_base[st.imi[img, II_KEY] + st.opi[op, OPI_OBJNO] * st.imi[img, II_SIZE] + st.opi[op, OPI_POS]]


@njit(cache=_CACHE_LOOP, _nrt=False)
def _dev_finish(sp, d):
    """QueueDevice._finish: the next queued request starts, or a server becomes free."""
    st = _ld(sp)
    st.dvi[d, DV_DONE] += 1
    h = st.dvi[d, DV_QH]
    if h >= 0:
        nx = st.dri[h, DR_NEXT]
        st.dvi[d, DV_QH] = nx
        if nx < 0:
            st.dvi[d, DV_QT] = -1
        st.dvi[d, DV_QN] -= 1
        _dev_dispatch(sp, d, h)
    else:
        st.dvi[d, DV_FREE] += 1


# ------------------------------------------------------------------------------- BlueStore
@njit(cache=_CACHE_LOOP, _nrt=False)
def _alloc(sp, o, nbytes):
    """BlueStore.alloc."""
    st = _ld(sp)
    a = st.bsi[o, BS_MINALLOC]
    n = align_up_nb(nbytes, a)
    off = alloc_offset_nb(st.bsi[o, BS_CURSOR], n, a, st.bsi[o, BS_CAP], st.bsi[o, BS_DSTART], st.bsi[o, BS_BFS],
                          st.bsi[o, BS_BFE])
    st.bsi[o, BS_CURSOR] = off + n
    st.bsi[o, BS_ALLOCATED] += n
    return off


@njit(cache=_CACHE_LOOP, _nrt=False)
def _deferred_submit(sp, o, osr):
    """BlueStore._deferred_submit: the sequencer's pending batch is written in place (sorted,
    adjacent extents merged, one device request each)."""
    st = _ld(sp)
    h = st.osi[osr, OS_PH]
    cnt = st.osi[osr, OS_PN]
    st.osi[osr, OS_PH] = -1
    st.osi[osr, OS_PT] = -1
    st.osi[osr, OS_PN] = 0
    # del self._dq[osr]
    pv = st.osi[osr, OS_DQPREV]
    nx = st.osi[osr, OS_DQNEXT]
    if pv < 0:
        st.bsi[o, BS_DQ_H] = nx
    else:
        st.osi[pv, OS_DQNEXT] = nx
    if nx < 0:
        st.bsi[o, BS_DQ_T] = pv
    else:
        st.osi[nx, OS_DQPREV] = pv
    st.osi[osr, OS_INDQ] = 0
    st.osi[osr, OS_RUNNING] = 1
    st.osi[osr, OS_RH] = h
    st.osi[osr, OS_RN] = cnt
    st.bsi[o, BS_DQSIZE] -= cnt
    st.bsi[o, BS_DEFBATCHES] += 1
    st.bsi[o, BS_DEFOPS] += cnt
    d = st.bsi[o, BS_DEV]
    if cnt == 1:
        st.bsi[o, BS_DEFIOS] += 1
        st.osi[osr, OS_RLEFT] = 1
        _dev_submit(sp, d, _WRITE, st.txi[h, TX_DOFF], st.txi[h, TX_DLEN], DP_DEFERRED, osr, o)
        return
    # sorted((doff, dlen)), merged
    scr = st.scr
    n = 0
    x = h
    while x >= 0:
        a = st.txi[x, TX_DOFF]
        b = st.txi[x, TX_DLEN]
        k = n
        while k > 0 and (scr[0, k - 1] > a or (scr[0, k - 1] == a and scr[1, k - 1] > b)):
            scr[0, k] = scr[0, k - 1]
            scr[1, k] = scr[1, k - 1]
            k -= 1
        scr[0, k] = a
        scr[1, k] = b
        n += 1
        x = st.txi[x, TX_NEXT]
    m = 0
    for k in range(n):
        a = scr[0, k]
        b = scr[1, k]
        if m > 0 and a <= scr[0, m - 1] + scr[1, m - 1]:
            e = a + b - scr[0, m - 1]
            if e > scr[1, m - 1]:
                scr[1, m - 1] = e
        else:
            scr[0, m] = a
            scr[1, m] = b
            m += 1
    st.osi[osr, OS_RLEFT] = m
    st.bsi[o, BS_DEFIOS] += m
    # several IOs: one thread's io_submit (Partition.submit_batch -> BlockLayer.submit_batch): in order,
    # each taking a free tag while there is one and nobody sleeps for one; from the first that cannot,
    # the rest sleep as one submitter (prev: -1 not sleeping, -2 the first to sleep, else the last row)
    prev = -1
    for k in range(m):
        if prev == -1 and m > 1 and _batch_sleeps(sp, d):
            prev = -2
        q = _dev_submit_b(sp, d, _WRITE, scr[0, k], scr[1, k], DP_DEFERRED, osr, o, prev)
        if q < 0 and st.gi[GI_FULL]:
            return
        if prev != -1:
            prev = q


@njit(cache=_CACHE_LOOP, _nrt=False)
def _deferred_try_submit(sp, o):
    st = _ld(sp)
    n = 0
    osr = st.bsi[o, BS_DQ_H]
    while osr >= 0:
        nx = st.osi[osr, OS_DQNEXT]
        if st.osi[osr, OS_RUNNING] == 0:
            _deferred_submit(sp, o, osr)
            n += 1
        osr = nx
    if n:
        st.bsi[o, BS_DEFROUNDS] += 1


@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _kv_wanted(sp, o):
    """kv_sync has work: queued txcs, or applied deferred batches while deferred_aggressive."""
    st = _ld(sp)
    return st.bsi[o, BS_KVQ_H] >= 0 or (st.bsi[o, BS_AGGR] > 0 and (st.bsi[o, BS_DONE_H] >= 0 or st.bsi[o, BS_STAB_H] >= 0))


@njit(cache=_CACHE_LOOP, _nrt=False)
def _kv_write(sp, o):
    """BlueStore._kv_write: throttle_bytes released for the batch (waiters resumed), then the WAL
    write."""
    st = _ld(sp)
    costs = 0
    x = st.bsi[o, BS_KVB_H]
    while x >= 0:
        costs += st.txi[x, TX_COST]
        x = st.txi[x, TX_NEXT]
    if costs:
        st.bsi[o, BS_TBCUR] = max(0, st.bsi[o, BS_TBCUR] - costs)
        if st.bsi[o, BS_TBW_H] >= 0:
            _wake_kv_throttle(sp, o)
    rel, n, pos = wal_extent_nb(st.bsi[o, BS_WALPOS], max(st.bsi[o, BS_KVBYTES], 1), st.bsi[o, BS_BLOCK],
                                st.bsi[o, BS_WALRING], st.bsi[o, BS_TAIL] != 0)
    st.bsi[o, BS_WALPOS] = pos
    st.bsf[o, BF_WALT0] = st.gf[GF_NOW]
    _dev_submit(sp, st.bsi[o, BS_WALDEV], _WRITE, st.bsi[o, BS_WALBASE] + rel, n, DP_WAL, 0, o)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _kv_start(sp, o):
    """BlueStore._kv_start: a kv_sync cycle takes the queued txcs and the applied deferred batches."""
    st = _ld(sp)
    b = st.bsi[o]
    batch = b[BS_KVQ_H]
    b[BS_KVQ_H] = -1
    b[BS_KVQ_T] = -1
    nb = b[BS_KVQ_N]
    b[BS_KVQ_N] = 0
    # done = deferred_done, stable = deferred_stable (moved: the BlueStore's lists are emptied)
    b[BS_KVSTAB_H] = b[BS_STAB_H]
    b[BS_KVSTAB_T] = b[BS_STAB_T]
    b[BS_STAB_H] = -1
    b[BS_STAB_T] = -1
    b[BS_KVUNST_H] = b[BS_DONE_H]
    b[BS_KVUNST_T] = b[BS_DONE_T]
    b[BS_DONE_H] = -1
    b[BS_DONE_T] = -1
    b[BS_KVBUSY] = 1
    st.bsf[o, BF_KVT0] = st.gf[GF_NOW]
    aios = False
    nbytes = 0
    x = batch
    while x >= 0:
        nbytes += st.txi[x, TX_WALB]
        if st.txi[x, TX_HADIO]:
            aios = True
        x = st.txi[x, TX_NEXT]
    if b[BS_FBC] == 0:
        force = False
        _batches_concat(sp, o, BS_KVSTAB_H, BS_KVSTAB_T, BS_KVUNST_H, BS_KVUNST_T)
    elif b[BS_SAMEDEV]:
        force = aios or (batch < 0 and b[BS_KVSTAB_H] < 0) or b[BS_AGGR] > 0
    else:
        force = True
    if force:
        _batches_concat(sp, o, BS_KVSTAB_H, BS_KVSTAB_T, BS_KVUNST_H, BS_KVUNST_T)
    y = b[BS_KVSTAB_H]
    while y >= 0:
        nbytes += st.txi[y, TX_BLEN] * b[BS_CLEANB]
        y = st.txi[y, TX_NEXTB]
    b[BS_KVB_H] = batch
    b[BS_KVB_N] = nb
    b[BS_KVBYTES] = nbytes
    b[BS_KVBATCHES] += 1
    b[BS_KVTXCS] += nb
    flush = force and b[BS_IOSF] != 0
    if flush:
        b[BS_IOSF] = 0
        b[BS_DATAFLUSH] += 1
    kvcpu = st.bsf[o, BF_KVCPU]
    if kvcpu > 0.0 or b[BS_THKV] >= 0:  # the cycle's own CPU (kv_commit_cost), or its thread's wakeup
        c = st.oi[o, OI_CPU]
        _at(sp, _run(sp, c, b[BS_THKV], st.gf[GF_NOW], kvcpu), EV_KV_IO, o, 1 if flush else 0)
    elif flush:
        st.bsf[o, BF_FLUSHT0] = st.gf[GF_NOW]
        _dev_submit(sp, b[BS_DEV], _FLUSH, 0, 0, DP_DATA_FLUSH, 0, o)
    else:
        _kv_write(sp, o)


@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _kv_kick(sp, o):
    st = _ld(sp)
    if st.bsi[o, BS_KVBUSY] == 0 and _kv_wanted(sp, o):
        _kv_start(sp, o)


@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _kv_kick_in(sp, o):
    """_kv_kick from inside a kv cycle (kv_sync is busy: nothing to start; flagged if it were not)."""
    st = _ld(sp)
    if st.bsi[o, BS_KVBUSY] == 0 and _kv_wanted(sp, o):
        _void(sp, WHY_KV_INNER)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _admit_deferred_core(sp, o, op, cost, t0, first):
    """BlueStore._admit_deferred up to its failure path: 1 = admitted, 0 = waits (the caller then
    submits the pending deferred batches and kicks kv_sync)."""
    st = _ld(sp)
    b = st.bsi[o]
    if b[BS_DTW_H] < 0 and not throttle_should_wait_nb(b[BS_DTMAX], b[BS_DTCUR], cost):
        b[BS_DTCUR] += cost
        if b[BS_DTCUR] > b[BS_DTPEAK]:
            b[BS_DTPEAK] = b[BS_DTCUR]
        b[BS_DTXCS] += 1
        if b[BS_DTXCS] > b[BS_PEAKDTXCS]:
            b[BS_PEAKDTXCS] = b[BS_DTXCS]
        if not first:
            st.bsf[o, BF_TWAIT] += st.gf[GF_NOW] - t0
        return 1
    if first:
        b[BS_THROTTLED] += 1
    b[BS_THR_DEF] += 1
    b[BS_AGGR] += 1
    st.opi[op, OPI_COST] = cost
    st.opf[op, OPF_TWAIT] = t0
    st.opi[op, OPI_NEXTW] = -1
    t = b[BS_DTW_T]
    if t < 0:
        b[BS_DTW_H] = op
    else:
        st.opi[t, OPI_NEXTW] = op
    b[BS_DTW_T] = op
    b[BS_AGGSUB] += 1
    return 0


@njit(cache=_CACHE_LOOP, _nrt=False)
def _admit(sp, o, op):
    """BlueStore.admit: 1 = go on; 0 = the op thread blocks until the throttles let it in."""
    st = _ld(sp)
    b = st.bsi[o]
    cost, deferred = txc_cost_nb(st.opi[op, OPI_KIND], st.opi[op, OPI_LEN], b[BS_PREFER], b[BS_CPIO])
    st.opi[op, OPI_COST] = cost
    if b[BS_TBW_H] >= 0 or throttle_should_wait_nb(b[BS_TBMAX], b[BS_TBCUR], cost):
        b[BS_THROTTLED] += 1
        b[BS_THR_KV] += 1
        st.opi[op, OPI_DEFER] = 1 if deferred else 0
        st.opf[op, OPF_TWAIT] = st.gf[GF_NOW]
        st.opi[op, OPI_NEXTW] = -1
        t = b[BS_TBW_T]
        if t < 0:
            b[BS_TBW_H] = op
        else:
            st.opi[t, OPI_NEXTW] = op
        b[BS_TBW_T] = op
        return 0
    b[BS_TBCUR] += cost
    if b[BS_TBCUR] > b[BS_TBPEAK]:
        b[BS_TBPEAK] = b[BS_TBCUR]
    if deferred:
        if b[BS_DTW_H] < 0 and b[BS_DTCUR] + cost <= b[BS_DTMAX]:
            b[BS_DTCUR] += cost
            if b[BS_DTCUR] > b[BS_DTPEAK]:
                b[BS_DTPEAK] = b[BS_DTCUR]
            b[BS_DTXCS] += 1
            if b[BS_DTXCS] > b[BS_PEAKDTXCS]:
                b[BS_PEAKDTXCS] = b[BS_DTXCS]
            return 1
        r = _admit_deferred_core(sp, o, op, cost, st.gf[GF_NOW], 1)
        if r == 0:
            _deferred_try_submit(sp, o)
            _kv_kick(sp, o)
        return r
    return 1


@njit(cache=_CACHE_LOOP, _nrt=False)
def _bs_txc(sp, o, op, base, cb):
    """BlueStore.write: the transaction of ``op``; returns 1 when it joined the kv queue of an idle
    kv_sync (the caller starts a cycle)."""
    st = _ld(sp)
    b = st.bsi[o]
    pg = st.opi[op, OPI_PG]
    osr = pg * st.pga.shape[1] + _bpos(sp, pg, o)
    x = _tx_new(sp)
    st.txi[x, TX_OP] = op
    st.txi[x, TX_OSR] = osr
    st.txi[x, TX_COST] = st.opi[op, OPI_COST]
    st.txi[x, TX_CB] = cb
    st.txi[x, TX_OSD] = o
    st.txi[x, TX_KEY] = st.imi[st.opi[op, OPI_IMG], II_KB] + st.opi[op, OPI_OBJNO]
    st.txi[x, TX_OFF] = st.opi[op, OPI_OFF]
    st.txi[x, TX_LEN] = st.opi[op, OPI_LEN]
    st.osi[osr, OS_LIVE] += 1
    length = st.opi[op, OPI_LEN]
    off = st.opi[op, OPI_OFF]
    kind = st.opi[op, OPI_KIND]
    _DC.write(st.dc, o, st.txi[x, TX_KEY], off, length, kind)  # the written range in the data cache
    if kind == 2 or length == 0:  # trim
        st.txi[x, TX_WALB] = b[BS_KVTXCB]
        st.txi[x, TX_IODONE] = 1
    elif length <= b[BS_PREFER]:
        blk = b[BS_BLOCK]
        a = off - off % blk
        dlen = align_up_nb(off + length, blk) - a
        st.txi[x, TX_DOFF] = base + a
        st.txi[x, TX_DLEN] = dlen
        st.txi[x, TX_WALB] = b[BS_KVTXCB] + dlen
        st.txi[x, TX_IODONE] = 1
        _DC.writing_add(st.dc, o, st.txi[x, TX_KEY], off, length)
    else:
        new = _alloc(sp, o, length)
        img = st.opi[op, OPI_IMG]
        if off == 0 and length >= st.imi[img, II_SHSIZE]:  # ObjOp.relocate (op.obj_size: the object, or its EC shard)
            st.obj_base[st.imi[img, II_KEY] + st.opi[op, OPI_OBJNO] * st.imi[img, II_SIZE] + st.opi[op, OPI_POS]] = new
        st.txi[x, TX_WALB] = b[BS_KVTXCB]
        st.txi[x, TX_HADIO] = 1
        b[BS_DIRECT] += 1
        _tx_append(sp, st.osi, osr, OS_QH, OS_QT, x)
        _dev_submit(sp, b[BS_DEV], _WRITE, new, align_up_nb(length, b[BS_BLOCK]), DP_DIRECT, x, o)
        return 0
    if st.osi[osr, OS_QH] >= 0:  # an earlier txc of this PG is still writing data
        _tx_append(sp, st.osi, osr, OS_QH, OS_QT, x)
        return 0
    _tx_append(sp, st.bsi, o, BS_KVQ_H, BS_KVQ_T, x)
    b[BS_KVQ_N] += 1
    return 1 if b[BS_KVBUSY] == 0 else 0


@njit(cache=_CACHE_LOOP, _nrt=False)
def _base(sp, o, op):
    """Osd._base: the object's device offset on this OSD, allocated on its first write."""
    st = _ld(sp)
    img = st.opi[op, OPI_IMG]
    k = st.imi[img, II_KEY] + st.opi[op, OPI_OBJNO] * st.imi[img, II_SIZE] + st.opi[op, OPI_POS]
    bb = st.obj_base[k]
    if bb < 0:
        bb = _alloc(sp, o, st.imi[img, II_SHSIZE])
        st.obj_base[k] = bb
    return bb


@njit(cache=_CACHE_LOOP, _nrt=False)
def _free(sp, o, sh, pg):
    """Osd._free: the worker takes its next op."""
    st = _ld(sp)
    st.shi[sh, SHI_FREE] += 1
    st.pgb[pg, _bpos(sp, pg, o)] = 0
    if st.shi[sh, SHI_QCNT]:
        if st.shi[sh, SHI_NLAZY]:
            _settle(sp, sh)
        _next(sp, sh)
        if st.shi[sh, SHI_QCNT] and st.shi[sh, SHI_NLAZY]:
            _arm(sp, sh)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _send_repops(sp, o, op):
    """Osd._write_admitted of a client write: a repop to every other up OSD of the acting set."""
    st = _ld(sp)
    pg = st.opi[op, OPI_PG]
    now = st.gf[GF_NOW]
    kind = st.opi[op, OPI_KIND]
    payload = st.opi[op, OPI_LEN] if kind == _WRITE else 0
    c = st.oi[o, OI_CPU]
    pending = 1
    for i in range(st.pgi[pg, PGI_NACT]):
        r = st.pga[pg, i]
        if r == o or st.oi[r, OI_UP] == 0:
            continue
        sub = _op_new(sp, kind, SUBOP, pg, st.opi[op, OPI_IMG], st.opi[op, OPI_OBJNO], st.opi[op, OPI_OFF],
                      st.opi[op, OPI_LEN])
        st.opi[sub, OPI_POS] = i
        st.opi[sub, OPI_PRIM] = op
        st.opi[sub, OPI_OSD] = r
        per_byte = st.of[o, OF_PERBYTE] * payload
        t = _run(sp, c, st.oi[o, OI_THMSGR], now, st.of[o, OF_SEND] + per_byte)
        if st.ci[c, CI_STALLED]:
            _then(sp, c, t, FN_SEND_SUB, sub, 1)
        else:
            _deliver(sp, r, _arrival(sp, st.oi[o, OI_HOST], st.oi[r, OI_HOST], t, payload), sub, st.of[o, OF_RECV] + per_byte)
        pending += 1
    st.opi[op, OPI_PENDING] = pending


@njit(cache=_CACHE_LOOP, _nrt=False)
def _write_admitted(sp, o, op):
    """Osd._write_admitted: repops, the local transaction, then the worker takes its next op."""
    st = _ld(sp)
    sh = st.opi[op, OPI_SHARD]
    pg = st.opi[op, OPI_PG]
    role = st.opi[op, OPI_ROLE]
    if role == CLIENT:
        _send_repops(sp, o, op)
    if _bs_txc(sp, o, op, _base(sp, o, op), role):
        _kv_start(sp, o)
    if role != EC_LOCALW:  # ec._local_admitted: no worker to free
        _free(sp, o, sh, pg)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _write_admitted_in(sp, o, op):
    """_write_admitted of a throttle waiter resumed inside a kv cycle (kv_sync is busy)."""
    st = _ld(sp)
    sh = st.opi[op, OPI_SHARD]
    pg = st.opi[op, OPI_PG]
    role = st.opi[op, OPI_ROLE]
    if role == CLIENT:
        _send_repops(sp, o, op)
    if _bs_txc(sp, o, op, _base(sp, o, op), role):
        _void(sp, WHY_KV_INNER)  # cannot happen: kv_sync is busy while it wakes waiters
    if role != EC_LOCALW:
        _free(sp, o, sh, pg)


@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _throttle_pop(st, b, head, tail, cmax, cur, peak):
    """The first waiter of a BlueStore throttle (its FIFO through the op rows' OPI_NEXTW) if its cost
    now fits: taken off the list and charged to the throttle (peak kept); -1 if none or it must wait.
    ``head``..``peak`` name the throttle's columns in the BlueStore row ``b``."""
    op = b[head]
    if op < 0:
        return -1
    cost = st.opi[op, OPI_COST]
    if throttle_should_wait_nb(b[cmax], b[cur], cost):
        return -1
    nx = st.opi[op, OPI_NEXTW]
    b[head] = nx
    if nx < 0:
        b[tail] = -1
    b[cur] += cost
    if b[cur] > b[peak]:
        b[peak] = b[cur]
    return op


@njit(cache=_CACHE_LOOP, _nrt=False)
def _wake_kv_throttle(sp, o):
    """BlueStore._wake_kv_throttle (inside a kv cycle)."""
    st = _ld(sp)
    b = st.bsi[o]
    while True:
        op = _throttle_pop(st, b, BS_TBW_H, BS_TBW_T, BS_TBMAX, BS_TBCUR, BS_TBPEAK)
        if op < 0:
            break
        cost = st.opi[op, OPI_COST]
        t0 = st.opf[op, OPF_TWAIT]
        if st.opi[op, OPI_DEFER]:
            if _admit_deferred_core(sp, o, op, cost, t0, 0) == 0:
                _deferred_try_submit(sp, o)
                _kv_kick_in(sp, o)
                continue
        else:
            st.bsf[o, BF_TWAIT] += st.gf[GF_NOW] - t0
        _write_admitted_in(sp, o, op)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _wake_deferred_throttle(sp, o):
    """BlueStore._wake_deferred_throttle."""
    st = _ld(sp)
    b = st.bsi[o]
    while True:
        op = _throttle_pop(st, b, BS_DTW_H, BS_DTW_T, BS_DTMAX, BS_DTCUR, BS_DTPEAK)
        if op < 0:
            break
        b[BS_DTXCS] += 1
        if b[BS_DTXCS] > b[BS_PEAKDTXCS]:
            b[BS_PEAKDTXCS] = b[BS_DTXCS]
        b[BS_AGGR] -= 1
        st.bsf[o, BF_TWAIT] += st.gf[GF_NOW] - st.opf[op, OPF_TWAIT]
        _write_admitted(sp, o, op)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _osr_finish(sp, o, x):
    """BlueStore._txc_finish: the txc is done with; a sequencer pinning too many txcs behind a
    pending batch submits it."""
    st = _ld(sp)
    osr = st.txi[x, TX_OSR]
    st.osi[osr, OS_LIVE] -= 1
    _tx_free(sp, x)
    if st.osi[osr, OS_PH] >= 0 and st.osi[osr, OS_RUNNING] == 0 and st.osi[osr, OS_LIVE] > st.bsi[o, BS_MAXTXC]:
        st.bsi[o, BS_MAXTXCSUB] += 1
        _deferred_try_submit(sp, o)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _kv_done(sp, o):
    """BlueStore._kv_done: the batch is committed (callbacks), deferred txcs join their sequencer's
    pending batch, stable batches are finished, then deferred submits and the next cycle."""
    st = _ld(sp)
    b = st.bsi[o]
    now = st.gf[GF_NOW]
    batch = b[BS_KVB_H]
    stable = b[BS_KVSTAB_H]
    b[BS_KVB_H] = -1
    b[BS_KVB_N] = 0
    b[BS_KVSTAB_H] = -1
    b[BS_KVSTAB_T] = -1
    b[BS_STAB_H] = b[BS_KVUNST_H]
    b[BS_STAB_T] = b[BS_KVUNST_T]
    b[BS_KVUNST_H] = -1
    b[BS_KVUNST_T] = -1
    b[BS_KVBUSY] = 0
    st.bsf[o, BF_KVTIME] += now - st.bsf[o, BF_KVT0]
    st.bsf[o, BF_WALTIME] += now - st.bsf[o, BF_WALT0]
    c = st.oi[o, OI_CPU]
    x = batch
    while x >= 0:
        nx = st.txi[x, TX_NEXT]
        op = st.txi[x, TX_OP]
        cb = st.txi[x, TX_CB]
        if cb == CLIENT:  # Osd._local_committed
            _then(sp, c, _run(sp, c, st.oi[o, OI_THFINAL], now, st.of[o, OF_COMMIT]), FN_COMMIT_IN, op, 1)
        elif cb == EC_LOCALW:  # ec._local_committed: the primary's own shard
            prim = st.opi[op, OPI_PRIM]
            _op_free(sp, op)
            _then(sp, c, _book(sp, c, now, st.of[o, OF_COMMIT]), FN_COMMIT_IN, prim, 1)
        else:  # Osd._subop_committed
            st.opi[op, OPI_ROLE] = REPLY
            _then(sp, c, _run(sp, c, st.oi[o, OI_THFINAL], now, st.of[o, OF_COMMIT] + st.of[o, OF_SEND]), FN_SEND_REPLY,
                  op, 1)
        osr = st.txi[x, TX_OSR]
        if st.txi[x, TX_DOFF] >= 0:  # joins the sequencer's pending deferred batch
            if st.osi[osr, OS_PH] < 0:
                st.osi[osr, OS_PH] = x
                st.osi[osr, OS_PT] = x
                st.txi[x, TX_NEXT] = -1
                st.osi[osr, OS_PN] = 1
                # self._dq[osr] = None (appended)
                st.osi[osr, OS_INDQ] = 1
                t = b[BS_DQ_T]
                st.osi[osr, OS_DQPREV] = t
                st.osi[osr, OS_DQNEXT] = -1
                if t < 0:
                    b[BS_DQ_H] = osr
                else:
                    st.osi[t, OS_DQNEXT] = osr
                b[BS_DQ_T] = osr
            else:
                _tx_append(sp, st.osi, osr, OS_PH, OS_PT, x)
                st.osi[osr, OS_PN] += 1
            b[BS_DQSIZE] += 1
            if b[BS_AGGR] and st.osi[osr, OS_RUNNING] == 0:
                b[BS_DEFROUNDS] += 1
                _deferred_submit(sp, o, osr)
        else:
            _osr_finish(sp, o, x)
        x = nx
    y = stable
    while y >= 0:
        ny = st.txi[y, TX_NEXTB]
        x = y
        while x >= 0:
            nx = st.txi[x, TX_NEXT]
            _osr_finish(sp, o, x)
            x = nx
        y = ny
    if b[BS_AGGR] == 0 and b[BS_DQ_H] >= 0 and (b[BS_DQSIZE] >= b[BS_BATCHOPS] or b[BS_DTCUR] >= b[BS_DTMAX] / 2):
        _deferred_try_submit(sp, o)
    elif b[BS_DQ_H] >= 0 and st.bsf[o, BF_MAXINT] >= 0.0 and b[BS_TIMER] == 0:
        b[BS_TIMER] = 1
        schedule(sp, now + st.bsf[o, BF_MAXINT], EV_DEFER_TIMER, o, 0)
    if _kv_wanted(sp, o):
        _kv_start(sp, o)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _deferred_io_done(sp, o, osr):
    """BlueStore._deferred_io_done: the batch's last IO is in: its txcs are applied."""
    st = _ld(sp)
    b = st.bsi[o]
    left = st.osi[osr, OS_RLEFT] - 1
    st.osi[osr, OS_RLEFT] = left
    if left:
        return
    st.osi[osr, OS_RUNNING] = 0
    b[BS_IOSF] = 1
    h = st.osi[osr, OS_RH]
    cnt = st.osi[osr, OS_RN]
    st.osi[osr, OS_RH] = -1
    st.osi[osr, OS_RN] = 0
    costs = 0
    x = h
    while x >= 0:
        costs += st.txi[x, TX_COST]
        _DC.writing_remove(st.dc, o, st.txi[x, TX_KEY], st.txi[x, TX_OFF], st.txi[x, TX_LEN])  # its data is on disk
        x = st.txi[x, TX_NEXT]
    b[BS_DTXCS] -= cnt
    b[BS_DTCUR] -= costs
    if b[BS_DTCUR] < 0:
        b[BS_DTCUR] = 0
    st.txi[h, TX_BLEN] = cnt
    _batch_append(sp, o, BS_DONE_H, BS_DONE_T, h)
    if b[BS_AGGR]:
        if st.osi[osr, OS_PH] >= 0:
            _deferred_try_submit(sp, o)
        if b[BS_DTW_H] >= 0:
            _wake_deferred_throttle(sp, o)
        _kv_kick(sp, o)
    elif b[BS_DTW_H] >= 0:
        _wake_deferred_throttle(sp, o)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _direct_done(sp, o, x):
    """BlueStore._direct_done: the data is written; txcs of the sequencer whose IO is done join the kv queue."""
    st = _ld(sp)
    b = st.bsi[o]
    st.txi[x, TX_IODONE] = 1
    b[BS_IOSF] = 1
    osr = st.txi[x, TX_OSR]
    while st.osi[osr, OS_QH] >= 0 and st.txi[st.osi[osr, OS_QH], TX_IODONE]:
        h = st.osi[osr, OS_QH]
        nx = st.txi[h, TX_NEXT]
        st.osi[osr, OS_QH] = nx
        if nx < 0:
            st.osi[osr, OS_QT] = -1
        _tx_append(sp, st.bsi, o, BS_KVQ_H, BS_KVQ_T, h)
        b[BS_KVQ_N] += 1
    if b[BS_KVQ_H] >= 0 and b[BS_KVBUSY] == 0:
        _kv_start(sp, o)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _dev_done(sp, d, r):
    """Device row ``d`` completed request ``r``: the device's bookkeeping first, then BlueStore's callback."""
    st = _ld(sp)
    if st.dvi[d, DV_CORE] < 0:  # a device-core device did its own bookkeeping (_core_event)
        _dev_finish(sp, d)
    elif st.dvi[d, DV_PART]:  # Partition._done: Device._finish + PassThroughBusy's busy time
        f = st.dvf[d]
        now = st.gf[GF_NOW]
        f[DVF_P_QAREA] += f[DVF_P_INSIDE] * (now - f[DVF_P_TQ])
        f[DVF_P_TQ] = now
        f[DVF_P_INSIDE] -= 1.0
        op = st.dri[r, DR_OP]
        f[DVF_P_COMP + op] += 1.0
        f[DVF_P_BYTES + op] += st.dri[r, DR_SIZE]
        if f[DVF_P_INSIDE] == 0.0:
            f[DVF_P_BUSY] += now - f[DVF_P_BSINCE]
    o = st.dri[r, DR_OSD]
    purp = st.dri[r, DR_PURP]
    arg = st.dri[r, DR_ARG]
    st.drfree[st.gi[GI_DEVFREE]] = r
    st.gi[GI_DEVFREE] += 1
    if purp == DP_READ:  # BlueStore's _read_done (buffered reads: into the data cache), then Osd._read_done
        _DC.read_done(st.dc, o, st.imi[st.opi[arg, OPI_IMG], II_KB] + st.opi[arg, OPI_OBJNO], st.opi[arg, OPI_OFF],
                      st.opi[arg, OPI_LEN])
        sh = st.opi[arg, OPI_SHARD]
        pg = st.opi[arg, OPI_PG]
        if st.opi[arg, OPI_ROLE] == EC_SUBREAD:  # ec._subread_done
            _ec_read_reply(sp, o, arg, st.gf[GF_NOW])
        else:
            _then(sp, 0, st.gf[GF_NOW], FN_REPLY_CLIENT, arg, 0)
        _free(sp, o, sh, pg)
    elif purp == DP_DEFERRED:
        _deferred_io_done(sp, o, arg)
    elif purp == DP_WAL:  # BlueStore._kv_flush
        _dev_submit(sp, st.bsi[o, BS_WALDEV], _FLUSH, 0, 0, DP_WAL_FLUSH, 0, o)
    elif purp == DP_WAL_FLUSH:
        if st.bsi[o, BS_LOGW] != 0:  # BlueStore._kv_log: BlueFS's log block, then its flush
            b = st.bsi[o]
            off = b[BS_LOGBASE] + b[BS_LOGPOS]
            b[BS_LOGPOS] = (b[BS_LOGPOS] + b[BS_BLOCK]) % b[BS_LOGRING]
            _dev_submit(sp, b[BS_WALDEV], _WRITE, off, b[BS_BLOCK], DP_LOG, 0, o)
        else:
            _kv_done(sp, o)
    elif purp == DP_LOG:  # BlueStore._kv_log_flush
        _dev_submit(sp, st.bsi[o, BS_WALDEV], _FLUSH, 0, 0, DP_LOG_FLUSH, 0, o)
    elif purp == DP_LOG_FLUSH:
        _kv_done(sp, o)
    elif purp == DP_DATA_FLUSH:  # after the data-device FLUSH (kv_flush_lat)
        st.bsf[o, BF_FLUSHTIME] += st.gf[GF_NOW] - st.bsf[o, BF_FLUSHT0]
        _kv_write(sp, o)
    elif purp == DP_ONODE_READ:  # BlueStore._onode_read_done: the data read
        _read_data(sp, o, arg)
    elif purp == DP_ONODE_WRITE:  # Osd._write_onode_loaded
        if _admit(sp, o, arg):
            _write_admitted(sp, o, arg)
    else:
        _direct_done(sp, o, arg)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _write_prepared(sp, o, op):
    """Osd._write_prepared: a missed onode is loaded first (a synchronous DB read in the op thread)
    when misses read the DB (BlueStore.read_onode); then the throttles."""
    st = _ld(sp)
    if not _onode_probe(sp, o, op) and st.oni[o, ON_MREAD] > 0:
        _onode_insert(sp, o, op)
        _onode_db_read(sp, o, op, DP_ONODE_WRITE)
        return
    if _admit(sp, o, op):
        _write_admitted(sp, o, op)


# ------------------------------------------------------------------------------- the onode cache (ceph_onode)
@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _omi(sp, op):
    """The row of ``op``'s object on its OSD in obj_base: its node in the onode lists."""
    st = _ld(sp)
    img = st.opi[op, OPI_IMG]
    return st.imi[img, II_KEY] + st.opi[op, OPI_OBJNO] * st.imi[img, II_SIZE] + st.opi[op, OPI_POS]


@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _onode_prefetch(sp, op):
    """Start fetching the LRU links of ``op``'s onode slot, which _onode_probe moves when the write is
    prepared (after its CPU job): performance only (loop.prefetch; ``_deliver`` asked for the slot)."""
    st = _ld(sp)
    mi = _omi(sp, op)
    if 0 <= mi < st.oprev.shape[0]:  # the object's row is its node
        prefetch(st.oprev, (mi,))
        prefetch(st.onext, (mi,))


@njit(cache=_CACHE_LOOP, _nrt=False)
def _onode_probe(sp, o, op):
    """BlueStore.probe_onode (onodes.lookup)."""
    st = _ld(sp)
    return _onode.probe(st.oni, st.oprev, st.onext, o, _omi(sp, op))


@njit(cache=_CACHE_LOOP, _nrt=False)
def _onode_insert(sp, o, op):
    """onodes.insert of ``op``'s object."""
    st = _ld(sp)
    _onode.insert(st.oni, st.oprev, st.onext, o, _omi(sp, op))


@njit(cache=_CACHE_LOOP, _nrt=False)
def _onode_db_read(sp, o, op, purp):
    """The DB read of a missed onode on the WAL/DB device at BlueStore._db_offset (a uniform of its
    stream), onode_miss_read aligned up to the block."""
    st = _ld(sp)
    s = st.oni[o, ON_STREAM]
    if s < 0:  # the builder saw no miss coming (every object of the run cached): not so
        _void(sp, WHY_PATH)
        return
    b = st.oni[o, ON_BLOCK]
    off = st.oni[o, ON_DBBASE] + int(_u(sp, s) * st.oni[o, ON_DBN]) * b
    _dev_submit(sp, st.bsi[o, BS_WALDEV], _READ, off, st.oni[o, ON_MREAD], purp, op, o)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _read_data(sp, o, op):
    """BlueStore.read's data read of the aligned range (a queue device's service does not depend on the offset)."""
    st = _ld(sp)
    u = st.bsi[o, BS_UNIT]
    off = st.opi[op, OPI_OFF]
    first = off // u
    last = (off + st.opi[op, OPI_LEN] - 1) // u
    _dev_submit(sp, st.bsi[o, BS_DEV], _READ, _obj_base(sp, op) + first * u, (last - first + 1) * u, DP_READ, op, o)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _read_miss(sp, o, op):
    """Osd._read_miss -> BlueStore.read: a missed onode is loaded (inserted; a DB read first when
    misses read the DB), then the data read."""
    st = _ld(sp)
    if st.opi[op, OPI_ONODE] == 0:
        _onode_insert(sp, o, op)
        if st.oni[o, ON_MREAD] > 0:
            _onode_db_read(sp, o, op, DP_ONODE_READ)
            return
    _read_data(sp, o, op)


# =============================================================================== erasure-coded pools (ceph.ec)
@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _stalled(sp, c, t, fn, op):
    """The stall test of resources.then: 1 when the job just booked on pool ``c`` stalled, and ``fn(op, t)``
    is then called from an event at ``t`` (EV_RESUME) instead of at once."""
    st = _ld(sp)
    if st.ci[c, CI_STALLED] == 0:
        return 0
    st.ci[c, CI_STALLED] = 0
    if t < st.gf[GF_NOW]:
        _void(sp, WHY_RESUME_PAST)
    _at(sp, t, EV_RESUME, fn, op)
    return 1


@njit(cache=_CACHE_LOOP, _nrt=False)
def _leaf(sp, fn, sub, t):
    """The continuations that end their chain (a message leaves: network, the receiver's CPU, its queue):
    ec._subread_out, ec._shard_write_out, ec._read_reply_out. ``sub``: the sub-op."""
    st = _ld(sp)
    r = st.opi[sub, OPI_OSD]
    prim = st.opi[st.opi[sub, OPI_PRIM], OPI_OSD]
    if fn == FN_EC_SUBREAD_OUT:  # the sub-read request leaves the primary
        t = _arrival(sp, st.oi[prim, OI_HOST], st.oi[r, OI_HOST], t, 0)
        _post(sp, r, _book(sp, st.oi[r, OI_CPU], t, st.of[prim, OF_RECV]), sub)
    elif fn == FN_EC_SHARD_OUT:  # the shard write leaves the primary
        n = st.opi[sub, OPI_LEN]
        t = _arrival(sp, st.oi[prim, OI_HOST], st.oi[r, OI_HOST], t, n)
        _post(sp, r, _book(sp, st.oi[r, OI_CPU], t, st.of[prim, OF_RECV] + st.of[prim, OF_PERBYTE] * n), sub)
    else:  # FN_EC_REPLY_OUT: the shard's data leaves for the primary
        n = st.opi[sub, OPI_LEN]
        t = _arrival(sp, st.oi[r, OI_HOST], st.oi[prim, OI_HOST], t, n)
        _post(sp, prim, _book(sp, st.oi[prim, OI_CPU], t, st.of[r, OF_RECV] + st.of[r, OF_PERBYTE] * n), sub)


@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _ec_up(sp, pg, pos):
    """ec._up: the OSD at acting position ``pos`` is up."""
    st = _ld(sp)
    return st.oi[st.pga[pg, pos], OI_UP] != 0


@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _ec_span(off, end, s0, s1, sw, su, i):
    """The first and last stripe in [s0, s1] whose data chunk ``i`` overlaps [off, end) (-1, -1: none)."""
    first = -1
    last = -1
    for s in range(s0, s1 + 1):
        a = s * sw + i * su
        if a < end and a + su > off:
            if first < 0:
                first = s
            last = s
    return first, last


@njit(cache=_CACHE_LOOP, _nrt=False)
def _ec_read(sp, o, op, pos, off, n):
    """ec._issue_reads for one sub-read: the primary's own shard through its own queue, another by message."""
    st = _ld(sp)
    img = st.opi[op, OPI_IMG]
    pg = st.opi[op, OPI_PG]
    st.imi[img, II_ECS + ECS_SRB] += n
    sub = _op_new(sp, _READ, EC_SUBREAD, pg, img, st.opi[op, OPI_OBJNO], off, n)
    st.opi[sub, OPI_POS] = pos
    st.opi[sub, OPI_PRIM] = op
    r = st.pga[pg, pos]
    st.opi[sub, OPI_OSD] = r
    now = st.gf[GF_NOW]
    if r == o:
        _post(sp, r, now, sub)
        return
    c = st.oi[o, OI_CPU]
    t = _book(sp, c, now, st.of[o, OF_SEND])
    if not _stalled(sp, c, t, FN_EC_SUBREAD_OUT, sub):
        _leaf(sp, FN_EC_SUBREAD_OUT, sub, t)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _ec_read_kup(sp, o, op, want, off, n, issue):
    """ec._k_up(want) in its order (the wanted up positions, then the other up ones, k in all): how many, and
    with ``issue`` their sub-reads of [off, off + n)."""
    st = _ld(sp)
    img = st.opi[op, OPI_IMG]
    pg = st.opi[op, OPI_PG]
    k = st.imi[img, II_K]
    m = st.imi[img, II_M]
    cnt = 0
    for other in range(2):
        for p in range(k + m):
            if cnt >= k:
                return cnt
            if ((want >> p) & 1) != other and _ec_up(sp, pg, p):
                if issue:
                    _ec_read(sp, o, op, p, off, n)
                cnt += 1
    return cnt


@njit(cache=_CACHE_LOOP, inline="always", _nrt=False)
def _ec_begin(sp, op, counter):
    """What ec._read_start and ec._write_start begin with: the pool's ``counter`` counts the op, its stripes
    (stripe_plan's first and last) are kept; returns (OSD, image, PG, k, stripe unit, stripe width, range
    start, range end, first stripe, last stripe)."""
    st = _ld(sp)
    img = st.opi[op, OPI_IMG]
    st.imi[img, II_ECS + counter] += 1
    k = st.imi[img, II_K]
    su = st.imi[img, II_SU]
    sw = k * su
    off = st.opi[op, OPI_OFF]
    end = off + st.opi[op, OPI_LEN]
    s0 = off // sw
    s1 = (end - 1) // sw
    st.opi[op, OPI_S0] = s0
    st.opi[op, OPI_S1] = s1
    return st.opi[op, OPI_OSD], img, st.opi[op, OPI_PG], k, su, sw, off, end, s0, s1


@njit(cache=_CACHE_LOOP, _nrt=False)
def _ec_read_start(sp, op):
    """ec._read_start: the data shards covering the range (the whole stripes, or with partial_reads the
    chunks), or, when one of them is down, whole stripes from k up shards and a decode."""
    st = _ld(sp)
    o, img, pg, k, su, sw, off, end, s0, s1 = _ec_begin(sp, op, ECS_CREADS)
    pr = st.imi[img, II_PR]
    need = 0
    nneed = 0
    healthy = True
    for i in range(k):
        if pr:
            first, _last = _ec_span(off, end, s0, s1, sw, su, i)
            if first < 0:
                continue
        need |= 1 << i
        nneed += 1
        if not _ec_up(sp, pg, i):
            healthy = False
    if healthy:
        st.opi[op, OPI_PENDING] = nneed
        st.imi[img, II_ECS + ECS_SR] += nneed
        for i in range(k):
            if not (need >> i) & 1:
                continue
            if pr:
                first, last = _ec_span(off, end, s0, s1, sw, su, i)
                _ec_read(sp, o, op, i, first * su, (last - first + 1) * su)
            else:
                _ec_read(sp, o, op, i, s0 * su, (s1 - s0 + 1) * su)
    else:  # degraded
        st.imi[img, II_ECS + ECS_DEGR] += 1
        st.opi[op, OPI_DECODE] = (s1 - s0 + 1) * sw
        n = _ec_read_kup(sp, o, op, need, 0, 0, False)
        st.opi[op, OPI_PENDING] = n
        st.imi[img, II_ECS + ECS_SR] += n
        _ec_read_kup(sp, o, op, need, s0 * su, (s1 - s0 + 1) * su, True)
    _free(sp, o, st.opi[op, OPI_SHARD], pg)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _ec_want(sp, img, off, end, s):
    """The data chunks of partial stripe ``s`` ec._write_start reads (bit mask): every one (full_stripe), or
    those the write does not fully cover (touched_chunks)."""
    st = _ld(sp)
    k = st.imi[img, II_K]
    su = st.imi[img, II_SU]
    want = 0
    for i in range(k):
        a = s * k * su + i * su
        if st.imi[img, II_PW] == 0 or not (off <= a and end >= a + su):
            want |= 1 << i
    return want


@njit(cache=_CACHE_LOOP, _nrt=False)
def _ec_write_start(sp, op):
    """ec._write_start: a write covering whole stripes (or a trim, or a new object) is encoded and written at
    once; otherwise the partial head/tail stripes are read first (read-modify-write)."""
    st = _ld(sp)
    o, img, pg, k, su, sw, off, end, s0, s1 = _ec_begin(sp, op, ECS_CWRITES)
    p0 = s0 if off % sw else -1  # stripe_plan's partial stripes, in its order
    p1 = s1 if end % sw and s1 != p0 else -1
    row = st.imi[img, II_KEY] + st.opi[op, OPI_OBJNO] * st.imi[img, II_SIZE]
    exists = False
    for p in range(st.imi[img, II_SIZE]):  # RbdImage.exists
        if st.obj_base[row + p] >= 0:
            exists = True
    if st.opi[op, OPI_KIND] == 2 or (p0 < 0 and p1 < 0) or not exists:
        st.imi[img, II_ECS + ECS_FULL] += 1
        _ec_write_phase(sp, op)
        _free(sp, o, st.opi[op, OPI_SHARD], pg)
        return
    st.imi[img, II_ECS + ECS_RMW] += 1
    n = 0
    for s in (p0, p1):
        if s < 0:
            continue
        want = _ec_want(sp, img, off, end, s)
        ok = True
        cnt = 0
        for i in range(k):
            if (want >> i) & 1:
                cnt += 1
                if not _ec_up(sp, pg, i):
                    ok = False
        if ok:
            n += cnt
        else:
            n += _ec_read_kup(sp, o, op, want, 0, 0, False)
            st.opi[op, OPI_DECODE] += sw
    if n == 0:
        _ec_write_phase(sp, op)
        _free(sp, o, st.opi[op, OPI_SHARD], pg)
        return
    st.opi[op, OPI_PENDING] = n
    st.imi[img, II_ECS + ECS_SR] += n
    for s in (p0, p1):
        if s < 0:
            continue
        want = _ec_want(sp, img, off, end, s)
        ok = True
        for i in range(k):
            if (want >> i) & 1 and not _ec_up(sp, pg, i):
                ok = False
        if ok:
            for i in range(k):
                if (want >> i) & 1:
                    _ec_read(sp, o, op, i, s * su, su)
        else:
            _ec_read_kup(sp, o, op, want, s * su, su, True)
    _free(sp, o, st.opi[op, OPI_SHARD], pg)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _ec_write_phase(sp, op):
    """ec._write_phase: encode the touched stripes on the primary's CPU, then send the shard writes."""
    st = _ld(sp)
    o = st.opi[op, OPI_OSD]
    img = st.opi[op, OPI_IMG]
    enc = (st.opi[op, OPI_S1] - st.opi[op, OPI_S0] + 1) * st.imi[img, II_K] * st.imi[img, II_SU]
    st.imi[img, II_ECS + ECS_ENCB] += enc
    c = st.oi[o, OI_CPU]
    _then(sp, c, _book(sp, c, st.gf[GF_NOW], enc / st.imf[img, IF_ENC]), FN_EC_WRITE_SEND, op, 1)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _ec_shard_write(sp, o, op, pos, off, n, t):
    """One shard write of ec._write_send: the primary's own shard as a local transaction at ``t`` (EC_LOCALW,
    through Osd._write_prepared's onode and throttle steps), another as a message."""
    st = _ld(sp)
    img = st.opi[op, OPI_IMG]
    pg = st.opi[op, OPI_PG]
    st.imi[img, II_ECS + ECS_SW] += 1
    st.imi[img, II_ECS + ECS_SWB] += n
    sub = _op_new(sp, st.opi[op, OPI_KIND], SUBOP, pg, img, st.opi[op, OPI_OBJNO], off, n)
    st.opi[sub, OPI_POS] = pos
    st.opi[sub, OPI_PRIM] = op
    r = st.pga[pg, pos]
    st.opi[sub, OPI_OSD] = r
    if r == o:
        st.opi[sub, OPI_ROLE] = EC_LOCALW
        _at(sp, t, EV_PREPARED, r, sub)
        return
    c = st.oi[o, OI_CPU]
    t = _book(sp, c, t, st.of[o, OF_SEND] + st.of[o, OF_PERBYTE] * n)
    if not _stalled(sp, c, t, FN_EC_SHARD_OUT, sub):
        _leaf(sp, FN_EC_SHARD_OUT, sub, t)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _ec_write_send(sp, op, t):
    """ec._write_send: the stripes are encoded at ``t``; every up shard's write goes out (full_stripe or a trim:
    all k+m shards over the touched stripes; touched_chunks: the data chunks written and the m coding shards)."""
    st = _ld(sp)
    o = st.opi[op, OPI_OSD]
    img = st.opi[op, OPI_IMG]
    pg = st.opi[op, OPI_PG]
    k = st.imi[img, II_K]
    m = st.imi[img, II_M]
    su = st.imi[img, II_SU]
    sw = k * su
    s0 = st.opi[op, OPI_S0]
    s1 = st.opi[op, OPI_S1]
    nst = s1 - s0 + 1
    off = st.opi[op, OPI_OFF]
    end = off + st.opi[op, OPI_LEN]
    full = st.imi[img, II_PW] == 0 or st.opi[op, OPI_KIND] == 2
    n = 0
    for p in range(k + m):
        if not _ec_up(sp, pg, p):
            continue
        if full or p >= k:
            n += 1
        else:
            first, _last = _ec_span(off, end, s0, s1, sw, su, p)
            if first >= 0:
                n += 1
    st.opi[op, OPI_PENDING] = n
    if full:
        for p in range(k + m):
            if _ec_up(sp, pg, p):
                _ec_shard_write(sp, o, op, p, s0 * su, nst * su, t)
        return
    for i in range(k):
        first, last = _ec_span(off, end, s0, s1, sw, su, i)
        if first >= 0 and _ec_up(sp, pg, i):
            _ec_shard_write(sp, o, op, i, first * su, (last - first + 1) * su, t)
    for p in range(k, k + m):
        if _ec_up(sp, pg, p):
            _ec_shard_write(sp, o, op, p, s0 * su, nst * su, t)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _ec_dispatch_subread(sp, o, sh, sub, base):
    """ec._dispatch_subread: a shard's read (ec_subread_cost); a cache hit replies after the worker's job, a
    miss keeps the worker through the device read (EV_READ_MISS, as a client read's)."""
    st = _ld(sp)
    pg = st.opi[sub, OPI_PG]
    now = st.gf[GF_NOW]
    c = st.oi[o, OI_CPU]
    cost = _cost(sp, o, st.of[o, OF_ECSUB])
    if base < 0:  # the object does not exist: zeros, no IO
        t = _book(sp, c, now, cost)
        if not _stalled(sp, c, t, FN_EC_REPLY_AT, sub):
            _ec_read_reply(sp, o, sub, t)
        _release_at(sp, sh, pg, t)
        return
    if st.gi[GI_READ_WRITTEN_OK] == 0:
        _void(sp, WHY_READ_WRITTEN)
        return
    img = st.opi[sub, OPI_IMG]
    hit = _DC.probe(st.dc, o, st.imi[img, II_KB] + st.opi[sub, OPI_OBJNO], st.opi[sub, OPI_OFF], st.opi[sub, OPI_LEN])
    if not _onode_probe(sp, o, sub):
        cost += st.onf[o, ONF_COST]
        st.opi[sub, OPI_ONODE] = 0
    if hit:
        t = _book(sp, c, now, cost + st.dc.of[o])
        if not _stalled(sp, c, t, FN_EC_REPLY_AT, sub):
            _ec_read_reply(sp, o, sub, t)
        _release_at(sp, sh, pg, t)
        return
    _at(sp, _book(sp, c, now, cost), EV_READ_MISS, o, sub)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _ec_read_reply(sp, o, sub, t):
    """ec._read_reply: the shard's data goes back to the primary (through its queue; a message unless the shard
    is the primary's own)."""
    st = _ld(sp)
    prim = st.opi[st.opi[sub, OPI_PRIM], OPI_OSD]
    st.opi[sub, OPI_ROLE] = EC_READREPLY
    if prim == o:
        _post(sp, prim, t, sub)
        return
    c = st.oi[o, OI_CPU]
    t = _book(sp, c, t, st.of[o, OF_SEND] + st.of[o, OF_PERBYTE] * st.opi[sub, OPI_LEN])
    if not _stalled(sp, c, t, FN_EC_REPLY_OUT, sub):
        _leaf(sp, FN_EC_REPLY_OUT, sub, t)


@njit(cache=_CACHE_LOOP, _nrt=False)
def _ec_dispatch_readreply(sp, o, sh, sub):
    """ec._dispatch_readreply: the primary's worker takes a sub-read's reply (reply_cost); the last one
    decodes (degraded), answers the read or goes on with the write."""
    st = _ld(sp)
    c = st.oi[o, OI_CPU]
    pg = st.opi[sub, OPI_PG]
    t = _book(sp, c, st.gf[GF_NOW], _cost(sp, o, st.of[o, OF_REPLY]))
    op = st.opi[sub, OPI_PRIM]
    st.opi[op, OPI_PENDING] -= 1
    last = st.opi[op, OPI_PENDING] == 0
    if last and st.opi[op, OPI_DECODE]:  # the worker goes on to decode (after the reply job's stall, if any)
        _then(sp, c, t, FN_EC_DECODE, sub, 1)
        return
    _op_free(sp, sub)
    if last:  # ec._gathered
        if st.opi[op, OPI_KIND] == _READ:
            _then(sp, c, t, FN_REPLY_CLIENT, op, 1)
        else:
            _at(sp, t, EV_EC, EC_STEP_WAFTER, op)
    _release_at(sp, sh, pg, t)


@njit(cache=_CACHE_LOOP, _nrt=False)
def issue_now(st, r):
    """Issue client request ``r`` at the current time from Python (a closed loop's first requests)."""
    sp = _state_ptr(st)
    now = st.gf[GF_NOW]
    st.rqf[r, RQF_TISSUE] = now
    _img_start(sp, r, now)


@njit(cache=_CACHE_LOOP, _nrt=False)
def reset_core_devices(st):
    """Device.reset_stats of every device of the device core below BlueStore, now (Cluster.reset_stats
    resets every device of the cluster: at the end of fio's ramp_time)."""
    sp = _state_ptr(st)
    dsp = _dev_ptr(sp)
    ds = st.dev
    now = st.gf[GF_NOW]
    for d in range(ds.dvi.shape[0]):
        _core_reset_one(dsp, d, now)
    for d in range(st.dvi.shape[0]):  # the Partitions' windows (Device.reset_stats, PassThroughBusy's)
        if st.dvi[d, DV_PART]:
            f = st.dvf[d]
            f[DVF_P_T0] = now
            f[DVF_P_TQ] = now
            f[DVF_P_QAREA] = 0.0
            f[DVF_P_BUSY] = 0.0
            f[DVF_P_BSINCE] = now
            for k in range(4):
                f[DVF_P_COMP + k] = 0.0
                f[DVF_P_BYTES + k] = 0.0

"""The compiled event loop: heap, request pool, job threads, queue devices, HDDs (with their
volatile write cache), dual-actuator drives and the block layer (numba).

One call of :func:`run_until` processes events in (time, sequence) order until a control point
(time limit), until every job thread has finished, or until a buffer needs Python (offsets,
uniforms or the completion log). No Python object is touched and nothing is allocated per IO.

The handlers mirror the Python reference model line by line (``workloads.runner.JobThread``,
``devices.simple.QueueDevice``, ``devices.hdd.drive.HDD`` / ``DualActuatorHDD``,
``devices.blocklayer.BlockLayer``) and schedule their events in the same order, so that ties break
as SimPy breaks them (its event id order). The HDD's mechanism — positioning, SPTF choice, service,
read look-ahead, read cache segments — is not re-implemented here: the handlers call the same
kernels (``devices.hdd.kernels``) the Python drive calls. The write cache's decisions (joins,
index, reads of dirty data) are the kernels of ``devices.hdd.wcache_kernels`` on an extent table,
the same table and kernels the Python drive uses (see docs/design.md).
"""

from __future__ import annotations

import math

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from simulator import nbcache
from simulator.core import layout as _layout
from simulator.core.layout import (
    BF_BUSY_SINCE,
    BF_EXPIRE,
    BF_READ_WAIT,
    BI_ATDEV,
    BI_BATCHING,
    BI_BDIR,
    BI_DEADLINE,
    BI_DEV_FLUSHES,
    BI_DIRECT,
    BI_FBATCH,
    BI_FL_MERGED,
    BI_FL_SKIPPED,
    BI_FLRUN,
    BI_FQ_CNT,
    BI_FQ_HEAD,
    BI_FW_CNT,
    BI_FW_HEAD,
    BI_HASLAST,
    BI_LASTOFF,
    BI_LASTSEQ,
    BI_LOWER,
    BI_MAX_QUEUED,
    BI_MAX_WAITING,
    BI_NEXTSLOT,
    BI_NS,
    BI_NSCHED,
    BI_PENDN,
    BI_QDEPTH,
    BI_READS_QUEUED,
    BI_RUNN,
    BI_SEQ,
    BI_SKIPFL,
    BI_STARVED,
    BI_TAG_WAITS,
    BI_TAGS,
    BI_W_CNT,
    BI_W_HEAD,
    BI_W_REQ,
    BI_WSTARVED,
    DA_BUSY,
    DA_BYTES,
    DA_COMP,
    DA_INSIDE,
    DA_QAREA,
    DA_T0,
    DA_TQ,
    DK_BLK,
    DK_DUAL,
    DK_HDD,
    DK_QUEUE,
    DK_SSD,
    EV_APPEND_DONE,
    EV_APPEND_WRITE,
    EV_ARRIVAL,
    EV_BEGIN,
    EV_DESTAGE,
    EV_DONE,
    EV_MC_IDLE,
    EV_MECHFREE,
    EV_RAMP,
    EV_SSD_DIE,
    EV_SSD_META,
    EV_SUBMIT,
    EV_TIMESTOP,
    FL_ACK,
    FL_LEFT,
    FL_REQ,
    FL_SEQ,
    GF_NOW,
    GI_ACTIVE,
    GI_EVENTS,
    GI_FREE,
    GI_HN,
    GI_LOGN,
    GI_LOW,
    GI_SEQ,
    HF_DIRTY_BYTES,
    HF_HW,
    HF_LINK_BUSY,
    HF_LRATE,
    HF_MC_BATCH,
    HF_MC_BYTES,
    HF_MC_CYL,
    HF_MC_DELAY,
    HF_MC_HW,
    HF_MC_SETUP,
    HF_MC_SIZE,
    HF_MC_SPS,
    HF_MC_SPT,
    HF_MC_TLAST,
    HF_MECH_END,
    HF_NV_ACK,
    HF_OVH_FLUSH,
    HF_OVH_HIT,
    HF_OVH_R,
    HF_OVH_W,
    HF_WC_SIZE,
    HI_APPENDS,
    HI_BL_CNT,
    HI_BL_HEAD,
    HI_BUSY,
    HI_COALESCED,
    HI_DESTAGED,
    HI_DESTAGED_BYTES,
    HI_DIRECT,
    HI_DIRTY_READ_HITS,
    HI_DQ_CNT,
    HI_DQ_HEAD,
    HI_DR_CNT,
    HI_DR_HEAD,
    HI_ECAP,
    HI_EFREE,
    HI_FL_N,
    HI_FUA_OK,
    HI_HQ_CNT,
    HI_HQ_HEAD,
    HI_IDLE,
    HI_IXCAP,
    HI_LINK,
    HI_LK_N,
    HI_MAXSEG,
    HI_MC_ILV,
    HI_MC_INAPP,
    HI_MC_LOG,
    HI_MC_OWE,
    HI_MC_WAKE,
    HI_MC_WCE,
    HI_MECH,
    HI_MERGE,
    HI_N,
    HI_NDIRTY,
    HI_NDRAM,
    HI_NHOST,
    HI_NLIVE,
    HI_OUT,
    HI_OVERWRITES,
    HI_PROF,
    HI_QD,
    HI_QW_N,
    HI_QWC,
    HI_READHITS,
    HI_SEQ,
    HI_SS,
    HI_STREAM,
    HI_WC,
    HI_WIN,
    HI_WINDOW,
    QF_BW,
    QF_FLUSH,
    QF_P0,
    QF_P1,
    QI_CNT,
    QI_DIST,
    QI_FREE,
    QI_HEAD,
    QI_K,
    QI_NEED,
    QI_ULEN,
    QI_UPOS,
    RF_SERVICE,
    RF_TISSUE,
    RF_TSTART,
    RF_TSUB,
    RI_AUX,
    RI_BLK,
    RI_DEV,
    RI_FUA,
    RI_LEFT,
    RI_OFF,
    RI_OP,
    RI_PAR,
    RI_SIZE,
    RI_THR,
    SO_OFF,
    SO_REQ,
    SO_SEQ,
    ST_DONE,
    ST_EMPTY,
    ST_REFILL,
    ST_TIME,
    TF_BYTESLIM,
    TF_CPUFREE,
    TF_DELAY,
    TF_NEXTARR,
    TF_RAMP,
    TF_RATE,
    TF_RUNTIME,
    TF_SLAT,
    TF_T0,
    TF_TEND,
    TF_TREC,
    TF_TSTOP,
    TI_ARRIVALS,
    TI_BACKLOG,
    TI_BLOCKER,
    TI_BLOCKING,
    TI_BS,
    TI_BS1,
    TI_CBYTES,
    TI_CIOS,
    TI_DDIR,
    TI_DEPTH,
    TI_DEV,
    TI_DONE,
    TI_ENDFSYNC,
    TI_ENDSYNCS,
    TI_FDSYNCN,
    TI_FLINFL,
    TI_FSYNCN,
    TI_FUA,
    TI_IFBYTES,
    TI_INFL,
    TI_IOSLIM,
    TI_ISS,
    TI_ISSUING,
    TI_LIMON,
    TI_MIXED,
    TI_MIXREAD,
    TI_MLEN,
    TI_MPOS,
    TI_OFFLEN,
    TI_OFFLENW,
    TI_OFFMODE,
    TI_OFFPOS,
    TI_OFFPOSW,
    TI_POISSON,
    TI_RATE,
    TI_RECORD,
    TI_RLEN,
    TI_RPOS,
    TI_RWDDIR,
    TI_RWISS,
    TI_STOPSCHED,
    TI_SYNCDUE,
    TI_VARBS,
    TI_WISS,
    XI_ACT0,
    XI_ACT1,
    XI_HALF,
)  # fmt: skip
from simulator.devices.hdd import kernels as K
from simulator.devices.hdd import wcache_kernels as W
from simulator.devices.ssd import ftl as _ftl
from simulator.devices.ssd import kernels as SK

# the loop inlines the HDD and SSD kernels and the layout's constants: a change there must recompile it
#: the SSD kernels' sources (an owner linking this loop's handlers recompiles when they change)
SSD_SOURCES = (SK.__file__, _ftl.__file__)
nbcache.invalidate_stale(__file__, K.__file__, W.__file__, _layout.__file__, *SSD_SOURCES)

_READ = 0
_WRITE = 1
_TRIM = 2
_FLUSH = 3
_INF = math.inf


# =============================================================================== the state by reference
# numba passes a tuple by value: every call of a helper taking the ~40-array State copied ~340
# words (measured: most of the loop's cost per IO outside the HDD kernels). The entry points put
# the State in their stack frame once and hand the helpers its address; ``_ld`` reads it back (after
# inlining LLVM loads only the fields a helper uses). The pointer's type carries the State's type,
# so a State of another shape cannot be read through it.
@intrinsic
def _state_ptr(typingctx, st):
    def codegen(context, builder, sig, args):
        dm = context.data_model_manager[sig.args[0]]
        ptr = cgutils.alloca_once(builder, dm.get_data_type())
        builder.store(dm.as_data(builder, args[0]), ptr)
        return ptr

    return types.CPointer(st)(st), codegen


@intrinsic
def _ld(typingctx, sp):
    if not isinstance(sp, types.CPointer):
        return None

    def codegen(context, builder, sig, args):
        dm = context.data_model_manager[sig.return_type]
        return dm.from_data(builder, builder.load(args[0]))

    return sp.dtype(sp), codegen


@intrinsic
def prefetch(typingctx, arr, ix):
    """Start fetching the cache line of ``arr[ix]`` (``ix`` a tuple of ``arr.ndim`` indices, in range)
    into the CPU's caches (llvm.prefetch: a hint, no value changes). The loop's costliest steps are
    misses on large tables indexed at random (the write cache's index, the onode map): asking for
    several lines at once, or ahead of the step that reads them, overlaps their latency."""
    if not isinstance(arr, types.Array) or not isinstance(ix, types.BaseTuple) or len(ix) != arr.ndim:
        return None

    def codegen(context, builder, sig, args):
        aryty, ixty = sig.args
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = [context.cast(builder, builder.extract_value(args[1], k), ixty[k], types.intp)
               for k in range(aryty.ndim)]
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, idx, wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        # read, keep in all cache levels, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(arr, ix), codegen


# =============================================================================== event heap
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


# =============================================================================== device accounting
@njit(cache=True, inline="always", _nrt=False)
def _acc_enter(sp, d, now):
    st = _ld(sp)
    a = st.dacc[d]
    a[DA_QAREA] += a[DA_INSIDE] * (now - a[DA_TQ])
    a[DA_TQ] = now
    a[DA_INSIDE] += 1.0


@njit(cache=True, inline="always", _nrt=False)
def _acc_leave(sp, d, r, now):
    st = _ld(sp)
    a = st.dacc[d]
    a[DA_QAREA] += a[DA_INSIDE] * (now - a[DA_TQ])
    a[DA_TQ] = now
    a[DA_INSIDE] -= 1.0
    op = st.rqi[r, RI_OP]
    a[DA_COMP + op] += 1.0
    a[DA_BYTES + op] += st.rqi[r, RI_SIZE]


@njit(cache=True, _nrt=False)
def reset_device_stats(sp, d, now):
    """Device.reset_stats of device d (a dual-actuator drive: then of both actuators)."""
    st = _ld(sp)
    _reset_one(sp, d, now)
    if st.dvi[d, 0] == DK_DUAL:
        x = st.dvi[d, 1]
        _reset_one(sp, st.xi[x, XI_ACT0], now)
        _reset_one(sp, st.xi[x, XI_ACT1], now)


@njit(cache=True, _nrt=False)
def _reset_one(sp, d, now):
    """devices.base.Device.reset_stats (+ the HDD's and the block layer's own counters)."""
    st = _ld(sp)
    a = st.dacc[d]
    a[DA_T0] = now
    a[DA_TQ] = now
    a[DA_QAREA] = 0.0
    a[DA_BUSY] = 0.0
    for k in range(4):
        a[DA_COMP + k] = 0.0
        a[DA_BYTES + k] = 0.0
    if st.dvi[d, 0] == DK_HDD:
        h = st.dvi[d, 1]
        par = st.hpar[h]
        for k in K.A_RESET:
            par[k] = 0.0
        st.hi[h, HI_READHITS] = 0
        st.hi[h, HI_DESTAGED] = 0
        st.hi[h, HI_DESTAGED_BYTES] = 0
        st.hi[h, HI_OVERWRITES] = 0
        st.hi[h, HI_COALESCED] = 0
        st.hi[h, HI_DIRTY_READ_HITS] = 0
        if st.hi[h, HI_BUSY] != 0:
            rest = st.hf[h, HF_MECH_END] - now
            a[DA_BUSY] = rest if rest > 0.0 else 0.0
    elif st.dvi[d, 0] == DK_SSD:  # SSD.reset_stats
        s = st.dvi[d, 1]
        for i in range(st.s_dief.shape[1]):
            st.s_dief[s, i, SK.DF_BUSY_S] = 0.0
    elif st.dvi[d, 0] == DK_BLK:  # BlockLayer.reset_stats
        b = st.dvi[d, 1]
        st.bf[b, BF_BUSY_SINCE] = now
        st.bi[b, BI_TAG_WAITS] = 0
        st.bi[b, BI_MAX_WAITING] = st.bi[b, BI_W_CNT]
        st.bi[b, BI_MAX_QUEUED] = 0
        st.bi[b, BI_FL_SKIPPED] = 0
        st.bi[b, BI_FL_MERGED] = 0
        st.bi[b, BI_DEV_FLUSHES] = 0
        st.bi[b, BI_DIRECT] = 0
        st.bf[b, BF_READ_WAIT] = 0.0
        st.bi[b, BI_READS_QUEUED] = 0


@njit(cache=True, inline="always", _nrt=False)
def _complete_after(sp, d, r, now, delay):
    schedule(sp, now + delay, EV_DONE, d, r)


# =============================================================================== queue device
@njit(cache=True, inline="always", _nrt=False)
def _u(sp, q):
    st = _ld(sp)
    p = st.qi[q, QI_UPOS]
    st.qi[q, QI_UPOS] = p + 1
    return st.qu[q, p]


@njit(cache=True, _nrt=False)
def _q_sample(sp, q):
    """The service distributions of simulator.distributions (same formulas, same uniforms)."""
    st = _ld(sp)
    kind = st.qi[q, QI_DIST]
    p0 = st.qf[q, QF_P0]
    if kind == 0:
        return p0
    if kind == 1:
        return -p0 * math.log(1.0 - _u(sp, q))
    if kind == 2:
        return p0 + (st.qf[q, QF_P1] - p0) * _u(sp, q)
    if kind == 3:
        cv = st.qf[q, QF_P1]
        s2 = math.log1p(cv * cv)
        mu = math.log(p0) - 0.5 * s2
        u1 = 1.0 - _u(sp, q)
        u2 = _u(sp, q)
        z = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
        return math.exp(mu + math.sqrt(s2) * z)
    k = st.qi[q, QI_K]
    p = 1.0
    for _ in range(k):
        p *= 1.0 - _u(sp, q)
    return -p0 / k * math.log(p)


@njit(cache=True, _nrt=False)
def _q_dispatch(sp, d, q, r, now):
    st = _ld(sp)
    if st.rqi[r, RI_OP] == _FLUSH:
        s = st.qf[q, QF_FLUSH]
    else:
        s = _q_sample(sp, q)
        bw = st.qf[q, QF_BW]
        if bw > 0.0:
            s += st.rqi[r, RI_SIZE] / bw
    st.rqf[r, RF_TSTART] = now
    st.rqf[r, RF_SERVICE] = s
    st.dacc[d, DA_BUSY] += s
    _complete_after(sp, d, r, now, s)
    if st.qi[q, QI_ULEN] - st.qi[q, QI_UPOS] < st.qi[q, QI_NEED]:
        st.gi[GI_LOW] = 1


@njit(cache=True, _nrt=False)
def _q_start(sp, d, q, r, now):
    st = _ld(sp)
    if st.qi[q, QI_FREE] > 0:
        st.qi[q, QI_FREE] -= 1
        _q_dispatch(sp, d, q, r, now)
    else:
        _ring_push(st.qring[q], st.qi[q], QI_HEAD, QI_CNT, r)


@njit(cache=True, inline="always", _nrt=False)
def _ring_push(ring, meta, i_head, i_cnt, v):
    """Append ``v`` to a circular FIFO: ``ring`` (one row of a ring array) whose head and count are
    ``meta[i_head]`` and ``meta[i_cnt]`` (the queue device's waiting requests, the HDD's host queue,
    its blocked writes)."""
    j = meta[i_head] + meta[i_cnt]
    if j >= ring.shape[0]:
        j -= ring.shape[0]
    ring[j] = v
    meta[i_cnt] += 1


@njit(cache=True, inline="always", _nrt=False)
def _ring_pop(ring, meta, i_head, i_cnt):
    """Remove and return the oldest entry of a circular FIFO (see :func:`_ring_push`)."""
    j = meta[i_head]
    v = ring[j]
    j += 1
    if j >= ring.shape[0]:
        j = 0
    meta[i_head] = j
    meta[i_cnt] -= 1
    return v


@njit(cache=True, _nrt=False)
def _q_finish(sp, d, q, r, now):
    st = _ld(sp)
    _acc_leave(sp, d, r, now)
    if st.qi[q, QI_CNT] > 0:
        nr = _ring_pop(st.qring[q], st.qi[q], QI_HEAD, QI_CNT)
        _q_dispatch(sp, d, q, nr, now)
    else:
        st.qi[q, QI_FREE] += 1


# =============================================================================== HDD: host link
@njit(cache=True, _nrt=False)
def _link_reserve(sp, h, t, dur, now):
    """devices.hdd.drive.Link.reserve on an array of intervals (sorted by start)."""
    st = _ld(sp)
    if dur <= 0.0:
        return t
    h = st.hi[h, HI_LINK]  # the link's row (the actuators of a dual-actuator drive share one)
    lk = st.hlk[h]
    n = st.hi[h, HI_LK_N]
    k0 = 0
    while k0 < n and lk[k0, 1] <= now:
        k0 += 1
    if k0 > 0:
        for k in range(n - k0):
            lk[k, 0] = lk[k + k0, 0]
            lk[k, 1] = lk[k + k0, 1]
        n -= k0
    st.hf[h, HF_LINK_BUSY] += dur
    if n == 0 or t >= lk[n - 1, 1]:
        lk[n, 0] = t
        lk[n, 1] = t + dur
        st.hi[h, HI_LK_N] = n + 1
        return t
    cur = t
    pos = n
    for k in range(n):
        if cur + dur <= lk[k, 0]:
            pos = k
            break
        if lk[k, 1] > cur:
            cur = lk[k, 1]
    for k in range(n, pos, -1):
        lk[k, 0] = lk[k - 1, 0]
        lk[k, 1] = lk[k - 1, 1]
    lk[pos, 0] = cur
    lk[pos, 1] = cur + dur
    st.hi[h, HI_LK_N] = n + 1
    return cur


# =============================================================================== HDD
@njit(cache=True, inline="always", _nrt=False)
def _h_sectors(sp, h, r):
    st = _ld(sp)
    ss = st.hi[h, HI_SS]
    off = st.rqi[r, RI_OFF]
    lba = off // ss
    end = -(-(off + st.rqi[r, RI_SIZE]) // ss)
    if end <= lba:
        end = lba + 1
    return lba, end


@njit(cache=True, inline="always", _nrt=False)
def _h_overlaps_blocked(sp, h, lba, end):
    """HDD._overlaps_blocked: sectors [lba, end) overlap a write waiting for cache space."""
    st = _ld(sp)
    ring = st.hbl[h]
    j = st.hi[h, HI_BL_HEAD]
    for _k in range(st.hi[h, HI_BL_CNT]):
        s, t = _h_sectors(sp, h, ring[j])
        if s < end and lba < t:
            return True
        j += 1
        if j >= ring.shape[0]:
            j = 0
    return False


@njit(cache=True, inline="always", _nrt=False)
def _h_ack(sp, d, r, now, delay):
    st = _ld(sp)
    st.rqf[r, RF_TSTART] = now
    st.rqf[r, RF_SERVICE] = delay
    _complete_after(sp, d, r, now, delay)


@njit(cache=True, _nrt=False)
def _h_read_hit(sp, d, h, r, now):
    st = _ld(sp)
    st.hi[h, HI_READHITS] += 1
    dur = st.rqi[r, RI_SIZE] / st.hf[h, HF_LRATE]
    ls = _link_reserve(sp, h, now + st.hf[h, HF_OVH_HIT], dur, now)
    _h_ack(sp, d, r, now, ls + dur - now)


@njit(cache=True, _nrt=False)
def _h_stream_hit(sp, d, h, r, now, end):
    st = _ld(sp)
    par = st.hpar[h]
    st.hi[h, HI_READHITS] += 1
    t_data = par[K.PF_T] + (end - par[K.PF_LBA]) / par[K.PF_RATE]
    dur = st.rqi[r, RI_SIZE] / st.hf[h, HF_LRATE]
    t = now + st.hf[h, HF_OVH_HIT]
    if t_data > t:
        t = t_data
    ls = _link_reserve(sp, h, t, dur, now)
    done = ls + dur
    lim = float(end) + par[K.P_RA]
    if lim > par[K.P_TOTAL]:
        lim = par[K.P_TOTAL]
    if lim > par[K.PF_LIM]:
        par[K.PF_LIM] = lim
    st.hi[h, HI_BUSY] = 1
    st.hi[h, HI_STREAM] = 1
    st.hi[h, HI_MECH] = r
    st.dacc[d, DA_BUSY] += done - now
    st.hf[h, HF_MECH_END] = done
    _h_ack(sp, d, r, now, done - now)


@njit(cache=True, _nrt=False)
def _h_fill_window(sp, h, now):
    st = _ld(sp)
    while st.hi[h, HI_DQ_CNT] > 0 and st.hi[h, HI_WIN] < st.hi[h, HI_WINDOW]:
        e = _ring_pop(st.hdq[h, : st.hi[h, HI_ECAP]], st.hi[h], HI_DQ_HEAD, HI_DQ_CNT)
        if st.hi[h, HI_DQ_CNT] > 0:  # the next extent to enter the window (at a later dispatch): its row
            prefetch(st.hext, (h, st.hdq[h, st.hi[h, HI_DQ_HEAD]], 0))
        if st.hi[h, HI_WC] != W.WC_MEDIA:
            st.hext[h, e, W.E_WIN] = 1  # in the destage window: still joinable until dispatched
        n = st.hi[h, HI_N]
        K.enqueue(
            st.hcq[h], n, float(st.hext[h, e, 0]), float(st.hext[h, e, 1]), 1.0, now,
            float(st.hext[h, e, 2]), 1.0, now, 0.0, st.hzt[st.hi[h, HI_PROF]], st.hpar[h],
        )  # fmt: skip
        st.hcr[h, n] = e
        st.hi[h, HI_N] = n + 1
        st.hi[h, HI_WIN] += 1


@njit(cache=True, _nrt=False)
def _h_dispatch(sp, d, h, now):
    """HDD._dispatch: the mechanism is free; start the next media operation, if any."""
    st = _ld(sp)
    dram = st.hi[h, HI_DR_CNT] > 0  # media_cache: dirty DRAM data not yet appended
    # cleaning owed since the last append, before the next one
    owe = st.hi[h, HI_MC_OWE] > 0 and dram and (st.hi[h, HI_DQ_CNT] > 0 or st.hi[h, HI_WIN] > 0)
    if not owe and dram and W.mc_append_due(
        st.hf[h, HF_MC_BYTES], st.hf[h, HF_MC_SIZE], st.hi[h, HI_NHOST], st.hi[h, HI_FL_N] > 0 or st.hi[h, HI_BL_CNT] > 0,
        st.hf[h, HF_DIRTY_BYTES], st.hf[h, HF_HW],
    ) and _h_start_append(sp, d, h, now):
        return
    if st.hi[h, HI_DQ_CNT] > 0 and st.hi[h, HI_WIN] < st.hi[h, HI_WINDOW]:
        _h_fill_window(sp, h, now)
    n = st.hi[h, HI_N]
    if n == 0:
        return
    hold = W.mc_clean_hold(
        now, st.hf[h, HF_MC_TLAST], st.hi[h, HI_OUT], st.hf[h, HF_MC_DELAY], st.hi[h, HI_WC], st.hf[h, HF_MC_BYTES],
        st.hf[h, HF_MC_HW], st.hf[h, HF_DIRTY_BYTES], st.hf[h, HF_HW],
        st.hi[h, HI_FL_N] > 0 or st.hi[h, HI_BL_CNT] > 0 or st.hi[h, HI_QW_N] > 0, owe, st.hi[h, HI_WIN],
    )  # fmt: skip
    if hold != 0.0:  # idle cleaning waits for the idle timer (cache.cleaning_idle_delay; HDD._dispatch)
        if st.hi[h, HI_NHOST] == 0:
            if hold > 0.0 and st.hi[h, HI_MC_WAKE] == 0:
                st.hi[h, HI_MC_WAKE] = 1
                schedule(sp, now + hold, EV_MC_IDLE, d, 0)
            return
        mode = 1  # host commands only
    else:
        mode = W.wc_destage_mode(
            st.hi[h, HI_WC], owe, st.hi[h, HI_WIN], st.hi[h, HI_NHOST], st.hi[h, HI_IDLE] != 0, st.hf[h, HF_MC_BYTES],
            st.hf[h, HF_MC_HW],
            st.hi[h, HI_FL_N] > 0 or st.hi[h, HI_BL_CNT] > 0 or st.hi[h, HI_QW_N] > 0
            or st.hf[h, HF_DIRTY_BYTES] >= st.hf[h, HF_HW],
        )
    if st.hi[h, HI_WIN] > 0 and mode != 1:
        # the extent rows of the destage candidates: the chosen one's row is read right after the
        # choice (its keys, wc_unindex), and fetching it while choose() scores overlaps that miss
        cq = st.hcq[h]
        for k in range(n):
            if cq[k, K.C_KIND] != 0.0:
                prefetch(st.hext, (h, st.hcr[h, k], 0))
    p = st.hi[h, HI_PROF]
    i, kind, t0, xs, tend = K.dispatch(
        now, n, st.hcq[h], st.hzt[p], st.hpar[h], st.hsk[p], st.htt[p], st.hseg[h], mode, st.het[p]
    )
    if i < 0:
        return
    item = st.hcr[h, i]
    if kind != 0:  # a destage: wc_unindex now, wc_live_drop at its end
        _h_prefetch_keys(sp, h, st.hext[h, item, W.E_LBA], st.hext[h, item, W.E_LBA] + st.hext[h, item, W.E_NS])
    if i < n - 1:
        st.hcr[h, i] = st.hcr[h, n - 1]
    st.hi[h, HI_N] = n - 1
    st.hi[h, HI_BUSY] = 1
    if kind == 0:
        r = item
        st.hi[h, HI_MECH] = r
        st.hi[h, HI_NHOST] -= 1
        if st.hi[h, HI_QW_N] > 0 and _h_qw_remove(sp, h, r):
            st.hi[h, HI_DIRECT] += 1  # a queued write the cache refused, written home directly
        dur = st.rqi[r, RI_SIZE] / st.hf[h, HF_LRATE]
        if st.rqi[r, RI_OP] == _READ:
            done = _link_reserve(sp, h, xs, dur, now) + dur
            if done < tend:
                done = tend
        else:
            _link_reserve(sp, h, t0, dur, now)
            done = tend
        delay = done - now
        st.rqf[r, RF_TSTART] = now
        st.rqf[r, RF_SERVICE] = delay
        _complete_after(sp, d, r, now, delay)
        if done > tend + 1e-12:
            # the host link is the bottleneck: the mechanism goes on at the end of the media transfer
            st.dacc[d, DA_BUSY] += tend - now
            st.hf[h, HF_MECH_END] = tend
            st.hi[h, HI_MECH] = -1
            schedule(sp, now + (tend - now), EV_MECHFREE, d, 0)
        else:
            st.dacc[d, DA_BUSY] += delay
            st.hf[h, HF_MECH_END] = done
    else:
        st.hi[h, HI_MECH] = -1
        st.hi[h, HI_WIN] -= 1
        W.wc_unindex(st.hext[h], _h_idx(sp, h), item)  # in flight: no longer joinable
        st.dacc[d, DA_BUSY] += tend - now
        st.hf[h, HF_MECH_END] = tend
        schedule(sp, now + (tend - now), EV_DESTAGE, d, item)


@njit(cache=True, _nrt=False)
def _h_qw_remove(sp, h, r):
    """Take request ``r`` off the queued writes the cache refused (keeping their order); False if it
    is not one of them (HDD._qdw.pop)."""
    st = _ld(sp)
    q = st.hqw[h]
    n = st.hi[h, HI_QW_N]
    for k in range(n):
        if q[k] == r:
            for j in range(k, n - 1):
                q[j] = q[j + 1]
            st.hi[h, HI_QW_N] = n - 1
            return True
    return False


@njit(cache=True, _nrt=False)
def _h_start_append(sp, d, h, now):
    """HDD._start_append: one media operation appends dirty DRAM data to the media cache (the
    timing is wcache_kernels.mc_append_start, the Python drive's); False if the oldest DRAM extent
    does not fit in the media cache."""
    st = _ld(sp)
    if st.hi[h, HI_DR_CNT] == 0:
        return False
    e0 = st.hdr[h, st.hi[h, HI_DR_HEAD]]
    if st.hf[h, HF_MC_BYTES] + st.hext[h, e0, W.E_NS] * st.hi[h, HI_SS] > st.hf[h, HF_MC_SIZE]:
        return False
    pre, rot = W.mc_append_start(
        now, st.hpar[h], st.hseg[h], st.hsk[st.hi[h, HI_PROF]], st.htt[st.hi[h, HI_PROF]], st.hf[h, HF_MC_CYL],
        st.hi[h, HI_MC_LOG], st.hf[h, HF_MC_SPT], st.hf[h, HF_MC_SETUP],
    )  # fmt: skip
    st.hi[h, HI_APPENDS] += 1
    st.hi[h, HI_BUSY] = 1
    st.hi[h, HI_MECH] = -1
    st.dacc[d, DA_BUSY] += pre + rot
    st.hf[h, HF_MECH_END] = now + pre + rot
    schedule(sp, now + (pre + rot), EV_APPEND_WRITE, d, 0)
    return True


@njit(cache=True, _nrt=False)
def _h_append_write(sp, d, h, now):
    """HDD._append_write: the log pointer is under the head: write what is in DRAM now (oldest first,
    up to media_cache_batch and the room in the media cache); those extents stay at the head of the
    DRAM ring until the append ends (HI_MC_INAPP of them), no longer joinable."""
    st = _ld(sp)
    ss = st.hi[h, HI_SS]
    ext = st.hext[h]
    cap = st.hi[h, HI_ECAP]
    ring = st.hdr[h]
    k = 0
    nb = 0
    while k < st.hi[h, HI_DR_CNT]:
        e = ring[(st.hi[h, HI_DR_HEAD] + k) % cap]
        b = ext[e, W.E_NS] * ss
        if k > 0 and nb + b > st.hf[h, HF_MC_BATCH]:
            break
        if st.hf[h, HF_MC_BYTES] + nb + b > st.hf[h, HF_MC_SIZE]:
            break
        W.wc_unindex(ext, _h_idx(sp, h), e)  # in the append: no longer joinable
        k += 1
        nb += b
    st.hi[h, HI_MC_INAPP] = k
    xfer = nb / ss / st.hf[h, HF_MC_SPS]
    st.hi[h, HI_MC_LOG] += nb // ss
    st.hpar[h, K.A_XFER] += xfer
    st.dacc[d, DA_BUSY] += xfer
    st.hf[h, HF_MECH_END] += xfer
    schedule(sp, now + xfer, EV_APPEND_DONE, d, k)


@njit(cache=True, _nrt=False)
def _h_append_done(sp, d, h, k, now):
    """HDD._append_done: the ``k`` extents of the append are in the media cache (durable): out of the
    DRAM stage, into the cleaning list; FLUSH / FUA records waiting for them count them."""
    st = _ld(sp)
    st.hi[h, HI_BUSY] = 0
    if k > 0:
        st.hi[h, HI_MC_OWE] = st.hi[h, HI_MC_ILV]
    ss = st.hi[h, HI_SS]
    ext = st.hext[h]
    for _ in range(k):
        e = _ring_pop(st.hdr[h, : st.hi[h, HI_ECAP]], st.hi[h], HI_DR_HEAD, HI_DR_CNT)
        nb = ext[e, W.E_NS] * ss
        st.hi[h, HI_NDRAM] -= 1
        st.hf[h, HF_DIRTY_BYTES] -= nb
        # out of the buffer
        st.hi[h, HI_NLIVE] = W.wc_live_drop(ext, st.hlive[h], st.hi[h, HI_NLIVE], _h_idx(sp, h), e)
        st.hf[h, HF_MC_BYTES] += nb
        if st.hi[h, HI_FL_N] > 0:
            _h_count_flushes(sp, d, h, e, now)
        _ring_push(st.hdq[h, : st.hi[h, HI_ECAP]], st.hi[h], HI_DQ_HEAD, HI_DQ_CNT, e)  # to be cleaned home later
        st.hi[h, HI_NDIRTY] += 1
    st.hi[h, HI_MC_INAPP] = 0
    _h_release(sp, d, h, now)


@njit(cache=True, _nrt=False)
def _h_enqueue_host(sp, d, h, r, now, lba, ns, w, ready, linkw):
    st = _ld(sp)
    seq = st.hi[h, HI_SEQ] + 1
    st.hi[h, HI_SEQ] = seq
    n = st.hi[h, HI_N]
    K.enqueue(
        st.hcq[h], n, float(lba), float(ns), float(w), now, float(seq), 0.0, ready, linkw,
        st.hzt[st.hi[h, HI_PROF]], st.hpar[h],
    )  # fmt: skip
    st.hcr[h, n] = r
    st.hi[h, HI_N] = n + 1
    st.hi[h, HI_NHOST] += 1
    if st.hi[h, HI_BUSY] == 0:
        _h_dispatch(sp, d, h, now)


@njit(cache=True, _nrt=False)
def _h_fits(sp, h, lba, nbytes):
    """HDD._fits: room in the write cache for ``nbytes`` at ``lba`` (bytes, and dirty segments
    unless the write joins an extent)."""
    st = _ld(sp)
    if st.hf[h, HF_DIRTY_BYTES] + nbytes > st.hf[h, HF_WC_SIZE]:
        return False
    nseg = st.hi[h, HI_NDRAM] if st.hi[h, HI_WC] == W.WC_MEDIA else st.hi[h, HI_NDIRTY]
    if st.hi[h, HI_MAXSEG] > 0 and nseg >= st.hi[h, HI_MAXSEG]:
        ss = st.hi[h, HI_SS]
        e, _how = W.wc_target(st.hext[h], _h_idx(sp, h), lba, nbytes // ss, st.hi[h, HI_MERGE] // ss)
        if e < 0:
            return False
    return True


@njit(cache=True, _nrt=False)
def _h_rewindow(sp, h, e, now):
    """HDD._rewindow: extent ``e`` grew while in the destage window: rewrite its candidate row."""
    st = _ld(sp)
    cq = st.hcq[h]
    for i in range(st.hi[h, HI_N]):
        if cq[i, K.C_KIND] != 0.0 and st.hcr[h, i] == e:
            ext = st.hext[h]
            K.enqueue(
                cq, i, float(ext[e, W.E_LBA]), float(ext[e, W.E_NS]), 1.0, now, float(ext[e, W.E_SEQ]), 1.0, now,
                0.0, st.hzt[st.hi[h, HI_PROF]], st.hpar[h],
            )  # fmt: skip
            return


@njit(cache=True, inline="always", _nrt=False)
def _h_idx(sp, h):
    """Drive ``h``'s write-cache index at its capacity: rows [0, HI_IXCAP] of each map of its block
    (the header at row HI_IXCAP)."""
    st = _ld(sp)
    return st.hidx[h, :, : st.hi[h, HI_IXCAP] + 1]


@njit(cache=True, inline="always", _nrt=False)
def _h_prefetch_keys(sp, h, lba, end):
    """Start fetching drive ``h``'s write-cache index entries that a write of sectors [lba, end) or its
    extent's destage probes first: the home slots of keys ``lba`` and ``end`` in the start and end maps
    and of its first whole page in the page map (wc_put, wc_unindex, wc_live_drop), so their misses
    overlap instead of following one another (performance only: see ``prefetch``)."""
    st = _ld(sp)
    c = st.hi[h, HI_IXCAP]
    mask = c - 1  # wcache_kernels._find's mask for a map of c entries
    ix = st.hidx[h]
    a = W._h(lba, mask)
    b = W._h(end, mask)
    prefetch(ix, (W.M_START, a, 0))
    prefetch(ix, (W.M_END, a, 0))
    prefetch(ix, (W.M_START, b, 0))
    prefetch(ix, (W.M_END, b, 0))
    pg = ix[W.M_PAGE, c, 1]
    if pg > 0 and -(-lba // pg) < end // pg:
        prefetch(ix, (W.M_PAGE, W._h(-(-lba // pg), mask), 0))


@njit(cache=True, inline="always", _nrt=False)
def _h_efree(fr, cap, k):
    """Entry ``k`` of a drive's free-slot stack ``fr`` whose table has ``cap`` slots (HI_ECAP), stored as
    ``slot ^ (cap - 1 - k)``: a fresh stack (slots cap - 1 ... 0 from the bottom, the lowest on top) is
    zeros, so lazy_zeros keeps the pages a run never reaches out of memory (run.device_arrays)."""
    return fr[k] ^ (cap - 1 - k)


@njit(cache=True, _nrt=False)
def _h_grow_extents(sp, h):
    """HDD._grow in place: drive ``h``'s free-slot stack is empty; double its extent table's capacity
    HI_ECAP within the drive's worst-case block (run.device_arrays sizes it so this never reaches
    its end). The new slots go under the stack (zeros in _h_efree's coding: slots 2c - 1 ... c from
    the bottom), so the next slots taken are c, c + 1, ... as in the Python drive; the coded entries
    move up by c and keep their values (slot ^ (c - 1 - i) = slot ^ (2c - 1 - (c + i))). The rings of
    extents (cleaning list, DRAM stage) wrap at the capacity: the part wrapped to their start moves
    behind the old end. Rows past the capacity stay zeros, untouched: memory follows the extents a
    run holds (lazy_zeros), not the block."""
    st = _ld(sp)
    c = st.hi[h, HI_ECAP]
    c2 = min(2 * c, st.hext.shape[1])
    g = c2 - c
    fr = st.hefree[h]
    k = st.hi[h, HI_EFREE]
    for i in range(k - 1, -1, -1):
        fr[i + g] = fr[i]
    for i in range(g):
        fr[i] = 0
    st.hi[h, HI_EFREE] = k + g
    _unwrap(st.hdq[h], st.hi[h, HI_DQ_HEAD] + st.hi[h, HI_DQ_CNT] - c, c)
    _unwrap(st.hdr[h], st.hi[h, HI_DR_HEAD] + st.hi[h, HI_DR_CNT] - c, c)
    st.hi[h, HI_ECAP] = c2


@njit(cache=True, inline="always", _nrt=False)
def _unwrap(ring, wrap, c):
    """A ring of capacity ``c`` grows (its head stays): its ``wrap`` entries past the old end, stored
    from index 0, move behind it (at most ``c`` of them: they fit below 2c)."""
    for i in range(wrap):
        ring[c + i] = ring[i]


@njit(cache=True, _nrt=False)
def _h_grow_index(sp, h, ns):
    """HDD._grow_index in place: double drive ``h``'s index capacity until a write of ``ns`` sectors
    leaves every map at most half full (at most its block, sized for the worst case), refilled from
    the live extents (wc_reindex). Rows past the capacity are zeros, so the block costs memory only
    for the capacity a run reaches (run.device_arrays: lazy_zeros)."""
    st = _ld(sp)
    c = st.hi[h, HI_IXCAP]
    ix = st.hidx[h]
    pg = ix[W.M_PAGE, c, 1]
    need = max(st.hi[h, HI_NLIVE] + 1, ix[W.M_PAGE, c, 0] + ns // pg + 2)
    c2 = c
    while c2 // 2 < need and c2 < ix.shape[1] - 1:
        c2 *= 2
    if c2 == c:
        return  # the block's worst case keeps it at most half full
    for m in range(3):
        for i in range(c + 1):
            ix[m, i, 0] = 0
            ix[m, i, 1] = 0
    ix[W.M_PAGE, c2, 1] = pg
    st.hi[h, HI_IXCAP] = c2
    W.wc_reindex(st.hext[h], st.hlive[h], st.hi[h, HI_NLIVE], st.hidx[h, :, : c2 + 1])


@njit(cache=True, _nrt=False)
def _h_accept(sp, d, h, r, now, lba, end):
    """HDD._accept: take a write into the (volatile) write cache — overwrite, append or prepend to a
    waiting extent, else a new one — and acknowledge it after overhead + link transfer (a FUA write
    the drive does not honour waits for the extents dirty now, like a FLUSH)."""
    st = _ld(sp)
    seq = st.hi[h, HI_SEQ] + 1
    st.hi[h, HI_SEQ] = seq
    ns = end - lba
    ss = st.hi[h, HI_SS]
    ext = st.hext[h]
    live = st.hlive[h]
    c = st.hi[h, HI_IXCAP]
    pages = st.hidx[h, W.M_PAGE, c, 0] + ns // st.hidx[h, W.M_PAGE, c, 1]
    if st.hi[h, HI_NLIVE] >= c // 2 or pages + 2 > c // 2:
        _h_grow_index(sp, h, ns)  # as HDD._put: every map stays at most half full
    if st.hi[h, HI_EFREE] == 0:
        _h_grow_extents(sp, h)  # as HDD._put: a full table doubles before a new extent may need a slot
    nf = st.hi[h, HI_EFREE] - 1  # the free slot a new extent takes (wc_put, as the Python drive)
    e, how, nlive = W.wc_put(ext, live, st.hi[h, HI_NLIVE], _h_idx(sp, h), lba, ns, st.hi[h, HI_MERGE] // ss, seq,
                             _h_efree(st.hefree[h], st.hi[h, HI_ECAP], nf))
    st.hi[h, HI_NLIVE] = nlive
    if how == 0:
        # the data replaces cached data not yet destaged: no new dirty bytes, no new extent
        st.hi[h, HI_OVERWRITES] += 1
    else:
        if how > 0:
            st.hi[h, HI_COALESCED] += 1
            if ext[e, W.E_WIN] != 0:
                _h_rewindow(sp, h, e, now)
        else:
            st.hi[h, HI_EFREE] = nf
            if st.hi[h, HI_WC] == W.WC_MEDIA:
                _ring_push(st.hdr[h, : st.hi[h, HI_ECAP]], st.hi[h], HI_DR_HEAD, HI_DR_CNT, e)
                st.hi[h, HI_NDRAM] += 1
            else:
                _ring_push(st.hdq[h, : st.hi[h, HI_ECAP]], st.hi[h], HI_DQ_HEAD, HI_DQ_CNT, e)
                st.hi[h, HI_NDIRTY] += 1
        st.hf[h, HF_DIRTY_BYTES] += ns * ss
    K.seg_put(float(lba), float(end), now, st.hseg[h], st.hpar[h])
    dur = st.rqi[r, RI_SIZE] / st.hf[h, HF_LRATE]
    ls = _link_reserve(sp, h, now + st.hf[h, HF_OVH_W], dur, now)
    done = ls + dur + st.hf[h, HF_NV_ACK]
    rule = W.wc_write_rule(st.hi[h, HI_WC], st.rqi[r, RI_FUA] != 0, st.hi[h, HI_FUA_OK] != 0, st.hi[h, HI_MC_WCE] != 0,
                           ns * ss, st.hf[h, HF_WC_SIZE])  # as on arrival (HDD._admit_write's fua_flush)
    if rule == W.WR_DURABLE:  # cached, acknowledged once durable (a FUA the drive does not honour): as a FLUSH
        st.rqf[r, RF_TSTART] = now
        st.rqf[r, RF_SERVICE] = done - now
        _h_flush_wait(sp, h, seq, W.wc_flush_waits(st.hi[h, HI_WC], st.hi[h, HI_NDIRTY], st.hi[h, HI_NDRAM]), r, done)
    else:
        _h_ack(sp, d, r, now, done - now)
    if st.hi[h, HI_BUSY] == 0:
        _h_dispatch(sp, d, h, now)


@njit(cache=True, inline="always", _nrt=False)
def _h_flush_wait(sp, h, seq, left, r, ack):
    """A FLUSH (or FUA write) waits for the ``left`` extents in the cache now (HDD._flush_wait)."""
    st = _ld(sp)
    f = st.hfl[h, st.hi[h, HI_FL_N]]
    f[FL_SEQ] = seq
    f[FL_LEFT] = left
    f[FL_REQ] = r
    f[FL_ACK] = ack
    st.hi[h, HI_FL_N] += 1


@njit(cache=True, _nrt=False)
def _h_count_flushes(sp, d, h, e, now):
    """HDD._count_flushes: extent ``e`` is durable; FLUSH / FUA records waiting for it count it,
    those done complete (in arrival order) — the record table's kernels are the Python drive's."""
    st = _ld(sp)
    fl = st.hfl[h]
    n = st.hi[h, HI_FL_N]
    if W.wc_flushes_count(fl, n, float(st.hext[h, e, W.E_SEQ])) == 0:
        return
    ovh = st.hf[h, HF_OVH_FLUSH]
    for i in range(n):
        if fl[i, FL_LEFT] <= 0.0:
            r = int(fl[i, FL_REQ])
            wait = fl[i, FL_ACK] - now
            delay = (wait if wait > 0.0 else 0.0) + ovh
            if st.rqi[r, RI_OP] == _FLUSH:
                st.rqf[r, RF_TSTART] = now
                st.rqf[r, RF_SERVICE] = ovh
            _complete_after(sp, d, r, now, delay)
    st.hi[h, HI_FL_N] = W.wc_flushes_drop(fl, n)


@njit(cache=True, _nrt=False)
def _h_admit_write(sp, d, h, r, now):
    st = _ld(sp)
    lba, end = _h_sectors(sp, h, r)
    if st.hi[h, HI_WC] != W.WC_OFF:
        _h_prefetch_keys(sp, h, lba, end)
    K.invalidate(float(lba), float(end), st.hseg[h], st.hpar[h])
    ss = st.hi[h, HI_SS]
    nbytes = (end - lba) * ss
    fua = st.rqi[r, RI_FUA] != 0
    rule = W.wc_write_rule(st.hi[h, HI_WC], fua, st.hi[h, HI_FUA_OK] != 0, st.hi[h, HI_MC_WCE] != 0, nbytes,
                           st.hf[h, HF_WC_SIZE])
    if rule == W.WR_THROUGH:
        _h_enqueue_host(
            sp, d, h, r, now, lba, end - lba, 1, now + st.hf[h, HF_OVH_W], st.rqi[r, RI_SIZE] / st.hf[h, HF_LRATE]
        )
        return
    if st.hi[h, HI_BL_CNT] > 0 or not _h_fits(sp, h, lba, nbytes):
        if (
            st.hi[h, HI_QWC] != 0 and rule != W.WR_DURABLE
            and not (st.hi[h, HI_NLIVE] > 0 and W.wc_overlaps(st.hext[h], st.hlive[h], st.hi[h, HI_NLIVE], lba, end))
            and not _h_overlaps_blocked(sp, h, lba, end)
        ):
            # NCQ/TCQ: the write stays a queued command the drive may pick (and take its data then);
            # writes waiting for cache space keep their order only against the ones they overlap
            st.hqw[h, st.hi[h, HI_QW_N]] = r
            st.hi[h, HI_QW_N] += 1
            _h_enqueue_host(
                sp, d, h, r, now, lba, end - lba, 1, now + st.hf[h, HF_OVH_W], st.rqi[r, RI_SIZE] / st.hf[h, HF_LRATE]
            )
            return
        _ring_push(st.hbl[h], st.hi[h], HI_BL_HEAD, HI_BL_CNT, r)
        if st.hi[h, HI_BUSY] == 0:
            _h_dispatch(sp, d, h, now)
        return
    _h_accept(sp, d, h, r, now, lba, end)


@njit(cache=True, _nrt=False)
def _h_admit(sp, d, h, r, now):
    st = _ld(sp)
    st.hi[h, HI_OUT] += 1
    op = st.rqi[r, RI_OP]
    if op == _READ:
        lba, end = _h_sectors(sp, h, r)
        par = st.hpar[h]
        seg = st.hseg[h]
        nlive = st.hi[h, HI_NLIVE]
        if nlive > 0 and W.wc_dirty_hit(_h_idx(sp, h), lba, end):
            st.hi[h, HI_DIRTY_READ_HITS] += 1  # every page it touches is dirty data in the buffer
            _h_read_hit(sp, d, h, r, now)
            return
        if st.hi[h, HI_BUSY] == 0 and par[K.PF_ON] != 0.0:
            if K.seg_hit(now, float(lba), float(end), seg, par):
                _h_read_hit(sp, d, h, r, now)
                return
            if par[K.PF_LBA] <= lba and lba < par[K.PF_LIM]:
                _h_stream_hit(sp, d, h, r, now, end)
                return
        seq = st.hi[h, HI_SEQ] + 1
        st.hi[h, HI_SEQ] = seq
        n = st.hi[h, HI_N]
        if K.admit_read(
            st.hcq[h], n, float(lba), float(end - lba), now, float(seq), now + st.hf[h, HF_OVH_R],
            st.hzt[st.hi[h, HI_PROF]], par, seg
        ):
            _h_read_hit(sp, d, h, r, now)
            return
        st.hcr[h, n] = r
        st.hi[h, HI_N] = n + 1
        st.hi[h, HI_NHOST] += 1
        if st.hi[h, HI_BUSY] == 0:
            _h_dispatch(sp, d, h, now)
    elif op == _WRITE:
        _h_admit_write(sp, d, h, r, now)
    elif op == _FLUSH:
        # HDD._admit: a FLUSH waits for the extents in a volatile cache now; nothing volatile:
        # acknowledged after its overhead
        nvol = W.wc_flush_waits(st.hi[h, HI_WC], st.hi[h, HI_NDIRTY], st.hi[h, HI_NDRAM])
        if nvol > 0:
            _h_flush_wait(sp, h, st.hi[h, HI_SEQ], nvol, r, 0.0)
            if st.hi[h, HI_BUSY] == 0:
                _h_dispatch(sp, d, h, now)
        else:
            _h_ack(sp, d, r, now, st.hf[h, HF_OVH_FLUSH])
    else:  # TRIM
        lba, end = _h_sectors(sp, h, r)
        K.invalidate(float(lba), float(end), st.hseg[h], st.hpar[h])
        _h_ack(sp, d, r, now, st.hf[h, HF_OVH_W])


@njit(cache=True, _nrt=False)
def _h_submit(sp, d, h, r, now):
    st = _ld(sp)
    if st.hi[h, HI_OUT] >= st.hi[h, HI_QD]:
        _ring_push(st.hhq[h], st.hi[h], HI_HQ_HEAD, HI_HQ_CNT, r)
    else:
        _h_admit(sp, d, h, r, now)


@njit(cache=True, _nrt=False)
def _h_pump(sp, d, h, now):
    st = _ld(sp)
    while st.hi[h, HI_HQ_CNT] > 0 and st.hi[h, HI_OUT] < st.hi[h, HI_QD]:
        r = _ring_pop(st.hhq[h], st.hi[h], HI_HQ_HEAD, HI_HQ_CNT)
        _h_admit(sp, d, h, r, now)
    if st.hi[h, HI_BUSY] == 0 and (st.hi[h, HI_N] > 0 or st.hi[h, HI_DQ_CNT] > 0 or st.hi[h, HI_DR_CNT] > 0):
        _h_dispatch(sp, d, h, now)


@njit(cache=True, _nrt=False)
def _h_finish(sp, d, h, r, now):
    st = _ld(sp)
    _acc_leave(sp, d, r, now)
    st.hi[h, HI_OUT] -= 1
    st.hf[h, HF_MC_TLAST] = now  # the idle timer of cache.cleaning_idle_delay starts again
    if st.hi[h, HI_MECH] == r:
        st.hi[h, HI_MECH] = -1
        st.hi[h, HI_BUSY] = 0
        if st.hi[h, HI_STREAM] != 0:
            st.hi[h, HI_STREAM] = 0
            par = st.hpar[h]
            if st.hi[h, HI_NHOST] > 0 and par[K.PF_ON] != 0.0:
                n = st.hi[h, HI_N]
                i = K.find_read_in(st.hcq[h], n, par[K.PF_LBA], par[K.PF_LIM])
                if i >= 0:  # HDD._take_stream
                    K.remove_row(st.hcq[h], n, i)
                    q = st.hcr[h, i]
                    if i < n - 1:
                        st.hcr[h, i] = st.hcr[h, n - 1]
                    st.hi[h, HI_N] = n - 1
                    st.hi[h, HI_NHOST] -= 1
                    _lba, end = _h_sectors(sp, h, q)
                    _h_stream_hit(sp, d, h, q, now, end)
    _h_pump(sp, d, h, now)


@njit(cache=True, _nrt=False)
def _h_destage_done(sp, d, h, e, now):
    st = _ld(sp)
    st.hi[h, HI_BUSY] = 0
    st.hi[h, HI_MECH] = -1
    st.hi[h, HI_NDIRTY] -= 1
    nb = st.hext[h, e, 1] * st.hi[h, HI_SS]
    st.hi[h, HI_DESTAGED] += 1
    st.hi[h, HI_DESTAGED_BYTES] += nb
    if st.hi[h, HI_WC] == W.WC_MEDIA:  # cleaned from the media cache to its home location
        st.hf[h, HF_MC_BYTES] -= nb
        if st.hi[h, HI_MC_OWE] > 0:
            st.hi[h, HI_MC_OWE] -= 1
    else:
        st.hf[h, HF_DIRTY_BYTES] -= nb
        if st.hi[h, HI_FL_N] > 0:
            _h_count_flushes(sp, d, h, e, now)
        st.hi[h, HI_NLIVE] = W.wc_live_drop(st.hext[h], st.hlive[h], st.hi[h, HI_NLIVE], _h_idx(sp, h), e)
    k = st.hi[h, HI_EFREE]
    st.hefree[h, k] = e ^ (st.hi[h, HI_ECAP] - 1 - k)  # _h_efree's coding
    st.hi[h, HI_EFREE] = k + 1
    _h_release(sp, d, h, now)


@njit(cache=True, _nrt=False)
def _h_release(sp, d, h, now):
    """HDD._release: cache space freed: accept blocked writes that now fit, then go on."""
    st = _ld(sp)
    while st.hi[h, HI_BL_CNT] > 0:
        r = st.hbl[h, st.hi[h, HI_BL_HEAD]]
        lba, end = _h_sectors(sp, h, r)
        if not _h_fits(sp, h, lba, (end - lba) * st.hi[h, HI_SS]):
            break
        _ring_pop(st.hbl[h], st.hi[h], HI_BL_HEAD, HI_BL_CNT)
        _h_accept(sp, d, h, r, now, lba, end)
    while st.hi[h, HI_QW_N] > 0 and st.hi[h, HI_BL_CNT] == 0:
        # a segment freed: the oldest queued write the cache refused moves in
        r = st.hqw[h, 0]
        lba, end = _h_sectors(sp, h, r)
        if not _h_fits(sp, h, lba, (end - lba) * st.hi[h, HI_SS]):
            break
        _h_qw_remove(sp, h, r)
        n = st.hi[h, HI_N]
        cq = st.hcq[h]
        i = 0
        while cq[i, K.C_KIND] != 0.0 or st.hcr[h, i] != r:
            i += 1
        K.remove_row(cq, n, i)
        if i < n - 1:
            st.hcr[h, i] = st.hcr[h, n - 1]
        st.hi[h, HI_N] = n - 1
        st.hi[h, HI_NHOST] -= 1
        _h_accept(sp, d, h, r, now, lba, end)
    _h_pump(sp, d, h, now)


# =============================================================================== block layer
@njit(cache=True, inline="always", _nrt=False)
def _b_finish(sp, d, b, r, now):
    """BlockLayer._finish: accounting; busy while at least one request is inside."""
    st = _ld(sp)
    a = st.dacc[d]
    a[DA_QAREA] += a[DA_INSIDE] * (now - a[DA_TQ])
    a[DA_TQ] = now
    a[DA_INSIDE] -= 1.0
    op = st.rqi[r, RI_OP]
    a[DA_COMP + op] += 1.0
    a[DA_BYTES + op] += st.rqi[r, RI_SIZE]
    if a[DA_INSIDE] == 0.0:
        bs = st.bf[b, BF_BUSY_SINCE]
        a[DA_BUSY] += now - (bs if bs > a[DA_T0] else a[DA_T0])


@njit(cache=True, _nrt=False)
def _leaf_submit(sp, d, r, now):
    """A request reaches a device that is not a block layer (queue device, HDD, dual-actuator drive): the one
    submit path of both the job threads (_dev_submit) and a block layer's dispatch (numba compiles no
    recursion, so a block layer cannot call _dev_submit)."""
    st = _ld(sp)
    k = st.dvi[d, 0]
    if k == DK_DUAL:
        _x_submit(sp, d, st.dvi[d, 1], r, now)
        return
    _acc_enter(sp, d, now)
    if k == DK_QUEUE:
        _q_start(sp, d, st.dvi[d, 1], r, now)
    elif k == DK_SSD:
        _s_submit(sp, d, st.dvi[d, 1], r, now)
    else:
        _h_submit(sp, d, st.dvi[d, 1], r, now)


@njit(cache=True, _nrt=False)
def _b_lower_submit(sp, d, b, r, now):
    st = _ld(sp)
    st.bi[b, BI_ATDEV] += 1
    _leaf_submit(sp, st.bi[b, BI_LOWER], r, now)


@njit(cache=True, _nrt=False)
def _b_issue_flush(sp, d, b, now):
    """BlockLayer._issue_flush: the layer's own FLUSH for the requests listed in brun[slot]."""
    st = _ld(sp)
    st.bi[b, BI_DEV_FLUSHES] += 1
    nf = st.gi[GI_FREE] - 1
    st.gi[GI_FREE] = nf
    c = st.rfree[nf]
    st.rqi[c, RI_OP] = _FLUSH
    st.rqi[c, RI_OFF] = 0
    st.rqi[c, RI_SIZE] = 0
    st.rqi[c, RI_THR] = -1
    st.rqi[c, RI_DEV] = d
    st.rqi[c, RI_FUA] = 0
    st.rqi[c, RI_BLK] = 3
    st.rqi[c, RI_AUX] = st.bi[b, BI_NEXTSLOT]
    st.bi[b, BI_NEXTSLOT] ^= 1
    st.bi[b, BI_FLRUN] = 2
    st.rqf[c, RF_TSTART] = 0.0
    st.rqf[c, RF_SERVICE] = 0.0
    _b_lower_submit(sp, d, b, c, now)


@njit(cache=True, _nrt=False)
def _b_run_pending(sp, d, b, now):
    """The merged flushes become the running list; one FLUSH goes to the device for them."""
    st = _ld(sp)
    slot = st.bi[b, BI_NEXTSLOT]
    n = st.bi[b, BI_PENDN]
    for i in range(n):
        st.brun[b, slot, i] = st.bpend[b, i]
    st.bi[b, BI_RUNN + slot] = n
    st.bi[b, BI_PENDN] = 0
    _b_issue_flush(sp, d, b, now)


@njit(cache=True, _nrt=False)
def _b_start_flush(sp, d, b, r, now):
    """BlockLayer._start_flush (merge_flushes): behind the running one, or a FLUSH of its own."""
    st = _ld(sp)
    if st.bi[b, BI_FLRUN] != 0:
        st.bi[b, BI_FL_MERGED] += 1
        st.bpend[b, st.bi[b, BI_PENDN]] = r
        st.bi[b, BI_PENDN] += 1
        return
    slot = st.bi[b, BI_NEXTSLOT]
    st.brun[b, slot, 0] = r
    st.bi[b, BI_RUNN + slot] = 1
    _b_issue_flush(sp, d, b, now)


@njit(cache=True, _nrt=False)
def _b_insert(sp, b, r, now):
    """BlockLayer._insert: a request holding a tag goes into the scheduler (a FLUSH to the flush list)."""
    st = _ld(sp)
    op = st.rqi[r, RI_OP]
    if op == _FLUSH:
        _ring_push(st.bfw[b], st.bi[b], BI_FW_HEAD, BI_FW_CNT, r)
        return
    ns = st.bi[b, BI_NSCHED] + 1
    st.bi[b, BI_NSCHED] = ns
    if ns > st.bi[b, BI_MAX_QUEUED]:
        st.bi[b, BI_MAX_QUEUED] = ns
    if st.bi[b, BI_DEADLINE] == 0:
        _ring_push(st.bfq[b], st.bi[b], BI_FQ_HEAD, BI_FQ_CNT, r)
        return
    dr = 0 if op == _READ else 1
    seq = st.bi[b, BI_SEQ] + 1
    st.bi[b, BI_SEQ] = seq
    off = st.rqi[r, RI_OFF]
    so = st.bso[b, dr]
    n = st.bi[b, BI_NS + dr]
    k = n  # insort by (offset, seq): seq is the largest yet, so after every equal offset
    while k > 0 and so[k - 1, SO_OFF] > off:
        so[k, SO_OFF] = so[k - 1, SO_OFF]
        so[k, SO_SEQ] = so[k - 1, SO_SEQ]
        so[k, SO_REQ] = so[k - 1, SO_REQ]
        st.bdl[b, dr, k] = st.bdl[b, dr, k - 1]
        k -= 1
    so[k, SO_OFF] = off
    so[k, SO_SEQ] = seq
    so[k, SO_REQ] = r
    st.bdl[b, dr, k] = now + st.bf[b, BF_EXPIRE + dr]
    st.bi[b, BI_NS + dr] = n + 1


@njit(cache=True, _nrt=False)
def _b_after(sp, b, dr):
    """BlockLayer._after: index of the first entry of direction dr at or after the last dispatched
    sort key, -1 none."""
    st = _ld(sp)
    n = st.bi[b, BI_NS + dr]
    if n == 0 or st.bi[b, BI_HASLAST] == 0:
        return -1
    lo = st.bi[b, BI_LASTOFF]
    ls = st.bi[b, BI_LASTSEQ]
    so = st.bso[b, dr]
    for k in range(n):
        o = so[k, SO_OFF]
        if o > lo or (o == lo and so[k, SO_SEQ] >= ls):
            return k
    return -1


@njit(cache=True, _nrt=False)
def _b_take(sp, b, dr, k):
    """BlockLayer._take: dispatch entry k of direction dr."""
    st = _ld(sp)
    st.bi[b, BI_BATCHING] += 1
    so = st.bso[b, dr]
    r = so[k, SO_REQ]
    st.bi[b, BI_LASTOFF] = so[k, SO_OFF]
    st.bi[b, BI_LASTSEQ] = so[k, SO_SEQ]
    st.bi[b, BI_HASLAST] = 1
    n = st.bi[b, BI_NS + dr] - 1
    for j in range(k, n):
        so[j, SO_OFF] = so[j + 1, SO_OFF]
        so[j, SO_SEQ] = so[j + 1, SO_SEQ]
        so[j, SO_REQ] = so[j + 1, SO_REQ]
        st.bdl[b, dr, j] = st.bdl[b, dr, j + 1]
    st.bi[b, BI_NS + dr] = n
    st.bi[b, BI_NSCHED] -= 1
    return r


@njit(cache=True, _nrt=False)
def _b_pick(sp, b, now):
    """BlockLayer._pick: the scheduler's next request, -1 none."""
    st = _ld(sp)
    if st.bi[b, BI_DEADLINE] == 0:
        if st.bi[b, BI_FQ_CNT] > 0:
            st.bi[b, BI_NSCHED] -= 1
            return _ring_pop(st.bfq[b], st.bi[b], BI_FQ_HEAD, BI_FQ_CNT)
        return -1
    bd = st.bi[b, BI_BDIR]
    if bd >= 0 and st.bi[b, BI_BATCHING] < st.bi[b, BI_FBATCH]:
        k = _b_after(sp, b, bd)
        if k >= 0:
            return _b_take(sp, b, bd, k)
    reads = st.bi[b, BI_NS] > 0
    writes = st.bi[b, BI_NS + 1] > 0
    if reads:
        dr = 0
        if writes:
            s = st.bi[b, BI_STARVED]
            st.bi[b, BI_STARVED] = s + 1
            if s >= st.bi[b, BI_WSTARVED]:
                dr = 1
                st.bi[b, BI_STARVED] = 0
    elif writes:
        dr = 1
        st.bi[b, BI_STARVED] = 0
    else:
        return -1
    nxt = _b_after(sp, b, dr) if bd == dr else -1
    # the FIFO head: the oldest entry of the direction (deadlines grow with the insertion number)
    so = st.bso[b, dr]
    head = 0
    for k in range(1, st.bi[b, BI_NS + dr]):
        if so[k, SO_SEQ] < so[head, SO_SEQ]:
            head = k
    e = head if (nxt < 0 or st.bdl[b, dr, head] <= now) else nxt
    st.bi[b, BI_BDIR] = dr
    st.bi[b, BI_BATCHING] = 0
    return _b_take(sp, b, dr, e)


@njit(cache=True, _nrt=False)
def _b_dispatch(sp, d, b, now):
    """BlockLayer._dispatch: flushes first, then the scheduler's choice, while the device has room."""
    st = _ld(sp)
    while st.bi[b, BI_ATDEV] < st.bi[b, BI_QDEPTH]:
        if st.bi[b, BI_FW_CNT] > 0:
            f = _ring_pop(st.bfw[b], st.bi[b], BI_FW_HEAD, BI_FW_CNT)
            _b_start_flush(sp, d, b, f, now)
            continue
        r = _b_pick(sp, b, now)
        if r < 0:
            return
        if st.rqi[r, RI_OP] == _READ:
            st.bi[b, BI_READS_QUEUED] += 1
            st.bf[b, BF_READ_WAIT] += now - st.rqf[r, RF_TSUB]
        st.rqi[r, RI_BLK] = 1
        _b_lower_submit(sp, d, b, r, now)


@njit(cache=True, _nrt=False)
def _b_refill(sp, d, b, now):
    """BlockLayer._refill: tags freed: wake waiting submitters (FIFO, one tag each), then dispatch."""
    st = _ld(sp)
    while st.bi[b, BI_TAGS] > 0 and st.bi[b, BI_W_CNT] > 0:
        r = _ring_pop(st.bwt[b], st.bi[b], BI_W_HEAD, BI_W_CNT)
        st.bi[b, BI_TAGS] -= 1
        st.bi[b, BI_W_REQ] -= 1
        nx = st.rqi[r, RI_AUX]
        if nx >= 0:  # a sleeping batch (_Batch): its submitter goes to the back of the queue for its next request
            _ring_push(st.bwt[b], st.bi[b], BI_W_HEAD, BI_W_CNT, nx)
        _b_insert(sp, b, r, now)
    _b_dispatch(sp, d, b, now)


@njit(cache=True, inline="always", _nrt=False)
def _b_enter(sp, d, b, now):
    """BlockLayer._enter (Device.submit's accounting): one more request inside from now."""
    st = _ld(sp)
    a = st.dacc[d]
    a[DA_QAREA] += a[DA_INSIDE] * (now - a[DA_TQ])
    a[DA_TQ] = now
    if a[DA_INSIDE] == 0.0:
        st.bf[b, BF_BUSY_SINCE] = now
    a[DA_INSIDE] += 1.0


@njit(cache=True, _nrt=False)
def batch_sleep(sp, d, r, prev, now):
    """BlockLayer.submit_batch for block layer ``d`` once the batch's submitter sleeps for tags (no free
    tag, or a sleeping submitter ahead): request ``r`` enters, and waits behind ``prev``, the batch's
    previous sleeping request (linked by RI_AUX: _b_refill takes them one tag at a time, the submitter
    going to the back of the queue after each), or (``prev`` < 0) is the first: the submitter joins the
    tag queue with it. An owner outside this loop (the compiled Ceph core) calls it for each request
    the batch has left, in order."""
    st = _ld(sp)
    b = st.dvi[d, 1]
    st.rqf[r, RF_TSUB] = now  # req.t_submit
    _b_enter(sp, d, b, now)
    st.rqi[r, RI_AUX] = -1
    if prev < 0:
        st.bi[b, BI_TAG_WAITS] += 1
        _ring_push(st.bwt[b], st.bi[b], BI_W_HEAD, BI_W_CNT, r)
    else:
        st.rqi[prev, RI_AUX] = r
    w = st.bi[b, BI_W_REQ] + 1
    st.bi[b, BI_W_REQ] = w
    if w > st.bi[b, BI_MAX_WAITING]:  # waiting() after the batch: the most of its running values
        st.bi[b, BI_MAX_WAITING] = w


@njit(cache=True, _nrt=False)
def _b_submit(sp, d, b, r, now):
    """BlockLayer.submit."""
    st = _ld(sp)
    _b_enter(sp, d, b, now)
    op = st.rqi[r, RI_OP]
    if op == _FLUSH and st.bi[b, BI_SKIPFL] != 0:
        st.bi[b, BI_FL_SKIPPED] += 1
        st.rqf[r, RF_TSTART] = now
        st.rqf[r, RF_SERVICE] = 0.0
        st.rqi[r, RI_BLK] = 0
        schedule(sp, now + 0.0, EV_DONE, d, r)
        return
    if st.bi[b, BI_TAGS] > 0 and st.bi[b, BI_W_CNT] == 0:
        st.bi[b, BI_TAGS] -= 1
        if st.bi[b, BI_ATDEV] < st.bi[b, BI_QDEPTH] and st.bi[b, BI_NSCHED] == 0 and st.bi[b, BI_FW_CNT] == 0:
            if op != _FLUSH:
                st.bi[b, BI_DIRECT] += 1
                st.rqi[r, RI_BLK] = 0
                _b_lower_submit(sp, d, b, r, now)
                return
            if st.bi[b, BI_FLRUN] == 0:
                st.bi[b, BI_DEV_FLUSHES] += 1
                st.bi[b, BI_FLRUN] = 1
                st.rqi[r, RI_BLK] = 2
                _b_lower_submit(sp, d, b, r, now)
                return
        _b_insert(sp, b, r, now)
        _b_dispatch(sp, d, b, now)
        return
    st.bi[b, BI_TAG_WAITS] += 1
    st.rqi[r, RI_AUX] = -1  # one submitter, one request (not a batch)
    st.bi[b, BI_W_REQ] += 1
    _ring_push(st.bwt[b], st.bi[b], BI_W_HEAD, BI_W_CNT, r)
    if st.bi[b, BI_W_CNT] > st.bi[b, BI_MAX_WAITING]:
        st.bi[b, BI_MAX_WAITING] = st.bi[b, BI_W_CNT]


@njit(cache=True, _nrt=False)
def _b_done(sp, d, r, now):
    """The device below completed request r of block layer d (its device bookkeeping ran first):
    the layer's completion callbacks, then the job threads' (BlockLayer._done_direct, _done_queued,
    _flush_direct_done, _flush_done)."""
    st = _ld(sp)
    b = st.dvi[d, 1]
    path = st.rqi[r, RI_BLK]
    st.bi[b, BI_ATDEV] -= 1
    if path == 3:  # the layer's own FLUSH: completes every flush it lists
        slot = st.rqi[r, RI_AUX]
        n = st.bi[b, BI_RUNN + slot]
        st.bi[b, BI_FLRUN] = 0
        if st.bi[b, BI_PENDN] > 0:
            _b_run_pending(sp, d, b, now)
        for i in range(n):
            q = st.brun[b, slot, i]
            st.rqf[q, RF_TSTART] = st.rqf[r, RF_TSTART]
            st.rqf[q, RF_SERVICE] = st.rqf[r, RF_SERVICE]
            _b_finish(sp, d, b, q, now)
            st.bi[b, BI_TAGS] += 1
        _b_refill(sp, d, b, now)
        st.rfree[st.gi[GI_FREE]] = r
        st.gi[GI_FREE] += 1
        for i in range(n):
            _t_done(sp, st.brun[b, slot, i], now)
        return
    if path == 2:  # a thread's FLUSH that went to the device as it is
        st.bi[b, BI_FLRUN] = 0
        if st.bi[b, BI_PENDN] > 0:
            _b_run_pending(sp, d, b, now)
    _b_finish(sp, d, b, r, now)
    st.bi[b, BI_TAGS] += 1
    if path == 1 or st.bi[b, BI_W_CNT] > 0 or st.bi[b, BI_NSCHED] > 0 or st.bi[b, BI_FW_CNT] > 0:
        _b_refill(sp, d, b, now)
    _t_done(sp, r, now)


# =============================================================================== dual-actuator drive
@njit(cache=True, inline="always", _nrt=False)
def _x_part(sp, d, act, r, off, size, now):
    """One part of request r for actuator device ``act`` (a request of its own)."""
    st = _ld(sp)
    nf = st.gi[GI_FREE] - 1
    st.gi[GI_FREE] = nf
    c = st.rfree[nf]
    st.rqi[c, RI_OP] = st.rqi[r, RI_OP]
    st.rqi[c, RI_OFF] = off
    st.rqi[c, RI_SIZE] = size
    st.rqi[c, RI_THR] = -1
    st.rqi[c, RI_DEV] = d
    st.rqi[c, RI_FUA] = st.rqi[r, RI_FUA]
    st.rqi[c, RI_PAR] = r
    st.rqf[c, RF_TSTART] = 0.0
    st.rqf[c, RF_SERVICE] = 0.0
    _acc_enter(sp, act, now)
    _h_submit(sp, act, st.dvi[act, 1], c, now)


@njit(cache=True, _nrt=False)
def _x_submit(sp, d, x, r, now):
    """DualActuatorHDD.submit/_start: a FLUSH goes to both actuators, a request to the actuator(s)
    whose half of the LBAs it touches."""
    st = _ld(sp)
    _acc_enter(sp, d, now)
    a0 = st.xi[x, XI_ACT0]
    a1 = st.xi[x, XI_ACT1]
    if st.rqi[r, RI_OP] == _FLUSH:
        st.rqi[r, RI_LEFT] = 2
        _x_part(sp, d, a0, r, 0, 0, now)
        _x_part(sp, d, a1, r, 0, 0, now)
    else:
        off = st.rqi[r, RI_OFF]
        end = off + st.rqi[r, RI_SIZE]
        half = st.xi[x, XI_HALF]
        first = off < half
        second = end > half or off >= half
        st.rqi[r, RI_LEFT] = (1 if first else 0) + (1 if second else 0)
        if first:
            _x_part(sp, d, a0, r, off, (end if end < half else half) - off, now)
        if second:
            s = off if off > half else half
            _x_part(sp, d, a1, r, s - half, end - s, now)
    st.rqf[r, RF_TSTART] = _INF
    st.rqf[r, RF_SERVICE] = 0.0


@njit(cache=True, _nrt=False)
def _x_part_done(sp, d, c, now):
    """DualActuatorHDD._child_done: a part is complete; the last one completes the request (its own
    event, at this instant)."""
    st = _ld(sp)
    r = st.rqi[c, RI_PAR]
    if st.rqf[c, RF_TSTART] < st.rqf[r, RF_TSTART]:
        st.rqf[r, RF_TSTART] = st.rqf[c, RF_TSTART]
    if st.rqf[c, RF_SERVICE] > st.rqf[r, RF_SERVICE]:
        st.rqf[r, RF_SERVICE] = st.rqf[c, RF_SERVICE]
    st.rfree[st.gi[GI_FREE]] = c
    st.gi[GI_FREE] += 1
    st.rqi[r, RI_LEFT] -= 1
    if st.rqi[r, RI_LEFT] == 0:
        _acc_leave(sp, d, r, now)
        schedule(sp, now + 0.0, EV_DONE, d, r)


# =============================================================================== SSDs (devices.ssd.kernels)
@njit(cache=True, inline="always", _nrt=False)
def _s_state(sp, s):
    """The SSDState of SSD row ``s``: views of its rows of the stacked ``s_*`` arrays."""
    st = _ld(sp)
    return SK.SSDState(
        st.s_si[s], st.s_sf[s], st.s_die[s], st.s_dief[s], st.s_pg[s], st.s_pgf[s], st.s_tx[s], st.s_txf[s],
        st.s_rq[s], st.s_rqf[s], st.s_scr[s], st.s_ev[s], st.s_order[s], st.s_dirty[s], st.s_geo[s], st.s_l2p[s],
        st.s_p2l[s], st.s_bvalid[s], st.s_bstate[s], st.s_berase[s], st.s_free_stack[s], st.s_free_top[s],
        st.s_front[s], st.s_cnt[s], st.s_gcout[s],
    )


@njit(cache=True, _nrt=False)
def _s_drain(sp, d, s, now):
    """Schedule the events the SSD kernels asked for, in their order (SSD._drain)."""
    st = _ld(sp)
    si = st.s_si[s]
    ev = st.s_ev[s]
    n = si[SK.SI_NEV]
    si[SK.SI_NEV] = 0
    for i in range(n):
        kind = int(ev[i, 0])
        delay = ev[i, 1]
        arg = int(ev[i, 2])
        if kind == SK.EVK_DONE:
            st.rqf[arg, RF_SERVICE] = st.s_rqf[s, arg, SK.QF_SERVICE]
            st.rqf[arg, RF_TSTART] = st.s_rqf[s, arg, SK.QF_TSTART]
            schedule(sp, now + delay, EV_DONE, d, arg)
        elif kind == SK.EVK_DIE:
            schedule(sp, now + delay, EV_SSD_DIE, d, arg)
        else:
            schedule(sp, now + delay, EV_SSD_META, d, 0)


@njit(cache=True, _nrt=False)
def _s_submit(sp, d, s, r, now):
    st = _ld(sp)
    SK.ssd_start(_s_state(sp, s), r, st.rqi[r, RI_OP], st.rqi[r, RI_OFF], st.rqi[r, RI_SIZE], st.rqi[r, RI_FUA], now)
    _s_drain(sp, d, s, now)


@njit(cache=True, _nrt=False)
def _s_finish(sp, d, s, r, now):
    st = _ld(sp)
    _acc_leave(sp, d, r, now)
    st.dacc[d, DA_BUSY] += SK.ssd_finish(_s_state(sp, s), r, now, st.dacc[d, DA_T0])
    _s_drain(sp, d, s, now)


# =============================================================================== device dispatch
@njit(cache=True, _nrt=False)
def device_submit(sp, d, r, now):
    """A job thread's request reaches its device (the time its latency counts from)."""
    st = _ld(sp)
    st.rqf[r, RF_TSUB] = now
    _dev_submit(sp, d, r, now)


@njit(cache=True, _nrt=False)
def _dev_submit(sp, d, r, now):
    st = _ld(sp)
    if st.dvi[d, 0] == DK_BLK:
        _b_submit(sp, d, st.dvi[d, 1], r, now)
    else:
        _leaf_submit(sp, d, r, now)


@njit(cache=True, _nrt=False)
def _device_finish(sp, d, r, now):
    st = _ld(sp)
    k = st.dvi[d, 0]
    if k == DK_QUEUE:
        _q_finish(sp, d, st.dvi[d, 1], r, now)
    elif k == DK_HDD:
        _h_finish(sp, d, st.dvi[d, 1], r, now)
    elif k == DK_SSD:
        _s_finish(sp, d, st.dvi[d, 1], r, now)
    elif k == DK_BLK:  # a FLUSH the block layer completed at once
        _b_finish(sp, d, st.dvi[d, 1], r, now)
    # DK_DUAL: its accounting ran when the last part completed (_x_part_done)


# =============================================================================== job threads
@njit(cache=True, _nrt=False)
def _t_stop(sp, th):
    """JobThread._stop (end_fsync: the end flush is due once nothing is in flight)."""
    st = _ld(sp)
    if st.thi[th, TI_ISSUING] != 0 and st.thi[th, TI_ENDFSYNC] != 0:
        st.thi[th, TI_ENDSYNCS] = 1  # one file per job
    st.thi[th, TI_ISSUING] = 0
    st.thi[th, TI_BACKLOG] = 0


@njit(cache=True, _nrt=False)
def _t_finish(sp, th, now):
    st = _ld(sp)
    st.thi[th, TI_DONE] = 1
    st.thf[th, TF_TEND] = now
    st.gi[GI_ACTIVE] -= 1


@njit(cache=True, _nrt=False)
def _t_new(sp, th, op, off, size, now):
    """A request from the pool (FioRequest(op, off, size, fua), t_issue = now)."""
    st = _ld(sp)
    nf = st.gi[GI_FREE] - 1
    st.gi[GI_FREE] = nf
    r = st.rfree[nf]
    st.rqi[r, RI_OP] = op
    st.rqi[r, RI_OFF] = off
    st.rqi[r, RI_SIZE] = size
    st.rqi[r, RI_THR] = th
    st.rqi[r, RI_DEV] = st.thi[th, TI_DEV]
    st.rqi[r, RI_FUA] = st.thi[th, TI_FUA] if op == _WRITE else 0
    st.rqf[r, RF_TISSUE] = now
    st.rqf[r, RF_TSTART] = 0.0
    st.rqf[r, RF_SERVICE] = 0.0
    return r


@njit(cache=True, _nrt=False)
def _t_send(sp, th, r, now):
    """JobThread._submit: to the device now, or after the submission latency (one CPU per thread)."""
    st = _ld(sp)
    slat = st.thf[th, TF_SLAT]
    if slat > 0.0:
        t = st.thf[th, TF_CPUFREE]
        if t < now:
            t = now
        t += slat
        st.thf[th, TF_CPUFREE] = t
        schedule(sp, now + (t - now), EV_SUBMIT, th, r)
    else:
        device_submit(sp, st.rqi[r, RI_DEV], r, now)


@njit(cache=True, _nrt=False)
def _t_flush(sp, th, now):
    """A flush (fsync/fdatasync/end_fsync) takes a slot of the thread."""
    st = _ld(sp)
    r = _t_new(sp, th, _FLUSH, 0, 0, now)
    st.thi[th, TI_INFL] += 1
    st.thi[th, TI_FLINFL] += 1
    return r


@njit(cache=True, _nrt=False)
def _t_next_ddir(sp, th):
    """JobThread._next_ddir: fio's get_rw_ddir for rw/randrw (rwmix)."""
    st = _ld(sp)
    cur = st.thi[th, TI_RWDDIR]
    if st.thi[th, TI_ISS + cur] >= st.thi[th, TI_RWISS]:
        p = st.thi[th, TI_MPOS]
        u = st.mu[th, p]
        st.thi[th, TI_MPOS] = p + 1
        if st.thi[th, TI_MLEN] - p - 1 < st.thi[th, TI_DEPTH] + 1:
            st.gi[GI_LOW] = 1
        mix = st.thi[th, TI_MIXREAD]
        v = 1 + int(u * 100.0)
        ddir = 0 if v <= mix else 1
        if ddir != cur:
            st.thi[th, TI_RWISS] = st.thi[th, TI_ISS + cur] * (mix if cur == 1 else 100 - mix) // 100
        st.thi[th, TI_RWDDIR] = ddir
        cur = ddir
    return cur


@njit(cache=True, _nrt=False)
def _t_issue(sp, th, now):
    """JobThread._issue (one file, fixed block sizes). False when the thread stops."""
    st = _ld(sp)
    if now >= st.thf[th, TF_TSTOP]:
        _t_stop(sp, th)
        return False
    if st.thi[th, TI_LIMON] != 0:
        lim = st.thi[th, TI_IOSLIM]
        if (lim >= 0 and st.thi[th, TI_CIOS] + st.thi[th, TI_INFL] - st.thi[th, TI_FLINFL] >= lim) or (
            st.thi[th, TI_CBYTES] + st.thi[th, TI_IFBYTES] >= st.thf[th, TF_BYTESLIM]
        ):
            _t_stop(sp, th)
            return False
    if st.thi[th, TI_SYNCDUE] != 0:
        st.thi[th, TI_SYNCDUE] = 0
        r = _t_flush(sp, th, now)
        if st.thi[th, TI_BLOCKING] != 0:
            st.thi[th, TI_BLOCKER] = r
        _t_send(sp, th, r, now)
        return True  # closed loop: the flush took this slot
    ddir = _t_next_ddir(sp, th) if st.thi[th, TI_MIXED] != 0 else st.thi[th, TI_DDIR]
    if ddir == _WRITE and st.thi[th, TI_OFFMODE] != 0:
        p = st.thi[th, TI_OFFPOSW]
        off = st.offw[th, p]
        st.thi[th, TI_OFFPOSW] = p + 1
        if st.thi[th, TI_OFFLENW] - p - 1 < st.thi[th, TI_DEPTH] + 1:
            st.gi[GI_LOW] = 1
        bs = st.thi[th, TI_BS1]
    else:
        p = st.thi[th, TI_OFFPOS]
        off = st.offs[th, p]
        st.thi[th, TI_OFFPOS] = p + 1
        if st.thi[th, TI_OFFLEN] - p - 1 < st.thi[th, TI_DEPTH] + 1:
            st.gi[GI_LOW] = 1
        if st.thi[th, TI_VARBS] != 0:  # drawn in Python with the offset (one direction)
            bs = st.bsz[th, p]
        else:
            bs = st.thi[th, TI_BS1] if ddir == _WRITE else st.thi[th, TI_BS]
    r = _t_new(sp, th, ddir, off, bs, now)
    st.thi[th, TI_INFL] += 1
    st.thi[th, TI_IFBYTES] += bs
    st.thi[th, TI_ISS + ddir] += 1
    if ddir == _WRITE:
        w = st.thi[th, TI_WISS] + 1
        st.thi[th, TI_WISS] = w
        fs = st.thi[th, TI_FSYNCN]
        fd = st.thi[th, TI_FDSYNCN]
        if (fs != 0 and w % fs == 0) or (fd != 0 and w % fd == 0):
            st.thi[th, TI_SYNCDUE] = 1
    elif ddir == _TRIM and st.thi[th, TI_BLOCKING] != 0:  # a synchronous engine waits for a trim
        st.thi[th, TI_BLOCKER] = r
    _t_send(sp, th, r, now)
    return True


@njit(cache=True, _nrt=False)
def _t_fill(sp, th, now):
    st = _ld(sp)
    while st.thi[th, TI_INFL] < st.thi[th, TI_DEPTH] and st.thi[th, TI_BLOCKER] < 0:
        if not _t_issue(sp, th, now):
            return


@njit(cache=True, _nrt=False)
def _t_pump(sp, th, now):
    """JobThread._pump (open loop): issue waiting arrivals while slots are free."""
    st = _ld(sp)
    while st.thi[th, TI_BACKLOG] > 0 and st.thi[th, TI_INFL] < st.thi[th, TI_DEPTH] and st.thi[th, TI_BLOCKER] < 0:
        if not _t_issue(sp, th, now):
            return
        st.thi[th, TI_BACKLOG] -= 1


@njit(cache=True, _nrt=False)
def _t_refill(sp, th, now):
    st = _ld(sp)
    if st.thi[th, TI_RATE] != 0:
        _t_pump(sp, th, now)
    else:
        _t_fill(sp, th, now)


@njit(cache=True, _nrt=False)
def _t_wind_up(sp, th, now):
    """JobThread._wind_up: nothing in flight and no more IO; the end flush (end_fsync), then the end."""
    st = _ld(sp)
    if st.thi[th, TI_ENDSYNCS] > 0:
        st.thi[th, TI_ENDSYNCS] -= 1
        r = _t_flush(sp, th, now)
        _t_send(sp, th, r, now)
        return
    _t_finish(sp, th, now)


@njit(cache=True, _nrt=False)
def _t_arrive(sp, th, t, now):
    """JobThread._arrive / _on_arrival_now: schedule arrivals (those already due are taken now)."""
    st = _ld(sp)
    while True:
        if t >= st.thf[th, TF_TSTOP]:
            if st.thi[th, TI_STOPSCHED] == 0:
                st.thi[th, TI_STOPSCHED] = 1
                schedule(sp, now + (st.thf[th, TF_TSTOP] - now), EV_TIMESTOP, th, 0)
            return
        if t > now:
            st.thf[th, TF_NEXTARR] = t
            schedule(sp, now + (t - now), EV_ARRIVAL, th, 0)
            return
        t = _t_arrival_now(sp, th, t)


@njit(cache=True, _nrt=False)
def _t_arrival_now(sp, th, t):
    """An arrival at t joins the backlog; returns the due time of the next one."""
    st = _ld(sp)
    st.thi[th, TI_BACKLOG] += 1
    rate = st.thf[th, TF_RATE]
    if st.thi[th, TI_POISSON] != 0:
        p = st.thi[th, TI_RPOS]
        u = st.ru[th, p]
        st.thi[th, TI_RPOS] = p + 1
        if st.thi[th, TI_RLEN] - p - 1 < 4:
            st.gi[GI_LOW] = 1
        return t + -(1.0 / rate) * math.log1p(-u)
    k = st.thi[th, TI_ARRIVALS] + 1
    st.thi[th, TI_ARRIVALS] = k
    return st.thf[th, TF_T0] + k / rate


@njit(cache=True, _nrt=False)
def _t_on_arrival(sp, th, now):
    st = _ld(sp)
    if st.thi[th, TI_DONE] != 0 or st.thi[th, TI_ISSUING] == 0:
        return
    t_next = _t_arrival_now(sp, th, st.thf[th, TF_NEXTARR])
    _t_arrive(sp, th, t_next, now)
    _t_pump(sp, th, now)
    if st.thi[th, TI_ISSUING] == 0 and st.thi[th, TI_INFL] == 0:
        _t_wind_up(sp, th, now)


@njit(cache=True, _nrt=False)
def _t_on_time_stop(sp, th, now):
    st = _ld(sp)
    if st.thi[th, TI_DONE] != 0:
        return
    _t_stop(sp, th)
    if st.thi[th, TI_INFL] == 0:
        _t_wind_up(sp, th, now)


@njit(cache=True, _nrt=False)
def _t_ramp_end(sp, th, now):
    st = _ld(sp)
    if st.thi[th, TI_DONE] != 0:
        return
    st.thi[th, TI_LIMON] = 1
    # fio's reset_all_stats: issue counters restart (rwmix, fsync cadence)
    st.thi[th, TI_ISS] = 0
    st.thi[th, TI_ISS + 1] = 0
    st.thi[th, TI_ISS + 2] = 0
    st.thi[th, TI_WISS] = 0
    st.thi[th, TI_RWISS] = 0
    d = st.thi[th, TI_DEV]
    # the runner's rule: without a ramp only the first job to start on a device restarts its counters
    if st.thf[th, TF_RAMP] > 0.0 or st.dvi[d, 2] == 0:
        reset_device_stats(sp, d, now)
    st.dvi[d, 2] = 1


@njit(cache=True, _nrt=False)
def _t_begin(sp, th, now):
    st = _ld(sp)
    st.thf[th, TF_T0] = now
    trec = now + st.thf[th, TF_RAMP]
    st.thf[th, TF_TREC] = trec
    st.thf[th, TF_TSTOP] = trec + st.thf[th, TF_RUNTIME]
    st.thf[th, TF_CPUFREE] = now
    st.thi[th, TI_ISSUING] = 1
    if st.thf[th, TF_RAMP] > 0.0:
        schedule(sp, trec, EV_RAMP, th, 0)
    else:
        _t_ramp_end(sp, th, now)
    if st.thi[th, TI_RATE] == 0:
        _t_fill(sp, th, now)
    else:
        _t_arrive(sp, th, now, now)
        _t_pump(sp, th, now)
    if st.thi[th, TI_ISSUING] == 0 and st.thi[th, TI_INFL] == 0 and st.thi[th, TI_DONE] == 0:
        _t_wind_up(sp, th, now)


@njit(cache=True, _nrt=False)
def _t_done(sp, r, now):
    """JobThread._on_done: record, free the request, refill."""
    st = _ld(sp)
    th = st.rqi[r, RI_THR]
    if th < 0:  # a request of an owner outside this loop (the compiled Ceph core): logged for it to take
        n = st.gi[GI_LOGN]
        st.lgt[n] = r
        st.gi[GI_LOGN] = n + 1
        return
    st.thi[th, TI_INFL] -= 1
    op = st.rqi[r, RI_OP]
    size = st.rqi[r, RI_SIZE]
    rec = False
    if op != _FLUSH:
        st.thi[th, TI_IFBYTES] -= size
        if now >= st.thf[th, TF_TREC]:
            st.thi[th, TI_CIOS] += 1
            st.thi[th, TI_CBYTES] += size
            rec = True
    else:
        st.thi[th, TI_FLINFL] -= 1
        rec = now >= st.thf[th, TF_TREC]  # a sync record (the log's op 3: add_sync)
    if rec and st.thi[th, TI_RECORD] != 0:
        n = st.gi[GI_LOGN]
        ts = st.rqf[r, RF_TSUB]
        lg = st.lg
        lg[n, 0] = op
        lg[n, 1] = now
        lg[n, 2] = ts - st.rqf[r, RF_TISSUE]
        lg[n, 3] = now - ts
        lg[n, 4] = size
        st.lgt[n] = th
        st.gi[GI_LOGN] = n + 1
        if n + 2 >= lg.shape[0]:
            st.gi[GI_LOW] = 1
    if st.thi[th, TI_BLOCKER] == r:
        st.thi[th, TI_BLOCKER] = -1
    st.rfree[st.gi[GI_FREE]] = r
    st.gi[GI_FREE] += 1
    if st.thi[th, TI_ISSUING] != 0:
        _t_refill(sp, th, now)
    if st.thi[th, TI_INFL] == 0 and st.thi[th, TI_ISSUING] == 0 and st.thi[th, TI_DONE] == 0:
        _t_wind_up(sp, th, now)


# =============================================================================== the loop
@njit(cache=True, _nrt=False)
def _device_event(sp, kind, tg, arg, t):
    """A device event (``EV_DONE``, ``EV_MECHFREE``, ``EV_DESTAGE``) of device ``tg``: for a completed
    request, the device's bookkeeping first, then its owner's (a block layer above it, the
    dual-actuator drive it is a part of, or the job thread / outside owner, _t_done)."""
    st = _ld(sp)
    if kind == EV_DONE:
        _device_finish(sp, tg, arg, t)
        top = st.rqi[arg, RI_DEV]
        if top == tg:
            _t_done(sp, arg, t)
        elif st.dvi[top, 0] == DK_BLK:  # it came through the block layer above the device
            _b_done(sp, top, arg, t)
        else:  # a part of a dual-actuator drive's request
            _x_part_done(sp, top, arg, t)
    elif kind == EV_MECHFREE:
        h = st.dvi[tg, 1]
        st.hi[h, HI_BUSY] = 0
        _h_pump(sp, tg, h, t)
    elif kind == EV_DESTAGE:
        _h_destage_done(sp, tg, st.dvi[tg, 1], arg, t)
    elif kind == EV_SSD_DIE:
        s = st.dvi[tg, 1]
        SK.ssd_die_done(_s_state(sp, s), arg, t)
        _s_drain(sp, tg, s, t)
    elif kind == EV_SSD_META:
        s = st.dvi[tg, 1]
        SK.ssd_flush_done(_s_state(sp, s), t)
        _s_drain(sp, tg, s, t)
    elif kind == EV_APPEND_WRITE:
        _h_append_write(sp, tg, st.dvi[tg, 1], t)
    elif kind == EV_MC_IDLE:  # HDD._idle_wake
        h = st.dvi[tg, 1]
        st.hi[h, HI_MC_WAKE] = 0
        _h_pump(sp, tg, h, t)
    else:  # EV_APPEND_DONE
        _h_append_done(sp, tg, st.dvi[tg, 1], arg, t)


@njit(cache=True, _nrt=False)
def step(sp):
    """Process the first event of the heap (a device event: an owner outside the job threads, the
    compiled Ceph core, advances this State one event at a time, interleaved with its own heap).
    The owner reads the root's time and sequence first and takes the logged completions after."""
    st = _ld(sp)
    t = st.ht[0]
    kind = st.hk[0]
    tg = st.hg[0]
    arg = st.ha[0]
    _pop(sp)
    if st.gi[GI_HN] > 0 and st.hk[0] == EV_DESTAGE:
        # the next device event ends a destage: its extent row (read first by _h_destage_done) is
        # fetched while the owner handles its own events in between
        prefetch(st.hext, (st.dvi[st.hg[0], 1], st.ha[0], 0))
    st.gf[GF_NOW] = t
    st.gi[GI_EVENTS] += 1
    _device_event(sp, kind, tg, arg, t)


@njit(cache=True, _nrt=False)
def _start_threads(sp, lo, hi):
    st = _ld(sp)
    now = st.gf[GF_NOW]
    for th in range(lo, hi):
        delay = st.thf[th, TF_DELAY]
        if delay > 0.0:
            schedule(sp, now + delay, EV_BEGIN, th, 0)
        else:
            _t_begin(sp, th, now)


@njit(cache=True, _nrt=False)
def _run_until(sp, t_limit):
    st = _ld(sp)
    gi = st.gi
    while True:
        if gi[GI_ACTIVE] == 0:
            return ST_DONE
        if gi[GI_LOW] != 0:
            return ST_REFILL
        if gi[GI_HN] == 0:
            return ST_EMPTY
        t = st.ht[0]
        if t > t_limit:
            return ST_TIME
        kind = st.hk[0]
        tg = st.hg[0]
        arg = st.ha[0]
        _pop(sp)
        st.gf[GF_NOW] = t
        gi[GI_EVENTS] += 1
        if kind == EV_DONE:
            _device_event(sp, kind, tg, arg, t)
        elif kind == EV_SUBMIT:
            device_submit(sp, st.rqi[arg, RI_DEV], arg, t)
        elif kind in (EV_MECHFREE, EV_DESTAGE, EV_APPEND_WRITE, EV_APPEND_DONE, EV_SSD_DIE, EV_SSD_META, EV_MC_IDLE):
            _device_event(sp, kind, tg, arg, t)
        elif kind == EV_RAMP:
            _t_ramp_end(sp, tg, t)
        elif kind == EV_ARRIVAL:
            _t_on_arrival(sp, tg, t)
        elif kind == EV_TIMESTOP:
            _t_on_time_stop(sp, tg, t)
        elif kind == EV_BEGIN:
            _t_begin(sp, tg, t)


# =============================================================================== entry points (from Python)
@njit(cache=True, _nrt=False)
def start_threads(st, lo, hi):
    """Workload._start_phase: threads lo..hi-1 begin now (or after their startdelay), in thread order."""
    _start_threads(_state_ptr(st), lo, hi)


@njit(cache=True, _nrt=False)
def run_until(st, t_limit):
    """Process events with time <= t_limit. Returns a status ``ST_*``."""
    return _run_until(_state_ptr(st), t_limit)

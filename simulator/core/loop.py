"""The compiled event loop: heap, request pool, job threads, queue devices and HDDs (numba).

One call of :func:`run_until` processes events in (time, sequence) order until a control point
(time limit), until every job thread has finished, or until a buffer needs Python (offsets,
uniforms or the completion log). No Python object is touched and nothing is allocated per IO.

The handlers mirror the Python reference model line by line (``workloads.runner.JobThread``,
``devices.simple.QueueDevice``, ``devices.hdd.drive.HDD``) and schedule their events in the same
order, so that ties break as SimPy breaks them (its event id order). The HDD's mechanism —
positioning, SPTF choice, service, read look-ahead, read cache segments — is not re-implemented
here: the handlers call the same kernels (``devices.hdd.kernels``) the Python drive calls.
"""

from __future__ import annotations

import math

from numba import njit

from simulator import nbcache
from simulator.core import layout as _layout
from simulator.core.layout import (
    DA_BUSY,
    DA_BYTES,
    DA_COMP,
    DA_INSIDE,
    DA_QAREA,
    DA_T0,
    DA_TQ,
    DK_HDD,
    DK_QUEUE,
    EV_ARRIVAL,
    EV_BEGIN,
    EV_DESTAGE,
    EV_DONE,
    EV_MECHFREE,
    EV_RAMP,
    EV_SUBMIT,
    EV_TIMESTOP,
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
    HF_MECH_END,
    HF_OVH_HIT,
    HF_OVH_R,
    HF_OVH_W,
    HF_WC_SIZE,
    HI_BL_CNT,
    HI_BL_HEAD,
    HI_BUSY,
    HI_DESTAGED,
    HI_DESTAGED_BYTES,
    HI_DQ_CNT,
    HI_DQ_HEAD,
    HI_EFREE,
    HI_FUA_OK,
    HI_HQ_CNT,
    HI_HQ_HEAD,
    HI_IDLE,
    HI_LK_N,
    HI_MAXSEG,
    HI_MECH,
    HI_MERGE,
    HI_N,
    HI_NDIRTY,
    HI_NHOST,
    HI_OUT,
    HI_QD,
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
    RI_DEV,
    RI_FUA,
    RI_OFF,
    RI_OP,
    RI_SIZE,
    RI_THR,
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
    TI_BS,
    TI_CBYTES,
    TI_CIOS,
    TI_DDIR,
    TI_DEPTH,
    TI_DEV,
    TI_DONE,
    TI_FUA,
    TI_IFBYTES,
    TI_INFL,
    TI_IOSLIM,
    TI_ISSUING,
    TI_LIMON,
    TI_OFFLEN,
    TI_OFFPOS,
    TI_POISSON,
    TI_RATE,
    TI_RECORD,
    TI_RLEN,
    TI_RPOS,
    TI_STOPSCHED,
)  # fmt: skip
from simulator.devices.hdd import kernels as K

# the loop inlines the HDD kernels and the layout's constants: a change there must recompile it
nbcache.invalidate_stale(__file__, K.__file__, _layout.__file__)

_READ = 0
_WRITE = 1
_TRIM = 2
_FLUSH = 3
_INF = math.inf


# =============================================================================== event heap
@njit(cache=True, inline="always", _nrt=False)
def _less(st, i, j):
    ti = st.ht[i]
    tj = st.ht[j]
    return ti < tj or (ti == tj and st.hs[i] < st.hs[j])


@njit(cache=True, inline="always", _nrt=False)
def _swap(st, i, j):
    st.ht[i], st.ht[j] = st.ht[j], st.ht[i]
    st.hs[i], st.hs[j] = st.hs[j], st.hs[i]
    st.hk[i], st.hk[j] = st.hk[j], st.hk[i]
    st.hg[i], st.hg[j] = st.hg[j], st.hg[i]
    st.ha[i], st.ha[j] = st.ha[j], st.ha[i]


@njit(cache=True, _nrt=False)
def schedule(st, t, kind, target, arg):
    """Push an event at absolute time ``t`` (sequence = order of scheduling)."""
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
        if _less(st, i, p):
            _swap(st, i, p)
            i = p
        else:
            break


@njit(cache=True, _nrt=False)
def _pop(st):
    """Remove the root (the caller has read it)."""
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
        if b < n and _less(st, b, a):
            c = b
        if _less(st, c, i):
            _swap(st, c, i)
            i = c
        else:
            break


# =============================================================================== device accounting
@njit(cache=True, inline="always", _nrt=False)
def _acc_enter(st, d, now):
    a = st.dacc[d]
    a[DA_QAREA] += a[DA_INSIDE] * (now - a[DA_TQ])
    a[DA_TQ] = now
    a[DA_INSIDE] += 1.0


@njit(cache=True, inline="always", _nrt=False)
def _acc_leave(st, d, r, now):
    a = st.dacc[d]
    a[DA_QAREA] += a[DA_INSIDE] * (now - a[DA_TQ])
    a[DA_TQ] = now
    a[DA_INSIDE] -= 1.0
    op = st.rqi[r, RI_OP]
    a[DA_COMP + op] += 1.0
    a[DA_BYTES + op] += st.rqi[r, RI_SIZE]


@njit(cache=True, _nrt=False)
def reset_device_stats(st, d, now):
    """devices.base.Device.reset_stats (+ the HDD's own counters and busy carry-over)."""
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
        par[K.A_SEEK] = 0.0
        par[K.A_ROT] = 0.0
        par[K.A_XFER] = 0.0
        par[K.A_OPS] = 0.0
        par[K.A_DEC] = 0.0
        st.hi[h, HI_READHITS] = 0
        st.hi[h, HI_DESTAGED] = 0
        st.hi[h, HI_DESTAGED_BYTES] = 0
        if st.hi[h, HI_BUSY] != 0:
            rest = st.hf[h, HF_MECH_END] - now
            a[DA_BUSY] = rest if rest > 0.0 else 0.0


@njit(cache=True, inline="always", _nrt=False)
def _complete_after(st, d, r, now, delay):
    schedule(st, now + delay, EV_DONE, d, r)


# =============================================================================== queue device
@njit(cache=True, inline="always", _nrt=False)
def _u(st, q):
    p = st.qi[q, QI_UPOS]
    st.qi[q, QI_UPOS] = p + 1
    return st.qu[q, p]


@njit(cache=True, _nrt=False)
def _q_sample(st, q):
    """The service distributions of simulator.distributions (same formulas, same uniforms)."""
    kind = st.qi[q, QI_DIST]
    p0 = st.qf[q, QF_P0]
    if kind == 0:
        return p0
    if kind == 1:
        return -p0 * math.log(1.0 - _u(st, q))
    if kind == 2:
        return p0 + (st.qf[q, QF_P1] - p0) * _u(st, q)
    if kind == 3:
        cv = st.qf[q, QF_P1]
        s2 = math.log1p(cv * cv)
        mu = math.log(p0) - 0.5 * s2
        u1 = 1.0 - _u(st, q)
        u2 = _u(st, q)
        z = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
        return math.exp(mu + math.sqrt(s2) * z)
    k = st.qi[q, QI_K]
    p = 1.0
    for _ in range(k):
        p *= 1.0 - _u(st, q)
    return -p0 / k * math.log(p)


@njit(cache=True, _nrt=False)
def _q_dispatch(st, d, q, r, now):
    if st.rqi[r, RI_OP] == _FLUSH:
        s = st.qf[q, QF_FLUSH]
    else:
        s = _q_sample(st, q)
        bw = st.qf[q, QF_BW]
        if bw > 0.0:
            s += st.rqi[r, RI_SIZE] / bw
    st.rqf[r, RF_TSTART] = now
    st.rqf[r, RF_SERVICE] = s
    st.dacc[d, DA_BUSY] += s
    _complete_after(st, d, r, now, s)
    if st.qi[q, QI_ULEN] - st.qi[q, QI_UPOS] < st.qi[q, QI_NEED]:
        st.gi[GI_LOW] = 1


@njit(cache=True, _nrt=False)
def _q_start(st, d, q, r, now):
    if st.qi[q, QI_FREE] > 0:
        st.qi[q, QI_FREE] -= 1
        _q_dispatch(st, d, q, r, now)
    else:
        cap = st.qring.shape[1]
        j = st.qi[q, QI_HEAD] + st.qi[q, QI_CNT]
        if j >= cap:
            j -= cap
        st.qring[q, j] = r
        st.qi[q, QI_CNT] += 1


@njit(cache=True, _nrt=False)
def _q_finish(st, d, q, r, now):
    _acc_leave(st, d, r, now)
    if st.qi[q, QI_CNT] > 0:
        h = st.qi[q, QI_HEAD]
        nr = st.qring[q, h]
        h += 1
        if h >= st.qring.shape[1]:
            h = 0
        st.qi[q, QI_HEAD] = h
        st.qi[q, QI_CNT] -= 1
        _q_dispatch(st, d, q, nr, now)
    else:
        st.qi[q, QI_FREE] += 1


# =============================================================================== HDD: host link
@njit(cache=True, _nrt=False)
def _link_reserve(st, h, t, dur, now):
    """devices.hdd.drive.Link.reserve on an array of intervals (sorted by start)."""
    if dur <= 0.0:
        return t
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
def _h_sectors(st, h, r):
    ss = st.hi[h, HI_SS]
    off = st.rqi[r, RI_OFF]
    lba = off // ss
    end = -(-(off + st.rqi[r, RI_SIZE]) // ss)
    if end <= lba:
        end = lba + 1
    return lba, end


@njit(cache=True, inline="always", _nrt=False)
def _h_ack(st, d, r, now, delay):
    st.rqf[r, RF_TSTART] = now
    st.rqf[r, RF_SERVICE] = delay
    _complete_after(st, d, r, now, delay)


@njit(cache=True, _nrt=False)
def _h_read_hit(st, d, h, r, now):
    st.hi[h, HI_READHITS] += 1
    dur = st.rqi[r, RI_SIZE] / st.hf[h, HF_LRATE]
    ls = _link_reserve(st, h, now + st.hf[h, HF_OVH_HIT], dur, now)
    _h_ack(st, d, r, now, ls + dur - now)


@njit(cache=True, _nrt=False)
def _h_stream_hit(st, d, h, r, now, end):
    par = st.hpar[h]
    st.hi[h, HI_READHITS] += 1
    t_data = par[K.PF_T] + (end - par[K.PF_LBA]) / par[K.PF_RATE]
    dur = st.rqi[r, RI_SIZE] / st.hf[h, HF_LRATE]
    t = now + st.hf[h, HF_OVH_HIT]
    if t_data > t:
        t = t_data
    ls = _link_reserve(st, h, t, dur, now)
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
    _h_ack(st, d, r, now, done - now)


@njit(cache=True, _nrt=False)
def _h_fill_window(st, h, now):
    cap = st.hdq.shape[1]
    while st.hi[h, HI_DQ_CNT] > 0 and st.hi[h, HI_WIN] < st.hi[h, HI_WINDOW]:
        j = st.hi[h, HI_DQ_HEAD]
        e = st.hdq[h, j]
        j += 1
        if j >= cap:
            j = 0
        st.hi[h, HI_DQ_HEAD] = j
        st.hi[h, HI_DQ_CNT] -= 1
        n = st.hi[h, HI_N]
        K.enqueue(
            st.hcq[h], n, float(st.hext[h, e, 0]), float(st.hext[h, e, 1]), 1.0, now,
            float(st.hext[h, e, 2]), 1.0, now, 0.0, st.hzt[h], st.hpar[h],
        )  # fmt: skip
        st.hcr[h, n] = e
        st.hi[h, HI_N] = n + 1
        st.hi[h, HI_WIN] += 1


@njit(cache=True, _nrt=False)
def _h_dispatch(st, d, h, now):
    """HDD._dispatch: the mechanism is free; start the next media operation, if any."""
    if st.hi[h, HI_DQ_CNT] > 0 and st.hi[h, HI_WIN] < st.hi[h, HI_WINDOW]:
        _h_fill_window(st, h, now)
    n = st.hi[h, HI_N]
    if n == 0:
        return
    mode = 0
    if st.hi[h, HI_WIN] != 0 and st.hi[h, HI_NHOST] != 0 and st.hi[h, HI_IDLE] != 0:
        pressure = st.hi[h, HI_BL_CNT] > 0 or st.hf[h, HF_DIRTY_BYTES] >= st.hf[h, HF_HW]
        if not pressure:
            mode = 1
    i, kind, t0, xs, tend = K.dispatch(
        now, n, st.hcq[h], st.hzt[h], st.hpar[h], st.hsk[h], st.htt[h], st.hseg[h], mode, st.het[h]
    )
    if i < 0:
        return
    item = st.hcr[h, i]
    if i < n - 1:
        st.hcr[h, i] = st.hcr[h, n - 1]
    st.hi[h, HI_N] = n - 1
    st.hi[h, HI_BUSY] = 1
    if kind == 0:
        r = item
        st.hi[h, HI_MECH] = r
        st.hi[h, HI_NHOST] -= 1
        dur = st.rqi[r, RI_SIZE] / st.hf[h, HF_LRATE]
        if st.rqi[r, RI_OP] == _READ:
            done = _link_reserve(st, h, xs, dur, now) + dur
            if done < tend:
                done = tend
        else:
            _link_reserve(st, h, t0, dur, now)
            done = tend
        delay = done - now
        st.rqf[r, RF_TSTART] = now
        st.rqf[r, RF_SERVICE] = delay
        _complete_after(st, d, r, now, delay)
        if done > tend + 1e-12:
            # the host link is the bottleneck: the mechanism goes on at the end of the media transfer
            st.dacc[d, DA_BUSY] += tend - now
            st.hf[h, HF_MECH_END] = tend
            st.hi[h, HI_MECH] = -1
            schedule(st, now + (tend - now), EV_MECHFREE, d, 0)
        else:
            st.dacc[d, DA_BUSY] += delay
            st.hf[h, HF_MECH_END] = done
    else:
        st.hi[h, HI_MECH] = -1
        st.hi[h, HI_WIN] -= 1
        st.dacc[d, DA_BUSY] += tend - now
        st.hf[h, HF_MECH_END] = tend
        schedule(st, now + (tend - now), EV_DESTAGE, d, item)


@njit(cache=True, _nrt=False)
def _h_enqueue_host(st, d, h, r, now, lba, ns, w, ready, linkw):
    seq = st.hi[h, HI_SEQ] + 1
    st.hi[h, HI_SEQ] = seq
    n = st.hi[h, HI_N]
    K.enqueue(
        st.hcq[h], n, float(lba), float(ns), float(w), now, float(seq), 0.0, ready, linkw,
        st.hzt[h], st.hpar[h],
    )  # fmt: skip
    st.hcr[h, n] = r
    st.hi[h, HI_N] = n + 1
    st.hi[h, HI_NHOST] += 1
    if st.hi[h, HI_BUSY] == 0:
        _h_dispatch(st, d, h, now)


@njit(cache=True, _nrt=False)
def _h_fits(st, h, lba, nbytes):
    if st.hf[h, HF_DIRTY_BYTES] + nbytes > st.hf[h, HF_WC_SIZE]:
        return False
    if st.hi[h, HI_MAXSEG] > 0:
        merges = False
        cnt = st.hi[h, HI_DQ_CNT]
        if cnt > 0:
            j = st.hi[h, HI_DQ_HEAD] + cnt - 1
            if j >= st.hdq.shape[1]:
                j -= st.hdq.shape[1]
            e = st.hdq[h, j]
            ext = st.hext[h]
            merges = ext[e, 0] + ext[e, 1] == lba and ext[e, 1] * st.hi[h, HI_SS] + nbytes <= st.hi[h, HI_MERGE]
        if not merges and st.hi[h, HI_NDIRTY] >= st.hi[h, HI_MAXSEG]:
            return False
    return True


@njit(cache=True, _nrt=False)
def _h_accept(st, d, h, r, now, lba, end):
    """HDD._accept: take a write into the (volatile) write cache, acknowledge after the transfer."""
    seq = st.hi[h, HI_SEQ] + 1
    st.hi[h, HI_SEQ] = seq
    ns = end - lba
    ss = st.hi[h, HI_SS]
    ext = st.hext[h]
    cap = st.hdq.shape[1]
    cnt = st.hi[h, HI_DQ_CNT]
    merged = False
    if cnt > 0:
        j = st.hi[h, HI_DQ_HEAD] + cnt - 1
        if j >= cap:
            j -= cap
        e = st.hdq[h, j]
        if ext[e, 0] + ext[e, 1] == lba and (ext[e, 1] + ns) * ss <= st.hi[h, HI_MERGE]:
            ext[e, 1] += ns
            merged = True
    if not merged:
        nf = st.hi[h, HI_EFREE] - 1
        st.hi[h, HI_EFREE] = nf
        e = st.hefree[h, nf]
        ext[e, 0] = lba
        ext[e, 1] = ns
        ext[e, 2] = seq
        j = st.hi[h, HI_DQ_HEAD] + cnt
        if j >= cap:
            j -= cap
        st.hdq[h, j] = e
        st.hi[h, HI_DQ_CNT] = cnt + 1
        st.hi[h, HI_NDIRTY] += 1
    st.hf[h, HF_DIRTY_BYTES] += ns * ss
    K.seg_put(float(lba), float(end), now, st.hseg[h], st.hpar[h])
    dur = st.rqi[r, RI_SIZE] / st.hf[h, HF_LRATE]
    ls = _link_reserve(st, h, now + st.hf[h, HF_OVH_W], dur, now)
    done = ls + dur
    _h_ack(st, d, r, now, done - now)
    if st.hi[h, HI_BUSY] == 0:
        _h_dispatch(st, d, h, now)


@njit(cache=True, _nrt=False)
def _h_admit_write(st, d, h, r, now):
    lba, end = _h_sectors(st, h, r)
    K.invalidate(float(lba), float(end), st.hseg[h], st.hpar[h])
    ss = st.hi[h, HI_SS]
    nbytes = (end - lba) * ss
    wc = st.hi[h, HI_WC]
    fua = st.rqi[r, RI_FUA] != 0
    if wc == 0 or (fua and st.hi[h, HI_FUA_OK] != 0) or nbytes > st.hf[h, HF_WC_SIZE]:
        _h_enqueue_host(
            st, d, h, r, now, lba, end - lba, 1, now + st.hf[h, HF_OVH_W], st.rqi[r, RI_SIZE] / st.hf[h, HF_LRATE]
        )
        return
    if st.hi[h, HI_BL_CNT] > 0 or not _h_fits(st, h, lba, nbytes):
        cap = st.hbl.shape[1]
        j = st.hi[h, HI_BL_HEAD] + st.hi[h, HI_BL_CNT]
        if j >= cap:
            j -= cap
        st.hbl[h, j] = r
        st.hi[h, HI_BL_CNT] += 1
        if st.hi[h, HI_BUSY] == 0:
            _h_dispatch(st, d, h, now)
        return
    _h_accept(st, d, h, r, now, lba, end)


@njit(cache=True, _nrt=False)
def _h_admit(st, d, h, r, now):
    st.hi[h, HI_OUT] += 1
    op = st.rqi[r, RI_OP]
    if op == _READ:
        lba, end = _h_sectors(st, h, r)
        par = st.hpar[h]
        seg = st.hseg[h]
        if st.hi[h, HI_BUSY] == 0 and par[K.PF_ON] != 0.0:
            if K.seg_hit(now, float(lba), float(end), seg, par):
                _h_read_hit(st, d, h, r, now)
                return
            if par[K.PF_LBA] <= lba and lba < par[K.PF_LIM]:
                _h_stream_hit(st, d, h, r, now, end)
                return
        seq = st.hi[h, HI_SEQ] + 1
        st.hi[h, HI_SEQ] = seq
        n = st.hi[h, HI_N]
        if K.admit_read(
            st.hcq[h], n, float(lba), float(end - lba), now, float(seq), now + st.hf[h, HF_OVH_R], st.hzt[h], par, seg
        ):
            _h_read_hit(st, d, h, r, now)
            return
        st.hcr[h, n] = r
        st.hi[h, HI_N] = n + 1
        st.hi[h, HI_NHOST] += 1
        if st.hi[h, HI_BUSY] == 0:
            _h_dispatch(st, d, h, now)
    elif op == _WRITE:
        _h_admit_write(st, d, h, r, now)
    else:  # TRIM (FLUSH is not routed to the compiled HDD: the support check falls back)
        lba, end = _h_sectors(st, h, r)
        K.invalidate(float(lba), float(end), st.hseg[h], st.hpar[h])
        _h_ack(st, d, r, now, st.hf[h, HF_OVH_W])


@njit(cache=True, _nrt=False)
def _h_submit(st, d, h, r, now):
    if st.hi[h, HI_OUT] >= st.hi[h, HI_QD]:
        cap = st.hhq.shape[1]
        j = st.hi[h, HI_HQ_HEAD] + st.hi[h, HI_HQ_CNT]
        if j >= cap:
            j -= cap
        st.hhq[h, j] = r
        st.hi[h, HI_HQ_CNT] += 1
    else:
        _h_admit(st, d, h, r, now)


@njit(cache=True, _nrt=False)
def _h_pump(st, d, h, now):
    cap = st.hhq.shape[1]
    while st.hi[h, HI_HQ_CNT] > 0 and st.hi[h, HI_OUT] < st.hi[h, HI_QD]:
        j = st.hi[h, HI_HQ_HEAD]
        r = st.hhq[h, j]
        j += 1
        if j >= cap:
            j = 0
        st.hi[h, HI_HQ_HEAD] = j
        st.hi[h, HI_HQ_CNT] -= 1
        _h_admit(st, d, h, r, now)
    if st.hi[h, HI_BUSY] == 0 and (st.hi[h, HI_N] > 0 or st.hi[h, HI_DQ_CNT] > 0):
        _h_dispatch(st, d, h, now)


@njit(cache=True, _nrt=False)
def _h_finish(st, d, h, r, now):
    _acc_leave(st, d, r, now)
    st.hi[h, HI_OUT] -= 1
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
                    _lba, end = _h_sectors(st, h, q)
                    _h_stream_hit(st, d, h, q, now, end)
    _h_pump(st, d, h, now)


@njit(cache=True, _nrt=False)
def _h_destage_done(st, d, h, e, now):
    st.hi[h, HI_BUSY] = 0
    st.hi[h, HI_MECH] = -1
    st.hi[h, HI_NDIRTY] -= 1
    nb = st.hext[h, e, 1] * st.hi[h, HI_SS]
    st.hi[h, HI_DESTAGED] += 1
    st.hi[h, HI_DESTAGED_BYTES] += nb
    st.hf[h, HF_DIRTY_BYTES] -= nb
    st.hefree[h, st.hi[h, HI_EFREE]] = e
    st.hi[h, HI_EFREE] += 1
    # HDD._release: accept blocked writes that now fit
    cap = st.hbl.shape[1]
    while st.hi[h, HI_BL_CNT] > 0:
        j = st.hi[h, HI_BL_HEAD]
        r = st.hbl[h, j]
        lba, end = _h_sectors(st, h, r)
        if not _h_fits(st, h, lba, (end - lba) * st.hi[h, HI_SS]):
            break
        j += 1
        if j >= cap:
            j = 0
        st.hi[h, HI_BL_HEAD] = j
        st.hi[h, HI_BL_CNT] -= 1
        _h_accept(st, d, h, r, now, lba, end)
    _h_pump(st, d, h, now)


# =============================================================================== device dispatch
@njit(cache=True, _nrt=False)
def device_submit(st, d, r, now):
    st.rqf[r, RF_TSUB] = now
    _acc_enter(st, d, now)
    k = st.dvi[d, 0]
    if k == DK_QUEUE:
        _q_start(st, d, st.dvi[d, 1], r, now)
    elif k == DK_HDD:
        _h_submit(st, d, st.dvi[d, 1], r, now)


@njit(cache=True, _nrt=False)
def _device_finish(st, d, r, now):
    k = st.dvi[d, 0]
    if k == DK_QUEUE:
        _q_finish(st, d, st.dvi[d, 1], r, now)
    elif k == DK_HDD:
        _h_finish(st, d, st.dvi[d, 1], r, now)


# =============================================================================== job threads
@njit(cache=True, _nrt=False)
def _t_stop(st, th):
    st.thi[th, TI_ISSUING] = 0
    st.thi[th, TI_BACKLOG] = 0


@njit(cache=True, _nrt=False)
def _t_finish(st, th, now):
    st.thi[th, TI_DONE] = 1
    st.thf[th, TF_TEND] = now
    st.gi[GI_ACTIVE] -= 1


@njit(cache=True, _nrt=False)
def _t_issue(st, th, now):
    """JobThread._issue (closed loop, one file, one direction). False when the thread stops."""
    if now >= st.thf[th, TF_TSTOP]:
        _t_stop(st, th)
        return False
    if st.thi[th, TI_LIMON] != 0:
        lim = st.thi[th, TI_IOSLIM]
        if (lim >= 0 and st.thi[th, TI_CIOS] + st.thi[th, TI_INFL] >= lim) or (
            st.thi[th, TI_CBYTES] + st.thi[th, TI_IFBYTES] >= st.thf[th, TF_BYTESLIM]
        ):
            _t_stop(st, th)
            return False
    p = st.thi[th, TI_OFFPOS]
    off = st.offs[th, p]
    st.thi[th, TI_OFFPOS] = p + 1
    if st.thi[th, TI_OFFLEN] - p - 1 < st.thi[th, TI_DEPTH] + 1:
        st.gi[GI_LOW] = 1
    nf = st.gi[GI_FREE] - 1
    st.gi[GI_FREE] = nf
    r = st.rfree[nf]
    ddir = st.thi[th, TI_DDIR]
    bs = st.thi[th, TI_BS]
    d = st.thi[th, TI_DEV]
    st.rqi[r, RI_OP] = ddir
    st.rqi[r, RI_OFF] = off
    st.rqi[r, RI_SIZE] = bs
    st.rqi[r, RI_THR] = th
    st.rqi[r, RI_DEV] = d
    st.rqi[r, RI_FUA] = st.thi[th, TI_FUA] if ddir == _WRITE else 0
    st.rqf[r, RF_TISSUE] = now
    st.rqf[r, RF_TSTART] = 0.0
    st.rqf[r, RF_SERVICE] = 0.0
    st.thi[th, TI_INFL] += 1
    st.thi[th, TI_IFBYTES] += bs
    slat = st.thf[th, TF_SLAT]
    if slat > 0.0:
        t = st.thf[th, TF_CPUFREE]
        if t < now:
            t = now
        t += slat
        st.thf[th, TF_CPUFREE] = t
        schedule(st, now + (t - now), EV_SUBMIT, th, r)
    else:
        device_submit(st, d, r, now)
    return True


@njit(cache=True, _nrt=False)
def _t_fill(st, th, now):
    while st.thi[th, TI_INFL] < st.thi[th, TI_DEPTH]:
        if not _t_issue(st, th, now):
            return


@njit(cache=True, _nrt=False)
def _t_pump(st, th, now):
    """JobThread._pump (open loop): issue waiting arrivals while slots are free."""
    while st.thi[th, TI_BACKLOG] > 0 and st.thi[th, TI_INFL] < st.thi[th, TI_DEPTH]:
        if not _t_issue(st, th, now):
            return
        st.thi[th, TI_BACKLOG] -= 1


@njit(cache=True, _nrt=False)
def _t_refill(st, th, now):
    if st.thi[th, TI_RATE] != 0:
        _t_pump(st, th, now)
    else:
        _t_fill(st, th, now)


@njit(cache=True, _nrt=False)
def _t_arrive(st, th, t, now):
    """JobThread._arrive / _on_arrival_now: schedule arrivals (those already due are taken now)."""
    while True:
        if t >= st.thf[th, TF_TSTOP]:
            if st.thi[th, TI_STOPSCHED] == 0:
                st.thi[th, TI_STOPSCHED] = 1
                schedule(st, now + (st.thf[th, TF_TSTOP] - now), EV_TIMESTOP, th, 0)
            return
        if t > now:
            st.thf[th, TF_NEXTARR] = t
            schedule(st, now + (t - now), EV_ARRIVAL, th, 0)
            return
        t = _t_arrival_now(st, th, t)


@njit(cache=True, _nrt=False)
def _t_arrival_now(st, th, t):
    """An arrival at t joins the backlog; returns the due time of the next one."""
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
def _t_on_arrival(st, th, now):
    if st.thi[th, TI_DONE] != 0 or st.thi[th, TI_ISSUING] == 0:
        return
    t_next = _t_arrival_now(st, th, st.thf[th, TF_NEXTARR])
    _t_arrive(st, th, t_next, now)
    _t_pump(st, th, now)
    if st.thi[th, TI_ISSUING] == 0 and st.thi[th, TI_INFL] == 0:
        _t_finish(st, th, now)


@njit(cache=True, _nrt=False)
def _t_on_time_stop(st, th, now):
    if st.thi[th, TI_DONE] != 0:
        return
    _t_stop(st, th)
    if st.thi[th, TI_INFL] == 0:
        _t_finish(st, th, now)


@njit(cache=True, _nrt=False)
def _t_ramp_end(st, th, now):
    if st.thi[th, TI_DONE] != 0:
        return
    st.thi[th, TI_LIMON] = 1
    d = st.thi[th, TI_DEV]
    # the runner's rule: without a ramp only the first job to start on a device restarts its counters
    if st.thf[th, TF_RAMP] > 0.0 or st.dvi[d, 2] == 0:
        reset_device_stats(st, d, now)
    st.dvi[d, 2] = 1


@njit(cache=True, _nrt=False)
def _t_begin(st, th, now):
    st.thf[th, TF_T0] = now
    trec = now + st.thf[th, TF_RAMP]
    st.thf[th, TF_TREC] = trec
    st.thf[th, TF_TSTOP] = trec + st.thf[th, TF_RUNTIME]
    st.thf[th, TF_CPUFREE] = now
    st.thi[th, TI_ISSUING] = 1
    if st.thf[th, TF_RAMP] > 0.0:
        schedule(st, trec, EV_RAMP, th, 0)
    else:
        _t_ramp_end(st, th, now)
    if st.thi[th, TI_RATE] == 0:
        _t_fill(st, th, now)
    else:
        _t_arrive(st, th, now, now)
        _t_pump(st, th, now)
    if st.thi[th, TI_ISSUING] == 0 and st.thi[th, TI_INFL] == 0 and st.thi[th, TI_DONE] == 0:
        _t_finish(st, th, now)


@njit(cache=True, _nrt=False)
def _t_done(st, r, now):
    """JobThread._on_done: record, free the request, refill."""
    th = st.rqi[r, RI_THR]
    st.thi[th, TI_INFL] -= 1
    size = st.rqi[r, RI_SIZE]
    st.thi[th, TI_IFBYTES] -= size
    if now >= st.thf[th, TF_TREC]:
        st.thi[th, TI_CIOS] += 1
        st.thi[th, TI_CBYTES] += size
        if st.thi[th, TI_RECORD] != 0:
            n = st.gi[GI_LOGN]
            ts = st.rqf[r, RF_TSUB]
            lg = st.lg
            lg[n, 0] = st.rqi[r, RI_OP]
            lg[n, 1] = now
            lg[n, 2] = ts - st.rqf[r, RF_TISSUE]
            lg[n, 3] = now - ts
            lg[n, 4] = size
            st.lgt[n] = th
            st.gi[GI_LOGN] = n + 1
            if n + 2 >= lg.shape[0]:
                st.gi[GI_LOW] = 1
    st.rfree[st.gi[GI_FREE]] = r
    st.gi[GI_FREE] += 1
    if st.thi[th, TI_ISSUING] != 0:
        _t_refill(st, th, now)
    if st.thi[th, TI_INFL] == 0 and st.thi[th, TI_ISSUING] == 0 and st.thi[th, TI_DONE] == 0:
        _t_finish(st, th, now)


# =============================================================================== the loop
@njit(cache=True, _nrt=False)
def start_threads(st):
    """Workload.start: every thread begins now (or after its startdelay), in thread order."""
    now = st.gf[GF_NOW]
    for th in range(st.thi.shape[0]):
        delay = st.thf[th, TF_DELAY]
        if delay > 0.0:
            schedule(st, now + delay, EV_BEGIN, th, 0)
        else:
            _t_begin(st, th, now)


@njit(cache=True, _nrt=False)
def run_until(st, t_limit):
    """Process events with time <= t_limit. Returns a status ``ST_*``."""
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
        _pop(st)
        st.gf[GF_NOW] = t
        gi[GI_EVENTS] += 1
        if kind == EV_DONE:
            _device_finish(st, tg, arg, t)
            _t_done(st, arg, t)
        elif kind == EV_SUBMIT:
            device_submit(st, st.rqi[arg, RI_DEV], arg, t)
        elif kind == EV_MECHFREE:
            h = st.dvi[tg, 1]
            st.hi[h, HI_BUSY] = 0
            _h_pump(st, tg, h, t)
        elif kind == EV_DESTAGE:
            _h_destage_done(st, tg, st.dvi[tg, 1], arg, t)
        elif kind == EV_RAMP:
            _t_ramp_end(st, tg, t)
        elif kind == EV_ARRIVAL:
            _t_on_arrival(st, tg, t)
        elif kind == EV_TIMESTOP:
            _t_on_time_stop(st, tg, t)
        elif kind == EV_BEGIN:
            _t_begin(st, tg, t)

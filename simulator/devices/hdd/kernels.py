"""numba kernels of the HDD model: LBA -> (cylinder, head, angle), seek curves, rotation, the
SPTF/FIFO choice among queued commands and the service time of the chosen one.

Everything here works on plain numpy arrays so one compiled call does a whole dispatch:

* ``zt`` zone table, float64 ``[n_zones, 6]``: first LBA, end LBA (exclusive), first cylinder,
  sectors per track, cylinders in the zone, index of the zone's first track in LBA order.
  Integers are exact in float64 up to 2**53.
* ``par`` scalar parameters, mechanism state, statistics and read-ahead state, float64
  (indices ``P_*``, ``ST_*``, ``A_*``, ``PF_*`` below).
* ``sk`` seek curves, float64 ``[2, 8]``: row 0 reads, row 1 writes; columns ``S_*`` below.
  ``tt`` the measured table ``[2, k]`` (stroke fraction; seconds) for the table model.
* ``et`` the firmware's coarse seek table, float64 ``[3, nb]``: upper edge of each cylinder-distance
  bin; estimated read seek; estimated write seek (the curve at the bin's upper edge).
* ``cq`` the candidate set, float64 ``[capacity, NCOL]``, rows ``0..n-1`` valid, columns ``C_*``.
* ``seg`` the read cache segments ``[n_segments, 3]``: first sector, end sector, time valid from.

Angles are fractions of a revolution in [0, 1). The platter's angle under the heads at absolute
simulated time t is ``(phase + t / T) mod 1`` with T the revolution time.

The kernels the drive and the compiled core call per command allocate nothing and are compiled
without numba's reference counting (``_nrt=False``): with it, every array an inlined helper
receives was counted up and down around each use (``choose`` made 4-5 atomic ``NRT_incref`` /
``NRT_decref`` calls per scored candidate). Only ``seek_curve`` and ``locate_many`` return arrays.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# ---- par indices
P_HEADS = 0
P_T = 1  # revolution time, s
P_PHASE = 2  # spindle angle at t=0, rev
P_TSKEW = 3  # track (head) skew, rev
P_CSKEW = 4  # cylinder skew, rev
P_HSR = 5  # head switch, read, s
P_HSW = 6  # head switch, write, s
P_NCYL = 7
P_POLICY = 8  # 0 fifo, 1 sptf
P_MAXAGE = 9  # s; <= 0 disables
P_MAXSKIP = 10  # <= 0 disables
P_TOTAL = 11  # total sectors
P_LAYOUT = 12  # 0 cylinder-major, 1 serpentine (each zone laid surface by surface)
# mechanism state
ST_CYL = 13
ST_HEAD = 14
# accumulated statistics
A_SEEK = 15
A_ROT = 16
A_XFER = 17
A_OPS = 18
# read look-ahead: the read-ahead running after the last media read while the mechanism idles
PF_ON = 19
PF_LBA = 20  # first sector being read ahead
PF_T = 21  # time the read-ahead started (end of the media read)
PF_SEG = 22  # segment row it extends
PF_LIM = 23  # read-ahead stops here (sectors)
PF_RATE = 24  # sectors per second
P_RA = 25  # read-ahead limit, sectors
P_SEGNEXT = 26  # next segment row to overwrite (ring)
P_LA = 27  # 1 = look-ahead cache on
P_RPS = 28  # revolutions per second (1 / P_T)
P_AGEW = 29  # aged SPTF weight W: key = positioning time - W * time waited
P_PHYS = 30  # logical sectors per physical sector (8 for 512e)
P_RMW = 31  # revolutions added to a media write that covers a physical sector only in part
# firmware reordering (rotational position ordering as drives do it)
P_WIN = 32  # look-ahead window: oldest host commands scored per decision; <= 0 = all (ideal)
P_EST = 33  # 0 = exact positioning estimate (ideal), 1 = firmware seek table (``et``) rounded up, 2 = interpolated
P_MARGIN = 34  # guard band added to an estimated move (seek or head switch) before the rotational estimate, s
P_DCOST = 35  # firmware time per reordering decision among >= 2 candidates, s
ST_SCORED = 36  # candidates scored by the last choose() (state)
A_DEC = 37  # accumulated decision time, s
P_WV = 38  # revolutions added to every media write (read-after-write verification)
# cache.persistent_readback: a non-volatile cache kept on the platter is read back before destage
P_RBS = 39  # sectors of the cache's log read per read-back (0 = the cache's data is not on the platter)
P_RBCYL = 40  # cylinder of the cache's region
P_RBSPT = 41  # sectors per track there
ST_RB = 42  # sectors read back and not yet written home (state)
ST_RBPTR = 43  # sectors of the log read so far: its read pointer (its angle) (state)
A_RB = 44  # accumulated read-back time, s
A_RBN = 45  # read-backs
NPAR = 46
A_RESET = (A_SEEK, A_ROT, A_XFER, A_OPS, A_DEC, A_RB, A_RBN)  # the statistics a ramp's end resets

# ---- seek row columns
S_MODE = 0  # 0 three-point, 1 Ruemmler-Wilkes, 2 table
S_A = 1
S_B = 2
S_C = 3
S_E = 4
S_BOUND = 5  # RW boundary in cylinders
S_ADD = 6  # constant added to every d>0 seek (settle)
S_N = 7  # normalising number of cylinders
NSEEK = 8

# ---- candidate columns
C_LBA = 0
C_NS = 1
C_W = 2  # 1 = write
C_T = 3  # time the command entered the drive queue
C_SEQ = 4  # arrival order (FIFO and aging tie-break)
C_SKIP = 5  # times passed over
C_CYL = 6
C_HEAD = 7
C_ANG = 8
C_KIND = 9  # 0 host command, 1 destage of dirty cache data
C_READY = 10  # earliest time the mechanism may start on it (command decoded), s
C_LINKW = 11  # host->drive data transfer that must finish before media write, s
NCOL = 12

_EPS_REV = 1e-9  # a target this close *behind* the head counts as "now" (float round-off)


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def zone_of(lba, zt):
    lo = 0
    hi = zt.shape[0] - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if zt[mid, 0] <= lba:
            lo = mid
        else:
            hi = mid - 1
    return lo


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def track_offset(cyl, head, par):
    """Angle of sector 0 of track (cyl, head): accumulated track and cylinder skew."""
    heads = par[P_HEADS]
    off = cyl * ((heads - 1.0) * par[P_TSKEW] + par[P_CSKEW]) + head * par[P_TSKEW]
    return off - np.floor(off)


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def locate(lba, zt, par):
    """(cylinder, head, sector in track, sectors per track, start angle) of an LBA.

    Cylinder-major layout: a zone's tracks go head 0..H-1 on a cylinder, then the next cylinder.
    Serpentine layout: a zone is laid on head 0 from its outer to its inner cylinder, then on head 1
    back outwards, and so on; a head change happens once per surface per zone.
    """
    z = zone_of(lba, zt)
    spt = zt[z, 3]
    heads = par[P_HEADS]
    rel = lba - zt[z, 0]
    trk = np.floor(rel / spt)
    sector = rel - trk * spt
    if par[P_LAYOUT] == 0.0:
        tc = np.floor(trk / heads)
        cyl = zt[z, 2] + tc
        head = trk - tc * heads
        off = track_offset(cyl, head, par)
    else:
        zc = zt[z, 4]
        head = np.floor(trk / zc)
        t = trk - head * zc
        if head - 2.0 * np.floor(head / 2.0) == 0.0:
            cyl = zt[z, 2] + t
        else:
            cyl = zt[z, 2] + zc - 1.0 - t
        g = zt[z, 5] + trk
        off = g * par[P_CSKEW] + (z * (heads - 1.0) + head) * (par[P_TSKEW] - par[P_CSKEW])
    a = off + sector / spt
    a -= np.floor(a)
    return cyl, head, sector, spt, a


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def seek_time(d, w, sk, tt):
    """Seek time for a move of ``d`` cylinders (d >= 1); w = 0 read, 1 write."""
    if d <= 0:
        return 0.0
    m = sk[w, S_MODE]
    if m == 0.0:
        x = d - 1.0
        t = sk[w, S_A] + sk[w, S_B] * x + sk[w, S_C] * math.sqrt(x)
    elif m == 1.0:
        x = d / sk[w, S_N]
        if d < sk[w, S_BOUND]:
            t = sk[w, S_A] + sk[w, S_B] * math.sqrt(x)
        else:
            t = sk[w, S_C] + sk[w, S_E] * x
    else:
        t = _interp(d / sk[w, S_N], tt)
    return t + sk[w, S_ADD]


@njit(cache=True, error_model="numpy", _nrt=False)
def _interp(x, tt):
    """Linear interpolation in the table tt[0] -> tt[1] (clamped at the ends); no array views,
    so the caller stays allocation-free."""
    k = tt.shape[1]
    if x <= tt[0, 0]:
        return tt[1, 0]
    if x >= tt[0, k - 1]:
        return tt[1, k - 1]
    lo = 0
    hi = k - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if tt[0, mid] <= x:
            lo = mid
        else:
            hi = mid
    f = (x - tt[0, lo]) / (tt[0, hi] - tt[0, lo])
    return tt[1, lo] + f * (tt[1, hi] - tt[1, lo])


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def move_time(cur_cyl, cur_head, cyl, head, w, par, sk, tt):
    d = abs(cyl - cur_cyl)
    if d == 0.0:
        if head == cur_head:
            return 0.0
        return par[P_HSW] if w else par[P_HSR]
    return seek_time(d, w, sk, tt)


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def rot_wait(t, angle, par):
    """Seconds from absolute time t until ``angle`` is under the head."""
    delta = angle - par[P_PHASE] - t * par[P_RPS]
    delta -= np.floor(delta)
    if delta > 1.0 - _EPS_REV:
        delta = 0.0
    return delta * par[P_T]


@njit(cache=True, error_model="numpy", _nrt=False)
def transfer_end(t, lba, ns, w, zt, par, sk, tt):
    """Media transfer of ``ns`` sectors from ``lba`` starting at time t with the head on the first
    sector; follows head/cylinder switches with skew. Moves the head (par ST_*) to the last track;
    returns (end time, sectors per track of the last track)."""
    cyl, head, sector, spt, _a = locate(lba, zt, par)
    rem = ns
    T = par[P_T]
    while True:
        k = spt - sector
        if k > rem:
            k = rem
        t += k / spt * T
        rem -= k
        if rem <= 0.0:
            break
        lba += k
        ncyl, nhead, nsector, nspt, na = locate(lba, zt, par)
        t += move_time(cyl, head, ncyl, nhead, w, par, sk, tt)
        t += rot_wait(t, na, par)
        cyl = ncyl
        head = nhead
        sector = nsector
        spt = nspt
    par[ST_CYL] = cyl
    par[ST_HEAD] = head
    return t, spt


@njit(cache=True, error_model="numpy", _nrt=False)
def seg_hit(now, lba, end, seg, par):
    """True if sectors [lba, end) are in the read cache at time ``now`` (a finished segment, or
    the part of the running read-ahead already read)."""
    for j in range(seg.shape[0]):
        if seg[j, 0] <= lba and end <= seg[j, 1] and seg[j, 2] <= now:
            return True
    if par[PF_ON] != 0.0 and par[PF_T] <= now:
        j = int(par[PF_SEG])
        if seg[j, 0] <= lba:
            got = np.floor((now - par[PF_T]) * par[PF_RATE])
            lim = par[PF_LIM] - par[PF_LBA]
            if got > lim:
                got = lim
            if end <= par[PF_LBA] + got:
                return True
    return False


@njit(cache=True, error_model="numpy", _nrt=False)
def enqueue(cq, n, lba, ns, w, t, seq, kind, ready, linkw, zt, par):
    """Write row n of the candidate set (the caller grows n)."""
    cyl, head, _sector, _spt, a = locate(lba, zt, par)
    cq[n, C_LBA] = lba
    cq[n, C_NS] = ns
    cq[n, C_W] = w
    cq[n, C_T] = t
    cq[n, C_SEQ] = seq
    cq[n, C_SKIP] = 0.0
    cq[n, C_CYL] = cyl
    cq[n, C_HEAD] = head
    cq[n, C_ANG] = a
    cq[n, C_KIND] = kind
    cq[n, C_READY] = ready
    cq[n, C_LINKW] = linkw


@njit(cache=True, error_model="numpy", _nrt=False)
def admit_read(cq, n, lba, ns, t, seq, ready, zt, par, seg):
    """A host read arrives: 1 if the read cache has it (nothing queued), else queue it as row n
    and return 0."""
    if par[P_LA] != 0.0 and seg_hit(t, lba, lba + ns, seg, par):
        return 1
    enqueue(cq, n, lba, ns, 0.0, t, seq, 0.0, ready, 0.0, zt, par)
    return 0


@njit(cache=True, error_model="numpy", _nrt=False)
def invalidate(lba, end, seg, par):
    """A write (or trim) of [lba, end): drop overlapping read cache segments, stop read-ahead."""
    for j in range(seg.shape[0]):
        if seg[j, 0] < end and lba < seg[j, 1]:
            seg[j, 0] = -1.0
            seg[j, 1] = -1.0
            if par[PF_ON] != 0.0 and j == int(par[PF_SEG]):
                par[PF_ON] = 0.0
    if par[PF_ON] != 0.0 and lba < par[PF_LIM] and end > par[PF_LBA]:
        if lba <= par[PF_LBA]:
            par[PF_ON] = 0.0
        else:
            par[PF_LIM] = lba


@njit(cache=True, error_model="numpy", _nrt=False)
def seg_put(lba, end, t, seg, par):
    """Data [lba, end) is in the buffer from time t on (a cached write): take the next ring
    segment for it (not the one a running read-ahead extends)."""
    n = seg.shape[0]
    j = int(par[P_SEGNEXT])
    if par[PF_ON] != 0.0 and j == int(par[PF_SEG]) and n > 1:
        j = (j + 1) % n
    seg[j, 0] = lba
    seg[j, 1] = end
    seg[j, 2] = t
    par[P_SEGNEXT] = (j + 1) % n


@njit(cache=True, error_model="numpy", _nrt=False)
def finalize_readahead(now, seg, par):
    """The mechanism leaves the read-ahead at ``now``: the segment keeps what was read."""
    if par[PF_ON] == 0.0:
        return
    par[PF_ON] = 0.0
    if now > par[PF_T]:
        got = np.floor((now - par[PF_T]) * par[PF_RATE])
        lim = par[PF_LIM] - par[PF_LBA]
        if got > lim:
            got = lim
        j = int(par[PF_SEG])
        if par[PF_LBA] + got > seg[j, 1]:
            seg[j, 1] = par[PF_LBA] + got


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def position_time(now, i, cq, par, sk, tt):
    """(time data transfer can start, seek part, rotational part) for candidate i from now.

    The mechanism starts at max(now, t_ready); a write's data crosses the link from t_ready on
    (overlapping the seek and, for a queued command, the mechanism's earlier work)."""
    t0 = cq[i, C_READY]
    if t0 < now:
        t0 = now
    w = 1 if cq[i, C_W] != 0.0 else 0
    s = move_time(par[ST_CYL], par[ST_HEAD], cq[i, C_CYL], cq[i, C_HEAD], w, par, sk, tt)
    ts = t0 + s
    dr = cq[i, C_READY] + cq[i, C_LINKW]
    if dr > ts:
        ts = dr
    r = rot_wait(ts, cq[i, C_ANG], par)
    return ts + r, s, r


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def est_move(cur_cyl, cur_head, cyl, head, w, par, et):
    """The firmware's estimate of a move: head switch, or the seek from its table. The bin is the
    first whose edge is >= the distance; row 3 of ``et`` gives the first bin of the distance's
    bucket, so finding it takes no search (``drive._seek_table`` describes the layout). ``P_EST`` 1
    (table): the seek at the bin's upper edge (rounded up: the table never promises a seek the arm
    cannot make, and overstates every seek inside a bin by up to the bin's width); ``P_EST`` 2
    (profile): linear between the two sampled distances around ``d`` (a seek profile read by
    interpolation: within a fraction of a percent of the curve; the guard band covers the rest).
    Written with selects where it can (it runs for every queued command at every decision)."""
    d = abs(cyl - cur_cyl)
    lo = int(et[3, 1 + (int(d) >> int(et[3, 0]))])
    while et[0, lo] < d:
        lo += 1
    v = et[1 + w, lo]
    if par[P_EST] == 2.0 and lo > 0 and d < et[0, lo]:
        e0 = et[0, lo - 1]
        v = et[1 + w, lo - 1] + (d - e0) / (et[0, lo] - e0) * (et[1 + w, lo] - et[1 + w, lo - 1])
    hs = par[P_HSW] if w else par[P_HSR]
    v = hs if d == 0.0 else v
    return 0.0 if (d == 0.0 and head == cur_head) else v


@njit(cache=True, error_model="numpy", _nrt=False)
def _window_seq(n, cq, win, mode):
    """Highest arrival number among the ``win`` oldest host commands (1e300 if all fit)."""
    if win <= 0.0 or mode == 2:
        return 1e300
    nh = 0
    for i in range(n):
        if cq[i, C_KIND] == 0.0:
            nh += 1
    k = int(win)
    if nh <= k:
        return 1e300
    # the k-th smallest arrival number, without allocating (callable from the compiled core)
    last = -1e300
    for _ in range(k):
        m = 1e300
        for i in range(n):
            if cq[i, C_KIND] == 0.0:
                s = cq[i, C_SEQ]
                if last < s < m:
                    m = s
        last = m
    return last


@njit(cache=True, error_model="numpy", _nrt=False)
def choose(now, n, cq, par, sk, tt, mode, et):
    """Index of the next candidate. mode 0: any, 1: host commands only, 2: destage only.

    Aging guard first: a host command passed over more than max_skips times goes next (the
    oldest such); host commands older than max_age go before all others (SPTF among them, so a
    burst of overdue commands does not collapse the drive to FIFO order). Then FIFO (lowest seq)
    or rotational position ordering: earliest start of data transfer (seek + rotational delay
    from the platter's real angle now). Firmware limits (``P_WIN``, ``P_EST``, ``P_MARGIN``): only
    the ``P_WIN`` oldest host commands are scored, the seek is the coarse table's estimate plus a
    guard band, and the rotational delay is computed from that estimated arrival. Destage rows are
    scored as before (their own window). Returns -1 if nothing is eligible; ``par[ST_SCORED]`` says
    how many candidates were scored.
    """
    maxage = par[P_MAXAGE]
    maxskip = par[P_MAXSKIP]
    best = -1
    bseq = 1e300
    n_over = 0
    scored = 0
    if maxskip > 0.0 and mode != 2:
        for i in range(n):
            if cq[i, C_KIND] == 0.0 and cq[i, C_SKIP] > maxskip and cq[i, C_SEQ] < bseq:
                bseq = cq[i, C_SEQ]
                best = i
    if best < 0 and maxage > 0.0 and mode != 2:
        for i in range(n):
            if cq[i, C_KIND] == 0.0 and now - cq[i, C_T] > maxage:
                n_over += 1
    if best < 0:
        if par[P_POLICY] == 0.0:
            for i in range(n):
                kind = cq[i, C_KIND]
                if (mode == 1 and kind != 0.0) or (mode == 2 and kind == 0.0):
                    continue
                if cq[i, C_SEQ] < bseq:
                    bseq = cq[i, C_SEQ]
                    best = i
        else:
            btime = 1e300
            cc = par[ST_CYL]
            ch = par[ST_HEAD]
            agew = par[P_AGEW]
            wseq = _window_seq(n, cq, par[P_WIN], mode)
            est = par[P_EST] != 0.0
            margin = par[P_MARGIN]
            dcost = par[P_DCOST] if n > 1 else 0.0
            # every candidate is scored in full, with selects rather than branches (a data-dependent
            # early exit mispredicted more than the rotational delay it saved)
            tmv = now + dcost  # the firmware counts its own decision time before a move
            plain = mode == 0 and n_over == 0 and wseq >= 1e300 and agew <= 0.0
            if plain:  # the common case: every row is scored, no aging weight (same arithmetic)
                for i in range(n):
                    cyl = cq[i, C_CYL]
                    head = cq[i, C_HEAD]
                    rdy = cq[i, C_READY]
                    tn = tmv if (dcost > 0.0) & ((cyl != cc) | (head != ch)) else now
                    t0 = tn if rdy < tn else rdy
                    w = 1 if cq[i, C_W] != 0.0 else 0
                    if est:
                        mv = est_move(cc, ch, cyl, head, w, par, et)
                        ts = t0 + (mv + margin if mv > 0.0 else 0.0)
                    else:
                        ts = t0 + move_time(cc, ch, cyl, head, w, par, sk, tt)
                    dr = rdy + cq[i, C_LINKW]
                    ts = dr if dr > ts else ts
                    ts += rot_wait(ts, cq[i, C_ANG], par)
                    seq = cq[i, C_SEQ]
                    better = (ts < btime) | ((ts == btime) & (seq < bseq))
                    btime = ts if better else btime
                    bseq = seq if better else bseq
                    best = i if better else best
                scored = n
            for i in range(0 if plain else n):
                kind = cq[i, C_KIND]
                if (mode == 1 and kind != 0.0) or (mode == 2 and kind == 0.0):
                    continue
                if n_over > 0 and (kind != 0.0 or now - cq[i, C_T] <= maxage):
                    continue  # overdue host commands first
                if kind == 0.0 and cq[i, C_SEQ] > wseq:
                    continue  # beyond the firmware's look-ahead window
                scored += 1
                cyl = cq[i, C_CYL]
                head = cq[i, C_HEAD]
                rdy = cq[i, C_READY]
                tn = tmv if (dcost > 0.0 and (cyl != cc or head != ch)) else now
                t0 = tn if rdy < tn else rdy
                w = 1 if cq[i, C_W] != 0.0 else 0
                if est:
                    mv = est_move(cc, ch, cyl, head, w, par, et)
                    ts = t0 + (mv + margin if mv > 0.0 else 0.0)  # no guard band without a move
                else:
                    ts = t0 + move_time(cc, ch, cyl, head, w, par, sk, tt)
                dr = rdy + cq[i, C_LINKW]
                ts = dr if dr > ts else ts
                bonus = agew * (now - cq[i, C_T]) if (agew > 0.0 and kind == 0.0) else 0.0
                ts += rot_wait(ts, cq[i, C_ANG], par) - bonus
                seq = cq[i, C_SEQ]
                better = ts < btime or (ts == btime and seq < bseq)
                btime = ts if better else btime
                bseq = seq if better else bseq
                best = i if better else best
    if best >= 0 and maxskip > 0.0:
        for i in range(n):
            if i != best and cq[i, C_KIND] == 0.0:
                cq[i, C_SKIP] += 1.0
    par[ST_SCORED] = scored
    return best


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def region_move(now, setup, w, cyl, ang, par, sk, tt):
    """The arm moves to cylinder ``cyl`` (head 0) of an on-platter cache region (w = 1 write, 0 read
    seek) while the firmware sets the operation up (``setup``, s), then waits for angle ``ang`` (the
    region's log pointer) to come under the head: a media cache's append
    (``wcache_kernels.mc_append_start``) and a persistent cache's read-back (``readback``). Moves the
    head and counts the seek, rotation and operation; returns (set-up or seek, rotational wait), s."""
    dist = abs(par[ST_CYL] - cyl)
    seek = seek_time(dist, w, sk, tt) if dist > 0 else 0.0
    pre = max(seek, setup)
    rot = rot_wait(now + pre, ang, par)
    par[ST_CYL] = cyl
    par[ST_HEAD] = 0.0
    par[A_SEEK] += seek
    par[A_ROT] += rot
    par[A_OPS] += 1.0
    return pre, rot


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def readback(now, ns, par, sk, tt):
    """``cache.persistent_readback``: the destage of ``ns`` sectors from a non-volatile cache kept on
    the platter needs its data read back first. The sectors read back and not yet written home
    (``ST_RB``) cover it, or the mechanism reads the next max(batch, missing) sectors of the cache's
    log: a seek to the region, the wait for the log's read pointer, a sequential transfer at the
    region's sustained rate (track switches with skew, as the read-ahead). The model charges the
    reads, not which blocks they hold: the window's reordering chooses among all extents. Moves the
    head to the region; returns the time the read-back ends (``now`` if nothing was read)."""
    left = par[ST_RB] - ns
    if left >= 0.0:
        par[ST_RB] = left
        return now
    n = par[P_RBS]
    if n < -left:
        n = -left
    spt = par[P_RBSPT]
    ptr = par[ST_RBPTR]
    seek, rot = region_move(now, 0.0, 0, par[P_RBCYL], (ptr - spt * np.floor(ptr / spt)) / spt, par, sk, tt)
    sw = par[P_CSKEW] if par[P_LAYOUT] != 0.0 else par[P_TSKEW]
    xfer = n * par[P_T] * (1.0 + sw) / spt
    par[ST_RBPTR] = ptr + n
    par[ST_RB] = n + left
    par[A_XFER] += xfer
    par[A_RB] += seek + rot + xfer
    par[A_RBN] += 1.0
    return now + seek + rot + xfer


@njit(cache=True, error_model="numpy", _nrt=False)
def dispatch(now, n, cq, zt, par, sk, tt, seg, mode, et):
    """The mechanism is free at ``now``: end the read-ahead, choose the next candidate, compute its
    whole service (a destage from a cache kept on the platter first reads its data back:
    ``readback``), move the head, remove its row (the last row moves into its place), start the
    read-ahead bookkeeping if it is a read.

    Returns (index, kind, t_ready, t_xfer_start, t_end) with absolute times; index -1 if nothing
    is eligible.
    """
    finalize_readahead(now, seg, par)
    i = choose(now, n, cq, par, sk, tt, mode, et)
    if i < 0:
        return -1, 0, now, now, now
    if par[P_DCOST] > 0.0 and par[ST_SCORED] > 1.0 and (cq[i, C_CYL] != par[ST_CYL] or cq[i, C_HEAD] != par[ST_HEAD]):
        # the firmware's reordering decision delays the start of the move (a continuation on the
        # track under the head streams on: firmware detects it while the previous transfer runs)
        now = now + par[P_DCOST]
        par[A_DEC] += par[P_DCOST]
    if par[P_RBS] > 0.0 and cq[i, C_KIND] != 0.0:
        now = readback(now, cq[i, C_NS], par, sk, tt)
    xs, s, r = position_time(now, i, cq, par, sk, tt)
    t0 = cq[i, C_READY]
    if t0 < now:
        t0 = now
    w = 1 if cq[i, C_W] != 0.0 else 0
    kind = int(cq[i, C_KIND])
    lba = cq[i, C_LBA]
    ns = cq[i, C_NS]
    tend, spt = transfer_end(xs, lba, ns, w, zt, par, sk, tt)
    if w == 1 and par[P_PHYS] > 1.0:
        ph = par[P_PHYS]
        if lba - ph * np.floor(lba / ph) != 0.0 or (lba + ns) - ph * np.floor((lba + ns) / ph) != 0.0:
            tend += par[P_RMW] * par[P_T]  # read the partial physical sector(s), write on a later pass
    if w == 1 and par[P_WV] > 0.0:
        tend += par[P_WV] * par[P_T]  # the written sectors are read back on the next pass(es)
    par[A_SEEK] += s
    par[A_ROT] += r
    par[A_XFER] += tend - xs
    par[A_OPS] += 1.0
    if w == 0 and par[P_LA] != 0.0:
        j = int(par[P_SEGNEXT])
        seg[j, 0] = lba
        seg[j, 1] = lba + ns
        seg[j, 2] = tend
        par[P_SEGNEXT] = (j + 1) % seg.shape[0]
        par[PF_ON] = 1.0
        par[PF_LBA] = lba + ns
        par[PF_T] = tend
        par[PF_SEG] = j
        lim = lba + ns + par[P_RA]
        if lim > par[P_TOTAL]:
            lim = par[P_TOTAL]
        par[PF_LIM] = lim
        # sustained read-ahead rate: one track per revolution plus the skew crossed per track
        sw = par[P_CSKEW] if par[P_LAYOUT] != 0.0 else par[P_TSKEW]
        par[PF_RATE] = spt / (par[P_T] * (1.0 + sw))
    last = n - 1
    if i != last:
        for c in range(NCOL):
            cq[i, c] = cq[last, c]
    return i, kind, t0, xs, tend


@njit(cache=True, error_model="numpy", _nrt=False)
def remove_row(cq, n, i):
    """Remove row i of n (the last row moves into its place)."""
    last = n - 1
    if i != last:
        for c in range(NCOL):
            cq[i, c] = cq[last, c]


@njit(cache=True, error_model="numpy", _nrt=False)
def find_read_in(cq, n, lo, hi):
    """Oldest queued host read lying wholly in [lo, hi) sectors, or -1."""
    best = -1
    bseq = 1e300
    for i in range(n):
        if cq[i, C_KIND] == 0.0 and cq[i, C_W] == 0.0:
            s = cq[i, C_LBA]
            if lo <= s and s + cq[i, C_NS] <= hi and cq[i, C_SEQ] < bseq:
                bseq = cq[i, C_SEQ]
                best = i
    return best


@njit(cache=True, error_model="numpy")
def seek_curve(ds, w, sk, tt):
    """Vectorised seek_time (for tests and plots)."""
    out = np.empty(ds.shape[0])
    for i in range(ds.shape[0]):
        out[i] = seek_time(ds[i], w, sk, tt)
    return out


@njit(cache=True, error_model="numpy")
def locate_many(lbas, zt, par):
    """Vectorised locate: array [n, 5] of (cyl, head, sector, spt, angle)."""
    out = np.empty((lbas.shape[0], 5))
    for i in range(lbas.shape[0]):
        c, h, s, spt, a = locate(lbas[i], zt, par)
        out[i, 0] = c
        out[i, 1] = h
        out[i, 2] = s
        out[i, 3] = spt
        out[i, 4] = a
    return out

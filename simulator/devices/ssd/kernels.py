"""The SSD's mechanism as numba kernels on typed arrays: the one implementation both engines run.

The Python device (:class:`simulator.devices.ssd.device.SSD`) and the compiled device core
(``simulator.core.loop``) hold an SSD's state in the arrays of an :data:`SSDState` and call these
kernels; neither has its own copy of a rule. A kernel never schedules anything itself: it appends
the events it wants (complete a request after a delay, a die transaction ends after a delay, a
metadata commit ends after a delay) to ``ev`` (``si[SI_NEV]`` rows, in the order the Python model
scheduled them), and the caller turns each into a SimPy event or a heap entry, in that order, so
both engines break ties the same way. Requests are rows of the state's request table: the caller
names a request by an integer (the core: its pool row; the Python device: a slot it hands out).

Semantics (durability, write pipeline, page assembly, TSU, forced flushes) are documented in
:mod:`simulator.devices.ssd.device`; the FTL's tables and transitions are :mod:`simulator.devices.ssd.ftl`'s
kernels, called here unchanged.

Lists (host FIFO, requests waiting for buffer space, flush waiters and the running flush's cohort)
are singly linked through ``rq[:, RQ_NEXT]`` (a request is in at most one at a time); die queues
are linked through ``tx[:, TX_NEXT]``; free pages and transactions are stacks linked through the
same columns, with their own encoding (:func:`_link_free`): a free row whose link is 0 is followed by the
next row, so that a table's never-used rows stay untouched zero pages (``lazy_zeros``: the compiled core
sizes 16 transactions per request in flight for every SSD, 13 MB per drive of which a run uses a start). A NAND page in DRAM (``pg`` row) lives while it is open, has programs outstanding or
a flush waiter still needs its program time (``PG_REFS``).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from simulator.devices.ssd.ftl import C_ERR, gc_until_free, map_host_slot, reserve_page, seal_page, trim_lpn

__all__ = ["SSDState", "make_state"]

# ---- event kinds a kernel asks for (``ev`` rows: kind, delay, argument)
EVK_DONE = 0  # complete request ``arg`` after ``delay``
EVK_DIE = 1  # the transaction batch of die ``arg`` ends after ``delay``
EVK_META = 2  # the forced flush's metadata commit ends after ``delay``

# ---- errors (``si[SI_ERR]``)
ERR_BIGWRITE = 1  # (no longer raised: a write larger than the buffer streams in)
ERR_FTL = 2  # the FTL ran out of free blocks (reservation or GC failed)
ERR_TXNS = 3  # the transaction table is full
ERR_PAGES = 4  # the page table is full
ERR_SCRATCH = 5  # a read spans more mapping units than the scratch row holds

#: each error in words (the Python SSD and the compiled cores report a kernel error with these)
ERROR_TEXT = {
    ERR_BIGWRITE: "a write larger than the write buffer",
    ERR_FTL: "the FTL has no free block (over-provisioning exhausted or no reclaimable block)",
    ERR_TXNS: "the transaction table is full",
    ERR_PAGES: "the page table is full",
    ERR_SCRATCH: "a read larger than the scratch row",
}

_READ, _WRITE, _TRIM, _FLUSH = 0, 1, 2, 3
_TREAD, _TPROG, _TGC = 0, 1, 2

# ---- scalar integers ``si``
SI_ERR = 0
SI_NEV = 1
SI_SLOTS_FREE = 2
SI_BL_HEAD = 3  # host FIFO (commands waiting for a slot)
SI_BL_TAIL = 4
SI_IN_DEV = 5
SI_BARRIER = 6  # a non-queued FLUSH holding back later commands, -1 none
SI_BW_HEAD = 7  # writes waiting for buffer space
SI_BW_TAIL = 8
SI_OPEN = 9  # the open page, -1 none
SI_RR = 10  # round-robin index over the plane order
SI_PROG_SEQ = 11
SI_OUTSTANDING = 12  # program transactions not completed
SI_FLUSHING = 13  # 1 = a forced flush runs (its cohort is CO)
SI_CO_HEAD = 14
SI_CO_TAIL = 15
SI_FW_HEAD = 16  # requests waiting for the next forced flush
SI_FW_TAIL = 17
SI_FLUSH_UPTO = 18
SI_FLUSH_PENDING = 19
SI_WRITE_SEQ = 20
SI_META_CLEAN = 21
SI_FLUSH_COVER = 22
SI_FORCED = 23  # forced flushes so far
SI_COMMITS = 24  # group commits (controller.ack_commit) so far
SI_BUF_FREE = 25  # bytes
SI_PG_FREE = 26  # free page stack (head)
SI_TX_FREE = 27  # free transaction stack (head)
SI_TX_NFREE = 28
SI_PG_NFREE = 29
SI_MU = 30  # configuration from here on
SI_SPPG = 31
SI_SPB = 32
SI_PPB = 33
SI_BITS = 34
SI_P = 35
SI_C = 36
SI_NOP = 37
SI_THR = 38
SI_MP = 39
SI_DUR_W = 40
SI_DUR_FUA = 41
SI_QFLUSH = 42
SI_HILN = 43
SI_FTLN = 44
SI_DIROUT = 45
SI_BUFSIZE = 46
SI_PAGESIZE = 47
SI_PPP = 48  # pages per plane
SI_NORDER = 49
NSI = 50

# ---- scalar floats ``sf``
SF_LINK = 0  # 2: link free from, per direction
SF_COMMIT_START = 2
SF_COMMIT_END = 3
SF_BE_FREE = 4
SF_T_BUSY0 = 5
SF_FLUSH_READY = 6
SF_OVH = 7  # configuration from here on
SF_LRATE = 8
SF_WLAT = 9
SF_FTLUPD = 10
SF_ACK = 11
SF_RLAT = 12
SF_FLLAT = 13
SF_MC = 14
SF_CHRATE = 15
SF_ERASE = 16
SF_TRMEAN = 17
SF_TPMEAN = 18
SF_BEBW = 19
SF_TR = 20  # 4: tR per page type
SF_TP = 24  # 4: tPROG of host programs per page type
SF_HIL = 28  # 64: HIL station, free-from time per core
SF_FTL = 92  # 64: FTL stage, free-from time per core
NSF = 156
MAX_CORES = 64

# ---- dies ``die`` (int) and ``dief`` (float)
DI_BUSY = 0
DI_RQH = 1
DI_RQT = 2
DI_WQH = 3
DI_WQT = 4
DI_NHELD = 5
DI_NBAT = 6
DI_HELD = 7  # planes_per_die columns of held programs, then planes_per_die of the running batch
DF_BUSY_S = 0
DF_CHAN = 1  # free-from time of channel = row (rows < channels)
NDF = 2

# ---- pages ``pg`` (int) and ``pgf`` (float)
PG_BASE = 0
PG_PLANE = 1
PG_DIE = 2
PG_FILLED = 3
PG_SUB = 4
PG_NPROG = 5
PG_SEALED = 6
PG_REFS = 7
PG_NEXT = 8
PG_LPN = 9  # slots_per_page columns: the LPN of each filled unit
PF_READY = 0
PF_PROG = 1
NPF = 2

# ---- transactions ``tx`` (int) and ``txf`` (float: ready)
TX_KIND = 0
TX_PLANE = 1
TX_PAGE = 2  # program: page row; read: request
TX_A = 3  # program: first unit; read: page type; GC: relocated slots
TX_B = 4  # program: units
TX_SEQ = 5
TX_NEXT = 6
NTX = 7

# ---- requests ``rq`` (int) and ``rqf`` (float)
RQ_OP = 0
RQ_OFF = 1
RQ_SIZE = 2
RQ_FUA = 3
RQ_NEXT = 4
RQ_PAGE = 5  # flush waiter: the page of its last unit, -1 none
RQ_LEFT = 6  # read: NAND pages not yet read; write: mapping units not yet in the buffer
NRQ = 7
QF_SERVICE = 0
QF_TNAND = 1
QF_TSTART = 2
QF_FRONT = 3
NQF = 4

#: the arrays of one SSD (the compiled core stacks each with a leading SSD axis)
SSDState = namedtuple(
    "SSDState",
    ["si", "sf", "die", "dief", "pg", "pgf", "tx", "txf", "rq", "rqf", "scr", "ev", "order", "dirty",
     "geo", "l2p", "p2l", "bvalid", "bstate", "berase", "free_stack", "free_top", "front", "cnt", "gcout"],
)  # fmt: skip


# =============================================================================== building
def _link_free(tab: np.ndarray, col: int, start: int, below: int = -1) -> None:
    """Chain rows ``start..`` of ``tab`` (zero in ``col``) into a free stack through ``col``, row ``start`` on top,
    the last row on ``below`` (a free row, or -1: the end). A free row's link is 0 for "the next row", 1 for the
    end and ``k + 2`` for row ``k`` (:func:`_free_next`), so that only the last row is written."""
    tab[tab.shape[0] - 1, col] = below + 2


@njit(cache=True, inline="always", _nrt=False)
def _free_next(tab, col, x):
    """The free row below free row ``x`` of a free stack (:func:`_link_free`), -1 at the end."""
    v = tab[x, col]
    return x + 1 if v == 0 else v - 2


def n_pages(cfg, n_req: int) -> int:
    """Page rows: one per buffered unit (each page in flight holds one), one per request that may wait
    for a flush holding a page, and the open page."""
    return cfg.controller.buffer_size // cfg.ftl.mapping_unit + n_req + 2


def n_events(cfg, n_req: int) -> int:
    return n_req + 2 * cfg.flash.dies + 16


def make_state(cfg, ftl, order: np.ndarray, rr: int, n_req: int, n_txn: int, n_scr: int) -> SSDState:
    """The state of a fresh SSD of configuration ``cfg`` whose FTL (its arrays are used, not copied)
    is ``ftl``; ``order`` the plane allocation order, ``rr`` the next round-robin index (after
    preconditioning); tables for ``n_req`` requests, ``n_txn`` transactions, reads of ``n_scr`` units."""
    from simulator.devices.ssd.config import BITS_PER_CELL

    f, ifc, ctl = cfg.flash, cfg.interface, cfg.controller
    if ifc.hil_cores > MAX_CORES or ctl.ftl_cores > MAX_CORES:
        raise ValueError(f"hil_cores / ftl_cores above {MAX_CORES}")
    P = f.planes_per_die
    si = np.zeros(NSI, np.int64)
    sf = np.zeros(NSF)
    si[SI_SLOTS_FREE] = ifc.slots
    for k in (SI_BL_HEAD, SI_BL_TAIL, SI_BARRIER, SI_BW_HEAD, SI_BW_TAIL, SI_OPEN, SI_CO_HEAD, SI_CO_TAIL,
              SI_FW_HEAD, SI_FW_TAIL, SI_FLUSH_UPTO):
        si[k] = -1
    si[SI_RR] = rr
    si[SI_BUF_FREE] = ctl.buffer_size
    si[SI_MU] = cfg.ftl.mapping_unit
    si[SI_SPPG] = cfg.slots_per_page
    si[SI_SPB] = cfg.slots_per_block
    si[SI_PPB] = f.pages_per_block
    bits = BITS_PER_CELL[f.cell]
    si[SI_BITS] = bits
    si[SI_P] = P
    si[SI_C] = f.channels
    si[SI_NOP] = f.nop
    si[SI_THR] = cfg.ftl.gc_threshold
    si[SI_MP] = 1 if (f.multiplane and P > 1) else 0
    si[SI_DUR_W] = 1 if ((not ctl.plp) and ctl.honours_flush and not ctl.write_cache) else 0
    si[SI_DUR_FUA] = 1 if ((not ctl.plp) and ctl.honours_flush) else 0
    si[SI_QFLUSH] = 1 if ifc.queued_flush else 0
    si[SI_HILN] = ifc.hil_cores
    si[SI_FTLN] = ctl.ftl_cores
    si[SI_DIROUT] = 1 if ifc.duplex else 0
    si[SI_BUFSIZE] = ctl.buffer_size
    si[SI_PAGESIZE] = f.page_size
    si[SI_PPP] = cfg.blocks_per_plane * f.pages_per_block
    si[SI_NORDER] = order.shape[0]
    sf[SF_OVH] = ifc.command_overhead
    sf[SF_LRATE] = ifc.link_rate
    sf[SF_WLAT] = ctl.write_latency
    sf[SF_FTLUPD] = ctl.ftl_update
    sf[SF_ACK] = ctl.ack_commit
    sf[SF_RLAT] = ctl.read_latency
    sf[SF_FLLAT] = ctl.flush_latency
    sf[SF_MC] = cfg.ftl.metadata_commit
    sf[SF_CHRATE] = f.channel_rate
    sf[SF_ERASE] = f.erase_latency
    tr = f.page_types("read_latency")
    tprog = f.page_types("program_latency")
    tph = [f.slc_program_latency] * bits if f.slc_cache else tprog
    sf[SF_TRMEAN] = sum(tr) / len(tr)
    sf[SF_TPMEAN] = sum(tprog) / len(tprog)
    sf[SF_BEBW] = ctl.write_bandwidth or 0.0
    for i in range(bits):
        sf[SF_TR + i] = tr[i]
        sf[SF_TP + i] = tph[i]
    nd = f.dies
    die = np.zeros((nd, DI_HELD + 2 * P), np.int64)
    die[:, DI_RQH : DI_WQT + 1] = -1
    dief = np.zeros((max(nd, f.channels), NDF))
    npg = n_pages(cfg, n_req)
    from simulator.core.lazy import lazy_zeros

    pg = lazy_zeros((npg, PG_LPN + cfg.slots_per_page), np.int64)
    _link_free(pg, PG_NEXT, 0)
    si[SI_PG_FREE] = 0
    si[SI_PG_NFREE] = npg
    tx = lazy_zeros((n_txn, NTX), np.int64)
    _link_free(tx, TX_NEXT, 0)
    si[SI_TX_FREE] = 0
    si[SI_TX_NFREE] = n_txn

    return SSDState(
        si=si, sf=sf, die=die, dief=dief, pg=pg, pgf=lazy_zeros((npg, NPF)), tx=tx, txf=lazy_zeros(n_txn),
        rq=lazy_zeros((n_req, NRQ), np.int64), rqf=lazy_zeros((n_req, NQF)), scr=np.zeros(n_scr, np.int64),
        ev=lazy_zeros((n_events(cfg, n_req), 3)), order=order, dirty=lazy_zeros(cfg.n_lpn, np.int32),
        geo=ftl.geo, l2p=ftl.l2p, p2l=ftl.p2l, bvalid=ftl.bvalid, bstate=ftl.bstate, berase=ftl.berase,
        free_stack=ftl.free_stack, free_top=ftl.free_top, front=ftl.front, cnt=ftl.cnt, gcout=ftl._gc_out,
    )  # fmt: skip


def grow(S: SSDState, cfg, n_req: int = 0, n_txn: int = 0, n_scr: int = 0) -> SSDState:
    """``S`` with larger request / transaction / scratch tables (the Python device grows them as its
    requests need; the compiled core sizes them once). Lists and stacks keep their links; the new rows of the
    page and transaction tables are untouched zero pages (:func:`_link_free`)."""
    from simulator.core.lazy import copy_touched_table, lazy_zeros

    def longer(a: np.ndarray, n: int) -> np.ndarray:  # (its pages in use only)
        out = lazy_zeros((n, *a.shape[1:]), a.dtype)
        copy_touched_table(out[: a.shape[0]], a)
        return out

    d = S._asdict()
    if n_req > S.rq.shape[0]:
        old = S.rq.shape[0]
        d["rq"] = longer(S.rq, n_req)
        d["rqf"] = longer(S.rqf, n_req)
        d["ev"] = longer(S.ev, n_events(cfg, n_req))
        npg0, npg = S.pg.shape[0], n_pages(cfg, n_req)
        pg = longer(S.pg, npg)
        _link_free(pg, PG_NEXT, npg0, S.si[SI_PG_FREE])
        S.si[SI_PG_FREE] = npg0
        S.si[SI_PG_NFREE] += npg - npg0
        d["pg"] = pg
        d["pgf"] = longer(S.pgf, npg)
    if n_txn > S.tx.shape[0]:
        old = S.tx.shape[0]
        tx = longer(S.tx, n_txn)
        _link_free(tx, TX_NEXT, old, S.si[SI_TX_FREE])
        S.si[SI_TX_FREE] = old
        S.si[SI_TX_NFREE] += n_txn - old
        d["tx"] = tx
        d["txf"] = longer(S.txf, n_txn)
    if n_scr > S.scr.shape[0]:
        d["scr"] = np.zeros(n_scr, np.int64)
    return SSDState(**d)


# =============================================================================== small helpers
@njit(cache=True, inline="always", _nrt=False)
def _emit(S, kind, delay, arg):
    n = S.si[SI_NEV]
    S.ev[n, 0] = kind
    S.ev[n, 1] = delay
    S.ev[n, 2] = arg
    S.si[SI_NEV] = n + 1


@njit(cache=True, _nrt=False)
def _serve(S, base, n, t, s):
    """A FIFO station of ``n`` servers computed ahead: the server that frees first takes a command
    arriving at ``t`` needing ``s``; returns the end of its service."""
    k = base
    f = S.sf[base]
    for i in range(base + 1, base + n):
        if S.sf[i] < f:
            f = S.sf[i]
            k = i
    e = (t if t > f else f) + s
    S.sf[k] = e
    return e


@njit(cache=True, inline="always", _nrt=False)
def _link(S, t, nbytes, direction):
    f = S.sf[SF_LINK + direction]
    s = t if t > f else f
    e = s + nbytes / S.sf[SF_LRATE]
    S.sf[SF_LINK + direction] = e
    return e


@njit(cache=True, inline="always", _nrt=False)
def _rq_append(S, head, tail, r):
    S.rq[r, RQ_NEXT] = -1
    t = S.si[tail]
    if t < 0:
        S.si[head] = r
    else:
        S.rq[t, RQ_NEXT] = r
    S.si[tail] = r


@njit(cache=True, inline="always", _nrt=False)
def _rq_popleft(S, head, tail):
    r = S.si[head]
    nx = S.rq[r, RQ_NEXT]
    S.si[head] = nx
    if nx < 0:
        S.si[tail] = -1
    return r


@njit(cache=True, inline="always", _nrt=False)
def _units(S, r):
    """First mapping unit and number of units of request ``r``."""
    mu = S.si[SI_MU]
    off = S.rq[r, RQ_OFF]
    size = S.rq[r, RQ_SIZE]
    first = off // mu
    if size <= 0:
        return first, 0
    return first, (off + size + mu - 1) // mu - first


@njit(cache=True, _nrt=False)
def _txn_new(S, kind, plane, ready, page, a, b, seq):
    x = S.si[SI_TX_FREE]
    if x < 0:
        S.si[SI_ERR] = ERR_TXNS
        return -1
    S.si[SI_TX_FREE] = _free_next(S.tx, TX_NEXT, x)
    S.si[SI_TX_NFREE] -= 1
    S.tx[x, TX_KIND] = kind
    S.tx[x, TX_PLANE] = plane
    S.tx[x, TX_PAGE] = page
    S.tx[x, TX_A] = a
    S.tx[x, TX_B] = b
    S.tx[x, TX_SEQ] = seq
    S.tx[x, TX_NEXT] = -1
    S.txf[x] = ready
    return x


@njit(cache=True, inline="always", _nrt=False)
def _txn_free(S, x):
    S.tx[x, TX_NEXT] = S.si[SI_TX_FREE] + 2  # (_link_free's encoding)
    S.si[SI_TX_FREE] = x
    S.si[SI_TX_NFREE] += 1


@njit(cache=True, inline="always", _nrt=False)
def _q_append(S, die, h, t, x):
    S.tx[x, TX_NEXT] = -1
    last = S.die[die, t]
    if last < 0:
        S.die[die, h] = x
    else:
        S.tx[last, TX_NEXT] = x
    S.die[die, t] = x


@njit(cache=True, inline="always", _nrt=False)
def _q_popleft(S, die, h, t):
    x = S.die[die, h]
    nx = S.tx[x, TX_NEXT]
    S.die[die, h] = nx
    if nx < 0:
        S.die[die, t] = -1
    return x


@njit(cache=True, inline="always", _nrt=False)
def _page_unref(S, p):
    S.pg[p, PG_REFS] -= 1
    if S.pg[p, PG_REFS] == 0 and S.pg[p, PG_SEALED] != 0:
        S.pg[p, PG_NEXT] = S.si[SI_PG_FREE] + 2  # (_link_free's encoding)
        S.si[SI_PG_FREE] = p
        S.si[SI_PG_NFREE] += 1


# =============================================================================== TSU / PHY
@njit(cache=True, _nrt=False)
def _enqueue(S, die, x, now):
    if S.tx[x, TX_KIND] == _TREAD:
        _q_append(S, die, DI_RQH, DI_RQT, x)
    else:
        _q_append(S, die, DI_WQH, DI_WQT, x)
    if S.die[die, DI_BUSY] == 0:
        _die_start(S, die, now)


@njit(cache=True, _nrt=False)
def _die_start(S, die, now):
    P = S.si[SI_P]
    ch = die % S.si[SI_C]
    bat = DI_HELD + P
    if S.die[die, DI_RQH] >= 0:
        x = _q_popleft(S, die, DI_RQH, DI_RQT)
        tr = S.sf[SF_TR + S.tx[x, TX_A]]
        rd = S.txf[x]
        t0 = (now if now > rd else rd) + tr
        cf = S.dief[ch, DF_CHAN]
        t1 = t0 if t0 > cf else cf
        xf = S.si[SI_PAGESIZE] / S.sf[SF_CHRATE]
        end = t1 + xf
        S.dief[ch, DF_CHAN] = end
        r = S.tx[x, TX_PAGE]
        v = tr + xf
        if v > S.rqf[r, QF_TNAND]:
            S.rqf[r, QF_TNAND] = v
        S.die[die, bat] = x
        S.die[die, DI_NBAT] = 1
    elif S.die[die, DI_WQH] >= 0:
        x = _q_popleft(S, die, DI_WQH, DI_WQT)
        if S.tx[x, TX_KIND] == _TGC:
            sppg = S.si[SI_SPPG]
            copies = -(-S.tx[x, TX_A] // sppg)
            end = now + copies * (S.sf[SF_TRMEAN] + S.sf[SF_TPMEAN]) + S.sf[SF_ERASE]
            S.die[die, bat] = x
            S.die[die, DI_NBAT] = 1
        else:
            S.die[die, bat] = x
            nb = 1
            if S.si[SI_MP] != 0 and S.die[die, DI_WQH] >= 0:
                kh = -1
                kt = -1
                while S.die[die, DI_WQH] >= 0 and nb < P:
                    x2 = S.die[die, DI_WQH]
                    if S.tx[x2, TX_KIND] != _TPROG:
                        break
                    _q_popleft(S, die, DI_WQH, DI_WQT)
                    dup = False
                    for i in range(nb):
                        if S.tx[S.die[die, bat + i], TX_PLANE] == S.tx[x2, TX_PLANE]:
                            dup = True
                            break
                    if dup:  # the plane already programs in this batch: back to the queue's front
                        S.tx[x2, TX_NEXT] = -1
                        if kt < 0:
                            kh = x2
                        else:
                            S.tx[kt, TX_NEXT] = x2
                        kt = x2
                    else:
                        S.die[die, bat + nb] = x2
                        nb += 1
                if kh >= 0:
                    S.tx[kt, TX_NEXT] = S.die[die, DI_WQH]
                    if S.die[die, DI_WQH] < 0:
                        S.die[die, DI_WQT] = kt
                    S.die[die, DI_WQH] = kh
            S.die[die, DI_NBAT] = nb
            nbytes = 0
            tprog = 0.0
            ready = now
            mu = S.si[SI_MU]
            spb = S.si[SI_SPB]
            sppg = S.si[SI_SPPG]
            bits = S.si[SI_BITS]
            for i in range(nb):
                x2 = S.die[die, bat + i]
                if S.si[SI_NOP] > 1:
                    nbytes += S.tx[x2, TX_B] * mu
                else:
                    nbytes += S.si[SI_PAGESIZE]
                p = S.tx[x2, TX_PAGE]
                tp = S.sf[SF_TP + ((S.pg[p, PG_BASE] % spb) // sppg) % bits]
                if tp > tprog:
                    tprog = tp
                if S.txf[x2] > ready:
                    ready = S.txf[x2]
            xf = nbytes / S.sf[SF_CHRATE]
            if S.sf[SF_BEBW] != 0.0:  # the controller's back end passes the data first, serially
                bf = S.sf[SF_BE_FREE]
                ready = (ready if ready > bf else bf) + nbytes / S.sf[SF_BEBW]
                S.sf[SF_BE_FREE] = ready
            cf = S.dief[ch, DF_CHAN]
            s = ready if ready > cf else cf
            S.dief[ch, DF_CHAN] = s + xf
            end = s + xf + tprog
            for i in range(nb):
                S.pgf[S.tx[S.die[die, bat + i], TX_PAGE], PF_PROG] = xf + tprog
    else:
        S.die[die, DI_BUSY] = 0
        return
    S.die[die, DI_BUSY] = 1
    S.dief[die, DF_BUSY_S] += end - now
    _emit(S, EVK_DIE, end - now, die)


@njit(cache=True, _nrt=False)
def _release(S, die, now):
    """Queue the held pages of ``die`` as one multi-plane unit."""
    n = S.die[die, DI_NHELD]
    S.die[die, DI_NHELD] = 0
    for i in range(n):
        _q_append(S, die, DI_WQH, DI_WQT, S.die[die, DI_HELD + i])
    if S.die[die, DI_BUSY] == 0:
        _die_start(S, die, now)


# =============================================================================== DCM / FTL
@njit(cache=True, _nrt=False)
def _new_page(S, now):
    nord = S.si[SI_NORDER]
    plane = S.order[S.si[SI_RR] % nord]
    S.si[SI_RR] += 1
    base = reserve_page(plane, S.geo, S.bstate, S.free_stack, S.free_top, S.front, S.cnt)
    if base < 0:
        S.si[SI_ERR] = ERR_FTL
        return -1
    P = S.si[SI_P]
    if S.free_top[plane] < S.si[SI_THR]:
        n = gc_until_free(plane, S.gcout, S.geo, S.l2p, S.p2l, S.bvalid, S.bstate, S.berase, S.free_stack,
                          S.free_top, S.front, S.cnt)
        if S.cnt[C_ERR] != 0:
            S.si[SI_ERR] = ERR_FTL
            return -1
        die = plane // P
        for i in range(n):
            x = _txn_new(S, _TGC, plane, now, -1, S.gcout[i], 0, 0)
            if x < 0:
                return -1
            _enqueue(S, die, x, now)
    p = S.si[SI_PG_FREE]
    if p < 0:
        S.si[SI_ERR] = ERR_PAGES
        return -1
    S.si[SI_PG_FREE] = _free_next(S.pg, PG_NEXT, p)
    S.si[SI_PG_NFREE] -= 1
    S.pg[p, PG_BASE] = base
    S.pg[p, PG_PLANE] = plane
    S.pg[p, PG_DIE] = plane // P
    S.pg[p, PG_FILLED] = 0
    S.pg[p, PG_SUB] = 0
    S.pg[p, PG_NPROG] = 0
    S.pg[p, PG_SEALED] = 0
    S.pg[p, PG_REFS] = 0
    S.pg[p, PG_NEXT] = -1
    S.pgf[p, PF_READY] = 0.0
    S.pgf[p, PF_PROG] = 0.0
    return p


@njit(cache=True, _nrt=False)
def _program(S, p, seal, hold, now):
    """Submit the not yet programmed units of page ``p`` to its die. With ``hold`` a full page waits
    in DRAM until the die's other planes have a page too (one multi-plane program unit)."""
    filled = S.pg[p, PG_FILLED]
    first = S.pg[p, PG_SUB]
    n = filled - first
    S.pg[p, PG_SUB] = filled
    S.pg[p, PG_NPROG] += 1
    if seal or S.pg[p, PG_NPROG] >= S.si[SI_NOP] or filled == S.si[SI_SPPG]:
        S.pg[p, PG_SEALED] = 1
        seal_page(S.pg[p, PG_BASE], filled, S.geo, S.bstate, S.cnt)
        if S.si[SI_OPEN] == p:
            S.si[SI_OPEN] = -1
    S.si[SI_PROG_SEQ] += 1
    S.si[SI_OUTSTANDING] += 1
    S.pg[p, PG_REFS] += 1
    x = _txn_new(S, _TPROG, S.pg[p, PG_PLANE], S.pgf[p, PF_READY], p, first, n, S.si[SI_PROG_SEQ])
    if x < 0:
        return
    die = S.pg[p, PG_DIE]
    if not hold:
        _enqueue(S, die, x, now)
        return
    k = S.die[die, DI_NHELD]
    S.die[die, DI_HELD + k] = x
    S.die[die, DI_NHELD] = k + 1
    if k + 1 >= S.si[SI_P]:
        _release(S, die, now)


@njit(cache=True, _nrt=False)
def _place(S, lpn, ready, now):
    p = S.si[SI_OPEN]
    if p >= 0 and S.pg[p, PG_SUB] == 0 and S.dirty[lpn] == p + 1:
        # overwrite of a unit still in the open page: replaced in DRAM
        S.si[SI_BUF_FREE] += S.si[SI_MU]
        if ready > S.pgf[p, PF_READY]:
            S.pgf[p, PF_READY] = ready
        return p
    if p < 0:
        p = _new_page(S, now)
        if p < 0:
            return -1
        S.si[SI_OPEN] = p
    k = S.pg[p, PG_FILLED]
    map_host_slot(lpn, S.pg[p, PG_BASE] + k, S.geo, S.l2p, S.p2l, S.bvalid, S.cnt)
    S.pg[p, PG_LPN + k] = lpn
    S.pg[p, PG_FILLED] = k + 1
    S.dirty[lpn] = p + 1
    if ready > S.pgf[p, PF_READY]:
        S.pgf[p, PF_READY] = ready
    if k + 1 == S.si[SI_SPPG]:
        _program(S, p, True, S.si[SI_MP] != 0, now)
    return p


@njit(cache=True, _nrt=False)
def _group_commit(S, t, cost):
    """End of the write-log commit covering an FTL update that ended at ``t``: the last commit if it
    had not started by ``t`` (it covers every update ended before its start), else a new one starting
    when both ``t`` and the last commit's end are reached. Computed ahead (no event)."""
    if t <= S.sf[SF_COMMIT_START]:
        return S.sf[SF_COMMIT_END]
    ce = S.sf[SF_COMMIT_END]
    s = t if t > ce else ce
    S.sf[SF_COMMIT_START] = s
    S.sf[SF_COMMIT_END] = s + cost
    S.si[SI_COMMITS] += 1
    return S.sf[SF_COMMIT_END]


@njit(cache=True, _nrt=False)
def _write_chunk(S, r, k, now):
    """Take ``k`` more mapping units of write ``r`` into the buffer (all of them when the buffer has
    room on arrival: the whole command passes the stations at once). A write that waits for buffer
    space streams in: the units that fit whenever programs free space, in FIFO order. The command's
    processing (HIL) counts at its first chunk, the link carries each chunk, and the FTL stage (and
    group commit) at its last chunk sets when it completes; a chunk's units are ready for their page
    program when its transfer (and buffer stage) ends."""
    mu = S.si[SI_MU]
    first, n = _units(S, r)
    left = S.rq[r, RQ_LEFT]
    done = n - left
    size = S.rq[r, RQ_SIZE]
    S.si[SI_BUF_FREE] -= k * mu
    ovh = S.sf[SF_OVH]
    t = now
    if done == 0:
        t = _serve(S, SF_HIL, S.si[SI_HILN], now, ovh)
    last = k == left
    upto = size if last else min(size, (done + k) * mu)
    before = 0 if done == 0 else min(size, done * mu)
    nbytes = upto - before
    t_link = _link(S, t, nbytes, 0)
    t_buf = t_link + S.sf[SF_WLAT]
    if done == 0 and last:  # the whole command at once
        svc = ovh + size / S.sf[SF_LRATE] + S.sf[SF_WLAT] + S.sf[SF_FTLUPD]
    elif done == 0:
        svc = ovh + nbytes / S.sf[SF_LRATE]
    elif last:
        svc = S.rqf[r, QF_SERVICE] + nbytes / S.sf[SF_LRATE] + S.sf[SF_WLAT] + S.sf[SF_FTLUPD]
    else:
        svc = S.rqf[r, QF_SERVICE] + nbytes / S.sf[SF_LRATE]
    if last:
        t_buf = _serve(S, SF_FTL, S.si[SI_FTLN], t_buf, S.sf[SF_FTLUPD])
        if S.sf[SF_ACK] > 0:
            t_buf = _group_commit(S, t_buf, S.sf[SF_ACK])
            svc += S.sf[SF_ACK]
    S.rqf[r, QF_SERVICE] = svc
    S.rq[r, RQ_LEFT] = left - k
    p = -1
    for lpn in range(first + done, first + done + k):
        p = _place(S, lpn, t_buf, now)
        if p < 0 and S.si[SI_ERR] != 0:
            return
    if not last:
        return
    S.si[SI_WRITE_SEQ] += 1
    if S.si[SI_DUR_W] != 0 or (S.rq[r, RQ_FUA] != 0 and S.si[SI_DUR_FUA] != 0):
        _flush_join(S, r, p, t_buf, now)
    else:
        _emit(S, EVK_DONE, t_buf - now, r)


@njit(cache=True, _nrt=False)
def _stuck(S):
    """Bytes of the buffer that no program in flight will free: the open page's units not submitted
    yet and the full pages held for a multi-plane unit (only more host data or a forced flush would
    submit them)."""
    mu = S.si[SI_MU]
    b = 0
    p = S.si[SI_OPEN]
    if p >= 0:
        b += (S.pg[p, PG_FILLED] - S.pg[p, PG_SUB]) * mu
    for die in range(S.die.shape[0]):
        for i in range(S.die[die, DI_NHELD]):
            b += S.tx[S.die[die, DI_HELD + i], TX_B] * mu
    return b


@njit(cache=True, _nrt=False)
def _push_out(S, now):
    """Program what the buffer holds back, as a forced flush does: the open page's units not submitted
    yet (the page padded and sealed if ``flash.nop`` is 1) and every die's pages held for a
    multi-plane partner (_make_room and _flush_start)."""
    p = S.si[SI_OPEN]
    if p >= 0 and S.pg[p, PG_FILLED] > S.pg[p, PG_SUB]:
        _program(S, p, S.si[SI_NOP] == 1, False, now)
    if S.si[SI_MP] != 0:
        for die in range(S.die.shape[0]):
            if S.die[die, DI_NHELD] > 0:
                _release(S, die, now)


@njit(cache=True, _nrt=False)
def _make_room(S, now):
    """The first waiting write cannot take a unit and no program in flight will free one (the whole
    buffer is the open page and pages waiting for a multi-plane partner, which only more host data
    would submit: a lost wakeup): the firmware programs them now, as a forced flush does (the open
    page padded and sealed if ``flash.nop`` is 1; every die's held pages)."""
    if S.si[SI_BUFSIZE] - S.si[SI_BUF_FREE] > _stuck(S):
        return  # programs in flight will free space
    _push_out(S, now)


@njit(cache=True, _nrt=False)
def _write(S, r, now):
    _first, n = _units(S, r)
    S.rq[r, RQ_LEFT] = n
    if S.si[SI_BW_HEAD] < 0 and n * S.si[SI_MU] <= S.si[SI_BUF_FREE]:
        _write_chunk(S, r, n, now)
        return
    head = S.si[SI_BW_HEAD] < 0
    _rq_append(S, SI_BW_HEAD, SI_BW_TAIL, r)
    if head:
        _admit_waiting(S, now)


@njit(cache=True, _nrt=False)
def _admit_waiting(S, now):
    """Stream the waiting writes into the buffer space there is, first come first served."""
    mu = S.si[SI_MU]
    while S.si[SI_BW_HEAD] >= 0:
        r = S.si[SI_BW_HEAD]
        left = S.rq[r, RQ_LEFT]
        k = S.si[SI_BUF_FREE] // mu
        if k == 0:
            _make_room(S, now)
            return
        if k >= left:
            _rq_popleft(S, SI_BW_HEAD, SI_BW_TAIL)
            k = left
        _write_chunk(S, r, k, now)
        if S.si[SI_ERR] != 0:
            return


# =============================================================================== forced flush (group commit)
@njit(cache=True, _nrt=False)
def _flush_cmd(S, r, now):
    ovh = S.sf[SF_OVH]
    S.rqf[r, QF_SERVICE] = ovh + S.sf[SF_FLLAT]
    t = _serve(S, SF_HIL, S.si[SI_HILN], now, ovh) + S.sf[SF_FLLAT]
    dirty = S.si[SI_OPEN] >= 0 or S.si[SI_OUTSTANDING] > 0 or S.si[SI_WRITE_SEQ] > S.si[SI_META_CLEAN]
    if S.si[SI_DUR_FUA] != 0 and dirty:
        _flush_join(S, r, -1, t, now)
    else:
        _emit(S, EVK_DONE, t - now, r)


@njit(cache=True, _nrt=False)
def _flush_join(S, r, p, ready, now):
    S.rq[r, RQ_PAGE] = p
    if p >= 0:
        S.pg[p, PG_REFS] += 1
    _rq_append(S, SI_FW_HEAD, SI_FW_TAIL, r)
    if ready > S.sf[SF_FLUSH_READY]:
        S.sf[SF_FLUSH_READY] = ready
    if S.si[SI_FLUSHING] == 0:
        _flush_start(S, now)


@njit(cache=True, _nrt=False)
def _flush_start(S, now):
    S.si[SI_CO_HEAD] = S.si[SI_FW_HEAD]
    S.si[SI_CO_TAIL] = S.si[SI_FW_TAIL]
    S.si[SI_FW_HEAD] = -1
    S.si[SI_FW_TAIL] = -1
    S.si[SI_FLUSHING] = 1
    S.si[SI_FORCED] += 1
    S.si[SI_FLUSH_COVER] = S.si[SI_WRITE_SEQ]
    _push_out(S, now)
    S.si[SI_FLUSH_UPTO] = S.si[SI_PROG_SEQ]
    S.si[SI_FLUSH_PENDING] = S.si[SI_OUTSTANDING]
    if S.si[SI_FLUSH_PENDING] == 0:
        _flush_meta(S, now)


@njit(cache=True, _nrt=False)
def _flush_meta(S, now):
    fr = S.sf[SF_FLUSH_READY]
    t = (now if now > fr else fr) + S.sf[SF_MC]
    _emit(S, EVK_META, t - now, 0)


# =============================================================================== reads / trim
@njit(cache=True, _nrt=False)
def _read(S, r, now):
    ovh = S.sf[SF_OVH]
    t = _serve(S, SF_HIL, S.si[SI_HILN], now, ovh) + S.sf[SF_RLAT]
    sppg = S.si[SI_SPPG]
    first, n = _units(S, r)
    if n > S.scr.shape[0]:
        S.si[SI_ERR] = ERR_SCRATCH
        return
    k = 0
    for lpn in range(first, first + n):
        if S.dirty[lpn] != 0:
            continue
        s = S.l2p[lpn]
        if s != 0:
            gp = (s - 1) // sppg
            seen = False
            for i in range(k):
                if S.scr[i] == gp:
                    seen = True
                    break
            if not seen:
                S.scr[k] = gp
                k += 1
    front = ovh + S.sf[SF_RLAT]
    size = S.rq[r, RQ_SIZE]
    if k == 0:
        e = _link(S, t, size, S.si[SI_DIROUT])
        S.rqf[r, QF_SERVICE] = front + size / S.sf[SF_LRATE]
        _emit(S, EVK_DONE, e - now, r)
        return
    S.rq[r, RQ_LEFT] = k
    S.rqf[r, QF_FRONT] = front
    S.rqf[r, QF_TNAND] = 0.0
    ppp = S.si[SI_PPP]
    ppb = S.si[SI_PPB]
    bits = S.si[SI_BITS]
    P = S.si[SI_P]
    for i in range(k):
        gp = S.scr[i]
        plane = gp // ppp
        x = _txn_new(S, _TREAD, plane, t, r, (gp % ppb) % bits, 0, 0)
        if x < 0:
            return
        _enqueue(S, plane // P, x, now)


@njit(cache=True, _nrt=False)
def _read_done(S, r, now):
    S.rq[r, RQ_LEFT] -= 1
    if S.rq[r, RQ_LEFT] != 0:
        return
    size = S.rq[r, RQ_SIZE]
    e = _link(S, now, size, S.si[SI_DIROUT])
    S.rqf[r, QF_SERVICE] = S.rqf[r, QF_FRONT] + S.rqf[r, QF_TNAND] + size / S.sf[SF_LRATE]
    _emit(S, EVK_DONE, e - now, r)


@njit(cache=True, _nrt=False)
def _trim(S, r, now):
    mu = S.si[SI_MU]
    off = S.rq[r, RQ_OFF]
    first = (off + mu - 1) // mu
    last = (off + S.rq[r, RQ_SIZE]) // mu
    for lpn in range(first, last):
        trim_lpn(lpn, S.geo, S.l2p, S.p2l, S.bvalid)
        S.dirty[lpn] = 0
    ovh = S.sf[SF_OVH]
    S.rqf[r, QF_SERVICE] = ovh + S.sf[SF_FLLAT]
    t = _serve(S, SF_HIL, S.si[SI_HILN], now, ovh) + S.sf[SF_FLLAT]
    _emit(S, EVK_DONE, t - now, r)


# =============================================================================== HIL (entry points)
@njit(cache=True, _nrt=False)
def _pump(S, now):
    qflush = S.si[SI_QFLUSH] != 0
    while S.si[SI_BL_HEAD] >= 0 and S.si[SI_SLOTS_FREE] > 0 and S.si[SI_BARRIER] < 0:
        r = S.si[SI_BL_HEAD]
        op = S.rq[r, RQ_OP]
        if op == _FLUSH and not qflush:
            if S.si[SI_IN_DEV] != 0:
                return  # non-NCQ command: wait for the queue to drain
            S.si[SI_BARRIER] = r
        _rq_popleft(S, SI_BL_HEAD, SI_BL_TAIL)
        S.si[SI_SLOTS_FREE] -= 1
        if S.si[SI_IN_DEV] == 0:
            S.sf[SF_T_BUSY0] = now
        S.si[SI_IN_DEV] += 1
        S.rqf[r, QF_TSTART] = now
        if op == _WRITE:
            _write(S, r, now)
        elif op == _READ:
            _read(S, r, now)
        elif op == _FLUSH:
            _flush_cmd(S, r, now)
        else:
            _trim(S, r, now)
        if S.si[SI_ERR] != 0:
            return


@njit(cache=True, _nrt=False)
def ssd_start(S, r, op, off, size, fua, now):
    """A request reaches the drive (``SSD._start``): into the host FIFO, then as many commands as
    slots allow."""
    S.rq[r, RQ_OP] = op
    S.rq[r, RQ_OFF] = off
    S.rq[r, RQ_SIZE] = size
    S.rq[r, RQ_FUA] = fua
    S.rq[r, RQ_PAGE] = -1
    S.rqf[r, QF_SERVICE] = 0.0
    _rq_append(S, SI_BL_HEAD, SI_BL_TAIL, r)
    _pump(S, now)


@njit(cache=True, _nrt=False)
def ssd_finish(S, r, now, t0):
    """Request ``r`` completed (after the common accounting): frees its slot, lifts a FLUSH barrier,
    starts waiting commands. Returns the busy time to add (the drive fell idle), given the
    statistics window's start ``t0``."""
    S.si[SI_SLOTS_FREE] += 1
    S.si[SI_IN_DEV] -= 1
    busy = 0.0
    if S.si[SI_IN_DEV] == 0:
        b0 = S.sf[SF_T_BUSY0]
        busy = now - (b0 if b0 > t0 else t0)
    if S.si[SI_BARRIER] == r:
        S.si[SI_BARRIER] = -1
    if S.si[SI_BL_HEAD] >= 0:
        _pump(S, now)
    return busy


@njit(cache=True, _nrt=False)
def ssd_die_done(S, die, now):
    """The running transaction batch of ``die`` ended."""
    freed = False
    bat = DI_HELD + S.si[SI_P]
    nb = S.die[die, DI_NBAT]
    S.die[die, DI_NBAT] = 0
    mu = S.si[SI_MU]
    for i in range(nb):
        x = S.die[die, bat + i]
        kind = S.tx[x, TX_KIND]
        if kind == _TPROG:
            p = S.tx[x, TX_PAGE]
            a = S.tx[x, TX_A]
            b = S.tx[x, TX_B]
            for k in range(a, a + b):
                lpn = S.pg[p, PG_LPN + k]
                if S.dirty[lpn] == p + 1:
                    S.dirty[lpn] = 0
            S.si[SI_BUF_FREE] += b * mu
            S.si[SI_OUTSTANDING] -= 1
            seq = S.tx[x, TX_SEQ]
            _page_unref(S, p)
            if S.si[SI_FLUSHING] != 0 and seq <= S.si[SI_FLUSH_UPTO]:
                S.si[SI_FLUSH_PENDING] -= 1
                if S.si[SI_FLUSH_PENDING] == 0:
                    _flush_meta(S, now)
            freed = True
        elif kind == _TREAD:
            _read_done(S, S.tx[x, TX_PAGE], now)
        _txn_free(S, x)
    _die_start(S, die, now)
    if freed and S.si[SI_BW_HEAD] >= 0:
        _admit_waiting(S, now)


@njit(cache=True, _nrt=False)
def ssd_flush_done(S, now):
    """The forced flush's metadata commit ended: its cohort completes; waiters start the next."""
    S.si[SI_META_CLEAN] = S.si[SI_FLUSH_COVER]
    S.si[SI_FLUSHING] = 0
    S.sf[SF_FLUSH_READY] = 0.0
    mc = S.sf[SF_MC]
    r = S.si[SI_CO_HEAD]
    S.si[SI_CO_HEAD] = -1
    S.si[SI_CO_TAIL] = -1
    while r >= 0:
        nx = S.rq[r, RQ_NEXT]
        p = S.rq[r, RQ_PAGE]
        if p >= 0:
            S.rqf[r, QF_SERVICE] += mc + S.pgf[p, PF_PROG]
            _page_unref(S, p)
        else:
            S.rqf[r, QF_SERVICE] += mc + 0.0
        _emit(S, EVK_DONE, 0.0, r)
        r = nx
    if S.si[SI_FW_HEAD] >= 0:
        _flush_start(S, now)


#: (dtype, ndim) of each SSDState field (placeholders of a State without SSDs have these types)
FIELD_TYPES = {
    "si": (np.int64, 1), "sf": (np.float64, 1), "die": (np.int64, 2), "dief": (np.float64, 2),
    "pg": (np.int64, 2), "pgf": (np.float64, 2), "tx": (np.int64, 2), "txf": (np.float64, 1),
    "rq": (np.int64, 2), "rqf": (np.float64, 2), "scr": (np.int64, 1), "ev": (np.float64, 2),
    "order": (np.int64, 1), "dirty": (np.int32, 1), "geo": (np.int64, 1), "l2p": (np.int32, 1),
    "p2l": (np.int32, 1), "bvalid": (np.int32, 1), "bstate": (np.int8, 1), "berase": (np.int32, 1),
    "free_stack": (np.int32, 2), "free_top": (np.int32, 1), "front": (np.int64, 3), "cnt": (np.int64, 1),
    "gcout": (np.int64, 1),
}  # fmt: skip

#: the fields that are the FTL's own arrays (``FTL`` attribute names)
FTL_FIELDS = {"geo": "geo", "l2p": "l2p", "p2l": "p2l", "bvalid": "bvalid", "bstate": "bstate", "berase": "berase",
              "free_stack": "free_stack", "free_top": "free_top", "front": "front", "cnt": "cnt", "gcout": "_gc_out"}


def in_flight(S: SSDState) -> bool:
    """Whether the drive has commands or NAND work in flight (pending events): its state cannot be
    handed to another engine."""
    return bool(S.si[SI_IN_DEV] or S.si[SI_FLUSHING] or S.si[SI_BL_HEAD] >= 0 or S.die[:, DI_BUSY].any())

"""numba kernels of the HDD's write cache as arrays: the one statement of its extent bookkeeping,
used by the Python drive (``devices.hdd.drive.HDD``, every cache mode) and the compiled core
(``core/loop.py``) alike.

* ``ext`` int64 ``[E, NE]``: one row per extent slot, columns ``E_*`` below;
* ``live`` int64 ``[E]``: the slots of the extents in the buffer (DRAM or non-volatile: accepted,
  not yet destaged home or appended to the media cache: in the host-facing queue, in the destage
  window or in flight), ``nlive`` of them, in no order (``ext[e, E_POS]`` is e's place in ``live``,
  so removal is a swap with the last).

The coalescing index (``idx``, hash maps, see ``M_*``) maps a start sector and an end sector to
one extent each; ``E_INS`` / ``E_INE`` say that an extent holds its key (a later extent with the
same key takes it, as a dict assignment does). An extent leaves the index when it goes to the
mechanism (or into a media-cache append), and is no longer joinable then. A read is served from
dirty data when every 4 KiB page it touches lies wholly inside some live extent: the page map
counts, per page, the live extents covering it wholly.

The FLUSH records are a table too (``fl``, columns ``FL_*``): ``wc_flushes_count`` counts a
durable extent for the records that wait for it, the caller completes the records with nothing
left (in arrival order) and ``wc_flushes_drop`` removes them.

The free slots are the caller's (a stack: the compiled core sizes its table and index once, see
``core/run.py:_extent_slots`` and ``wc_index_capacity``; the Python drive doubles its table when
the stack runs out and its index before it could pass half full, ``wc_reindex``). Slot
numbers never change a result: every decision here depends on the extents' contents only.
"""

from __future__ import annotations

from numba import njit

from . import kernels as K

E_LBA = 0  # first sector
E_NS = 1  # sectors
E_SEQ = 2  # arrival number of the write that created it (FLUSH ordering)
E_WIN = 3  # 1 = in the destage window (a candidate row of the scheduler; still joinable)
E_INS = 4  # 1 = the start index maps its first sector to it
E_INE = 5  # 1 = the end index maps its end sector to it
E_POS = 6  # its place in ``live``
NE = 7

# write-cache modes (``cache.write_cache``) as numbers: the drive's ``_wcm``, the core's ``HI_WC``
WC_OFF = 0
WC_VOLATILE = 1
WC_PERSISTENT = 2
WC_MEDIA = 3
WC_MODES = {"off": WC_OFF, "volatile": WC_VOLATILE, "persistent": WC_PERSISTENT, "media_cache": WC_MEDIA}

# what a write does on arrival (wc_write_rule)
WR_THROUGH = 0  # written home as a host command (cache off, honoured FUA, larger than the cache)
WR_CACHE = 1  # cached, acknowledged after overhead + link transfer (+ the non-volatile commit)
WR_DURABLE = 2  # cached, acknowledged once durable (a FLUSH of its own: volatile FUA the drive does not
#                 honour, a media cache's FUA or WCE=0)

# FLUSH / FUA records (float64 rows of ``fl``, in arrival order): a FLUSH of a volatile cache, or a
# FUA write the drive does not honour, waits for the extents in the cache when it arrived
FL_SEQ = 0  # the drive's arrival number then (extents created up to it count)
FL_LEFT = 1  # extents still to become durable
FL_REQ = 2  # the request (the core's request row; the Python drive's key of it)
FL_ACK = 3  # a FUA write: time its data transfer ends (0 for a FLUSH)
NFL = 4

# The index (``idx`` int64 ``[3, C + 1, 2]``): three hash maps of C entries each (C a power of two;
# open addressing, linear probing, deletion by backward shift; an entry is (key + 1, value), 0 =
# empty, so a fresh index is zeros and costs memory only where it is used), so that a join, a read of dirty data and an unindex cost the same whatever the number of
# extents. Row C of each map is its header: (entries, parameter).
M_START = 0  # first sector -> the extent holding that key (E_INS set)
M_END = 1  # end sector -> the extent holding that key (E_INE set)
M_PAGE = 2  # page -> number of live extents covering it wholly; its header's parameter: sectors per page


@njit(cache=True, inline="always", _nrt=False)
def _h(key, mask):
    x = key * -7046029254386353131  # Fibonacci hashing (sectors and pages come in runs)
    return (x ^ (x >> 29)) & mask


@njit(cache=True, inline="always", _nrt=False)
def _find(m, key):
    """Entry of ``key`` in map ``m``, or the empty entry where it would go (0 there)."""
    mask = m.shape[0] - 2
    i = _h(key, mask)
    k1 = key + 1
    while m[i, 0] != 0 and m[i, 0] != k1:
        i = (i + 1) & mask
    return i


@njit(cache=True, inline="always", _nrt=False)
def _get(m, key):
    i = _find(m, key)
    return m[i, 1] if m[i, 0] == key + 1 else -1


@njit(cache=True, inline="always", _nrt=False)
def _set(m, key, v):
    i = _find(m, key)
    if m[i, 0] != key + 1:
        m[i, 0] = key + 1
        m[m.shape[0] - 1, 0] += 1
    m[i, 1] = v


@njit(cache=True, inline="always", _nrt=False)
def _del_at(m, i):
    """Remove entry i, shifting back the entries of its probe run that may not stay behind a hole."""
    mask = m.shape[0] - 2
    j = i
    while True:
        j = (j + 1) & mask
        if m[j, 0] == 0:
            break
        k = _h(m[j, 0] - 1, mask)
        if (i <= j and i < k <= j) or (i > j and (k > i or k <= j)):
            continue  # its home is between the hole and it: it stays
        m[i, 0] = m[j, 0]
        m[i, 1] = m[j, 1]
        i = j
    m[i, 0] = 0
    m[i, 1] = 0
    m[m.shape[0] - 1, 0] -= 1


@njit(cache=True, inline="always", _nrt=False)
def _del(m, key):
    i = _find(m, key)
    if m[i, 0] == key + 1:
        _del_at(m, i)


@njit(cache=True, inline="always", _nrt=False)
def _pages(idx, e, ext, d):
    """Count (d = 1) or uncount (d = -1) the pages lying wholly inside extent ``e``."""
    m = idx[M_PAGE]
    pg = m[m.shape[0] - 1, 1]
    s = ext[e, E_LBA]
    _count_pages(m, -(-s // pg), (s + ext[e, E_NS]) // pg, d)


@njit(cache=True, inline="always", _nrt=False)
def _pages_grow(idx, s, t, s2, t2):
    """An extent grows from sectors [s, t) to [s2, t2), s2 <= s, t <= t2: count the pages that now lie
    wholly inside it and did not before. The pages wholly inside [s, t) lie inside [s2, t2) too and
    keep their count, so a join costs the pages it adds, not the extent's (uncounting and recounting
    every page made a run of appends quadratic in the extent's length; same counts)."""
    m = idx[M_PAGE]
    pg = m[m.shape[0] - 1, 1]
    a = -(-s // pg)
    b = t // pg
    a2 = -(-s2 // pg)
    b2 = t2 // pg
    if a >= b:  # no whole page before
        _count_pages(m, a2, b2, 1)
    else:
        _count_pages(m, a2, a, 1)
        _count_pages(m, b, b2, 1)


@njit(cache=True, inline="always", _nrt=False)
def _count_pages(m, lo, hi, d):
    """Count (d = 1) or uncount (d = -1) pages [lo, hi) in the page map ``m``."""
    for p in range(lo, hi):
        i = _find(m, p)
        if m[i, 0] == p + 1:
            v = m[i, 1] + d
            if v > 0:
                m[i, 1] = v
            else:
                _del_at(m, i)
        elif d > 0:
            m[i, 0] = p + 1
            m[i, 1] = d
            m[m.shape[0] - 1, 0] += 1


def wc_index_rows(cap: int) -> int:
    """Rows of one map of at least ``cap`` entries (a power of two, at least 16) and its header."""
    c = 16
    while c < cap:
        c *= 2
    return c + 1


def wc_init_index(idx, pg: int):
    """Make the zeroed array ``idx`` (``[3, rows, 2]``) an empty index for ``pg``-sector pages."""
    idx[M_PAGE, -1, 1] = pg
    return idx


def wc_new_index(cap: int, pg: int):
    """An empty index of at least ``cap`` entries per map for ``pg``-sector pages."""
    import numpy as np

    return wc_init_index(np.zeros((3, wc_index_rows(cap), 2), np.int64), pg)


def wc_index_capacity(slots: int, wc_bytes: int, page_bytes: int) -> int:
    """Entries per map that keep every map at most half full for a table of ``slots`` extents and
    ``wc_bytes`` of dirty data (a page is counted once it is dirty wholly: at most wc_bytes /
    page_bytes of them)."""
    return 2 * (max(slots, wc_bytes // max(1, page_bytes)) + 2)


@njit(cache=True, inline="always", _nrt=False)
def wc_target(ext, idx, lba, ns, lim):
    """(extent, how) a cached write of ``ns`` sectors at ``lba`` joins without a new extent:
    how 0 = exact overwrite of an extent starting at lba, 1 = appends to an extent ending at lba,
    2 = prepends to one starting at lba + ns (joins bounded by ``lim`` sectors); (-1, -1) none."""
    e = _get(idx[M_START], lba)
    if e >= 0 and ext[e, E_NS] == ns:
        return e, 0
    e = _get(idx[M_END], lba)
    if e >= 0 and ext[e, E_NS] + ns <= lim:
        return e, 1
    e = _get(idx[M_START], lba + ns)
    if e >= 0 and ext[e, E_NS] + ns <= lim:
        return e, 2
    return -1, -1


@njit(cache=True, inline="always", _nrt=False)
def wc_index(ext, idx, e):
    """Extent ``e`` takes its start and end keys in the index (displacing whoever held them)."""
    s = ext[e, E_LBA]
    t = s + ext[e, E_NS]
    o = _get(idx[M_START], s)
    if o >= 0 and o != e:
        ext[o, E_INS] = 0
    _set(idx[M_START], s, e)
    o = _get(idx[M_END], t)
    if o >= 0 and o != e:
        ext[o, E_INE] = 0
    _set(idx[M_END], t, e)
    ext[e, E_INS] = 1
    ext[e, E_INE] = 1


@njit(cache=True, inline="always", _nrt=False)
def wc_unindex(ext, idx, e):
    """Extent ``e`` leaves the index (it goes to the mechanism, or changes its keys)."""
    if ext[e, E_INS] != 0:
        _del(idx[M_START], ext[e, E_LBA])
        ext[e, E_INS] = 0
    if ext[e, E_INE] != 0:
        _del(idx[M_END], ext[e, E_LBA] + ext[e, E_NS])
        ext[e, E_INE] = 0


@njit(cache=True, inline="always", _nrt=False)
def wc_live_add(ext, live, nlive, idx, e):
    """Append ``e`` to the live extents (its pages count as dirty); returns the new count."""
    live[nlive] = e
    ext[e, E_POS] = nlive
    _pages(idx, e, ext, 1)
    return nlive + 1


@njit(cache=True, inline="always", _nrt=False)
def wc_live_drop(ext, live, nlive, idx, e):
    """Remove ``e`` from the live extents (swap with the last) and the index; returns the new count."""
    wc_unindex(ext, idx, e)
    _pages(idx, e, ext, -1)
    p = ext[e, E_POS]
    last = live[nlive - 1]
    live[p] = last
    ext[last, E_POS] = p
    return nlive - 1


@njit(cache=True, inline="always", _nrt=False)
def wc_dirty_hit(idx, lba, end):
    """Every page that sectors [lba, end) touch lies wholly inside a live extent."""
    m = idx[M_PAGE]
    pg = m[m.shape[0] - 1, 1]
    for p in range(lba // pg, -(-end // pg)):  # noqa: SIM110 (a loop numba compiles without the runtime)
        if _get(m, p) < 0:
            return False
    return True


@njit(cache=True, inline="always", _nrt=False)
def wc_put(ext, live, nlive, idx, lba, ns, lim, seq, enew):
    """A cached write of ``ns`` sectors at ``lba`` (the drive's arrival number ``seq``) enters the
    table: an exact overwrite of an indexed extent changes nothing (how 0); an append (1) or a prepend
    (2) within ``lim`` sectors grows that extent; otherwise free slot ``enew`` becomes a new live
    extent (how -1). A grown or new extent then holds its start and end keys of the index.
    Returns (extent, how, nlive)."""
    e, how = wc_target(ext, idx, lba, ns, lim)
    if how == 0:
        return e, how, nlive
    if e >= 0:
        wc_unindex(ext, idx, e)
        s = ext[e, E_LBA]
        t = s + ext[e, E_NS]
        if how == 2:
            ext[e, E_LBA] = lba
        ext[e, E_NS] += ns
        _pages_grow(idx, s, t, ext[e, E_LBA], ext[e, E_LBA] + ext[e, E_NS])
    else:
        e = enew
        ext[e, E_LBA] = lba
        ext[e, E_NS] = ns
        ext[e, E_SEQ] = seq
        ext[e, E_WIN] = 0
        ext[e, E_INS] = 0
        ext[e, E_INE] = 0
        nlive = wc_live_add(ext, live, nlive, idx, e)
    wc_index(ext, idx, e)
    return e, how, nlive


@njit(cache=True, _nrt=False)
def wc_reindex(ext, live, nlive, idx):
    """Fill the empty index ``idx`` from the table (the Python drive's growth: a larger index)."""
    for k in range(nlive):
        e = live[k]
        if ext[e, E_INS] != 0:
            _set(idx[M_START], ext[e, E_LBA], e)
        if ext[e, E_INE] != 0:
            _set(idx[M_END], ext[e, E_LBA] + ext[e, E_NS], e)
        _pages(idx, e, ext, 1)


@njit(cache=True, inline="always", _nrt=False)
def wc_overlaps(ext, live, nlive, lba, end):
    """Sectors [lba, end) overlap a live extent (dirty data not yet destaged)."""
    for k in range(nlive):
        e = live[k]
        s = ext[e, E_LBA]
        if s < end and lba < s + ext[e, E_NS]:
            return True
    return False


@njit(cache=True, inline="always", _nrt=False)
def wc_flushes_count(fl, n, fseq):
    """An extent created by arrival number ``fseq`` is durable: each of the ``n`` records that waits
    for it (arrived at or after ``fseq``) counts it. Returns how many records have nothing left to
    wait for (the caller completes them, in row order, then calls ``wc_flushes_drop``)."""
    done = 0
    for i in range(n):
        if fseq <= fl[i, FL_SEQ]:
            fl[i, FL_LEFT] -= 1.0
        if fl[i, FL_LEFT] <= 0.0:
            done += 1
    return done


@njit(cache=True, inline="always", _nrt=False)
def wc_flushes_drop(fl, n):
    """Remove the records with nothing left to wait for, the others keeping their order; returns
    how many remain."""
    k = 0
    for i in range(n):
        if fl[i, FL_LEFT] <= 0.0:
            continue
        if k != i:
            for c in range(fl.shape[1]):
                fl[k, c] = fl[i, c]
        k += 1
    return k


@njit(cache=True, inline="always", _nrt=False)
def wc_write_rule(mode, fua, fua_ok, mc_wce, nbytes, wc_size):
    """How a write of ``nbytes`` (FUA or not) is taken by a cache in ``mode`` (``WC_*``) of ``wc_size``
    bytes (``fua_ok``: the drive honours FUA; ``mc_wce``: a media cache's DRAM stage is on): ``WR_*``.
    Volatile: a FUA write the drive honours is written through, one it does not honour waits for
    durability like a FLUSH; persistent: every write is durable once in the cache (FUA changes
    nothing); media_cache: FUA, or the DRAM stage off, waits for the append."""
    if mode == WC_OFF or (fua and mode == WC_VOLATILE and fua_ok) or nbytes > wc_size:
        return WR_THROUGH
    if (fua and mode in (WC_VOLATILE, WC_MEDIA)) or (mode == WC_MEDIA and not mc_wce):
        return WR_DURABLE
    return WR_CACHE


@njit(cache=True, inline="always", _nrt=False)
def wc_flush_waits(mode, ndirty, ndram):
    """Extents a FLUSH waits for in a cache in ``mode`` with ``ndirty`` extents not yet home and
    ``ndram`` not yet appended to a media cache: a volatile cache's dirty extents, a media cache's
    DRAM stage, nothing in a non-volatile cache (0: the FLUSH is acknowledged after its overhead)."""
    if mode == WC_VOLATILE:
        return ndirty
    if mode == WC_MEDIA:
        return ndram
    return 0


@njit(cache=True, inline="always", _nrt=False)
def wc_destage_mode(mode, owe, win, nhost, idle, mc_bytes, mc_hw, pressure_volatile):
    """The scheduler mode of the next media operation (kernels.dispatch's ``mode``): 2 = one cleaning
    write home owed since the last media-cache append (``owe``); 1 = host commands first (idle
    destage, ``win`` extents in the window, ``nhost`` host commands waiting, no pressure: a media
    cache below its cleaning watermark, else ``pressure_volatile`` — a FLUSH or a write waiting, or
    dirty data above the high watermark); 0 = everything competes."""
    if owe:
        return 2
    if win and nhost and idle:
        pressure = mc_bytes >= mc_hw if mode == WC_MEDIA else pressure_volatile
        if not pressure:
            return 1
    return 0


@njit(cache=True, inline="always", _nrt=False)
def mc_append_due(mc_bytes, mc_size, nhost, waiting, dirty_bytes, hw):
    """Append dirty DRAM data to the media cache now? Only with room in it; then when no host command
    waits, or something waits for it (``waiting``: a FLUSH or a blocked write), or DRAM is above its
    high watermark."""
    if mc_bytes >= mc_size:
        return False
    return nhost == 0 or waiting or dirty_bytes >= hw


@njit(cache=True, _nrt=False)
def mc_append_start(now, par, seg, sk, tt, mc_cyl, mc_log, mc_spt, setup):
    """The mechanism starts a media-cache append at ``now``: it leaves the read-ahead, seeks to the
    media cache's cylinder while the firmware sets the append up (``setup``), then waits for the
    log's write pointer (sector ``mc_log`` of a track of ``mc_spt`` sectors) to come under the head.
    Moves the head there and counts the seek, rotation and operation; returns (set-up or seek,
    rotational wait), seconds."""
    K.finalize_readahead(now, seg, par)
    return K.region_move(now, setup, 1, mc_cyl, (mc_log % mc_spt) / mc_spt, par, sk, tt)


@njit(cache=True, inline="always", _nrt=False)
def mc_clean_hold(now, t_host, out, delay, mode, mc_bytes, mc_hw, dirty_bytes, hw, waiting, owe, win):
    """Idle cleaning of a media cache, or idle destage of a persistent cache, held back by
    ``cache.cleaning_idle_delay`` (``delay``, s): the firmware starts background work only after an
    idle timer. The fill that ends the wait depends on ``mode``: a media cache's (``mc_bytes`` against
    its cleaning watermark ``mc_hw``), else the dirty data's (``dirty_bytes`` against ``hw``, the high
    watermark). Returns 0.0 when cleaning may be
    chosen now (as it was without the delay); -1.0 when it is held while host commands are in the
    drive (``out`` > 0: the last one's completion dispatches again and restarts the timer); else the
    seconds until the timer expires (``t_host``: when the last host command completed; a remaining
    wait below 1 ns counts as expired). Never held: a delay of 0, no cleaning candidate (``win``),
    cleaning owed after an append (``owe``, cleaning_interleave), the fill at or above its watermark,
    or something waiting for the cache (``waiting``: a FLUSH / FUA record, a blocked or refused write)."""
    full = mc_bytes >= mc_hw if mode == WC_MEDIA else dirty_bytes >= hw
    if delay <= 0.0 or win == 0 or owe or full or waiting:
        return 0.0
    if out > 0:
        return -1.0
    w = t_host + delay - now
    return w if w > 1e-9 else 0.0

"""numba kernels of the HDD's write cache as arrays: the one statement of its extent bookkeeping,
used by the Python drive (``devices.hdd.drive.HDD``, every cache mode) and the compiled core
(``core/loop.py``) alike.

* ``ext`` int64 ``[E, NE]``: one row per extent slot, columns ``E_*`` below;
* ``live`` int64 ``[E]``: the slots of the extents in the buffer (DRAM or non-volatile: accepted,
  not yet destaged home or appended to the media cache: in the host-facing queue, in the destage
  window or in flight), ``nlive`` of them, in no order (``ext[e, E_POS]`` is e's place in ``live``,
  so removal is a swap with the last).

The coalescing index is two flags per extent: ``E_INS`` is set for the one extent the index maps
its start sector to (a later extent with the same start takes the key), ``E_INE`` likewise for the
end sector; an extent leaves the index when it goes to the mechanism (or into a media-cache
append), and is no longer joinable then. A read is served from dirty data when every 4 KiB page it
touches lies wholly inside some live extent.

The FLUSH records are a table too (``fl``, columns ``FL_*``): ``wc_flushes_count`` counts a
durable extent for the records that wait for it, the caller completes the records with nothing
left (in arrival order) and ``wc_flushes_drop`` removes them.

The free slots are the caller's (a stack: the compiled core sizes its table once, see
``core/run.py:_extent_slots``; the Python drive doubles its table when the stack runs out). Slot
numbers never change a result: every decision here depends on the extents' contents only.
"""

from __future__ import annotations

from numba import njit

E_LBA = 0  # first sector
E_NS = 1  # sectors
E_SEQ = 2  # arrival number of the write that created it (FLUSH ordering)
E_WIN = 3  # 1 = in the destage window (a candidate row of the scheduler; still joinable)
E_INS = 4  # 1 = the start index maps its first sector to it
E_INE = 5  # 1 = the end index maps its end sector to it
E_POS = 6  # its place in ``live``
NE = 7

# FLUSH / FUA records (float64 rows of ``fl``, in arrival order): a FLUSH of a volatile cache, or a
# FUA write the drive does not honour, waits for the extents in the cache when it arrived
FL_SEQ = 0  # the drive's arrival number then (extents created up to it count)
FL_LEFT = 1  # extents still to become durable
FL_REQ = 2  # the request (the core's request row; the Python drive's key of it)
FL_ACK = 3  # a FUA write: time its data transfer ends (0 for a FLUSH)
NFL = 4


@njit(cache=True, inline="always", _nrt=False)
def wc_target(ext, live, nlive, lba, ns, lim):
    """(extent, how) a cached write of ``ns`` sectors at ``lba`` joins without a new extent:
    how 0 = exact overwrite of an extent starting at lba, 1 = appends to an extent ending at lba,
    2 = prepends to one starting at lba + ns (joins bounded by ``lim`` sectors); (-1, -1) none."""
    s0 = -1
    s1 = -1
    en = -1
    for k in range(nlive):
        e = live[k]
        if ext[e, E_INS] != 0:
            s = ext[e, E_LBA]
            if s == lba:
                s0 = e
            elif s == lba + ns:
                s1 = e
        if ext[e, E_INE] != 0 and ext[e, E_LBA] + ext[e, E_NS] == lba:
            en = e
    if s0 >= 0 and ext[s0, E_NS] == ns:
        return s0, 0
    if en >= 0 and ext[en, E_NS] + ns <= lim:
        return en, 1
    if s1 >= 0 and ext[s1, E_NS] + ns <= lim:
        return s1, 2
    return -1, -1


@njit(cache=True, inline="always", _nrt=False)
def wc_index(ext, live, nlive, e):
    """Extent ``e`` takes its start and end keys in the index (displacing whoever held them)."""
    s = ext[e, E_LBA]
    t = s + ext[e, E_NS]
    for k in range(nlive):
        o = live[k]
        if o != e:
            if ext[o, E_INS] != 0 and ext[o, E_LBA] == s:
                ext[o, E_INS] = 0
            if ext[o, E_INE] != 0 and ext[o, E_LBA] + ext[o, E_NS] == t:
                ext[o, E_INE] = 0
    ext[e, E_INS] = 1
    ext[e, E_INE] = 1


@njit(cache=True, inline="always", _nrt=False)
def wc_unindex(ext, e):
    """Extent ``e`` leaves the index (it goes to the mechanism, or changes its keys)."""
    ext[e, E_INS] = 0
    ext[e, E_INE] = 0


@njit(cache=True, inline="always", _nrt=False)
def wc_live_add(ext, live, nlive, e):
    """Append ``e`` to the live extents; returns the new count."""
    live[nlive] = e
    ext[e, E_POS] = nlive
    return nlive + 1


@njit(cache=True, inline="always", _nrt=False)
def wc_live_drop(ext, live, nlive, e):
    """Remove ``e`` from the live extents (swap with the last); returns the new count."""
    p = ext[e, E_POS]
    last = live[nlive - 1]
    live[p] = last
    ext[last, E_POS] = p
    ext[e, E_INS] = 0
    ext[e, E_INE] = 0
    return nlive - 1


@njit(cache=True, inline="always", _nrt=False)
def wc_dirty_hit(ext, live, nlive, lba, end, pg):
    """Every ``pg``-sector page that sectors [lba, end) touch lies wholly inside a live extent."""
    for p in range(lba // pg, -(-end // pg)):
        a = p * pg
        b = a + pg
        found = False
        for k in range(nlive):
            e = live[k]
            s = ext[e, E_LBA]
            if s <= a and b <= s + ext[e, E_NS]:
                found = True
                break
        if not found:
            return False
    return True


@njit(cache=True, inline="always", _nrt=False)
def wc_put(ext, live, nlive, lba, ns, lim, seq, enew):
    """A cached write of ``ns`` sectors at ``lba`` (the drive's arrival number ``seq``) enters the
    table: an exact overwrite of an indexed extent changes nothing (how 0); an append (1) or a prepend
    (2) within ``lim`` sectors grows that extent; otherwise free slot ``enew`` becomes a new live
    extent (how -1). A grown or new extent then holds its start and end keys of the index.
    Returns (extent, how, nlive)."""
    e, how = wc_target(ext, live, nlive, lba, ns, lim)
    if how == 0:
        return e, how, nlive
    if e >= 0:
        wc_unindex(ext, e)
        if how == 2:
            ext[e, E_LBA] = lba
        ext[e, E_NS] += ns
    else:
        e = enew
        ext[e, E_LBA] = lba
        ext[e, E_NS] = ns
        ext[e, E_SEQ] = seq
        ext[e, E_WIN] = 0
        ext[e, E_INS] = 0
        ext[e, E_INE] = 0
        nlive = wc_live_add(ext, live, nlive, e)
    wc_index(ext, live, nlive, e)
    return e, how, nlive


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

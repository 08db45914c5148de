"""Python side of the compiled core: check what a run needs, build the arrays, drive
:func:`~simulator.core.loop.run_until` between control points, hand results back.

The arrays are built from the objects the Python engine builds anyway: a
:class:`~simulator.workloads.runner.Workload` (not started) gives the job threads with their
limits, offset generators (fio's random streams) and statistics collectors; its devices give their
parameters (an HDD's kernel arrays, phase and start cylinder come from ``HDD.__init__``, so the
HDD's configuration is turned into numbers in one place). After the run the threads and devices
are left as the Python engine would leave them for reporting: ``Workload.results()`` and
``Device.stats()`` work unchanged, and the fio JSON comes from the same writer.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from simulator.core import layout as L
from simulator.core import loop
from simulator.core.lazy import copy_touched, copy_touched_table, lazy_zeros
from simulator.devices.hdd import wcache_kernels as W

__all__ = ["ENGINES", "CompiledRun", "Unsupported", "choose", "run_fio_compiled", "run_with", "run_workload", "unsupported"]

#: offsets kept ready per thread (refilled from the thread's own generator)
OFFSET_BUFFER = 16384
#: completions logged before the statistics collectors take them
LOG_ROWS = 65536
_BLOCK = 4096


class Unsupported(Exception):
    """The compiled core does not cover a feature this run uses (the message says which)."""


def _dev_kind(dev: Any) -> tuple[int, str | None]:
    from simulator.devices.blocklayer import BlockLayer
    from simulator.devices.hdd.drive import HDD, DualActuatorHDD
    from simulator.devices.simple import QueueDevice

    if type(dev) is BlockLayer:
        if not dev.cfg.merge_flushes:
            return -1, f"{dev.path}: block layer with merge_flushes off"
        if dev._tags != dev.nr_requests or dev._waiters or dev._at_dev or dev._n_sched or dev._flush_wait \
                or dev._flush_running is not None or dev._flush_pending:
            return -1, f"{dev.path}: the block layer holds state from an earlier run (persist_state)"
        kind, why = _dev_kind(dev.dev)
        if why:
            return -1, why
        if kind == L.DK_BLK:
            return -1, f"{dev.path}: a block layer over a block layer"
        return L.DK_BLK, None
    if type(dev) is QueueDevice:
        return L.DK_QUEUE, None
    from simulator.devices.ssd.device import SSD

    if type(dev) is SSD:
        from simulator.devices.ssd.kernels import in_flight

        if in_flight(dev._S):
            return -1, f"{dev.path}: the drive holds state from an earlier run (persist_state)"
        return L.DK_SSD, None
    if type(dev) is DualActuatorHDD:
        if dev._inside:
            return -1, f"{dev.path}: the drive holds state from an earlier run (persist_state)"
        for a in dev.actuators:
            kind, why = _dev_kind(a)
            if why:
                return -1, why
        return L.DK_DUAL, None
    if type(dev) is HDD:
        wc = dev._wc
        if wc not in ("off", "volatile", "persistent", "media_cache"):
            return -1, f"{dev.path}: HDD write cache mode {wc!r} (covered: off, volatile, persistent, media_cache)"
        if dev.trace is not None:
            return -1, f"{dev.path}: a media trace is requested"
        if dev._n or dev._dirty or dev._hostq or dev._busy or dev._outstanding or dev._blocked or dev._flushes \
                or dev._dirty_bytes or dev._dram or dev._mc_bytes or dev._qdw:
            return -1, f"{dev.path}: the drive holds state from an earlier run (persist_state)"
        return L.DK_HDD, None
    from simulator.ceph.rbd import RbdImage

    if isinstance(dev, RbdImage):  # unsupported()/run_workload() send RBD workloads to the Ceph core first
        return -1, f"{dev.path}: an RBD image next to other devices (the Ceph core drives RBD images only)"
    return -1, f"device kind {type(dev).__name__} ({getattr(dev, 'path', '?')})"


def _extent_slots(dev: Any) -> int:
    """Most extents an HDD's DRAM or non-volatile write cache can hold at once."""
    if dev._wc == "off":
        return 0
    if dev._max_seg:
        return dev._max_seg
    return max(1, int(dev._wc_size) // dev._ss)


#: entries per map a drive's write-cache index starts with (the Python drive's start; loop._h_grow_index doubles it)
INDEX_START = 128

#: extent slots a media cache's table starts with beyond its DRAM stage's (a run doubles them in place
#: as the Python drive does: loop._h_grow_extents, HI_ECAP)
MC_SLOTS_START = 4096
#: int64 columns per extent slot of the device core's tables (hext's W.NE, hlive, hefree, hdq, hdr)
EXTENT_SLOT_WORDS = W.NE + 4
#: most bytes of address space the HDDs' worst-case extent blocks of one State may reserve. The blocks
#: are lazy_zeros mappings (MAP_NORESERVE): memory only for the slots a run uses, address space for the
#: worst case (a media cache full of one-sector extents). 2^44 bytes = 16 TiB of the 128 TiB a process
#: has: ~14,000 LUNs of the Exos 2X14 (7 GB media cache each: 13.7 M slots, 1.2 GB of address space).
EXTENT_RESERVE_MAX = 1 << 44


def _mc_slots(dev: Any) -> int:
    """Most extents a media cache can hold (one per sector of it; 0 for the other modes)."""
    if dev._wc != "media_cache":
        return 0
    return int(dev._mc_size) // dev._ss + 1


def _table_slots(dev: Any) -> tuple[int, int]:
    """An HDD's extent table: (its slots at the start, its worst case). The worst case is reserved,
    the start used, doubled in place as extents arrive (loop._h_grow_extents)."""
    base = _extent_slots(dev) + 2
    mc = _mc_slots(dev)
    return base + min(mc, MC_SLOTS_START), base + mc


def fixed_table_why(tops: Sequence[Any]) -> str | None:
    """Why the HDDs below ``tops`` cannot share one State: their worst-case extent blocks (one per HDD,
    each the largest HDD's, run.device_arrays) would reserve more than EXTENT_RESERVE_MAX bytes of
    address space (no memory: the tables grow in place). None = they can."""
    hdds = [d for d in device_closure(tops)[0] if _dev_kind(d)[0] == L.DK_HDD]
    if not hdds:
        return None
    worst = max(hdds, key=lambda d: _table_slots(d)[1])
    nbytes = len(hdds) * _table_slots(worst)[1] * EXTENT_SLOT_WORDS * 8
    if nbytes > EXTENT_RESERVE_MAX:
        return (f"{len(hdds)} HDDs whose extent tables may each hold {_table_slots(worst)[1]:,} extents ({worst.path}: "
                f"a media cache of {worst._mc_size:,} bytes) would reserve {nbytes / 2**30:,.1f} GiB of address space "
                f"for them (the compiled core reserves at most {EXTENT_RESERVE_MAX / 2**30:,.0f} GiB)")
    return None


def _offset_mode(gen: Any) -> int:
    """0: one offset stream whatever the direction (fio's random offsets); 1: one independent stream
    per direction (sequential positions, zoned_ddir tables); -1: neither (covered for one direction
    only: the generator is asked per IO with the job's direction)."""
    from simulator.workloads.offsets import PerDirectionOffsets, RandomOffsets, SequentialOffsets

    if type(gen) is RandomOffsets:
        return 0
    if type(gen) in (SequentialOffsets, PerDirectionOffsets):
        return 1
    return -1


#: the engines a caller may ask for: the Python model, the compiled cores (where they cover the run,
#: else the Python model with the reason), or "auto": the compiled Ceph core for RBD workloads it
#: covers, the Python model otherwise (the device core only on request)
ENGINES = ("python", "compiled", "auto")


def choose(sim: Any, wl: Any, engine: str = "auto") -> str | None:
    """The one decision of which engine runs the not-started Workload ``wl``: None = the compiled
    core (:func:`run_workload`), else why the Python model runs it."""
    from simulator.core.ceph_fio import rbd_targets

    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: one of {', '.join(ENGINES)}")
    if engine == "python":
        return "engine=python was asked for"
    if engine == "auto" and not rbd_targets(wl):
        return "engine=auto runs the device core only when asked for (engine=compiled)"
    return unsupported(sim, wl)


def run_with(sim: Any, wl: Any, engine: str = "auto") -> str | None:
    """Run ``wl`` in the compiled core when :func:`choose` says so and return None; else return the
    reason and leave ``wl`` unstarted for the caller's Python run (``sim.run(until=wl.start())``)."""
    why = choose(sim, wl, engine)
    if why is None:
        run_workload(sim, wl)
    return why


def unsupported(sim: Any, wl: Any) -> str | None:
    """Why the compiled core cannot run ``wl`` on ``sim`` (None: it can). Workloads on RBD images
    are the compiled Ceph core's (:func:`simulator.core.ceph_fio.unsupported_workload`)."""
    from simulator.core.ceph_fio import rbd_targets, unsupported_workload

    if rbd_targets(wl):
        return unsupported_workload(sim, wl)
    if wl._started:
        return "the workload was already started"
    if sim.env.peek() != math.inf:
        return "events of other components are pending in the Python engine"
    if getattr(wl, "io_source", None) is not None:
        return "an application workload (io_source)"
    hdd_shapes = set()
    for th in wl.threads:
        job = th.job
        name = f"job {job.name!r}"
        if job.rate_iops is not None and not job.rate_iops[job.ddirs[0]] > 0:
            return f"{name}: rate_iops without a rate for its direction"
        if not (job.ddirs in ((0,), (1,), (2,)) or (job.is_mixed and job.ddirs == (0, 1))):
            return f"{name}: rw={job.rw} (covered: read, write, trim, randread, randwrite, randtrim, rw, randrw)"
        if job.rate_iops is not None and job.is_mixed:
            return f"{name}: rate_iops with rw={job.rw} (an open loop per direction)"
        if job.rate_iops is not None and (job.fsync or job.fdatasync or job.end_fsync):
            return f"{name}: fsync/fdatasync/end_fsync with rate_iops (flushes in an open loop)"
        if len(th.files) != 1:
            return f"{name}: several files per job"
        if th._varbs and (job.is_mixed or job.rate_iops is not None):
            return f"{name}: bssplit/bsrange with rw={job.rw} or rate_iops (sizes drawn per direction or per arrival)"
        for opt, default in (("sim_mix", None), ("rate", None),
                             ("thinktime", 0.0), ("thinktime_iotime", 0.0), ("blockalign", None)):
            if getattr(job, opt, default) not in (default,):
                return f"{name}: {opt}"
        if tuple(job.percentage_random) != (100, 100, 100):
            return f"{name}: percentage_random"
        dev = th.files[0].dev
        kind, why = _dev_kind(dev)
        if why:
            return why
        gen = th.files[0].gen
        if job.is_mixed and _offset_mode(gen) < 0:
            return f"{name}: rw={job.rw} with {type(gen).__name__} offsets (one stream shared unevenly by the directions)"
        low = dev.dev if kind == L.DK_BLK else dev
        for hd in getattr(low, "actuators", [low]):
            if _dev_kind(hd)[0] == L.DK_HDD:
                hdd_shapes.add((hd._cq.shape, hd._zt.shape, hd._tt.shape, hd._et.shape, hd._seg.shape))
        st = th.stats
        if not (getattr(st, "records_nothing", False) or hasattr(st, "add_many")):
            return f"{name}: statistics collector {type(st).__name__} has no add_many"
    if len(hdd_shapes) > 1:
        return "HDDs with different table shapes in one run"
    return fixed_table_why([th.files[0].dev for th in wl.threads])


def request_rows(kinds: Sequence[int], n: int) -> int:
    """Request rows a State needs for ``n`` requests of its owner in flight at once on devices of
    ``kinds`` (``DK_*``)."""
    n += kinds.count(L.DK_BLK)  # each block layer's own FLUSH (one at the device at a time) takes a request
    if L.DK_DUAL in kinds:
        n *= 3  # a dual-actuator drive's request has up to two parts, each a request of its own
    return n


def device_arrays(devs: Sequence[Any], dev_index: dict[int, int], R: int) -> tuple[dict[str, np.ndarray], list, list, list]:
    """The device tables of a State (``dvi``, ``dacc`` and the queue / HDD / dual-actuator / block-layer
    arrays) for ``devs`` (each at its index in ``dev_index``, the devices below block layers and both
    actuators of a dual-actuator drive included), ``R`` request rows. Returns the arrays by State
    field name and the queue devices, HDDs and block layers in the order of their rows. One builder
    for every owner of a State: the job threads (CompiledRun) and the compiled Ceph core. An HDD's
    extent table is a block for its worst case (a media cache: one extent per sector of it) of which
    the run uses a start and doubles it in place (_table_slots, loop._h_grow_extents)."""
    kinds = [_dev_kind(d)[0] for d in devs]
    queues = [d for d, k in zip(devs, kinds, strict=True) if k == L.DK_QUEUE]
    hdds = [d for d, k in zip(devs, kinds, strict=True) if k == L.DK_HDD]
    blks = [d for d, k in zip(devs, kinds, strict=True) if k == L.DK_BLK]
    duals = [d for d, k in zip(devs, kinds, strict=True) if k == L.DK_DUAL]
    nH = len(hdds)
    nQ = len(queues)
    # devices
    dvi = np.zeros((len(devs), 3), np.int64)  # kind, index in its kind's arrays, a job has started on it
    counts = {L.DK_QUEUE: 0, L.DK_HDD: 0, L.DK_BLK: 0, L.DK_DUAL: 0, L.DK_SSD: 0}
    dacc = np.zeros((len(devs), L.NDA))
    for i, (d, k) in enumerate(zip(devs, kinds, strict=True)):
        dvi[i, 0] = k
        dvi[i, 1] = counts[k]
        counts[k] += 1
        a = dacc[i]
        a[L.DA_T0] = d._t0
        a[L.DA_TQ] = d._tq
        a[L.DA_QAREA] = d._qarea
        a[L.DA_INSIDE] = d._inside
        a[L.DA_BUSY] = d._busy_acc
        a[L.DA_COMP : L.DA_COMP + 4] = d.completed
        a[L.DA_BYTES : L.DA_BYTES + 4] = d.bytes
    # queue devices
    nq = max(nQ, 1)
    qi = np.zeros((nq, L.NQI), np.int64)
    qf = np.zeros((nq, L.NQF))
    qring = np.zeros((nq, R), np.int64)
    need = 0
    dist_codes = {"deterministic": 0, "exponential": 1, "uniform": 2, "lognormal": 3, "erlang": 4}
    for q, d in enumerate(queues):
        cfg = d.cfg
        dist = cfg.service
        code = dist_codes[dist.dist]
        draws = (0, 1, 1, 2, getattr(dist, "k", 1))[code]
        qi[q, L.QI_SERVERS] = cfg.servers
        qi[q, L.QI_FREE] = d._free
        qi[q, L.QI_DIST] = code
        qi[q, L.QI_K] = getattr(dist, "k", 1)
        qi[q, L.QI_NEED] = draws * (R + 1)
        need = max(need, draws * (R + 1))
        qf[q, L.QF_P0] = dist.value if code == 0 else (dist.low if code == 2 else dist.mean)
        qf[q, L.QF_P1] = getattr(dist, "high", 0.0) if code == 2 else getattr(dist, "cv", 0.0)
        qf[q, L.QF_BW] = float(cfg.bandwidth or 0.0)
        qf[q, L.QF_FLUSH] = cfg.flush_time
    ucap = max(4 * _BLOCK, -(-4 * need // _BLOCK) * _BLOCK) + _BLOCK
    qu = np.zeros((nq, ucap))
        # HDDs
    if hdds:
        h0 = hdds[0]
        cqs, zts, tts, ets, segs = h0._cq.shape, h0._zt.shape, h0._tt.shape, h0._et.shape, h0._seg.shape
    else:
        from simulator.devices.hdd import kernels as K

        cqs, zts, tts, ets, segs = (1, K.NCOL), (1, 6), (2, 2), (3, 1), (1, 3)
    nh = max(nH, 1)
    from simulator.devices.hdd import kernels as K

    hpar = np.zeros((nh, K.NPAR))
    hcq = np.zeros((nh, *cqs))
    hcr = np.zeros((nh, cqs[0]), np.int64)
    # the drive models' constant tables, one row per distinct set (HI_PROF): drives of one model share it
    prof: dict[bytes, int] = {}
    prof_of = []
    for d in hdds:
        key = b"".join(np.ascontiguousarray(a, np.float64).tobytes() for a in (d._zt, d._sk, d._tt, d._et))
        prof_of.append(prof.setdefault(key, len(prof)))
    npf = max(len(prof), 1)
    hzt = np.zeros((npf, *zts))
    hsk = np.zeros((npf, 2, K.NSEEK))
    htt = np.zeros((npf, *tts))
    het = np.zeros((npf, *ets))
    hseg = np.zeros((nh, *segs))
    hi = np.zeros((nh, L.NHI), np.int64)
    hf = np.zeros((nh, L.NHF))
    # per-drive tables sized for the worst case, used from their start: lazy_zeros, memory only for the
    # pages used (np.zeros' huge pages would make each drive's whole block resident; simulator.core.lazy)
    hhq = lazy_zeros((nh, R), np.int64)
    hlk = lazy_zeros((nh, 2 * R + 16, 2))
    # extent slots: at most dirty_segments extents are in the cache (a cache bounded by bytes only: at
    # most one per sector of it; a media cache: one per sector of it beside): a block per drive for
    # the worst case, of which a run uses its start (HI_ECAP) and doubles it in place as the Python
    # drive does (loop._h_grow_extents); the rows beyond stay zeros, untouched, without memory (a
    # 7 GB media cache per LUN reserves 1.2 GB of address space, fixed_table_why bounds the total)
    E = max((_table_slots(d)[1] for d in hdds), default=2)
    hext = lazy_zeros((nh, E, W.NE), np.int64)
    hlive = lazy_zeros((nh, E), np.int64)
    hfl = lazy_zeros((nh, R + 1, L.NFL))
    # the write cache's index (wcache_kernels: start/end/page hash maps), at most half full: a block per
    # drive for the worst case, of which a run uses the first INDEX_START entries per map and doubles
    # them as the Python drive does (loop._h_grow_index, HI_IXCAP); the rows beyond stay zeros, without
    # memory (a 1,008-OSD write run touched nearly every page of 3 MB per drive when the maps were
    # their blocks' full size)
    cap = max((W.wc_index_capacity(_extent_slots(d), int(d._wc_size), 4096) for d in hdds), default=0)
    rows = W.wc_index_rows(cap)
    hidx = lazy_zeros((nh, 3, rows, 2), np.int64)
    c0 = min(INDEX_START, rows - 1)
    for h, d in enumerate(hdds):
        W.wc_init_index(hidx[h, :, : c0 + 1], d._pg)
    # the free extent slots, a stack per drive stored as loop._h_efree codes them (a fresh stack is zeros)
    hefree = lazy_zeros((nh, E), np.int64)
    hdq = lazy_zeros((nh, E), np.int64)
    hdr = lazy_zeros((nh, E), np.int64)  # media_cache: the DRAM stage's extents (hdq: the cleaning list)
    hqw = lazy_zeros((nh, R), np.int64)  # queued_write_candidates: the refused writes, oldest first
    hbl = lazy_zeros((nh, R), np.int64)
    link_row: dict[int, int] = {}
    for h, d in enumerate(hdds):
        hpar[h] = d._par
        p = prof_of[h]
        hi[h, L.HI_PROF] = p
        hzt[p] = d._zt
        hsk[p] = d._sk
        htt[p] = d._tt
        het[p] = d._et
        hseg[h] = d._seg
        hi[h, L.HI_MECH] = -1
        hi[h, L.HI_SEQ] = d._seq
        hi[h, L.HI_QD] = d._qd
        hi[h, L.HI_WINDOW] = d._window
        hi[h, L.HI_WC] = d._wcm
        hi[h, L.HI_MC_WCE] = 1 if d._mc_wce else 0
        hi[h, L.HI_QWC] = 1 if d._qwc else 0
        hi[h, L.HI_DIRECT] = d.direct_writes
        hi[h, L.HI_APPENDS] = d.appends
        hf[h, L.HF_MC_SIZE] = d._mc_size
        hf[h, L.HF_MC_HW] = d._mc_hw
        if d._mc:
            hi[h, L.HI_MC_ILV] = d._mc_ilv
            hi[h, L.HI_MC_LOG] = d._mc_log
            hf[h, L.HF_MC_BATCH] = d._mc_batch
            hf[h, L.HF_MC_CYL] = d._mc_cyl
            hf[h, L.HF_MC_SPT] = d._mc_spt
            hf[h, L.HF_MC_SPS] = d._mc_sps
            hf[h, L.HF_MC_SETUP] = d._mc_setup
        hf[h, L.HF_MC_DELAY] = d._mc_delay
        hf[h, L.HF_MC_TLAST] = d._t_host
        hi[h, L.HI_MAXSEG] = d._max_seg
        hi[h, L.HI_ECAP] = hi[h, L.HI_EFREE] = _table_slots(d)[0]
        hi[h, L.HI_IXCAP] = c0
        hi[h, L.HI_READHITS] = d.read_hits
        hi[h, L.HI_DESTAGED] = d.destaged
        hi[h, L.HI_DESTAGED_BYTES] = d.destaged_bytes
        hi[h, L.HI_IDLE] = 1 if d._idle_destage else 0
        hi[h, L.HI_SS] = d._ss
        hi[h, L.HI_FUA_OK] = 1 if d._fua_ok else 0
        hi[h, L.HI_MERGE] = d._merge
        hi[h, L.HI_PG] = d._pg
        hi[h, L.HI_OVERWRITES] = d.overwrites
        hi[h, L.HI_COALESCED] = d.coalesced
        hi[h, L.HI_DIRTY_READ_HITS] = d.dirty_read_hits
        hf[h, L.HF_OVH_R] = d._ovh_r
        hf[h, L.HF_OVH_W] = d._ovh_w
        hf[h, L.HF_OVH_HIT] = d._ovh_hit
        hf[h, L.HF_OVH_FLUSH] = d._ovh_flush
        hf[h, L.HF_LRATE] = d._lrate
        hf[h, L.HF_MECH_END] = d._mech_end
        hf[h, L.HF_WC_SIZE] = d._wc_size
        hf[h, L.HF_DIRTY_BYTES] = d._dirty_bytes
        hf[h, L.HF_HW] = d._hw
        hf[h, L.HF_NV_ACK] = d._nv_ack
        # the host link: its state lives in the row of the first drive using it
        owner = link_row.setdefault(id(d.link), h)
        hi[h, L.HI_LINK] = owner
        if owner == h:
            hf[h, L.HF_LINK_BUSY] = d.link.busy
            iv = [x for x in d.link._iv]
            hi[h, L.HI_LK_N] = len(iv)
            for j, (s, e) in enumerate(iv):
                hlk[h, j] = (s, e)
    # dual-actuator drives
    xi = np.zeros((max(len(duals), 1), L.NXI), np.int64)
    for x, d in enumerate(duals):
        xi[x, L.XI_ACT0] = dev_index[id(d.actuators[0])]
        xi[x, L.XI_ACT1] = dev_index[id(d.actuators[1])]
        xi[x, L.XI_HALF] = d._half
    # block layers
    nb = max(len(blks), 1)
    NR = max([b.nr_requests for b in blks] + [1]) + 1
    bi = np.zeros((nb, L.NBI), np.int64)
    bf = np.zeros((nb, L.NBF))
    bso = np.zeros((nb, 2, NR, L.NSO), np.int64)
    bdl = np.zeros((nb, 2, NR))
    bfq = np.zeros((nb, NR), np.int64)
    bwt = np.zeros((nb, R), np.int64)
    bfw = np.zeros((nb, NR), np.int64)
    brun = np.zeros((nb, 2, NR), np.int64)
    bpend = np.zeros((nb, NR), np.int64)
    for b, d in enumerate(blks):
        cfg = d.cfg
        bi[b, L.BI_LOWER] = dev_index[id(d.dev)]
        bi[b, L.BI_QDEPTH] = d.qdepth
        bi[b, L.BI_DEADLINE] = 1 if d.deadline else 0
        bi[b, L.BI_FBATCH] = d._fifo_batch
        bi[b, L.BI_WSTARVED] = cfg.writes_starved
        bi[b, L.BI_SKIPFL] = 1 if d._skip_flush else 0
        bi[b, L.BI_NR] = d.nr_requests
        bi[b, L.BI_TAGS] = d._tags
        bi[b, L.BI_SEQ] = d._seq
        if d._last is not None:
            bi[b, L.BI_LASTOFF], bi[b, L.BI_LASTSEQ] = d._last
            bi[b, L.BI_HASLAST] = 1
        bi[b, L.BI_BDIR] = d._bdir
        bi[b, L.BI_BATCHING] = d._batching
        bi[b, L.BI_STARVED] = d._starved
        bi[b, L.BI_TAG_WAITS] = d.tag_waits
        bi[b, L.BI_MAX_WAITING] = d.max_waiting
        bi[b, L.BI_MAX_QUEUED] = d.max_queued
        bi[b, L.BI_FL_SKIPPED] = d.flushes_skipped
        bi[b, L.BI_FL_MERGED] = d.flushes_merged
        bi[b, L.BI_DEV_FLUSHES] = d.device_flushes
        bi[b, L.BI_DIRECT] = d.direct
        bi[b, L.BI_READS_QUEUED] = d.reads_queued
        bf[b, L.BF_EXPIRE], bf[b, L.BF_EXPIRE + 1] = d._expire
        bf[b, L.BF_BUSY_SINCE] = d._busy_since
        bf[b, L.BF_READ_WAIT] = d.read_wait
    ssd_arrays = _ssd_arrays([d for d, k in zip(devs, kinds, strict=True) if k == L.DK_SSD], R)
    arrays = dict(
        **ssd_arrays, dvi=dvi, dacc=dacc, qi=qi, qf=qf, qring=qring, qu=qu, hpar=hpar, hcq=hcq, hcr=hcr, hzt=hzt, hsk=hsk, htt=htt,
        het=het, hseg=hseg, hi=hi, hf=hf, hhq=hhq, hlk=hlk, hext=hext, hefree=hefree, hdq=hdq, hbl=hbl, hlive=hlive,
        hfl=hfl, hidx=hidx, hdr=hdr, hqw=hqw, bi=bi, bf=bf, bso=bso, bdl=bdl, bfq=bfq, bwt=bwt, bfw=bfw, brun=brun, bpend=bpend, xi=xi,
    )
    return arrays, queues, hdds, blks


def _dev_kind_quiet(d: Any) -> int:
    from simulator.devices.ssd.device import SSD

    return L.DK_SSD if type(d) is SSD else -1


def ssd_events(devs: Sequence[Any]) -> int:
    """Heap rows the SSDs among ``devs`` may hold besides their completions: one per die, one metadata commit."""
    from simulator.devices.ssd.device import SSD

    return sum(d.cfg.flash.dies + 2 for d in devs if type(d) is SSD)


#: mapping units a read of an SSD may span in the compiled core (16 MiB of 4 KiB units); a larger read stops the run
SSD_READ_UNITS = 4096


#: SSD tables with a row per LPN or NAND slot (lazily zeroed: a large drive costs memory only where written)
_SSD_SPARSE = ("l2p", "p2l", "dirty")
#: SSD tables sized for the worst case and used from their start (page and transaction rows: lazily zeroed, their
#: free stacks written only where used, kernels._link_free)
_SSD_LAZY = ("tx", "txf", "pg", "pgf", "rq", "rqf", "ev")


def _ssd_arrays(ssds: Sequence[Any], R: int) -> dict[str, np.ndarray]:
    """The ``s_*`` arrays of a State: each SSD's kernel state (devices.ssd.kernels.SSDState, built by
    the Python device at its construction: configuration, preconditioned FTL) copied into its row,
    with tables for ``R`` requests. Each SSD remembers its rows' shapes for the write-back."""
    from simulator.devices.ssd import kernels as SK
    from simulator.devices.ssd.device import txn_margin

    states = []
    for d in ssds:  # grow changes only ``si`` of the state it is given; every table is copied into the stacks below
        c = SK.grow(d._S._replace(si=d._S.si.copy()), d.cfg, n_req=R, n_txn=2 * txn_margin(d.cfg) + 16 * R, n_scr=SSD_READ_UNITS)
        d._core_shapes = {f: getattr(c, f).shape for f in SK.SSDState._fields}
        states.append(c._asdict())
    out = {}
    for f in SK.SSDState._fields:
        dtype, ndim = SK.FIELD_TYPES[f]
        arrs = [c.pop(f) for c in states]  # (each drive's grown table is freed once stacked)
        shape = tuple(max(a.shape[i] for a in arrs) for i in range(ndim)) if arrs else (1,) * ndim
        n = max(len(arrs), 1)
        lazy = f in _SSD_SPARSE or f in _SSD_LAZY
        stack = lazy_zeros((n, *shape), dtype) if lazy else np.zeros((n, *shape), dtype)
        for i, a in enumerate(arrs):
            if lazy:
                copy_touched_table(stack[i][: a.shape[0]], a)
            else:
                stack[i][tuple(slice(0, k) for k in a.shape)] = a
        out["s_" + f] = stack
    return out


def ssd_hand_over(st: L.State, devs: Sequence[Any]) -> None:
    """Give the SSDs the NAND events still in the heap of a finished run (die batches, metadata
    commits of buffered writes and forced flushes), at their times and in the heap's order, so that
    the Python engine continues the drives where the run left them (call after the clock advance)."""
    n = int(st.gi[L.GI_HN])
    rows = sorted((float(st.ht[i]), int(st.hs[i]), i) for i in range(n) if st.hk[i] in (L.EV_SSD_DIE, L.EV_SSD_META))
    for t, _seq, i in rows:
        devs[int(st.hg[i])].schedule_pending(t, int(st.ha[i]) if st.hk[i] == L.EV_SSD_DIE else -1)


def ssd_error(st: L.State, devs: Sequence[Any] | None = None) -> str | None:
    """The first SSD kernel error of a compiled run (devices.ssd.kernels ERR_*: the kernel that set it returned
    without the events it owed, so the run can end with nothing left to do), in words and naming the drive (``devs``:
    the State's devices, :func:`device_state`'s ``devs``); None without one."""
    from simulator.devices.ssd import kernels as SK

    if st.s_si.shape[0] == 0:
        return None
    bad = np.nonzero(st.s_si[:, SK.SI_ERR])[0]
    if not bad.size:
        return None
    i = int(bad[0])
    err = int(st.s_si[i, SK.SI_ERR])
    ssds = [d for d in devs if _dev_kind_quiet(d) == L.DK_SSD] if devs is not None else []
    name = ssds[i].path if i < len(ssds) else f"SSD #{i}"
    return f"{name}: {SK.ERROR_TEXT.get(err, f'SSD kernel error {err}')}"


def _ssd_write_back(st: L.State, ssds: Sequence[Any]) -> None:
    """Give each SSD its row of the ``s_*`` arrays back: the FTL's arrays in place, the rest as its
    new kernel state (request rows: those of the compiled run)."""
    from simulator.devices.ssd import kernels as SK

    for i, d in enumerate(ssds):
        err = int(st.s_si[i, SK.SI_ERR])
        if err:
            raise RuntimeError(f"{d.path}: compiled core: {SK.ERROR_TEXT.get(err, f'SSD kernel error {err}')}")
        fields = {}
        for f in SK.SSDState._fields:
            a = getattr(st, "s_" + f)[i][tuple(slice(0, k) for k in d._core_shapes[f])]
            if f in SK.FTL_FIELDS:
                dst = getattr(d.ftl, SK.FTL_FIELDS[f])
                if f in _SSD_SPARSE:
                    copy_touched(dst, a, both=True)
                else:
                    dst[...] = a
                fields[f] = dst
            elif f in _SSD_SPARSE:
                fields[f] = d._S.dirty
                copy_touched(fields[f], a, both=True)
            elif f in _SSD_LAZY:
                fields[f] = lazy_zeros(a.shape, a.dtype)
                copy_touched_table(fields[f], a)
            else:
                fields[f] = a.copy()
        d._S = SK.SSDState(**fields)
        n = d._S.rq.shape[0]
        d._reqs = [None] * n
        d._free_ids = list(range(n - 1, -1, -1))
        d._rid = {}


def device_closure(tops: Sequence[Any]) -> tuple[list[Any], dict[int, int]]:
    """The devices of a State: ``tops`` (the devices requests are submitted to, first seen first),
    then the devices below the block layers, then both actuators of each dual-actuator drive (they
    share the host link). Returns the list and each device's index by ``id``."""
    from simulator.devices.hdd.drive import DualActuatorHDD

    devs: list[Any] = []
    dev_index: dict[int, int] = {}

    def add(x: Any) -> None:
        if id(x) not in dev_index:
            dev_index[id(x)] = len(devs)
            devs.append(x)

    for d in tops:
        add(d)
    for d in list(devs):  # the devices below the block layers
        if _dev_kind(d)[0] == L.DK_BLK:
            add(d.dev)
    for d in list(devs):  # both actuators of a dual-actuator drive (they share the host link)
        if type(d) is DualActuatorHDD:
            for a in d.actuators:
                add(a)
        elif isinstance(getattr(d, "parent", None), DualActuatorHDD):
            for a in d.parent.actuators:
                add(a)
    return devs, dev_index


def device_state(tops: Sequence[Any], n_req: int, now: float) -> tuple[L.State, dict[str, Any]]:
    """A State holding only devices, for an owner outside the job threads (the compiled Ceph core):
    ``tops`` are the devices it submits to, ``n_req`` its requests in flight at most. Its requests
    carry ``RI_THR`` < 0; their completions are logged in ``lgt`` (``GI_LOGN`` of them) for the owner
    (loop._t_done). Returns the State and what :func:`write_back_devices` needs (``devs``, ``queues``,
    ``blks``, ``hdds``) with ``dev_index``."""
    devs, dev_index = device_closure(tops)
    kinds = [_dev_kind(d)[0] for d in devs]
    R = request_rows(kinds, n_req + 1)
    C = R + 4 * kinds.count(L.DK_HDD) + 64 + ssd_events(devs)
    gi = np.zeros(L.NGI, np.int64)
    gf = np.zeros(L.NGF)
    gf[L.GF_NOW] = now
    gi[L.GI_FREE] = R
    dv, queues, hdds, blks = device_arrays(devs, dev_index, R)
    st = L.State(
        gi=gi, gf=gf, ht=np.zeros(C), hs=np.zeros(C, np.int64), hk=np.zeros(C, np.int64), hg=np.zeros(C, np.int64),
        ha=np.zeros(C, np.int64), rqi=np.zeros((R, L.NRI), np.int64), rqf=np.zeros((R, L.NRF)),
        rfree=np.arange(R - 1, -1, -1, dtype=np.int64), thi=np.zeros((0, L.NTI), np.int64), thf=np.zeros((0, L.NTF)),
        offs=np.zeros((0, 1), np.int64), ru=np.zeros((0, 1)), offw=np.zeros((0, 1), np.int64), mu=np.zeros((0, 1)),
        bsz=np.zeros((0, 1), np.int64), lg=np.zeros((1, 5)), lgt=np.zeros(R, np.int64), **dv,
    )  # fmt: skip
    return st, {"devs": devs, "dev_index": dev_index, "queues": queues, "blks": blks, "hdds": hdds}


def write_back_devices(st: L.State, devs: Sequence[Any], queues: Sequence[Any], blks: Sequence[Any],
                       hdds: Sequence[Any], report: bool = False) -> None:
    """Put the device tables of ``st`` back into the Python devices (accounting, queue devices' unused
    uniforms, block layers' state and counters, HDDs' mechanism state and counters), for reporting.
    The lists are the ones :func:`device_arrays` returned. ``report``: the run goes on in ``st``
    (the compiled Ceph core's held state, ceph_fio): the queue devices' uniforms stay there, and an
    HDD's host FIFO is stood for by placeholders of its length (``stats()`` reads its length only;
    the hand-over's full write-back empties it)."""
    for i, d in enumerate(devs):
        a = st.dacc[i]
        d._t0 = float(a[L.DA_T0])
        d._tq = float(a[L.DA_TQ])
        d._qarea = float(a[L.DA_QAREA])
        d._inside = int(a[L.DA_INSIDE])
        d._busy_acc = float(a[L.DA_BUSY])
        d.completed = [int(x) for x in a[L.DA_COMP : L.DA_COMP + 4]]
        d.bytes = [int(x) for x in a[L.DA_BYTES : L.DA_BYTES + 4]]
    for q, d in enumerate(queues if not report else ()):
        pos, ln = int(st.qi[q, L.QI_UPOS]), int(st.qi[q, L.QI_ULEN])
        br = d.rand
        br._buf = st.qu[q, pos:ln].tolist() + br._buf[br._i :]
        br._i = 0
        d._free = int(st.qi[q, L.QI_FREE])
        st.qi[q, L.QI_UPOS] = st.qi[q, L.QI_ULEN]
    for b, d in enumerate(blks):
        bi, bf = st.bi[b], st.bf[b]
        d._tags = int(bi[L.BI_TAGS])
        d._at_dev = int(bi[L.BI_ATDEV])
        d._n_sched = int(bi[L.BI_NSCHED])
        d._seq = int(bi[L.BI_SEQ])
        d._last = (int(bi[L.BI_LASTOFF]), int(bi[L.BI_LASTSEQ])) if bi[L.BI_HASLAST] else None
        d._bdir = int(bi[L.BI_BDIR])
        d._batching = int(bi[L.BI_BATCHING])
        d._starved = int(bi[L.BI_STARVED])
        d.tag_waits = int(bi[L.BI_TAG_WAITS])
        d.max_waiting = int(bi[L.BI_MAX_WAITING])
        d.max_queued = int(bi[L.BI_MAX_QUEUED])
        d.flushes_skipped = int(bi[L.BI_FL_SKIPPED])
        d.flushes_merged = int(bi[L.BI_FL_MERGED])
        d.device_flushes = int(bi[L.BI_DEV_FLUSHES])
        d.direct = int(bi[L.BI_DIRECT])
        d.reads_queued = int(bi[L.BI_READS_QUEUED])
        # the requests sleeping for a tag, stood for by placeholders (stats() counts them: waiting()); the
        # requests stay in the compiled state (held by the Ceph core; the hand-over drains them first)
        d._waiters = deque([None] * int(bi[L.BI_W_REQ]))
        d._busy_since = float(bf[L.BF_BUSY_SINCE])
        d.read_wait = float(bf[L.BF_READ_WAIT])
    _ssd_write_back(st, [d for d in devs if _dev_kind_quiet(d) == L.DK_SSD])
    for h, d in enumerate(hdds):
        d._par[:] = st.hpar[h]
        d._seg[:] = st.hseg[h]
        d.read_hits = int(st.hi[h, L.HI_READHITS])
        d.destaged = int(st.hi[h, L.HI_DESTAGED])
        d.destaged_bytes = int(st.hi[h, L.HI_DESTAGED_BYTES])
        d.overwrites = int(st.hi[h, L.HI_OVERWRITES])
        d.coalesced = int(st.hi[h, L.HI_COALESCED])
        d.dirty_read_hits = int(st.hi[h, L.HI_DIRTY_READ_HITS])
        d._busy = bool(st.hi[h, L.HI_BUSY])
        d._mech_end = float(st.hf[h, L.HF_MECH_END])
        d._dirty_bytes = int(st.hf[h, L.HF_DIRTY_BYTES])
        d._seq = int(st.hi[h, L.HI_SEQ])
        d.link.busy = float(st.hf[int(st.hi[h, L.HI_LINK]), L.HF_LINK_BUSY])
        # the extents left in the write cache, for reporting (HDD.dirty_extents); the drive's index,
        # queue and pending events stay in the compiled state: the Python drive
        # cannot continue this run (unsupported() refuses a drive with state)
        d._n = int(st.hi[h, L.HI_N])
        d._outstanding = int(st.hi[h, L.HI_OUT])
        if report or any(x is None for x in d._hostq):
            d._hostq = deque([None] * int(st.hi[h, L.HI_HQ_CNT]))
        if d._wc != "off":
            # the rows up to the last live extent, at least the drive's own table (its free list's rows):
            # a copy of the whole worst-case table would make every drive's block resident
            nlive = int(st.hi[h, L.HI_NLIVE])
            top = max(len(d._ext), int(st.hlive[h, :nlive].max()) + 1 if nlive else 0)
            d._ext = st.hext[h, :top].copy()
            d._live = st.hlive[h, :top].copy()
            d._nlive = nlive
            d._ndirty = int(st.hi[h, L.HI_NDIRTY])
        d.appends = int(st.hi[h, L.HI_APPENDS])
        d.direct_writes = int(st.hi[h, L.HI_DIRECT])
        d._t_host = float(st.hf[h, L.HF_MC_TLAST])  # the idle timer's start (media_cache and persistent)
        if d._mc:
            d._mc_bytes = int(st.hf[h, L.HF_MC_BYTES])
            d._mc_log = int(st.hi[h, L.HI_MC_LOG])
            d._mc_owe = int(st.hi[h, L.HI_MC_OWE])
            d._ndram = int(st.hi[h, L.HI_NDRAM])


class CompiledRun:
    """One compiled run of a not-yet-started Workload."""

    def __init__(self, sim: Any, wl: Any):
        why = unsupported(sim, wl)
        if why:
            raise Unsupported(why)
        self.sim = sim
        self.wl = wl
        self.threads = list(wl.threads)
        devs, dev_index = device_closure([th.files[0].dev for th in self.threads])
        self.devs = devs
        self.dev_index = dev_index
        self.st = self._build()
        self.status = -1
        # the stonewalled groups: contiguous runs of self.threads (Workload builds them in order)
        index = {id(th): i for i, th in enumerate(self.threads)}
        self._bounds = [(index[id(p[0])], index[id(p[-1])] + 1) for p in wl._phases if p]
        self._phase = -1

    # ---------------------------------------------------------------------------- build
    def _build(self) -> L.State:
        threads, devs = self.threads, self.devs
        nT = len(threads)
        R = sum(th._depth for th in threads) + 1
        kinds = [_dev_kind(d)[0] for d in devs]
        nH = kinds.count(L.DK_HDD)
        R = request_rows(kinds, R)
        C = R + 2 * nH + 4 * nT + 16 + ssd_events(devs)

        gi = np.zeros(L.NGI, np.int64)
        gf = np.zeros(L.NGF)
        gf[L.GF_NOW] = self.sim.env.now
        gi[L.GI_FREE] = R
        # requests
        rqi = np.zeros((R, L.NRI), np.int64)
        rqf = np.zeros((R, L.NRF))
        rfree = np.arange(R - 1, -1, -1, dtype=np.int64)
        # threads
        thi = np.zeros((nT, L.NTI), np.int64)
        thf = np.zeros((nT, L.NTF))
        offs = np.zeros((nT, OFFSET_BUFFER + max(th._depth for th in threads) + 2), np.int64)
        ru = np.zeros((nT, 4 * _BLOCK if any(th._rate is not None for th in threads) else 1))
        mixed = [bool(th._mixed) for th in threads]
        offw = np.zeros((nT, offs.shape[1] if any(mixed) else 1), np.int64)
        mu = np.zeros((nT, 4 * _BLOCK if any(mixed) else 1))
        bsz = np.zeros((nT, offs.shape[1] if any(th._varbs for th in threads) else 1), np.int64)
        for t, th in enumerate(threads):
            job = th.job
            ddir = job.ddirs[0]
            thi[t, L.TI_DEV] = self.dev_index[id(th.files[0].dev)]
            thi[t, L.TI_DEPTH] = th._depth
            thi[t, L.TI_DDIR] = ddir
            thi[t, L.TI_BS] = th._bs[0]
            thi[t, L.TI_BS1] = th._bs[1]
            thi[t, L.TI_FUA] = 1 if th._fua else 0
            thi[t, L.TI_MIXED] = 1 if th._mixed else 0
            thi[t, L.TI_VARBS] = 1 if th._varbs else 0
            thi[t, L.TI_MIXREAD] = th._mix_read
            thi[t, L.TI_FSYNCN] = th._fsync_n or 0
            thi[t, L.TI_FDSYNCN] = th._fdsync_n or 0
            thi[t, L.TI_BLOCKING] = 1 if th._blocking else 0
            thi[t, L.TI_BLOCKER] = -1
            thi[t, L.TI_ENDFSYNC] = 1 if (job.end_fsync and 1 in th._ddirs) else 0
            thi[t, L.TI_OFFMODE] = 1 if (th._mixed and _offset_mode(th.files[0].gen) == 1) else 0
            thi[t, L.TI_IOSLIM] = -1 if math.isinf(th._ios_limit) else int(th._ios_limit)
            thi[t, L.TI_RECORD] = 0 if getattr(th.stats, "records_nothing", False) else 1
            thf[t, L.TF_RAMP] = job.ramp_time
            thf[t, L.TF_RUNTIME] = th._runtime
            thf[t, L.TF_SLAT] = th._slat
            thf[t, L.TF_BYTESLIM] = th._bytes_limit
            thf[t, L.TF_DELAY] = th.draw_start_delay()  # (a range: the thread's own draw, as JobThread.start makes it)
            thf[t, L.TF_TREC] = math.inf
            thf[t, L.TF_TSTOP] = math.inf
            if th._rate is not None:
                thi[t, L.TI_RATE] = 1
                thi[t, L.TI_POISSON] = 1 if th._poisson else 0
                thf[t, L.TF_RATE] = th._rate[ddir]
        # log
        lg = np.zeros((LOG_ROWS, 5))
        lgt = np.zeros(LOG_ROWS, np.int64)
        dv, self._queues, self._hdds, self._blks = device_arrays(devs, self.dev_index, R)
        st = L.State(
            gi=gi, gf=gf, ht=np.zeros(C), hs=np.zeros(C, np.int64), hk=np.zeros(C, np.int64), hg=np.zeros(C, np.int64),
            ha=np.zeros(C, np.int64), rqi=rqi, rqf=rqf, rfree=rfree, thi=thi, thf=thf, offs=offs, ru=ru, offw=offw, mu=mu,
            bsz=bsz, lg=lg, lgt=lgt, **dv,
        )  # fmt: skip
        self.st = st
        self._refill_all(first=True)
        return st

    # ---------------------------------------------------------------------------- buffers
    def _refill_offsets(self, t: int, w: bool = False) -> None:
        """Thread t's offsets (``w``: the write stream of a job with one stream per direction)."""
        st = self.st
        th = self.threads[t]
        gen = th.files[0].gen
        cpos, clen = (L.TI_OFFPOSW, L.TI_OFFLENW) if w else (L.TI_OFFPOS, L.TI_OFFLEN)
        pos, ln = int(st.thi[t, cpos]), int(st.thi[t, clen])
        rest = ln - pos
        row = st.offw[t] if w else st.offs[t]
        row[:rest] = row[pos:ln]
        cap = row.shape[0]
        n = rest
        ddir = 1 if w else (0 if st.thi[t, L.TI_OFFMODE] else int(st.thi[t, L.TI_DDIR]))
        if not w and st.thi[t, L.TI_VARBS]:
            # bssplit/bsrange (one direction): each IO's size from the thread's own drawer, then its
            # offset (JobThread._issue's order; the size and offset streams are independent)
            draw = th._bsvar[ddir]
            bsrow = st.bsz[t]
            bsrow[:rest] = bsrow[pos:ln]
            nxt = gen.next
            blocked = _offset_mode(gen) == 0
            while n < cap:
                b = draw()
                bsrow[n] = b
                row[n] = -1 if blocked else nxt(ddir, b)
                n += 1
            if blocked:  # fio's random offsets do not depend on the size: one block at a time
                k = rest
                while k < n:
                    if not gen._buf:
                        gen._refill()
                    take = gen._buf[::-1][: n - k]
                    row[k : k + len(take)] = take
                    del gen._buf[len(gen._buf) - len(take) :]
                    k += len(take)
            st.thi[t, cpos] = 0
            st.thi[t, clen] = n
            return
        if _offset_mode(gen) == 0:
            if gen._buf:  # values the Python generator had already drawn come first
                take = gen._buf[::-1][: cap - n]
                row[n : n + len(take)] = take
                del gen._buf[len(gen._buf) - len(take) :]
                n += len(take)
            while cap - n >= gen._out.shape[0]:
                gen._refill()  # one block of fio's offsets, in order, into gen._out
                gen._buf = []
                m = gen._out.shape[0]
                row[n : n + m] = gen._out
                n += m
        else:  # asked per IO with the direction (sequential positions, hot bands, zoned_ddir ...)
            nxt = gen.next
            while n < cap:
                row[n] = nxt(ddir)
                n += 1
        st.thi[t, cpos] = 0
        st.thi[t, clen] = n

    @staticmethod
    def _refill_u(u: Any, row: np.ndarray, pos: int, ln: int) -> int:
        """Move the unread uniforms of ``row`` to its front and top it up from ``u`` (a
        runner._Uniforms: values it had drawn first, then blocks of 4096, in order); returns the
        valid length."""
        rest = ln - pos
        row[:rest] = row[pos:ln]
        n = rest
        if u._buf:
            take = u._buf[::-1][: row.shape[0] - n]
            row[n : n + len(take)] = take
            del u._buf[len(u._buf) - len(take) :]
            n += len(take)
        while row.shape[0] - n >= _BLOCK:
            row[n : n + _BLOCK] = u._gen.random(_BLOCK)
            n += _BLOCK
        return n

    def _refill_rate(self, t: int) -> None:
        """The open-loop arrival stream of thread t."""
        st = self.st
        u = self.threads[t]._rate_rand[int(st.thi[t, L.TI_DDIR])]
        st.thi[t, L.TI_RLEN] = self._refill_u(u, st.ru[t], int(st.thi[t, L.TI_RPOS]), int(st.thi[t, L.TI_RLEN]))
        st.thi[t, L.TI_RPOS] = 0

    def _refill_mix(self, t: int) -> None:
        """The rwmix direction stream of thread t."""
        st = self.st
        u = self.threads[t]._rw_rand
        st.thi[t, L.TI_MLEN] = self._refill_u(u, st.mu[t], int(st.thi[t, L.TI_MPOS]), int(st.thi[t, L.TI_MLEN]))
        st.thi[t, L.TI_MPOS] = 0

    def _refill_uniforms(self, q: int) -> None:
        st = self.st
        br = self._queues[q].rand
        pos, ln = int(st.qi[q, L.QI_UPOS]), int(st.qi[q, L.QI_ULEN])
        rest = ln - pos
        row = st.qu[q]
        row[:rest] = row[pos:ln]
        n = rest
        if br._i < len(br._buf):  # values the device's BufferedRandom had already drawn come first
            take = br._buf[br._i :][: row.shape[0] - n]
            row[n : n + len(take)] = take
            br._i += len(take)
            n += len(take)
        m = (row.shape[0] - n) // br._block * br._block
        if m > 0:
            row[n : n + m] = br.gen.random(m)
            n += m
        st.qi[q, L.QI_UPOS] = 0
        st.qi[q, L.QI_ULEN] = n

    def _flush_log(self) -> None:
        st = self.st
        n = int(st.gi[L.GI_LOGN])
        if n == 0:
            return
        rows = st.lg[:n]
        who = st.lgt[:n]
        single = len(self.threads) == 1
        for t, th in enumerate(self.threads):
            if not st.thi[t, L.TI_RECORD]:
                continue
            mine = rows if single else rows[who == t]
            if not len(mine):
                continue
            sync = mine[:, 0] == 3.0  # flushes: fio's sync section (add_sync), not IOs
            if sync.any():
                for t_done, clat in mine[sync][:, [1, 3]].tolist():
                    th.stats.add_sync(t_done, clat)
                mine = mine[~sync]
            th.stats.add_many(mine)
        st.gi[L.GI_LOGN] = 0

    def _refill_all(self, first: bool = False) -> None:
        st = self.st
        for t in range(len(self.threads)):
            low = 2 * st.thi[t, L.TI_DEPTH] + 2
            if first or st.thi[t, L.TI_OFFLEN] - st.thi[t, L.TI_OFFPOS] < low:
                self._refill_offsets(t)
            if st.thi[t, L.TI_OFFMODE] and (first or st.thi[t, L.TI_OFFLENW] - st.thi[t, L.TI_OFFPOSW] < low):
                self._refill_offsets(t, w=True)
            if st.thi[t, L.TI_POISSON] and (first or st.thi[t, L.TI_RLEN] - st.thi[t, L.TI_RPOS] < 8):
                self._refill_rate(t)
            if st.thi[t, L.TI_MIXED] and (first or st.thi[t, L.TI_MLEN] - st.thi[t, L.TI_MPOS] < low):
                self._refill_mix(t)
        for q in range(len(self._queues)):
            if first or st.qi[q, L.QI_ULEN] - st.qi[q, L.QI_UPOS] < 2 * st.qi[q, L.QI_NEED]:
                self._refill_uniforms(q)
        if not first:
            self._flush_log()
        st.gi[L.GI_LOW] = 0

    # ---------------------------------------------------------------------------- run
    def _start_phase(self) -> None:
        """Workload._start_phase: the next stonewalled group of threads begins now."""
        st = self.st
        self._phase += 1
        lo, hi = self._bounds[self._phase]
        st.gi[L.GI_ACTIVE] = hi - lo
        st.dvi[:, 2] = 0  # devices whose statistics this phase has restarted: none yet
        now = float(st.gf[L.GF_NOW])
        for th in self.threads[lo:hi]:
            job = th.job
            if job.time_based:  # JobThread._begin: the expected window, before the first IO
                t_rec = now + th.start_delay + job.ramp_time
                th.stats.set_window(t_rec, t_rec + th._runtime)
        loop.start_threads(st, lo, hi)

    def run(self, until: float = math.inf) -> int:
        """Start the threads (first call) and advance to ``until`` or to the end of the jobs (the
        stonewalled groups one after another)."""
        if self.status < 0:
            self._start_phase()
            self.status = L.ST_TIME
        while True:
            s = loop.run_until(self.st, until)  # self.st: _refill_all may grow its tables
            if s == L.ST_REFILL:
                self._refill_all()
                continue
            if s == L.ST_DONE and self._phase + 1 < len(self._bounds):
                self._start_phase()
                continue
            break
        self.status = s
        if s == L.ST_EMPTY:
            why = ssd_error(self.st, self.devs)
            raise RuntimeError(f"compiled core: {why}" if why else
                               "compiled core: no event left but job threads are not finished")
        return s

    @property
    def events(self) -> int:
        return int(self.st.gi[L.GI_EVENTS])

    # ---------------------------------------------------------------------------- results
    def finish(self) -> None:
        """Hand the run's state to the Python objects for reporting (threads, statistics, devices)."""
        st = self.st
        self._flush_log()
        t_end = float(st.gf[L.GF_NOW])
        for t, th in enumerate(self.threads):
            done = bool(st.thi[t, L.TI_DONE])
            th.done = done
            th._issuing = False
            th._t0 = float(st.thf[t, L.TF_T0])
            th._t_rec = float(st.thf[t, L.TF_TREC])
            th._t_stop = float(st.thf[t, L.TF_TSTOP])
            th._c_ios = int(st.thi[t, L.TI_CIOS])
            th._c_bytes = int(st.thi[t, L.TI_CBYTES])
            th._inflight = int(st.thi[t, L.TI_INFL])
            th._limits_on = bool(st.thi[t, L.TI_LIMON])
            if done:
                te = float(st.thf[t, L.TF_TEND])
                th._t_end = te
                th.stats.set_window(th._t_rec, max(te, th._t_rec))
            # unused offsets go back to the generator, so its sequence continues where the run stopped
            gen = th.files[0].gen
            pos, ln = int(st.thi[t, L.TI_OFFPOS]), int(st.thi[t, L.TI_OFFLEN])
            if _offset_mode(gen) == 0 and ln > pos:
                gen._buf = gen._buf + st.offs[t, pos:ln][::-1].tolist()
            st.thi[t, L.TI_OFFPOS] = st.thi[t, L.TI_OFFLEN]
            if st.thi[t, L.TI_MIXED]:
                u = th._rw_rand
                pos, ln = int(st.thi[t, L.TI_MPOS]), int(st.thi[t, L.TI_MLEN])
                u._buf = u._buf + st.mu[t, pos:ln][::-1].tolist()
                st.thi[t, L.TI_MPOS] = st.thi[t, L.TI_MLEN]
            if st.thi[t, L.TI_POISSON]:
                u = th._rate_rand[int(st.thi[t, L.TI_DDIR])]
                pos, ln = int(st.thi[t, L.TI_RPOS]), int(st.thi[t, L.TI_RLEN])
                u._buf = u._buf + st.ru[t, pos:ln][::-1].tolist()
                st.thi[t, L.TI_RPOS] = st.thi[t, L.TI_RLEN]
            th._backlog.clear()
        self.wl._started = True
        write_back_devices(st, self.devs, self._queues, self._blks, self._hdds)
        env = self.sim.env
        if t_end > env.now:
            self.sim.run(until=t_end)  # nothing scheduled: advances the clock for Device.stats()
        ssd_hand_over(st, self.devs)


def run_workload(sim: Any, wl: Any) -> Any:
    """Run a built, not started Workload to completion in the compiled core (raises
    :class:`Unsupported` with the reason if it cannot): the device core's :class:`CompiledRun`, or
    for RBD images the Ceph core's run figures (:func:`simulator.core.ceph_fio.run_workload_ceph`)."""
    from simulator.core.ceph_fio import rbd_targets, run_workload_ceph

    if rbd_targets(wl):
        return run_workload_ceph(sim, wl)
    run = CompiledRun(sim, wl)
    run.run()
    if run.status != L.ST_DONE:
        raise RuntimeError("compiled core: the run stopped before every job finished")
    run.finish()
    return run


def run_fio_compiled(
    sim: Any,
    targets: Sequence[Any] | Callable[[Any], Sequence[Any]],
    jobs: Sequence[dict[str, Any]] | dict[str, Any],
    global_options: dict[str, Any] | None = None,
    *,
    source: str = "run_fio",
    stats_factory: Callable[..., Any] | None = None,
) -> list[Any]:
    """:func:`simulator.workloads.runner.run_fio` through the compiled core (raises
    :class:`Unsupported` for what it does not cover)."""
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload

    fjobs = resolve_jobs(dict(global_options or {}), [jobs] if isinstance(jobs, dict) else list(jobs), source)
    resolve = targets if callable(targets) else (lambda _job, _t=list(targets): _t)
    wl = Workload(sim, fjobs, resolve, stats_factory=stats_factory)
    run_workload(sim, wl)
    return wl.results()

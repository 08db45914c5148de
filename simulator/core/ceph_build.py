"""Build the compiled Ceph core's state arrays from a built Python cluster, and write the final
state back into it.

The Python objects (``ceph.cluster.Cluster`` and its hosts, CPU pools, links, OSDs, PGs, images)
stay the model's description and its state between runs: :func:`build_state` reads them into a
:class:`~simulator.core.ceph_layout.CephState`, the compiled loop advances that state, and
:func:`write_back` puts it back (counters, CPU and link free times, shard workers, PG locks, object
allocations, and each random stream's unconsumed uniforms), so a run can go on in Python or in
compiled code from where the other stopped. :func:`unsupported` names what the compiled path does
not cover yet (the caller then keeps the Python model).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simulator.core import ceph_dcache as _dcache
from simulator.core import ceph_layout as L
from simulator.core import ceph_onode_build

__all__ = ["Streams", "build_state", "obj_base_of", "refill", "run_kernel", "run_refilling", "unsupported", "why_text", "write_back"]


def obj_base_of(img: Any, rows: Any = slice(None)) -> np.ndarray:
    """The image's (object, acting position) -> device offset table in bytes (-1 = not allocated) of
    objects ``rows``, as a 2-D int64 copy (the one place the compiled core reads RbdImage's storage,
    its ``rbd.BaseTable``)."""
    return img.bases(rows)


#: objects per slice when the object tables are copied into the state (bounds the copies' transient memory)
OBJ_CHUNK = 1 << 20


class Streams:
    """The random streams handed to the compiled core: one row per Python component's ``rand``
    (a ``BufferedRandom``). Uniforms are taken from the component's stream in its order; those not
    consumed are given back at :func:`write_back`, so the stream continues exactly."""

    def __init__(self) -> None:
        self.rands: list[Any] = []
        self._index: dict[int, int] = {}

    def row(self, comp: Any) -> int:
        key = id(comp)
        r = self._index.get(key)
        if r is None:
            r = self._index[key] = len(self.rands)
            self.rands.append(comp.rand)
        return r


def unsupported(cluster: Any) -> str | None:
    """Why the compiled Ceph core cannot run ``cluster`` (None = it can)."""
    from simulator.ceph.bluestore import BlueStore

    if cluster.recovery is not None:
        return "failure/recovery events are configured (simulator.ceph.recovery is Python only)"
    if cluster.tracer is not None:
        return "a tracer is attached"
    for pool in cluster.pools.values():
        for pg in pool.pgs:
            if pg.ppos < 0:
                return f"pool {pool.name}: PG {pg.pgid} is inactive (blocked IO is Python only)"
            if pg.blocked:
                return f"pool {pool.name}: PG {pg.pgid} holds blocked ops"
    for o in cluster.osds:
        if not isinstance(o.bs, BlueStore):
            return f"osd.{o.id}: object store {type(o.bs).__name__} (only BlueStore is compiled)"
        for sh in o.shards:
            if sh.q or sh.rq or sh.inflight or sh.wake_at >= 0:
                return f"osd.{o.id}: ops are queued or on their way (state of a run in progress)"
    return None


def build_state(cluster: Any, n_ops: int = 4096, n_req: int = 0, heap: int = 0,
                images: list[Any] | None = None) -> tuple[L.CephState, dict[str, Any]]:
    """The state arrays of ``cluster``; ``n_ops`` object-op rows, ``n_req`` client-request rows;
    ``images``: the images the run drives (default all; the others' object tables stay out).
    Returns (state, meta): meta maps rows back to the Python objects (for write_back). A state the
    cluster is held in (``ceph_fio.Held``: a run stopped with work pending) is handed over first."""
    from simulator.core.ceph_fio import release_held

    release_held(cluster.sim, cluster)
    env = cluster.env
    streams = Streams()
    # ---- hosts: OSD hosts, then client hosts not already listed
    hosts: list[Any] = list(cluster.hosts)
    for h, _cc in cluster.clients.values():
        if all(h is not x for x in hosts):
            hosts.append(h)
    hidx = {id(h): i for i, h in enumerate(hosts)}
    nh = len(hosts)
    maxsrv = max(h.cpu.servers for h in hosts)
    ci = np.zeros((nh, L.NCI), np.int64)
    cf = np.zeros((nh, L.NCF), np.float64)
    cfree = np.full((nh, maxsrv), np.inf)
    lf = np.zeros((2 * nh, L.NLF), np.float64)
    hoi = np.zeros((nh, L.NHI), np.int64)
    # every daemon thread of every pool (the per-thread wakeup rule, CpuPool.run): one row each
    threads = [th for h in hosts for th in h.cpu.threads]
    throw = {id(th): r for r, th in enumerate(threads)}
    thi = np.zeros((max(len(threads), 1), L.NTHI), np.int64)
    thf = np.zeros((max(len(threads), 1), L.NTHF), np.float64)
    for r, th in enumerate(threads):
        thi[r] = (int(th.queued), th.jobs, th.wakes)
        thf[r, L.THF_UNTIL] = th.until
    for i, h in enumerate(hosts):
        c = h.cpu
        ci[i, L.CI_SERVERS] = c.servers
        ci[i, L.CI_STALLED] = int(c.stalled)
        ci[i, L.CI_JOBS] = c.jobs
        ci[i, L.CI_STALLS] = c.stalls
        ci[i, L.CI_PLAIN] = int(c._wake == 0.0 and c._stall_p == 0.0 and c._bg == 0.0 and c._fg_gap == 0.0)
        ci[i, L.CI_STREAM] = streams.row(c) if not ci[i, L.CI_PLAIN] and (c._stall_p or c._fg_gap) else -1
        ci[i, L.CI_THREADED] = int(c.threaded)
        cf[i, L.CF_TWCOST] = c._tw_cost
        cf[i, L.CF_TWDELAY] = c._tw_delay
        cf[i, L.CF_INV] = c._inv
        cf[i, L.CF_WAKE] = c._wake
        cf[i, L.CF_STALLP] = c._stall_p
        cf[i, L.CF_STALLMEAN] = c._stall_mean
        cf[i, L.CF_BG] = c._bg
        cf[i, L.CF_FGSLICE] = c._fg_slice
        cf[i, L.CF_FGGAP] = c._fg_gap
        cf[i, L.CF_FGNEXT] = c._fg_next
        cf[i, L.CF_BUSY] = c._busy
        cf[i, L.CF_FGBUSY] = c.foreign_busy
        cfree[i, : c.servers] = sorted(c._free)  # a sorted list is a valid min-heap
        hoi[i] = (i, 2 * i, 2 * i + 1)
        for k, link in ((2 * i, h.tx), (2 * i + 1, h.rx)):
            lf[k] = (link.bandwidth, link._free, link._busy, link.bytes)
    # ---- OSDs and their shards
    osds = cluster.osds
    no = len(osds)
    oi = np.zeros((no, L.NOI), np.int64)
    of = np.zeros((no, L.NOF), np.float64)
    nsh = sum(o.nshards for o in osds)
    maxthr = max((max(sh.free + len(sh.lazy) for sh in o.shards) for o in osds), default=1)
    maxthr = max(maxthr, max(o.cfg.op_num_threads_per_shard for o in osds))
    shi = np.zeros((nsh, L.NSHI), np.int64)
    shf = np.full((nsh, L.NSHF), -1.0)
    shl = np.zeros((nsh, maxthr), np.float64)
    shp = np.full((nsh, maxthr), -1, np.int64)
    # PG rows first (lazy workers name their PG by row)
    pools = list(cluster.pools.values())
    pgrow: dict[int, int] = {}
    pg_list: list[Any] = []
    pool_pg0: dict[int, int] = {}
    for _pi, pool in enumerate(pools):
        pool_pg0[id(pool)] = len(pg_list)
        for pg in pool.pgs:
            pgrow[id(pg)] = len(pg_list)
            pg_list.append(pg)
    npg = len(pg_list)
    maxsize = max((len(pg.acting) for pg in pg_list), default=1)
    pgi = np.zeros((npg, L.NPGI), np.int64)
    pga = np.full((npg, maxsize), -1, np.int64)
    pgb = np.zeros((npg, maxsize), np.int64)
    for r, pg in enumerate(pg_list):
        pgi[r, L.PGI_POOL] = next(i for i, p in enumerate(pools) if p is pg.pool)
        pgi[r, L.PGI_PS] = pg.ps
        pgi[r, L.PGI_PPOS] = pg.ppos
        pgi[r, L.PGI_SEED] = pg.shard_seed
        pgi[r, L.PGI_NACT] = len(pg.acting)
        pga[r, : len(pg.acting)] = [a.id for a in pg.acting]
        for i, a in enumerate(pg.acting):
            pgb[r, i] = int(pg in a.busy_pgs)
    row = 0
    for j, o in enumerate(osds):
        assert o.id == j
        c = o.cfg
        oi[j, L.OI_HOST] = hidx[id(o.host)]
        oi[j, L.OI_CPU] = hidx[id(o.host)]
        oi[j, L.OI_NSHARDS] = o.nshards
        oi[j, L.OI_SHARD0] = row
        oi[j, L.OI_JITTER] = int(o._jitter)
        oi[j, L.OI_STREAM] = streams.row(o) if o._jitter else -1
        oi[j, L.OI_UP] = int(o.up)
        oi[j, L.OI_OPS : L.OI_OPS + 4] = o.ops
        oi[j, L.OI_SUBOPS] = o.subops
        oi[j, L.OI_REPLIES] = o.replies
        oi[j, L.OI_BS] = j
        oi[j, L.OI_THMSGR] = throw[id(o.th_msgr)]
        oi[j, L.OI_THFINAL] = throw[id(o.th_final)]
        of[j] = (c.read_cost, c.write_cost, c.subop_cost, c.reply_cost, c.commit_cost, c.msgr_send_cost,
                 c.msgr_recv_cost, c.msgr_cost_per_byte, o._ln_s, o._ln_mu, c.ec_subread_cost)
        for sh in o.shards:
            shi[row, L.SHI_OSD] = j
            shi[row, L.SHI_FREE] = sh.free
            shi[row, L.SHI_INFLIGHT] = sh.inflight
            shi[row, L.SHI_QHEAD] = -1
            shi[row, L.SHI_QTAIL] = -1
            shi[row, L.SHI_NLAZY] = len(sh.lazy)
            for k, (t, pg) in enumerate(sh.lazy):
                shl[row, k] = t
                shp[row, k] = pgrow[id(pg)]
            shf[row, L.SHF_WAKE_AT] = sh.wake_at
            shi[row, L.SHI_TH] = throw[id(sh.th)]
            row += 1
    # ---- images
    imgs = list(cluster.images.values()) if images is None else list(images)
    ni = len(imgs)
    imi = np.zeros((max(ni, 1), L.NII), np.int64)
    imf = np.zeros((max(ni, 1), L.NIF), np.float64)
    ps_parts: list[np.ndarray] = []
    obj_base = np.empty(max(sum(img.n_objects * img.pool.size for img in imgs), 1), np.int64)
    off = 0
    boff = 0
    for k, img in enumerate(imgs):
        cc = img.client_cfg
        imi[k, L.II_POOL] = next(i for i, p in enumerate(pools) if p is img.pool)
        imi[k, L.II_ORDER] = img.order
        imi[k, L.II_PG0] = pool_pg0[id(img.pool)]
        imi[k, L.II_CLIENT] = hidx[id(img.client)]
        imi[k, L.II_NOBJ] = img.n_objects
        imi[k, L.II_PS0] = off
        imi[k, L.II_SIZE] = img.pool.size
        imi[k, L.II_KEY] = boff
        imi[k, L.II_KB] = img.key_base
        imi[k, L.II_THSUB] = throw[id(img.th_submit)]
        imi[k, L.II_THCOMP] = throw[id(img.th_complete)]
        imi[k, L.II_SHSIZE] = img.shard_size
        ec = img.pool.ec
        if ec is not None:  # simulator.ceph.ec: the pool's profile
            imi[k, L.II_EC] = 1
            imi[k, L.II_K] = ec.k
            imi[k, L.II_M] = ec.m
            imi[k, L.II_SU] = ec.stripe_unit
            imi[k, L.II_PR] = int(ec.partial_reads)
            imi[k, L.II_PW] = int(ec.partial_writes == "touched_chunks")
        imf[k] = (cc.submit_cost, cc.complete_cost, cc.cost_per_byte, cc.write_cost,
                  ec.encode_rate if ec is not None else 0.0, ec.decode_rate if ec is not None else 0.0)
        ps_parts.append(np.asarray(img.obj_ps_array, np.int32))
        size = img.pool.size
        for a in range(0, img.n_objects, OBJ_CHUNK):  # slice by slice: no whole-table temporaries
            b = min(a + OBJ_CHUNK, img.n_objects)
            obj_base[boff + a * size : boff + b * size] = obj_base_of(img, slice(a, b)).reshape(-1)
        off += img.n_objects
        boff += img.n_objects * img.pool.size
    # one image (a run's): its own table, not a copy (the loop only reads it)
    obj_ps = ps_parts[0] if len(ps_parts) == 1 else np.concatenate(ps_parts) if ps_parts else np.zeros(1, np.int32)
    if not imgs:
        obj_base[:] = 0
    # ---- ops, requests, heap
    opi = np.zeros((n_ops, L.NOPI), np.int64)
    opf = np.zeros((n_ops, L.NOPF), np.float64)
    opfree = np.arange(n_ops - 1, -1, -1, dtype=np.int64)
    rqi = np.zeros((max(n_req, 1), L.NRQI), np.int64)
    rqf = np.zeros((max(n_req, 1), L.NRQF), np.float64)
    hcap = heap or (4 * n_ops + 2 * nsh + max(n_req, 1) + 64)
    gi = np.zeros(L.NGI, np.int64)
    gf = np.zeros(L.NGF, np.float64)
    gi[L.GI_OPFREE] = n_ops
    gi[L.GI_OVH] = cluster.net.overhead
    gi[L.GI_NOFOLD] = int(cluster.recovery is not None)
    # every OSD the run reads from has a device row (a read missing the data cache is one device read)
    gi[L.GI_READ_WRITTEN_OK] = int(_read_device_why(cluster, imgs) is None)
    gf[L.GF_NOW] = env.now
    gf[L.GF_LAT] = cluster.net.latency
    gf[L.GF_LOOP] = cluster.net.loopback
    tuner = cluster.autotune
    gf[L.GF_NEXTTUNE] = cluster.next_tune if tuner is not None else np.inf
    if tuner is not None:  # cache autotuning (Autotuner): its settings and state
        acfg = tuner.cfg
        gf[L.GF_TUNEINT] = tuner.interval
        gf[L.GF_KVR] = acfg.kv_ratio
        gf[L.GF_METAR] = acfg.meta_ratio
        gi[L.GI_TICKS] = tuner.ticks
        gi[L.GI_TTARGET] = int(acfg.memory_target)
        gi[L.GI_TBASE] = int(acfg.memory_base)
        gi[L.GI_TMAX] = tuner.max
        gi[L.GI_TMIN] = tuner.min
        gi[L.GI_ONODEB] = int(acfg.onode_bytes)
    # what an OSD can hold after its ops are gone: a pending deferred batch of up to deferred_batch_ops
    # txcs and a batch being applied (one device write each, unless merged); a small client QD spread
    # over many OSDs leaves most of them holding a partial batch (1,008 OSDs at QD64 ran out of rows)
    held = sum(2 * o.bs.cfg.deferred_batch_ops + 2 for o in osds)
    n_dr = 2 * n_ops + 4 * no + held
    bsi, bsf, osi, dvi, dvf, dev_objs, dev_st, dev_meta = _bluestore_tables(
        cluster, osds, npg, maxsize, streams, _run_osds(imgs), n_dr)
    run_osds = _run_osds(imgs)
    for j, o in enumerate(osds):
        bs = o.bs
        kv_th = bs._kv_th
        bsi[j, L.BS_THKV] = throw[id(kv_th)] if kv_th is not None else -1
        bsf[j, L.BF_KINR] = bs.cfg.cache.kin_ratio
        bsf[j, L.BF_KOUTR] = bs.cfg.cache.kout_ratio
        if tuner is not None and j in run_osds:  # tuned in the core; the others replay its ticks (write_back)
            last = tuner.last[id(bs)]
            bsi[j, L.BS_TUNED] = 1
            bsi[j, L.BS_TBUDGET] = tuner.budget[id(bs)]
            bsi[j, L.BS_TKV : L.BS_TMAPPED + 1] = (last["kv"], last["meta"], last["data"], last["mapped"])
    n_tx = 2 * n_ops + held
    txi = np.zeros((n_tx, L.NTXI), np.int64)
    txfree = np.arange(n_tx - 1, -1, -1, dtype=np.int64)
    dri = np.zeros((n_dr, L.NDRI), np.int64)
    drfree = np.arange(n_dr - 1, -1, -1, dtype=np.int64)
    gi[L.GI_TXFREE] = n_tx
    gi[L.GI_DEVFREE] = n_dr
    _load_transactions(cluster, osds, pg_list, pgrow, maxsize, bsi, osi, txi, txfree, gi)
    oni, onf, okey, oprev, onext = ceph_onode_build.build(osds, imgs, imi, obj_ps, pga, len(obj_base), streams)
    ns = max(len(streams.rands), 1)
    su = np.zeros((ns, L.SLEN), np.float64)
    si = np.zeros((ns, L.NSI), np.int64)
    st = L.CephState(
        gi=gi, gf=gf,
        ht=np.zeros(hcap), hs=np.zeros(hcap, np.int64), hk=np.zeros(hcap, np.int64),
        hg=np.zeros(hcap, np.int64), ha=np.zeros(hcap, np.int64),
        su=su, si=si, ci=ci, cf=cf, cfree=cfree, thi=thi, thf=thf, lf=lf, hoi=hoi, oi=oi, of=of,
        shi=shi, shf=shf, shl=shl, shp=shp, pgi=pgi, pga=pga, pgb=pgb,
        imi=imi, imf=imf, obj_ps=obj_ps, obj_base=obj_base,
        opi=opi, opf=opf, opfree=opfree, rqi=rqi, rqf=rqf, trn=np.zeros((1, L.NTR), np.int64), trf=np.zeros((1, L.NTRF)),
        bsi=bsi, bsf=bsf, txi=txi, txfree=txfree, osi=osi, dvi=dvi, dvf=dvf, dri=dri, drfree=drfree,
        scr=np.zeros((2, n_tx), np.int64), dev=dev_st,
        oni=oni, onf=onf, okey=okey, oprev=oprev, onext=onext,
        dc=_dcache.build(osds, run_osds, n_tx, max((1 << img.order for img in imgs), default=1),
                         tuner.max if tuner is not None else 0,
                         _run_reach(osds, imgs, imi, obj_ps, pga) if tuner is not None else None),
    )  # fmt: skip
    meta = {"hosts": hosts, "threads": threads, "osds": osds, "pgs": pg_list, "images": imgs, "streams": streams, "devices": dev_objs,
            "core_devices": dev_meta}
    refill(st, meta)
    return st, meta


def _run_reach(osds: list[Any], imgs: list[Any], imi: np.ndarray, obj_ps: np.ndarray, pga: np.ndarray) -> np.ndarray:
    """Per OSD, every byte of the run's objects on it (what a data cache could come to hold beyond its contents)."""
    reach = np.zeros(max(len(osds), 1), np.int64)
    for k, img in enumerate(imgs):
        reach += ceph_onode_build._run_counts([img], imi[k : k + 1], obj_ps, pga, len(reach)) << img.order
    return reach


def why_text(st: L.CephState) -> str:
    """Why a compiled run stopped or was flagged void (GI_WHY), in words."""
    w = int(st.gi[L.GI_WHY])
    if w:
        return L.WHY_TEXT.get(w, f"reason {w}")
    dev = getattr(st, "dev", None)
    if dev is not None:  # an SSD below BlueStore stopped on a kernel error (events it owed are missing)
        from simulator.core.run import ssd_error

        why = ssd_error(dev)
        if why:
            return why
    return "no event left while requests are outstanding" if st.gi[L.GI_OUT] else "no reason recorded"


def _queue_device(dev: Any) -> Any:
    """The QueueDevice behind ``dev`` (itself, or a Partition's base), None for any other kind."""
    from simulator.devices.partition import Partition
    from simulator.devices.simple import QueueDevice

    if type(dev) is Partition:
        dev = dev.base
    return dev if type(dev) is QueueDevice else None


def _core_device(dev: Any) -> tuple[Any, int, str | None]:
    """The device of the device core (simulator.core.loop) behind BlueStore's device ``dev``: an HDD,
    a dual-actuator drive or one of its LUNs, an SSD, or a block layer over one of these, seen through
    any Partitions (their starts add up to the offset shift). Returns (device, shift, None), or
    (None, 0, why not). (A deferred batch that sleeps for a block layer's tags is core.loop.batch_sleep.)"""
    from simulator.core import layout as DL
    from simulator.core.run import _dev_kind
    from simulator.devices.partition import Partition

    shift = 0
    top = dev
    while type(top) is Partition:
        shift += top.start
        top = top.base
    kind, why = _dev_kind(top)
    if why:
        return None, 0, why
    low = top.dev if kind == DL.DK_BLK else top
    if _dev_kind(low)[0] == DL.DK_QUEUE:
        return None, 0, f"{top.path}: a block layer over a queue device (the stand-in's queue devices are compiled without a block layer)"
    if kind == DL.DK_QUEUE:
        return None, 0, f"{top.path}: a queue device"
    return top, shift, None


def _run_osds(images: list[Any]) -> set[int]:
    """The OSDs a run on ``images`` can reach (their pools' acting sets)."""
    out: set[int] = set()
    for pool in {id(img.pool): img.pool for img in images}.values():
        for pg in pool.pgs:
            out.update(a.id for a in pg.acting)
    return out


#: BlueStore statistics counters kept in its row (copied in at build, back at write back)
_BS_COUNTERS = (
    (L.BS_KVBATCHES, "kv_batches"), (L.BS_KVTXCS, "kv_txcs"), (L.BS_DEFOPS, "deferred_ops"),
    (L.BS_DEFIOS, "deferred_ios"), (L.BS_DEFBATCHES, "deferred_batches"), (L.BS_DEFROUNDS, "deferred_rounds"),
    (L.BS_THROTTLED, "throttled"), (L.BS_THR_KV, "throttled_kv"), (L.BS_THR_DEF, "throttled_deferred"),
    (L.BS_AGGSUB, "aggressive_submits"), (L.BS_MAXTXCSUB, "max_txc_submits"), (L.BS_DIRECT, "direct_writes"),
    (L.BS_DATAFLUSH, "kv_data_flushes"),
)


def _bluestore_tables(cluster: Any, osds: list[Any], npg: int, maxsize: int, streams: Streams, run_osds: set[int],
                      n_dr: int) -> tuple:
    """BlueStore rows (one per OSD), OpSequencer rows (one per PG and acting position) and the devices
    below them: a row per queue device (deterministic or exponential service), and a row per device
    of the device core (HDD, LUN, block layer over one; through Partitions) of the OSDs in
    ``run_osds``, whose arrays are a device-core State (``n_dr`` requests in flight at most)."""
    from simulator.core.run import device_state
    from simulator.distributions import Deterministic, Exponential

    no = len(osds)
    bsi = np.zeros((no, L.NBSI), np.int64)
    bsf = np.zeros((no, L.NBSF), np.float64)
    osi = np.zeros((max(npg * maxsize, 1), L.NOSI), np.int64)
    osi[:, [L.OS_QH, L.OS_QT, L.OS_PH, L.OS_PT, L.OS_RH, L.OS_DQPREV, L.OS_DQNEXT]] = -1
    rows: list[Any] = []  # a QueueDevice, or (device-core device, shift)
    didx: dict[int, int] = {}
    tops: list[Any] = []
    for o in osds:
        for d in (getattr(o.bs, "dev", None), getattr(o.bs, "wal_dev", None)):
            if d is None:
                continue
            q = _queue_device(d)
            if q is not None:
                if isinstance(q._dist, (Deterministic, Exponential)) and id(q) not in didx:
                    didx[id(q)] = len(rows)
                    rows.append(q)
                continue
            if o.id not in run_osds or id(d) in didx:
                continue
            top, shift, why = _core_device(d)
            if why is None:
                didx[id(d)] = len(rows)
                rows.append((top, shift, d))
                tops.append(top)
    why = _hdd_shapes_why(tops)
    if why:
        raise ValueError(f"compiled Ceph core: {why}")
    dev_st, dev_meta = device_state(tops, n_dr if tops else 0, cluster.env.now)
    dev_meta["partitions"] = parts = []
    nd = len(rows)
    dvi = np.zeros((max(nd, 1), L.NDVI), np.int64)
    dvf = np.zeros((max(nd, 1), L.NDVF), np.float64)
    devs = []
    for k, q in enumerate(rows):
        if type(q) is tuple:
            dvi[k, L.DV_CORE] = dev_meta["dev_index"][id(q[0])]
            dvi[k, L.DV_SHIFT] = q[1]
            v = q[2]
            if v is not q[0]:  # a Partition: BlueStore's view of its device keeps its own accounting
                dvi[k, L.DV_PART] = 1
                f = dvf[k]
                f[L.DVF_P_T0], f[L.DVF_P_TQ], f[L.DVF_P_QAREA] = v._t0, v._tq, v._qarea
                f[L.DVF_P_INSIDE], f[L.DVF_P_BSINCE], f[L.DVF_P_BUSY] = v._inside, v._busy_since, v._busy_acc
                f[L.DVF_P_COMP : L.DVF_P_COMP + 4] = v.completed
                f[L.DVF_P_BYTES : L.DVF_P_BYTES + 4] = v.bytes
                parts.append((k, v))
            continue
        devs.append((k, q))
        det = isinstance(q._dist, Deterministic)
        dvi[k, : L.DV_DONE + 1] = (q.cfg.servers, q._free, -1, -1, 0, 0 if det else 1, -1 if det else streams.row(q), 0)
        dvi[k, L.DV_CORE] = -1
        dvf[k, : L.DVF_BUSY + 1] = (q._dist.value if det else q._dist.mean_, q._bw or 0.0, q.cfg.flush_time, 0.0)
    for j, o in enumerate(osds):
        bs = o.bs
        if not hasattr(bs, "tb"):  # not a BlueStore
            continue
        c = bs.cfg
        b = bsi[j]
        for k in (L.BS_KVQ_H, L.BS_KVQ_T, L.BS_KVB_H, L.BS_DONE_H, L.BS_DONE_T, L.BS_STAB_H, L.BS_STAB_T, L.BS_KVSTAB_H,
                  L.BS_KVSTAB_T, L.BS_KVUNST_H, L.BS_KVUNST_T, L.BS_DQ_H, L.BS_DQ_T, L.BS_TBW_H, L.BS_TBW_T,
                  L.BS_DTW_H, L.BS_DTW_T):
            b[k] = -1
        b[L.BS_DQSIZE] = bs.deferred_queue_size
        b[L.BS_DTXCS] = bs.deferred_txcs
        b[L.BS_AGGR] = bs.aggressive
        b[L.BS_IOSF] = int(bs.io_since_flush)
        b[L.BS_TBCUR], b[L.BS_TBMAX], b[L.BS_TBPEAK] = bs.tb.cur, bs.tb.max, bs.tb.peak
        b[L.BS_DTCUR], b[L.BS_DTMAX], b[L.BS_DTPEAK] = bs.dt.cur, bs.dt.max, bs.dt.peak
        b[L.BS_WALPOS] = bs.wal_pos
        b[L.BS_WALRING] = bs.wal_ring
        b[L.BS_BLOCK] = bs.block
        b[L.BS_PREFER] = c.prefer_deferred_size
        b[L.BS_CPIO] = bs.cost_per_io
        b[L.BS_KVTXCB] = c.kv_txc_bytes
        b[L.BS_CLEANB] = c.kv_cleanup_bytes
        b[L.BS_BATCHOPS] = c.deferred_batch_ops
        b[L.BS_MAXTXC] = c.max_deferred_txc
        b[L.BS_SAMEDEV] = int(bs.same_device)
        b[L.BS_FBC] = int(c.flush_before_commit)
        b[L.BS_TAIL] = int(c.wal_rewrite_tail)
        b[L.BS_DEV] = _row_of(didx, bs.dev)
        b[L.BS_WALDEV] = _row_of(didx, bs.wal_dev)
        b[L.BS_WALBASE] = bs.wal_base
        b[L.BS_LOGW] = int(c.bluefs_log_write)
        b[L.BS_LOGBASE] = bs.log_base
        b[L.BS_LOGPOS] = bs.log_pos
        b[L.BS_LOGRING] = bs.log_ring
        b[L.BS_CURSOR] = bs.cursor
        b[L.BS_ALLOCATED] = bs.allocated
        b[L.BS_MINALLOC] = c.min_alloc_size
        b[L.BS_CAP] = bs.dev.capacity
        b[L.BS_DSTART] = bs.data_start
        b[L.BS_BFS] = bs.bluefs_start
        b[L.BS_BFE] = bs.bluefs_end
        b[L.BS_PEAKDTXCS] = bs.peak_deferred_txcs
        b[L.BS_UNIT] = bs.unit
        for col, name in _BS_COUNTERS:
            b[col] = getattr(bs, name)
        bsf[j, L.BF_TWAIT] = bs.throttle_wait
        bsf[j, L.BF_KVTIME] = bs.kv_time
        bsf[j, L.BF_WALTIME] = bs.wal_time
        bsf[j, L.BF_FLUSHTIME] = bs.flush_time
        bsf[j, L.BF_KVCPU] = bs._kv_cpu
        bsf[j, L.BF_MAXINT] = c.deferred_max_interval if c.deferred_max_interval is not None else -1.0
    return bsi, bsf, osi, dvi, dvf, devs, dev_st, dev_meta


def _row_of(didx: dict[int, int], dev: Any) -> int:
    """The device row of BlueStore's device ``dev`` (a queue device's, or its own), -1 = none."""
    q = _queue_device(dev)
    return didx.get(id(q if q is not None else dev), -1)


def _load_transactions(cluster: Any, osds: list[Any], pg_list: list[Any], pgrow: dict[int, int], maxsize: int,
                       bsi: np.ndarray, osi: np.ndarray, txi: np.ndarray, txfree: np.ndarray, gi: np.ndarray) -> None:
    """The transactions a drained BlueStore still holds (applied / stable deferred batches awaiting
    cleanup, pending deferred batches, live counts of its sequencers) into the arrays: the reverse
    of ``write_back_bluestore``. Only for a BlueStore between runs (``unsupported_writes``)."""
    pos_of = {}
    for r, pg in enumerate(pg_list):
        for i, a in enumerate(pg.acting):
            pos_of[(r, a.id)] = i

    def new_txc(t: Any, row: int, j: int) -> int:
        n = int(gi[L.GI_TXFREE]) - 1
        gi[L.GI_TXFREE] = n
        x = int(txfree[n])
        txi[x] = 0
        op = t.op
        txi[x, L.TX_OSR] = row
        txi[x, L.TX_COST] = t.cost
        txi[x, L.TX_DOFF] = t.doff
        txi[x, L.TX_DLEN] = t.dlen
        txi[x, L.TX_WALB] = t.wal_bytes
        txi[x, L.TX_HADIO] = int(t.had_io)
        txi[x, L.TX_IODONE] = int(t.io_done)
        txi[x, L.TX_NEXT] = -1
        txi[x, L.TX_NEXTB] = -1
        txi[x, L.TX_OSD] = j
        txi[x, L.TX_KEY] = op.objkey
        txi[x, L.TX_OFF] = op.off
        txi[x, L.TX_LEN] = op.length
        return x

    for j, o in enumerate(osds):
        bs = o.bs
        if not hasattr(bs, "osrs"):
            continue
        rows = {}
        for pg, osr in bs.osrs.items():
            r = pgrow[id(pg)] * maxsize + pos_of[(pgrow[id(pg)], o.id)]
            rows[id(osr)] = r
            osi[r, L.OS_LIVE] = osr.live

        def chain(batch: list, _j: int = j, _rows: dict = rows) -> tuple[int, int]:
            h = t_ = -1
            for t in batch:
                x = new_txc(t, _rows[id(t.osr)], _j)
                if h < 0:
                    h = x
                else:
                    txi[t_, L.TX_NEXT] = x
                t_ = x
            return h, t_

        for hcol, tcol, lst in ((L.BS_DONE_H, L.BS_DONE_T, bs.deferred_done), (L.BS_STAB_H, L.BS_STAB_T, bs.deferred_stable)):
            prev = -1
            for batch in lst:
                h, _t = chain(batch)
                txi[h, L.TX_BLEN] = len(batch)
                if prev < 0:
                    bsi[j, hcol] = h
                else:
                    txi[prev, L.TX_NEXTB] = h
                prev = h
            bsi[j, tcol] = prev
        prev = -1
        for osr in bs._dq:
            r = rows[id(osr)]
            h, t_ = chain(osr.pending)
            osi[r, L.OS_PH], osi[r, L.OS_PT], osi[r, L.OS_PN] = h, t_, len(osr.pending)
            osi[r, L.OS_INDQ] = 1
            osi[r, L.OS_DQPREV] = prev
            osi[r, L.OS_DQNEXT] = -1
            if prev < 0:
                bsi[j, L.BS_DQ_H] = r
            else:
                osi[prev, L.OS_DQNEXT] = r
            prev = r
        bsi[j, L.BS_DQ_T] = prev
        bsi[j, L.BS_TIMER] = int(bs._timer_armed)


def _read_device_why(cluster: Any, images: list[Any] | None = None) -> str | None:
    """Why some OSD's reads of written objects cannot be compiled (None = every OSD's can): not a
    BlueStore, or a data device of neither kind (its reason). Only the OSDs ``images`` reach
    (default: every image's) are read from."""
    run = _run_osds(list(cluster.images.values()) if images is None else list(images))
    tops: list[Any] = []
    for o in cluster.osds:
        if o.id not in run:
            continue
        bs = o.bs
        if not hasattr(bs, "writing"):
            return f"osd.{o.id}: object store {type(bs).__name__}"
        if _queue_device(bs.dev) is None:
            top, _shift, why = _core_device(bs.dev)
            if why is None:
                why = _ssd_read_why(top, list(cluster.images.values()) if images is None else list(images))
                tops.append(top)
            if why is not None:  # neither kind of device row
                return f"osd.{o.id}: device {bs.dev.path} ({type(bs.dev).__name__}): {why}"
    return _hdd_shapes_why(tops)


def _ssd_read_why(top: Any, images: list[Any]) -> str | None:
    """Why reads of ``images``' objects cannot run on the device core's device ``top`` (None = they can):
    an SSD (below a block layer or not) reads through a scratch table of core.run.SSD_READ_UNITS mapping
    units, and a read of a whole object (shard) must fit in it (the Python SSD grows its table)."""
    from simulator.core.run import SSD_READ_UNITS
    from simulator.devices.ssd.device import SSD

    low = getattr(top, "dev", top)
    if type(low) is not SSD:
        return None
    mu = low.cfg.ftl.mapping_unit
    for img in images:
        units = -(-img.shard_size // mu) + 1  # an unaligned range may touch one unit more
        if units > SSD_READ_UNITS:
            return (f"{low.path}: a read of a whole object of {img.path} ({img.shard_size} bytes) may span {units} "
                    f"mapping units of {mu} bytes (the compiled core's SSD read table holds {SSD_READ_UNITS})")
    return None


def unsupported_reads(cluster: Any, images: list[Any] | None = None) -> str | None:
    """Why the compiled core cannot run reads of written objects on ``cluster`` (None = it can):
    it covers BlueStore (its data cache included) on queue devices or the device core's, onode caches of any size (ceph_onode).
    ``images``: the images the run reads (default all): only the devices of OSDs their pools reach count."""
    why = unsupported(cluster)
    if why:
        return why
    dwhy = _read_device_why(cluster, images)
    if dwhy:
        return (f"reads of written objects need BlueStore on queue devices or the device core's "
                f"(HDDs with the write cache off, volatile, persistent or a media cache, LUNs, block layers over these): {dwhy}")
    return _onode_coverage(cluster)


def _onode_coverage(cluster: Any) -> str | None:
    """The compiled onode caches (ceph_onode) key an object on an OSD by its acting position: an
    acting set naming one OSD twice is not covered. (Onode misses, and images not pre-filled, are.)"""
    for pool in cluster.pools.values():
        for pg in pool.pgs:
            ids = [a.id for a in pg.acting]
            if len(set(ids)) != len(ids):
                return f"pool {pool.name}: PG {pg.pgid} names an OSD twice in its acting set (not compiled)"
    return None


def unsupported_writes(cluster: Any, images: list[Any] | None = None) -> str | None:
    """Why the compiled write path cannot run ``cluster`` (None = it can): what it does not cover yet.
    ``images``: the images the run drives (default all): only the devices of OSDs their pools reach
    are checked (those of other OSDs get no row)."""
    why = unsupported(cluster)
    if why:
        return why
    from simulator.distributions import Deterministic, Exponential

    run = _run_osds(list(cluster.images.values()) if images is None else list(images))
    tops: list[Any] = []
    for o in cluster.osds:
        bs = o.bs
        for d in (bs.dev, bs.wal_dev):
            q = _queue_device(d)
            if q is None:
                if o.id not in run:
                    continue
                top, _shift, why = _core_device(d)
                if why:
                    return (f"osd.{o.id}: device {d.path} ({type(d).__name__}): {why} (the write path covers queue "
                            "devices, and HDDs with the write cache off, volatile, persistent or a media cache, dual-actuator drives and their "
                            "LUNs, SSDs, block layers over these, through partitions)")
                tops.append(top)
                continue
            if not isinstance(q._dist, (Deterministic, Exponential)):
                return f"{q.path}: service distribution {type(q._dist).__name__} (covered: deterministic, exponential)"
            if q._queue or q._free != q.cfg.servers:
                return f"{q.path}: requests in the device (state of a run in progress)"
        if bs.kv_busy or bs.kv_queue or bs._tb_waiters or bs._dt_waiters or bs._timer_armed \
                or any(x.running or x.q for x in bs.osrs.values()):
            return f"osd.{o.id}: BlueStore is mid-cycle (kv_sync, waiters, running IO: a run in progress)"
    why = _hdd_shapes_why(tops) or _onode_coverage(cluster)
    if why is None and any(img.pool.ec is not None for img in (cluster.images.values() if images is None else images)):
        dwhy = _read_device_why(cluster, images)  # an erasure-coded overwrite reads its partial stripes first
        if dwhy:
            return f"writes to an erasure-coded pool read shards (read-modify-write), and {dwhy}"
    return why


def _hdd_shapes_why(tops: list[Any]) -> str | None:
    """The device core stacks its HDDs' kernel tables: the HDDs below ``tops`` need one shape, and
    their worst-case extent blocks must fit the address space it reserves (run.fixed_table_why)."""
    if not tops:
        return None
    from simulator.core import layout as DL
    from simulator.core.run import _dev_kind, device_closure, fixed_table_why

    shapes = {(h._cq.shape, h._zt.shape, h._tt.shape, h._et.shape, h._seg.shape): h.path
              for h in device_closure(tops)[0] if _dev_kind(h)[0] == DL.DK_HDD}
    if len(shapes) > 1:
        return f"HDDs with different table shapes in one run ({', '.join(sorted(shapes.values())[:2])}): drive the images of one drive kind"
    return fixed_table_why(tops)


def _draw(rand: Any, need: int) -> np.ndarray:
    """The next ``need`` values of a BufferedRandom, as ``need`` calls of ``rand.random()`` would
    return them (the rest of its buffer, then whole blocks from its generator), in bulk."""
    out = np.empty(need)
    buf, i = rand._buf, rand._i
    k = min(need, len(buf) - i)
    if k > 0:
        out[:k] = buf[i : i + k]
        rand._i = i + k
    else:
        k = 0
    while k < need:
        block = rand.gen.random(rand._block)
        m = min(need - k, len(block))
        out[k : k + m] = block[:m]
        rand._buf = block.tolist()
        rand._i = m
        k += m
    return out


def refill(st: L.CephState, meta: dict[str, Any]) -> None:
    """Top every random stream up to SLEN uniforms (drawn from its Python component's stream, in order)."""
    su, si = st.su, st.si
    for r, rand in enumerate(meta["streams"].rands):
        p, n = int(si[r, L.SI_POS]), int(si[r, L.SI_LEN])
        left = n - p
        if left == L.SLEN:
            continue
        su[r, :left] = su[r, p:n]
        su[r, left:] = _draw(rand, L.SLEN - left)
        si[r, L.SI_POS] = 0
        si[r, L.SI_LEN] = L.SLEN
    st.gi[L.GI_LOW] = 0



def run_refilling(st: L.CephState, meta: dict[str, Any], t_end: float = np.inf) -> int:
    """Run the compiled Ceph core up to ``t_end`` (default: until nothing is pending), refilling the random
    streams whenever the loop stops for them; returns the loop's last status (never ST_REFILL)."""
    from simulator.core import ceph_loop as K

    while True:
        status = K.run_until(st, t_end)
        if status != L.ST_REFILL:
            return int(status)
        refill(st, meta)

def write_back(st: L.CephState, meta: dict[str, Any], set_now: bool = True, report: bool = False) -> None:
    """Put the compiled state back into the Python objects (after a drained run: no op in flight).
    ``report``: the state stays live in the arrays (a run stopped at its last completion with its
    background work pending, ceph_fio's held state): only what the statistics read goes back —
    counters, windows, CPU and link state, object allocations, caches, devices — and the random
    streams' unconsumed uniforms (as always: the arrays' streams are empty then, and :func:`refill`
    draws them again, in order, before the state runs on); not the shards' queues or PG locks."""
    gi = st.gi
    if gi[L.GI_FULL]:
        raise RuntimeError(f"compiled Ceph core: {why_text(st)} (the run is void)")
    for i, h in enumerate(meta["hosts"]):
        c = h.cpu
        c.stalled = bool(st.ci[i, L.CI_STALLED])
        c.jobs = int(st.ci[i, L.CI_JOBS])
        c.stalls = int(st.ci[i, L.CI_STALLS])
        c._fg_next = float(st.cf[i, L.CF_FGNEXT])
        c._busy = float(st.cf[i, L.CF_BUSY])
        c.foreign_busy = float(st.cf[i, L.CF_FGBUSY])
        c._free = sorted(float(x) for x in st.cfree[i, : c.servers])
        for k, link in ((2 * i, h.tx), (2 * i + 1, h.rx)):
            link._free = float(st.lf[k, L.LF_FREE])
            link._busy = float(st.lf[k, L.LF_BUSY])
            link.bytes = int(st.lf[k, L.LF_BYTES])
    for r, th in enumerate(meta["threads"]):
        th.jobs = int(st.thi[r, L.THI_JOBS])
        th.wakes = int(st.thi[r, L.THI_WAKES])
        th.until = float(st.thf[r, L.THF_UNTIL])
    pgs = meta["pgs"]
    for j, o in enumerate(meta["osds"]):
        o.ops = [int(x) for x in st.oi[j, L.OI_OPS : L.OI_OPS + 4]]
        o.subops = int(st.oi[j, L.OI_SUBOPS])
        o.replies = int(st.oi[j, L.OI_REPLIES])
        if report:
            continue
        o.busy_pgs = set()
        r0 = int(st.oi[j, L.OI_SHARD0])
        for k, sh in enumerate(o.shards):
            r = r0 + k
            if st.shi[r, L.SHI_QCNT] or st.shi[r, L.SHI_INFLIGHT]:
                raise RuntimeError(f"osd.{o.id}: ops still queued; write back needs a drained run")
            sh.free = int(st.shi[r, L.SHI_FREE])
            sh.inflight = 0
            sh.lazy = [(float(st.shl[r, m]), pgs[int(st.shp[r, m])]) for m in range(int(st.shi[r, L.SHI_NLAZY]))]
            sh.wake_at = float(st.shf[r, L.SHF_WAKE_AT])
    for r, pg in enumerate(pgs if not report else ()):
        for i, a in enumerate(pg.acting):
            if st.pgb[r, i]:
                a.busy_pgs.add(pg)
    for k, img in enumerate(meta["images"]):
        es = img.pool.ec_stats
        if es is not None:  # the EC counters the run added (then zeroed: a later write back adds only what follows)
            for c, name in enumerate(L.ECS_NAMES):
                setattr(es, name, getattr(es, name) + int(st.imi[k, L.II_ECS + c]))
            st.imi[k, L.II_ECS : L.II_ECS + len(L.ECS_NAMES)] = 0
        o0 = int(st.imi[k, L.II_KEY])
        n = img.n_objects * img.pool.size
        img.set_bases(slice(None), st.obj_base[o0 : o0 + n].reshape(img.n_objects, img.pool.size))
    # unconsumed uniforms go back to the front of their stream
    for r, rand in enumerate(meta["streams"].rands):
        p, n = int(st.si[r, L.SI_POS]), int(st.si[r, L.SI_LEN])
        rest = st.su[r, p:n].tolist()
        rand._buf = rest + rand._buf[rand._i :]
        rand._i = 0
        st.si[r, L.SI_POS] = st.si[r, L.SI_LEN] = 0
    _write_back_core_devices(st, meta, report)
    ceph_onode_build.write_back(st, meta["osds"])
    _dcache.write_back(st.dc, meta["osds"])
    _write_back_autotune(st, meta["osds"])
    if set_now:
        env = meta["osds"][0].env if meta["osds"] else None
        if env is not None and st.gf[L.GF_NOW] > env._now:
            env._now = float(st.gf[L.GF_NOW])


def _write_back_autotune(st: L.CephState, osds: list[Any]) -> None:
    """The autotuner's state (Cluster.next_tune, Autotuner ticks, budgets, last splits) after a run; the
    OSDs outside the run (not tuned in the core: their caches did not change) replay the run's ticks."""
    if not osds or osds[0].cluster.autotune is None:
        return
    cl = osds[0].cluster
    tuner = cl.autotune
    tuner.ticks = int(st.gi[L.GI_TICKS])
    cl.next_tune = tuner.next = float(st.gf[L.GF_NEXTTUNE])
    ticks = int(st.gi[L.GI_RUNTICKS])
    st.gi[L.GI_RUNTICKS] = 0
    for j, o in enumerate(osds):
        bs = o.bs
        b = st.bsi[j]
        if b[L.BS_TUNED]:
            tuner.budget[id(bs)] = int(b[L.BS_TBUDGET])
            tuner.last[id(bs)] = {"budget": int(b[L.BS_TBUDGET]), "kv": int(b[L.BS_TKV]), "meta": int(b[L.BS_TMETA]),
                                  "data": int(b[L.BS_TDATA]), "mapped": int(b[L.BS_TMAPPED])}
        else:
            for _ in range(ticks):
                tuner._tune(bs)


def run_kernel(kernel: Any, st: L.CephState, meta: dict[str, Any], n: int, *args: Any) -> None:
    """Run a standalone kernel of ceph_loop over ``n`` items, refilling the random streams whenever
    it stops for them."""
    i = 0
    while i < n:
        i = kernel(st, i, *args)
        if st.gi[L.GI_FULL]:
            raise RuntimeError(f"compiled Ceph core: {why_text(st)}")
        if st.gi[L.GI_LOW]:
            refill(st, meta)


def run_open(cluster: Any, image: Any, times: np.ndarray, kinds: np.ndarray, offsets: np.ndarray,
             sizes: np.ndarray, n_ops: int = 0) -> tuple[np.ndarray, dict[str, Any]]:
    """Issue requests to ``image`` at ``times`` (open loop: each arrival schedules the next, then
    submits) through the compiled core, run until all complete, write the state back. Returns each
    request's completion time and run figures (events, wall seconds)."""
    import time

    from simulator.core import ceph_loop as K

    writes = bool(np.any(np.asarray(kinds) != 0))
    why = unsupported_writes(cluster, [image]) if writes else unsupported(cluster)
    if not why and bool(np.any(np.asarray(kinds) == 0)) and (writes or image.base_table.any_allocated()):
        why = unsupported_reads(cluster, [image])  # reads of written objects (or of objects the run writes)
    if why:
        raise ValueError(f"compiled Ceph core: {why}")
    n = len(times)
    st, meta = build_state(cluster, n_ops=n_ops or max(4096, 4 * n), n_req=n, images=[image])
    k = next(i for i, img in enumerate(meta["images"]) if img is image)
    st.rqi[:n, L.RQI_IMG] = k
    st.rqi[:n, L.RQI_KIND] = kinds
    st.rqi[:n, L.RQI_OFF] = offsets
    st.rqi[:n, L.RQI_SIZE] = sizes
    st.rqf[:n, L.RQF_TISSUE] = times
    st.gi[L.GI_NREQ] = n
    st.gi[L.GI_OUT] = n
    if n:
        st.gi[L.GI_NEXTREQ] = 1
        K.schedule_at(st, float(times[0]), L.EV_ARRIVAL, 0, 0)
    w0 = time.perf_counter()
    status = run_refilling(st, meta)
    wall = time.perf_counter() - w0
    if status != L.ST_DONE:
        raise RuntimeError(f"compiled Ceph core stopped with status {status} (events {st.gi[L.GI_EVENTS]}): {why_text(st)}")
    if writes:
        write_back_bluestore(st, meta)
    write_back(st, meta)
    return st.rqf[:n, L.RQF_TDONE].copy(), {"events": int(st.gi[L.GI_EVENTS]), "wall_s": wall}


def run_closed(cluster: Any, image: Any, kinds: np.ndarray, offsets: np.ndarray, sizes: np.ndarray, depth: int,
               n_ops: int = 0) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """A closed loop of ``depth`` requests to ``image`` through the compiled core: the first
    ``depth`` are issued now, in order, each completion issues the next. Writes need
    :func:`unsupported_writes` to be None. Returns issue and completion times and run figures
    (events, wall seconds, BlueStore counters). The run drains (every event processed); its state,
    BlueStore's included, is written back, so the Python model can go on from it."""
    import time

    from simulator.core import ceph_loop as K

    writes = bool(np.any(np.asarray(kinds) != 0))
    why = unsupported_writes(cluster, [image]) if writes else unsupported(cluster)
    if not why and bool(np.any(np.asarray(kinds) == 0)) and (writes or image.base_table.any_allocated()):
        why = unsupported_reads(cluster, [image])  # reads of written objects (or of objects the run writes)
    if why:
        raise ValueError(f"compiled Ceph core: {why}")
    n = len(kinds)
    st, meta = build_state(cluster, n_ops=n_ops or max(4096, 8 * depth), n_req=n, images=[image])
    k = next(i for i, img in enumerate(meta["images"]) if img is image)
    st.rqi[:n, L.RQI_IMG] = k
    st.rqi[:n, L.RQI_KIND] = kinds
    st.rqi[:n, L.RQI_OFF] = offsets
    st.rqi[:n, L.RQI_SIZE] = sizes
    st.gi[L.GI_NREQ] = n
    st.gi[L.GI_OUT] = n
    st.gi[L.GI_CLOSED] = 1
    first = min(depth, n)
    st.gi[L.GI_NEXTREQ] = first
    w0 = time.perf_counter()
    c0 = time.process_time()
    for r in range(first):
        K.issue_now(st, r)
    status = run_refilling(st, meta)
    wall = time.perf_counter() - w0
    cpu = time.process_time() - c0
    if status not in (L.ST_DONE, L.ST_EMPTY) or st.gi[L.GI_OUT]:
        raise RuntimeError(f"compiled Ceph core stopped with status {status} (events {st.gi[L.GI_EVENTS]}, "
                           f"{st.gi[L.GI_OUT]} requests outstanding): {why_text(st)}")
    info = {"events": int(st.gi[L.GI_EVENTS]), "wall_s": wall, "cpu_s": cpu,
            "bluestore": {name: int(st.bsi[:, col].sum()) for name, col in (
                ("kv_batches", L.BS_KVBATCHES), ("kv_txcs", L.BS_KVTXCS), ("deferred_ops", L.BS_DEFOPS),
                ("deferred_ios", L.BS_DEFIOS), ("throttled", L.BS_THROTTLED), ("direct_writes", L.BS_DIRECT))}}
    if writes:
        write_back_bluestore(st, meta)
    write_back(st, meta)
    info["done_order"] = np.argsort(st.rqi[:n, L.RQI_DSEQ], kind="stable")
    return st.rqf[:n, L.RQF_TISSUE].copy(), st.rqf[:n, L.RQF_TDONE].copy(), info


def write_back_bluestore(st: L.CephState, meta: dict[str, Any], report: bool = False) -> None:
    """Put each BlueStore's state back after a drained write run (no kv cycle, no IO, no waiter):
    throttles, allocation, WAL position, counters, and the transactions still held — applied or
    stable deferred batches awaiting cleanup, pending deferred batches per sequencer — as Python
    Txc / _Osr objects, so the Python model goes on from there (their ``writing`` buffers come back
    with the data caches, in :func:`write_back`).
    ``report`` (the state stays live in the arrays, see :func:`write_back`): the counters and the
    figures BlueStore's statistics read only, no transactions."""
    from simulator.ceph.bluestore import Txc, _Osr

    pgs = meta["pgs"]
    maxsize = st.pga.shape[1]
    txi = st.txi

    class _OpRef:  # what a Txc's op is asked for after its commit: its object key and range
        __slots__ = ("length", "objkey", "off")

        def __init__(self, objkey: int, off: int, length: int):
            self.objkey, self.off, self.length = objkey, off, length

    # the sequencers with live transactions, by OSD (the OSD at the row's acting position)
    r0 = int(st.pgi.shape[0]) * maxsize
    live = np.nonzero(st.osi[:r0, L.OS_LIVE] != 0)[0]
    owner = st.pga[live // maxsize, live % maxsize]
    live_by_osd: dict[int, list[int]] = {}
    for row, j in zip(live.tolist(), owner.tolist(), strict=True):
        live_by_osd.setdefault(j, []).append(row)
    for j, o in enumerate(meta["osds"]):
        bs = o.bs
        b = st.bsi[j]
        if report:
            _bluestore_figures(st, j, bs)
            continue
        if b[L.BS_KVBUSY] or b[L.BS_KVQ_H] >= 0 or b[L.BS_TBW_H] >= 0 or b[L.BS_DTW_H] >= 0:
            raise RuntimeError(f"osd.{o.id}: BlueStore busy (kv cycle, queue or waiters): write back needs a drained run")
        # every sequencer the Python model had starts from the compiled state: no pending or running
        # batch, no live transaction, unless the rows below say so (a stale pending list, left on a
        # sequencer whose batch the run submitted, made the Python model's next deferred write fail)
        for x in bs.osrs.values():
            x.pending = None
            x.running = False
            x.live = 0
            x.q.clear()
        osrs: dict[int, Any] = {}

        def osr_of(row: int, _bs: Any = bs, _osrs: dict = osrs) -> Any:
            x = _osrs.get(row)
            if x is None:
                pg = pgs[row // maxsize]
                x = _bs.osrs.get(pg)
                if x is None:
                    x = _bs.osrs[pg] = _Osr()
                _osrs[row] = x
            return x

        def txc_of(x: int, _osr_of: Any = osr_of) -> Any:
            t = Txc(_OpRef(int(txi[x, L.TX_KEY]), int(txi[x, L.TX_OFF]), int(txi[x, L.TX_LEN])),
                    None, _osr_of(int(txi[x, L.TX_OSR])))
            t.cost = int(txi[x, L.TX_COST])
            t.doff = int(txi[x, L.TX_DOFF])
            t.dlen = int(txi[x, L.TX_DLEN])
            t.wal_bytes = int(txi[x, L.TX_WALB])
            t.had_io = bool(txi[x, L.TX_HADIO])
            t.io_done = bool(txi[x, L.TX_IODONE])
            return t

        def batches(h: int, _txc_of: Any = txc_of) -> list:
            out = []
            while h >= 0:
                batch = []
                x = h
                while x >= 0:
                    batch.append(_txc_of(x))
                    x = int(txi[x, L.TX_NEXT])
                out.append(batch)
                h = int(txi[h, L.TX_NEXTB])
            return out

        bs.kv_busy = False
        bs.kv_queue = []
        bs._kv_batch, bs._kv_stable, bs._kv_unstable = [], [], []
        bs.deferred_done = batches(int(b[L.BS_DONE_H]))
        bs.deferred_stable = batches(int(b[L.BS_STAB_H]))
        # sequencers: live counts, pending batches in _dq order (their writing buffers: ceph_dcache.write_back,
        # which rebuilds every BlueStore's from the compiled table)
        for row in live_by_osd.get(j, ()):
            osr_of(row).live = int(st.osi[row, L.OS_LIVE])
        bs._dq = {}
        row = int(b[L.BS_DQ_H])
        while row >= 0:
            x = osr_of(row)
            if st.osi[row, L.OS_RUNNING] or st.osi[row, L.OS_QH] >= 0:
                raise RuntimeError(f"osd.{o.id}: a deferred batch or a direct write is running: not drained")
            pend = batches(int(st.osi[row, L.OS_PH]))[0]
            x.pending = pend
            x.running = False
            bs._dq[x] = None
            row = int(st.osi[row, L.OS_DQNEXT])
        _bluestore_figures(st, j, bs)
    for k, q in meta["devices"]:
        if st.dvi[k, L.DV_QN] and not report:
            raise RuntimeError(f"{q.path}: requests queued: write back needs a drained run")
        q._free = int(st.dvi[k, L.DV_FREE])
        q._busy_acc += float(st.dvf[k, L.DVF_BUSY])
        st.dvf[k, L.DVF_BUSY] = 0.0


def _bluestore_figures(st: L.CephState, j: int, bs: Any) -> None:
    """BlueStore row ``j``'s scalars back into ``bs``: queue sizes, throttles, allocation, WAL
    position, counters and times."""
    b = st.bsi[j]
    bs.deferred_queue_size = int(b[L.BS_DQSIZE])
    bs.deferred_txcs = int(b[L.BS_DTXCS])
    bs.peak_deferred_txcs = int(b[L.BS_PEAKDTXCS])
    bs.aggressive = int(b[L.BS_AGGR])
    bs.io_since_flush = bool(b[L.BS_IOSF])
    bs._timer_armed = bool(b[L.BS_TIMER])
    bs.tb.cur, bs.tb.peak = int(b[L.BS_TBCUR]), int(b[L.BS_TBPEAK])
    bs.dt.cur, bs.dt.peak = int(b[L.BS_DTCUR]), int(b[L.BS_DTPEAK])
    bs.wal_pos = int(b[L.BS_WALPOS])
    bs.log_pos = int(b[L.BS_LOGPOS])
    bs.cursor, bs.allocated = int(b[L.BS_CURSOR]), int(b[L.BS_ALLOCATED])
    for col, name in _BS_COUNTERS:
        setattr(bs, name, int(b[col]))
    bs.throttle_wait = float(st.bsf[j, L.BF_TWAIT])
    bs.kv_time = float(st.bsf[j, L.BF_KVTIME])
    bs.wal_time = float(st.bsf[j, L.BF_WALTIME])
    bs.flush_time = float(st.bsf[j, L.BF_FLUSHTIME])


def _write_back_core_devices(st: L.CephState, meta: dict[str, Any], report: bool = False) -> None:
    """The device core's devices (HDDs, LUNs, block layers) back into the Python devices after a
    drained run: accounting, mechanism state, counters (core.run.write_back_devices). ``report``:
    the run stopped with work pending (see :func:`write_back`): the same figures, no checks."""
    cm = meta["core_devices"]
    for k, v in cm["partitions"]:  # Partition accounting (Device + PassThroughBusy fields)
        f = st.dvf[k]
        v._t0, v._tq, v._qarea = float(f[L.DVF_P_T0]), float(f[L.DVF_P_TQ]), float(f[L.DVF_P_QAREA])
        v._inside, v._busy_since, v._busy_acc = int(f[L.DVF_P_INSIDE]), float(f[L.DVF_P_BSINCE]), float(f[L.DVF_P_BUSY])
        v.completed = [int(x) for x in f[L.DVF_P_COMP : L.DVF_P_COMP + 4]]
        v.bytes = [int(x) for x in f[L.DVF_P_BYTES : L.DVF_P_BYTES + 4]]
    if not cm["devs"]:
        return
    from simulator.core import layout as DL
    from simulator.core.run import write_back_devices

    ds = st.dev
    if not report:
        if ds.gi[DL.GI_HN] or ds.gi[DL.GI_FREE] != ds.rfree.shape[0]:
            raise RuntimeError("the device core holds events or requests: write back needs a drained run")
        for h, d in enumerate(cm["hdds"]):
            if ds.hi[h, DL.HI_NLIVE] or ds.hf[h, DL.HF_DIRTY_BYTES]:
                raise RuntimeError(f"{d.path}: dirty data left in the write cache: write back needs a drained run")
    write_back_devices(ds, cm["devs"], cm["queues"], cm["blks"], cm["hdds"], report=report)

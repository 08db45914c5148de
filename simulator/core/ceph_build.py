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

from simulator.core import ceph_layout as L

__all__ = ["Streams", "build_state", "obj_base_of", "refill", "run_kernel", "unsupported", "write_back"]


def obj_base_of(img: Any) -> np.ndarray:
    """The image's (object, acting position) -> device offset table (-1 = not allocated), as a
    2-D int64 array view (the one place the compiled core reads RbdImage's storage)."""
    return np.asarray(img.obj_base).reshape(img.n_objects, img.pool.size)


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
    if cluster.autotune is not None:
        return "bluestore.autotune is enabled (Python only)"
    if cluster.tracer is not None:
        return "a tracer is attached"
    for pool in cluster.pools.values():
        if pool.ec is not None:
            return f"pool {pool.name}: erasure-coded pools are Python only"
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


def build_state(cluster: Any, n_ops: int = 4096, n_req: int = 0, heap: int = 0) -> tuple[L.CephState, dict[str, Any]]:
    """The state arrays of ``cluster``; ``n_ops`` object-op rows, ``n_req`` client-request rows.
    Returns (state, meta): meta maps rows back to the Python objects (for write_back)."""
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
    for i, h in enumerate(hosts):
        c = h.cpu
        ci[i, L.CI_SERVERS] = c.servers
        ci[i, L.CI_STALLED] = int(c.stalled)
        ci[i, L.CI_JOBS] = c.jobs
        ci[i, L.CI_STALLS] = c.stalls
        ci[i, L.CI_PLAIN] = int(c._wake == 0.0 and c._stall_p == 0.0 and c._bg == 0.0 and c._fg_gap == 0.0)
        ci[i, L.CI_STREAM] = streams.row(c) if not ci[i, L.CI_PLAIN] and (c._stall_p or c._fg_gap) else -1
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
        of[j] = (c.read_cost, c.write_cost, c.subop_cost, c.reply_cost, c.commit_cost, c.msgr_send_cost,
                 c.msgr_recv_cost, c.msgr_cost_per_byte, o._ln_s, o._ln_mu)
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
            row += 1
    # ---- images
    imgs = list(cluster.images.values())
    ni = len(imgs)
    imi = np.zeros((max(ni, 1), L.NII), np.int64)
    imf = np.zeros((max(ni, 1), L.NIF), np.float64)
    ps_parts: list[np.ndarray] = []
    base_parts: list[np.ndarray] = []
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
        imi[k, L.II_KEY] = boff  # offset of its rows in obj_base (flattened: object * size + position)
        imf[k] = (cc.submit_cost, cc.complete_cost, cc.cost_per_byte, cc.write_cost)
        ps_parts.append(np.asarray(img.obj_ps_array, np.int32))
        base_parts.append(obj_base_of(img).reshape(-1))
        off += img.n_objects
        boff += img.n_objects * img.pool.size
    obj_ps = np.concatenate(ps_parts) if ps_parts else np.zeros(1, np.int32)
    obj_base = np.concatenate(base_parts).astype(np.int64) if base_parts else np.zeros(1, np.int64)
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
    gf[L.GF_NOW] = env.now
    gf[L.GF_LAT] = cluster.net.latency
    gf[L.GF_LOOP] = cluster.net.loopback
    ns = max(len(streams.rands), 1)
    su = np.zeros((ns, L.SLEN), np.float64)
    si = np.zeros((ns, L.NSI), np.int64)
    st = L.CephState(
        gi=gi, gf=gf,
        ht=np.zeros(hcap), hs=np.zeros(hcap, np.int64), hk=np.zeros(hcap, np.int64),
        hg=np.zeros(hcap, np.int64), ha=np.zeros(hcap, np.int64),
        su=su, si=si, ci=ci, cf=cf, cfree=cfree, lf=lf, hoi=hoi, oi=oi, of=of,
        shi=shi, shf=shf, shl=shl, shp=shp, pgi=pgi, pga=pga, pgb=pgb,
        imi=imi, imf=imf, obj_ps=obj_ps, obj_base=obj_base,
        opi=opi, opf=opf, opfree=opfree, rqi=rqi, rqf=rqf,
    )  # fmt: skip
    meta = {"hosts": hosts, "osds": osds, "pgs": pg_list, "images": imgs, "streams": streams}
    refill(st, meta)
    return st, meta


def refill(st: L.CephState, meta: dict[str, Any]) -> None:
    """Top every random stream up to SLEN uniforms (drawn from its Python component's stream, in order)."""
    su, si = st.su, st.si
    for r, rand in enumerate(meta["streams"].rands):
        p, n = int(si[r, L.SI_POS]), int(si[r, L.SI_LEN])
        left = n - p
        if left == L.SLEN:
            continue
        su[r, :left] = su[r, p:n]
        need = L.SLEN - left
        su[r, left:] = [rand.random() for _ in range(need)]
        si[r, L.SI_POS] = 0
        si[r, L.SI_LEN] = L.SLEN
    st.gi[L.GI_LOW] = 0


def write_back(st: L.CephState, meta: dict[str, Any], set_now: bool = True) -> None:
    """Put the compiled state back into the Python objects (after a drained run: no op in flight)."""
    gi = st.gi
    if gi[L.GI_FULL]:
        raise RuntimeError("compiled Ceph core: a pool or a random stream overflowed (state is void)")
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
    pgs = meta["pgs"]
    for j, o in enumerate(meta["osds"]):
        o.ops = [int(x) for x in st.oi[j, L.OI_OPS : L.OI_OPS + 4]]
        o.subops = int(st.oi[j, L.OI_SUBOPS])
        o.replies = int(st.oi[j, L.OI_REPLIES])
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
    for r, pg in enumerate(pgs):
        for i, a in enumerate(pg.acting):
            if st.pgb[r, i]:
                a.busy_pgs.add(pg)
    for k, img in enumerate(meta["images"]):
        o0 = int(st.imi[k, L.II_KEY])
        n = img.n_objects * img.pool.size
        view = obj_base_of(img)
        view[...] = st.obj_base[o0 : o0 + n].reshape(view.shape)
    # unconsumed uniforms go back to the front of their stream
    for r, rand in enumerate(meta["streams"].rands):
        p, n = int(st.si[r, L.SI_POS]), int(st.si[r, L.SI_LEN])
        rest = st.su[r, p:n].tolist()
        rand._buf = rest + rand._buf[rand._i :]
        rand._i = 0
        st.si[r, L.SI_POS] = st.si[r, L.SI_LEN] = 0
    if set_now:
        env = meta["osds"][0].env if meta["osds"] else None
        if env is not None and st.gf[L.GF_NOW] > env._now:
            env._now = float(st.gf[L.GF_NOW])


def run_kernel(kernel: Any, st: L.CephState, meta: dict[str, Any], n: int, *args: Any) -> None:
    """Run a standalone kernel of ceph_loop over ``n`` items, refilling the random streams whenever
    it stops for them."""
    i = 0
    while i < n:
        i = kernel(st, i, *args)
        if st.gi[L.GI_FULL]:
            raise RuntimeError("compiled Ceph core: a random stream ran dry")
        if st.gi[L.GI_LOW]:
            refill(st, meta)


def run_open(cluster: Any, image: Any, times: np.ndarray, kinds: np.ndarray, offsets: np.ndarray,
             sizes: np.ndarray, n_ops: int = 0) -> tuple[np.ndarray, dict[str, Any]]:
    """Issue requests to ``image`` at ``times`` (open loop: each arrival schedules the next, then
    submits) through the compiled core, run until all complete, write the state back. Returns each
    request's completion time and run figures (events, wall seconds)."""
    import time

    from simulator.core import ceph_loop as K

    why = unsupported(cluster)
    if why:
        raise ValueError(f"compiled Ceph core: {why}")
    n = len(times)
    st, meta = build_state(cluster, n_ops=n_ops or max(4096, 4 * n), n_req=n)
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
    while True:
        status = K.run_until(st, np.inf)
        if status == L.ST_REFILL:
            refill(st, meta)
            continue
        break
    wall = time.perf_counter() - w0
    if status != L.ST_DONE:
        raise RuntimeError(f"compiled Ceph core stopped with status {status} (events {st.gi[L.GI_EVENTS]})")
    write_back(st, meta)
    return st.rqf[:n, L.RQF_TDONE].copy(), {"events": int(st.gi[L.GI_EVENTS]), "wall_s": wall}

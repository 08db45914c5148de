"""fio jobs on an RBD image through the compiled Ceph core, with the same results as the Python
model (the job thread's statistics are fed the compiled run's completions in completion order, as
the device core does; tests/test_core_ceph.py and tests/test_core_ceph_wire.py check they equal
run_fio's).

:func:`unsupported_workload` and :func:`run_workload_ceph` are what :mod:`simulator.core.run`'s
one decision (``unsupported`` / ``run_workload``, used by ``simrun fio``, the experiment runner and
``run_fio(engine=...)``) calls when a workload's targets are RBD images; :func:`run_fio_ceph` runs
one job dict directly.

Covered: one job thread on one image, closed loop (an asynchronous engine, no submission latency),
one direction (write; read — of written objects with BlueStore's data cache and writing buffers,
core.ceph_dcache), a fixed block size, number_ios / size limits, runtime / time_based, ramp_time (the
statistics restart at the ramp's end, as the Python runner does; limits then apply: number_ios or
size with a ramp are refused), a fixed startdelay; the cluster as ``ceph_build.unsupported_writes``
/ ``unsupported_reads`` allow. :func:`unsupported_job` names what is not.

A compiled run stops where the Python runner's ``sim.run(until=done)`` stops: its last completion
schedules the run's end (``EV_STOP``, GI_CLOSED 2) as the job thread's completion succeeds the
workload's done event, so the events queued before it at that instant are processed and the
background work after it (kv cycles, deferred writes, the drives' destage of dirty cache data, lazily
finishing workers) stays pending in the compiled heaps. The state stays *held* (:class:`Held`, one per
cluster, kept on the Simulation): the Python objects receive what the statistics read
(``write_back(report=True)``: counters, windows, caches, allocations, device figures), and the next
compiled run on the same image resumes the arrays — its IOs interleave with the pending work as the
Python model's do, and nothing is rebuilt (the data cache's build included). Its statistics restart as
the Python objects' do (``_reset_counters`` at the job's start, or at the ramp's end). What needs the
Python objects to run hands the state over first (:meth:`Held.release`: drain, then the full
write-back): a Python run (``Workload.start``), ``ceph_build.build_state``, and a compiled run of
another image or of more requests in flight than the held op rows allow. The drain there is the one
place a chain can still leave the Python model's results (the Python model would have interleaved
that work with the next run), so the experiment runner avoids it: a point that would leave a held
state replays the chain's earlier points in Python instead (``experiment.execute.HandOver``). A
Python run's own pending work keeps later runs in Python (no hand-over that way). The simulated clock
is left at the last completion, as the Python run leaves it.
"""

from __future__ import annotations

import heapq
import math
import time
from typing import Any

import numpy as np

from simulator.core import ceph_layout as L_

__all__ = ["Held", "held_state", "held_states", "rbd_targets", "release_held", "run_fio_ceph", "run_workload_ceph", "unsupported_job",
           "unsupported_workload"]

#: request rows of a time-limited job at first (then doubled whenever the loop has issued the last:
#: it stops for Python then)
ROWS = 4096


def _op_rows(depth: int, image: Any = None) -> int:
    """Object-op rows a run of ``depth`` client requests in flight on ``image`` is built with (an erasure-coded
    pool's op has up to 2k sub-reads and k+m shard writes in flight)."""
    ec = getattr(getattr(image, "pool", None), "ec", None)
    per = 8 if ec is None else max(8, 3 * ec.k + ec.m + 2)
    return max(4096, per * depth)


class Held:
    """A compiled run's state kept after it stopped at its last completion, its background work (kv
    cycles, deferred writes, the drives' destage) still pending in the compiled heaps: the next
    compiled run on the same image resumes it (:func:`run_workload_ceph`); anything else hands it
    over first (:meth:`release`). The Python objects hold its figures for reporting only
    (``write_back(report=True)``). ``verdicts``: what ``ceph_build`` said of the cluster when the
    state was built from clean Python objects (per kind of run: writes, reads of written objects,
    reads of new objects); the Python objects' state is not read again while the state is held."""

    __slots__ = ("cluster", "image", "meta", "n_ops", "sim", "st", "verdicts")

    def __init__(self, sim: Any, cluster: Any, image: Any, st: Any, meta: dict[str, Any], n_ops: int,
                 verdicts: dict[str, str | None]):
        self.sim, self.cluster, self.image, self.st, self.meta = sim, cluster, image, st, meta
        self.n_ops, self.verdicts = n_ops, verdicts

    def fits(self, image: Any, depth: int) -> bool:
        """Whether a run of ``depth`` requests in flight on ``image`` can resume this state (the same
        image, enough op rows)."""
        return image is self.image and _op_rows(depth, image) <= self.n_ops

    def repeered(self) -> None:
        """The cluster marked an OSD down or up (:meth:`Cluster.mark_down` / ``mark_up``: no remapping) while
        this state is held: its OSDs' up flags and its PGs' acting primaries follow, which is all the
        compiled core reads of them (a PG that went inactive is refused before: the cluster releases first)."""
        st, meta = self.st, self.meta
        for j, o in enumerate(meta["osds"]):
            st.oi[j, L_.OI_UP] = int(o.up)
        for r, pg in enumerate(meta["pgs"]):
            st.pgi[r, L_.PGI_PPOS] = pg.ppos

    def release(self) -> None:
        """Hand the state over to the Python objects: drain (every pending event processed, as a
        compiled run ended before runs could resume) and write everything back. The Python model
        would have interleaved that work with the next run's IOs: a chain that leaves the compiled
        core here differs from the Python chain from this point on (see docs/design.md)."""
        from simulator.core.ceph_build import (
            refill,
            run_refilling,
            why_text,
            write_back,
            write_back_bluestore,
        )

        held = _registry(self.sim)
        if held.get(id(self.cluster)) is self:
            del held[id(self.cluster)]
        st, meta = self.st, self.meta
        st.gi[L_.GI_CLOSED] = 1
        refill(st, meta)
        status = run_refilling(st, meta)
        if status != L_.ST_DONE:
            raise RuntimeError(f"compiled Ceph core: the hand-over's drain stopped with status {status}: {why_text(st)}")
        write_back_bluestore(st, meta)
        write_back(st, meta, set_now=False)


def _registry(sim: Any) -> dict[int, Held]:
    """The held states of ``sim``'s clusters (by cluster id)."""
    reg = sim.__dict__.get("_ceph_held")
    if reg is None:
        reg = sim.__dict__["_ceph_held"] = {}
    return reg


def held_states(sim: Any) -> list[Held]:
    """Every held state of ``sim``."""
    return list(sim.__dict__.get("_ceph_held", {}).values())


def held_state(cluster: Any) -> Held | None:
    """The compiled state ``cluster`` is held in, if any."""
    return _registry(cluster.sim).get(id(cluster))


def release_held(sim: Any, cluster: Any | None = None) -> None:
    """Hand every held state of ``sim`` (or ``cluster``'s) over to the Python objects
    (:meth:`Held.release`): what a Python run (``Workload.start``) or a fresh build needs first."""
    reg = sim.__dict__.get("_ceph_held")
    if not reg:
        return
    for h in list(reg.values()):
        if cluster is None or h.cluster is cluster:
            h.release()


def unsupported_job(th: Any) -> str | None:
    """Why the compiled Ceph core cannot run job thread ``th`` (None = it can)."""
    from simulator.workloads.offsets import RandomOffsets

    job = th.job
    limited = th._ios_limit != math.inf or th._bytes_limit != math.inf
    checks = (
        (th._nfiles != 1, "several files"),
        (th._streams is not None or th._app is not None, "sim_mix / application IO"),
        (not th._mixed and len(job.ddirs) != 1, f"rw={job.rw} (one direction, or random reads and writes mixed)"),
        (th._mixed and (tuple(job.ddirs) != (0, 1) or type(th.files[0].gen) is not RandomOffsets),
         f"rw={job.rw} (a mix of random reads and writes only: {job.random_distribution} offsets)"),
        (th._ddir0 not in (0, 1), f"rw={job.rw}"),

        (th._rate is not None, "rate_iops (open loop)"),
        (th._slat != 0.0, "a submission latency (sim_slat)"),
        (th._tt > 0.0, "thinktime"),
        (bool(th._fsync_n or th._fdsync_n or job.end_fsync), "fsync/fdatasync/end_fsync"),
        (th._fua, "sync (FUA writes)"),
        (job.ramp_time > 0 and limited, "ramp_time with an IO limit (number_ios or size; time_based is covered)"),
        (not limited and th._runtime == math.inf, "no IO limit and no runtime"),
        (job.startdelay[1] != job.startdelay[0], "startdelay as a range"),
    )
    for bad, what in checks:
        if bad:
            return f"job {job.name!r}: {what} (the compiled Ceph core runs closed-loop jobs of one direction or randrw)"
    return None


def rbd_targets(wl: Any) -> bool:
    """Whether any job of ``wl`` drives an RBD image (then the Ceph core decides, not the device core)."""
    from simulator.ceph.rbd import RbdImage

    return any(isinstance(f.dev, RbdImage) for th in wl.threads for f in th.files)


def _run_kind(th: Any) -> str:
    """Which check a run of job thread ``th`` needs: "write", "mixed" (writes and reads of written
    objects), "read" (of written objects), "new"."""
    if th._mixed:
        return "mixed"
    if th._ddir0 == 1:
        return "write"
    return "read" if th.files[0].dev.base_table.any_allocated() else "new"


def _verdicts(cluster: Any, image: Any) -> dict[str, str | None]:
    """What ``ceph_build`` says of runs of each kind on ``image`` (see :class:`Held`)."""
    from simulator.core.ceph_build import unsupported, unsupported_reads, unsupported_writes

    w, r = unsupported_writes(cluster, [image]), unsupported_reads(cluster, [image])
    return {"write": w, "read": r, "mixed": w or r, "new": unsupported(cluster)}


def _unsupported_cluster(th: Any) -> str | None:
    from simulator.core.ceph_build import unsupported, unsupported_reads, unsupported_writes

    image = th.files[0].dev
    held = held_state(image.cluster)
    if held is not None:
        if held.fits(image, th._depth):  # the held state is the compiled core's own: its verdicts
            return held.verdicts[_run_kind(th)]
        return (f"its compiled state is held for a run of {held.image.path} with at most {held.n_ops // 8} "
                "requests in flight (the hand-over to this run drains it)")
    kind = _run_kind(th)
    if kind == "write":  # only the driven image's tables (another pool on other drives may differ in shape)
        return unsupported_writes(image.cluster, [image])
    if kind == "mixed":
        return unsupported_writes(image.cluster, [image]) or unsupported_reads(image.cluster, [image])
    if kind == "read":
        return unsupported_reads(image.cluster, [image])
    return unsupported(image.cluster)


def unsupported_workload(sim: Any, wl: Any) -> str | None:
    """Why the compiled Ceph core cannot run the (not started) Workload ``wl`` (None = it can)."""
    from simulator.ceph.rbd import RbdImage

    if wl._started:
        return "the workload was already started"
    if getattr(wl, "io_source", None) is not None:
        return "an application workload (io_source)"
    if not all(isinstance(f.dev, RbdImage) for th in wl.threads for f in th.files):
        return "RBD images and other devices in one run (the Ceph core drives RBD images only)"
    if len(wl.threads) != 1:
        return (f"{len(wl.threads)} job threads (several jobs or numjobs > 1): the compiled Ceph core "
                "drives one thread")
    th = wl.threads[0]
    why = unsupported_job(th)
    if why:
        return why
    if _pending(sim.env):
        return "events are pending in the Python engine (the cluster is in the middle of a Python run's work)"
    why = _unsupported_cluster(th)
    return f"the cluster: {why}" if why else None


def _offsets(gen: Any, ddir: int, bs: int, n: int) -> np.ndarray:
    """The thread's next ``n`` offsets, as ``n`` calls of ``gen.next(ddir, bs)`` return them (fio's
    random offsets in bulk: what the generator had drawn, then whole blocks of it)."""
    from simulator.workloads.offsets import RandomOffsets

    if type(gen) is not RandomOffsets:
        return np.fromiter((gen.next(ddir, bs) for _ in range(n)), dtype=np.int64, count=n)
    out = np.empty(n, np.int64)
    k = 0
    while k < n:
        buf = gen._buf
        if not buf:
            buf = gen._refill()  # the next block, reversed (next() pops from the end)
        take = min(n - k, len(buf))
        out[k : k + take] = buf[len(buf) - take :][::-1]
        del buf[len(buf) - take :]
        k += take
    return out


def _inert(ev: Any) -> bool:
    """An event that does nothing when processed (no callback, not a failure): the end event of a
    finished Python run, which ``sim.run(until=...)`` leaves queued, or a stopped control timer."""
    return ev.callbacks == [] and ev._ok


def _pending(env: Any) -> bool:
    """Whether ``env`` holds events with work to do (inert ones are processed or dropped by
    :func:`run_workload_ceph`)."""
    return any(not _inert(item[-1]) for item in env._queue)


def _drop_inert(env: Any) -> None:
    """Process the inert events due now, as SimPy would (nothing happens, the clock stays); drop the
    later ones (the compiled run moves the clock past them, and processing them afterwards would
    move it back)."""
    q = env._queue
    while q and q[0][0] <= env._now and _inert(q[0][-1]):
        env.step()
    if q:
        q[:] = [item for item in q if not _inert(item[-1])]
        heapq.heapify(q)


class _Mix:
    """The directions and sizes of a job's requests (randrw: fio's get_rw_ddir; bssplit / bsrange: its
    get_next_buflen), decided in issue order by the thread's own rules (``JobThread._next_ddir``,
    ``_bsvar``) ahead of the compiled run that issues them. Each decided row keeps the thread's rwmix state
    before its decision and the uniforms it drew, so that the rows not issued yet can be decided again
    from the ramp's end, where fio restarts its issue counters (JobThread._ramp_end): their uniforms go
    back to their streams."""

    def __init__(self, th: Any):
        self.th = th
        #: JobThread._issue's byte limit (issued bytes, from the job's start: a ramp with a limit is not covered)
        self.limit = th._bytes_limit
        self.issued = 0
        self.before: list[tuple[int, int, int, int]] = []
        self.drawn: list[tuple[float, float]] = []  # per row: the rwmix and the size uniform drawn, or -1.0

    @staticmethod
    def _take(rnd: Any, draw: Any) -> tuple[Any, float]:
        """``draw()`` and the uniform of ``rnd`` it consumed (-1.0: none)."""
        if rnd is None:
            return draw(), -1.0
        u = rnd.peek()
        n = len(rnd._buf)
        out = draw()
        return out, (u if len(rnd._buf) < n else -1.0)

    def decide(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The next ``n`` directions and sizes (fewer once the byte limit is reached)."""
        th = self.th
        kinds = np.empty(n, np.int64)
        sizes = np.empty(n, np.int64)
        mixed = th._mixed
        for i in range(n):
            if self.issued >= self.limit:
                return kinds[:i], sizes[:i]
            iss = th._issues
            self.before.append((th._rwmix_ddir, th._rwmix_issues, iss[0], iss[1]))
            d, u = self._take(th._rw_rand, th._next_ddir) if mixed else (th._ddir0, -1.0)
            iss[d] += 1
            bv = th._bsvar[d]
            b, ub = self._take(th._bs_rand, bv) if bv is not None else (th._bs[d], -1.0)
            self.drawn.append((u, ub))
            self.issued += b
            kinds[i] = d
            sizes[i] = b
        return kinds, sizes

    def restart(self, j: int) -> int:
        """fio's issue counters restart before row ``j`` (the ramp's end): the rows from ``j`` on are
        undone (their uniforms back to their streams, in order); returns how many there were."""
        n = len(self.before) - j
        if n <= 0:
            return 0
        th = self.th
        for k, rnd in ((0, th._rw_rand), (1, th._bs_rand)):
            if rnd is not None:  # the stream pops from the end of its buffer: the last drawn goes back first
                rnd._buf.extend(x[k] for x in reversed(self.drawn[j:]) if x[k] >= 0.0)
        th._rwmix_ddir = self.before[j][0]
        del self.before[j:]
        del self.drawn[j:]
        self.issued = 0  # (no byte limit with a ramp)
        th._issues = [0, 0, 0]  # JobThread._ramp_end
        th._rwmix_issues = 0
        return n

    def settle(self, n: int) -> None:
        """The run issued ``n`` rows: the thread's rwmix state is the one after the last (rows decided beyond
        it are dropped)."""
        if n < len(self.before):
            self.th._rwmix_ddir, self.th._rwmix_issues = self.before[n][0], self.before[n][1]


def _add_rows(st: Any, gen: Any, ddir: int, bs: int, k: int, n: int, mix: _Mix | None = None) -> Any:
    """``n`` more request rows (the thread's next offsets, in issue order) after the state's ``k``;
    with ``mix`` their directions are decided (a randrw job), else they are all ``ddir``."""
    from simulator.core import ceph_layout as L

    if mix is not None:
        kinds, sizes = mix.decide(n)
        n = len(kinds)
    rqi = np.zeros((k + n, L.NRQI), np.int64)
    rqf = np.zeros((k + n, L.NRQF))
    rqi[:k] = st.rqi[:k]
    rqf[:k] = st.rqf[:k]
    rqi[k:, L.RQI_IMG] = rqi[0, L.RQI_IMG] if k else 0
    if mix is None:
        rqi[k:, L.RQI_KIND] = ddir
        rqi[k:, L.RQI_SIZE] = bs
    else:
        rqi[k:, L.RQI_KIND], rqi[k:, L.RQI_SIZE] = kinds, sizes
    rqi[k:, L.RQI_OFF] = _offsets(gen, ddir, bs, n)
    st = st._replace(rqi=rqi, rqf=rqf)
    st.gi[L.GI_NREQ] = k + n
    st.gi[L.GI_OUT] += n
    return st


def _reset_counters(st: Any) -> None:
    """Cluster.reset_stats on the compiled state (fio's statistics restart at the end of ramp_time):
    the counters BlueStore, OSD, CpuPool and Link reset, as their reset_stats do (the Python objects'
    windows restart in Python at the same instant; write-back then puts these counters in them)."""
    from simulator.core import ceph_build as B
    from simulator.core import ceph_layout as L
    from simulator.core import ceph_loop as K

    st.cf[:, L.CF_BUSY] = 0.0
    st.cf[:, L.CF_FGBUSY] = 0.0
    st.ci[:, L.CI_JOBS] = 0
    st.ci[:, L.CI_STALLS] = 0
    st.thi[:, L.THI_JOBS] = 0  # CpuPool.reset_stats: its threads' jobs and wakes
    st.thi[:, L.THI_WAKES] = 0
    st.lf[:, L.LF_BUSY] = 0.0
    st.lf[:, L.LF_BYTES] = 0
    st.oi[:, L.OI_OPS : L.OI_OPS + 4] = 0
    st.oi[:, L.OI_SUBOPS] = 0
    st.oi[:, L.OI_REPLIES] = 0
    for col, _name in B._BS_COUNTERS:
        st.bsi[:, col] = 0
    for col in (L.BF_TWAIT, L.BF_KVTIME, L.BF_WALTIME, L.BF_FLUSHTIME):
        st.bsf[:, col] = 0.0
    st.bsi[:, L.BS_TBPEAK] = st.bsi[:, L.BS_TBCUR]
    st.bsi[:, L.BS_DTPEAK] = st.bsi[:, L.BS_DTCUR]
    st.bsi[:, L.BS_PEAKDTXCS] = st.bsi[:, L.BS_DTXCS]
    st.dvf[:, L.DVF_BUSY] = 0.0
    st.oni[:, L.ON_HITS] = 0  # BlueStore.reset_stats: onodes.hits = misses = 0
    st.oni[:, L.ON_MISSES] = 0
    B._dcache.reset_counters(st.dc)  # BlueStore's data cache hits and misses
    K.reset_core_devices(st)  # the device core's HDDs, block layers and LVM volumes below BlueStore


def _image_accounting(image: Any, t_done: np.ndarray, n: int, depth: int, t_rec: float, ddirs: np.ndarray,
                      sizes: np.ndarray) -> None:
    """The image's own statistics (Device.submit / Device._finish) for the window that began at
    ``t_rec``, from the completion times in completion order, with Python's float operations in
    Python's order: before the k-th completion ``min(n, depth + k) - k`` requests are inside (each
    completion issues the next at its own instant, which adds ``inside x 0``); the queue-depth area
    grows by inside x (t_k - t_previous) from the window's start."""
    t = t_done[t_done >= t_rec]
    m = len(t)
    if m:
        k = np.arange(n - m, n)
        inside = np.minimum(n, depth + k) - k
        prev = np.empty(m)
        prev[0] = image._tq
        prev[1:] = t[:-1]
        terms = np.empty(m + 1)
        terms[0] = image._qarea
        terms[1:] = inside * (t - prev)
        image._qarea = float(np.cumsum(terms)[-1])  # left to right, as qarea += ... adds them
        image._tq = float(t[-1])
    image._inside = 0
    kept = t_done >= t_rec
    for d in (0, 1):
        sel = kept & (ddirs == d)
        image.completed[d] += int(np.count_nonzero(sel))
        image.bytes[d] += int(sizes[sel].sum())


def run_workload_ceph(sim: Any, wl: Any, keep: bool = True) -> dict[str, Any]:
    """Run the not-started Workload ``wl`` (one thread on an RBD image, as :func:`unsupported_workload`
    allows) through the compiled Ceph core, leaving its thread, statistics and the cluster as the
    Python model would for reporting. Returns run figures (events, loop wall and CPU seconds).
    The run resumes the cluster's held state if it fits (:class:`Held`), else builds one; it stops at
    its last completion and keeps the state held (``keep``; False: drain and write back at once,
    as before held states — the differential tests' mutation)."""
    from simulator.core import ceph_layout as L
    from simulator.core import ceph_loop as K
    from simulator.core.ceph_build import (
        build_state,
        refill,
        run_refilling,
        why_text,
        write_back,
        write_back_bluestore,
    )

    if len(wl.threads) == 1 and rbd_targets(wl):
        img = wl.threads[0].files[0].dev
        held = held_state(img.cluster)
        if held is not None and not held.fits(img, wl.threads[0]._depth):
            held.release()  # a run of another image or depth: hand over (drain), then build afresh
    why = unsupported_workload(sim, wl)
    if why:
        from simulator.core.run import Unsupported

        raise Unsupported(why)
    th = wl.threads[0]
    job = th.job
    image = th.files[0].dev
    cluster = image.cluster
    gen = th.files[0].gen
    ddir = th._ddir0
    bs = th._bs[ddir]
    depth = th._depth
    env = sim.env
    held = held_state(cluster)
    _drop_inert(env)
    # Workload.start -> JobThread.start / _begin (after a fixed startdelay; nothing else is pending)
    t0 = env.now + job.startdelay[0]
    if t0 > env._now:
        env._now = t0
    wl._started = True
    wl._phase_devs = set()
    t_rec = t0 + job.ramp_time
    t_stop = t_rec + th._runtime
    th._t0 = t0
    th._tt_last = t0
    th._t_rec = t_rec
    th._t_stop = t_stop
    th._cpu_free = t0
    if job.time_based:
        th.stats.set_window(t_rec, t_stop)
    n_lim = th._ios_limit
    if th._bytes_limit != math.inf and not (th._varbs or th._bs[0] != th._bs[1]):
        n_lim = min(n_lim, -(-int(th._bytes_limit) // bs))  # (variable sizes: _Mix stops at the limit)
    ramp = job.ramp_time > 0
    if not ramp:  # JobThread._ramp_end at the start: the image's (and cluster's) statistics restart
        th._limits_on = True
        image.reset_stats()
        wl._phase_devs.add(id(image))
    rows = int(min(n_lim, max(ROWS, 8 * depth)))
    mix = _Mix(th) if th._mixed or th._varbs else None
    if held is not None:
        del _registry(sim)[id(cluster)]  # resumed: held again at the end
        st, meta, verdicts, n_ops = held.st, held.meta, held.verdicts, held.n_ops
        refill(st, meta)  # the streams went back to the Python components at the write-back
        if t0 > st.gf[L.GF_NOW]:  # a startdelay: the pending work before the job's start
            run_refilling(st, meta, np.nextafter(t0, -np.inf))
            st.gf[L.GF_NOW] = t0
        if not ramp:  # the statistics restarted above (image.reset_stats): the arrays' counters too
            _reset_counters(st)
    else:
        n_ops = _op_rows(depth, image)
        verdicts = _verdicts(cluster, image)
        st, meta = build_state(cluster, n_ops=n_ops, n_req=0, images=[image])
    ev0 = int(st.gi[L.GI_EVENTS])
    k = next(i for i, img in enumerate(meta["images"]) if img is image)
    st.gi[L.GI_OUT] = 0
    st.gi[L.GI_NCOMP] = 0
    st = _add_rows(st, gen, ddir, bs, 0, rows, mix)
    st.rqi[:, L.RQI_IMG] = k
    st.gi[L.GI_CLOSED] = 2 if keep else 1  # 2: the last completion schedules the run's end (EV_STOP)
    first = min(depth, int(st.gi[L.GI_NREQ]))  # (fewer rows than asked: a byte limit reached)
    st.gi[L.GI_NEXTREQ] = first
    w0 = time.perf_counter()
    c0 = time.process_time()
    for r in range(first):
        K.issue_now(st, r)
    # control points: the ramp's end (statistics restart), the runtime's end (no more issues)
    points = ([(t_rec, "ramp")] if ramp else []) + ([(t_stop, "stop")] if t_stop != math.inf else [])
    points.append((math.inf, "end"))
    if first == 0:
        points = []
    for t_point, what in points:
        # the events before the point (a timer set at the job's start comes before IO events at its instant)
        limit = np.nextafter(t_point, -np.inf) if t_point != math.inf else np.inf
        while True:
            status = K.run_until(st, limit)
            if status == L.ST_REFILL:
                refill(st, meta)
                nreq = int(st.gi[L.GI_NREQ])
                if st.gi[L.GI_NEXTREQ] >= nreq and nreq < n_lim:  # every row issued: as many again
                    st = _add_rows(st, gen, ddir, bs, nreq, int(min(nreq, n_lim - nreq)), mix)
                    if int(st.gi[L.GI_NREQ]) == nreq:  # the byte limit: no more rows
                        n_lim = nreq
                continue
            break
        if status in (L.ST_EMPTY, L.ST_FULL) or (status == L.ST_DONE and t_point != math.inf and st.gi[L.GI_OUT]):
            raise RuntimeError(f"compiled Ceph core stopped with status {status} (events {st.gi[L.GI_EVENTS]}, "
                               f"{st.gi[L.GI_OUT]} requests outstanding): {why_text(st)}")
        if status == L.ST_STOP:  # the last completion (and what was queued before it): the run is over
            break
        if what == "ramp":
            # JobThread._ramp_end: limits on, the image's and the cluster's statistics restart
            th._limits_on = True
            now_py = env._now
            env._now = t_rec
            image.reset_stats()
            env._now = now_py
            st.gf[L.GF_NOW] = t_rec  # the devices' windows restart at the ramp's end (the next event is not earlier)
            _reset_counters(st)
            wl._phase_devs.add(id(image))
            if th._mixed:  # the issue counters restart: the rows not issued yet are decided again
                j = int(st.gi[L.GI_NEXTREQ])
                m_undo = mix.restart(j)
                if m_undo:
                    st.rqi[j : j + m_undo, L.RQI_KIND], st.rqi[j : j + m_undo, L.RQI_SIZE] = mix.decide(m_undo)
        elif what == "stop":  # JobThread._issue at now >= t_stop: no more issues
            nxt = int(st.gi[L.GI_NEXTREQ])
            st.gi[L.GI_OUT] -= int(st.gi[L.GI_NREQ]) - nxt
            st.gi[L.GI_NREQ] = nxt
            n_lim = nxt
    wall = time.perf_counter() - w0
    cpu = time.process_time() - c0
    if st.gi[L.GI_OUT]:
        raise RuntimeError(f"compiled Ceph core: {st.gi[L.GI_OUT]} requests outstanding at the end: {why_text(st)}")
    n = int(st.gi[L.GI_NEXTREQ])
    if keep:  # held: the figures for reporting; the state stays in the arrays for the next run
        write_back_bluestore(st, meta, report=True)
        write_back(st, meta, set_now=False, report=True)
        _registry(sim)[id(cluster)] = Held(sim, cluster, image, st, meta, n_ops, verdicts)
    else:
        write_back_bluestore(st, meta)  # a read run too: its devices' busy time (BlueStore's state round-trips)
        write_back(st, meta, set_now=False)
    # what the loop does not count yet reads NaN in this window, not 0: the completions of the Ceph
    # loop's own queue-device rows (device-core devices keep theirs)
    for _k, q in meta["devices"]:
        q.counts_untracked = True
    t_issue = st.rqf[:n, L.RQF_TISSUE]
    t_done = st.rqf[:n, L.RQF_TDONE]
    order = np.argsort(st.rqi[:n, L.RQI_DSEQ], kind="stable")
    t_done_o = t_done[order]
    keep = t_done_o >= t_rec  # JobThread._on_done records completions from the ramp's end on
    m = int(keep.sum())
    kinds = st.rqi[:n, L.RQI_KIND]
    kinds_o = kinds[order]
    rows_out = np.empty((m, 5))
    rows_out[:, 0] = kinds_o[keep]
    rows_out[:, 1] = t_done_o[keep]
    rows_out[:, 2] = 0.0  # slat: no submission latency
    rows_out[:, 3] = (t_done - t_issue)[order][keep]
    sizes_o = st.rqi[:n, L.RQI_SIZE][order]
    rows_out[:, 4] = sizes_o[keep]
    th.stats.add_many(rows_out)
    t_end = float(t_done.max()) if n else t0
    th._c_ios = m
    th._c_bytes = int(sizes_o[keep].sum())
    counted = t_issue >= t_rec if ramp else np.ones(n, bool)
    for d in ((0, 1) if mix is not None else (ddir,)):
        th._issues[d] = int(np.count_nonzero(counted & (kinds == d)))
    if mix is not None:
        mix.settle(n)
    th._inflight = 0
    th._if_bytes = 0
    th._issuing = False
    th.done = True
    th._t_end = t_end
    th.stats.set_window(t_rec, max(t_end, t_rec))
    _image_accounting(image, t_done_o, n, depth, t_rec, kinds_o, sizes_o)
    if env._now < t_end:
        env._now = t_end
    wl._remaining = 0
    wl._phase = len(wl._phases)
    return {"events": int(st.gi[L.GI_EVENTS]) - ev0, "wall_s": wall, "cpu_s": cpu, "ios": n}


def run_fio_ceph(sim: Any, image: Any, job: dict[str, Any], *, source: str = "run_fio_ceph") -> list:
    """Run one fio job on RBD ``image`` through the compiled Ceph core; returns run_fio's results."""
    from simulator.errors import ConfigError
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload

    fjobs = resolve_jobs({}, [job], source)
    if len(fjobs) != 1 or fjobs[0].numjobs != 1:
        raise ConfigError("the compiled Ceph core runs one job of one thread", source=source)
    wl = Workload(sim, fjobs, lambda _j: [image])
    why = unsupported_workload(sim, wl)
    if why:
        raise ConfigError(f"compiled Ceph core: {why}", source=source)
    run_workload_ceph(sim, wl)
    return wl.results()

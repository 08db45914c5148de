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
size with a ramp are refused), startdelay; the cluster as ``ceph_build.unsupported_writes``
/ ``unsupported_reads`` allow. Since then: randrw, variable block sizes, several threads and images, open loops
(rate_iops), stonewalled phases, threads of a phase that differ in start, ramp and runtime (see run_workload_ceph).
:func:`unsupported_job` and :func:`unsupported_workload` name what is not.

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
import itertools
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
#: arrivals an open-loop run draws ahead at most (all threads); a run whose rates promise more than half of it
#: runs in Python (unsupported_workload), and one that draws more stops with ValueError before it starts
OPEN_CAP = 2_000_000


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

    __slots__ = ("cluster", "images", "meta", "n_ops", "sim", "st", "verdicts")

    def __init__(self, sim: Any, cluster: Any, images: list[Any], st: Any, meta: dict[str, Any], n_ops: int,
                 verdicts: dict[str, str | None]):
        self.sim, self.cluster, self.images, self.st, self.meta = sim, cluster, list(images), st, meta
        self.n_ops, self.verdicts = n_ops, verdicts

    def fits(self, images: list[Any], depth: int) -> bool:
        """Whether a run of ``depth`` requests in flight (all threads) on ``images`` can resume this state
        (images it was built for, enough op rows)."""
        return (all(any(i is h for h in self.images) for i in images)
                and max(_op_rows(depth, i) for i in images) <= self.n_ops)

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
    from simulator.workloads.offsets import RandomOffsets, SequentialOffsets

    job = th.job
    limited = th._ios_limit != math.inf or th._bytes_limit != math.inf
    checks = (
        (th._nfiles != 1, "several files"),
        (th._streams is not None or th._app is not None, "sim_mix / application IO"),
        (th._rate is None and not th._mixed and len(job.ddirs) != 1,
         f"rw={job.rw} (one direction, or random reads and writes mixed)"),
        (th._rate is not None and (limited or not job.time_based), "rate_iops/rate with an IO limit (time_based is covered)"),
        (th._rate is not None and tuple(job.ddirs) not in ((0,), (1,), (0, 1)),
         f"rate_iops with rw={job.rw} (reads and/or writes are covered)"),
        (th._mixed and tuple(job.ddirs) != (0, 1), f"rw={job.rw} (a mix of reads and writes only)"),
        (th._mixed and job.ramp_time > 0 and type(th.files[0].gen) not in (RandomOffsets, SequentialOffsets),
         f"rw={job.rw} with ramp_time ({type(th.files[0].gen).__name__}: offsets that follow the directions, which "
         "the ramp's end decides again)"),
        (th._ddir0 not in (0, 1), f"rw={job.rw}"),

        (bool(th._fsync_n or th._fdsync_n) and th._varbs and th._bytes_limit != math.inf,
         "fsync/fdatasync with variable block sizes and a size limit"),
        (job.ramp_time > 0 and limited, "ramp_time with an IO limit (number_ios or size; time_based is covered)"),
        (not limited and th._runtime == math.inf, "no IO limit and no runtime"),
    )
    for bad, what in checks:
        if bad:
            return f"job {job.name!r}: {what} (not covered by the compiled Ceph core)"
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


def _verdicts(cluster: Any, images: list[Any]) -> dict[str, str | None]:
    """What ``ceph_build`` says of runs of each kind on ``images`` (see :class:`Held`)."""
    from simulator.core.ceph_build import unsupported, unsupported_reads, unsupported_writes

    w, r = unsupported_writes(cluster, images), unsupported_reads(cluster, images)
    return {"write": w, "read": r, "mixed": w or r, "new": unsupported(cluster)}


def _wl_kind(wl: Any) -> str:
    """Which check a run of ``wl``'s threads needs (as :func:`_run_kind`; several threads: a writer makes
    every thread's reads reads of written objects, so writes and reads are both checked)."""
    kinds = {_run_kind(th) for th in wl.threads}
    if len(kinds) == 1:
        return kinds.pop()
    if kinds & {"write", "mixed"}:
        return "mixed"
    return "read"


def _unsupported_cluster(wl: Any) -> str | None:
    from simulator.core.ceph_build import unsupported, unsupported_reads, unsupported_writes

    images = _images_of(wl.threads)
    cluster = images[0].cluster
    held = held_state(cluster)
    kind = _wl_kind(wl)
    if held is not None:
        if held.fits(images, _total_depth(wl)):  # the held state is the compiled core's own: its verdicts
            return held.verdicts[kind]
        return (f"its compiled state is held for a run of {', '.join(i.path for i in held.images)} with at most "
                f"{held.n_ops // 8} requests in flight (the hand-over to this run drains it)")
    if kind == "write":  # only the driven images' tables (another pool on other drives may differ in shape)
        return unsupported_writes(cluster, images)
    if kind == "mixed":
        return unsupported_writes(cluster, images) or unsupported_reads(cluster, images)
    if kind == "read":
        return unsupported_reads(cluster, images)
    return unsupported(cluster)


def unsupported_workload(sim: Any, wl: Any) -> str | None:
    """Why the compiled Ceph core cannot run the (not started) Workload ``wl`` (None = it can)."""
    from simulator.ceph.rbd import RbdImage

    if wl._started:
        return "the workload was already started"
    if getattr(wl, "io_source", None) is not None:
        return "an application workload (io_source)"
    if not wl.threads:
        return "no job thread"
    if not all(isinstance(f.dev, RbdImage) for th in wl.threads for f in th.files):
        return "RBD images and other devices in one run (the Ceph core drives RBD images only)"
    for th in wl.threads:
        why = unsupported_job(th)
        if why:
            return why
    if len({id(th.files[0].dev.cluster) for th in wl.threads}) != 1:
        return "images of several clusters in one run"
    for phase in wl._phases:  # an open-loop thread's phase runs from one start, ramp and stop
        th0 = phase[0]
        if all(th._rate is None for th in phase):
            continue
        if any(th.job.startdelay[1] != th.job.startdelay[0] for th in phase):
            return "startdelay as a range beside an open loop (rate_iops; one start per such phase)"
        for th in phase[1:]:
            j, j0 = th.job, th0.job
            if (j.startdelay != j0.startdelay or j.ramp_time != j0.ramp_time or th._runtime != th0._runtime
                    or j.time_based != j0.time_based):
                return (f"jobs {j0.name!r} and {j.name!r} differ in startdelay, ramp_time or runtime beside an open "
                        "loop (rate_iops; the compiled Ceph core runs such a phase from one start, ramp and stop)")
    n_arr = sum(sum(th._rate[d] for d in th._ddirs) * (th.job.ramp_time + th._runtime)
                for th in wl.threads if th._rate is not None)
    if n_arr > OPEN_CAP // 2:
        return f"about {n_arr:,.0f} open-loop arrivals (the compiled Ceph core draws them ahead: at most {OPEN_CAP // 2:,})"
    if _pending(sim.env):
        return "events are pending in the Python engine (the cluster is in the middle of a Python run's work)"
    why = _unsupported_cluster(wl)
    return f"the cluster: {why}" if why else None


def _offsets(gen: Any, kinds: np.ndarray, sizes: np.ndarray, n: int) -> np.ndarray:
    """The thread's next ``n`` offsets, as ``gen.next(kinds[i], sizes[i])`` returns them in order
    (JobThread._issue; fio's random offsets, which depend on neither, in bulk: what the generator had drawn,
    then whole blocks of it)."""
    from simulator.workloads.offsets import RandomOffsets

    if type(gen) is not RandomOffsets:
        nxt = gen.next
        return np.fromiter((nxt(d, b) for d, b in zip(kinds.tolist(), sizes.tolist(), strict=True)), dtype=np.int64,
                           count=n)
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
        self.before: list[tuple[int, int]] = []  # per row: the thread's rwmix direction and share before it
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
            self.before.append((th._rwmix_ddir, th._rwmix_issues))
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


def _image_accounting(image: Any, t_issue: np.ndarray, t_done: np.ndarray, t_rec: float, ddirs: np.ndarray,
                      sizes: np.ndarray) -> None:
    """The image's own statistics (Device.submit / Device._finish) for the window that began at ``t_rec``, from its
    requests' submission (``t_issue``: when the image took them) and completion times: the queue-depth area grows by inside x (t_k - t_previous) over every issue
    and completion in time order, with Python's float operations in Python's order (qarea += ... left to right;
    events at one instant add ``inside x 0``, whatever their order: a closed loop's completion and the issue it
    makes, an open loop's arrivals)."""
    n = len(t_done)
    if n:
        ev_t = np.concatenate([t_issue, t_done])
        delta = np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64)])
        o = np.argsort(ev_t, kind="stable")
        ev_t = ev_t[o]
        delta = delta[o]
        w = ev_t >= t_rec
        t = ev_t[w]
        m = len(t)
        if m:
            prev = np.empty(m)
            prev[0] = image._tq
            prev[1:] = t[:-1]
            terms = np.empty(m + 1)
            terms[0] = image._qarea
            terms[1:] = (np.cumsum(delta) - delta)[w] * (t - prev)
            image._qarea = float(np.cumsum(terms)[-1])
            image._tq = float(t[-1])
    image._inside = 0
    kept = t_done >= t_rec
    for d in (0, 1, 3):  # reads, writes, flushes (fsync)
        sel = kept & (ddirs == d)
        image.completed[d] += int(np.count_nonzero(sel))
        image.bytes[d] += int(sizes[sel].sum())


class _Thr:
    """One job thread of a compiled run: its rows (a chain through RQI_LINK, in issue order), its limit."""

    __slots__ = ("depth", "end", "end_fsync", "flushes", "fsync", "gen", "img", "last", "mix", "n_lim", "rows", "snaps",
                 "th", "w")

    def __init__(self, th: Any, img: int, n_lim: float):
        self.th, self.img, self.n_lim = th, img, n_lim
        self.gen = th.files[0].gen
        self.depth = th._depth
        self.mix = _Mix(th) if th._rate is None and (th._mixed or th._varbs) else None
        self.rows = 0  # IO rows added
        self.last = -1  # its last row
        self.fsync = (th._fsync_n, th._fdsync_n) if th._fsync_n or th._fdsync_n else None
        self.w = 0  # writes since the statistics restarted (JobThread._w_issues)
        self.flushes = 0  # flush rows in its chain
        self.end_fsync = bool(th.job.end_fsync and 1 in th._ddirs)  # JobThread._stop: one flush at the end
        self.end = -1  # its end_fsync row, once its IO rows are all there
        # rw=rw with a ramp: the sequential generator's positions before each row, per block of rows (first row ->
        # array), until the ramp's end decides the queued rows again and their offsets are drawn again from there
        from simulator.workloads.offsets import SequentialOffsets

        self.snaps: dict[int, np.ndarray] | None = (
            {} if th._mixed and th.job.ramp_time > 0 and type(self.gen) is SequentialOffsets else None)


_WRITE, _FLUSH = 1, 3  # Op.WRITE; Op.FLUSH: a row of a job's fsync / fdatasync


def _new_rows(st: Any, t: int, thr: _Thr, n: int, kind: int) -> tuple[Any, int]:
    """``n`` request rows of thread ``t`` (of ``kind``, not issued, unlinked) at the end of the table, counted as
    outstanding; returns the state and the first one's index."""
    from simulator.core import ceph_layout as L

    k = int(st.gi[L.GI_NREQ])
    rqi = np.zeros((k + n, L.NRQI), np.int64)
    rqf = np.zeros((k + n, L.NRQF))
    rqi[:k] = st.rqi[:k]
    rqf[:k] = st.rqf[:k]
    rqi[k:, L.RQI_IMG] = thr.img
    rqi[k:, L.RQI_KIND] = kind
    rqi[k:, L.RQI_DSEQ] = -1
    rqi[k:, L.RQI_THR] = t
    rqi[k:, L.RQI_LINK] = -1
    rqi[k:, L.RQI_ALINK] = -1  # (run_workload_ceph chains an open loop's arrivals)
    st = st._replace(rqi=rqi, rqf=rqf)
    st.gi[L.GI_NREQ] = k + n
    st.gi[L.GI_OUT] += n
    return st, k


def _append(st: Any, t: int, thr: _Thr, first: int, last: int) -> None:
    """Put the chain ``first`` .. ``last`` after thread ``t``'s last row (at the head of its queue when none is
    queued)."""
    from simulator.core import ceph_layout as L

    if thr.last >= 0:
        st.rqi[thr.last, L.RQI_LINK] = first
    if st.trn[t, L.TR_NEXT] < 0:
        st.trn[t, L.TR_NEXT] = first
    thr.last = last


def _link(st: Any, rows: list[int]) -> None:
    """Chain ``rows`` (not empty) in order, the last one ending the chain."""
    from simulator.core import ceph_layout as L

    st.rqi[rows[:-1], L.RQI_LINK] = rows[1:]
    st.rqi[rows[-1], L.RQI_LINK] = -1


def _with_flushes(st: Any, t: int, thr: _Thr, io_rows: list[int], first_io: int) -> tuple[Any, list[int]]:
    """JobThread._issue's fsync cadence on thread ``t``'s IO rows ``io_rows`` (in issue order, the first being its
    IO number ``first_io``): after every fsync-th (or fdatasync-th) write since the statistics restarted, a flush
    row (appended to the table) is issued next, unless that write is the thread's last IO (the limit stops the
    thread first). Returns the state and the rows with the flushes in order."""
    from simulator.core import ceph_layout as L

    fs, fd = thr.fsync
    after = []
    kinds = st.rqi[io_rows, L.RQI_KIND]
    for j, kind in enumerate(kinds.tolist()):
        if kind == _WRITE:
            thr.w += 1
            w = thr.w
            if ((fs and w % fs == 0) or (fd and w % fd == 0)) and first_io + j + 1 < thr.n_lim:
                after.append(j)
    if not after:
        return st, list(io_rows)
    st, k = _new_rows(st, t, thr, len(after), _FLUSH)
    thr.flushes += len(after)
    out = []
    f = k
    it = iter(after)
    nxt = next(it, -1)
    for j, r in enumerate(io_rows):
        out.append(r)
        if j == nxt:
            out.append(f)
            f += 1
            nxt = next(it, -1)
    return st, out


def _requeue_flushes(st: Any, t: int, thr: _Thr, q: list[int]) -> Any:
    """JobThread._ramp_end on a thread with fsync: the write count restarts, so its queued rows ``q`` get their
    flushes again (a flush already due, at the head, stays; the other queued ones leave the chain)."""
    from simulator.core import ceph_layout as L

    thr.w = 0
    head = q[0] if q and st.rqi[q[0], L.RQI_KIND] == _FLUSH else -1
    io = [r for r in q if st.rqi[r, L.RQI_KIND] < _FLUSH]
    end = [r for r in q if st.rqi[r, L.RQI_KIND] == L.RQ_ENDFLUSH]
    gone = len(q) - len(io) - len(end) - (head >= 0)
    st.gi[L.GI_OUT] -= gone
    thr.flushes -= gone
    st, rows = _with_flushes(st, t, thr, io, thr.rows - len(io))
    rows = ([head] if head >= 0 else []) + rows + end
    if rows:
        st.trn[t, L.TR_NEXT] = rows[0]
        _link(st, rows)
        thr.last = rows[-1]
    return st


def _rows_final(st: Any, t: int, thr: _Thr) -> Any:
    """Thread ``t``'s IO rows are all there (its limit, its runtime's end): the loop's next issue attempt without
    a row stops it (TR_FINAL), and its end_fsync flush comes last."""
    from simulator.core import ceph_layout as L

    st.trn[t, L.TR_FINAL] = 1
    return _end_row(st, t, thr)


def _end_row(st: Any, t: int, thr: _Thr) -> Any:
    """Thread ``t``'s end_fsync flush (JobThread._wind_up), once its IO rows are all there: a row at the end of its
    chain, issued when nothing of the thread is in flight (ceph_loop._fill)."""
    from simulator.core import ceph_layout as L

    if not thr.end_fsync or thr.end >= 0:
        return st
    st, k = _new_rows(st, t, thr, 1, L.RQ_ENDFLUSH)
    _append(st, t, thr, k, k)
    thr.end = k
    thr.flushes += 1
    return st


def _add_thread_rows(st: Any, t: int, thr: _Thr, n: int, arrivals: list[tuple] | None = None) -> Any:
    """``n`` more rows of job thread ``t`` (its next offsets, directions and sizes) at the end of the table,
    linked after its last row (and queued in ``trn`` when none was); ``arrivals``: an open-loop thread's arrivals
    (time, direction, size) in order instead (``n``: their number)."""
    from simulator.core import ceph_layout as L

    th = thr.th
    ddir = th._ddir0
    kinds = sizes = None
    if arrivals is not None:
        a = np.asarray(arrivals, dtype=np.float64).reshape(-1, 3)
        kinds, sizes = a[:, 1].astype(np.int64), a[:, 2].astype(np.int64)
    elif thr.mix is not None:
        kinds, sizes = thr.mix.decide(n)
        n = len(kinds)
    if n == 0:
        return st
    st, k = _new_rows(st, t, thr, n, ddir)
    rqi = st.rqi
    if kinds is None:
        rqi[k:, L.RQI_SIZE] = th._bs[ddir]
    else:
        rqi[k:, L.RQI_KIND], rqi[k:, L.RQI_SIZE] = kinds, sizes
    if arrivals is not None:
        st.rqf[k:, L.RQF_TARR] = a[:, 0]
    if thr.snaps is not None:  # (before the ramp's end: the generator's positions before each row)
        pos = thr.gen._pos
        snaps = np.empty((n, len(pos)), np.int64)
        offs = np.empty(n, np.int64)
        for i, (d, b) in enumerate(zip(rqi[k:, L.RQI_KIND].tolist(), rqi[k:, L.RQI_SIZE].tolist(), strict=True)):
            snaps[i] = thr.gen._pos
            offs[i] = thr.gen.next(d, b)
        thr.snaps[k] = snaps
        rqi[k:, L.RQI_OFF] = offs
    else:
        rqi[k:, L.RQI_OFF] = _offsets(thr.gen, rqi[k:, L.RQI_KIND], rqi[k:, L.RQI_SIZE], n)
    rqi[k:, L.RQI_LINK] = np.arange(k + 1, k + n + 1)
    rqi[k + n - 1, L.RQI_LINK] = -1
    _append(st, t, thr, k, k + n - 1)
    if thr.fsync is not None:  # the flushes between them (after a write, so the block still begins at row k)
        st, rows = _with_flushes(st, t, thr, list(range(k, k + n)), thr.rows)
        _link(st, rows)
        thr.last = rows[-1]
    thr.rows += n
    return st


def _arrivals(thrs: list[_Thr], t0: float, t_stop: float, cap: int) -> tuple[list[list[tuple]], list[tuple[int, int]]]:
    """Every arrival of the open-loop threads before ``t_stop``, drawn with the threads' own rules (their
    sizes when they arrive, JobThread._next_arrival), in SimPy's order: each arrival schedules the next of its
    thread and direction, so arrivals come by time, then by the order of the arrivals that scheduled them
    (every thread's directions arrive at ``t0`` at its start, thread by thread). Returns per thread its arrivals
    (time, direction, size) in order, and the later ones' (thread, index) in global order (the start's are
    processed by the thread's start, not by an event); at most ``cap`` in all (ValueError beyond)."""
    import heapq as hq

    per: list[list[tuple]] = [[] for _ in thrs]
    order: list[tuple[int, int]] = []
    heap: list[tuple[float, int, int, int]] = []
    rank = 0
    total = 0

    def arrive(t_idx: int, d: int, t: float) -> None:
        nonlocal rank, total
        th = thrs[t_idx].th
        size = th._arrival_size(d)
        per[t_idx].append((t, d, size))
        total += 1
        if total > cap:
            raise ValueError(f"more than {cap} arrivals")
        t_next = th._next_arrival(d, t, size)
        if t_next < t_stop:
            hq.heappush(heap, (t_next, rank, t_idx, d))
        rank += 1

    for t_idx, thr in enumerate(thrs):
        th = thr.th
        if th._rate is None:
            continue
        for d in th._ddirs:
            if th._rate[d] > 0:
                arrive(t_idx, d, t0)
    while heap:
        t, _r, t_idx, d = hq.heappop(heap)
        order.append((t_idx, len(per[t_idx])))
        arrive(t_idx, d, t)
    return per, order


def _queued(st: Any, t: int) -> list[int]:
    """The rows of job thread ``t`` not issued yet, in order."""
    from simulator.core import ceph_layout as L

    out = []
    r = int(st.trn[t, L.TR_NEXT])
    while r >= 0:
        out.append(r)
        r = int(st.rqi[r, L.RQI_LINK])
    return out


def run_workload_ceph(sim: Any, wl: Any, keep: bool = True) -> dict[str, Any]:
    """Run the not-started Workload ``wl`` (job threads on RBD images of one cluster, as
    :func:`unsupported_workload` allows) through the compiled Ceph core, leaving its threads, statistics
    and the cluster as the Python model would for reporting. Returns run figures (events, loop wall and
    CPU seconds). The run resumes the cluster's held state if it fits (:class:`Held`), else builds one; it
    stops at its last completion and keeps the state held (``keep``; False: drain and write back at once,
    as before held states — the differential tests' mutation). Stonewalled phases run one after the other,
    each from the instant the last one's threads are done, the state held between them."""
    if wl.threads and rbd_targets(wl):
        imgs = _images_of(wl.threads)
        held = held_state(imgs[0].cluster)
        if held is not None and not held.fits(imgs, _total_depth(wl)):
            held.release()  # a run of other images or a deeper one: hand over (drain), then build afresh
    why = unsupported_workload(sim, wl)
    if why:
        from simulator.core.run import Unsupported

        raise Unsupported(why)
    wl._started = True
    out = {"events": 0, "wall_s": 0.0, "cpu_s": 0.0, "ios": 0}
    for i, phase in enumerate(wl._phases):  # Workload._start_phase: a phase starts when the last one's threads are done
        wl._phase = i
        fig = _run_phase(sim, wl, phase, keep)  # (held between phases as between two runs)
        for k in out:
            out[k] += fig[k]
    wl._remaining = 0
    wl._phase = len(wl._phases)
    return out


def _run_phase(sim: Any, wl: Any, threads: list[Any], keep: bool) -> dict[str, Any]:
    """One phase of :func:`run_workload_ceph` (its ``threads``, started at one instant): resumes the held
    state or builds one for every image and the deepest phase of ``wl``."""
    from simulator.core import ceph_layout as L
    from simulator.core import ceph_loop as K
    from simulator.core.ceph_build import (
        build_state,
        refill,
        why_text,
        write_back,
        write_back_bluestore,
    )

    images = _images_of(threads)
    cluster = images[0].cluster
    env = sim.env
    held = held_state(cluster)
    _drop_inert(env)
    # Workload._start_phase -> JobThread.start of each thread in order: at once, or after its startdelay (a timer)
    t_phase = env.now
    wl._phase_devs = set()
    for th in threads:
        th._t0 = t_phase + th.draw_start_delay()
        th._tt_last = th._t0
        th._t_rec = th._t0 + th.job.ramp_time
        th._t_stop = th._t_rec + th._runtime
        th._cpu_free = th._t0
        if th.job.time_based:
            th.stats.set_window(th._t_rec, th._t_stop)
    if held is not None:
        del _registry(sim)[id(cluster)]  # resumed: held again at the end
        st, meta, verdicts, n_ops = held.st, held.meta, held.verdicts, held.n_ops
        state_images = held.images  # the images its tables hold
        refill(st, meta)  # the streams went back to the Python components at the write-back
    else:
        state_images = _images_of(wl.threads)
        n_ops = max(_op_rows(_total_depth(wl), img) for img in state_images)
        verdicts = _verdicts(cluster, state_images)
        st, meta = build_state(cluster, n_ops=n_ops, n_req=0, images=state_images)
    ev0 = int(st.gi[L.GI_EVENTS])
    st.gi[L.GI_OUT] = 0
    st.gi[L.GI_NCOMP] = 0
    st.gi[L.GI_NREQ] = 0
    trn = np.zeros((len(threads), L.NTR), np.int64)
    trf = np.zeros((len(threads), L.NTRF))
    trn[:, L.TR_NEXT] = -1
    st = st._replace(trn=trn, trf=trf)
    st.gi[L.GI_NTHR] = len(threads)
    thrs = []
    for t, th in enumerate(threads):
        k = next(i for i, img in enumerate(meta["images"]) if img is th.files[0].dev)
        n_lim = th._ios_limit
        bs = th._bs[th._ddir0]
        if th._bytes_limit != math.inf and not (th._varbs or th._bs[0] != th._bs[1]):
            n_lim = min(n_lim, -(-int(th._bytes_limit) // bs))  # (variable sizes: _Mix stops at the limit)
        thr = _Thr(th, k, n_lim)
        thrs.append(thr)
        st.trn[t, L.TR_DEPTH] = thr.depth
        st.trn[t, L.TR_BLOCKER] = -1
        st.trn[t, L.TR_BLOCKS] = 1 if th._blocking else 0
        st.trn[t, L.TR_ISSUING] = 1
        if th._tt > 0.0:  # thinktime (JobThread._think_due, _think)
            st.trn[t, L.TR_TTBLOCKS] = th._tt_blocks if th._tt_use_blocks else 0
            st.trn[t, L.TR_TTON] = 1 if th._tt_on_issue else 0
            st.trf[t, L.TRF_TT] = th._tt
            st.trf[t, L.TRF_IOTIME] = th._tt_iotime
        st.trf[t, L.TRF_TTLAST] = th._t0
        st.trf[t, L.TRF_TSTOP] = th._t_stop
        st.trf[t, L.TRF_TEND] = -math.inf
        st.trf[t, L.TRF_SLAT] = th._slat
        st.trf[t, L.TRF_CPUFREE] = th._cpu_free
        if th._rate is None:
            st = _add_thread_rows(st, t, thr, int(min(n_lim, max(ROWS, 8 * th._depth))))
            if thr.rows >= thr.n_lim:
                st = _rows_final(st, t, thr)
    first_row = {}
    arrivals: list[tuple[int, int]] = []
    if any(th._rate is not None for th in threads):  # open loop (one start and stop): every arrival before the stop
        per, arrivals = _arrivals(thrs, threads[0]._t0, threads[0]._t_stop, OPEN_CAP)
        for t, thr in enumerate(thrs):
            if thr.th._rate is not None:
                first_row[t] = int(st.gi[L.GI_NREQ])
                st = _add_thread_rows(st, t, thr, len(per[t]), per[t])
                thr.n_lim = thr.rows
                st.trn[t, L.TR_OPEN] = 1
        rows_g = [first_row[t] + i for t, i in arrivals]  # the later arrivals, chained in their order
        if rows_g:
            st.rqi[rows_g[:-1], L.RQI_ALINK] = rows_g[1:]
    st.gi[L.GI_CLOSED] = 2 if keep else 1  # 2: the last completion schedules the run's end (EV_STOP)
    st.gi[L.GI_NEXTREQ] = 0
    w0 = time.perf_counter()
    c0 = time.process_time()
    t_win = [t_phase]  # when the cluster's statistics (its images' too) last restarted

    def restart_stats(t: int, at: float, fresh: bool) -> None:
        """JobThread._ramp_end of thread ``t`` at ``at`` (``fresh``: after a ramp_time, else at its start): its
        image's and the cluster's statistics restart, unless (at its start) another thread of the phase began them."""
        img = thrs[t].th.files[0].dev
        thrs[t].th._limits_on = True
        if fresh or id(img) not in wl._phase_devs:
            now_py = env._now
            env._now = at
            img.reset_stats()
            env._now = now_py
            _reset_counters(st)
            t_win[0] = at
        wl._phase_devs.add(id(img))

    def begin(t: int) -> None:
        """JobThread._begin of thread ``t`` at its start: the statistics (without a ramp), its first requests."""
        thr = thrs[t]
        th = thr.th
        if th._t0 > st.gf[L.GF_NOW]:  # the pending work before the thread's start (a startdelay, a held state)
            advance(np.nextafter(th._t0, -np.inf), idle=True)
            st.gf[L.GF_NOW] = th._t0
        begun.add(t)
        if th.job.ramp_time > 0:
            heapq.heappush(points, (th._t_rec, next(rank), "ramp", t))
        else:
            restart_stats(t, th._t0, False)
        if th._t_stop != math.inf:
            heapq.heappush(points, (th._t_stop, next(rank), "stop", t))
        if th._rate is not None:  # open loop: its directions' first arrivals at its start, then _pump
            st.trn[t, L.TR_BACK] = sum(1 for d in th._ddirs if th._rate[d] > 0) if thr.rows else 0
            if th._t_stop != math.inf:
                st.gi[L.GI_OUT] += 1  # its stop timer (JobThread._on_time_stop) is outstanding work of the run
                timers.add(t)
        K.fill_now(st, t)  # (a closed loop: _fill)

    def advance(limit: float, idle: bool = False) -> int:
        """Run the loop up to ``limit`` (refilling streams and rows); ``idle``: nothing pending while requests of
        threads not begun yet are outstanding is the wait for their start."""
        nonlocal st
        while True:
            status = K.run_until(st, limit)
            if status == L.ST_REFILL:
                refill(st, meta)
                for t, thr in enumerate(thrs):
                    if st.trn[t, L.TR_NEXT] < 0 and thr.rows < thr.n_lim:  # every row of the thread issued: as many again
                        st = _add_thread_rows(st, t, thr, int(min(thr.rows, thr.n_lim - thr.rows)))
                        if st.trn[t, L.TR_NEXT] < 0:  # the byte limit: no more rows
                            thr.n_lim = thr.rows
                        if thr.rows >= thr.n_lim:
                            st = _rows_final(st, t, thr)
                        if t in begun and not thr.th._rate:
                            K.fill_now(st, t)  # the slots its fill left when the rows ran out
                continue
            break
        waiting = sum(thr.rows + thr.flushes for t, thr in enumerate(thrs) if t not in begun) + len(timers)
        if status == L.ST_EMPTY and idle and st.gi[L.GI_OUT] == waiting:
            return L.ST_TIME
        if status in (L.ST_EMPTY, L.ST_FULL) or (status == L.ST_DONE and limit != np.inf and st.gi[L.GI_OUT]):
            raise RuntimeError(f"compiled Ceph core stopped with status {status} (events {st.gi[L.GI_EVENTS]}, "
                               f"{st.gi[L.GI_OUT]} requests outstanding): {why_text(st)}")
        return status

    # control points (time, order made, what, thread): a thread's delayed start, its ramp's end (statistics
    # restart), its runtime's end (no more issues); at one instant in the order SimPy's timers were set
    points: list[tuple[float, int, str, int]] = []
    rank = itertools.count()
    begun: set[int] = set()
    timers: set[int] = set()  # open loops whose stop timer is pending (outstanding work: GI_OUT)
    for t, th in enumerate(threads):
        if th.start_delay > 0:
            heapq.heappush(points, (th._t0, next(rank), "begin", t))
        else:
            begin(t)
    if arrivals:  # the first later arrival (each arrival schedules the next: the loop's EV_ARRIVAL)
        t_i, i = arrivals[0]
        K.schedule_at(st, float(st.rqf[first_row[t_i] + i, L.RQF_TARR]), L.EV_ARRIVAL, first_row[t_i] + i, 0)
    status = L.ST_TIME
    while points:
        t_point, _r, what, t = heapq.heappop(points)
        # the events before the point (a timer set at the job's start comes before IO events at its instant)
        status = advance(np.nextafter(t_point, -np.inf), idle=True)
        if status == L.ST_STOP:  # the last completion (and what was queued before it): the run is over
            break
        thr = thrs[t]
        if what == "begin":
            begin(t)
        elif what == "ramp":  # JobThread._ramp_end: limits on, the statistics restart
            st.gf[L.GF_NOW] = t_point  # the devices' windows restart at the ramp's end (the next event is not earlier)
            restart_stats(t, t_point, True)
            if thr.th._mixed:  # the issue counters restart: the rows not issued yet are decided again
                q = [r for r in _queued(st, t) if st.rqi[r, L.RQI_KIND] < _FLUSH]
                m_undo = thr.mix.restart(thr.rows - len(q))
                if m_undo:
                    st.rqi[q, L.RQI_KIND], st.rqi[q, L.RQI_SIZE] = thr.mix.decide(m_undo)
                if thr.snaps is not None:  # sequential offsets follow the new directions: drawn again from q[0] on
                    if q:
                        k0 = max(k for k in thr.snaps if k <= q[0])
                        thr.gen._pos = thr.snaps[k0][q[0] - k0].tolist()
                        st.rqi[q, L.RQI_OFF] = _offsets(thr.gen, st.rqi[q, L.RQI_KIND], st.rqi[q, L.RQI_SIZE], len(q))
                    thr.snaps = None
            if thr.fsync is not None:  # and the write count of the fsync cadence
                st = _requeue_flushes(st, t, thr, _queued(st, t))
        else:  # "stop": JobThread._issue at now >= t_stop: no more issues
            queued = _queued(st, t)
            q = [r for r in queued if r != thr.end]
            n_fl = int(np.count_nonzero(st.rqi[q, L.RQI_KIND] == _FLUSH)) if q else 0
            st.gi[L.GI_OUT] -= len(q)
            st.trn[t, L.TR_NEXT] = -1
            st.trn[t, L.TR_BACK] = 0
            thr.n_lim = thr.rows - (len(q) - n_fl)
            thr.flushes -= n_fl
            if len(q) < len(queued):  # its end_fsync flush stays queued, or comes now
                st.trn[t, L.TR_NEXT] = thr.end
            else:
                st = _rows_final(st, t, thr)
            if thr.th._rate is not None:  # an open loop stops at its timer (JobThread._on_time_stop), then winds up
                st.trn[t, L.TR_ISSUING] = 0
                st.gi[L.GI_OUT] -= 1
                timers.discard(t)
                if t_point > st.gf[L.GF_NOW]:
                    st.gf[L.GF_NOW] = t_point
                K.fill_now(st, t)
                if st.trn[t, L.TR_INFL] == 0:  # nothing in flight (a think or not): it ends now (_wind_up -> _finish)
                    st.trf[t, L.TRF_TEND] = t_point
                if st.gi[L.GI_OUT] == 0 and st.gi[L.GI_CLOSED] == 2:  # and with it the run (the runner's done event)
                    K.schedule_at(st, t_point, L.EV_STOP, 0, 0)
    if status != L.ST_STOP and int(st.gi[L.GI_NEXTREQ]) > 0:
        advance(np.inf)  # to the last completion
    wall = time.perf_counter() - w0
    cpu = time.process_time() - c0
    if st.gi[L.GI_OUT]:
        raise RuntimeError(f"compiled Ceph core: {st.gi[L.GI_OUT]} requests outstanding at the end: {why_text(st)}")
    if keep:  # held: the figures for reporting; the state stays in the arrays for the next run
        write_back_bluestore(st, meta, report=True)
        write_back(st, meta, set_now=False, report=True)
        _registry(sim)[id(cluster)] = Held(sim, cluster, state_images, st, meta, n_ops, verdicts)
    else:
        write_back_bluestore(st, meta)  # a read run too: its devices' busy time (BlueStore's state round-trips)
        write_back(st, meta, set_now=False)
    # what the loop does not count yet reads NaN in this window, not 0: the completions of the Ceph
    # loop's own queue-device rows (device-core devices keep theirs)
    for _k, q in meta["devices"]:
        q.counts_untracked = True
    nreq = int(st.gi[L.GI_NREQ])
    dseq = st.rqi[:nreq, L.RQI_DSEQ]
    issued = np.flatnonzero(dseq >= 0)  # every issued row completed (the run drained its requests)
    order = issued[np.argsort(dseq[issued], kind="stable")]  # the issued rows in completion order
    t_issue_o = st.rqf[order, L.RQF_TISSUE]
    t_sub_o = st.rqf[order, L.RQF_TSUB]
    t_done_o = st.rqf[order, L.RQF_TDONE]
    kinds_o = st.rqi[order, L.RQI_KIND]
    kinds_o[kinds_o == L.RQ_ENDFLUSH] = _FLUSH  # (an end_fsync flush is a flush)
    sizes_o = st.rqi[order, L.RQI_SIZE]
    thr_o = st.rqi[order, L.RQI_THR]
    t_end_all = t_phase
    for t, thr in enumerate(thrs):
        th = thr.th
        mine = thr_o == t
        sel = mine & (t_done_o >= th._t_rec)  # JobThread._on_done records completions from the ramp's end on
        if thr.fsync is not None or thr.end >= 0:  # flushes: fio's sync section (add_sync), not IOs
            sync = sel & (kinds_o == _FLUSH)
            for t_done, lat in zip(t_done_o[sync].tolist(), (t_done_o - t_sub_o)[sync].tolist(), strict=True):
                th.stats.add_sync(t_done, lat)
            sel &= ~sync
        m = int(sel.sum())
        rows_out = np.empty((m, 5))
        rows_out[:, 0] = kinds_o[sel]
        rows_out[:, 1] = t_done_o[sel]
        rows_out[:, 2] = (t_sub_o - t_issue_o)[sel]  # slat (sim_slat)
        rows_out[:, 3] = (t_done_o - t_sub_o)[sel]
        rows_out[:, 4] = sizes_o[sel]
        th.stats.add_many(rows_out)
        n_t = int(mine.sum())
        t_end = max(float(t_done_o[mine].max()) if n_t else th._t0, float(st.trf[t, L.TRF_TEND]))  # (a last think)
        t_end_all = max(t_end_all, t_end)
        th._c_ios = m
        th._c_bytes = int(sizes_o[sel].sum())
        counted = mine & ((t_issue_o >= th._t_rec) if th.job.ramp_time > 0 else True)
        for d in ((0, 1) if thr.mix is not None and th._mixed else (th._ddir0,)):
            th._issues[d] = int(np.count_nonzero(counted & (kinds_o == d)))
        if thr.mix is not None:
            thr.mix.settle(n_t - int(np.count_nonzero(mine & (kinds_o == _FLUSH))))  # (IO rows)
        th._inflight = 0
        th._if_bytes = 0
        th._issuing = False
        th.done = True
        th._t_end = t_end
        th.stats.set_window(th._t_rec, max(t_end, th._t_rec))
    for k, img in enumerate(meta["images"]):
        on = st.rqi[order, L.RQI_IMG] == k
        if not any(thr.img == k for thr in thrs):
            continue
        _image_accounting(img, t_sub_o[on], t_done_o[on], t_win[0], kinds_o[on], sizes_o[on])
    if env._now < t_end_all:
        env._now = t_end_all
    return {"events": int(st.gi[L.GI_EVENTS]) - ev0, "wall_s": wall, "cpu_s": cpu, "ios": int(len(order))}


def _images_of(threads: list[Any]) -> list[Any]:
    """The RBD images of job ``threads``, in first use."""
    out: list[Any] = []
    for th in threads:
        img = th.files[0].dev
        if all(img is not x for x in out):
            out.append(img)
    return out


def _total_depth(wl: Any) -> int:
    """Requests in flight at most: the deepest phase's threads together."""
    return max(sum(th._depth for th in phase) for phase in wl._phases if phase)


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

"""Orchestration: plan the runs of an experiment, execute them (process pool by default, dask on
request), report progress, and keep the output directory consistent so a long sweep resumes.

Output directory layout (``--out DIR``)::

    DIR/experiment.resolved.yaml    the experiment as run (overrides applied), with its digest
    DIR/runs/p003_r00.json          one fio-format JSON per simulated run (readable by simrun's fio reader)
    DIR/runs/p003_r00.timing.json   its wall-clock figures (kept apart: the document is a pure function of the seed)
    DIR/summary.csv                 one row per point: labels, metrics, CI half-widths
    DIR/comparison.csv              simulated vs reference figures, when the experiment names references
    DIR/*.png                       plots
    DIR/.lock                       held while a simrun writes into DIR

Resume trusts a run file only when it names this experiment's digest, its point's digest, its
point index, replication and seed; anything else in ``runs/`` that looks like a run file (another
experiment's, a changed experiment's, a damaged one) is removed and the point runs again. One
simrun at a time writes into a directory (an advisory lock; a second one stops with exit 2).
"""

from __future__ import annotations

import json
import os
import re
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from simulator.errors import ConfigError, SimError
from simulator.experiment.execute import RunOutput, execute_task, replication_seed
from simulator.experiment.load import Experiment

__all__ = ["ExperimentRun", "Interrupted", "OutputLock", "atomic_write_text", "execute_runs", "plan_tasks", "run_experiment",
           "run_file"]

_RUN_FILE = re.compile(r"^p(\d{3,})_r(\d{2,})(\.timing)?\.json$")


class Interrupted(SimError):
    """Ctrl-C (or SIGTERM) during a run: finished runs are kept for a resume."""

    exit_code = 130


def output_error(path: Path, e: OSError) -> ConfigError:
    """A failed write into the output directory (read-only, full disk, no permission)."""
    why = e.strerror or e.__class__.__name__
    return ConfigError(f"cannot write {path}: {why}", source="output directory", field="--out")


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temporary file + rename); an OSError becomes one
    ConfigError naming the path (exit 2)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise output_error(path, e) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise output_error(path, e) from None
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class OutputLock:
    """An exclusive advisory lock on an output directory (``DIR/.lock``), held for a run."""

    def __init__(self, out: Path):
        self.out = out
        self._fd: int | None = None

    def __enter__(self) -> OutputLock:
        path = self.out / ".lock"
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise output_error(path, e) from None
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # pragma: no cover - not POSIX: no advisory lock
            pass
        except OSError:
            os.close(fd)
            raise ConfigError(
                f"{self.out} is in use by another simrun (wait for it to finish, or choose another --out)",
                source="output directory", field="--out",
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError as e:
            os.close(fd)
            raise output_error(path, e) from None
        self._fd = fd
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the lock; the file stays (removing it would race)
            self._fd = None


def plan_tasks(exp: Experiment) -> list[dict[str, Any]]:
    """The units of work: one per (point, replication), or with ``persist_state`` one per
    replication and state chain. A chain is the points sharing the ``persist_by`` labels AND the
    same system (a sweep axis that changes the system starts a chain per system), in sweep order."""
    base = {"source": str(exp.path), "exp_dir": str(exp.path.parent), "seed": exp.spec.seed}
    tasks = []
    for r in range(exp.spec.replications):
        if exp.persist_state:
            groups: dict[tuple, list] = {}
            checked: dict[tuple, dict] = {}
            by = exp.spec.sweep.persist_by if exp.spec.sweep else []
            for p in exp.points:
                key = (*(str(p.labels[a]) for a in by), p.system_key)
                groups.setdefault(key, []).append((p.index, p.labels, p.raw))
                checked.setdefault(key, {})[p.digest] = (p.spec, p.jobs)
            for key, pts in groups.items():
                tasks.append({**base, "points": pts, "replication": r, "persist": True, "checked": checked[key]})
        else:
            for p in exp.points:
                tasks.append({**base, "points": [(p.index, p.labels, p.raw)], "replication": r, "persist": False,
                              "checked": {p.digest: (p.spec, p.jobs)}})
    return tasks


def run_file(out: Path, point: int, rep: int) -> Path:
    """The JSON of point ``point``, replication ``rep`` in an experiment's output directory ``out``."""
    return out / "runs" / f"p{point:03d}_r{rep:02d}.json"


@dataclass
class ExperimentRun:
    experiment: Experiment
    outputs: list[RunOutput]
    out_dir: Path | None
    wall_s: float
    resumed: int = 0
    workers: int = 1
    removed: int = 0  # stale or damaged run files removed before running

    def by_point(self) -> dict[int, list[RunOutput]]:
        d: dict[int, list[RunOutput]] = {}
        for o in sorted(self.outputs, key=lambda o: (o.point, o.replication)):
            d.setdefault(o.point, []).append(o)
        return d


# ------------------------------------------------------------------------------------ workers
_QUEUE: Any = None


def _watch_parent(ppid: int) -> None:
    """A worker ends itself when the main process is gone (killed): no orphaned workers."""
    while True:
        time.sleep(0.5)
        if os.getppid() != ppid:
            os._exit(1)


def _init_worker(queue: Any, ppid: int) -> None:
    global _QUEUE
    _QUEUE = queue
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process decides what Ctrl-C does
    # a SIGTERM (the main process stopping the pool, stop_pool_now) ends the worker at once: a Python handler
    # inherited through fork (calibrate's SIGTERM-as-Ctrl-C) would only run when a compiled core returns to
    # the interpreter, minutes later, and the worker would finish its run first (seen 2026-11-28)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    threading.Thread(target=_watch_parent, args=(ppid,), daemon=True).start()


def _worker(task: dict[str, Any], queue: Any = None) -> list[RunOutput]:
    q = queue if queue is not None else _QUEUE

    def prog(point: int, frac: float) -> None:
        if q is not None:
            q.put((task["replication"], point, frac))

    return execute_task(task, prog)


# ------------------------------------------------------------------------------------ run files
def _wall_of(path: Path) -> float:
    t = path.with_suffix(".timing.json")
    try:
        return float(json.loads(t.read_text())["wall_seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def _remove(f: Path) -> None:
    try:
        f.unlink()
    except FileNotFoundError:
        pass
    except OSError as e:
        raise output_error(f, e) from None


def _scan_runs(out: Path, exp: Experiment, digest: str, keep: bool) -> tuple[dict[tuple[int, int], RunOutput], int]:
    """Run files of this very experiment (digest, point, replication and seed all agree) when
    ``keep``; every other run file in ``runs/`` is removed. Returns (kept runs, files removed)."""
    done: dict[tuple[int, int], RunOutput] = {}
    runs = out / "runs"
    if not runs.is_dir():
        return done, 0
    points = {p.index: p for p in exp.points}
    removed = 0
    for f in sorted(runs.iterdir()):
        m = _RUN_FILE.match(f.name)
        if not m:
            continue  # not ours: left alone
        if m.group(3):
            if not f.with_name(f.name.replace(".timing.json", ".json")).exists():
                _remove(f)  # a timing file whose run document is gone
            continue
        o = None
        if keep:
            try:
                doc = json.loads(f.read_text(encoding="utf-8"))
                s = doc["sim"]
                p = points.get(int(s["point"]))
                rep = int(s["replication"])
                if (p is not None and s.get("experiment_digest") == digest and s.get("point_digest") == p.digest
                        and (int(m.group(1)), int(m.group(2))) == (p.index, rep) and rep < exp.spec.replications
                        and int(s["seed"]) == replication_seed(exp.spec.seed, rep)):
                    o = RunOutput(p.index, rep, int(s["seed"]), dict(p.labels), doc, s["summary"], _wall_of(f),
                                  float(s.get("simulated_seconds", 0.0)), int(s.get("ios", 0)))
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                o = None  # damaged or foreign: run again
        if o is not None:
            done[(o.point, o.replication)] = o
        else:
            _remove(f)
            _remove(f.with_suffix(".timing.json"))
            removed += 1
    return done, removed


# ------------------------------------------------------------------------------------ running
def stop_pool_now(pool: Any) -> None:
    """Stop a ProcessPoolExecutor at once (an interrupt): queued tasks cancelled, running workers
    terminated, no wait; the manager thread's cancelled-future traceback silenced."""
    _quiet_pool_manager()
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        if proc.is_alive():
            proc.terminate()
    # the call queue's feeder thread may be blocked writing to a pipe no worker reads any more; without this the
    # interpreter joins it at exit and the main process never ends (seen 2026-11-28 after 'interrupted')
    q = getattr(pool, "_call_queue", None)
    if q is not None:
        q.cancel_join_thread()
    pool.shutdown(wait=False, cancel_futures=True)


def _quiet_pool_manager() -> None:
    """While a pool is torn down on an interrupt, CPython 3.11's executor manager thread may try to set
    a BrokenProcessPool result on a future that was just cancelled and print that InvalidStateError as
    a thread traceback. That case (and only it) is silenced: the runs are accounted for by the caller."""
    import threading
    from concurrent.futures import InvalidStateError

    previous = threading.excepthook
    if getattr(previous, "_simrun_quiet", False):
        return

    def hook(args: threading.ExceptHookArgs) -> None:
        if isinstance(args.exc_value, InvalidStateError) and type(args.thread).__name__ == "_ExecutorManagerThread":
            return
        previous(args)

    hook._simrun_quiet = True  # type: ignore[attr-defined]
    threading.excepthook = hook


def _pool_run(pending: list[dict], n_workers: int, on_output: Callable[[RunOutput], None],
              on_progress: Callable[[int, int, float], None], worker: Callable[[dict], list] | None = None) -> None:
    """Run ``worker(task)`` (default: one experiment task) for every task on a process pool; each
    returns a list whose items go to ``on_output``. Ctrl-C stops the pool (see below)."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn" if os.name == "nt" else "fork")
    q = ctx.Queue()
    pool = ProcessPoolExecutor(max_workers=n_workers, mp_context=ctx, initializer=_init_worker, initargs=(q, os.getpid()))
    try:
        futs = [pool.submit(worker or _worker, t) for t in pending]
        remaining = set(futs)
        while remaining:
            while True:
                try:
                    r, p, f = q.get_nowait()
                except Exception:  # queue.Empty (or a closed queue at the end)
                    break
                on_progress(r, p, f)
            finished = [f for f in remaining if f.done()]
            for fut in finished:
                remaining.discard(fut)
                try:
                    outs = fut.result()
                except BrokenProcessPool:
                    raise SimError("a worker process died (killed, or out of memory); finished runs are kept: "
                                   "run the same command again to resume, perhaps with fewer --workers") from None
                for o in outs:
                    on_output(o)
            if not finished:
                time.sleep(0.05)
    except BaseException:
        # stop now: queued tasks are cancelled, running workers terminated (their points rerun on resume)
        for f in futs if "futs" in locals() else []:
            f.cancel()
        stop_pool_now(pool)
        raise
    else:
        pool.shutdown(wait=True)
    finally:
        q.close()


def _dask_run(pending: list[dict], n_workers: int, on_output: Callable[[RunOutput], None],
              worker: Callable[..., list] | None = None, address: str | None = None) -> None:
    """The tasks on dask.distributed: a LocalCluster of ``n_workers`` processes, or the existing
    scheduler at ``address`` (tcp://host:port)."""
    try:
        from dask.distributed import Client, LocalCluster
        from dask.distributed import as_completed as das_completed
    except ImportError:
        raise ConfigError("--scheduler dask needs dask.distributed (pip install 'storage-perf-simulator[dask]')",
                          source="command line", field="--scheduler") from None
    fn = worker or _worker
    args = () if worker is not None else (None,)
    if address is not None:
        try:
            client = Client(address, timeout=10)
        except OSError as e:
            raise ConfigError(f"cannot reach the dask scheduler at {address}: {e}", source="command line", field="--address") from None
        with client:
            futs = [client.submit(fn, t, *args, pure=False) for t in pending]
            for fut in das_completed(futs):
                for o in fut.result():
                    on_output(o)
        return
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True) as cluster, Client(cluster) as client:
        futs = [client.submit(fn, t, *args, pure=False) for t in pending]
        for fut in das_completed(futs):
            for o in fut.result():
                on_output(o)


def run_experiment(
    exp: Experiment,
    out: Path | None = None,
    workers: int | None = None,
    scheduler: str = "processes",
    progress: Callable[[str, float, float], None] | None = None,
    resume: bool = True,
) -> ExperimentRun:
    """Run every point × replication. ``progress(description, completed_runs, total_runs)``.

    With ``out``: the directory is locked for the run; run files of this experiment are reused
    (``resume``) and every other run file in ``out/runs`` is removed first; each finished run is
    written at once. Ctrl-C raises :class:`Interrupted` (exit 130) after stopping the workers;
    what finished stays for a resume.
    """
    if out is None:
        return execute_runs(exp, None, workers, scheduler, progress, resume)
    with OutputLock(out):
        return execute_runs(exp, out, workers, scheduler, progress, resume)


def execute_runs(exp: Experiment, out: Path | None, workers: int | None = None, scheduler: str = "processes",
                 progress: Callable[[str, float, float], None] | None = None, resume: bool = True,
                 engine: str = "auto") -> ExperimentRun:
    """:func:`run_experiment` without taking the lock (the caller holds it). ``engine``: see
    :func:`simulator.core.choose` (each run's choice and reason end up in its ``RunOutput.extra``)."""
    from simulator.core import ENGINES

    if scheduler not in ("processes", "dask"):
        raise ConfigError("must be 'processes' or 'dask'", source="command line", field="--scheduler")
    if engine not in ENGINES:
        raise ConfigError(f"must be one of {', '.join(ENGINES)}", source="command line", field="--engine")
    t0 = time.perf_counter()
    tasks = [{**t, "engine": engine} for t in plan_tasks(exp)]
    digest = exp.digest()
    total = sum(len(t["points"]) for t in tasks)
    done: dict[tuple[int, int], RunOutput] = {}
    removed = 0
    if out is not None:
        done, removed = _scan_runs(out, exp, digest, keep=resume)
        (out / ".digest").unlink(missing_ok=True)  # older layout's marker: the run files carry the digest now
        atomic_write_text(out / "experiment.resolved.yaml",
                          f"# digest {digest}\n" + yaml.safe_dump(exp.raw, sort_keys=False))
    pending = [t for t in tasks if not all((p[0], t["replication"]) in done for p in t["points"])]
    outputs: list[RunOutput] = list(done.values())
    fractions: dict[tuple[int, int], float] = {(o.point, o.replication): 1.0 for o in outputs}
    n_workers = workers if workers is not None else (os.cpu_count() or 1)
    n_workers = max(1, min(n_workers, len(pending) or 1))
    points = {p.index: p for p in exp.points}

    def report() -> None:
        if progress:
            progress(exp.name, sum(fractions.values()), total)

    def on_progress(r: int, p: int, f: float) -> None:
        fractions[(p, r)] = max(fractions.get((p, r), 0.0), f)
        report()

    def on_output(o: RunOutput) -> None:
        outputs.append(o)
        fractions[(o.point, o.replication)] = 1.0
        report()
        if out is None:
            return
        o.doc.setdefault("sim", {}).update(
            {"point": o.point, "replication": o.replication, "seed": o.seed, "labels": o.labels,
             "summary": o.summary, "ios": o.ios, "experiment_digest": digest, "point_digest": points[o.point].digest}
        )
        f = run_file(out, o.point, o.replication)
        # wall-clock figures live beside the document, so the document itself is a pure function of the seed
        atomic_write_text(f.with_suffix(".timing.json"), json.dumps({"wall_seconds": o.wall_s, "ios": o.ios}) + "\n")
        atomic_write_text(f, json.dumps(o.doc, indent=1, default=float))

    try:
        report()
        if n_workers <= 1 or len(pending) <= 1:
            n_workers = 1
            for t in pending:
                for o in execute_task(t, lambda p, f, _r=t["replication"]: on_progress(_r, p, f)):
                    on_output(o)
        elif scheduler == "dask":
            _dask_run(pending, n_workers, on_output)
        else:
            _pool_run(pending, n_workers, on_output, on_progress)
        report()
    except KeyboardInterrupt:
        kept = len(outputs)
        where = f" and kept in {out}/runs (run the same command again to resume)" if out is not None and kept else ""
        raise Interrupted(f"interrupted: {kept} of {total} runs finished{where}; the workers were stopped") from None
    return ExperimentRun(exp, outputs, out, time.perf_counter() - t0, resumed=len(done), workers=n_workers, removed=removed)

"""Orchestration: plan the runs of an experiment, execute them (process pool by default, dask on
request), show progress, and write the output directory atomically so a long sweep resumes.

Output directory layout (``--out DIR``)::

    DIR/experiment.resolved.yaml    the experiment as run (overrides applied), with its digest
    DIR/runs/p003_r00.json          one fio-format JSON per simulated run (readable by simrun's fio reader)
    DIR/summary.csv                 one row per point: labels, metrics, CI half-widths
    DIR/comparison.csv              simulated vs reference figures, when the experiment names references
    DIR/*.png                       plots
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from simulator.experiment.execute import RunOutput, execute_task
from simulator.experiment.load import Experiment

__all__ = ["ExperimentRun", "atomic_write_text", "plan_tasks", "run_experiment"]


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def plan_tasks(exp: Experiment) -> list[dict[str, Any]]:
    base = {"source": str(exp.path), "exp_dir": str(exp.path.parent), "seed": exp.spec.seed}
    tasks = []
    for r in range(exp.spec.replications):
        if exp.persist_state:
            groups: dict[tuple, list] = {}
            by = exp.spec.sweep.persist_by if exp.spec.sweep else []
            for p in exp.points:
                groups.setdefault(tuple(str(p.labels[a]) for a in by), []).append((p.index, p.labels, p.raw))
            for pts in groups.values():
                tasks.append({**base, "points": pts, "replication": r, "persist": True})
        else:
            for p in exp.points:
                tasks.append({**base, "points": [(p.index, p.labels, p.raw)], "replication": r, "persist": False})
    return tasks


def _run_file(out: Path, point: int, rep: int) -> Path:
    return out / "runs" / f"p{point:03d}_r{rep:02d}.json"


@dataclass
class ExperimentRun:
    experiment: Experiment
    outputs: list[RunOutput]
    out_dir: Path | None
    wall_s: float
    resumed: int = 0

    def by_point(self) -> dict[int, list[RunOutput]]:
        d: dict[int, list[RunOutput]] = {}
        for o in sorted(self.outputs, key=lambda o: (o.point, o.replication)):
            d.setdefault(o.point, []).append(o)
        return d


def _worker(task: dict[str, Any], queue: Any) -> list[RunOutput]:
    def prog(point: int, frac: float) -> None:
        if queue is not None:
            queue.put((task["replication"], point, frac))

    return execute_task(task, prog)


def _wall_of(run_file: Path) -> float:
    t = run_file.with_suffix(".timing.json")
    try:
        return float(json.loads(t.read_text())["wall_seconds"])
    except (OSError, ValueError, KeyError):
        return 0.0


def _load_done(out: Path, digest: str) -> dict[tuple[int, int], RunOutput]:
    """Runs already written by an interrupted invocation of the same resolved experiment."""
    done: dict[tuple[int, int], RunOutput] = {}
    marker = out / ".digest"
    if not marker.exists() or marker.read_text().strip() != digest:
        return done
    for f in sorted((out / "runs").glob("p*_r??.json")):
        try:
            doc = json.loads(f.read_text())
            s = doc["sim"]
            o = RunOutput(
                s["point"], s["replication"], s["seed"], s["labels"], doc, s["summary"], _wall_of(f),
                s.get("simulated_seconds", 0.0), int(s.get("ios", 0)),
            )
            done[(o.point, o.replication)] = o
        except (OSError, ValueError, KeyError):
            continue  # a damaged file is simply run again
    return done


def run_experiment(
    exp: Experiment,
    out: Path | None = None,
    workers: int | None = None,
    scheduler: str = "processes",
    progress: Callable[[str, float, float], None] | None = None,
    resume: bool = True,
) -> ExperimentRun:
    """Run every point × replication. ``progress(description, completed_runs, total_runs)``."""
    t0 = time.perf_counter()
    tasks = plan_tasks(exp)
    digest = exp.digest()
    total = sum(len(t["points"]) for t in tasks)
    created_out = False
    done: dict[tuple[int, int], RunOutput] = {}
    if out is not None:
        created_out = not out.exists()
        if resume and out.exists():
            done = _load_done(out, digest)
        elif out.exists() and (out / "runs").exists():
            shutil.rmtree(out / "runs")
    pending = []
    for t in tasks:
        if all((p[0], t["replication"]) in done for p in t["points"]):
            continue
        pending.append(t)
    outputs: list[RunOutput] = [o for o in done.values()]
    fractions: dict[tuple[int, int], float] = {(o.point, o.replication): 1.0 for o in outputs}

    def report() -> None:
        if progress:
            progress(exp.name, sum(fractions.values()), total)

    def write(o: RunOutput) -> None:
        if out is None:
            return
        o.doc.setdefault("sim", {}).update(
            {"point": o.point, "replication": o.replication, "seed": o.seed, "labels": o.labels,
             "summary": o.summary, "ios": o.ios}
        )
        if not (out / ".digest").exists():
            atomic_write_text(out / ".digest", digest + "\n")
            atomic_write_text(out / "experiment.resolved.yaml", yaml.safe_dump(exp.raw, sort_keys=False))
        f = _run_file(out, o.point, o.replication)
        # wall-clock figures live beside the document, so the document itself is a pure function of the seed
        atomic_write_text(f.with_suffix(".timing.json"), json.dumps({"wall_seconds": o.wall_s, "ios": o.ios}) + "\n")
        atomic_write_text(f, json.dumps(o.doc, indent=1, default=float))

    try:
        if out is not None and pending and done == {}:
            (out / ".digest").unlink(missing_ok=True)
        n_workers = workers if workers is not None else (os.cpu_count() or 1)
        n_workers = max(1, min(n_workers, len(pending)))
        report()
        if n_workers <= 1 or len(pending) <= 1:
            for t in pending:
                def prog(point: int, frac: float, _r=t["replication"]) -> None:
                    fractions[(point, _r)] = frac
                    report()

                for o in execute_task(t, prog):
                    outputs.append(o)
                    write(o)
        elif scheduler == "dask":
            from dask.distributed import Client, LocalCluster
            from dask.distributed import as_completed as das_completed

            with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True) as cluster, Client(cluster) as client:
                futs = [client.submit(_worker, t, None, pure=False) for t in pending]
                for fut in das_completed(futs):
                    for o in fut.result():
                        outputs.append(o)
                        fractions[(o.point, o.replication)] = 1.0
                        write(o)
                    report()
        else:
            import multiprocessing as mp

            ctx = mp.get_context("spawn" if os.name == "nt" else "fork")
            with ctx.Manager() as mgr:
                q = mgr.Queue()
                with ProcessPoolExecutor(max_workers=n_workers, mp_context=ctx) as pool:
                    futs = {pool.submit(_worker, t, q): t for t in pending}
                    remaining = set(futs)
                    while remaining:
                        while not q.empty():
                            r, p, f = q.get_nowait()
                            fractions[(p, r)] = max(fractions.get((p, r), 0.0), f)
                        report()
                        finished = [f for f in remaining if f.done()]
                        for fut in finished:
                            remaining.discard(fut)
                            for o in fut.result():
                                outputs.append(o)
                                fractions[(o.point, o.replication)] = 1.0
                                write(o)
                        if not finished:
                            time.sleep(0.05)
                    for _ in as_completed(futs):
                        pass
        report()
    except BaseException:
        if out is not None and created_out and not any(out.glob("runs/*.json")):
            shutil.rmtree(out, ignore_errors=True)
        raise
    return ExperimentRun(exp, outputs, out, time.perf_counter() - t0, resumed=len(done))

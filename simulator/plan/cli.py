"""``simrun plan``: progress bar, the planner, the tables."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["plan_main"]


def plan_main(file: Path, out: Path | None, workers: int | None, scheduler: str, address: str | None, quiet: bool,
              resume: bool, console: Any, err_console: Any) -> None:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from simulator.experiment.runner import Interrupted
    from simulator.plan.report import render
    from simulator.plan.solve import run_plan

    with Progress(TextColumn("[bold]plan"), BarColumn(), TextColumn("{task.description}"),
                  TimeElapsedColumn(), console=err_console, disable=quiet, transient=False) as prog:
        # the count is text, not {task.total:.0f}: the total is unknown (None) until pruning ends
        task = prog.add_task("pruning the candidates", total=None)

        def cb(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total, description=f"{done}/{total} configurations searched")

        try:
            res = run_plan(file, out, workers, scheduler, address, resume, cb)
        except KeyboardInterrupt:
            prog.stop()
            raise Interrupted("interrupted (finished searches, if any, are kept)") from None
    render(res, console)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    cpu = sum(float(u.get("cpu_s", 0.0)) for u in res.units.values())
    ios = sum(int(u.get("ios", 0)) for u in res.units.values())
    console.print(
        f"{res.simulated} configurations simulated ({res.resumed} reused from an earlier invocation; --fresh reruns them), "
        f"{len(res.candidates)} candidates, {res.wall_s:.0f} s wall on {res.workers} worker process"
        f"{'es' if res.workers != 1 else ''} ({os.cpu_count()} cores, load average {load:.1f}); "
        f"the searches took {cpu:.0f} CPU s for {ios:,} simulated IOs; "
        f"results in {res.out_dir}/ (candidates.csv, plan.json, pareto.png)",
        highlight=False,
    )

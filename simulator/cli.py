"""``simrun``: the command line.

    simrun experiments/mach2_vs_single.yaml          # = simrun run FILE
    simrun run FILE [--set key=value ...] [--out DIR] [--workers N] [--scheduler processes|dask]
    simrun check FILE                                # validate only
    simrun plan PLAN.yaml [--out DIR] [--workers N] [--scheduler dask --address tcp://HOST:PORT]
    simrun schema [--kind hdd]                       # JSON schema of experiments / device kinds
    simrun fio JOBFILE --device PROFILE [--set ...]  # a real fio job file against a simulated device
    simrun bench                                     # simulated IOs per wall second
    simrun calibrate SPEC.yaml / simrun compare ... / simrun measure ...

Bad input of any kind ends with one message naming the file and field and exit code 2; Ctrl-C
during a run stops the workers and exits with 130 (finished runs are kept for a resume).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from simulator.errors import ConfigError, SimError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Storage performance simulator: HDDs, SSDs and Ceph clusters with fio semantics.",
    pretty_exceptions_enable=False,
)
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)

_SUBCOMMANDS = {"run", "plan", "check", "schema", "fio", "bench", "calibrate", "compare", "measure", "validate", "--help", "-h", "--version"}


def _fail(e: SimError) -> None:
    """Print one error and exit with its code. The message is printed literally: rich markup in it
    (a fio ``[section]`` name, ``[/]`` in a value) is neither interpreted nor swallowed."""
    from rich.text import Text

    line = Text("error:", style="bold red")
    line.append(" ")
    line.append(str(e))
    err_console.print(line, highlight=False, soft_wrap=True)
    raise typer.Exit(e.exit_code)


def _have_dask() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("dask") is not None and importlib.util.find_spec("dask.distributed") is not None
    except (ImportError, ValueError):
        return False


def _progress_ctx(enabled: bool):
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:.1f}/{task.total:.0f} runs"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        disable=not enabled,
        transient=False,
    )


def _run(file: Path, sets: list[str], out: Optional[Path], workers: Optional[int], scheduler: str, quiet: bool, resume: bool,
         engine: str = "auto") -> None:
    """``simrun run``: the experiment layer's one lifecycle entry, with a progress bar and tables."""
    from simulator.experiment.appstudy import is_study

    if is_study(file):  # an application study (study: app_study): its own runner
        from simulator.experiment.appstudy import run_study_cli
        from simulator.experiment.load import parse_sets

        try:
            run_study_cli(file, parse_sets(sets), out, workers, console)
        except SimError as e:
            _fail(e)
        return
    from simulator.experiment import lifecycle
    from simulator.experiment.load import parse_sets
    from simulator.experiment.report import render_tables

    state: dict = {"task": None}
    with _progress_ctx(not quiet) as prog:

        def loaded(exp) -> None:
            state["task"] = prog.add_task(exp.name, total=len(exp.points) * exp.spec.replications)

        def cb(desc: str, done: float, total: float) -> None:
            if state["task"] is not None:
                prog.update(state["task"], completed=done, total=total)

        try:
            res = lifecycle.run(
                file, parse_sets(sets), out=out if out is not None else (lambda exp: Path("out") / exp.name),
                workers=workers, scheduler=scheduler, resume=resume, progress=cb, on_loaded=loaded, engine=engine,
            )
        except SimError as e:
            prog.stop()
            _fail(e)
        except KeyboardInterrupt:
            from simulator.experiment.runner import Interrupted

            prog.stop()
            _fail(Interrupted("interrupted (no run was running; finished runs, if any, are kept)"))
    run = res.run
    render_tables(run, res.points, res.comparisons, res.ratios, console)
    ios = sum(o.ios for o in run.outputs)
    reused = f" ({run.resumed} reused from an earlier invocation; --fresh reruns them)" if run.resumed else ""
    cores = os.cpu_count() or 1
    console.print(
        f"{len(run.outputs)} runs{reused}, {ios:,} simulated IOs in {run.wall_s:.1f} s wall on "
        f"{run.workers} worker process{'es' if run.workers != 1 else ''} ({cores} cores)"
        + (f"; results in {run.out_dir}/ ({len(res.written)} files + runs/)" if run.out_dir else "")
    )
    from simulator.experiment.execute import core_usage

    usage = core_usage(run.outputs, run.wall_s, run.workers, cores)
    if usage:
        console.print(usage)


@app.command("run")
def run_cmd(
    file: Annotated[Path, typer.Argument(help="experiment YAML")],
    set_: Annotated[Optional[list[str]], typer.Option("--set", "-s", help="override a dotted key: workload.global.iodepth=8")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="output directory (default out/<name>)")] = None,
    workers: Annotated[Optional[int], typer.Option(min=1, help="parallel worker processes (default: all cores)")] = None,
    scheduler: Annotated[str, typer.Option(help="processes (local pool) or dask (dask.distributed LocalCluster)")] = "processes",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar")] = False,
    fresh: Annotated[bool, typer.Option("--fresh", help="ignore finished runs in the output directory (no resume)")] = False,
    engine: Annotated[str, typer.Option("--engine", help="auto (the compiled Ceph core for the RBD runs it covers, else python; the terminal says why not), python or compiled")] = "auto",
) -> None:
    """Run an experiment: simulate every sweep point, print tables, write fio JSON, CSV and plots."""
    if scheduler not in ("processes", "dask"):
        _fail(ConfigError("must be 'processes' or 'dask'", source="command line", field="--scheduler"))
    if scheduler == "dask" and not _have_dask():
        _fail(ConfigError("dask is not installed: pip install 'dask[distributed]', or use --scheduler processes",
                          source="command line", field="--scheduler"))
    if engine not in ("auto", "python", "compiled"):
        _fail(ConfigError("must be 'auto', 'python' or 'compiled'", source="command line", field="--engine"))
    _run(file, set_ or [], out, workers, scheduler, quiet, not fresh, engine)


@app.command("plan")
def plan_cmd(
    file: Annotated[Path, typer.Argument(help="plan YAML (requirement, search space, simulation; see docs/user-guide.md)")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="output directory (default out/<name>)")] = None,
    workers: Annotated[Optional[int], typer.Option(min=1, help="parallel worker processes (default: all cores)")] = None,
    scheduler: Annotated[str, typer.Option(help="processes (local pool) or dask")] = "processes",
    address: Annotated[Optional[str], typer.Option(help="with --scheduler dask: an existing scheduler, tcp://HOST:PORT")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar")] = False,
    fresh: Annotated[bool, typer.Option("--fresh", help="ignore finished searches in the output directory (no resume)")] = False,
) -> None:
    """Find the cheapest Ceph cluster that meets a latency target (capacity planning)."""
    from simulator.plan.cli import plan_main

    if scheduler == "dask" and not _have_dask():
        _fail(ConfigError("dask is not installed: pip install 'dask[distributed]', or use --scheduler processes",
                          source="command line", field="--scheduler"))
    try:
        plan_main(file, out, workers, scheduler, address, quiet, not fresh, console, err_console)
    except SimError as e:
        _fail(e)


@app.command("check")
def check_cmd(
    file: Annotated[Path, typer.Argument(help="experiment YAML")],
    set_: Annotated[Optional[list[str]], typer.Option("--set", "-s", help="override a dotted key")] = None,
) -> None:
    """Validate an experiment (every sweep point, every device) without running it."""
    from simulator.experiment.appstudy import is_study
    from simulator.experiment.load import load_experiment, parse_sets

    if is_study(file):
        from simulator.experiment.appstudy import load_study

        try:
            spec = load_study(file, parse_sets(set_ or []))
        except SimError as e:
            _fail(e)
        console.print(f"{file}: OK — application study, {len(spec.configs)} configurations")
        return
    try:
        exp = load_experiment(file, parse_sets(set_ or []))
    except SimError as e:
        _fail(e)
    console.print(f"{file}: OK — {len(exp.points)} points × {exp.spec.replications} replications")


def schemas() -> dict[str, dict]:
    """JSON schemas: the experiment file and every device kind's parameters (docs/schema/)."""
    from simulator.devices.registry import device_kinds
    from simulator.experiment.model import ExperimentSpec

    out = {"experiment": ExperimentSpec.model_json_schema(by_alias=True)}
    for name, k in sorted(device_kinds().items()):
        out[f"kind-{name}"] = k.config.model_json_schema(by_alias=True)
    return out


@app.command("schema")
def schema_cmd(
    kind: Annotated[Optional[str], typer.Option(help="a device kind (hdd, ssd, raid, queue, ceph_cluster) instead of the experiment")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="write every schema as DIR/<name>.json instead")] = None,
) -> None:
    """Print the JSON schema of experiment files (or of one device kind's parameters)."""
    all_schemas = schemas()
    if out is not None:
        from simulator.experiment.runner import atomic_write_text

        for name, sch in all_schemas.items():
            atomic_write_text(out / f"{name}.json", json.dumps(sch, indent=2, sort_keys=True) + "\n")
        console.print(f"wrote {len(all_schemas)} schemas to {out}/")
        return
    key = "experiment" if kind is None else f"kind-{kind}"
    if key not in all_schemas:
        known = ", ".join(k.removeprefix("kind-") for k in all_schemas if k.startswith("kind-"))
        _fail(ConfigError(f"unknown kind {kind!r} (known: {known})", source="command line", field="--kind"))
    sys.stdout.write(json.dumps(all_schemas[key], indent=2) + "\n")


@app.command("fio")
def fio_cmd(
    jobfile: Annotated[Path, typer.Argument(help="a fio job file (ini: [global] and job sections)")],
    device: Annotated[list[str], typer.Option("--device", "-d", help="profile (e.g. hdd/seagate_st91000640ns) or name=profile; repeatable")],
    seed: Annotated[int, typer.Option(min=0, help="experiment seed")] = 1,
    output_format: Annotated[str, typer.Option("--output-format", help="normal or json (like fio)")] = "normal",
    out: Annotated[Optional[Path], typer.Option("--output", help="write the result to this file instead of stdout")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", "-s", help="override: system.devices.0.params.queue.policy=fifo, workload.global.iodepth=8")] = None,
    block_layer: Annotated[bool, typer.Option("--block-layer/--no-block-layer", help="put the Linux block layer in front of each device (default on, kernel defaults)")] = True,
    scheduler: Annotated[str, typer.Option("--scheduler", help="I/O scheduler: mq-deadline, none or bfq")] = "mq-deadline",
    nr_requests: Annotated[Optional[int], typer.Option("--nr-requests", help="block-layer requests (tags); default 2 x min(queue_depth, 128), queue_depth with none")] = None,
    queue_depth: Annotated[Optional[int], typer.Option("--queue-depth", help="commands at the device at once (sysfs device/queue_depth); default the device's, 31 for SATA on AHCI")] = None,
    engine: Annotated[str, typer.Option("--engine", help="python (SimPy reference), compiled (numba cores; falls back to python, saying why, for what they do not cover) or auto (the compiled Ceph core for RBD targets it covers, else python)")] = "python",
) -> None:
    """Run a real fio job file against simulated devices; prints fio-style output."""
    from simulator.experiment.load import parse_sets
    from simulator.fio_cli import run_fio_jobfile

    blk = None
    if block_layer:
        blk = {"scheduler": scheduler, "nr_requests": nr_requests, "queue_depth": queue_depth}
    try:
        text = run_fio_jobfile(jobfile, device, seed, output_format, blk, parse_sets(set_ or []), engine=engine)
    except SimError as e:
        _fail(e)
    if out:
        try:
            out.write_text(text)
        except OSError as e:
            _fail(ConfigError(f"cannot write {out}: {e.strerror or e.__class__.__name__}", source="command line", field="--output"))
    else:
        sys.stdout.write(text)


@app.command("bench")
def bench_cmd(
    ios: Annotated[int, typer.Option(min=1, help="simulated IOs per case")] = 200_000,
    case: Annotated[Optional[list[str]], typer.Option(help="run only these cases")] = None,
) -> None:
    """Simulated IOs per second of wall time for the reference cases (one core)."""
    from simulator.bench import run_bench

    try:
        run_bench(ios, case, console)
    except SimError as e:
        _fail(e)


# --- calibration commands (simulator.calibration; thin wrappers) ---------------------------------
@app.command("calibrate")
def calibrate_cmd(
    spec: Annotated[Path, typer.Argument(help="calibration spec YAML (see simulator/calibration/spec.py)")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="report directory (default: the spec's output.report)")] = None,
    profile: Annotated[Optional[Path], typer.Option("--profile", help="write the fitted profile here instead of output.profile")] = None,
    no_profile: Annotated[bool, typer.Option("--no-profile", help="write the report only")] = False,
    workers: Annotated[Optional[int], typer.Option(min=1, help="parallel processes (default: spec, else all cores)")] = None,
    max_evals: Annotated[Optional[int], typer.Option(min=1, help="override budget.max_evals")] = None,
    max_wall: Annotated[Optional[str], typer.Option(help="override budget.max_wall (e.g. 90m)")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress display")] = False,
    report_only: Annotated[bool, typer.Option("--report-only", help="no fit: regenerate the report from the fitted profile")] = False,
    case: Annotated[Optional[list[str]], typer.Option("--case", help="a spec with cases: run only this case (repeatable)")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="move the campaign's journal aside and start over (default: resume from it)")] = False,
    status: Annotated[bool, typer.Option("--status", help="print how far the campaign's journal is; run nothing")] = False,
    revalidate: Annotated[bool, typer.Option("--revalidate", help="resume a journal made with other simulator code if its last "
                                             "evaluation, simulated again, gives identical results")] = False,
    identify: Annotated[bool, typer.Option("--identify", help="no fit: which parameters the data identify (the loss around the "
                                           "fitted profile's values, one parameter at a time; writes identify.md/.csv in the report)")] = False,
    step: Annotated[float, typer.Option("--step", help="--identify: step of each parameter, a fraction of its search range "
                                        "on its own scale (0 < step <= 0.25)")] = 0.05,
) -> None:
    """Fit free profile parameters to measured/published figures; write the fitted profile and a report.

    Every finished evaluation is journaled in <report>.work/journal.jsonl: after an interruption (Ctrl-C,
    kill, restart) the same command resumes from it."""
    from simulator.calibration.cli import calibrate_main, status_main

    try:
        if status:
            status_main(spec, out, case, console)
            return
        if identify:
            from simulator.calibration.cli import identify_main
            from simulator.experiment.runner import Interrupted

            try:
                identify_main(spec, out, profile, workers, step, case, console, None if quiet else err_console)
            except KeyboardInterrupt:
                raise Interrupted("interrupted: --identify stopped its workers and wrote nothing") from None
            return
        calibrate_main(spec, out, profile, no_profile, workers, max_evals, quiet, console, err_console, max_wall, report_only, case,
                       fresh=fresh, revalidate=revalidate)
    except SimError as e:
        _fail(e)
    except KeyboardInterrupt:
        from simulator.experiment.runner import Interrupted

        _fail(Interrupted("interrupted before the first evaluation finished (nothing to resume from yet)"))


@app.command("compare")
def compare_cmd(
    system: Annotated[str, typer.Argument(help="experiment YAML (its system), profile YAML, or profile ref (hdd/...)")],
    measured: Annotated[list[str], typer.Argument(help="measured fio output files (paths or globs)")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="directory for compare.csv and plots")] = None,
    runtime: Annotated[Optional[float], typer.Option(min=1e-6, help="simulated seconds per file (default: as measured)")] = None,
    seed: Annotated[int, typer.Option(min=0, help="simulation seed")] = 1,
    device: Annotated[Optional[str], typer.Option(help="device of the system the measured files map to")] = None,
    workers: Annotated[Optional[int], typer.Option(min=1, help="parallel processes (default: all cores)")] = None,
    latency: Annotated[Optional[str], typer.Option(help="clat, lat or auto (default: what a calibrated profile was fitted on, else auto)")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", "-s", help="override a system key: system.devices.0.params.queue.policy=fifo")] = None,
) -> None:
    """Simulate each measured fio run on a system and report IOPS/latency errors and the demerit."""
    from simulator.calibration.cli import compare_main
    from simulator.experiment.load import parse_sets

    try:
        compare_main(system, measured, out, runtime, seed, device, workers, console, latency, parse_sets(set_ or []))
    except SimError as e:
        _fail(e)


@app.command("measure")
def measure_cmd(
    target: Annotated[Optional[Path], typer.Option(help="directory for fio's test file (default /var/tmp/simrun-fio)")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="directory for the fio JSON files")] = None,
    runtime: Annotated[Optional[float], typer.Option(min=1e-3, help="seconds per fio run (default 10)")] = None,
) -> None:
    """Measure this machine's disk with real fio (calibration/local-disk/measure.sh)."""
    from simulator.calibration.measure import measure

    try:
        path = measure(target, out, runtime)
    except SimError as e:
        _fail(e)
    console.print(f"measured runs in {path}")


@app.command("validate")
def validate_cmd(
    quick: Annotated[bool, typer.Option("--quick", help="short simulated runs (seconds instead of minutes)")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="markdown file (default docs/validation.md)")] = None,
    workers: Annotated[Optional[int], typer.Option(min=1, help="parallel processes (default: all cores)")] = None,
) -> None:
    """Regenerate the validation report (docs/validation.md) from committed outputs and fresh runs."""
    from simulator.calibration.validation import run_validation

    try:
        path = run_validation(quick=quick, out=out, workers=workers, console=err_console)
    except SimError as e:
        _fail(e)
    console.print(f"validation report written: {path}")


def main(argv: list[str] | None = None) -> None:
    """Console entry point: ``simrun FILE`` is short for ``simrun run FILE``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] not in _SUBCOMMANDS and not args[0].startswith("-") and args[0].endswith((".yaml", ".yml")):
        args = ["run", *args]
    try:
        app(args=args, prog_name="simrun", standalone_mode=True)
    except SimError as e:  # pragma: no cover - commands catch their own
        try:
            _fail(e)
        except typer.Exit:
            sys.exit(e.exit_code)


if __name__ == "__main__":
    main()

"""Workload reconstruction: "simulate what this measured fio run did".

:func:`simulate_trace` takes a measured :class:`~simulator.fio.reader.FioRun`, rebuilds its fio jobs
from the options fio recorded (:func:`~simulator.fio.reader.job_options_of`), points them at the
simulated system and runs them. The rules, in order:

* **Jobs.** One simulated job per distinct job name in the file (fio writes ``numjobs`` entries
  without ``group_reporting``; they are one job with ``numjobs`` clones here). ``numjobs`` is kept.
* **Options fio does not record.** fio's JSON omits value-less flags such as ``time_based`` and
  ``group_reporting``. A job with ``runtime`` that ran for at least 95 % of it is taken as
  ``time_based=1``; ``group_reporting=1`` is set (the results are merged as fio's group reporting
  would, which is how measured files with several clones are compared).
* **Target.** ``ioengine=rbd`` keeps ``pool``/``rbdname`` and drives that image of the system's
  Ceph cluster. Every other engine: ``filename`` (a file or block device on the measured machine)
  becomes the system's one device (``device=`` names one when the system has several); the job's
  ``size``/``offset`` then address a region of that device.
* **Runtime.** ``runtime=`` shortens the simulated run (never longer than the measured one); the
  ``ramp_time`` is shortened by the same factor.
* **Options the workload layer rejects.** Options in :data:`TRACE_DROPPED_OPTIONS` (reporting units,
  host-side scripts, steady-state detection, client naming of the rbd engine) are dropped, each
  for the reason given there. Any other unsupported option is a :class:`ConfigError` naming the
  file and option: the simulation would not be the measured workload.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError
from simulator.fio.reader import FioRun, job_options_of, read_fio

__all__ = [
    "TRACE_DROPPED_OPTIONS",
    "jobs_of_run",
    "normalise_system",
    "run_workload",
    "simulate_options",
    "simulate_trace",
]

#: fio options dropped when a measured run is replayed, with the reason (documented in
#: calibration/README.md). They change how fio reports or what it runs around the job, not what
#: reaches the device.
TRACE_DROPPED_OPTIONS: dict[str, str] = {
    "kb_base": "unit of fio's printed sizes; the JSON carries bytes",
    "unit_base": "bits vs bytes in fio's printed rates; the JSON carries bytes",
    "unified_rw_reporting": "reporting only; the reader folds the 'mixed' section into reads",
    "exec_prerun": "host-side command before the job",
    "exec_postrun": "host-side command after the job",
    "stats": "fio's own statistics switch",
    "steadystate": "steady-state detection may end a run early; the measured runtime is used instead",
    "ss": "as steadystate",
    "ss_dur": "as steadystate",
    "ss_ramp": "as steadystate",
    "clustername": "rbd engine: Ceph cluster name (one cluster is simulated)",
    "name": "the job name is taken from the fio output",
    "output": "fio's output file",
    "output-format": "fio's output format",
    "filename_format": "file naming on the measured machine",
    "directory": "the directory of the test file on the measured machine (the file maps to the device)",
    "nrfiles": "only nrfiles=1 (the default) is accepted; see the check in jobs_of_run",
}


def _positive(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if v > 0 else None


def jobs_of_run(
    run: FioRun,
    *,
    device: str | None = None,
    runtime: float | None = None,
    has_cluster: bool = False,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Rebuild ``([global], [jobs])`` fio option mappings of a measured run (see module doc)."""
    from simulator.workloads.options import FioJob

    src = run.path
    if not run.jobs:
        raise ConfigError("no jobs in fio output", source=src)
    if run.source_format != "json" or not any(job_options_of(run, i) for i in range(len(run.jobs))):
        raise ConfigError(
            "the fio output does not record the job options (fio's text output); rerun fio with --output-format=json",
            source=src,
        )
    seen: dict[str, int] = {}
    for i, j in enumerate(run.jobs):
        seen.setdefault(j.name, i)
    jobs: list[dict[str, Any]] = []
    for name, idx in seen.items():
        opts: dict[str, Any] = dict(job_options_of(run, idx))
        for k in list(opts):
            if k in TRACE_DROPPED_OPTIONS:
                if k == "nrfiles" and str(opts[k]).strip() not in ("", "1"):
                    raise ConfigError(f"nrfiles={opts[k]} is not supported (one file per job)", source=src, field=k)
                opts.pop(k)
        measured = run.jobs[idx]
        engine = str(opts.get("ioengine", "psync"))
        if engine == "rbd":
            if not has_cluster:
                raise ConfigError(
                    "the measured run used ioengine=rbd; the system needs a Ceph cluster (system.cluster)",
                    source=src, field="ioengine",
                )
            opts.pop("filename", None)
        else:
            if device is None:
                raise ConfigError(
                    "the measured run drove a file/device; the system needs exactly one device (or name one)",
                    source=src, field="filename",
                )
            opts["filename"] = device
        rt = _positive(opts.get("runtime"))
        if rt is not None:
            from simulator.units import parse_time

            try:
                rt = float(opts["runtime"]) if str(opts["runtime"]).strip().isdigit() else parse_time(opts["runtime"])
            except ValueError:
                raise ConfigError(f"cannot read runtime={opts['runtime']!r}", source=src, field="runtime") from None
            ran = max(measured.job_runtime_s, max((d.runtime_s for d in measured.dirs), default=0.0))
            if "time_based" not in opts and ran >= 0.95 * rt:
                opts["time_based"] = "1"
            if runtime is not None and runtime < rt:
                factor = runtime / rt
                opts["runtime"] = f"{runtime:.6g}s"
                ramp = opts.get("ramp_time")
                if ramp is not None:
                    r = float(ramp) if str(ramp).strip().replace(".", "", 1).isdigit() else parse_time(ramp)
                    opts["ramp_time"] = f"{r * factor:.6g}s"
        elif runtime is not None:
            raise ConfigError(
                "the measured run has no runtime= (a size-based job); it cannot be shortened", source=src, field="runtime"
            )
        if int(_positive(opts.get("numjobs")) or 1) > 1:
            opts["group_reporting"] = "1"
        opts["name"] = name
        jobs.append(opts)
    # fail early, with the file named, on options the workload layer would reject
    from simulator.workloads.options import IGNORED_OPTIONS, OPTION_ALIASES

    known = set(FioJob.model_fields) | IGNORED_OPTIONS | set(OPTION_ALIASES)
    for opts in jobs:
        for k in opts:
            if k not in known:
                raise ConfigError(
                    f"fio option {k!r} of the measured run is not supported by the simulator "
                    "(and not in the trace ignore list, simulator.calibration.trace.TRACE_DROPPED_OPTIONS)",
                    source=src, field=k,
                )
    return {}, jobs


def normalise_system(system: Any, source: str | None = None) -> dict[str, Any]:
    """A system spec as a plain mapping: an experiment's ``system:`` section (mapping), or a profile
    reference such as ``hdd/seagate_st91000640ns`` (one device named ``dev``) or
    ``clusters/croit_mach2`` (a cluster)."""
    if isinstance(system, str):
        from simulator.devices.registry import load_profile

        try:
            prof = load_profile(system)
        except ConfigError as e:
            raise ConfigError(e.message, source=source or "command line", field="system") from None
        if prof["kind"] == "ceph_cluster":
            return {"cluster": {"profile": system}}
        return {"devices": [{"name": "dev", "profile": system}]}
    if not isinstance(system, Mapping):
        raise ConfigError("a system is a mapping (devices / cluster) or a profile reference", source=source, field="system")
    return copy.deepcopy(dict(system))


def _device_of(spec: Any) -> str | None:
    names = []
    for d in spec.devices:
        names += [d.name] if d.count == 1 else [f"{d.name}{k}" for k in range(d.count)]
    return names[0] if len(names) == 1 else None


def run_workload(
    system_spec: Mapping[str, Any],
    global_opts: Mapping[str, Any],
    jobs: list[Mapping[str, Any]],
    *,
    seed: int = 1,
    source: str | None = None,
) -> Any:
    """Build the system, run the fio jobs on it, return the merged :class:`JobResult`."""
    from simulator.config.base import validate
    from simulator.engine import Simulation
    from simulator.experiment.execute import System, run_jobs_on
    from simulator.experiment.model import SystemSpec
    from simulator.metrics.stats import merge
    from simulator.workloads.options import resolve_jobs

    spec = validate(SystemSpec, dict(system_spec), source, prefix="system")
    fjobs = resolve_jobs(dict(global_opts), list(jobs), source)
    sim = Simulation(int(seed))
    system = System(sim, spec, source)
    for j in fjobs:
        try:
            system.resolve_target(j)
        except ConfigError as e:
            raise ConfigError(e.message, source=source, field=e.field) from None
    results, _ = run_jobs_on(sim, system, fjobs)
    return merge(results) if len(results) > 1 else results[0]


def simulate_options(
    system_spec: Mapping[str, Any],
    options: Mapping[str, Any],
    *,
    seed: int = 1,
    source: str | None = None,
    device: str | None = None,
) -> Any:
    """Run one fio job given as an option mapping (e.g. built from a CSV row) on the system's one
    device (or ``device``) or, with ``ioengine=rbd``, on its cluster."""
    from simulator.config.base import validate
    from simulator.experiment.model import SystemSpec

    spec = validate(SystemSpec, dict(system_spec), source, prefix="system")
    opts = dict(options)
    if str(opts.get("ioengine", "")) != "rbd" and "filename" not in opts:
        dev = device or _device_of(spec)
        if dev is None:
            raise ConfigError("the system has several devices; name one", source=source, field="device")
        opts["filename"] = dev
    opts.setdefault("name", "job")
    return run_workload(system_spec, {}, [opts], seed=seed, source=source)


def simulate_trace(
    run: FioRun | str | Path,
    system_spec: Any,
    *,
    runtime: float | None = None,
    seed: int = 1,
    source: str | None = None,
    device: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """Simulate what a measured fio run did on ``system_spec`` and return the merged
    :class:`~simulator.metrics.stats.JobResult` (see the module doc for the rules).

    ``system_spec``: an experiment's ``system:`` mapping or a profile reference. ``runtime``
    (seconds) shortens the run; ``seed`` is the simulation seed (fio's offset sequence comes from
    the job's ``randseed``, as in fio). ``options`` are fio options set on every job afterwards
    (e.g. ``sim_slat``, the host CPU per IO of the measured machine).
    """
    from simulator.config.base import validate
    from simulator.experiment.model import SystemSpec

    if not isinstance(run, FioRun):
        run = read_fio(run)
    src = source or run.path
    sysd = normalise_system(system_spec, src)
    spec = validate(SystemSpec, sysd, src, prefix="system")
    dev = device or _device_of(spec)
    if device is not None:
        names = {d.name for d in spec.devices}
        if device not in names:
            raise ConfigError(f"no device {device!r} in the system", source=src, field="device")
    gopts, jobs = jobs_of_run(run, device=dev, runtime=runtime, has_cluster=spec.cluster is not None)
    if options:
        jobs = [{**j, **options} for j in jobs]
    return run_workload(sysd, gopts, jobs, seed=seed, source=run.path)

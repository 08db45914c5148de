"""``simrun compare EXPERIMENT_OR_SYSTEM MEASURED...``: simulate each measured fio run on a system
and report, per file and direction, the IOPS error, the log-ratio errors of mean/p50/p99/p99.9 and
the Ruemmler–Wilkes demerit (:func:`simulator.metrics.compare.compare`); a rich table, a CSV, HDR
percentile plots (simulated vs measured, one per file) and IOPS vs queue depth when the files
differ by iodepth.

The system is an experiment file's ``system:`` section, a profile reference (``hdd/...``,
``clusters/...``) or a profile YAML path.
"""

from __future__ import annotations

import glob
import math
import re
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError

__all__ = ["compare_files", "expand_measured", "system_from_arg"]


def system_from_arg(arg: str) -> tuple[dict[str, Any], str]:
    """(system mapping, description) from an experiment YAML, a profile YAML or a profile ref."""
    from simulator.calibration.trace import normalise_system
    from simulator.config.base import load_yaml

    p = Path(arg)
    if p.suffix in (".yaml", ".yml") and p.is_file():
        raw = load_yaml(p)
        if isinstance(raw, dict) and isinstance(raw.get("system"), dict):
            return dict(raw["system"]), f"system of {arg}"
        if isinstance(raw, dict) and "kind" in raw:
            return normalise_system(str(p.resolve()), arg), f"profile {arg}"
        raise ConfigError("neither an experiment (with a system: section) nor a profile (with kind:)", source=arg)
    return normalise_system(arg, "command line"), f"profile {arg}"


def _natural(s: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def expand_measured(paths: list[str]) -> list[Path]:
    """Paths and globs (a glob's hits in natural order: qd2 before qd16)."""
    out: list[Path] = []
    for s in paths:
        hits = sorted(glob.glob(s), key=_natural) if any(c in s for c in "*?[") else [s]
        if not hits:
            raise ConfigError(f"no files match {s!r}", source="command line", field="MEASURED")
        for h in hits:
            q = Path(h)
            if not q.is_file():
                raise ConfigError("file not found", source=h)
            if q not in out:
                out.append(q)
    return out


def _one(args: tuple[str, dict[str, Any], float | None, int, str | None, dict[str, Any] | None]) -> Any:
    from simulator.calibration.trace import simulate_trace

    path, system, runtime, seed, device, options = args
    return simulate_trace(path, system, runtime=runtime, seed=seed, device=device, options=options)


def profile_latency_kind(system_arg: str) -> str:
    """The latency a calibrated profile was fitted on (provenance.latency_compared), else auto."""
    from simulator.devices.registry import load_profile

    try:
        prof = load_profile(system_arg)
    except ConfigError:
        return "auto"
    return str((prof.get("provenance") or {}).get("latency_compared") or "auto")


def profile_workload_options(system_arg: str) -> dict[str, Any]:
    """fio options a calibrated profile was fitted with (its provenance.workload_options), e.g. the
    measured host's sim_slat; empty for other systems."""
    from simulator.devices.registry import load_profile

    try:
        prof = load_profile(system_arg)
    except ConfigError:
        return {}
    return dict((prof.get("provenance") or {}).get("workload_options") or {})


def compare_files(
    system_arg: str,
    measured: list[str],
    *,
    out: Path | None = None,
    runtime: float | None = None,
    seed: int = 1,
    device: str | None = None,
    workers: int | None = None,
    options: dict[str, Any] | None = None,
    latency: str | None = None,
) -> list[dict[str, Any]]:
    """Simulate every measured file on the system; returns one row per file and direction (and
    writes compare.csv and the plots into ``out``). ``options``: fio options set on every job; by
    default those a calibrated profile names in its provenance (workload_options)."""
    from simulator.calibration.calibrate import open_executor
    from simulator.calibration.report import _csv_text, _slug
    from simulator.calibration.trace import jobs_of_run
    from simulator.fio.reader import job_options_of, read_fio
    from simulator.metrics.compare import compare

    system, _desc = system_from_arg(system_arg)
    files = expand_measured(measured)
    runs = [read_fio(f) for f in files]
    # validate every file's workload before running anything
    from simulator.config.base import validate
    from simulator.experiment.model import SystemSpec

    spec = validate(SystemSpec, system, system_arg, prefix="system")
    one_dev = None
    names = [d.name if d.count == 1 else f"{d.name}0" for d in spec.devices]
    if device is not None:
        if device not in {d.name for d in spec.devices}:
            raise ConfigError(f"no device {device!r} in the system (devices: {', '.join(names) or 'none'})", source="command line", field="--device")
        one_dev = device
    elif len(names) == 1 and spec.devices[0].count == 1:
        one_dev = names[0]
    for r in runs:
        jobs_of_run(r, device=one_dev, runtime=runtime, has_cluster=spec.cluster is not None)
    if options is None:
        options = profile_workload_options(system_arg)
    if latency is None:
        latency = profile_latency_kind(system_arg)
    if latency not in ("auto", "clat", "lat"):
        raise ConfigError("must be auto, clat or lat", source="command line", field="--latency")
    tasks = [(str(f), system, runtime, seed, one_dev, options or None) for f in files]
    with open_executor(min(workers or 0, len(tasks)) if workers else min(len(tasks), __import__("os").cpu_count() or 1)) as ex:
        sims = list(ex.map(_one, tasks)) if ex is not None else [_one(t) for t in tasks]
    from simulator.calibration.problem import measured_job

    rows = []
    for f, run, sim in zip(files, runs, sims, strict=True):
        mj = measured_job(str(f), latency)
        opts = job_options_of(run, 0)
        for d in mj.present_dirs():
            c = compare(sim.dir(d.ddir), d, kind=latency)
            rows.append({"file": f.name, "path": str(f), "rw": opts.get("rw", ""), "iodepth": opts.get("iodepth", "1"),
                         "numjobs": opts.get("numjobs", "1"), **c})
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.csv").write_text(_csv_text([{k: v for k, v in r.items() if k != "path"} for r in rows]), encoding="utf-8")
        from simulator.metrics.plots import Series, plot_iops_vs_qd, plot_percentiles

        for f, _run, sim in zip(files, runs, sims, strict=True):
            for d in measured_job(str(f), latency).present_dirs():
                k = next(r["kind"] for r in rows if r["path"] == str(f) and r["direction"] == d.name)
                plot_percentiles([("measured", d.latency(k)), ("simulated", sim.dir(d.ddir).latency(k))],
                                 out / f"hdr_{_slug(f.stem)}_{d.name}.png", title=f"{f.name} ({d.name}, {k})")
        groups: dict[tuple, list[dict[str, Any]]] = {}
        for r in rows:
            groups.setdefault((r["rw"], r["direction"], r["numjobs"]), []).append(r)
        for (rw, dname, nj), rs in groups.items():
            qds = {float(r["iodepth"]) for r in rs}
            if len(qds) < 2:
                continue
            rs.sort(key=lambda r: float(r["iodepth"]))
            x = [float(r["iodepth"]) for r in rs]
            plot_iops_vs_qd([Series("simulated", x, [r["iops_sim"] for r in rs])], out / f"iops_vs_qd_{_slug(rw)}_{dname}_j{nj}.png",
                            measured=[Series("measured", x, [r["iops_measured"] for r in rs])], title=f"{rw} ({dname}), numjobs {nj}")
    return rows


def render(rows: list[dict[str, Any]], console: Any, title: str) -> None:
    from rich.table import Table

    def pct(lr: float) -> str:
        return "–" if lr is None or not math.isfinite(lr) else f"{(math.exp(lr) - 1) * 100:+.0f}%"

    t = Table(title=title)
    for c in ("file", "dir", "IOPS meas", "IOPS sim", "IOPS err", "mean", "p50", "p99", "p99.9", "demerit ms", "demerit %"):
        t.add_column(c, justify="left" if c in ("file", "dir") else "right")
    for r in rows:
        e = r["iops_err_pct"]
        t.add_row(r["file"], r["direction"], f"{r['iops_measured']:.0f}", f"{r['iops_sim']:.0f}",
                  "–" if not math.isfinite(e) else f"{e:+.1f}%", pct(r["mean_log_ratio"]), pct(r["p50_log_ratio"]),
                  pct(r["p99_log_ratio"]), pct(r["p99.9_log_ratio"]), f"{r['demerit_ms']:.3g}", f"{r['demerit_pct']:.0f}")
    console.print(t)

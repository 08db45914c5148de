"""``simrun fio JOBFILE --device PROFILE``: a real fio job file against simulated devices.

A JOBFILE ending in ``.yaml``/``.yml`` is an Iometer access specification instead
(:mod:`simulator.workloads.iometer`), run through the same fio job machinery.

Job files are read with fio's ini syntax and option names. Devices come from profiles; with one
``--device`` every job's ``filename`` is mapped onto it (so a job file written for /dev/sdb runs
unchanged), with several ``--device name=profile`` the jobs' ``filename=`` must use those names.
The output is what fio prints: its normal text, or its JSON with ``--output-format json`` (a
pure function of the job file, profiles, overrides and seed: the same inputs give the same bytes).

``--set`` overrides use the experiment file's names: ``system.devices.0.params.queue.policy=fifo``
(device ``0`` is the first ``--device``; list indices reach into the profile's lists) and
``workload.global.iodepth=8`` (an option added to / replacing the job file's [global] section).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError

__all__ = ["format_normal", "run_fio_jobfile"]


def _parse_devices(devices: list[str]) -> list[tuple[str, str]]:
    out = []
    for i, d in enumerate(devices):
        if "=" in d:
            name, prof = d.split("=", 1)
        else:
            name, prof = (f"dev{i}" if len(devices) > 1 else "dev"), d
        if not name or not prof:
            raise ConfigError(f"expected PROFILE or name=PROFILE, got {d!r}", source="command line", field="--device")
        out.append((name, prof))
    return out


def _apply_sets(devs: list[tuple[str, str]], gopts: dict[str, Any], sets: list[tuple[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from simulator.experiment.load import apply_sets

    if not sets:
        return [{"name": n, "profile": p} for n, p in devs], gopts
    raw: dict[str, Any] = {"system": {"devices": [{"name": n, "profile": p} for n, p in devs]}, "workload": {"global": dict(gopts)}}
    for k, _ in sets:
        if not (k.startswith("system.devices.") or k.startswith("workload.global.")):
            raise ConfigError(f"{k!r}: simrun fio takes system.devices.N.<...> and workload.global.<option> overrides",
                              source="command line", field="--set")
    raw = apply_sets(raw, sets, "command line (--set)")
    devices = raw["system"]["devices"]
    new_global = raw["workload"]["global"]
    for k, v in (new_global.items() if isinstance(new_global, dict) else []):
        if k not in gopts or gopts[k] != v:
            gopts[k] = v
            if hasattr(gopts, "labels"):  # errors name the override, not a job-file line
                gopts.labels[k] = f"--set workload.global.{k}"
    if not isinstance(devices, list) or len(devices) != len(devs) or not all(isinstance(d, dict) for d in devices):
        raise ConfigError("--set cannot add or remove devices", source="command line", field="--set")
    return devices, gopts


def run_fio_jobfile(
    jobfile: Path, devices: list[str], seed: int = 1, output_format: str = "normal", block_layer: dict[str, Any] | None = None,
    sets: list[tuple[str, Any]] | None = None, engine: str = "python",
) -> str:
    """``block_layer``: BlockLayerConfig fields for the Linux block layer put in front of every device
    ({} = the kernel's defaults: mq-deadline, nr_requests 2 x min(queue_depth, 128), queue_depth the
    device's, 31 for SATA on AHCI); None = no block layer."""
    from simulator.devices.registry import build_device
    from simulator.engine import Simulation
    from simulator.experiment.execute import SIM_TIME_STR
    from simulator.fio.writer import to_fio_json
    from simulator.limits import check_run_size
    from simulator.workloads.jobfile import parse_jobfile
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload

    if engine not in ("python", "compiled", "auto"):
        raise ConfigError("must be 'python', 'compiled' or 'auto'", source="command line", field="--engine")
    if output_format not in ("normal", "json"):
        raise ConfigError("must be 'normal' or 'json'", source="command line", field="--output-format")
    if not devices:
        raise ConfigError("give at least one --device PROFILE", source="command line", field="--device")
    if Path(jobfile).suffix.lower() in (".yaml", ".yml"):
        # an Iometer access specification (simulator.workloads.iometer), mapped onto fio jobs
        from simulator.workloads.iometer import iometer_jobs, load_iometer

        gopts, sections = iometer_jobs(load_iometer(jobfile), [n for n, _ in _parse_devices(devices)])
    else:
        gopts, sections = parse_jobfile(jobfile)
    dev_specs, gopts = _apply_sets(_parse_devices(devices), gopts, list(sets or []))
    jobs = resolve_jobs(gopts, sections, str(jobfile))
    parsed = _parse_devices(devices)
    check_run_size(jobs, devices=len(parsed))
    sim = Simulation(seed)
    built: dict[str, Any] = {}
    blk_cfg = None
    if block_layer is not None:
        from pydantic import ValidationError

        from simulator.devices.blocklayer import BlockLayer, BlockLayerConfig

        try:
            blk_cfg = BlockLayerConfig(**block_layer)
        except ValidationError as e:
            err = e.errors()[0]
            opt = "--" + str(err["loc"][0]).replace("_", "-") if err.get("loc") else "--scheduler"
            raise ConfigError(err["msg"], source="command line", field=opt) from None
    for i, d in enumerate(dev_specs):
        name = d["name"]
        spec = {k: v for k, v in d.items() if k != "name"}
        field = f"system.devices.{i}" if d.get("params") else "--device"
        try:
            built[name] = build_device(spec, name, sim.root, source="command line", field=field, trusted=True)
        except ConfigError as e:
            if e.source and e.source != "command line":  # a problem inside the profile file: name it
                raise
            raise ConfigError(e.message, source="command line", field=e.field if d.get("params") else "--device") from None
        if blk_cfg is not None and blk_cfg.enabled:
            built[name] = BlockLayer("blk", built[name], built[name], blk_cfg)

    def resolve(job: Any) -> list[Any]:
        if len(built) == 1:
            return list(built.values())
        names = [n for n in str(getattr(job, "filename", "") or "").split(":") if n]
        missing = [n for n in names if n not in built]
        if not names or missing:
            raise ConfigError(
                f"filename={getattr(job, 'filename', '')!r} must name --device names ({', '.join(built)})",
                source=str(jobfile), field=f"[{job.name}] filename",
            )
        return [built[n] for n in names]

    for j in jobs:  # resolve early so a bad filename fails before running
        resolve(j)
    wl = Workload(sim, jobs, resolve)
    if not _run_compiled(sim, wl, engine):
        sim.run(until=wl.start())
    results = wl.results()
    meta = {"seed": seed, "devices": [d.stats() for d in built.values()], "jobfile": str(jobfile)}
    # MSER steady-state verdict per direction (simulator.metrics.steady): a short run whose rate is
    # still a transient (a write cache filling) says so on stderr and in the JSON document
    from simulator.experiment.execute import _steady

    meta["steady_state"] = steady = _steady(results)
    for dname, st in steady.items():
        if st.get("steady") is False:
            sys.stderr.write(f"warning: {dname} has not reached steady state: {st['message']}\n")
        elif st.get("steady") is None:
            sys.stderr.write(f"note: {dname}: {st['message']}; a run of >= 20 s lets the steady-state check judge it\n")
    # no wall clock in the document: the same job file, devices and seed give byte-identical output
    doc = to_fio_json(results, {k: str(v) for k, v in gopts.items()}, time_str=SIM_TIME_STR, sim_meta=meta, timestamp=0)
    if output_format == "json":
        return json.dumps(doc, indent=2, default=float) + "\n"
    return format_normal(doc)


def _run_compiled(sim: Any, wl: Any, engine: str = "compiled") -> bool:
    """Run ``wl`` in the compiled core when simulator.core.choose says so; False (after saying why on
    stderr, unless the Python engine was asked for) if it does not."""
    import sys

    from simulator.core import run_with
    from simulator.core.ceph_fio import rbd_targets

    why = run_with(sim, wl, engine)
    if why is None:
        return True
    if engine == "compiled" or (engine == "auto" and rbd_targets(wl)):
        sys.stderr.write(f"simrun fio: the compiled engine does not cover {why} yet; running the Python engine\n")
    return False


def _unit(ns_values: list[float]) -> tuple[str, float]:
    m = max(ns_values) if ns_values else 0
    if m >= 1e7:
        return "msec", 1e6
    if m >= 1e4:
        return "usec", 1e3
    return "nsec", 1.0


def _bw(b: float) -> str:
    for u, f in (("GiB/s", 1 << 30), ("MiB/s", 1 << 20), ("KiB/s", 1 << 10)):
        if b >= f:
            return f"{b / f:.1f}{u}"
    return f"{b:.0f}B/s"


def format_normal(doc: dict[str, Any]) -> str:
    """fio's normal (human) output for the fields a simulation has."""
    lines = []
    for job in doc.get("jobs", []):
        lines.append(f"{job.get('jobname')}: (groupid={job.get('groupid', 0)}, jobs={job.get('jobs', 1) or 1}): err= 0: pid=0: simulated")
        for d in ("read", "write", "trim"):
            s = job.get(d) or {}
            if not s.get("total_ios"):
                continue
            rt_ms = s.get("runtime", 0)
            lines.append(f"  {d}: IOPS={s['iops']:.0f}, BW={_bw(s.get('bw_bytes', 0))} "
                         f"({s.get('io_bytes', 0) / 1e6:.1f}MB/{rt_ms}msec)")
            for name in ("slat_ns", "clat_ns", "lat_ns"):
                st = s.get(name) or {}
                if not st:
                    continue
                unit, f = _unit([st.get("max", 0)])
                label = name.split("_")[0]
                lines.append(f"    {label:>4} ({unit}): min={st.get('min', 0) / f:.0f}, max={st.get('max', 0) / f:.0f}, "
                             f"avg={st.get('mean', 0) / f:.2f}, stdev={st.get('stddev', 0) / f:.2f}")
            pct = (s.get("clat_ns") or {}).get("percentile") or {}
            if pct:
                unit, f = _unit(list(pct.values()))
                lines.append(f"    clat percentiles ({unit}):")
                items = [f"{float(k):5.2f}th=[{v / f:5.0f}]" for k, v in pct.items()]
                for i in range(0, len(items), 3):
                    lines.append("     | " + ", ".join(items[i : i + 3]) + ("," if i + 3 < len(items) else ""))
        lines.append("")
    return "\n".join(lines) + "\n"

"""The planner: load -> enumerate -> prune analytically -> simulate survivors -> rank by cost.

Output directory (``out/<name>`` by default)::

    plan.resolved.yaml        the plan as run, with its digest
    units/<shape digest>.json one finished SLO search per simulated shape (atomic; the resume unit)
    candidates.csv            every candidate: cost, capacity, status, reason, bottleneck, IOPS
    plan.json                 the same plus every probe of every search
    pareto.png                cost vs sustainable IOPS at the SLO

Resume (as sweeps do, with their lock and atomic writes): a unit file is reused only when it names
this unit's digest (shape, slice, search range, simulation settings, requirement, seed, simulator
version); any other file in ``units/`` that looks like a unit file is removed and that shape runs
again. Ctrl-C stops the workers (exit 130); finished shapes stay for the next invocation.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from simulator.config.base import validate
from simulator.errors import ConfigError
from simulator.plan.candidates import Candidate, Shape, digest_of, enumerate_shapes, structural_problem
from simulator.plan.catalog import Catalog, load_catalog
from simulator.plan.spec import PlanSpec
from simulator.search import SearchResult

__all__ = ["PlanResult", "load_plan", "run_plan"]

_UNIT_FILE = re.compile(r"^[0-9a-f]{12}\.json$")


def load_plan(path: Path) -> tuple[PlanSpec, Catalog, Path]:
    """Read and validate a plan file and its catalogue (ConfigError naming file and field otherwise)."""
    from simulator.experiment.references import project_root
    from simulator.yamlio import load_yaml_file

    if not path.is_file():
        raise ConfigError(f"plan file {path} not found", source=str(path))
    raw = load_yaml_file(path)
    if not isinstance(raw, dict):
        raise ConfigError("a plan file is a mapping (name:, requirement:, space:, ...)", source=str(path))
    spec = validate(PlanSpec, raw, str(path))
    cat_dir = path.parent / spec.catalog
    if not cat_dir.is_dir():
        cat_dir = project_root() / spec.catalog
    catalog = load_catalog(cat_dir)
    try:
        shapes = enumerate_shapes(spec, catalog)
    except ConfigError as e:
        raise ConfigError(e.message, source=str(path), field=e.field) from None
    if not shapes:
        raise ConfigError("the space has no configuration", source=str(path), field="space")
    for s in shapes:
        for part in [s.drive] + ([s.db] if s.db else []):
            try:
                from simulator.devices.registry import resolve_params

                resolve_params({"profile": part.profile, "params": part.params})
            except ConfigError as e:
                raise ConfigError(f"catalogue drive {part.name}: {e.message}", source=str(cat_dir), field="drives") from None
    return spec, catalog, cat_dir


@dataclass
class PlanResult:
    spec: PlanSpec
    candidates: list[Candidate]
    units: dict[str, dict[str, Any]]
    out_dir: Path | None
    wall_s: float
    simulated: int
    resumed: int
    workers: int
    notes: list[str]

    def meeting(self) -> list[Candidate]:
        return rank(self.candidates)


def rank(cands: list[Candidate]) -> list[Candidate]:
    """Candidates that meet the SLO, cheapest first; at equal cost the one sustaining more IOPS first
    (so a dominated candidate - no cheaper, no faster than another - never heads the list)."""
    ok = [c for c in cands if c.status == "meets"]
    return sorted(ok, key=lambda c: (round(c.cost, 2), -(c.sustainable[1] or 0.0), -(c.sustainable[0] or 0.0), c.shape.key, c.hosts))


def _hosts_range(shape: Shape, spec: PlanSpec) -> tuple[int, int, int]:
    """(lowest host count considered, its capacity/width minimum, highest)."""
    r = spec.requirement
    need = max(shape.min_hosts_width(r.failure), shape.min_hosts_capacity(float(r.usable_capacity), r.failure, r.max_fill))
    return shape.host_range[0], need, shape.host_range[1]


def _ceilings(shapes: list[Shape], spec: PlanSpec) -> dict[str, dict[str, float]]:
    """Saturated rates of every drive in use (one short run each; the pruning bounds' inputs)."""
    from simulator.plan.simulate import characterise

    out: dict[str, dict[str, float]] = {}
    r = spec.requirement
    g = max(r.workload, key=lambda g: g.share)
    pattern = g.rw if g.rw in ("randwrite", "randread", "write", "read") else "randrw"
    for s in shapes:
        k = f"data:{s.drive.name}"
        if k not in out:
            out[k] = characterise(s.drive.profile, s.drive.params, pattern, int(r.mean_bs))
        if s.db:
            k = f"db:{s.db.name}"
            if k not in out:
                out[k] = characterise(s.db.profile, s.db.params, "write", 1 << 20, iodepth=8, ios=2000)
    return out


def plan_candidates(spec: PlanSpec, catalog: Catalog, ceilings: dict[str, dict[str, float]] | None = None,
                    ) -> tuple[list[Candidate], dict[str, dict[str, Any]], list[str]]:
    """Every candidate with its analytic verdict, and the simulation units of the survivors."""
    from simulator import __version__
    from simulator.plan.simulate import analytic_bounds, slice_layout

    shapes = enumerate_shapes(spec, catalog)
    r = spec.requirement
    target = r.target_iops
    notes: list[str] = []
    buildable = [s for s in shapes if structural_problem(s) is None]
    ceilings = ceilings if ceilings is not None else _ceilings(buildable, spec)
    cands: list[Candidate] = []
    units: dict[str, dict[str, Any]] = {}
    for s in shapes:
        lo_h, need, hi_h = _hosts_range(s, spec)
        hosts = range(lo_h, hi_h + 1)
        why = structural_problem(s)
        if why:
            for h in hosts:
                cands.append(Candidate(s, h, "pruned", why, "structure"))
            continue
        b = analytic_bounds(s, spec, ceilings)
        res = min(b, key=lambda k: b[k])
        per_host = b[res]
        survivors = []
        for h in hosts:
            c = Candidate(s, h, bound_iops=per_host * h)
            if h < need:
                usable = s.usable(h, r.failure, r.max_fill) / 1e12
                if h < s.min_hosts_width(r.failure):
                    c.status, c.reason, c.bottleneck = "pruned", (
                        f"failure domain: {s.protection.label} over hosts needs >= {s.min_hosts_width(r.failure)} hosts"
                        + (" (one more to re-protect after a host loss)" if r.failure.survive == "host" else "")), "width"
                else:
                    c.status, c.reason, c.bottleneck = "pruned", (
                        f"capacity: {usable:.0f} TB usable after the failure < {float(r.usable_capacity) / 1e12:.0f} TB"), "capacity"
            elif per_host * h < target:
                c.status, c.reason, c.bottleneck = "pruned", (
                    f"bound: at most {per_host * h:,.0f} IOPS < target {target:,.0f} ({res} limit, optimistic)"), res
            else:
                survivors.append(c)
            cands.append(c)
        if not survivors:
            continue
        h_ref = min(c.hosts for c in survivors)
        h_max = max(c.hosts for c in survivors)
        layout = slice_layout(s, spec, h_ref)
        lo = target / h_max
        hi = max(lo, min(per_host, target / h_ref))
        unit = {
            "shape": s.key, "layout": layout, "lo": lo, "hi": hi,
            "spec": spec.model_dump(mode="json", by_alias=True), "catalog": catalog.model_dump(mode="json"),
        }
        unit["digest"] = digest_of({
            "shape": s.to_dict(), "drive": s.drive.model_dump(mode="json"), "db": s.db.model_dump(mode="json") if s.db else None,
            "host": s.host.model_dump(mode="json"), "nic": s.nic.model_dump(mode="json"), "layout": layout, "lo": lo, "hi": hi,
            "requirement": r.model_dump(mode="json"), "simulation": spec.simulation.model_dump(mode="json"),
            "seed": spec.seed, "version": __version__,
        })
        units[s.digest] = unit
    if r.failure.slo_during_recovery:
        what = "a host" if r.failure.survive == "host" else f"{r.failure.osds} OSD(s)"
        notes.append(f"SLO judged during recovery: every probe loses {what} (marked out at the end of the ramp) and measures "
                     f"the clients from {float(spec.simulation.recovery_settle):g} s later, during the backfill, with the "
                     "survivors carrying the whole load (see plan.json: probes' info.recovery)")
    return cands, units, notes


def apply_results(cands: list[Candidate], units: dict[str, dict[str, Any]], results: dict[str, dict[str, Any]], spec: PlanSpec) -> None:
    """Turn each shape's per-host SLO search into verdicts for its host counts."""
    target = spec.requirement.target_iops
    during = " during recovery" if spec.requirement.failure.slo_during_recovery else ""
    for c in cands:
        if c.status != "pending":
            continue
        res = results.get(c.shape.digest)
        if res is None:
            c.status, c.reason = "not-simulated", "not simulated (interrupted before this shape ran)"
            continue
        sr = SearchResult.from_dict(res["search"])
        h = c.hosts
        est = None if sr.load is None else sr.load * h
        lower = None if sr.lower is None else sr.lower * h
        upper = None if sr.upper is None else sr.upper * h
        c.sustainable = (lower, est, upper)
        c.detail["slice_hosts"] = res["layout"]["hosts"]
        c.detail["search_status"] = sr.status
        need = target / h  # per-host load this host count must carry
        at = [p for p in sr.probes if abs(p.load - need) <= 1e-9 * need]
        fail_probe = min((p for p in sr.probes if not p.ok), key=lambda p: p.load, default=None)
        ok_probe = max((p for p in sr.probes if p.ok), key=lambda p: p.load, default=None)
        ref = at[-1] if at else (fail_probe if (sr.load is None or sr.load < need) else ok_probe)
        if ref is not None:
            c.detail["p_ms"] = ref.metric if math.isfinite(ref.metric) else None
            c.detail["p_ms_ci"] = list(ref.ci) if ref.ci else None
            c.detail["util"] = ref.info.get("util")
            c.bottleneck = ref.info.get("bottleneck", "")
        pct = f"p{spec.requirement.slo.percentile:g}" + (" during recovery" if spec.requirement.failure.slo_during_recovery else "")
        if sr.load is not None and sr.load >= need * (1 - 1e-9):
            if sr.lower is not None and sr.lower >= need * (1 - 1e-9):
                c.status, c.reason = "meets", f"sustains >= {lower:,.0f} IOPS at the SLO{during} (CI-decided)"
            else:
                c.status, c.reason = "meets", f"sustains ~{est:,.0f} IOPS at the SLO{during} (point estimate; CI undecided at the target)"
                c.detail["undecided"] = True
        elif sr.load is None:
            low = min(sr.probes, key=lambda p: p.load)
            c.status, c.reason = "fails", (f"{pct} {low.metric:.0f} ms > bound even at {low.load * h:,.0f} IOPS "
                                           f"({low.info.get('bottleneck', '?')})")
            c.bottleneck = low.info.get("bottleneck", "")
            c.detail["util"] = low.info.get("util")
        elif sr.upper is not None and sr.upper <= need * (1 + 1e-9):
            c.status, c.reason = "fails", f"sustains ~{(est or 0):,.0f} IOPS < target (CI-decided)"
        else:
            c.status, c.reason = "fails", f"sustains ~{(est or 0):,.0f} IOPS < target (point estimate)"
        if c.status == "fails" and fail_probe is not None and fail_probe.info.get("saturated"):
            c.reason += f"; {fail_probe.info.get('bottleneck')} saturated"


def _scan_units(out: Path, units: dict[str, dict[str, Any]], keep: bool) -> dict[str, dict[str, Any]]:
    from simulator.experiment.runner import output_error

    done: dict[str, dict[str, Any]] = {}
    d = out / "units"
    if not d.is_dir():
        return done
    for f in sorted(d.iterdir()):
        if not _UNIT_FILE.match(f.name):
            continue  # not ours
        u = units.get(f.stem)
        res = None
        if keep and u is not None:
            try:
                res = json.loads(f.read_text(encoding="utf-8"))
                if res.get("digest") != u["digest"] or res.get("shape") != u["shape"]:
                    res = None
                else:
                    SearchResult.from_dict(res["search"])
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                res = None
        if res is not None:
            done[f.stem] = res
        else:
            try:
                f.unlink()
            except OSError as e:
                raise output_error(f, e) from None
    return done


def run_plan(path: Path, out: Path | None = None, workers: int | None = None, scheduler: str = "processes",
             address: str | None = None, resume: bool = True, progress: Callable[[int, int], None] | None = None) -> PlanResult:
    """The whole planner. ``progress(done_shapes, total_shapes)``."""
    from simulator.experiment.runner import Interrupted, OutputLock, _dask_run, _pool_run, atomic_write_text

    if scheduler not in ("processes", "dask"):
        raise ConfigError("must be 'processes' or 'dask'", source="command line", field="--scheduler")
    if address is not None and scheduler != "dask":
        raise ConfigError("--address needs --scheduler dask", source="command line", field="--address")
    t0 = time.perf_counter()
    spec, catalog, _ = load_plan(path)
    out = out if out is not None else Path("out") / spec.name
    cands, units, notes = plan_candidates(spec, catalog)
    with OutputLock(out):
        done = _scan_units(out, units, resume)
        resumed = len(done)
        atomic_write_text(out / "plan.resolved.yaml", f"# digest {digest_of(spec.model_dump(mode='json'))}\n"
                          + yaml.safe_dump(spec.model_dump(mode="json", by_alias=True), sort_keys=False))
        pending = [dict(u, key=k) for k, u in units.items() if k not in done]
        results = dict(done)
        n_workers = workers if workers is not None else (os.cpu_count() or 1)
        n_workers = max(1, min(n_workers, len(pending) or 1))

        def on_output(res: dict[str, Any]) -> None:
            key = next(k for k, u in units.items() if u["shape"] == res["shape"])
            results[key] = res
            atomic_write_text(out / "units" / f"{key}.json", json.dumps(res, indent=1, default=float))
            if progress:
                progress(len(results), len(units))

        from simulator.plan.simulate import run_unit

        if progress:
            progress(len(results), len(units))
        try:
            if not pending:
                pass
            elif scheduler == "dask":
                _dask_run(pending, n_workers, on_output, worker=run_unit, address=address)
            elif n_workers <= 1:
                for u in pending:
                    for res in run_unit(u):
                        on_output(res)
            else:
                _pool_run(pending, n_workers, on_output, lambda *a: None, worker=run_unit)
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted: {len(results)} of {len(units)} configurations searched and kept in "
                              f"{out}/units (run the same command again to resume); the workers were stopped") from None
        apply_results(cands, units, results, spec)
        result = PlanResult(spec, cands, results, out, time.perf_counter() - t0, len(results) - resumed, resumed, n_workers, notes)
        from simulator.plan.report import write_outputs

        write_outputs(result)
    return result

"""Writing a fitted profile (registry format) with a ``sources`` entry per parameter and a
``provenance`` block. Paths written into the profile are relative to the profile's directory."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import yaml

from simulator.calibration.optimize import FitResult
from simulator.calibration.problem import Problem
from simulator.calibration.spec import rel_to
from simulator.config.base import get_dotted, set_dotted
from simulator.errors import ConfigError

__all__ = ["format_value", "targets_description", "write_profile"]


def format_value(v: Any, kind: str, integer: bool = False) -> Any:
    """A fitted value in the profile's human units (4 significant digits)."""
    if integer and isinstance(v, (int, float)):
        return int(round(v))
    if not isinstance(v, float) or kind in ("choice", "number"):
        return float(f"{v:.6g}") if isinstance(v, float) else v
    if kind == "time":
        a = abs(v)
        if a >= 1:
            return f"{v:.4g}s"
        if a >= 1e-3:
            return f"{v * 1e3:.4g}ms"
        return f"{v * 1e6:.4g}us"
    if kind == "size":
        return int(round(v))
    if kind == "rate":
        return f"{v / 1e6:.4g}MB/s"
    return v



def _diff(base: Any, new: Any) -> Any:
    """Minimal override turning ``base`` into ``new`` (mappings recursively; lists and scalars whole).
    Returns None when equal."""
    if isinstance(base, dict) and isinstance(new, dict):
        out = {}
        for k, v in new.items():
            if k not in base:
                out[k] = v
                continue
            d = _diff(base[k], v)
            if d is not None:
                out[k] = d
        return out or None
    return None if base == new else new


def param_leaves(d: Any, prefix: str = "") -> list[str]:
    """Dotted paths of the leaves of a profile's ``params``: dicts by key, and lists of dicts or lists by index
    (``hosts.0.drives.1.device.params.cache.write_cache``); a list of plain values is one leaf."""
    if isinstance(d, dict):
        return [leaf for k, v in d.items() for leaf in param_leaves(v, f"{prefix}{k}.")]
    if isinstance(d, list) and d and all(isinstance(x, (dict, list)) for x in d):
        return [leaf for i, v in enumerate(d) for leaf in param_leaves(v, f"{prefix}{i}.")]
    return [prefix[:-1]]


def targets_description(problem: Problem, base: Path) -> str:
    """The targets of a fit in one line, paths relative to the directory ``base``."""

    def _rel(q: str | Path) -> str:
        return rel_to(q, base)

    parts = []
    for i, t in enumerate(problem.spec.targets):
        its = [it for it in problem.items if it.target == i]
        if t.files is not None:
            names = [Path(it.path or "").name for it in its]
            d = _rel(Path(its[0].path or "").parent) if its else ""
            parts.append(f"{d}/{{{','.join(n.removesuffix('.json') for n in names)}}}.json" if len(names) > 1 else _rel(its[0].path or ""))
        else:
            filt = ", ".join(f"{k}={v}" for k, v in t.filter.items())
            cols = ", ".join(t.metrics) if t.metrics else "metric columns"
            parts.append(f"{_rel(problem.loaded.find(t.csv or '', 'csv'))} ({len(its)} row{'s' if len(its) != 1 else ''}"
                         + (f" with {filt}" if filt else "") + f"; {cols})")
    return "; ".join(parts)


def write_profile(problem: Problem, fit: FitResult, path: Path, date: str) -> Path:
    """Write the fitted profile (registry format: kind, name, extends, params, sources, provenance)."""
    from simulator import __version__
    from simulator.devices.registry import load_profile, resolve_params

    comp = problem.component_of_profile()
    orig = get_dotted(problem.orig_system, comp)
    if not isinstance(orig, dict):
        raise ConfigError(f"the system has no {comp}", source=problem.src, field="output.component")
    full_sys = problem.system_for(fit.values, scaled=False)
    full = get_dotted(full_sys, comp).get("params") or {}
    ref = orig.get("profile")
    if ref:
        base = load_profile(str(ref))
        kind = base["kind"]
        params = _diff(base["params"], full) or {}
    else:
        kind = orig.get("kind") or ("ceph_cluster" if comp == "cluster" else None)
        base = None
        params = full
    for k in problem.spec.output.exclude:  # measurement conditions: not part of the device's profile
        parts = k.split(".")
        cur = params
        for q in parts[:-1]:
            cur = cur.get(q) if isinstance(cur, dict) else None
        if isinstance(cur, dict):
            cur.pop(parts[-1], None)
    prefix = f"{comp}.params."
    spec_rel = rel_to(problem.loaded.path, path.parent)
    if problem.loaded.case:
        spec_rel += f" (case {problem.loaded.case})"
    tdesc = targets_description(problem, path.parent)
    fitted_sources = {}
    for f in problem.params:
        if not f.key.startswith(prefix):
            continue
        sub = f.key[len(prefix):]
        v = format_value(fit.values[f.key], f.unit_kind, f.integer)
        params = set_dotted(params, sub, v, source=spec_rel)
        fitted_sources[sub] = (
            f"fitted by {spec_rel} on {tdesc} (loss {fit.result.loss:.4g}, rms log error {fit.result.rms:.3f}, "
            f"{fit.evals} evaluations, {date}, simulator {__version__})"
        )
    tv = problem.tied_values(fit.values) if problem.tied else {}
    for t in problem.tied:
        if not t.key.startswith(prefix):
            continue
        sub = t.key[len(prefix):]
        params = set_dotted(params, sub, format_value(tv[t.key], problem.tied_kind(t), t.integer), source=spec_rel)
        from simulator.calibration.expr import expr_names

        used = expr_names(t.expr)
        vals = ", ".join(f"{f.var} = {format_value(fit.values[f.key], f.unit_kind, f.integer)}" for f in problem.params if f.var in used)
        fitted_sources[sub] = (f"tied: {sub} = {t.expr}" + (f" with {vals}" if vals else "") + f", fitted by {spec_rel} on {tdesc} "
                               f"(loss {fit.result.loss:.4g}, {fit.evals} evaluations, {date}, simulator {__version__})")
    sources: dict[str, str] = {}
    base_params = base["params"] if base else {}
    _absent = object()
    for leaf in param_leaves(params):
        if get_dotted(base_params, leaf, _absent) == get_dotted(params, leaf):
            continue  # repeated unchanged from the base profile (a list is written whole): keeps the base's source
        hit = next((k for k in fitted_sources if leaf == k or leaf.startswith(k + ".") or k.startswith(leaf + ".")), None)
        if hit:
            continue
        reason = next((r for k, r in problem.spec.output.sources.items() if leaf == k or leaf.startswith(k + ".")), None)
        sources[leaf] = reason or f"set in {spec_rel} (fixed, not fitted)"
    sources.update(fitted_sources)
    for k, r in problem.spec.output.sources.items():
        if k not in problem.spec.output.exclude:
            sources.setdefault(k, r)
    name = problem.spec.output.name or ((base["name"] if base else problem.spec.name) + f" (fitted: {problem.spec.name})")
    doc: dict[str, Any] = {"kind": kind, "name": name}
    desc = problem.spec.output.description or problem.spec.description
    if desc:
        doc["description"] = " ".join(desc.split())
    if ref:
        doc["extends"] = str(ref)
    doc["params"] = params
    doc["sources"] = sources
    doc["provenance"] = {
        "spec": spec_rel,
        "date": date,
        "simulator_version": __version__,
        "targets": tdesc,
        "loss": float(f"{fit.result.loss:.6g}"),
        "rms_log_error": float(f"{fit.result.rms:.4g}"),
        "start_loss": float(f"{fit.start_result.loss:.6g}") if fit.start_result else None,
        "evaluations": fit.evals,
        "stopped_by": fit.stopped_by,
        "seed": problem.spec.seed,
        "latency_compared": problem.spec.loss.latency,
        "runtime_per_trace": problem.spec.runtime,
        "scale": problem.spec.scale.model_dump() if problem.spec.scale else None,
    }
    fvars = {f.key[4:]: format_value(fit.values[f.key], f.unit_kind, f.integer) for f in problem.params if f.key.startswith("var.")}
    if fvars:
        doc["provenance"]["fitted_variables"] = fvars
    wopts = problem.workload_options(fit.values)
    if wopts:
        kinds = {f.key.split(".", 1)[1]: f.unit_kind for f in problem.params if f.key.startswith("workload.")}
        doc["provenance"]["workload_options"] = {k: format_value(v, kinds.get(k, "number")) for k, v in wopts.items()}
        doc["provenance"]["workload_options_note"] = (
            "fio options of the measured machine's host (not of this device), fitted/set with it: give them to a job "
            "(e.g. sim_slat) to reproduce the measured runs"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "# written by simrun calibrate " + spec_rel + " — rerun it to refit; do not edit by hand\n"
    text += yaml.safe_dump(doc, sort_keys=False, width=110, allow_unicode=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    # the written profile must load and validate like any other
    resolve_params({"profile": str(path), "kind": kind}, source=str(path))
    with contextlib.suppress(ConfigError):
        load_profile(str(path))
    return path


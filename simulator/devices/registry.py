"""Device kinds and hardware profiles.

A *kind* (``hdd``, ``ssd``, ``queue``, ``raid``...) pairs a frozen config model with a factory.
A *profile* is a YAML file under ``models/`` describing one real product::

    kind: hdd
    name: Seagate ST91000640NS
    extends: hdd/_base_7200_25in     # optional: another profile whose params are merged first
    params: { ...validated by the kind's config model... }
    sources: { dotted.param: "where the figure comes from (datasheet page, or fitted by which run)" }

Experiments refer to a profile by its path under ``models/`` without the extension
(``hdd/seagate_st91000640ns``) and may override parameters with ``params``.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.config.base import ConfigModel, load_yaml, validate
from simulator.engine import Component
from simulator.errors import ConfigError

__all__ = [
    "DeviceKind",
    "build_device",
    "deep_merge",
    "device_kinds",
    "load_profile",
    "models_dir",
    "register_kind",
    "resolve_params",
]


@dataclass(frozen=True)
class DeviceKind:
    kind: str
    config: type[ConfigModel]
    build: Callable[[Any, str, Component], Any]
    doc: str = ""


_KINDS: dict[str, DeviceKind] = {}


def register_kind(kind: str, config: type[ConfigModel], build: Callable[[Any, str, Component], Any], doc: str = "") -> None:
    """Register a device kind (called once by each device module at import)."""
    _KINDS[kind] = DeviceKind(kind, config, build, doc)


def device_kinds() -> dict[str, DeviceKind]:
    import simulator.devices  # noqa: F401  (imports every device module, which register)

    return dict(_KINDS)


def models_dir() -> Path:
    """The hardware library: $SIMRUN_MODELS, else ``models/`` at the project root."""
    env = os.environ.get("SIMRUN_MODELS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "models"


def deep_merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = copy.deepcopy(base)
        for k, v in over.items():
            out[k] = deep_merge(out[k], v) if k in out else copy.deepcopy(v)
        return out
    return copy.deepcopy(over)


def profile_path(ref: str, base_dir: Path | None = None) -> Path:
    p = Path(ref)
    if p.suffix in (".yaml", ".yml") and (p.is_absolute() or (base_dir and (base_dir / p).exists())):
        return p if p.is_absolute() else base_dir / p  # type: ignore[operator]
    root = models_dir()
    for cand in (root / f"{ref}.yaml", root / f"{ref}.yml", root / ref):
        if cand.is_file():
            return cand
    raise ConfigError(f"no profile {ref!r} in {root} (looked for {ref}.yaml)", field="profile")


def load_profile(ref: str, _seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """Load a profile, following ``extends``; returns {kind, name, params, sources, file}."""
    if ref in _seen:
        raise ConfigError(f"profile inheritance cycle: {' -> '.join((*_seen, ref))}", field="extends")
    path = profile_path(ref)
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError("a profile must be a mapping with kind/params/sources", source=str(path))
    allowed = {"kind", "name", "description", "extends", "params", "sources", "notes", "provenance"}
    extra = set(data) - allowed
    if extra:
        raise ConfigError(f"unknown key {sorted(extra)[0]!r} in profile (allowed: {sorted(allowed)})", source=str(path), field=sorted(extra)[0])
    params = data.get("params") or {}
    sources = dict(data.get("sources") or {})
    kind = data.get("kind")
    if "extends" in data:
        base = load_profile(str(data["extends"]), (*_seen, ref))
        params = deep_merge(base["params"], params)
        sources = {**base["sources"], **sources}
        kind = kind or base["kind"]
    if not kind:
        raise ConfigError("profile has no 'kind'", source=str(path), field="kind")
    return {
        "kind": kind,
        "name": data.get("name", ref),
        "description": data.get("description", ""),
        "params": params,
        "sources": sources,
        "file": str(path),
        "provenance": data.get("provenance"),
    }


def resolve_params(spec: dict[str, Any], source: str | None = None, field: str = "") -> tuple[DeviceKind, Any, str]:
    """From an experiment's device spec ({profile|kind, params}) to (kind, validated config, origin)."""
    kinds = device_kinds()
    params: dict[str, Any] = {}
    origin = source or "<inline>"
    kind_name = spec.get("kind")
    if spec.get("profile"):
        try:
            prof = load_profile(str(spec["profile"]))
        except ConfigError as e:
            raise ConfigError(e.message, source=e.source or source, field=f"{field}.profile" if field else "profile") from None
        params = prof["params"]
        origin = prof["file"]
        if kind_name and kind_name != prof["kind"]:
            raise ConfigError(f"kind {kind_name!r} does not match the profile's kind {prof['kind']!r}", source=source, field=f"{field}.kind")
        kind_name = prof["kind"]
    if not kind_name:
        raise ConfigError("a device needs a 'profile' or a 'kind'", source=source, field=field or None)
    if kind_name not in kinds:
        raise ConfigError(f"unknown device kind {kind_name!r} (known: {', '.join(sorted(kinds))})", source=source, field=f"{field}.kind" if field else "kind")
    if spec.get("params"):
        params = deep_merge(params, spec["params"])
    dk = kinds[kind_name]
    cfg = validate(dk.config, params, source=source if spec.get("params") else origin, prefix=f"{field}.params" if field else "params")
    return dk, cfg, origin


def build_device(spec: dict[str, Any], name: str, parent: Component, source: str | None = None, field: str = "") -> Any:
    dk, cfg, _ = resolve_params(spec, source, field)
    return dk.build(cfg, name, parent)

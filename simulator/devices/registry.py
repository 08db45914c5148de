"""Device kinds and hardware profiles.

A *kind* (``hdd``, ``ssd``, ``queue``, ``ceph_cluster``) pairs a frozen config model with a factory;
every kind is listed in one explicit table, :data:`KIND_TABLE` (nothing registers on import).
A *profile* is a YAML file under ``models/`` describing one real product::

    kind: hdd
    name: Seagate ST91000640NS
    extends: hdd/_base_7200_25in     # optional: another profile whose params are merged first
    params: { ...validated by the kind's config model... }
    sources: { dotted.param: "where the figure comes from (datasheet page, or fitted by which run)" }

Experiments refer to a profile by its name -- its path under ``models/`` without the extension
(``hdd/seagate_st91000640ns``) -- and may override parameters with ``params``. Names are looked up in
the user's profile directories first ($SIMRUN_USER_MODELS, else ~/.config/simrun/models), then in
the library; a user's own profile file can also be named by a relative path (``my_drive.yaml``),
resolved inside the directory of the file that names it. A name never leads outside its directory.
"""

from __future__ import annotations

import copy
import importlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.config.base import ConfigModel, load_yaml, validate
from simulator.engine import Component
from simulator.errors import ConfigError

__all__ = [
    "KIND_TABLE",
    "DeviceKind",
    "build_device",
    "deep_merge",
    "device_kind",
    "device_kinds",
    "load_profile",
    "models_dir",
    "profile_roots",
    "resolve_params",
    "user_models_dirs",
]


@dataclass(frozen=True)
class DeviceKind:
    kind: str
    config: type[ConfigModel]
    build: Callable[[Any, str, Component], Any]
    doc: str = ""


#: THE table of device kinds: kind -> (module, config class, factory, one-line description).
#: Modules are imported when a kind is first asked for; nothing registers itself on import.
KIND_TABLE: dict[str, tuple[str, str, str, str]] = {
    "queue": (
        "simulator.devices.simple",
        "QueueDeviceConfig",
        "QueueDevice",
        "FCFS multi-server queue with a service-time distribution",
    ),
    "hdd": (
        "simulator.devices.hdd",
        "HDDConfig",
        "build_hdd",
        "hard disk drive: zones, seek curve, rotation, SPTF queue, write cache, look-ahead, dual actuator",
    ),
    "ssd": (
        "simulator.devices.ssd",
        "SSDConfig",
        "build",
        "NAND SSD: host interface, DRAM write buffer with/without power-loss protection, page-mapped FTL "
        "with greedy GC, multi-channel/die/plane flash back end",
    ),
    "raid": (
        "simulator.devices.raid",
        "RaidConfig",
        "build_raid",
        "RAID volume (jbod, 0, 1, 10, 5, 6) over member devices of any kind: chunk mapping, left-symmetric parity, "
        "RMW/reconstruct/full-stripe writes, degraded mode, controller write-back cache and read-ahead, SAS path",
    ),
    "flash_read_cache": (
        "simulator.devices.flashcache",
        "FlashReadCacheConfig",
        "build_flash_read_cache",
        "flash read cache (on-drive TurboBoost or host-side) in front of any device: admission by repeated "
        "access, segmented LRU, NAND dies/channels, promotion cost, invalidation by writes",
    ),
    "ceph_cluster": (
        "simulator.ceph.cluster",
        "ClusterConfig",
        "build_cluster",
        "Ceph cluster: hosts, OSDs (BlueStore) on devices, replicated pools, RBD images as devices",
    ),
}

_LOADED: dict[str, DeviceKind] = {}


def device_kind(kind: str) -> DeviceKind:
    """The kind ``kind`` from :data:`KIND_TABLE` (its module imported on first use)."""
    dk = _LOADED.get(kind)
    if dk is None:
        module, cfg, build, doc = KIND_TABLE[kind]
        mod = importlib.import_module(module)
        dk = DeviceKind(kind, getattr(mod, cfg), getattr(mod, build), doc)
        _LOADED[kind] = dk
    return dk


def device_kinds() -> dict[str, DeviceKind]:
    """Every device kind of :data:`KIND_TABLE`."""
    return {k: device_kind(k) for k in KIND_TABLE}


def models_dir() -> Path:
    """The hardware library: $SIMRUN_MODELS, else ``models/`` at the project root."""
    env = os.environ.get("SIMRUN_MODELS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "models"


def user_models_dirs() -> list[Path]:
    """The user's own profile directories, searched before the library (which stays searched):
    $SIMRUN_USER_MODELS (one or more directories separated by ``os.pathsep``), else
    ``$XDG_CONFIG_HOME/simrun/models`` (``~/.config/simrun/models``) when it exists."""
    env = os.environ.get("SIMRUN_USER_MODELS")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    d = Path(base) / "simrun" / "models"
    return [d] if d.is_dir() else []


def profile_roots() -> list[Path]:
    """Where profile names are looked up, in order: the user's directories, then the library."""
    return [*user_models_dirs(), models_dir()]


def deep_merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = copy.deepcopy(base)
        for k, v in over.items():
            out[k] = deep_merge(out[k], v) if k in out else copy.deepcopy(v)
        return out
    return copy.deepcopy(over)


#: a profile name: path components of letters, digits, ``_ - . +``, none starting with a dot
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+\-]*(/[A-Za-z0-9_][A-Za-z0-9_.+\-]*)*$")


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):
        return False


def is_profile_name(ref: str) -> bool:
    return isinstance(ref, str) and len(ref) <= 200 and bool(_NAME_RE.match(ref))


def profile_path(ref: str, base_dir: Path | None = None, *, confined: bool = True) -> Path:
    """The file of profile ``ref``.

    * A *name* (``hdd/seagate_st91000640ns``) is looked up in :func:`profile_roots` -- the user's
      profile directories first, then the library -- and must stay inside the directory it is found
      in (no ``..``, no absolute names, no symlinks leading out).
    * A *file* (``my_drive.yaml``) is the user's own profile. ``confined`` (a reference written in a
      file): a relative path inside ``base_dir``, the directory of the file that refers to it.
      Not confined (given on the command line or through the Python API): any path.
    """
    if not isinstance(ref, str) or not ref.strip():
        raise ConfigError("a profile reference must be a non-empty name", field="profile")
    p = Path(ref)
    if ref.endswith((".yaml", ".yml")):
        if not confined:
            if p.is_file():
                return p
        else:
            cand = base_dir / p if base_dir is not None else None
            if cand is None or "\\" in ref or not _inside(cand, base_dir):  # type: ignore[arg-type]
                raise ConfigError(
                    "a profile file named in a file must be a relative path inside that file's directory "
                    "(no '..' leading out, not absolute); put the profile in your profile directory "
                    "($SIMRUN_USER_MODELS) and refer to it by name",
                    field="profile",
                )
            if cand.is_file():
                return cand
    if not is_profile_name(ref) or ".." in p.parts:
        raise ConfigError(
            "not a profile name (letters, digits, _ - . + and '/' between components, e.g. hdd/seagate_st91000640ns)",
            field="profile",
        )
    roots = profile_roots()
    for root in roots:
        for cand in (root / f"{ref}.yaml", root / f"{ref}.yml", root / ref):
            if cand.is_file() and _inside(cand, root):
                return cand
    where = " or ".join(str(r) for r in roots)
    raise ConfigError(f"no profile {ref!r} in {where} (looked for {ref}.yaml)", field="profile")


_PROFILE_KEYS = {"kind", "name", "description", "extends", "params", "sources", "notes", "provenance"}


def load_profile(
    ref: str, _seen: tuple[str, ...] = (), *, base_dir: Path | None = None, confined: bool = False
) -> dict[str, Any]:
    """Load a profile, following ``extends``; returns {kind, name, params, sources, file}.

    ``confined``: ``ref`` was written in a file in ``base_dir`` (see :func:`profile_path`). An
    ``extends`` is always confined: a name, or a relative file inside the profile's directory."""
    path = profile_path(ref, base_dir, confined=confined)
    key = str(path.resolve())
    if key in _seen:
        raise ConfigError("profile inheritance cycle (a profile extends itself)", source=str(path), field="extends")
    if len(_seen) >= 32:
        raise ConfigError("profile inheritance deeper than 32 levels", source=str(path), field="extends")
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError("a profile must be a mapping with kind/params/sources", source=str(path))
    extra = sorted(str(k) for k in set(data) - _PROFILE_KEYS)
    if extra:
        raise ConfigError(
            f"unknown key in profile (allowed: {sorted(_PROFILE_KEYS)})", source=str(path), field=extra[0][:60]
        )
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise ConfigError("params must be a mapping of parameters", source=str(path), field="params")
    params = _anchor_nested_profiles(params, path.parent, str(path), "params", confined=True)
    sources = data.get("sources") or {}
    if not isinstance(sources, dict):
        raise ConfigError("sources must be a mapping of parameter -> where the figure comes from", source=str(path), field="sources")
    sources = dict(sources)
    kind = data.get("kind")
    if kind is not None and not isinstance(kind, str):
        raise ConfigError("kind must be a device kind name", source=str(path), field="kind")
    if "extends" in data:
        ext = data["extends"]
        if not isinstance(ext, str):
            raise ConfigError("extends must be a profile name", source=str(path), field="extends")
        try:
            base = load_profile(ext, (*_seen, key), base_dir=path.parent, confined=True)
        except ConfigError as e:
            if e.source:
                raise
            raise ConfigError(e.message, source=str(path), field="extends") from None
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


def _anchor_nested_profiles(params: Any, base_dir: Path | None, source: str | None, where: str, *, confined: bool) -> Any:
    """A copy of ``params`` in which every nested ``profile:`` that names a file (a cluster's drives,
    DB devices, RAID members) is anchored to ``base_dir``, the directory of the file that wrote it,
    so it resolves the same from any working directory. ``confined``: the file must also lie inside
    that directory (a name in the library is left as it is)."""
    if base_dir is None:
        return params
    if isinstance(params, dict):
        out: dict[Any, Any] = {}
        for k, v in params.items():
            sub = f"{where}.{k}"
            if k == "profile" and isinstance(v, str):
                is_file = v.endswith((".yaml", ".yml"))
                if confined:
                    try:
                        path = profile_path(v, base_dir, confined=True)
                    except ConfigError as e:
                        raise ConfigError(e.message, source=source, field=sub) from None
                    if is_file:
                        v = str(path.resolve())
                elif is_file and not Path(v).is_absolute():
                    v = str((base_dir / v).resolve())
                out[k] = v
            else:
                out[k] = _anchor_nested_profiles(v, base_dir, source, sub, confined=confined)
        return out
    if isinstance(params, list):
        return [_anchor_nested_profiles(v, base_dir, source, f"{where}.{i}", confined=confined) for i, v in enumerate(params)]
    return params


def _base_dir_of(source: str | None) -> Path | None:
    if not source:
        return None
    p = Path(source)
    return p.parent if p.suffix in (".yaml", ".yml") and p.is_file() else None


def resolve_params(
    spec: dict[str, Any], source: str | None = None, field: str = "", *, trusted: bool = False
) -> tuple[DeviceKind, Any, str]:
    """From a device spec ({profile|kind, params}) to (kind, validated config, origin).

    When the spec was written in a file ``source``, a profile file it names must lie in that file's
    directory. ``trusted`` (the command line) or no source file (the Python API): any profile file path."""
    if not isinstance(spec, dict):
        raise ConfigError("a device spec is a mapping ({profile: ..., params: {...}})", source=source, field=field or None)
    kinds = KIND_TABLE
    params: dict[str, Any] = {}
    origin = source or "<inline>"
    kind_name = spec.get("kind")
    if spec.get("profile"):
        try:
            base_dir = _base_dir_of(source)
            prof = load_profile(str(spec["profile"]), base_dir=base_dir, confined=not trusted and base_dir is not None)
        except ConfigError as e:
            if e.source:  # the problem is inside a profile file: its own field
                raise
            raise ConfigError(e.message, source=source, field=f"{field}.profile" if field else "profile") from None
        params = prof["params"]
        origin = prof["file"]
        if kind_name and kind_name != prof["kind"]:
            raise ConfigError(f"kind {kind_name!r} does not match the profile's kind {prof['kind']!r}", source=source, field=f"{field}.kind")
        kind_name = prof["kind"]
    if not kind_name:
        raise ConfigError("a device needs a 'profile' or a 'kind'", source=source, field=field or None)
    if not isinstance(kind_name, str) or kind_name not in kinds:
        raise ConfigError(f"unknown device kind (known: {', '.join(sorted(kinds))})", source=source, field=f"{field}.kind" if field else "kind")
    if spec.get("params"):
        if not isinstance(spec["params"], dict):
            raise ConfigError("params must be a mapping of parameters", source=source, field=f"{field}.params" if field else "params")
        own = _anchor_nested_profiles(
            spec["params"], _base_dir_of(source), source, f"{field}.params" if field else "params", confined=not trusted
        )
        params = deep_merge(params, own)
    dk = device_kind(kind_name)
    cfg = validate(dk.config, params, source=source if spec.get("params") else origin, prefix=f"{field}.params" if field else "params")
    return dk, cfg, origin


def build_device(
    spec: dict[str, Any], name: str, parent: Component, source: str | None = None, field: str = "", *, trusted: bool = False
) -> Any:
    dk, cfg, _ = resolve_params(spec, source, field, trusted=trusted)
    return dk.build(cfg, name, parent)

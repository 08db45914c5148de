"""Numba's on-disk cache, kept honest across modules.

Numba's ``cache=True`` keys a cached function on its *own* source file (its timestamp and size).
A compiled function that calls a kernel from another module (the compiled core calling the HDD
kernels, CRUSH calling the hash, the statistics calling the HDR index) inlines that kernel, and a
change to the callee's file alone leaves the caller's cached machine code in use: results silently
come from the old kernel. :func:`invalidate_stale` closes that gap: a module calls it before it
defines its jitted functions, naming the modules it calls into; when the digest of those sources
differs from the one recorded beside the cache, the module's cached entries are removed and numba
recompiles them.

Where the cache lives: numba writes it to ``__pycache__`` beside the module when that is writable,
or under ``$NUMBA_CACHE_DIR`` (numba's hashed sub-directory per source directory); both are checked.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["invalidate_stale"]


def _cache_dirs(module_file: Path) -> list[Path]:
    dirs = [module_file.parent / "__pycache__"]
    try:  # numba's own rule for $NUMBA_CACHE_DIR (a hashed sub-directory per source directory)
        from numba.core import config
        from numba.core.caching import UserProvidedCacheLocator

        if config.CACHE_DIR:
            dirs.append(Path(config.CACHE_DIR) / UserProvidedCacheLocator.get_suitable_cache_subpath(str(module_file)))
    except (ImportError, AttributeError):  # another numba layout: the in-tree cache is still handled
        pass
    return dirs


def invalidate_stale(module_file: str, *dependencies: str) -> bool:
    """Remove ``module_file``'s numba cache entries if it or a dependency changed since they were
    written. ``dependencies``: the files of the modules whose jitted functions it calls. Returns
    whether anything was removed. Never raises for a cache it cannot read or write (numba then
    compiles in memory as usual)."""
    mod = Path(module_file)
    h = hashlib.sha256()
    for f in (mod, *map(Path, dependencies)):
        try:
            h.update(f.read_bytes())
        except OSError:
            return False
    digest = h.hexdigest()
    removed = False
    for d in _cache_dirs(mod):
        stamp = d / f"{mod.stem}.sources.sha256"
        try:
            if stamp.read_text() == digest:
                continue
        except OSError:
            pass
        try:
            if d == mod.parent / "__pycache__":
                d.mkdir(exist_ok=True)
            if not d.is_dir():
                continue
            for entry in d.glob(f"{mod.stem}.*.nb[ic]"):
                entry.unlink(missing_ok=True)
                removed = True
            stamp.write_text(digest)
        except OSError:
            continue
    return removed

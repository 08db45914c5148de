"""simulator.nbcache: a compiled function's cache entries go when a module it inlines changes."""

from __future__ import annotations

from simulator.nbcache import invalidate_stale


def _setup(tmp_path):
    mod, dep = tmp_path / "loop.py", tmp_path / "kernels.py"
    mod.write_text("x = 1\n")
    dep.write_text("y = 1\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    return mod, dep, cache


def _plant(cache):
    for name in ("loop.run-10.py311.nbi", "loop.run-10.py311.1.nbc"):
        (cache / name).write_bytes(b"stale")
    (cache / "kernels.choose-5.py311.nbi").write_bytes(b"other module")


def test_cache_entries_survive_while_sources_are_unchanged_and_go_when_a_dependency_changes(tmp_path):
    mod, dep, cache = _setup(tmp_path)
    _plant(cache)
    assert invalidate_stale(str(mod), str(dep)) is True  # first sight: no stamp, entries of unknown sources go
    assert list(cache.glob("loop.*.nb[ic]")) == [] and (cache / "loop.sources.sha256").is_file()
    _plant(cache)
    assert invalidate_stale(str(mod), str(dep)) is False  # same sources: kept
    assert len(list(cache.glob("loop.*.nb[ic]"))) == 2
    dep.write_text("y = 2\n")  # only the callee changed
    assert invalidate_stale(str(mod), str(dep)) is True
    assert list(cache.glob("loop.*.nb[ic]")) == []
    assert (cache / "kernels.choose-5.py311.nbi").exists()  # another module's entries are not touched


def test_unreadable_dependency_changes_nothing(tmp_path):
    mod, _dep, cache = _setup(tmp_path)
    _plant(cache)
    assert invalidate_stale(str(mod), str(tmp_path / "missing.py")) is False
    assert len(list(cache.glob("loop.*.nb[ic]"))) == 2


def test_numba_cache_dir_is_handled_where_numba_puts_it(tmp_path, monkeypatch):
    """With $NUMBA_CACHE_DIR (CI sets it) numba keeps the entries in a hashed sub-directory."""
    from numba.core import config
    from numba.core.caching import UserProvidedCacheLocator

    mod, dep, _ = _setup(tmp_path)
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "nbc"))
    where = tmp_path / "nbc" / UserProvidedCacheLocator.get_suitable_cache_subpath(str(mod))
    where.mkdir(parents=True)
    _plant(where)
    invalidate_stale(str(mod), str(dep))
    _plant(where)
    assert invalidate_stale(str(mod), str(dep)) is False
    dep.write_text("y = 3\n")
    assert invalidate_stale(str(mod), str(dep)) is True
    assert list(where.glob("loop.*.nb[ic]")) == []

"""The compiled CRUSH mapper gives the same PG -> OSD maps as the Python implementation it replaced.

The digests below were computed with that implementation (simulator/ceph/placement.py as of commit
668dcfc: straw2 and crush_choose_firstn in pure Python) on layouts covering one host and 42 hosts
(the croit host repeated: 1,008 OSDs), device-class shadow trees, failure domains host and osd,
uneven weights with a zero-weight OSD, and a map with as many replicas as hosts where retries run
out (short acting sets).
"""

from __future__ import annotations

import hashlib
import json

import pytest

from simulator.ceph.placement import CrushMap, CrushOsd, map_pool


def _layout(name):
    if name == "croit":  # 1 host, 12 mach2 (7 TiB) + 12 hdd (5 TiB)
        osds = [CrushOsd(i, 6.37 if i < 12 else 4.55, "mach2" if i < 12 else "hdd", 0) for i in range(24)]
        return CrushMap(["h0"], osds)
    if name == "croit42":
        osds = []
        for h in range(42):
            for j in range(24):
                osds.append(CrushOsd(len(osds), 6.37 if j < 12 else 4.55, "mach2" if j < 12 else "hdd", h))
        return CrushMap([f"h{h}" for h in range(42)], osds)
    if name == "mixed":  # uneven hosts and weights, a zero-weight OSD, two classes
        osds = []
        for h in range(7):
            for j in range(3 + h % 4):
                w = 0.0 if (h, j) == (2, 1) else 1.0 + 0.37 * ((h * 5 + j) % 6)
                osds.append(CrushOsd(len(osds), w, "ssd" if (h + j) % 3 == 0 else "hdd", h))
        return CrushMap([f"h{h}" for h in range(7)], osds)
    if name == "tight":  # as many replicas as hosts: retries and collisions
        osds = [CrushOsd(i, 1.0 + (i % 3), "hdd", i // 2) for i in range(8)]
        return CrushMap([f"h{h}" for h in range(4)], osds, choose_total_tries=5)
    raise KeyError(name)


CASES = [
    (("croit", 1, 256, 3, "mach2", "osd"), "20b3e8603f7d6978", 768),
    (("croit", 2, 256, 3, "hdd", "osd"), "bea62e6bf98921b4", 768),
    (("croit", 3, 1000, 2, None, "osd"), "1f0669aa8a1d2287", 2000),
    (("croit42", 1, 10752, 3, "mach2", "host"), "819b3a3340509845", 32256),
    (("croit42", 2, 4096, 3, "hdd", "osd"), "9a94fd112a89f756", 12288),
    (("mixed", 5, 512, 3, None, "host"), "77cea02a6ffe47b2", 1536),
    (("mixed", 6, 300, 2, "ssd", "host"), "50149df1c6e8e21e", 600),
    (("mixed", 7, 333, 4, "hdd", "osd"), "be3e88254808835a", 1332),
    (("tight", 9, 512, 4, None, "host"), "87391ed7ab6483ff", 1807),
    (("tight", 10, 128, 6, None, "host"), "1a7aa28fc3b429c3", 471),
]


@pytest.mark.parametrize(("case", "digest", "replicas"), CASES, ids=[f"{c[0][0]}-{c[0][1]}" for c in CASES])
def test_maps_equal_the_python_mapper(case, digest, replicas) -> None:
    name, *args = case
    acting = map_pool(_layout(name), *args)
    assert sum(len(a) for a in acting) == replicas
    assert hashlib.sha256(json.dumps(acting).encode()).hexdigest()[:16] == digest


def test_do_rule_agrees_with_map_pool() -> None:
    """One PG through ``do_rule`` (the same compiled kernel) matches its row of ``map_pool``."""
    from simulator.ceph.hashing import ceph_stable_mod, crush_hash32_2, pg_num_mask

    crush = _layout("mixed")
    acting = map_pool(crush, 5, 512, 3, None, "host")
    mask = pg_num_mask(512)
    for ps in (0, 1, 77, 511):
        assert crush.do_rule(crush_hash32_2(ceph_stable_mod(ps, 512, mask), 5), 3, None, "host") == acting[ps]


#: (layout, pool id, pg_num, size, device class, failure domain, max_deviation) -> (moves, digest of
#: [moves, balanced acting sets]) from balance_upmap as of commit e695ae0 (re-sorting every OSD each
#: iteration); the incremental orders must give the same moves in the same order
UPMAP_CASES = [
    (("croit", 1, 256, 3, "mach2", "osd", 0), 32, "5dfc8d1a445dd2e8"),
    (("croit", 2, 256, 3, "hdd", "osd", 1), 54, "d3900acc0377c7d4"),
    (("croit42", 1, 10752, 3, "mach2", "host", 1), 1572, "9b524c5baefb8149"),
    (("croit42", 2, 10752, 3, "hdd", "host", 1), 1712, "6e000db690550727"),
    (("mixed", 5, 512, 3, None, "host", 0), 56, "cd2b5b48cd7150b6"),
    (("mixed", 6, 300, 2, "ssd", "host", 1), 1, "fb7d29df58b17c59"),
    (("mixed", 7, 333, 4, "hdd", "osd", 0), 38, "506f4e010c1249f9"),
    (("tight", 9, 512, 4, None, "host", 0), 5, "b7a625fb02080b65"),
]


@pytest.mark.parametrize(("case", "n_moves", "digest"), UPMAP_CASES, ids=[f"{c[0][0]}-{c[0][1]}" for c in UPMAP_CASES])
def test_upmap_balancer_moves_unchanged(case, n_moves, digest) -> None:
    from simulator.ceph.placement import balance_upmap

    name, pid, pg_num, size, dc, fd, max_dev = case
    crush = _layout(name)
    acting = map_pool(crush, pid, pg_num, size, dc, fd)
    moves = balance_upmap(crush, acting, dc, fd, max_dev)
    assert len(moves) == n_moves
    assert hashlib.sha256(json.dumps([moves, acting]).encode()).hexdigest()[:16] == digest


def test_group_stable_is_a_stable_argsort() -> None:
    import numpy as np

    from simulator.ceph.placement import group_stable

    rng = np.random.default_rng(5)
    for dtype, n, k in ((np.int16, 5000, 40), (np.int32, 3000, 1100), (np.int16, 0, 3)):
        keys = rng.integers(-1, k, n).astype(dtype)
        order, counts, starts = group_stable(keys, k)
        assert np.array_equal(order, np.argsort(keys, kind="stable"))
        assert np.array_equal(counts, np.bincount(keys.astype(np.int64) + 1, minlength=k + 1))
        assert np.array_equal(starts, np.cumsum(counts) - counts)

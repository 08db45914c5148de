"""CRUSH placement: determinism, spread, device classes, failure domains, balancer, errors."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.ceph.config import ClusterConfig
from simulator.ceph.placement import CrushMap, CrushOsd, balance_upmap, map_pool
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation
from simulator.errors import ConfigError


def _crush(n_hosts: int, per_host: int, classes: tuple[str, ...] = ("hdd",), weight=lambda i: 1.0) -> CrushMap:
    osds = []
    for h in range(n_hosts):
        for k in range(per_host):
            i = h * per_host + k
            osds.append(CrushOsd(i, weight(i), classes[k % len(classes)], h))
    return CrushMap([f"h{h}" for h in range(n_hosts)], osds)


def test_placement_is_deterministic_and_distinct() -> None:
    a = map_pool(_crush(4, 6), 3, 512, 3, None, "host")
    b = map_pool(_crush(4, 6), 3, 512, 3, None, "host")
    assert a == b
    assert all(len(s) == 3 and len(set(s)) == 3 for s in a)
    # another pool id salts the seed: a different mapping
    assert map_pool(_crush(4, 6), 4, 512, 3, None, "host") != a


def test_failure_domain_host_and_device_class() -> None:
    crush = _crush(5, 6, classes=("hdd", "ssd"))
    acting = map_pool(crush, 1, 1024, 3, "ssd", "host")
    cls = {o.id: o.device_class for o in crush.osds}
    host = {o.id: o.host for o in crush.osds}
    for s in acting:
        assert len(s) == 3
        assert all(cls[o] == "ssd" for o in s)
        assert len({host[o] for o in s}) == 3
    # every ssd OSD is used
    assert {o for s in acting for o in s} == {o.id for o in crush.osds if o.device_class == "ssd"}


def test_spread_is_binomial_like_without_balancer() -> None:
    n, pg_num, size = 24, 2048, 3
    acting = map_pool(_crush(1, n), 1, pg_num, size, None, "osd")
    counts = np.array([Counter(o for s in acting for o in s)[i] for i in range(n)])
    p = size / n
    mean, var = pg_num * p, pg_num * p * (1 - p)
    assert counts.sum() == pg_num * size
    assert np.all(np.abs(counts - mean) < 4.5 * np.sqrt(var))
    # the sample variance is that of independent draws: chi-square(23) 99.99% band ~ [0.28, 2.4]
    ratio = counts.var(ddof=1) / var
    assert 0.25 < ratio < 2.5, ratio


def test_weights_are_respected() -> None:
    crush = _crush(1, 12, weight=lambda i: 2.0 if i < 6 else 1.0)
    acting = map_pool(crush, 1, 4096, 1, None, "osd")
    c = Counter(s[0] for s in acting)
    heavy = sum(c[i] for i in range(6))
    light = sum(c[i] for i in range(6, 12))
    assert heavy / light == pytest.approx(2.0, rel=0.08)


def test_upmap_balancer_evens_pg_counts() -> None:
    crush = _crush(1, 12, classes=("mach2",))
    acting = map_pool(crush, 1, 256, 3, "mach2", "osd")
    before = Counter(o for s in acting for o in s)
    assert max(before.values()) - min(before.values()) > 4  # CRUSH alone is uneven
    moves = balance_upmap(crush, acting, "mach2", "osd", max_deviation=0)
    after = Counter(o for s in acting for o in s)
    assert set(after.values()) == {64}  # croit: 64 PGs on every OSD
    assert moves and all(len(set(s)) == 3 for s in acting)


def test_upmap_balancer_keeps_failure_domain() -> None:
    crush = _crush(4, 3)
    acting = map_pool(crush, 2, 128, 3, None, "host")
    balance_upmap(crush, acting, None, "host", max_deviation=1)
    host = {o.id: o.host for o in crush.osds}
    assert all(len({host[o] for o in s}) == 3 for s in acting)
    c = Counter(o for s in acting for o in s)
    target = 128 * 3 / 12
    assert max(abs(v - target) for v in c.values()) <= 1


# ----------------------------------------------------------------------------- via the cluster
def _params(**over) -> dict:
    p = {
        "hosts": [
            {
                "name": "h",
                "drives": [
                    {"count": 3, "device": {"kind": "queue", "params": {"capacity": "100GiB"}}, "device_class": "hdd"}
                ],
            }
        ],
        "pools": [{"name": "p", "size": 3, "pg_num": 16, "rule": {"device_class": "hdd", "failure_domain": "osd"}}],
        "images": [{"pool": "p", "name": "img", "size": "1GiB"}],
    }
    p.update(over)
    return p


def _build(params: dict) -> Cluster:
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": params}, source="test.yaml")
    return Cluster(cfg, "cluster", Simulation(1).root)


def test_size_larger_than_eligible_osds_is_config_error() -> None:
    p = _params()
    p["pools"][0]["size"] = 4
    with pytest.raises(ConfigError) as e:
        _build(p)
    assert e.value.field == "params.pools.0.size"
    assert "4 > 3 OSDs" in e.value.message


def test_size_larger_than_hosts_is_config_error() -> None:
    p = _params()
    p["pools"][0]["rule"]["failure_domain"] = "host"
    with pytest.raises(ConfigError) as e:
        _build(p)
    assert e.value.field == "params.pools.0.size"
    assert "hosts" in e.value.message


def test_cluster_placement_independent_of_seed_and_reports_counts() -> None:
    p = _params()
    p["balancer"] = {"mode": "upmap", "max_deviation": 0}
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": p})
    a = Cluster(cfg, "c", Simulation(1).root)
    b = Cluster(cfg, "c", Simulation(99).root)
    assert [[o.id for o in pg.acting] for pg in a.pools["p"].pgs] == [[o.id for o in pg.acting] for pg in b.pools["p"].pgs]
    st = a.stats()
    assert [o["pgs"] for o in st["osds"]] == [16, 16, 16]
    assert sum(o["primary_pgs"] for o in st["osds"]) == 16
    img = a.image("p", "img")
    # objects -> PGs: the image's object names hash as Ceph's do
    from simulator.ceph.hashing import ceph_stable_mod, ceph_str_hash_rjenkins, pg_num_mask

    for objno in (0, 1, 100, 255):
        h = ceph_str_hash_rjenkins(img.object_name(objno))
        assert img.obj_ps[objno] == ceph_stable_mod(h, 16, pg_num_mask(16))


def test_cluster_config_validation_through_registry() -> None:
    p = _params()
    p["pools"][0]["pg_num"] = 0
    with pytest.raises(ConfigError) as e:
        resolve_params({"kind": "ceph_cluster", "params": p}, source="x.yaml")
    assert e.value.field == "params.pools.0.pg_num"
    p = _params()
    p["osd"] = {"op_num_shard": 5}
    with pytest.raises(ConfigError) as e:
        resolve_params({"kind": "ceph_cluster", "params": p}, source="x.yaml")
    assert e.value.field == "params.osd.op_num_shard"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda p: p["pools"][0]["rule"].__setitem__("device_class", "ssd"), "params.pools.0.rule.device_class"),
        (lambda p: p["images"][0].__setitem__("pool", "nope"), "params.images.0.pool"),
        (lambda p: p["pools"][0].__setitem__("min_size", 4), "params.pools.0.min_size"),
        (lambda p: p["hosts"][0]["drives"][0].__setitem__("split", "luns"), "params.hosts.0.drives.0.split"),
        (lambda p: p["pools"].append(dict(p["pools"][0])), "params.pools.1.name"),
        (lambda p: p["images"][0].__setitem__("size", "1PiB"), "params.images.0.size"),
        (lambda p: p["hosts"][0]["drives"][0].__setitem__("device", {"kind": "nosuch"}), "params.hosts.0.drives.0.device.kind"),
        (
            lambda p: p["hosts"][0].__setitem__(
                "db_devices", {"device": {"kind": "queue", "params": {"capacity": "10GiB"}}, "db_size": "30GiB"}
            ),
            "params.hosts.0.db_devices.db_size",
        ),
    ],
)
def test_bad_cluster_descriptions_name_the_field(mutate, field) -> None:
    p = _params()
    mutate(p)
    with pytest.raises(ConfigError) as e:
        _build(p)
    assert e.value.field == field


def test_missing_image_is_config_error() -> None:
    cl = _build(_params())
    with pytest.raises(ConfigError) as e:
        cl.image("p", "other")
    assert "no RBD image 'other'" in e.value.message
    with pytest.raises(ConfigError):
        cl.image("q", "img")


def test_cluster_config_schema_documents_every_field() -> None:
    def walk(model, seen=()):
        for name, f in model.model_fields.items():
            assert f.description, f"{model.__name__}.{name} has no description"
            ann = f.annotation
            for sub in getattr(ann, "__args__", (ann,)):
                inner = getattr(sub, "__args__", (sub,))
                for t in inner:
                    if isinstance(t, type) and hasattr(t, "model_fields") and t not in seen:
                        walk(t, (*seen, t))

    walk(ClusterConfig)

"""Clients: the kernel RBD client's block layer in front of an image, several client hosts, a client
colocated on an OSD host."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation
from simulator.errors import ConfigError

sys.path.insert(0, str(Path(__file__).parent))
from fio_drive import ClosedLoop


def _q() -> dict:
    return {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1, "service": {"dist": "exponential", "mean": "2ms"}}}


def _params(**kw) -> dict:
    p = {
        "hosts": [{"name": "h", "count": 3, "cpu": {"cores": 8}, "drives": [{"count": 2, "device": _q()}]}],
        "pools": [{"name": "p", "size": 3, "pg_num": 32}],
        "images": [{"pool": "p", "name": "img", "size": "2GiB"}],
    }
    p.update(kw)
    return p


def _cluster(params: dict, seed: int = 1) -> tuple[Simulation, Cluster]:
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": params})
    sim = Simulation(seed)
    return sim, Cluster(cfg, "cluster", sim.root)


def test_krbd_block_layer_bounds_requests_at_the_image_and_queues_the_rest() -> None:
    sim, cl = _cluster(_params(krbd=[{"name": "rbd0", "pool": "p", "image": "img", "queue_depth": 32}]))
    img = cl.image("p", "img")
    dev = cl.krbd["rbd0"]
    assert dev.path == "cluster.rbd0"
    peak = [0]
    orig = img._start

    def start(req):
        peak[0] = max(peak[0], img._inside)
        orig(req)

    img._start = start
    r = ClosedLoop(sim, dev, qd=128, rw="randread", n_ios=4000, seed=1).run()
    assert r.completions_total == r.submitted
    assert peak[0] == 32  # the rbd driver never sees more than queue_depth requests
    st = dev.stats()["blocklayer"]
    assert st["queue_depth"] == 32 and st["tag_waits"] > 0
    # Little's law at the block device: 128 in flight = throughput x mean latency (the image sees 32)
    thr = r.completed / r.elapsed
    assert thr * r.lat.mean() == pytest.approx(128, rel=0.05)
    assert img.stats()["mean_queue_depth"] <= 32 + 1e-9


def test_krbd_adds_block_layer_wait_to_the_image_latency() -> None:
    """Same offsets at QD 64: through krbd (queue_depth 16) the requests wait in the block layer, so
    the mean latency is at least the image's own latency at 16 in flight."""
    lat = {}
    for via in ("image", "krbd"):
        sim, cl = _cluster(_params(krbd=[{"name": "rbd0", "pool": "p", "image": "img", "queue_depth": 16}]))
        dev = cl.krbd["rbd0"] if via == "krbd" else cl.image("p", "img")
        r = ClosedLoop(sim, dev, qd=64 if via == "krbd" else 16, rw="randread", n_ios=3000, seed=2).run()
        lat[via] = r.lat.mean()
    # 64 in flight, 16 served at a time at the same rate: about 4x the latency of 16 in flight
    assert lat["krbd"] == pytest.approx(4 * lat["image"], rel=0.15)


def test_images_on_several_client_hosts_use_their_own_cpu_and_network() -> None:
    p = _params(
        clients=[{"name": "c2", "cpu": {"cores": 2}}, {"name": "onosd", "host": "h1"}],
        images=[{"pool": "p", "name": "a", "size": "1GiB"}, {"pool": "p", "name": "b", "size": "1GiB", "client": "c2"},
                {"pool": "p", "name": "c", "size": "1GiB", "client": "onosd"}],
    )
    sim, cl = _cluster(p)
    assert cl.image("p", "b").client is cl.clients["c2"][0]
    assert cl.image("p", "c").client is cl.hosts[1]  # colocated: shares the OSD host's CPU pool
    ClosedLoop(sim, cl.image("p", "b"), qd=4, rw="randwrite", n_ios=500, seed=3).run()
    st = cl.stats()
    assert st["clients"]["c2"]["cpu_utilisation"] > 0.0
    assert st["client"]["cpu_utilisation"] == 0.0  # the default client did nothing
    assert st["clients"]["c2"]["nic_tx_utilisation"] > 0.0


def test_colocated_client_pays_loopback_not_network_to_local_primaries() -> None:
    _sim, cl = _cluster(_params(clients=[{"name": "onosd", "host": "h0"}],
                               images=[{"pool": "p", "name": "c", "size": "1GiB", "client": "onosd"}]))
    img = cl.image("p", "c")
    net = cl.net
    assert net.arrival(img.client, cl.hosts[0], 0.0, 0) == pytest.approx(cl.cfg.network.loopback_latency)


def test_client_and_krbd_errors_name_the_field() -> None:
    with pytest.raises(ConfigError) as e:
        _cluster(_params(images=[{"pool": "p", "name": "a", "size": "1GiB", "client": "nope"}]))
    assert e.value.field == "params.images.0.client"
    with pytest.raises(ConfigError) as e:
        _cluster(_params(krbd=[{"name": "rbd0", "pool": "p", "image": "nope"}]))
    assert e.value.field == "params.krbd.0.image"
    with pytest.raises(ConfigError) as e:
        _cluster(_params(clients=[{"name": "x", "host": "nohost"}]))
    assert e.value.field == "params.clients.0.host"


def test_a_direct_io_file_on_krbd_maps_onto_the_device_at_its_offset() -> None:
    sim, cl = _cluster(_params(krbd=[{"name": "rbd0", "pool": "p", "image": "img", "file_size": "64MiB", "file_offset": "8MiB"}]))
    f = cl.krbd["rbd0_file"]
    assert f.path == "cluster.rbd0_file" and f.capacity == 64 << 20
    seen = []
    img = cl.image("p", "img")
    orig = img._start
    img._start = lambda req: (seen.append(req.offset), orig(req))
    r = ClosedLoop(sim, f, qd=4, rw="randwrite", n_ios=300, seed=5).run()
    assert r.completions_total == r.submitted
    assert len(seen) == r.submitted and all((8 << 20) <= o < (72 << 20) for o in seen)
    with pytest.raises(ConfigError) as e:
        _cluster(_params(krbd=[{"name": "rbd0", "pool": "p", "image": "img", "file_size": "2GiB"}]))
    assert e.value.field == "params.krbd.0.file_size"

"""BlueStore's sequencers and *writing* buffers (deferred writes not applied yet) across compiled and
Python runs of one cluster.

Leftover of an earlier session: ``ceph_build.write_back_bluestore`` appended the pending deferred
writes' ranges to ``bs.writing``, which looked like unbounded growth over a chain of runs. It was
not (``ceph_dcache.write_back``, called after it in every path, rebuilds ``bs.writing`` from the
compiled table); the redundant appends are gone. Looking at it found a real defect instead:
``write_back_bluestore`` set the pending batch only on the sequencers of the compiled deferred
queue and left every other ``_Osr`` the Python model had as it was, so a sequencer whose batch the
compiled run had submitted kept its stale ``pending`` list (not in ``bs._dq``); the next Python
run's deferred write appended to it and ``_deferred_submit`` failed (KeyError) — on this chain,
in the Python run after two compiled ones. Now every sequencer starts from the compiled state.

After each run of a chain (compiled, Python, compiled, compiled, Python) every BlueStore's writing
buffers are exactly the ranges of its pending deferred transactions (a multiset: a duplicate or a
missing range fails), and a sequencer has a pending batch exactly when it is in the deferred queue.
"""

from __future__ import annotations

from collections import Counter

import numpy as np


def _pending(bs) -> Counter:
    u = bs.unit
    return Counter((t.op.objkey, t.op.off // u, (t.op.off + t.op.length - 1) // u + 1)
                   for osr in bs._dq for t in osr.pending)


def _writing(bs) -> Counter:
    return Counter((key, a, b) for key, runs in bs.writing.items() for a, b in runs)


def test_writing_buffers_equal_the_pending_deferred_writes_along_a_chain():
    from simulator.ceph.cluster import Cluster
    from simulator.core.ceph_bench import py_closed
    from simulator.core.ceph_build import run_closed, unsupported_writes
    from simulator.devices.registry import resolve_params
    from simulator.engine import Simulation
    from tests.test_core_ceph_ssd import _VARIANTS, _params

    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": _params(*_VARIANTS["sata-deadline"])})
    sim = Simulation(3)
    cl = Cluster(cfg, "cluster", sim.root)
    img = cl.image("p", "img")
    assert unsupported_writes(cl, [img]) is None
    rng = np.random.default_rng(5)
    pending = 0
    for engine in ("compiled", "python", "compiled", "compiled", "python"):
        n = 700
        req = (np.ones(n, np.int64), rng.integers(0, img.capacity // 4096, n) * 4096, np.full(n, 4096, np.int64))
        if engine == "compiled":
            run_closed(cl, img, *req, 16)
        else:
            py_closed(sim, img, *req, 16)
        for o in cl.osds:
            assert _writing(o.bs) == _pending(o.bs), (engine, o.id)
            assert all((x.pending is not None) == (x in o.bs._dq) for x in o.bs.osrs.values()), (engine, o.id)
            pending += sum(_pending(o.bs).values())
    assert pending > 0  # deferred writes were pending at the ends of runs (the check is not vacuous)

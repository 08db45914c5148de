"""The compiled scale cases: lazy_zeros keeps untouched pages out of memory, and the compiled
measurement runs the croit (fitted) cluster through the compiled Ceph core with the same results as
the Python model's run of the same job."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from resident import resident_bytes

from simulator.core.lazy import lazy_zeros


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="page residency is read from Linux's pagemap")
def test_lazy_zeros_holds_only_the_pages_written() -> None:
    a = lazy_zeros((48, 3, 65537, 2), np.int64)  # the write-cache indexes of 48 drives: 151 MB
    assert a.shape == (48, 3, 65537, 2) and a.dtype == np.int64 and a.flags.c_contiguous and a.flags.writeable
    a[:, :, -1, 1] = 8  # one header row per map, as wc_init_index writes
    # 144 pages (plus neighbours at most), not the 2 MiB huge pages np.zeros' memory would take
    # (measured before any read: a read maps the shared zero page, which pagemap shows as present)
    assert resident_bytes(a) <= 2 * 144 * 4096, resident_bytes(a)
    assert int(a.sum()) == 8 * 48 * 3 and int(a[:, :, :-1].sum()) == 0
    assert lazy_zeros(3, np.int32).tolist() == [0, 0, 0]  # below a page: np.zeros


def _strict_overcommit() -> bool:
    try:
        return Path("/proc/sys/vm/overcommit_memory").read_text().strip() == "2"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MAP_NORESERVE is the Linux behaviour checked here")
@pytest.mark.skipif(_strict_overcommit(), reason="vm.overcommit_memory = 2: the kernel ignores MAP_NORESERVE by design")
def test_lazy_zeros_reserves_more_address_space_than_the_machine_has_memory() -> None:
    """A worst-case table is address space, not memory: a 1,008-OSD cluster's write-cache indexes are one mapping of
    ~76 GB (the croit fit's 269 MiB persistent caches). Python's mmap module has MAP_NORESERVE only from 3.13; without
    the flag the kernel's overcommit heuristic refuses one mapping larger than the machine's memory (ENOMEM)."""
    import os

    from simulator.core.lazy import MAP_NORESERVE

    assert MAP_NORESERVE != 0
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    a = lazy_zeros((2 * mem // 8 + 1,), np.int64)  # twice the machine's memory
    a[0], a[-1] = 1, 2
    assert int(a[0]) == 1 and int(a[-1]) == 2 and resident_bytes(a[:1]) <= 2 * 4096


def test_compiled_measure_equals_python_run() -> None:
    from simulator.ceph.scale import COMPILED_REF, _fio, _fio_compiled, build_scaled
    from simulator.engine import Simulation

    out = []
    for compiled in (False, True):
        sim = Simulation(seed=3)
        cl = build_scaled(sim, 1, COMPILED_REF)
        img = cl.image("test-mach2", "test")
        if compiled:
            r = _fio_compiled(sim, img, 64, "randwrite", 1500, 5)
            assert r["state_cpu_s"] > 0 and r["call_cpu_s"] >= r["cpu_s"] and r["events"] > 1500
            (res,) = r["results"]
        else:
            (res,) = _fio(sim, img, 64, "randwrite", 1500, 5)
        # every OSD's onode cache in LRU order (the other pool's OSDs get no slots in the compiled state
        # and keep theirs; the run's get theirs back from the arrays) and its hit / miss counts
        onodes = [(o.bs.onodes.order().tobytes(), o.bs.onodes.hits, o.bs.onodes.misses) for o in cl.osds]
        out.append((repr(res), sim.env.now, onodes))
    assert out[0][:2] == out[1][:2]
    assert out[0][2] == out[1][2]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="page residency is read from Linux's pagemap")
def test_write_cache_index_grows_in_place() -> None:
    """The device core's write-cache index starts at run.INDEX_START entries per map in each drive's
    worst-case block and doubles in place as the Python drive's does (loop._h_grow_index): after a
    run of writes every map is at most half full at its capacity, and only the pages of the
    capacity reached are resident (the maps at their blocks' full size made nearly all of 3 MB per
    drive resident in a 1,008-OSD write run)."""
    from simulator.ceph.scale import COMPILED_REF, _fio_compiled, build_scaled
    from simulator.core import layout as DL
    from simulator.core.ceph_fio import held_state
    from simulator.core.run import INDEX_START
    from simulator.devices.hdd import wcache_kernels as W
    from simulator.engine import Simulation

    sim = Simulation(seed=3)
    cl = build_scaled(sim, 1, COMPILED_REF)
    _fio_compiled(sim, cl.image("test-mach2", "test"), 64, "randwrite", 3000, 5)
    ds = held_state(cl).st.dev
    cached = [h for h in range(ds.hi.shape[0]) if ds.hi[h, DL.HI_WC] != W.WC_OFF]
    assert cached
    caps = ds.hi[cached, DL.HI_IXCAP]
    rows = ds.hidx.shape[2]
    resident = resident_bytes(ds.hidx)  # before the reads below map the zero page under the untouched rows
    assert caps.max() > INDEX_START and caps.max() < (rows - 1) // 8, (caps, rows)  # grew, far below the block
    for h, c in zip(cached, caps, strict=True):
        assert c & (c - 1) == 0
        for m in range(3):
            assert ds.hidx[h, m, c, 0] <= c // 2  # entries at most half the capacity
            assert not ds.hidx[h, m, c + 1 :].any()  # nothing beyond the maps' rows
    # every drive's three maps (a drive without a cache has its empty maps' headers written)
    bound = sum(3 * (((int(c) + 1) * 16 + 4095) // 4096 + 1) * 4096 for c in ds.hi[:, DL.HI_IXCAP])
    assert resident <= bound, (resident, bound)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="page residency is read from Linux's pagemap")
def test_touched_chunks_finds_the_pages_written_not_those_only_read() -> None:
    """copy_touched visits the pages written. A page only read maps the kernel's zero page, which counts as
    untouched where pagemap shows frame numbers (root here), so a copy does not scan what a run merely read."""
    import os

    from simulator.core.lazy import _zero_pfn, copy_touched, touched_chunks

    a = lazy_zeros(4_000_000, np.int32)
    assert int(a.sum()) == 0  # reads every page
    a[123_457] = 1
    a[3_000_000] = 2
    t = touched_chunks(a, 1024)
    assert t[123_457 // 1024] and t[3_000_000 // 1024]
    fd = os.open("/proc/self/pagemap", os.O_RDONLY)
    zero = _zero_pfn(fd)
    os.close(fd)
    assert int(t.sum()) == 2 if zero else int(t.sum()) == len(t)  # without frame numbers: every page read counts
    b = lazy_zeros(4_000_000, np.int32)
    copy_touched(b, a)
    assert resident_bytes(b) <= 2 * 4096 and np.array_equal(b, a)

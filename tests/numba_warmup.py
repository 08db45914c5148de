"""Compile the numba kernels once, into numba's on-disk cache, before pytest-xdist's workers start.

Run by tests/conftest.py (in the xdist controller only, as two subprocesses, one per group) so that
the workers load the compiled code from the cache instead of each compiling the same functions at
the same time (a cold compile of the Ceph core takes minutes). Each group drives the compiled cores
through their real entry points (``simrun bench`` cases, a few requests each), so the cached
specialisations are the ones the tests use. Nothing here is asserted: a failure is reported by the
conftest and left to the tests themselves.

Usage: python tests/numba_warmup.py {devices|ceph} [DONE_FILE]
(DONE_FILE is written when the group ends, with its exit status: the workers wait for it)
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

#: ``simrun bench`` cases per group: "devices" = simulator.core.loop (device core) and the statistics
#: kernels; "ceph" = simulator.core.ceph_loop (the compiled Ceph core) and CRUSH/hash kernels
GROUPS = {
    "devices": (
        "hdd-fio-qd32-compiled",
        "queue-fio-qd16-compiled",
        "hdd-randrw-fsync-compiled",
        "hdd-wc-randrw-compiled",
        "hdd-blk-randrw-compiled",
    ),
    "ceph": (
        "ceph-book-compiled",
        "ceph-newread-compiled",
        "ceph-qd64write-compiled",
        "ceph-fio-qd64write-compiled",
        "ceph-fio-qd64read-compiled",
        "ceph-hdd-qd64write-compiled",
        "ceph-hdd-qd64read-compiled",
    ),
}

#: requests per case: enough to reach every event handler of the loop, not to measure anything
N = 200


def main(group: str) -> int:
    from simulator.bench import CASES

    for name in GROUPS[group]:
        CASES[name][1](N)
    return 0


if __name__ == "__main__":
    status = 1
    try:
        status = main(sys.argv[1])
    finally:
        if len(sys.argv) > 2:
            with contextlib.suppress(OSError):  # the pytest run ended (and removed the directory) first
                Path(sys.argv[2]).write_text(f"{status}\n")
    sys.exit(status)

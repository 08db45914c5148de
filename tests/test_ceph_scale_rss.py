"""The scale bench's peak RSS is the measured process's own, not its parent's (Linux keeps ru_maxrss across
fork + exec, so every fresh-process case used to report the bench process's high-water mark)."""
import subprocess
import sys

import pytest


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM is read from Linux's /proc")
def test_fresh_process_peak_rss_is_its_own():
    big = bytearray(600 * 1024 * 1024)
    for i in range(0, len(big), 4096):  # touch every page: the parent's RSS really is > 600 MB
        big[i] = 1
    out = subprocess.run([sys.executable, "-c", "from simulator.ceph.scale import _peak_rss_mb; print(_peak_rss_mb())"],
                         capture_output=True, text=True, check=True).stdout
    child = float(out.strip().splitlines()[-1])
    assert 10 < child < 400, child  # an interpreter with the package imported, far below the parent's 600 MB
    del big

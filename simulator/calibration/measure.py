"""``simrun measure``: run the local-disk measurement script (real fio) on this machine.

Wraps ``calibration/local-disk/measure.sh``: 4 KiB randread/randwrite (libaio, direct) at QD 1..64
and 4 KiB O_DSYNC sequential writes at numjobs 1..8, one fio JSON per run plus machine.txt.
Without fio on the PATH it stops with a clear error (exit code 2) before touching anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from simulator.errors import ConfigError, SimError

__all__ = ["measure", "script_path"]


class MeasureError(SimError):
    """The measurement script failed."""


def script_path() -> Path:
    from simulator.experiment.load import project_root

    return project_root() / "calibration" / "local-disk" / "measure.sh"


def measure(target: Path | None = None, out: Path | None = None, runtime: float | None = None,
            size: str | None = None, qds: str | None = None, sync_jobs: str | None = None) -> Path:
    """Run the script; returns the output directory."""
    if shutil.which("fio") is None:
        raise ConfigError("fio not found on PATH (install it: apt-get install fio); nothing was measured", source="simrun measure")
    script = script_path()
    if not script.is_file():
        raise ConfigError("measurement script missing", source=str(script))
    env = dict(os.environ)
    if runtime is not None:
        if runtime <= 0:
            raise ConfigError("must be > 0", source="command line", field="--runtime")
        env["RUNTIME"] = f"{runtime:g}"
    if size:
        env["SIZE"] = size
    if qds:
        env["QDS"] = qds
    if sync_jobs:
        env["SYNC_JOBS"] = sync_jobs
    args = ["bash", str(script), str(target or "/var/tmp/simrun-fio")]
    if out is not None:
        args.append(str(out))
    proc = subprocess.run(args, env=env, check=False)
    if proc.returncode != 0:
        raise MeasureError(f"{script.name} exited with status {proc.returncode}")
    if out is None:
        runs = sorted((script.parent / "runs").glob("*/"), key=lambda p: p.stat().st_mtime)
        return runs[-1] if runs else script.parent / "runs"
    return out

"""Iometer access specifications as an input format (YAML), run by the one fio IO driver.

Iometer (the Intel/OSDL disk benchmark, "Iometer User's Guide", version 2003.12.16 and later) describes
a workload as an *access specification*: a list of lines, each giving a transfer request size, its
share of the IOs ("% of Access Specification"), percent reads, percent random, a transfer delay and
burst length, and the alignment of the IOs; and a test setup: workers (threads), each keeping
"# of Outstanding I/Os" per target, over a disk region (maximum disk size and starting sector, in
sectors), with a ramp-up time and a run time. The file format here keeps those names::

    iometer:
      run_time: 60s
      ramp_up_time: 10s
      workers: 2                 # Iometer "disk workers"
      outstanding_ios: 16        # per target, per worker
      targets: [sda]             # optional: device names (default: every device, one job each)
      max_disk_size: 0           # sectors, 0 = the whole target
      starting_sector: 0
      sector_size: 512
      access_specification:
        name: 4K 75% read 0% random
        lines:
          - {size: 4k, percent_of_spec: 100, percent_read: 75, percent_random: 0}

Mapping onto fio semantics (:func:`iometer_jobs`): one fio job per target with ``numjobs`` =
workers, ``iodepth`` = outstanding IOs (``ioengine=libaio``), ``time_based`` over ``run_time``
after ``ramp_time`` = ramp-up; each line is a stream of the simulator's ``sim_mix`` (weight = % of
access specification) with ``bs`` = size, read with probability % read (an independent draw per
IO, as Iometer), ``percentage_random`` = % random (the other IOs continue where the previous IO of
the same direction ended, fio's rule), ``blockalign`` = the alignment (Iometer: "every I/O will
begin at a multiple of n bytes from the beginning of the disk"; 0 = sector boundaries) and
independent uniform draws (``norandommap=1``: Iometer has no random map).

Transfer delay and burst length become fio's ``thinktime`` (the delay) and ``thinktime_blocks``
(the burst), counted on issue: each worker stalls ``delay`` after every ``burst`` IOs. Iometer
applies them per line; here they must be equal on every line that sets them (an error otherwise).
Not modelled: reply size (network workers), Iometer's sequential alignment holes (with a size that
is not a multiple of the alignment, Iometer skips to the next aligned offset; here a sequential IO
follows the previous one directly), cycling of targets/workers/outstanding IOs (use an experiment
sweep instead).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from simulator.config.base import ConfigModel, validate
from simulator.errors import ConfigError
from simulator.units import Bytes, Seconds

__all__ = ["AccessLine", "AccessSpecification", "IometerSpec", "iometer_jobs", "load_iometer"]


class AccessLine(ConfigModel):
    """One line of an Iometer access specification."""

    size: Bytes = Field(gt=0, le=2**30, description="transfer request size, bytes (e.g. 4k, 64KiB); up to 1 GiB")
    percent_of_spec: float = Field(
        100.0, gt=0, le=100, description="share of the IOs this line gets, percent (lines must add up to 100)"
    )
    percent_read: int = Field(100, ge=0, le=100, description="percent of this line's IOs that are reads (default 100)")
    percent_random: int = Field(
        0, ge=0, le=100, description="percent of this line's IOs at a random offset; the rest sequential (default 0)"
    )
    delay: Seconds = Field(0.0, ge=0, le=3600, description="transfer delay before each burst, seconds (default 0)")
    burst: int = Field(1, ge=1, le=2**31, description="burst length, IOs per burst (default 1)")
    align: Bytes = Field(
        0, ge=0, le=2**30, description="IOs begin at multiples of this many bytes; 0 = sector boundaries (default)"
    )


class AccessSpecification(ConfigModel):
    """An Iometer access specification: a name and its lines."""

    name: str = Field("access specification", max_length=200, description="label of the specification")
    lines: list[AccessLine] = Field(min_length=1, max_length=100, description="the specification's lines")

    @model_validator(mode="after")
    def _sum(self) -> AccessSpecification:
        total = sum(ln.percent_of_spec for ln in self.lines)
        if abs(total - 100.0) > 1e-6:
            raise ValueError(f"lines: percent_of_spec of the lines add up to {total:g}, not 100")
        timed = {(ln.delay, ln.burst) for ln in self.lines if ln.delay > 0}
        if len(timed) > 1:
            raise ValueError("lines: lines with a delay must all have the same delay and burst (modelled per worker)")
        return self


class IometerSpec(ConfigModel):
    """Iometer test setup plus one access specification."""

    run_time: Seconds = Field(gt=0, le=30 * 86400, description="measured run time, seconds (e.g. 60s, 5m)")
    ramp_up_time: Seconds = Field(0.0, ge=0, le=86400, description="ramp-up time before recording, seconds (default 0)")
    workers: int = Field(1, ge=1, le=1024, description="disk workers, each with its own outstanding IOs per target (default 1)")
    outstanding_ios: int = Field(1, ge=1, le=65536, description="outstanding IOs per target per worker (default 1)")
    targets: list[str] | None = Field(
        None, max_length=1024, description="device names the workers drive (default: every device); one job per target"
    )
    max_disk_size: int = Field(0, ge=0, le=2**50, description="sectors of each target to use, 0 = all (default 0)")
    starting_sector: int = Field(0, ge=0, le=2**50, description="first sector of the region (default 0)")
    sector_size: int = Field(512, ge=512, le=65536, description="bytes per sector for the two fields above (default 512)")
    access_specification: AccessSpecification = Field(description="the access specification to run")
    seed: int | None = Field(None, ge=0, le=2**63, description="fio randseed of the workers (default fio's)")


class _File(ConfigModel):
    iometer: IometerSpec = Field(description="an Iometer test setup and access specification")


def load_iometer(path: str | Path) -> IometerSpec:
    """Read an Iometer YAML file; errors name the file and the field."""
    from simulator.yamlio import load_yaml_file

    data = load_yaml_file(path)
    if not isinstance(data, dict) or "iometer" not in data:
        raise ConfigError("expected a mapping with an 'iometer:' section", source=str(path), field="iometer")
    return validate(_File, data, str(path)).iometer


def iometer_jobs(spec: IometerSpec, devices: list[str] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """fio ``([global], [jobs])`` option mappings for ``spec`` (see the module docstring);
    ``devices`` = the available device names, used when the spec names no targets."""
    targets = spec.targets or list(devices or [])
    if not targets:
        raise ConfigError("no targets: give iometer.targets or devices", field="iometer.targets")
    ss = spec.sector_size
    mix = []
    timed = None
    for i, ln in enumerate(spec.access_specification.lines):
        r = ln.percent_random
        rd = ln.percent_read
        if r == 0:
            rw = "read" if rd == 100 else ("write" if rd == 0 else "rw")
        else:
            rw = "randread" if rd == 100 else ("randwrite" if rd == 0 else "randrw")
        opts: dict[str, Any] = {"rw": rw, "bs": ln.size, "norandommap": 1}
        if rw in ("rw", "randrw"):
            opts["rwmixread"] = rd
        if 0 < r < 100:
            opts["percentage_random"] = r
        if ln.align:
            opts["blockalign"] = ln.align
        if spec.starting_sector:
            opts["offset"] = spec.starting_sector * ss
        if spec.max_disk_size:
            opts["size"] = spec.max_disk_size * ss
        if ln.delay > 0:
            timed = (ln.delay, ln.burst)
        mix.append({"weight": ln.percent_of_spec, "name": f"line{i}", "options": opts})
    glob: dict[str, Any] = {
        "ioengine": "libaio",
        "iodepth": spec.outstanding_ios,
        "numjobs": spec.workers,
        "time_based": 1,
        "runtime": spec.run_time,
        "ramp_time": spec.ramp_up_time,
        "group_reporting": 1,
    }
    if spec.seed is not None:
        glob["randseed"] = spec.seed
    if timed is not None:
        glob["thinktime"] = f"{timed[0]!r}s"
        glob["thinktime_blocks"] = timed[1]
        glob["thinktime_blocks_type"] = "issue"
    name = spec.access_specification.name
    jobs = [{"name": f"{name}@{t}", "filename": t, "sim_mix": mix} for t in targets]
    return glob, jobs

"""fio job options: names, spellings and semantics of fio, validated once.

A :class:`FioJob` is one fio job section after ``[global]`` inheritance. Field names are fio's
option names and values accept fio's spellings: sizes with ``k/m/g/t`` suffixes (binary, fio's
``kb_base=1024``; ``KB``/``MB``/``GB`` with a capital B are decimal as in
:func:`simulator.units.parse_size`), durations as seconds or with a unit (``900``, ``15m``,
``100ms``; ``m`` is minutes as in fio), booleans as ``0/1`` (also true/false, yes/no, on/off, and a
bare flag such as ``time_based`` in a job file means 1).

:func:`resolve_jobs` turns ``[global]`` options plus a list of job option mappings (from a fio job
file or from YAML) into validated :class:`FioJob` objects. The option policy is strict:

* an option of fio that the simulator models is validated (see the field descriptions);
* an option of fio that only affects fio's own bookkeeping, output or host CPU placement is
  accepted and ignored (:data:`IGNORED_OPTIONS`), and still listed in the job's effective options;
* an option of fio that changes the workload but is not modelled is an error
  (:data:`UNSUPPORTED_OPTIONS`), as is any name fio does not have. Names must be spelled exactly as
  fio spells them (aliases fio itself accepts, such as ``blocksize`` or ``readwrite``, are mapped).

Simulator extensions are prefixed ``sim_``: ``sim_slat`` (submission latency), ``sim_mix`` (a job
whose IOs come from weighted streams, for vdbench skews and Iometer access specifications) and the
``sim_hotband`` value of ``random_distribution`` (vdbench's hotband curve).

Semantics follow fio's HOWTO (``HOWTO.rst`` in fio's repository, github.com/axboe/fio, read
2026-11) and, where the prose is silent, fio's code (options.c ``bssplit_ddir``/``str_split_parse``,
io_u.c ``get_next_buflen``, backend.c ``handle_thinktime``/``usec_for_io``); each field says what it
follows.

Deviations from fio worth knowing (all documented on the fields):

* ``direct=0`` (buffered IO) is accepted but the page cache is not modelled: IO goes to the device
  as if ``direct=1``.
* Random numbers come from numpy's PCG64, not fio's Tausworthe generator, so offset sequences are
  not bit-identical to fio's; they follow fio's *definitions* (distributions, hashing, seeding
  from ``randseed`` and the thread number).
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, PrivateAttr, ValidationError, model_validator

from simulator.config.base import ConfigModel
from simulator.errors import ConfigError
from simulator.limits import MAX_SIM_SECONDS
from simulator.units import MAX_BYTES, parse_size, parse_time

__all__ = [
    "DEFAULT_SLAT",
    "FIO_RANDSEED",
    "IGNORED_OPTIONS",
    "OPTION_ALIASES",
    "SYNC_ENGINES",
    "UNSUPPORTED_OPTIONS",
    "DistSpec",
    "FioJob",
    "parse_random_distribution",
    "resolve_jobs",
]

#: fio's default random seed (``FIO_RANDSEED`` in fio.h), used when ``randseed`` is not given.
FIO_RANDSEED = 0xB1899BED

#: engines that complete each IO inside the submitting system call: fio runs them at queue depth 1
#: whatever ``iodepth`` says ("increasing iodepth beyond 1 will not affect synchronous ioengines").
SYNC_ENGINES = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2", "mmap"})
#: engines whose flush (fsync) and trim fio performs synchronously, blocking the job thread until
#: they return (fio's libaio engine: "linux doesn't support aio fsync yet").
BLOCKING_SYNC_ENGINES = frozenset({"libaio"})
_ASYNC_ENGINES = frozenset({"libaio", "io_uring", "posixaio", "rbd", "null", "windowsaio", "solarisaio"})
KNOWN_ENGINES = SYNC_ENGINES | _ASYNC_ENGINES

#: default submission latency (fio's ``slat``) per engine, seconds. A model of the host CPU cost
#: of io_submit / io_uring_enter; synchronous engines have none (fio reports no slat for them);
#: for ``rbd`` the librbd submission cost belongs to the Ceph client model. Override with sim_slat.
DEFAULT_SLAT: dict[str, float] = {
    "libaio": 2e-6,
    "io_uring": 1e-6,
    "posixaio": 5e-6,
    "windowsaio": 2e-6,
    "solarisaio": 2e-6,
}

#: fio's own alternative spellings, mapped to the canonical option name.
OPTION_ALIASES: dict[str, str] = {
    "blocksize": "bs",
    "readwrite": "rw",
    "timeout": "runtime",
    "io_limit": "io_size",
    "fileoffset": "offset",
    "random_seed": "randseed",
    "fsync_blocks": "fsync",
    "blocksize_range": "bsrange",
    "ba": "blockalign",
}

#: fio options accepted and ignored: output, logging, host CPU placement, buffer contents, engine
#: tuning that does not change what reaches the device in this model.
# fmt: off
IGNORED_OPTIONS = frozenset(
    {
        "output-format", "output", "thread", "invalidate", "gtod_reduce", "gtod_cpu",
        "disable_lat", "disable_clat", "disable_slat", "disable_bw_measurement", "clocksource",
        "percentile_list", "clat_percentiles", "lat_percentiles", "slat_percentiles",
        "significant_figures", "write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log",
        "log_avg_msec", "log_hist_msec", "log_hist_coarseness", "log_max_value", "log_offset",
        "log_compression", "log_unix_epoch", "log_alternate_epoch", "per_job_logs", "write_iolog",
        "eta", "eta-newline", "eta-interval", "status-interval", "minimal", "append-terse",
        "cpus_allowed", "cpus_allowed_policy", "cpumask", "numa_cpu_nodes", "numa_mem_policy",
        "nice", "prio", "prioclass", "cgroup", "cgroup_weight", "cgroup_nodelete", "uid", "gid",
        "refill_buffers", "scramble_buffers", "buffer_compress_percentage",
        "buffer_compress_chunk", "buffer_pattern", "zero_buffers", "dedupe_percentage",
        "allow_file_create", "allow_mounted_write", "create_on_open", "create_only",
        "create_serialize", "create_fsync", "fallocate", "fadvise_hint", "unlink", "unlink_each_loop",
        "exitall", "exitall_on_error", "continue_on_error", "ignore_error", "error_dump",
        "iodepth_batch", "iodepth_batch_submit", "iodepth_batch_complete",
        "iodepth_batch_complete_min", "iodepth_batch_complete_max", "iops_avg_time", "bw_avg_time",
        "userspace_reap", "hipri", "fixedbufs", "registerfiles", "sqthread_poll",
        "sqthread_poll_cpu", "nonvectored", "uncached", "force_async", "busy_poll",
        "mem", "iomem", "iomem_align", "mem_align", "hugepage-size", "lockmem", "overwrite",
        "ioscheduler", "steadystate_check_interval", "filename_format", "lockfile",
    }
)
# fmt: on

#: fio options that change the workload but are not modelled: an error, so that a job file never
#: silently runs something other than what it says.
# fmt: off
UNSUPPORTED_OPTIONS = frozenset(
    {
        "bs_unaligned", "blocksize_unaligned", "bs_is_seq_rand",
        "nrfiles", "openfiles", "directory", "opendir", "file_append", "filesize_range",
        "zonesize", "zonerange", "zoneskip", "zonemode", "zone_size", "zone_range", "zone_skip",
        "verify", "verify_backlog", "verify_interval", "do_verify", "verify_only",
        "thinkcycles", "rate_min", "ratemin", "rate_iops_min", "ratecycle", "rate_ignore_thinktime",
        "rwmixcycle", "rw_sequencer",
        "latency_target", "latency_window", "latency_percentile", "latency_run", "max_latency",
        "sync_file_range", "write_barrier", "fill_device", "fill_fs",
        "wait_for", "flow", "flow_id", "flow_watermark", "flow_sleep",
        "trim_percentage", "trim_backlog", "trim_backlog_batch", "trim_verify_zero",
        "pre_read", "unified_rw_reporting", "kb_base", "unit_base", "io_submit_mode",
        "offset_align", "experimental_verify", "read_iolog", "replay_no_stall",
        "replay_redirect", "replay_time_scale", "replay_align", "replay_scale", "exec_prerun",
        "exec_postrun", "steadystate", "ss", "ss_dur", "ss_ramp", "number_trims", "num_range",
        "random_distribution_file", "dedupe_mode", "serialize_overlap", "stats", "iodepth_low",
    }
)
# fmt: on

_KNOWN_NAMES_HINT = "see docs/design.md and simulator/workloads/options.py for the supported fio options"


# --------------------------------------------------------------------------- value parsers
#: largest integer any fio option takes (fio's options are 64-bit)
_MAX_INT = 2**64
#: largest block size, bytes: 1 GiB, beyond every device's maximum transfer size (a single IO of
#: more is split by the block layer; the simulator does not model that split)
_MAX_BS = 2**30
#: most arrivals per second one job may ask for (rate_iops): 100 million, above any device's IOPS
_MAX_RATE_IOPS = 10**8
#: largest zipf theta: published skews are 0.5..3; at 10 the hottest block takes >99.9 % of IOs
_MAX_ZIPF_THETA = 10.0
_INT_RE = re.compile(r"^\s*([+-]?)\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?\s*[a-zA-Z]*)\s*$")


def _fio_int(v: Any) -> Any:
    """Integer option: 32, "32", "1k" (=1024, fio's kb_base), negative allowed syntactically."""
    if v is None:
        raise ValueError("needs a value")
    if isinstance(v, bool):
        raise ValueError("expected a number, not a boolean")
    if isinstance(v, int):
        if abs(v) > _MAX_INT:
            raise ValueError(f"a {len(str(abs(v))) if abs(v) < 10**4000 else 'many'}-digit number is beyond any value fio takes")
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError("expected an integer, not NaN or infinity")
        if v != int(v):
            raise ValueError(f"expected an integer, got {v:g}")
        if abs(v) > _MAX_INT:
            raise ValueError(f"{v:.3g} is beyond any value fio takes")
        return int(v)
    if isinstance(v, str):
        m = _INT_RE.match(v) if len(v) <= 80 else None
        if not m:
            raise ValueError("cannot read the value as an integer (e.g. 32, 4k, 1g)")
        try:
            n = parse_size(m.group(2))
        except ValueError as e:
            if "finite" in str(e) or "beyond" in str(e) or "plausible" in str(e):
                raise ValueError("must be a finite number within the range fio takes (at most 2**60)") from None
            raise ValueError(f"cannot read the value as an integer ({e})") from None
        return -n if m.group(1) == "-" else n
    raise ValueError(f"expected an integer, got {type(v).__name__}")


def _fio_size(v: Any) -> Any:
    """Size option in bytes: 4096, "4k", "1g", "1TB"."""
    n = _fio_int(v)
    return n


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _fio_bool(v: Any) -> bool:
    """Boolean option: 0/1, true/false, yes/no, on/off; a bare flag (None) means set."""
    if v is None or v is True:
        return True
    if v is False:
        return False
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in _TRUE:
        return True
    if isinstance(v, str) and v.strip().lower() in _FALSE:
        return False
    raise ValueError("expected 0 or 1 (or true/false, yes/no, on/off)")


def _fio_time(v: Any) -> float:
    """Duration: seconds as a number or "900", or with a unit: "15m" (minutes), "100ms", "2h"."""
    if v is None:
        raise ValueError("needs a value")
    if isinstance(v, str) and v.strip().isdigit():
        return float(v.strip())
    t = parse_time(v)
    if t < 0:
        raise ValueError("a duration cannot be negative")
    return t


def _fio_sync(v: Any) -> bool:
    """fio's ``sync``: 0/none = buffered semantics; 1/sync/dsync = O_SYNC/O_DSYNC writes."""
    if isinstance(v, str) and v.strip().lower() in ("none",):
        return False
    if isinstance(v, str) and v.strip().lower() in ("sync", "dsync"):
        return True
    return _fio_bool(v)


def _split_ddir(v: Any, parse, what: str, default: Any) -> tuple:
    """fio's comma form for per-direction values (reads, writes, trims).

    ``x`` -> all three; ``x,y`` -> read x, write and trim y; ``x,y,`` -> trim default; ``,y`` -> read
    default, write and trim y. "A value not terminated in a comma applies to subsequent types."
    """
    if isinstance(v, (list, tuple)):
        parts = [("" if p is None else p) for p in v]
        trailing = False
    else:
        if v is None:
            raise ValueError("needs a value")
        s = str(v).strip() if not isinstance(v, (int, float)) or isinstance(v, bool) else v
        if not isinstance(s, str):
            return (parse(s),) * 3
        if not s:
            raise ValueError(f"empty {what}")
        parts = s.split(",")
        trailing = parts[-1].strip() == "" and len(parts) > 1
        if trailing:
            parts = parts[:-1]
    if not parts:
        raise ValueError(f"empty {what}")
    if len(parts) > 3:
        raise ValueError(f"at most three comma-separated values (read,write,trim), got {len(parts)}")
    out: list[Any] = []
    for p in parts:
        p = p.strip() if isinstance(p, str) else p
        out.append(default if p == "" else parse(p))
    last = out[-1]
    while len(out) < 3:
        out.append(default if trailing else last)
    return tuple(out)


def _parse_bs_value(p: Any) -> int:
    if isinstance(p, str) and "-" in p.strip().lstrip("-"):
        raise ValueError("a block size range (a-b) belongs in bsrange=, not bs=")
    if isinstance(p, str) and (":" in p or "/" in p):
        raise ValueError("block sizes with percentages (size/percent:...) belong in bssplit=, not bs=")
    n = _fio_int(p)
    if n <= 0:
        raise ValueError(f"block size must be > 0, got {n}")
    if n > _MAX_BS:
        raise ValueError(f"block size of {n} bytes is larger than fio allows ({_MAX_BS // 2**20} MiB)")
    return n


def _bs_triplet(v: Any) -> tuple[int, int, int]:
    return _split_ddir(v, _parse_bs_value, "block size", 4096)


def _rate_value(p: Any) -> int:
    n = _fio_int(p)
    if n < 0:
        raise ValueError(f"rate must be >= 0, got {n}")
    if n > _MAX_RATE_IOPS:
        raise ValueError(f"rate of {n} IOPS per job is beyond any device the simulator models (limit {_MAX_RATE_IOPS:.0e})")
    return n


def _rate_triplet(v: Any) -> tuple[int, int, int] | None:
    if v is None:
        return None
    return _split_ddir(v, _rate_value, "rate", 0)


#: most bytes per second one job may ask for (rate): 10 TB/s, above any device or link modelled
_MAX_RATE_BPS = 10**13
#: fio's BSSPLIT_MAX: at most 64 block sizes per data direction
BSSPLIT_MAX = 64


def _rate_bytes_value(p: Any) -> int:
    n = _fio_int(p)
    if n < 0:
        raise ValueError(f"rate must be >= 0 bytes/s, got {n}")
    if n > _MAX_RATE_BPS:
        raise ValueError(f"rate of {n} bytes/s per job is beyond any device the simulator models (limit {_MAX_RATE_BPS:.0e})")
    return n


def _rate_bytes_triplet(v: Any) -> tuple[int, int, int] | None:
    if v is None:
        return None
    return _split_ddir(v, _rate_bytes_value, "rate", 0)


def _pct_value(p: Any) -> int:
    n = _fio_int(p)
    if not 0 <= n <= 100:
        raise ValueError(f"must be a percentage 0..100, got {n}")
    return n


def _pct_triplet(v: Any) -> tuple[int, int, int]:
    return _split_ddir(v, _pct_value, "percentage", 100)


def _ddir_strings(v: Any, what: str) -> tuple[str | None, str | None, str | None]:
    """fio's ``str_split_parse``: ``x`` applies to reads, writes and trims; ``r,w`` gives trims the
    write value; ``r,w,t`` each its own; an empty part leaves that direction at its default."""
    if not isinstance(v, str):
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            v = str(v)
        else:
            raise ValueError(f"expected a {what} string")
    s = v.strip()
    if not s:
        raise ValueError(f"empty {what}")
    if len(s) > 4096:
        raise ValueError(f"a {what} of {len(s)} characters is not a fio value")
    parts = [p.strip() for p in s.split(",")]
    if len(parts) > 3:
        raise ValueError(f"at most three comma-separated parts (read,write,trim), got {len(parts)}")
    if len(parts) == 1:
        parts = parts * 3
    elif len(parts) == 2:
        parts = [parts[0], parts[1], parts[1]]
    return tuple(p or None for p in parts)  # type: ignore[return-value]


def _bssplit_ddir(text: str) -> tuple[tuple[int, float], ...]:
    """One direction of ``bssplit``: ``bs/pct:bs/pct:...`` -> ((size, probability), ...).

    fio's ``bssplit_ddir`` and ``get_next_buflen``: an entry without a percentage, or with 0, is
    "missing" and the missing ones share what is left of 100 evenly (integer division); given
    percentages adding to more than 100 are an error (fio: "bssplit percentages add to more than
    100%"); the entries are then ordered by percentage (ascending) and drawn by cumulative
    percentage, so when they add to less than 100 the remainder goes to the entry with the largest
    percentage (the last one fio's lookup reaches). Every size is rounded down to a multiple of the
    smallest size of the direction (fio without ``bs_unaligned``).
    """
    entries = text.split(":")
    if len(entries) > BSSPLIT_MAX:
        raise ValueError(f"at most {BSSPLIT_MAX} block sizes per direction (fio's BSSPLIT_MAX), got {len(entries)}")
    sizes: list[int] = []
    percs: list[int | None] = []
    for i, e in enumerate(entries, start=1):
        b, _, pc = e.partition("/")
        if not b.strip():
            raise ValueError(f"entry {i} has no block size (expected size/percent, e.g. 4k/50)")
        n = _parse_bs_value(b.strip())
        pc = pc.strip()
        if not pc:
            pct = None
        else:
            if not pc.isdigit():
                raise ValueError(f"the percentage of entry {i} must be an integer 0..100, got {pc[:12]!r}")
            pct = int(pc)
            if pct > 100:
                raise ValueError(f"the percentage of entry {i} is more than 100 ({pct})")
            if pct == 0:
                pct = None  # fio: a 0 percentage is filled in like a missing one
        sizes.append(n)
        percs.append(pct)
    given = sum(p for p in percs if p is not None)
    missing = sum(1 for p in percs if p is None)
    if given > 100:
        raise ValueError(f"bssplit percentages add to more than 100% ({given})")
    if missing:
        fill = 100 if (missing == 1 and len(sizes) == 1) else (100 - given) // missing
        percs = [fill if p is None else p for p in percs]
    if sum(percs) == 0:  # type: ignore[arg-type]
        raise ValueError("bssplit percentages are all 0")
    min_bs, max_bs = min(sizes), max(sizes)
    order = sorted(range(len(sizes)), key=lambda k: percs[k])  # type: ignore[arg-type,return-value]
    out: list[tuple[int, float]] = []
    cum = 0
    nz = [k for k in order if percs[k]]
    last = nz[-1]
    for k in nz:
        b = sizes[k]
        b = b - b % min_bs  # round down to a multiple of the smallest size (power of 2 or not)
        b = min(max(b, min_bs), max_bs)
        p = percs[k] if k != last else 100 - cum  # the remainder goes to the last entry
        cum += percs[k]  # type: ignore[operator]
        out.append((b, p / 100.0))  # type: ignore[operator]
    return tuple(out)


def _bssplit(v: Any) -> str:
    parts = _ddir_strings(v, "bssplit")
    per_dir = "," in str(v)
    for d, p in enumerate(parts):
        if p is not None:
            try:
                _bssplit_ddir(p)
            except ValueError as e:
                raise ValueError(f"{('read', 'write', 'trim')[d]} part: {e}" if per_dir else str(e)) from None
    return str(v).strip()


def _parse_irange(p: str, parse, what: str) -> tuple:
    """fio's irange: ``lo-hi`` or ``lo:hi`` (or one value: lo = hi); a reversed range is swapped."""
    s = p.strip()
    if ":" in s:
        pieces = s.split(":")
    else:  # a '-' separates, except the sign of an exponent (1e-3)
        pieces = re.split(r"(?<![eE])-", s)
    if len(pieces) > 2 or any(not x.strip() for x in pieces):
        raise ValueError(f"expected a {what} or a range lo-hi")
    lo = parse(pieces[0].strip())
    hi = parse(pieces[1].strip()) if len(pieces) == 2 else lo
    return (lo, hi) if lo <= hi else (hi, lo)


def _bsrange(v: Any) -> str:
    parts = _ddir_strings(v, "bsrange")
    for p in parts:
        if p is not None:
            _parse_irange(p, _parse_bs_value, "block size")
    return str(v).strip()


def _blockalign_value(p: Any) -> int:
    n = _fio_int(p)
    if n <= 0:
        raise ValueError(f"block alignment must be > 0, got {n}")
    if n > _MAX_BS:
        raise ValueError(f"block alignment of {n} bytes is beyond the largest block size ({_MAX_BS // 2**20} MiB)")
    return n


def _blockalign(v: Any) -> tuple[int, int, int] | None:
    if v is None:
        return None
    return _split_ddir(v, _blockalign_value, "blockalign", 0)


def _time_default_us(v: Any) -> float:
    """fio's thinktime and thinktime_spin: "When the unit is omitted, the value is interpreted in
    microseconds" (``100`` = 100 us; ``1ms``, ``2s`` with a unit)."""
    if v is None:
        raise ValueError("needs a value")
    if isinstance(v, bool):
        raise ValueError("expected a duration, not a boolean")
    bare = isinstance(v, str) and len(v) <= 80 and re.match(r"^\s*[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?\s*$", v)
    # a bare number is microseconds: converted before the duration limit applies (3600000000 = 1 h)
    if isinstance(v, (int, float)) or bare:
        try:
            t = parse_time(float(v) / 1e6)
        except OverflowError:
            raise ValueError("a duration beyond anything the simulator models") from None
    else:
        t = parse_time(v)
    if t < 0:
        raise ValueError("a duration cannot be negative")
    return t


def _startdelay(v: Any) -> tuple[float, float]:
    """fio's ``startdelay=irange(time)``: one value or a range ``lo-hi`` (``lo:hi``), seconds when
    the unit is omitted; with a range each thread draws its delay uniformly from it."""
    if isinstance(v, (tuple, list)) and len(v) == 2:
        lo, hi = _fio_time(v[0]), _fio_time(v[1])
        return (lo, hi) if lo <= hi else (hi, lo)
    if isinstance(v, str):
        return _parse_irange(v, _fio_time, "duration")
    t = _fio_time(v)
    return (t, t)


_PCT_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")


def _size_or_pct(v: Any) -> Any:
    """A size in bytes, or a percentage of the device such as "50%" (kept as the string)."""
    if v is None:
        raise ValueError("needs a value")
    if isinstance(v, str):
        m = _PCT_RE.match(v)
        if m:
            pct = float(m.group(1))
            if not 0 < pct <= 100:
                raise ValueError(f"percentage must be in (0, 100], got {pct:g}")
            return f"{pct:g}%"
    n = _fio_int(v)
    if n < 0:
        raise ValueError(f"must be >= 0, got {n}")
    if n > MAX_BYTES:
        raise ValueError(f"must be at most 1 EiB ({MAX_BYTES} bytes), got {n}")
    return n


_RW_ALIASES = {"readwrite": "rw", "randreadwrite": "randrw"}
_RW_VALUES = ("read", "write", "randread", "randwrite", "rw", "randrw", "trim", "randtrim")


def _rw(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError(f"expected one of {', '.join(_RW_VALUES)}")
    s = v.strip().lower()
    if ":" in s:
        raise ValueError("the ':<nr>' offset modifier of rw is not supported")
    s = _RW_ALIASES.get(s, s)
    if s in ("trimwrite", "randtrimwrite"):
        raise ValueError(f"rw={s} is not supported")
    if s not in _RW_VALUES:
        raise ValueError(f"unknown rw value; expected one of {', '.join(_RW_VALUES)} (or readwrite)")
    return s


def _engine(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError("needs a value")
    s = v.strip()
    if s not in KNOWN_ENGINES:
        raise ValueError(f"unknown ioengine (known: {', '.join(sorted(KNOWN_ENGINES))})")
    return s


_FST_RE = re.compile(r"^\s*(roundrobin|random|sequential)\s*(?::\s*([0-9]+)\s*)?$")


def _file_service(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError("expected roundrobin[:N], random[:N] or sequential")
    m = _FST_RE.match(v)
    if not m:
        if v.strip().split(":")[0] in ("zipf", "pareto", "normal", "gauss"):
            raise ValueError("this file_service_type is not supported (roundrobin, random, sequential)")
        raise ValueError("expected roundrobin[:N], random[:N] or sequential")
    kind, nr = m.group(1), m.group(2)
    if nr is not None:
        if kind == "sequential":
            raise ValueError("file_service_type=sequential takes no ':N'")
        if int(nr) < 1:
            raise ValueError("the ':N' of file_service_type must be >= 1")
        return f"{kind}:{int(nr)}"
    return kind


# --------------------------------------------------------------------------- random_distribution
DistSpec = tuple
"""Parsed ``random_distribution``:

* ``("random",)``
* ``("zipf", theta, center)`` / ``("pareto", h, center)`` / ``("normal", dev_percent, center)``
  with ``center`` = -1.0 when not given (fio's default placement)
* ``("zoned", ((access_pct, size_pct), ...))``
* ``("zoned_abs", ((access_pct, size_bytes), ...))``
* ``("zoned_ddir", "zoned" | "zoned_abs", (zones_read, zones_write, zones_trim))`` for fio's
  per-direction comma form (a ``None`` direction is uniformly random)
"""


def parse_random_distribution(text: str) -> DistSpec:
    """Parse fio's ``random_distribution`` string. Raises ValueError with a fio-style message."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("expected random, zipf:θ, pareto:h, normal:σ, zoned:... or zoned_abs:...")
    s = text.strip()
    kind, _, rest = s.partition(":")
    kind = kind.strip().lower()
    if kind == "random":
        if rest.strip():
            raise ValueError("random takes no parameter")
        return ("random",)
    if kind in ("zipf", "pareto", "normal", "gauss"):
        parts = [p.strip() for p in rest.split(":")] if rest.strip() else []
        if kind != "normal" and kind != "gauss" and not parts:
            raise ValueError(f"{kind} needs a parameter, e.g. {kind}:{'1.2' if kind == 'zipf' else '0.9'}")
        if len(parts) > 2:
            raise ValueError(f"{kind} takes at most two parameters (value[:center])")
        try:
            vals = [float(p) for p in parts]
        except ValueError:
            raise ValueError(f"cannot read the parameters of {kind} as numbers") from None
        if not all(math.isfinite(x) for x in vals):
            raise ValueError(f"the parameters of {kind} must be finite numbers (not NaN or infinity)")
        val = vals[0] if vals else 0.0
        center = vals[1] if len(vals) > 1 else -1.0
        if len(vals) > 1 and not 0.0 <= center <= 1.0:
            raise ValueError(f"the center of {kind} must be in [0, 1], got {center:g}")
        if kind == "zipf":
            if val <= 0 or val == 1.0:
                raise ValueError(f"zipf theta must be > 0 and different from 1.0, got {val:g}")
            if val > _MAX_ZIPF_THETA:
                raise ValueError(
                    f"zipf theta must be <= {_MAX_ZIPF_THETA:g} (beyond it every IO hits the first block "
                    f"and fio's generator overflows), got {val:g}"
                )
            return ("zipf", val, center)
        if kind == "pareto":
            if not 0.0 < val < 1.0:
                raise ValueError(f"pareto h must be in (0, 1), got {val:g}")
            return ("pareto", val, center)
        if not 0.0 <= val <= 100.0:
            raise ValueError(f"normal deviation is a percentage in [0, 100], got {val:g}")
        return ("normal", val, center)
    if kind == "sim_hotband":
        if rest.strip():
            raise ValueError("sim_hotband takes no parameter")
        return ("sim_hotband",)
    if kind in ("zoned", "zoned_abs"):
        if not rest.strip():
            raise ValueError(f"{kind} needs zones, e.g. {kind}:60/10:30/20:10/70")
        if "," in rest:
            # fio: "it's possible to specify separate zones for reads, writes, and trims" (the
            # comma form of bssplit); an empty part leaves that direction uniformly random
            parts = _ddir_strings(rest, kind)
            per = []
            for d, part in enumerate(parts):
                if part is None:
                    per.append(None)
                    continue
                try:
                    per.append(_zones(kind, part))
                except ValueError as e:
                    raise ValueError(f"{('read', 'write', 'trim')[d]} part: {e}") from None
            return ("zoned_ddir", kind, tuple(per))
        return (kind, _zones(kind, rest))
    raise ValueError("unknown random_distribution (random, zipf, pareto, normal, zoned, zoned_abs, sim_hotband)")


def _zones(kind: str, rest: str) -> tuple[tuple[int, int], ...]:
    """One direction's zones of zoned/zoned_abs: ((access %, range % or bytes), ...)."""
    zones: list[tuple[int, int]] = []
    for z in rest.split(":"):
        a, slash, b = z.partition("/")
        if not slash:
            raise ValueError(
                f"zone {len(zones) + 1} is not of the form access%/{'size' if kind == 'zoned_abs' else 'range%'}"
            )
        try:
            acc = int(a.strip())
        except ValueError:
            raise ValueError(f"the access percentage of zone {len(zones) + 1} is not an integer") from None
        if kind == "zoned":
            try:
                size = int(b.strip())
            except ValueError:
                raise ValueError(f"the range percentage of zone {len(zones) + 1} is not an integer") from None
            if size < 0:
                raise ValueError("zone sizes must be >= 0")
        else:
            size = _fio_int(b.strip())
            if size <= 0:
                raise ValueError("zoned_abs zone sizes must be > 0")
        if acc < 0:
            raise ValueError("access percentages must be >= 0")
        zones.append((acc, size))
        if len(zones) > 256:
            raise ValueError("at most 256 zones (fio), got more")
    if sum(a for a, _ in zones) != 100:
        raise ValueError(f"access percentages of {kind} must add up to 100, got {sum(a for a, _ in zones)}")
    if kind == "zoned" and sum(s for _, s in zones) > 100:
        raise ValueError(f"range percentages of zoned add to more than 100 ({sum(s for _, s in zones)})")
    return tuple(zones)


def _dist(v: Any) -> str:
    spec = parse_random_distribution(v)
    if spec[0] == "random":
        return "random"
    return str(v).strip()


# --------------------------------------------------------------------------- annotated types
FioInt = Annotated[int, BeforeValidator(_fio_int)]
FioSize = Annotated[int, BeforeValidator(_fio_size)]
FioBool = Annotated[bool, BeforeValidator(_fio_bool)]
FioTime = Annotated[float, BeforeValidator(_fio_time)]
# element bounds, declared for the schema and the bounds test; the parsers above give the messages
_FileBytes = Annotated[int, Field(le=MAX_BYTES)]  # offsets and sizes in a file: at most 1 EiB
_BlockBytes = Annotated[int, Field(le=_MAX_BS)]
_Rate = Annotated[int, Field(le=_MAX_RATE_IOPS)]
_ByteRate = Annotated[int, Field(le=_MAX_RATE_BPS)]
_Pct = Annotated[int, Field(le=100)]
_SimSeconds = Annotated[float, Field(le=MAX_SIM_SECONDS)]
SizeOrPct = Annotated[_FileBytes | str, BeforeValidator(_size_or_pct)]
BsTriplet = Annotated[tuple[_BlockBytes, _BlockBytes, _BlockBytes], BeforeValidator(_bs_triplet)]
RateTriplet = Annotated[tuple[_Rate, _Rate, _Rate] | None, BeforeValidator(_rate_triplet)]


def _str_opt(v: Any) -> Any:
    if v is None:
        raise ValueError("needs a value")
    return str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


FioStr = Annotated[str, BeforeValidator(_str_opt)]


_DDIRS = {
    "read": (0,),
    "randread": (0,),
    "write": (1,),
    "randwrite": (1,),
    "rw": (0, 1),
    "randrw": (0, 1),
    "trim": (2,),
    "randtrim": (2,),
}


#: options a stream of ``sim_mix`` may set (what differs between the parts of a mixed workload)
MIX_STREAM_OPTIONS = frozenset(
    {
        "rw", "readwrite", "rwmixread", "rwmixwrite", "bs", "blocksize", "bssplit", "bsrange",
        "blocksize_range", "blockalign", "ba", "random_distribution", "offset", "size", "norandommap",
        "percentage_random", "percentage_sequential",
    }
)
#: most streams in one ``sim_mix``
MAX_MIX_STREAMS = 256


class MixStream(ConfigModel):
    """One part of a ``sim_mix`` job: its share of the job's IOs and the fio options that shape it."""

    weight: float = Field(
        gt=0, le=1e6, description="relative share of the job's IOs (any positive number; normalised over the streams)"
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="fio options of this stream: rw, rwmixread, bs/bssplit/bsrange, blockalign, "
        "random_distribution, offset, size, norandommap (the rest comes from the job)",
    )
    name: str | None = Field(None, max_length=64, description="label of the stream in reports (default: its index)")

    _job: Any = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _resolve(self) -> MixStream:
        bad = sorted(str(k) for k in self.options if not isinstance(k, str) or k not in MIX_STREAM_OPTIONS)
        if bad:
            raise ValueError(
                f"option {str(bad[0])[:40]!r} cannot be set per stream (allowed: {', '.join(sorted(MIX_STREAM_OPTIONS))})"
            )
        opts = {OPTION_ALIASES.get(k, k): v for k, v in self.options.items()}
        try:
            self._job = FioJob.model_validate(opts)
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(x) for x in err.get("loc", ()))
            msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
            raise ValueError(f"{loc + ': ' if loc else ''}{msg}") from None
        return self

    @property
    def job(self) -> FioJob:
        """The stream as a FioJob (only the stream's options set)."""
        return self._job


def _mix(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, (str, bytes)) or not isinstance(v, (list, tuple)):
        raise ValueError("expected a list of streams ({weight: .., options: {rw: .., bs: ..}})")
    if not v:
        raise ValueError("no streams")
    if len(v) > MAX_MIX_STREAMS:
        raise ValueError(f"at most {MAX_MIX_STREAMS} streams, got {len(v)}")
    out = []
    for i, item in enumerate(v):
        if isinstance(item, MixStream):
            out.append(item)
            continue
        if not isinstance(item, Mapping):
            raise ValueError(f"stream {i}: expected a mapping with weight and options")
        try:
            out.append(MixStream.model_validate(dict(item)))
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(x) for x in err.get("loc", ()))
            msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
            raise ValueError(f"stream {i}{' ' + loc if loc else ''}: {msg}") from None
    return tuple(out)


class FioJob(ConfigModel):
    """One fio job (a ``[section]`` after ``[global]`` inheritance), fio's option names and meaning."""

    name: FioStr = Field("job", description="job name (fio: the section name), default 'job'")
    description: FioStr | None = Field(None, description="free text, reported only (default none)")
    rw: Annotated[str, BeforeValidator(_rw)] = Field(
        "read",
        description="IO pattern: read, write, randread, randwrite, rw (=readwrite: sequential mix), "
        "randrw, trim, randtrim (default read, as fio)",
    )
    rwmixread: FioInt = Field(
        50, ge=0, le=100, description="percent of reads in rw/randrw, 0..100 (default 50)"
    )
    rwmixwrite: FioInt | None = Field(
        None, ge=0, le=100, description="percent of writes in rw/randrw; 100 - rwmixread (default 50)"
    )
    bs: BsTriplet = Field(
        (4096, 4096, 4096),
        description="block size, bytes: one value or fio's read,write[,trim] comma form, e.g. '4k,8k', "
        "each at most 1 GiB (default 4k)",
    )
    bssplit: Annotated[str, BeforeValidator(_bssplit)] | None = Field(
        None,
        description="weighted block sizes, fio's bs/percent:bs/percent[,read/write/trim parts], e.g. "
        "'4k/10:64k/50:32k/40' or '2k/50:4k/50,4k/90:8k/10'; a blank (or 0) percentage shares what is "
        "left of 100 evenly; overrides bs for the directions it gives (default none)",
    )
    bsrange: Annotated[str, BeforeValidator(_bsrange)] | None = Field(
        None,
        description="block size range lo-hi (or lo:hi) per direction in fio's comma form, e.g. '1k-4k,2k-8k'; "
        "sizes are multiples of lo, drawn as fio does (lo + U*hi rounded down to a multiple of lo, "
        "capped at hi); default none",
    )
    blockalign: Annotated[tuple[_FileBytes, _FileBytes, _FileBytes] | None, BeforeValidator(_blockalign)] = Field(
        None,
        description="boundary of random offsets, bytes, per direction (fio ba=), each at most 1 EiB; default: the "
        "smallest block size. Setting it turns fio's random map off, as fio does",
    )
    iodepth: FioInt = Field(
        1,
        ge=1,
        le=65536,
        description="IOs kept in flight per job thread, 1..65536 (the NVMe queue limit; synchronous engines run "
        "at 1), default 1",
    )
    numjobs: FioInt = Field(
        1, ge=1, le=4096, description="clones of this job, each its own thread and streams, 1..4096 (fio's REAL_MAX_JOBS); default 1"
    )
    size: SizeOrPct | None = Field(
        None,
        description="bytes of IO per thread and the region it covers, divided among the files (at most 1 EiB), or "
        "a percentage of each file/device (e.g. '50%'); default: the whole device from offset",
    )
    io_size: FioSize | None = Field(
        None,
        gt=0,
        le=MAX_BYTES,
        description="bytes to transfer, independent of the region (fio io_size/io_limit), at most 1 EiB; default size",
    )
    filesize: FioSize | None = Field(
        None, gt=0, le=MAX_BYTES,
        description="region per file, bytes, at most 1 EiB (overrides size/nfiles for the region); default none",
    )
    offset: SizeOrPct = Field(0, description="start of the region in each file, bytes (at most 1 EiB) or percent (default 0)")
    offset_increment: FioSize = Field(
        0,
        ge=0,
        le=MAX_BYTES,
        description="extra offset per clone: clone k starts at offset + k*offset_increment, at most 1 EiB (default 0)",
    )
    filename: FioStr | None = Field(
        None, description="target(s), colon-separated ('\\:' escapes a colon); resolved by the experiment"
    )
    file_service_type: Annotated[str, BeforeValidator(_file_service)] = Field(
        "roundrobin",
        description="how one job spreads IOs over its files: roundrobin[:N], random[:N], sequential "
        "(default roundrobin: switch file after every IO)",
    )
    random_distribution: Annotated[str, BeforeValidator(_dist)] = Field(
        "random",
        description="offset distribution of random IO: random (uniform), zipf:θ[:center], "
        "pareto:h[:center], normal:σ%[:center], zoned:acc%/range%:..., zoned_abs:acc%/size:...; "
        "SIMULATOR EXTENSION sim_hotband: vdbench's hotband= skew within the region (see "
        "simulator.workloads.offsets.HotbandOffsets) (default random)",
    )
    randrepeat: FioBool = Field(
        True,
        description="seed offsets etc. from randseed and the thread number, not the run seed (default 1)",
    )
    randseed: FioInt | None = Field(
        None,
        ge=0,
        le=2**64 - 1,
        description=f"random seed (default fio's FIO_RANDSEED {FIO_RANDSEED:#x}); setting it implies repeatable",
    )
    norandommap: FioBool = Field(
        False,
        description="0 (default): uniform random IO touches every block once per pass like fio's random "
        "map; 1: independent draws",
    )
    random_generator: Literal["tausworthe", "lfsr", "tausworthe64"] = Field(
        "tausworthe",
        description="accepted for compatibility; the simulator draws from PCG64 (lfsr behaves like the random map)",
    )
    time_based: FioBool = Field(False, description="run for runtime, wrapping over the region (default 0)")
    runtime: FioTime | None = Field(
        None, ge=0, le=MAX_SIM_SECONDS,
        description="seconds of measured run after ramp_time (units: 900, 15m), at most 1e7 (116 days, a job's simulated time); "
        "default unlimited",
    )
    number_ios: FioInt = Field(
        0, ge=0, le=2**63 - 1, description="stop after this many IOs after the ramp (0 = no limit, default)"
    )
    ramp_time: FioTime = Field(
        0.0, ge=0, le=MAX_SIM_SECONDS,
        description="seconds of lead-in whose IOs are not recorded; extends the run; at most 1e7 (116 days) (default 0)",
    )
    startdelay: Annotated[tuple[_SimSeconds, _SimSeconds], BeforeValidator(_startdelay)] = Field(
        (0.0, 0.0),
        description="delay before the job starts, seconds when the unit is omitted; a range lo-hi (or "
        "lo:hi) makes every thread draw its own delay uniformly from it (fio startdelay=irange(time)); "
        "at most 1e7 s (116 days); default 0",
    )
    thinktime: Annotated[float, BeforeValidator(_time_default_us)] = Field(
        0.0,
        ge=0,
        le=3600.0,
        description="stall after IO, MICROSECONDS when the unit is omitted (fio): after every "
        "thinktime_blocks IOs the thread waits for its in-flight IOs to complete (fio's io_u_quiesce), "
        "then stalls this long before issuing again; 0..1 h, default 0 (none)",
    )
    thinktime_spin: Annotated[float, BeforeValidator(_time_default_us)] = Field(
        0.0,
        ge=0,
        le=3600.0,
        description="part of the stall spent spinning on the CPU (us when the unit is omitted); the "
        "stall is max(thinktime, thinktime_spin) -- the host CPU is not modelled; default 0",
    )
    thinktime_blocks: FioInt = Field(
        1,
        ge=1,
        le=2**32,
        description="IOs between stalls (fio's thinktime_blocks), counted as thinktime_blocks_type says; default 1",
    )
    thinktime_blocks_type: Literal["complete", "issue"] = Field(
        "complete",
        description="what thinktime_blocks counts: complete (completed IOs, fio's default) or issue "
        "(issued IOs)",
    )
    thinktime_iotime: FioTime = Field(
        0.0,
        ge=0,
        le=86400.0,
        description="stall after this many seconds of IO (seconds when the unit is omitted); with "
        "thinktime_blocks also set, whichever comes first; default 0 (off)",
    )
    loops: FioInt = Field(1, ge=1, le=1_000_000, description="repeat the job's IO amount this many times, 1..1e6 (default 1)")
    rate_iops: RateTriplet = Field(
        None,
        description="open loop: arrivals per second, per direction in fio's read,write,trim comma form; "
        "with bsrange (no bssplit) fio paces linear arrivals by bytes at rate_iops x the smallest block "
        "size; each at most 1e8 (default none = closed loop)",
    )
    percentage_random: Annotated[tuple[_Pct, _Pct, _Pct], BeforeValidator(_pct_triplet)] = Field(
        (100, 100, 100),
        description="random IO (rw=rand*): percent of IOs at a random offset, per direction in fio's "
        "comma form; the others continue sequentially where the direction's previous IO ended "
        "(fio's should_do_random / last_pos); percentage_sequential is 100 minus it; at most 100 (default 100)",
    )
    rate: Annotated[tuple[_ByteRate, _ByteRate, _ByteRate] | None, BeforeValidator(_rate_bytes_triplet)] = Field(
        None,
        description="open loop by bandwidth: bytes per second per direction in fio's read,write,trim "
        "comma form (e.g. '1m,500k'); linear: the next IO is due when the bytes issued so far are; "
        "each at most 1e13 (10 TB/s); exclusive with rate_iops (default none)",
    )
    rate_process: Literal["linear", "poisson"] = Field(
        "linear", description="arrival process of rate/rate_iops: linear (fixed gaps, default) or poisson "
        "(exponential gaps of mean 1/IOPS; with rate, IOPS = rate / smallest block size, as fio)"
    )
    sync: Annotated[bool, BeforeValidator(_fio_sync)] = Field(
        False, description="1/sync/dsync: writes are O_DSYNC, sent as FUA writes (default 0)"
    )
    fsync: FioInt = Field(
        0, ge=0, le=2**32, description="issue a flush after every N writes (fio fsync=N; default 0 = never)"
    )
    fdatasync: FioInt = Field(
        0, ge=0, le=2**32, description="as fsync, fdatasync flavour; a device flush too (default 0)"
    )
    end_fsync: FioBool = Field(False, description="flush every file once when a writing job ends (default 0)")
    fsync_on_close: FioBool = Field(False, description="as end_fsync, for a block device (default 0)")
    direct: FioBool = Field(
        False, description="O_DIRECT; the page cache is not modelled, so 0 behaves as 1 (default 0)"
    )
    buffered: FioBool | None = Field(None, description="fio's inverse of direct (default: not given)")
    ioengine: Annotated[str, BeforeValidator(_engine)] = Field(
        "psync",
        description="fio engine: libaio, io_uring, posixaio, rbd, null (async: iodepth applies); psync, "
        "sync, pvsync, pvsync2, vsync, mmap (synchronous: depth 1). Default psync, as fio on Linux",
    )
    pool: FioStr | None = Field(None, description="rbd engine: Ceph pool name (required with ioengine=rbd)")
    rbdname: FioStr | None = Field(
        None, description="rbd engine: RBD image name (required with ioengine=rbd)"
    )
    clientname: FioStr = Field("admin", description="rbd engine: Ceph client name (default admin)")
    group_reporting: FioBool = Field(False, description="report a reporting group as one job (default 0)")
    stonewall: FioBool = Field(
        False, description="wait for the preceding jobs to finish first; new group (default 0)"
    )
    new_group: FioBool = Field(False, description="start a new reporting group (default 0)")
    sim_mix: Annotated[tuple[MixStream, ...] | None, BeforeValidator(_mix)] = Field(
        None,
        description="SIMULATOR EXTENSION: a mixed workload (vdbench skews, Iometer access specifications): "
        "every IO first picks a stream by weight, then its direction (the stream's rwmixread as an "
        "independent draw), size and offset from the stream's options; iodepth/numjobs/runtime are the "
        "job's. Needs time_based or number_ios (default none)",
    )
    sim_slat: FioTime | None = Field(
        None,
        ge=0,
        le=1.0,
        description="SIMULATOR EXTENSION: submission latency per IO, seconds, serial per job thread "
        "(default per engine: libaio 2us, io_uring 1us, posixaio 5us, others 0)",
    )

    _raw: dict[str, str] = PrivateAttr(default_factory=dict)
    _source: str | None = PrivateAttr(default=None)
    _labels: dict[str, str] = PrivateAttr(default_factory=dict)
    _index: int = PrivateAttr(default=0)
    _label_fmt: str = PrivateAttr(default="jobs.{i}.{opt}")

    @model_validator(mode="before")
    @classmethod
    def _before(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        d = dict(data)
        for k, v in d.items():
            if v is None and k in _FIELDS and k not in _FLAG_FIELDS:
                raise ValueError(f"{k}: needs a value ({k}=...)")
        if "percentage_sequential" in d:
            if "percentage_random" in d:
                raise ValueError("percentage_random: give percentage_random or percentage_sequential, not both")
            try:
                seq = _pct_triplet(d.pop("percentage_sequential"))
            except ValueError as e:
                raise ValueError(f"percentage_random: percentage_sequential: {e}") from None
            d["percentage_random"] = tuple(100 - x for x in seq)
        if "buffered" in d:
            try:
                d["buffered"] = _fio_bool(d["buffered"])
            except ValueError as e:
                raise ValueError(f"buffered: {e}") from None
        r, w = d.get("rwmixread"), d.get("rwmixwrite")
        if w is not None:
            try:
                wi = _fio_int(w)
            except ValueError as e:
                raise ValueError(f"rwmixwrite: {e}") from None
            if not 0 <= wi <= 100:
                raise ValueError(f"rwmixwrite: must be in 0..100, got {wi}")
            if r is None:
                d["rwmixread"] = 100 - wi
            else:
                try:
                    ri = _fio_int(r)
                except ValueError as e:
                    raise ValueError(f"rwmixread: {e}") from None
                if ri + wi != 100:
                    raise ValueError(f"rwmixread: rwmixread={ri} and rwmixwrite={wi} do not add up to 100")
        if "buffered" in d and "direct" in d:
            try:
                clash = _fio_bool(d["buffered"]) == _fio_bool(d["direct"])
            except ValueError:
                clash = False  # the field validators report the bad value
            if clash:
                raise ValueError("direct: direct and buffered contradict each other")
        return d

    @model_validator(mode="after")
    def _after(self) -> FioJob:
        if self.rwmixwrite is None or self.rwmixwrite != 100 - self.rwmixread:
            object.__setattr__(self, "rwmixwrite", 100 - self.rwmixread)
        if self.buffered is not None:
            object.__setattr__(self, "direct", not self.buffered)
        if self.time_based and not self.runtime:
            raise ValueError("runtime: time_based needs a runtime > 0")
        if self.ioengine == "rbd":
            missing = [o for o in ("pool", "rbdname") if not getattr(self, o)]
            if missing:
                raise ValueError(f"{missing[0]}: ioengine=rbd needs pool and rbdname")
        if self.rate is not None and self.rate_iops is not None and any(self.rate) and any(self.rate_iops):
            raise ValueError("rate: rate and rate_iops are mutually exclusive (fio)")
        for opt in ("rate_iops", "rate"):
            val = getattr(self, opt)
            if val is None:
                continue
            active = [val[d] for d in self.ddirs]
            if any(active) and not all(active):
                raise ValueError(
                    f"{opt}: a mixed job needs a rate for every direction it does "
                    f"(rw={self.rw}, {opt}={','.join(map(str, val))})"
                )
            if not any(active):
                object.__setattr__(self, opt, None)
        if self.bssplit is not None and self.bsrange is not None:
            both = [
                ("read", "write", "trim")[d]
                for d in self.ddirs
                if _ddir_strings(self.bssplit, "bssplit")[d] and _ddir_strings(self.bsrange, "bsrange")[d]
            ]
            if both:
                raise ValueError(f"bsrange: bssplit and bsrange both give the {both[0]} block sizes; keep one")
        if self.fsync_on_close and not self.end_fsync:
            object.__setattr__(self, "end_fsync", True)
        if self.filename is not None and not self.filenames:
            raise ValueError("filename: no file names in filename")
        if self.sim_mix is not None and not (self.time_based or self.number_ios):
            raise ValueError("sim_mix: a mixed job needs time_based=1 with a runtime, or number_ios")
        return self

    # ----------------------------------------------------------------- derived views
    @property
    def ddirs(self) -> tuple[int, ...]:
        """Data directions the job does (0 read, 1 write, 2 trim)."""
        return _DDIRS[self.rw]

    @property
    def bs_spec(self) -> tuple[tuple, tuple, tuple]:
        """Block sizes per direction (read, write, trim), after bssplit > bsrange > bs:
        ``("fixed", size)``, ``("split", sizes, probabilities)`` or ``("range", lo, hi)``."""
        split = _ddir_strings(self.bssplit, "bssplit") if self.bssplit else (None, None, None)
        rng = _ddir_strings(self.bsrange, "bsrange") if self.bsrange else (None, None, None)
        out: list[tuple] = []
        for d in range(3):
            if split[d]:
                table = _bssplit_ddir(split[d])  # type: ignore[arg-type]
                sizes = tuple(b for b, _ in table)
                if len(set(sizes)) == 1:
                    out.append(("fixed", sizes[0]))
                else:
                    out.append(("split", sizes, tuple(p for _, p in table)))
            elif rng[d]:
                lo, hi = _parse_irange(rng[d], _parse_bs_value, "block size")  # type: ignore[arg-type]
                out.append(("fixed", lo) if lo == hi else ("range", lo, hi))
            else:
                out.append(("fixed", self.bs[d]))
        return tuple(out)  # type: ignore[return-value]

    @property
    def min_bs(self) -> tuple[int, int, int]:
        """Smallest block size per direction (fio's min_bs)."""
        return tuple(_spec_min(sp) for sp in self.bs_spec)  # type: ignore[return-value]

    @property
    def max_bs(self) -> tuple[int, int, int]:
        """Largest block size per direction (fio's max_bs)."""
        return tuple(_spec_max(sp) for sp in self.bs_spec)  # type: ignore[return-value]

    @property
    def open_loop_iops(self) -> tuple[float, float, float] | None:
        """Mean arrivals per second per direction in open loop (``rate_iops``, or ``rate`` divided by
        the smallest block size as fio's poisson process does), None in closed loop."""
        if self.rate_iops is not None:
            return tuple(float(x) for x in self.rate_iops)  # type: ignore[return-value]
        if self.rate is not None:
            mb = self.min_bs
            return tuple(self.rate[d] / mb[d] for d in range(3))  # type: ignore[return-value]
        return None

    @property
    def startdelay_max(self) -> float:
        """Longest start delay of any thread, seconds."""
        return self.startdelay[1]

    @property
    def is_random(self) -> bool:
        return self.rw.startswith("rand")

    @property
    def is_mixed(self) -> bool:
        return self.rw in ("rw", "randrw")

    @property
    def filenames(self) -> list[str]:
        """``filename`` split on ':' (fio's separator; ``\\:`` is a literal colon)."""
        if not self.filename:
            return []
        parts = re.split(r"(?<!\\):", self.filename)
        return [p.replace("\\:", ":") for p in parts if p]

    @property
    def is_sync_engine(self) -> bool:
        return self.ioengine in SYNC_ENGINES

    @property
    def effective_iodepth(self) -> int:
        """fio's effective depth: 1 for synchronous engines, else ``iodepth``."""
        return 1 if self.is_sync_engine else self.iodepth

    @property
    def slat(self) -> float:
        """Submission latency per IO (``sim_slat`` or the engine's default), seconds."""
        return self.sim_slat if self.sim_slat is not None else DEFAULT_SLAT.get(self.ioengine, 0.0)

    @property
    def blocking_flush(self) -> bool:
        """True if fio performs flushes/trims synchronously on this engine (blocks the thread)."""
        return self.ioengine in BLOCKING_SYNC_ENGINES

    @property
    def repeatable(self) -> bool:
        """fio: random seeds are fixed if randrepeat=1 or a randseed is given."""
        return self.randrepeat or self.randseed is not None

    @property
    def seed(self) -> int:
        return FIO_RANDSEED if self.randseed is None else self.randseed

    @property
    def distribution(self) -> DistSpec:
        return parse_random_distribution(self.random_distribution)

    @property
    def file_service(self) -> tuple[str, int]:
        kind, _, nr = self.file_service_type.partition(":")
        return kind, int(nr) if nr else 1

    @property
    def source(self) -> str | None:
        """File the job came from (job file or experiment), for error messages."""
        return self._source

    def label(self, option: str) -> str:
        """How to name ``option`` of this job in an error message ("jobs.2.bs", "[seqread] bs")."""
        return self._labels.get(option) or self._label_fmt.format(i=self._index, opt=option)

    def fio_options(self) -> dict[str, str]:
        """The job's effective fio options as strings (global + job, as written; like fio's JSON
        "job options"), without ``name``. Feeding them back to :func:`resolve_jobs` rebuilds the job."""
        if self._raw:
            return dict(self._raw)
        out: dict[str, str] = {}
        for k in self.model_fields_set:
            if k == "name":
                continue
            v = getattr(self, k)
            if k == "startdelay":
                out[k] = f"{v[0]!r}s" if v[0] == v[1] else f"{v[0]!r}s:{v[1]!r}s"
            elif k in ("thinktime", "thinktime_spin"):
                out[k] = f"{v!r}s"  # a bare number would read as microseconds
            else:
                out[k] = _to_str(v)
        return out

    def config_error(self, option: str, message: str) -> ConfigError:
        return ConfigError(message, source=self._source, field=self.label(option))


def _spec_min(sp: tuple) -> int:
    return sp[1] if sp[0] == "fixed" else (min(sp[1]) if sp[0] == "split" else sp[1])


def _spec_max(sp: tuple) -> int:
    return sp[1] if sp[0] == "fixed" else (max(sp[1]) if sp[0] == "split" else sp[2])


def _to_str(v: Any) -> str:
    if v is None:
        return "1"
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (tuple, list)):
        return ",".join(_to_str(x) for x in v)
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        return str(int(v))
    return str(v)


_FIELDS = frozenset(FioJob.model_fields)
_FLAG_FIELDS = frozenset(
    {
        "randrepeat",
        "norandommap",
        "time_based",
        "sync",
        "direct",
        "buffered",
        "group_reporting",
        "stonewall",
        "new_group",
        "end_fsync",
        "fsync_on_close",
    }
)


#: fio options that are not fields but set one (percentage_sequential = 100 - percentage_random)
_DERIVED_OPTIONS = frozenset({"percentage_sequential"})


# --------------------------------------------------------------------------- resolution
def _canonical(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(key)
    k = key.strip()
    return OPTION_ALIASES.get(k, k)


def _labels_of(opts: Any) -> dict[str, str]:
    labels = getattr(opts, "labels", None)
    return dict(labels) if isinstance(labels, Mapping) else {}


def resolve_jobs(
    global_opts: Mapping[str, Any] | None,
    jobs: Sequence[Mapping[str, Any]],
    source: str | None = None,
    *,
    style: Literal["yaml", "ini"] | None = None,
    prefix: str = "",
) -> list[FioJob]:
    """fio's inheritance: each job gets the ``[global]`` options overridden by its own.

    ``global_opts`` and ``jobs`` are option mappings (option name -> value; a bare fio flag is
    ``None``). Errors are :class:`ConfigError` with ``source`` = the file and ``field`` naming the
    option where it was written: ``"jobs.<i>.<option>"`` / ``"global.<option>"`` for YAML (with
    ``prefix`` prepended, e.g. ``"workload."``), ``"[section] option (line N)"`` for fio job files
    (the mappings returned by :func:`simulator.workloads.jobfile.parse_jobfile` carry their
    sections and lines; ``style`` forces one form).
    """
    global_opts = global_opts or {}
    if not isinstance(global_opts, Mapping):
        raise ConfigError(
            "the global options must be a mapping of fio options", source=source, field=f"{prefix}global"
        )
    if isinstance(jobs, (str, bytes)) or not isinstance(jobs, Sequence):
        raise ConfigError("jobs must be a list of fio job sections", source=source, field=f"{prefix}jobs")
    if not jobs:
        raise ConfigError("no jobs given", source=source, field=f"{prefix}jobs")
    ini = style == "ini" or (
        style is None and (hasattr(global_opts, "labels") or any(hasattr(j, "labels") for j in jobs))
    )
    glabels = _labels_of(global_opts)

    def glabel(opt: str) -> str:
        return glabels.get(opt) or (f"[global] {opt}" if ini else f"{prefix}global.{opt}")

    out = []
    for i, job in enumerate(jobs):
        if not isinstance(job, Mapping):
            raise ConfigError(
                "a job must be a mapping of fio options", source=source, field=f"{prefix}jobs.{i}"
            )
        section = getattr(job, "section", None)
        jlabels = _labels_of(job)

        def jlabel(opt: str, section=section, jlabels=jlabels, i=i) -> str:
            if opt in jlabels:
                return jlabels[opt]
            if ini:
                return f"[{section or f'job{i}'}] {opt}"
            return f"{prefix}jobs.{i}.{opt}"

        merged: dict[str, Any] = {}
        labels: dict[str, str] = {}
        for src, lab in ((global_opts, glabel), (job, jlabel)):
            seen: dict[str, str] = {}
            for key, val in src.items():
                try:
                    k = _canonical(key)
                except TypeError:
                    raise ConfigError(
                        f"option names must be strings, got {key!r}", source=source, field=lab(str(key))
                    ) from None
                if k in seen and seen[k] != key:
                    raise ConfigError(
                        f"{k!r} given twice (as {seen[k]!r} and {key!r})", source=source, field=lab(str(key))
                    )
                seen[k] = key
                merged[k] = val
                labels[k] = lab(str(key))
        name = merged.get("name")
        if "name" not in job or job.get("name") in (None, ""):
            name = section or (name if name not in (None, "") else f"job{i}")
        merged["name"] = name
        labels.setdefault("name", jlabel("name"))

        values: dict[str, Any] = {}
        raw: dict[str, str] = {}
        for k, v in merged.items():
            if k in IGNORED_OPTIONS:
                raw[k] = _to_str(v)
                continue
            if k in UNSUPPORTED_OPTIONS:
                raise ConfigError(
                    f"fio option {k!r} is not supported by the simulator", source=source, field=labels[k]
                )
            if k not in _FIELDS and k not in _DERIVED_OPTIONS:
                close = difflib.get_close_matches(
                    k, sorted(_FIELDS | IGNORED_OPTIONS | set(OPTION_ALIASES)), n=1
                )
                hint = f" (did you mean {close[0]!r}?)" if close else f" ({_KNOWN_NAMES_HINT})"
                raise ConfigError(f"unknown fio option {k!r}{hint}", source=source, field=labels[k])
            values[k] = v
            if k == "sim_mix":
                try:
                    raw[k] = json.dumps(v, default=str)[:100_000]
                except (TypeError, ValueError):  # keys json cannot write: the validation names them
                    raw[k] = str(v)[:100_000]
            elif k != "name":
                raw[k] = _to_str(v)
        if "percentage_sequential" in labels:
            labels.setdefault("percentage_random", labels["percentage_sequential"])
        try:
            fj = FioJob.model_validate(values)
        except ValidationError as e:
            raise _job_error(e, labels, source, i, prefix) from None
        fj._raw = raw
        fj._source = source
        fj._labels = labels
        fj._index = i
        fj._label_fmt = (
            f"[{(section or f'job{i}').replace('{', '{{').replace('}', '}}')}] {{opt}}"
            if ini
            else f"{prefix}jobs.{{i}}.{{opt}}"
        )
        out.append(fj)
    return out


def _job_error(
    exc: ValidationError, labels: dict[str, str], source: str | None, i: int, prefix: str
) -> ConfigError:
    errors = exc.errors()
    msgs = []
    first_field = None
    for e in errors:
        loc = [str(p) for p in e.get("loc", ())]
        msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
        opt = loc[0] if loc else None
        if opt is None:
            # model-level check: message starts with "<option>: "
            head, sep, tail = msg.partition(": ")
            if sep and head in _FIELDS:
                opt, msg = head, tail
        field = labels.get(opt) if opt else None
        if field is None:
            field = f"{prefix}jobs.{i}.{opt}" if opt else f"{prefix}jobs.{i}"
        if first_field is None:
            first_field = field
            msgs.append(msg)
        else:
            msgs.append(f"also {field}: {msg}")
    return ConfigError("\n  ".join(msgs), source=source, field=first_field)

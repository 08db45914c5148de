"""Reading real fio output into the simulator's result types: the entry point.

The parsers live beside this module: :mod:`simulator.fio.json_reader` (JSON),
:mod:`simulator.fio.text_reader` (normal text), :mod:`simulator.fio.run` (the result and shared
helpers) and :mod:`simulator.fio.writer` (the simulator's fio JSON).

:func:`read_fio` accepts

* fio JSON as fio 2.x and 3.x print it (``--output-format=json`` and ``json+``): latencies in
  usec (``clat``, fio 2.x) or ns (``clat_ns``, fio 3.x), ``io_bytes`` in KiB (2.x) or bytes
  (3.x), percentile tables, json+ ``bins`` (2.x: keyed by fio's histogram index with the
  ``FIO_IO_U_PLAT_*`` constants; 3.x: keyed by value in ns) which become an HDR histogram, several
  jobs, ``client_stats`` of fio's client/server mode, ``unified_rw_reporting``'s ``mixed``
  section (read as direction 0, flagged in ``extra``), the ``sync`` section, and the ``"sim"``
  section of files written by :func:`simulator.metrics.fiojson.to_fio_json` (exact round trip);
* fio's normal text output (2.x and 3.x) for the fields it carries: IOPS, bandwidth, runtime,
  issued totals, slat/clat/lat min/max/avg/stdev, percentile blocks, bw/iops sample lines,
  latency buckets, cpu.

Leading or trailing non-JSON lines (fio warnings) are skipped. Missing or odd fields default to
zero/empty. A file that is neither raises :class:`simulator.errors.ConfigError` naming the file.
"""

from __future__ import annotations

from pathlib import Path

from simulator.errors import ConfigError
from simulator.fio.json_reader import NOT_FIO_JSON, find_json, parse_fio_json
from simulator.fio.run import FioRun, job_options_of, plat_idx_to_val
from simulator.fio.text_reader import parse_fio_text
from simulator.safefile import read_bounded

__all__ = ["FioRun", "job_options_of", "parse_fio_json", "parse_fio_text", "plat_idx_to_val", "read_fio", "read_fio_text"]

#: largest fio output file read, bytes (a json+ file of many jobs is a few MB)
MAX_FILE_BYTES = 256 * 2**20


def read_fio(path: str | Path) -> FioRun:
    """Read fio output (JSON 2.x/3.x, json+, or normal text) from ``path``.

    Raises :class:`ConfigError` naming the file if it cannot be read or is not fio output.
    """
    src = str(path)
    raw = read_bounded(path, MAX_FILE_BYTES, "fio output")
    return read_fio_text(raw.decode("utf-8", errors="replace"), src)


def read_fio_text(text: str, src: str = "<fio output>") -> FioRun:
    """fio output held in a string (JSON or normal text); see :func:`read_fio`."""
    if len(text) > MAX_FILE_BYTES:
        raise ConfigError(f"larger than {MAX_FILE_BYTES // 2**20} MiB; not fio output", source=src)
    text = text.lstrip("\ufeff")
    if not text.strip():
        raise ConfigError("empty file, expected fio output", source=src)
    doc = find_json(text)
    if doc is NOT_FIO_JSON:
        raise ConfigError("not fio output: invalid JSON or JSON without fio's 'jobs' list", source=src)
    if doc is not None:
        return parse_fio_json(doc, src)
    run = parse_fio_text(text, src)
    if run is None:
        raise ConfigError(
            "not fio output: neither fio JSON (--output-format=json) nor fio's normal text output", source=src
        )
    return run

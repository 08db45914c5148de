"""fio's output formats: reading real fio output (JSON 2.x/3.x, json+, normal text) into the
simulator's result types, so measured and simulated runs go through one comparison routine, and
writing the simulator's runs as fio JSON.

* :mod:`simulator.fio.reader` -- :func:`read_fio`, the entry point (file -> :class:`FioRun`);
* :mod:`simulator.fio.json_reader` / :mod:`simulator.fio.text_reader` -- the two parsers;
* :mod:`simulator.fio.run` -- :class:`FioRun` and the tolerant value helpers;
* :mod:`simulator.fio.writer` -- :func:`to_fio_json`.
"""

from simulator.fio.reader import FioRun, job_options_of, parse_fio_json, parse_fio_text, read_fio

__all__ = ["FioRun", "job_options_of", "parse_fio_json", "parse_fio_text", "read_fio"]

"""Reading real fio output (JSON 2.x/3.x, json+, normal text) into the simulator's result types,
so measured and simulated runs go through one comparison routine."""

from simulator.fio.reader import FioRun, job_options_of, parse_fio_json, parse_fio_text, read_fio

__all__ = ["FioRun", "job_options_of", "parse_fio_json", "parse_fio_text", "read_fio"]

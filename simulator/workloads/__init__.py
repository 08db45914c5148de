"""fio semantics: job options, job files, offset distributions, closed/open-loop runners.

Usage::

    from simulator.workloads import load_jobfile, resolve_jobs, Workload

    jobs = load_jobfile("ws.fio")                   # or resolve_jobs(global_opts, job_dicts, source)
    wl = Workload(sim, jobs, resolve_target)       # resolve_target(job) -> [Device, ...]
    sim.run(until=wl.start())
    results = wl.results()                         # JobStats results, fio's reporting rules
"""

from simulator.workloads.jobfile import load_jobfile, parse_jobfile, parse_jobfile_text
from simulator.workloads.offsets import RandomOffsets, SequentialOffsets, make_offsets
from simulator.workloads.options import FIO_RANDSEED, FioJob, parse_random_distribution, resolve_jobs
from simulator.workloads.runner import JobThread, Workload

__all__ = [
    "FIO_RANDSEED",
    "FioJob",
    "JobThread",
    "RandomOffsets",
    "SequentialOffsets",
    "Workload",
    "load_jobfile",
    "make_offsets",
    "parse_jobfile",
    "parse_jobfile_text",
    "parse_random_distribution",
    "resolve_jobs",
]

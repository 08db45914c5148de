"""storage-perf-simulator: discrete-event simulation of HDDs, SSDs and Ceph clusters.

The package is organised as in docs/design.md: ``engine`` (SimPy environment, component tree,
random streams), ``devices`` (HDD, SSD, simple queueing devices; one submit interface), ``ceph``
(RBD, placement, OSDs, BlueStore/FileStore), ``workloads`` (fio semantics; the one IO driver),
``metrics`` (HDR histograms, fio-shaped results, confidence intervals, plots), ``fio`` (reading
real fio output), ``experiment`` (experiment files and their run lifecycle), ``calibration`` and
``cli`` (the ``simrun`` command).

From Python (a notebook)::

    import simulator
    summary, runs = simulator.simulate("experiments/hdd_ncq_qd_sweep.yaml",
                                       set={"workload.global.runtime": "5s", "replications": 1})
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["__version__", "simulate"]


def simulate(experiment: Any, set: Any = None, out: Any = None, **kw: Any) -> Any:
    """Run an experiment (YAML path or mapping) as ``simrun run`` does; returns ``summary, runs``.
    See :func:`simulator.experiment.lifecycle.simulate`."""
    from simulator.experiment.lifecycle import simulate as _simulate

    return _simulate(experiment, set, out, **kw)

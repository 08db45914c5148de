"""storage-perf-simulator: discrete-event simulation of HDDs, SSDs and Ceph clusters.

The package is organised as in docs/design.md: ``engine`` (SimPy environment, component tree,
random streams), ``devices`` (HDD, SSD, RAID, simple queueing devices; one submit interface),
``ceph`` (RBD, placement, OSDs, BlueStore), ``workloads`` (fio semantics), ``metrics`` (HDR
histograms, fio-shaped results, confidence intervals), ``fio`` (reading real fio output),
``calibration`` and ``cli`` (the ``simrun`` command).
"""

__version__ = "0.1.0"

"""Calibration against real fio runs and published tables, prediction, and the validation report.

* :mod:`~simulator.calibration.trace` — workload reconstruction: ``simulate_trace(run, system)``
  simulates what a measured fio run did;
* :mod:`~simulator.calibration.compare` — ``simrun compare``: simulated vs measured per file (IOPS
  error, log ratios of mean/p50/p99/p99.9, Ruemmler–Wilkes demerit), CSV and plots;
* :mod:`~simulator.calibration.spec` — the calibration spec (``simrun calibrate SPEC.yaml``);
* :mod:`~simulator.calibration.problem` — free parameters -> simulation units -> loss (fio files,
  CSV tables, experiment sweeps with time scaling);
* :mod:`~simulator.calibration.optimize` — global stage (Sobol / LHS / differential evolution) +
  local refinement (Nelder–Mead / Powell) under a budget, common random numbers;
* :mod:`~simulator.calibration.calibrate` — the run: validation, optimiser, final simulation, atomic output
  (a spec with ``cases:`` case by case);
* :mod:`~simulator.calibration.profile` — the fitted profile with provenance;
* :mod:`~simulator.calibration.report` — the report of a fit and the summary of a multi-case spec;
* :mod:`~simulator.calibration.expr` — the safe arithmetic of tied parameters;
* :mod:`~simulator.calibration.measure` — ``simrun measure`` (real fio on this machine);
* :mod:`~simulator.calibration.validation` — ``simrun validate`` (docs/validation.md).

Campaigns live in ``calibration/`` (see its README).
"""

from simulator.calibration.trace import TRACE_DROPPED_OPTIONS, simulate_trace

__all__ = ["TRACE_DROPPED_OPTIONS", "simulate_trace"]

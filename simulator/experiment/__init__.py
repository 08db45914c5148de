"""Experiments: YAML files that name a system, fio jobs, a sweep and references; their runs and reports.

The run lifecycle has one entry, :func:`simulator.experiment.lifecycle.run` (load and validate ->
plan -> run -> summarise -> compare -> write), used by ``simrun run`` and :func:`simulator.simulate`.
Modules: ``model`` (the file's schema), ``load`` (sweep expansion, every check), ``system`` (the
simulated hardware), ``execute`` (one run), ``runner`` (planning, workers, the output directory),
``summary``, ``references``, ``report``, ``plotting``, ``lifecycle``.
"""

"""The compiled simulation core (issue 13, stage 2): one numba event loop for the per-IO path.

``run_workload(sim, workload)`` runs a built fio :class:`~simulator.workloads.runner.Workload`
in compiled code; ``unsupported(sim, workload)`` says why it cannot (the callers fall back to the
Python engine and say so). See docs/design.md, "Compiled core".
"""

from simulator.core.run import CompiledRun, Unsupported, run_fio_compiled, run_workload, unsupported

__all__ = ["CompiledRun", "Unsupported", "run_fio_compiled", "run_workload", "unsupported"]

"""The compiled simulation core (issue 13, stage 2): one numba event loop for the per-IO path.

``run_workload(sim, workload)`` runs a built fio :class:`~simulator.workloads.runner.Workload`
in compiled code; ``unsupported(sim, workload)`` says why it cannot (the callers fall back to the
Python engine and say so); ``choose``/``run_with`` are the one decision every caller uses (workloads
on RBD images go to the compiled Ceph core, simulator.core.ceph_fio). See docs/design.md,
"Compiled core".
"""

from simulator.core.run import (
    ENGINES,
    CompiledRun,
    Unsupported,
    choose,
    run_fio_compiled,
    run_with,
    run_workload,
    unsupported,
)

__all__ = ["ENGINES", "CompiledRun", "Unsupported", "choose", "run_fio_compiled", "run_with", "run_workload", "unsupported"]

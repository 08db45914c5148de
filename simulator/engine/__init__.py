"""Engine: SimPy environment per run, component tree, per-component random streams."""

from simulator.engine.core import (
    BufferedRandom,
    Component,
    Simulation,
    collapse_huge_pages,
    path_spawn_key,
    succeed_at,
    succeed_now,
)

__all__ = ["BufferedRandom", "Component", "Simulation", "collapse_huge_pages", "path_spawn_key", "succeed_at", "succeed_now"]

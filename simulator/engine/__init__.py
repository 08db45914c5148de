"""Engine: SimPy environment per run, component tree, per-component random streams."""

from simulator.engine.core import (
    BufferedRandom,
    Component,
    Simulation,
    path_spawn_key,
    succeed_at,
    succeed_now,
)

__all__ = ["BufferedRandom", "Component", "Simulation", "path_spawn_key", "succeed_at", "succeed_now"]

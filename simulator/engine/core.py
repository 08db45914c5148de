"""The engine: one SimPy environment per run, a component tree with dotted paths, and per-component
random streams.

No globals. Each :class:`Simulation` owns its ``simpy.Environment`` and its seed; each component
gets a numpy ``Generator`` seeded by ``SeedSequence(seed, spawn_key=hash(component path))`` so that
adding, removing or changing one component never shifts another's random numbers, and the same
seed gives identical results.

Hot-path convention (see docs/design.md, "Events per IO"): devices do not run a SimPy process per
request. A request's completion event is created at submit time and *scheduled* as already
succeeded at its completion time (:func:`succeed_at`), so one IO through one device costs a single
SimPy event. Devices that need to act when that event fires put their own callback first.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable, Iterator
from heapq import heappop, heappush
from typing import Any

import numpy as np
import simpy
from simpy.core import NORMAL, URGENT, EmptySchedule, StopSimulation
from simpy.events import Event, EventPriority

__all__ = [
    "BufferedRandom",
    "Component",
    "Simulation",
    "collapse_huge_pages",
    "gc_quiet",
    "path_spawn_key",
    "run_env",
    "succeed_at",
    "succeed_now",
]


def path_spawn_key(path: str) -> tuple[int, ...]:
    """Stable spawn key for a component path (independent of Python's hash randomisation)."""
    digest = hashlib.blake2b(path.encode("utf-8"), digest_size=16).digest()
    return tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))


def succeed_at(env: simpy.Environment, event: simpy.Event, delay: float, value: Any = None) -> simpy.Event:
    """Schedule ``event`` to fire successfully ``delay`` seconds from now, with ``value``.

    Equivalent to a Timeout that is the caller's own event: one heap entry, no process.
    """
    if delay < 0:
        raise ValueError(f"negative delay {delay}")
    event._ok = True
    event._value = value
    heappush(env._queue, (env._now + delay, NORMAL, next(env._eid), event))  # = env.schedule(event, NORMAL, delay)
    return event


def succeed_now(env: simpy.Environment, event: simpy.Event, value: Any = None) -> simpy.Event:
    event._ok = True
    event._value = value
    env.schedule(event, NORMAL, 0.0)
    return event


class BufferedRandom:
    """Fast scalar draws from a numpy Generator by refilling blocks of uniforms.

    Drawing one float from numpy costs ~1 µs; reading it from a prefilled array costs ~50 ns.
    The sequence depends only on the generator's seed (blocks are drawn in order).
    """

    __slots__ = ("_block", "_buf", "_i", "gen")

    def __init__(self, gen: np.random.Generator, block: int = 4096):
        self.gen = gen
        self._block = block
        self._buf: list[float] = []
        self._i = 0

    def random(self) -> float:
        i = self._i
        buf = self._buf
        if i >= len(buf):
            buf = self._buf = self.gen.random(self._block).tolist()
            i = 0
        self._i = i + 1
        return buf[i]

    def exponential(self, mean: float) -> float:
        # inverse transform on (0,1]
        return -mean * np.log1p(-self.random()) if mean > 0 else 0.0

    def uniform(self, low: float, high: float) -> float:
        return low + (high - low) * self.random()

    def integers(self, n: int) -> int:
        """Uniform integer in [0, n)."""
        return min(int(self.random() * n), n - 1)


#: generation-0 threshold of the cyclic garbage collector while a simulation runs (Python's
#: default is 700). The per-IO path frees its objects by reference counting (requests drop their
#: event at completion), so collections find little; fewer of them cost less.
RUN_GC_THRESHOLD0 = 50_000


class gc_quiet:
    """Context manager for the event loop: freeze the objects that exist at entry (the built
    system: components, caches, tables; ``gc.freeze``) so collections during the run do not traverse
    them again and again, and raise the generation-0 threshold. On exit the collector's state is
    restored and the frozen objects become collectable again. Re-entrant; does nothing if the
    collector is disabled or something else froze objects."""

    _depth = 0

    def __enter__(self) -> gc_quiet:
        self._active = False
        if gc_quiet._depth == 0 and gc.isenabled() and gc.get_freeze_count() == 0:
            self._active = True
            self._old = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(max(self._old[0], RUN_GC_THRESHOLD0), self._old[1], self._old[2])
        gc_quiet._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        gc_quiet._depth -= 1
        if self._active:
            gc.set_threshold(*self._old)
            gc.unfreeze()


_MADV_HUGEPAGE = 14
_MADV_COLLAPSE = 25  # Linux >= 6.1
_HUGE = 1 << 21


def collapse_huge_pages() -> int:
    """Back the process's anonymous memory (the Python heap's arenas, numpy arrays) by 2 MiB
    transparent huge pages, now (``madvise`` MADV_HUGEPAGE + MADV_COLLAPSE on every private
    read-write anonymous mapping of ``/proc/self/maps``); returns the MiB collapsed.

    For a built system of a large cluster: a client IO touches the state of OSDs spread over
    hundreds of MB (every OSD's op queue, object store, caches and drive model), so nearly every
    access misses the CPU's TLB as well as its caches; with huge pages the TLB covers 512 times
    as much (measured: 1,008 OSDs, 12 % less CPU per IO, none at 24 OSDs). Best effort: does
    nothing where the kernel lacks MADV_COLLAPSE or the system is not Linux; results are unchanged
    either way (memory placement only). Takes ~1.3 s per GB."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return 0
    try:
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        madvise.restype = ctypes.c_int
    except (OSError, AttributeError):
        return 0
    done = 0
    for ln in lines:
        parts = ln.split()
        if len(parts) < 5 or parts[1][:2] != "rw" or parts[1][3] != "p" or (len(parts) > 5 and parts[5] != "[heap]"):
            continue
        a, b = (int(x, 16) for x in parts[0].split("-"))
        lo = (a + _HUGE - 1) & ~(_HUGE - 1)
        hi = b & ~(_HUGE - 1)
        if hi <= lo:
            continue
        if madvise(lo, hi - lo, _MADV_HUGEPAGE) != 0:
            continue
        if madvise(lo, hi - lo, _MADV_COLLAPSE) == 0:
            done += hi - lo
        elif ctypes.get_errno() == 22:  # EINVAL: the kernel has no MADV_COLLAPSE
            return done >> 20
    return done >> 20


def run_env(env: simpy.Environment, until: float | simpy.Event | None = None) -> Any:
    """``env.run(until)`` with SimPy's ``Environment.step`` inlined in the loop: the same events in
    the same order with the same semantics (``until`` as a time or an event, StopSimulation
    re-queueing the stopping event's remaining callbacks, failed undefused events crashing the run,
    the same errors), without a method call and its exception frame per event."""
    if until is not None:
        if not isinstance(until, Event):
            at = until if isinstance(until, int) else float(until)
            if at <= env.now:
                raise ValueError(f"until ({at}) must be greater than the current simulation time")
            until = Event(env)
            until._ok = True
            until._value = None
            env.schedule(until, URGENT, at - env.now)
        elif until.callbacks is None:
            return until.value
        until.callbacks.append(StopSimulation.callback)
    queue = env._queue
    try:
        while True:
            try:
                env._now, _, _, event = heappop(queue)
            except IndexError:
                raise EmptySchedule from None
            callbacks, event.callbacks = event.callbacks, None
            try:
                for callback in callbacks:
                    callback(event)
            except StopSimulation:
                event.callbacks = callbacks[callbacks.index(callback) + 1 :]
                env.schedule(event, EventPriority(-1))
                raise
            if not event._ok and not hasattr(event, "_defused"):
                exc = type(event._value)(*event._value.args)
                exc.__cause__ = event._value
                raise exc
    except StopSimulation as exc:
        return exc.args[0]
    except EmptySchedule:
        if until is not None:
            assert not until.triggered
            raise RuntimeError(f'No scheduled events left but "until" event was not triggered: {until}') from None
    return None


class Simulation:
    """One run: a SimPy environment, an experiment seed, and the root of the component tree."""

    def __init__(self, seed: int = 1, name: str = "sim"):
        if seed < 0:
            raise ValueError("seed must be >= 0")
        self.env = simpy.Environment()
        self.seed = int(seed)
        self.root = Component(name="", parent=None, sim=self)
        self._paths: set[str] = set()

    @property
    def now(self) -> float:
        return self.env.now

    def stream(self, path: str) -> np.random.Generator:
        """Independent random generator for ``path``: SeedSequence(seed, spawn_key=f(path))."""
        ss = np.random.SeedSequence(entropy=self.seed, spawn_key=path_spawn_key(path))
        return np.random.Generator(np.random.PCG64(ss))

    def register(self, path: str) -> None:
        if path in self._paths:
            raise ValueError(f"duplicate component path {path!r}")
        self._paths.add(path)

    def run(self, until: float | simpy.Event | None = None) -> None:
        """Run the simulation (``env.run``, as :func:`run_env`) with the cyclic garbage collector
        quietened: see :func:`gc_quiet`."""
        with gc_quiet():
            run_env(self.env, until)

    def components(self) -> Iterator[Component]:
        yield from self.root.walk()


class Component:
    """A node of the component tree. ``path`` is the dotted path from the root ("cluster.osd3.hdd").

    Subclasses get ``self.env``, ``self.sim``, a private random generator ``self.rng`` (numpy) and a
    fast scalar stream ``self.rand`` (:class:`BufferedRandom`), both seeded from the path.
    """

    def __init__(self, name: str, parent: Component | None, sim: Simulation | None = None):
        if parent is None and sim is None:
            raise ValueError("a root component needs a Simulation")
        if name and ("." in name or not name.strip()):
            raise ValueError(f"invalid component name {name!r} (no dots, not blank)")
        self.name = name
        self.parent = parent
        self.sim: Simulation = sim if sim is not None else parent.sim  # type: ignore[union-attr]
        self.env: simpy.Environment = self.sim.env
        self.children: list[Component] = []
        if parent is not None:
            parent.children.append(self)
        self.path = name if parent is None or not parent.path else f"{parent.path}.{name}"
        if self.path:
            self.sim.register(self.path)
        self._rng: np.random.Generator | None = None
        self._rand: BufferedRandom | None = None

    @property
    def rng(self) -> np.random.Generator:
        if self._rng is None:
            self._rng = self.sim.stream(self.path or "<root>")
        return self._rng

    @property
    def rand(self) -> BufferedRandom:
        if self._rand is None:
            self._rand = BufferedRandom(self.sim.stream((self.path or "<root>") + "#scalar"))
        return self._rand

    def substream(self, name: str) -> np.random.Generator:
        """A further independent stream of this component (e.g. 'offsets', 'service')."""
        return self.sim.stream(f"{self.path}#{name}")

    def walk(self) -> Iterator[Component]:
        yield self
        for c in self.children:
            yield from c.walk()

    def find(self, path: str) -> Component:
        for c in self.sim.root.walk():
            if c.path == path:
                return c
        raise KeyError(path)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path or '<root>'}>"


Callback = Callable[[simpy.Event], None]

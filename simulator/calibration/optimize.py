"""The optimiser: a global stage (scipy differential evolution, or a Sobol / Latin-hypercube
screen) then a local refinement (Nelder–Mead or Powell) of the continuous parameters, under a
budget of evaluations and wall time.

The search space: each continuous parameter is mapped to u in [0, 1] (linearly, or linearly in
log for ``scale: log``); each discrete parameter is an integer index into its ``choices`` (DE's
``integrality``; a screen takes floor(u × n)). The local stage keeps the discrete parameters at the
best point of the global stage.

Every evaluation uses the same simulation seed (common random numbers), so the loss is a
deterministic function of the parameters. The first evaluation is the start point: the spec's
``start`` values, else the base system's current values (clipped to the bounds) — its loss is the
"before calibration" figure of the report. Evaluations of a batch (a screen, a DE generation) run
in parallel; identical points are evaluated once.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulator.calibration.journal import Journal, memo_key
from simulator.calibration.problem import EvalResult, Problem
from simulator.calibration.spec import quantity
from simulator.errors import SimError

__all__ = ["FitResult", "Optimizer"]


class _BudgetExhausted(Exception):
    pass


@dataclass
class FitResult:
    values: dict[str, Any]
    result: EvalResult
    start_values: dict[str, Any]
    start_result: EvalResult
    history: list[dict[str, Any]] = field(default_factory=list)
    evals: int = 0
    wall_s: float = 0.0
    stopped_by: str = "converged"
    note: str = ""


ProgressFn = Callable[[dict[str, Any]], None]


class Optimizer:
    def __init__(self, problem: Problem, runner: Callable[[list[dict[str, Any]]], list[Any]], progress: ProgressFn | None = None,
                 journal: Journal | None = None):
        self.p = problem
        self.journal = journal
        self.spec = problem.spec
        self.runner = runner
        self.progress = progress
        self.cont = [f for f in problem.params if not f.discrete]
        self.disc = [f for f in problem.params if f.discrete]
        self.memo: dict[tuple, tuple[dict[str, Any], EvalResult]] = {}
        self.history: list[dict[str, Any]] = []
        self.best: tuple[dict[str, Any], EvalResult] | None = None
        self.t0 = time.perf_counter()
        # the campaign's wall clock: this session's time plus the wall of earlier sessions (a journaled
        # evaluation moves it forward to the wall at which it finished, so a replay meets the budget as the
        # original run did; time spent on evaluations cut off by an interruption is not counted)
        self._clock0 = self.t0
        self.stage = "start"
        self.stopped_by = "converged"
        self.resumed = 0  # evaluations taken from the journal in this session
        self.simulated = 0  # evaluations simulated in this session
        self._t_first_sim: float | None = None
        self._best_seen = math.inf
        self._best_seen_rms = math.nan

    # --------------------------------------------------------------------------- coordinates
    def values_of(self, x: np.ndarray) -> dict[str, Any]:
        vals: dict[str, Any] = {}
        nc = len(self.cont)
        for i, f in enumerate(self.cont):
            vals[f.key] = f.to_value(float(x[i]))
        for j, f in enumerate(self.disc):
            k = int(round(float(x[nc + j])))
            vals[f.key] = f.choices[min(len(f.choices) - 1, max(0, k))]
        return vals

    def x_of(self, vals: dict[str, Any]) -> np.ndarray:
        x = [min(1.0, max(0.0, f.to_unit(vals[f.key]))) for f in self.cont]
        x += [float(f.choices.index(vals[f.key])) for f in self.disc]
        return np.asarray(x, dtype=float)

    def start_values(self) -> dict[str, Any]:
        vals = {}
        for f in self.p.params:
            if f.discrete:
                cur = self.p.base_values.get(f.key)
                vals[f.key] = cur if cur in f.choices else f.choices[0]
            else:
                lo, hi = f.lo_hi()
                if f.start is not None:
                    v = quantity(f.start)[0]
                elif self.p.base_values.get(f.key) is not None:
                    v = float(self.p.base_values[f.key])
                elif f.prior is not None:
                    v = quantity(f.prior.mean)[0]
                else:
                    v = f.to_value(0.5)
                vals[f.key] = min(hi, max(lo, v))
        return vals

    def _key(self, vals: dict[str, Any]) -> tuple:
        return memo_key(vals)

    def wall(self) -> float:
        """The campaign's wall clock, s (see __init__)."""
        return time.perf_counter() - self._clock0

    # --------------------------------------------------------------------------- evaluation
    @property
    def n_evals(self) -> int:
        return len(self.history)

    def _remaining(self) -> int:
        if self.wall() > self.spec.budget.wall_s:
            self.stopped_by = "wall time"
            return 0
        left = self.spec.budget.max_evals - self.n_evals
        if left <= 0:
            self.stopped_by = "evaluations"
        return max(0, left)

    def evaluate(self, value_sets: list[dict[str, Any]]) -> list[EvalResult]:
        """Evaluate (memoised, journaled, in one parallel batch); raises _BudgetExhausted when the budget is
        used up (after evaluating what it still allows). The batch's results enter the history in the order
        of ``value_sets`` (not the order they finish in), so the history and the best point are a function
        of the results alone."""
        todo: list[dict[str, Any]] = []
        seen = set()
        for v in value_sets:
            k = self._key(v)
            if k not in self.memo and k not in seen:
                seen.add(k)
                todo.append(v)
        left = self._remaining()
        cut = len(todo) > left
        todo = todo[:left]
        if todo:
            got_r: list[EvalResult | None] = [None] * len(todo)
            miss: list[int] = []
            for i, v in enumerate(todo):
                e = self.journal.lookup(v) if self.journal is not None else None
                if e is None:
                    miss.append(i)
                    continue
                got_r[i] = self.journal.result_of(e)  # type: ignore[union-attr]
                self._clock0 = min(self._clock0, time.perf_counter() - e.wall_s)
                self.resumed += 1
                self._tick(got_r[i])  # type: ignore[arg-type]
            if miss:
                if self._t_first_sim is None:
                    self._t_first_sim = time.perf_counter()
                batch = [todo[i] for i in miss]

                def got(j: int, r: EvalResult) -> None:
                    if self.journal is not None:
                        r = self.journal.record(batch[j], r, self.stage, self.wall())
                    got_r[miss[j]] = r
                    self.simulated += 1
                    self._tick(r)

                self.p.evaluate_many(batch, self.runner, got)
            for v, r in zip(todo, got_r, strict=True):
                self.memo[self._key(v)] = (v, r)  # type: ignore[assignment]
                self._record(v, r)  # type: ignore[arg-type]
        if cut or (not todo and left == 0):
            if self.stopped_by == "converged":  # the batch was cut to what the evaluation budget left
                self.stopped_by = "evaluations"
            raise _BudgetExhausted
        return [self.memo[self._key(v)][1] for v in value_sets]

    def _record(self, vals: dict[str, Any], r: EvalResult) -> None:
        row: dict[str, Any] = {"eval": len(self.history) + 1, "stage": self.stage, "loss": r.loss, "rms_log_error": r.rms}
        for f in self.p.params:
            row[f.name] = vals[f.key]
        if r.failed:
            row["failed"] = r.failed
        self.history.append(row)
        if math.isfinite(r.loss) and (self.best is None or r.loss < self.best[1].loss):
            self.best = (vals, r)

    def eta_s(self, done: int) -> float | None:
        """Seconds left at this session's rate of simulated evaluations (None before the first one)."""
        if not self.simulated or self._t_first_sim is None:
            return None
        rate = (time.perf_counter() - self._t_first_sim) / self.simulated
        return max(0, self.spec.budget.max_evals - done) * rate

    def _tick(self, r: EvalResult) -> None:
        """Progress after one evaluation finished (or was taken from the journal)."""
        if math.isfinite(r.loss) and r.loss < self._best_seen:
            self._best_seen, self._best_seen_rms = r.loss, r.rms
        if self.progress:
            done = self.resumed + self.simulated
            el = time.perf_counter() - self.t0
            self.progress({
                "stage": self.stage, "evals": done, "max_evals": self.spec.budget.max_evals,
                "best": self._best_seen, "best_rms": self._best_seen_rms, "resumed": self.resumed, "simulated": self.simulated,
                "rate": self.simulated / max(el, 1e-9), "wall": el, "campaign_wall": self.wall(), "eta": self.eta_s(done),
            })

    def _f(self, x: np.ndarray) -> float:
        return self.evaluate([self.values_of(np.asarray(x, dtype=float))])[0].loss

    # --------------------------------------------------------------------------- stages
    def _screen(self, method: str, n: int, seed: int) -> None:
        self.evaluate(self.screen_points(method, n, seed))

    def screen_points(self, method: str, n: int, seed: int) -> list[dict[str, Any]]:
        """The parameter sets of a Sobol or Latin-hypercube screen, in evaluation order (a deterministic
        function of the spec's parameters, ``n`` and ``seed``: a lost journal's screen can be recomputed)."""
        from scipy.stats import qmc

        d = len(self.cont) + len(self.disc)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Sobol balance warning for n not a power of two
            eng = qmc.Sobol(d, scramble=True, rng=seed) if method == "sobol" else qmc.LatinHypercube(d, rng=seed)
            u = eng.random(n)
        xs = []
        nc = len(self.cont)
        for row in u:
            x = np.array(row, dtype=float)
            for j, f in enumerate(self.disc):
                x[nc + j] = min(len(f.choices) - 1, math.floor(row[nc + j] * len(f.choices)))
            xs.append(x)
        return [self.values_of(x) for x in xs]

    def _de(self, popsize: int, maxiter: int, seed: int, x0: np.ndarray) -> None:
        from scipy.optimize import differential_evolution

        bounds = [(0.0, 1.0)] * len(self.cont) + [(0.0, float(len(f.choices) - 1)) for f in self.disc]
        integrality = [False] * len(self.cont) + [True] * len(self.disc)

        def mapper(func: Callable, xs: Any) -> list[float]:
            xs = [np.asarray(x, dtype=float) for x in xs]
            return [r.loss for r in self.evaluate([self.values_of(x) for x in xs])]

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            differential_evolution(
                self._f, bounds, popsize=popsize, maxiter=maxiter, rng=seed, polish=False, init="sobol",
                updating="deferred", workers=mapper, integrality=integrality if self.disc else None, x0=x0, tol=0.0,
            )

    def _local(self, x_best: np.ndarray, cap: int | None = None) -> None:
        from scipy.optimize import minimize

        loc = self.spec.optimizer.local
        nc = len(self.cont)
        if loc.method == "none" or nc == 0:
            return
        fixed = x_best[nc:]
        left = self._remaining()
        maxfev = left if loc.maxiter is None else min(left, loc.maxiter)
        if cap is not None:
            maxfev = min(maxfev, cap)
        if maxfev <= 0:
            return

        def f(u: np.ndarray) -> float:
            return self._f(np.concatenate([np.clip(u, 0.0, 1.0), fixed]))

        u0 = np.clip(x_best[:nc], 0.0, 1.0)
        f0 = self.best[1].loss if self.best is not None else 1.0
        fatol = loc.fatol * max(abs(f0), 1e-9)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if loc.method == "nelder-mead":
                simplex = [u0]
                for i in range(nc):
                    v = u0.copy()
                    v[i] = v[i] + loc.step if v[i] + loc.step <= 1.0 else v[i] - loc.step
                    simplex.append(v)
                res = minimize(f, u0, method="Nelder-Mead", bounds=[(0.0, 1.0)] * nc,
                               options={"maxfev": maxfev, "initial_simplex": np.array(simplex), "xatol": loc.xatol,
                                        "fatol": fatol})
            else:
                res = minimize(f, u0, method="Powell", bounds=[(0.0, 1.0)] * nc,
                               options={"maxfev": maxfev, "xtol": loc.xatol, "ftol": loc.fatol})  # Powell's ftol is relative
        if not res.success:  # maxfev reached: the budget (or local.maxiter), not convergence, ended the stage
            self.stopped_by = "evaluations" if maxfev == left else f"local stage: {res.message}"

    def _local_per_choice(self) -> None:
        """The local stage once per combination of the discrete parameters, each from the best point
        evaluated with that combination (else the best point's continuous values), the remaining budget
        shared between them; the best of all is kept."""
        import itertools

        nc = len(self.cont)
        combos = list(itertools.product(*[range(len(f.choices)) for f in self.disc]))
        best_x = self.x_of(self.best[0]) if self.best else None
        for i, combo in enumerate(combos):
            pts = [(r.loss, self.x_of(v)) for v, r in self.memo.values()
                   if math.isfinite(r.loss) and tuple(int(round(c)) for c in self.x_of(v)[nc:]) == combo]
            if pts:
                x = min(pts, key=lambda t: t[0])[1]
            elif best_x is not None:
                x = np.concatenate([best_x[:nc], np.array(combo, dtype=float)])
            else:
                continue
            self._local(x, cap=max(1, self._remaining() // (len(combos) - i)))

    def run(self) -> FitResult:
        g = self.spec.optimizer.global_
        seed = self.spec.seed
        start = self.start_values()
        x0 = self.x_of(start)
        start_res: EvalResult | None = None
        try:
            self.stage = "start"
            start_res = self.evaluate([start])[0]
            if start_res.failed and isinstance(start_res.error, SimError):
                raise start_res.error  # bad input (a model that rejects the start point), not an infeasible point
            if g.method in ("sobol", "lhs"):
                self.stage = g.method
                self._screen(g.method, g.n, seed)
            elif g.method == "de":
                self.stage = "de"
                self._de(g.n, g.maxiter, seed, x0)
            self.stage = "local"
            if self.spec.optimizer.local.per_choice and self.disc:
                self._local_per_choice()
            else:
                xb = self.x_of(self.best[0]) if self.best else x0
                self._local(xb)
        except _BudgetExhausted:
            pass
        if start_res is None:
            start_res = self.memo[self._key(start)][1] if self._key(start) in self.memo else None  # type: ignore[assignment]
        if self.best is None:
            fails = [h.get("failed") for h in self.history if h.get("failed")]
            raise SimError("every evaluation failed" + (f" (first: {fails[0]})" if fails else ""))
        return FitResult(
            values=self.best[0], result=self.best[1], start_values=start, start_result=start_res,  # type: ignore[arg-type]
            history=self.history, evals=len(self.history), wall_s=self.wall(), stopped_by=self.stopped_by,
        )

"""Service-time and inter-arrival distributions with analytic moments (as in Ciw).

Each distribution knows its mean and variance in closed form, so statistical tests can compare a
simulated sample with theory cheaply (M/M/1, M/D/1, Pollaczek–Khinchine). Config form (YAML)::

    service: {dist: exponential, mean: 5ms}
    service: {dist: deterministic, value: 2ms}
    service: {dist: lognormal, mean: 5ms, cv: 0.5}
"""

from __future__ import annotations

import math
from typing import Annotated, Literal, Union

from pydantic import Field, model_validator

from simulator.config.base import ConfigModel
from simulator.engine import BufferedRandom
from simulator.units import Seconds


class _Dist(ConfigModel):
    @property
    def mean(self) -> float:
        raise NotImplementedError

    @property
    def variance(self) -> float:
        raise NotImplementedError

    @property
    def scv(self) -> float:
        """Squared coefficient of variation Var/mean^2."""
        m = self.mean
        return self.variance / (m * m) if m > 0 else 0.0

    def sample(self, rand: BufferedRandom) -> float:
        raise NotImplementedError


class Deterministic(_Dist):
    """Constant value (the D of M/D/1)."""

    dist: Literal["deterministic"] = "deterministic"
    value: Seconds = Field(ge=0, le=3600, description="the constant, seconds, 0..1h (units accepted: 2ms)")

    @property
    def mean(self) -> float:
        return self.value

    @property
    def variance(self) -> float:
        return 0.0

    def sample(self, rand: BufferedRandom) -> float:
        return self.value


class Exponential(_Dist):
    """Exponential with the given mean (the M of M/M/1)."""

    dist: Literal["exponential"] = "exponential"
    mean_: Seconds = Field(alias="mean", gt=0, le=3600, description="mean, seconds (at most 1h)")

    @property
    def mean(self) -> float:
        return self.mean_

    @property
    def variance(self) -> float:
        return self.mean_**2

    def sample(self, rand: BufferedRandom) -> float:
        return -self.mean_ * math.log(1.0 - rand.random())


class Uniform(_Dist):
    """Uniform on [low, high]."""

    dist: Literal["uniform"] = "uniform"
    low: Seconds = Field(ge=0, le=3600, description="lower bound, seconds")
    high: Seconds = Field(ge=0, le=3600, description="upper bound, seconds (>= low, at most 1h)")

    @model_validator(mode="after")
    def _ordered(self) -> Uniform:
        if self.high < self.low:
            raise ValueError("high must be >= low")
        return self

    @property
    def mean(self) -> float:
        return 0.5 * (self.low + self.high)

    @property
    def variance(self) -> float:
        return (self.high - self.low) ** 2 / 12.0

    def sample(self, rand: BufferedRandom) -> float:
        return self.low + (self.high - self.low) * rand.random()


class Lognormal(_Dist):
    """Log-normal given by its mean and coefficient of variation (heavy-ish right tail)."""

    dist: Literal["lognormal"] = "lognormal"
    mean_: Seconds = Field(alias="mean", gt=0, le=3600, description="mean, seconds (at most 1h)")
    cv: float = Field(gt=0, le=100, description="coefficient of variation (stddev/mean), dimensionless, at most 100")

    @property
    def mean(self) -> float:
        return self.mean_

    @property
    def variance(self) -> float:
        return (self.cv * self.mean_) ** 2

    def sample(self, rand: BufferedRandom) -> float:
        s2 = math.log1p(self.cv**2)
        mu = math.log(self.mean_) - 0.5 * s2
        # Box-Muller from two uniforms
        u1 = 1.0 - rand.random()
        u2 = rand.random()
        z = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
        return math.exp(mu + math.sqrt(s2) * z)


class Erlang(_Dist):
    """Erlang-k (sum of k exponentials) with the given mean; SCV = 1/k."""

    dist: Literal["erlang"] = "erlang"
    mean_: Seconds = Field(alias="mean", gt=0, le=3600, description="mean, seconds (at most 1h)")
    k: int = Field(ge=1, le=1000, description="number of phases, 1..1000 (each sample draws k uniforms)")

    @property
    def mean(self) -> float:
        return self.mean_

    @property
    def variance(self) -> float:
        return self.mean_**2 / self.k

    def sample(self, rand: BufferedRandom) -> float:
        p = 1.0
        for _ in range(self.k):
            p *= 1.0 - rand.random()
        return -self.mean_ / self.k * math.log(p)


Distribution = Annotated[
    Union[Deterministic, Exponential, Uniform, Lognormal, Erlang],
    Field(discriminator="dist"),
]

__all__ = ["Deterministic", "Distribution", "Erlang", "Exponential", "Lognormal", "Uniform"]

"""Kafka's ExponentialBackoff: `initial * multiplier**attempts`, capped, with multiplicative jitter."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class ExponentialBackoff:
    initial_ms: int
    multiplier: float
    max_ms: int
    jitter: float

    def backoff_ms(self, attempts: int, rng: random.Random) -> int:
        """The wait before attempt `attempts + 1` (0 attempts so far: the initial interval)."""
        if self.max_ms <= self.initial_ms or self.multiplier <= 1:
            term = float(self.initial_ms)
        else:
            exp_max = math.log(self.max_ms / self.initial_ms) / math.log(self.multiplier)
            term = self.initial_ms * self.multiplier ** min(max(attempts, 0), exp_max)
        factor = rng.uniform(1 - self.jitter, 1 + self.jitter) if self.jitter > 0 else 1.0
        return min(int(term * factor), self.max_ms)

"""Election timers as pure functions of the settings and an injected RNG (after KafkaRaftClient)."""

from __future__ import annotations

import random


def random_election_timeout(timeout_ms: int, rng: random.Random) -> int:
    """timeout + random[0, timeout): voters that lost their leader rarely time out together."""
    return timeout_ms + rng.randrange(timeout_ms)


def binary_exponential_backoff(step_ms: int, max_ms: int, retries: int, rng: random.Random) -> int:
    """binaryExponentialElectionBackoffMs: step * random[0, 2^retries), capped; split votes spread out."""
    return min(max_ms, step_ms * rng.randrange(1 << min(retries, 20)))


def strict_exponential_backoff(max_ms: int, position: int, successors: int) -> int:
    """strictExponentialElectionBackoffMs: the first preferred successor runs at once and each later
    one waits longer, so the most caught-up voter usually wins without a split vote."""
    if position == 0:
        return 0
    return min(max_ms, (max_ms >> (successors - 1)) << (position - 1))

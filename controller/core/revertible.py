"""What a metadata transaction needs from each manager holding replicated state.

A transaction (KIP-868) may end in AbortTransactionRecord, which must leave the state as it was
at BeginTransactionRecord. At Begin the controller asks every replicated manager for a snapshot;
on Abort it hands each its snapshot back. The controller never looks inside.

A snapshot copies exactly as deep as replay changes things in place: the values replay replaces
whole (registrations, partitions: immutable) are shared, the containers it mutates are copied.
Soft state that no record carries (broker heartbeat sessions) is not replicated and outlives an
abort.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

S = TypeVar("S")


class Revertible(Protocol[S]):
    def snapshot(self) -> S:
        """The replicated state as it is now, unaffected by later replays."""
        ...

    def restore(self, snapshot: S) -> None:
        """Back to `snapshot`, which this call takes over: it is never used again."""
        ...

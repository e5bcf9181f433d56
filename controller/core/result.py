"""ControllerResult: what an operation hands back to the shell."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from protocol.framing import ApiMessageAndVersion

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ControllerResult(Generic[T]):
    """Records to append (in order) and the response to send once they are committed.

    `is_atomic` asks the shell to write all records in one batch, so a reader never sees only part
    of them. A rejected request has an error response and no records.
    """

    records: list[ApiMessageAndVersion] = field(default_factory=list)
    response: T | None = None
    is_atomic: bool = False

    @classmethod
    def of(cls, records: Iterable[ApiMessageAndVersion], response: T) -> ControllerResult[T]:
        return cls(list(records), response, False)

    @classmethod
    def atomic_of(cls, records: Iterable[ApiMessageAndVersion], response: T) -> ControllerResult[T]:
        return cls(list(records), response, True)

    def without_records(self) -> ControllerResult[T]:
        """The same response with nothing to write (validate-only requests)."""
        return ControllerResult([], self.response, self.is_atomic)

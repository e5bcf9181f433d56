"""An in-memory log and quorum-state store that applies a `Ready`, for tests and the simulation.

It stands for what survives a crash: the simulation throws the core away and keeps this.
"""

from __future__ import annotations

import bisect

from kraftpy.raft.log_view import LogView
from kraftpy.raft.messages import Entry, Snapshot
from kraftpy.raft.ready import Ready
from kraftpy.raft.state import QuorumState


class MemoryLog:
    def __init__(self, voters: frozenset[int]) -> None:
        self.entries: list[Entry] = []
        self.log_start = 0
        self.snapshot: Snapshot | None = None
        self.quorum_state = QuorumState(voters=voters)

    def _index(self, offset: int) -> int:
        """Index of the first batch that starts at or after `offset`."""
        return bisect.bisect_left([e.offset for e in self.entries], offset)

    def read(self, start: int, max_count: int) -> tuple[Entry, ...]:
        if start < self.log_start:
            return ()
        i = self._index(start)
        return tuple(self.entries[i : i + max_count])

    def batch_at(self, offset: int) -> Entry | None:
        """The stored batch holding `offset`, if any."""
        i = bisect.bisect_right([e.offset for e in self.entries], offset) - 1
        if i < 0 or offset >= self.entries[i].end:
            return None
        return self.entries[i]

    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot

    @property
    def end_offset(self) -> int:
        return self.entries[-1].end if self.entries else self.log_start

    def persist(self, ready: Ready) -> None:
        if ready.install_snapshot is not None:
            self.snapshot = ready.install_snapshot
            self.log_start = ready.install_snapshot.snapshot_id.EndOffset
            self.entries = []
        if ready.truncate_to is not None:
            del self.entries[self._index(ready.truncate_to) :]
        if ready.appends:
            if ready.appends[0].offset != self.end_offset:
                raise AssertionError(
                    f"append at {ready.appends[0].offset} but the log ends at {self.end_offset}"
                )
            self.entries.extend(ready.appends)
        if ready.local_snapshot is not None:
            end = ready.local_snapshot.snapshot_id.EndOffset
            del self.entries[: self._index(end)]
            self.log_start = end
            self.snapshot = ready.local_snapshot
        if ready.quorum_state is not None:
            self.quorum_state = ready.quorum_state

    def view(self) -> LogView:
        """The core's view rebuilt from what is stored, as a restarted node does."""
        view = LogView(log_start=self.log_start, end_offset=self.log_start)
        view.snapshot_id = self.snapshot.snapshot_id if self.snapshot else None
        view.append(tuple(self.entries))
        view.end_offset = self.end_offset
        return view

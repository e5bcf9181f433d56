"""The output of one step of the core, to be handled in this order by the shell:

1. `install_snapshot`, `truncate_to`, `appends`, `local_snapshot` to the log, and `quorum_state` to
   `quorum-state` (fsynced); the core assumes they are durable before its next step; with
   `local_snapshot` or `clean_log`, metadata retention is applied to the log;
2. only then send `messages`: a vote or an epoch change must never leave before it is on disk;
3. hand `apply_snapshot` (if any), then `committed`, to the state machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kraftpy.raft.messages import Entry, Envelope, Snapshot
from kraftpy.raft.state import QuorumState


@dataclass(slots=True)
class Ready:
    quorum_state: QuorumState | None = None
    install_snapshot: Snapshot | None = None
    truncate_to: int | None = None
    appends: list[Entry] = field(default_factory=list)
    local_snapshot: Snapshot | None = None
    clean_log: bool = False
    """The minute of kraftpy.raft.cleaning is up: apply retention (it removes only what lies before
    a snapshot, which the core has let go of already)."""
    messages: list[Envelope] = field(default_factory=list)
    apply_snapshot: Snapshot | None = None
    committed: list[Entry] = field(default_factory=list)
    high_watermark: int = 0

    @property
    def persists_anything(self) -> bool:
        return bool(
            self.quorum_state
            or self.install_snapshot
            or self.truncate_to is not None
            or self.appends
            or self.local_snapshot
        )

"""The `quorum-state` file: the Raft election state a voter persists before acting on it (reference 8.5).

One line of JSON in `__cluster_metadata-0/quorum-state`, written to `quorum-state.tmp`, fsynced and
renamed over the old file, so a crash leaves either the old or the new state. kraftpy runs a static
quorum (kraft.version 0), so the v0 layout is written; v1 files are read too.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

FILE_NAME = "quorum-state"


class QuorumStateError(ValueError):
    """A quorum-state file that cannot be read."""


@dataclass(frozen=True)
class ElectionState:
    leader_id: int = -1
    leader_epoch: int = 0
    voted_id: int = -1
    voters: tuple[int, ...] = ()

    def to_json(self) -> str:
        doc = {
            "clusterId": "",
            "leaderId": self.leader_id,
            "leaderEpoch": self.leader_epoch,
            "votedId": self.voted_id,
            "appliedOffset": 0,
            "currentVoters": [{"voterId": v} for v in sorted(self.voters)],
            "data_version": 0,
        }
        return json.dumps(doc, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, source: str = FILE_NAME) -> ElectionState:
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise QuorumStateError(f"{source}: not JSON: {e}") from None
        if not isinstance(doc, dict) or "data_version" not in doc:
            raise QuorumStateError(f"{source}: no data_version field")
        try:
            voters = tuple(int(v["voterId"]) for v in doc.get("currentVoters") or [])
            return cls(
                leader_id=int(doc.get("leaderId", -1)),
                leader_epoch=int(doc.get("leaderEpoch", -1)),
                voted_id=int(doc.get("votedId", -1)),
                voters=voters,
            )
        except (TypeError, ValueError, KeyError) as e:
            raise QuorumStateError(f"{source}: bad field: {e}") from None


def read_quorum_state(partition_dir: Path) -> ElectionState | None:
    """The persisted state, or None when this voter never wrote one."""
    path = partition_dir / FILE_NAME
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    return ElectionState.from_json(text, str(path))


def write_quorum_state(partition_dir: Path, state: ElectionState) -> None:
    """Durably replace the file (blocking: call it off the event loop)."""
    partition_dir.mkdir(parents=True, exist_ok=True)
    tmp = partition_dir / f"{FILE_NAME}.tmp"
    with open(tmp, "w") as f:
        f.write(state.to_json())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, partition_dir / FILE_NAME)
    fd = os.open(partition_dir, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

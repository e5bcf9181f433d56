"""`quorum-state`: what a voter remembers across restarts, in the format Kafka writes (reference 8.5).

The other small files beside the segments (leader-epoch-checkpoint, partition.metadata) are
kraftpy.log's, shared with partition logs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraftpy.log.errors import LogError
from kraftpy.storage.atomic import atomic_write
from protocol.uuid import Uuid


@dataclass(frozen=True)
class QuorumStateData:
    """What a voter must remember across restarts: its epoch, the leader it knows, its vote.

    Written as version 0 (kraft.version 0), the format every sample uses; version 1 files are read.
    """

    leader_id: int = -1
    leader_epoch: int = 0
    voted_id: int = -1
    applied_offset: int = 0
    current_voters: tuple[int, ...] = ()
    cluster_id: str = ""
    voted_directory_id: Uuid | None = None
    data_version: int = 0

    def to_json(self) -> str:
        if self.data_version == 0:
            doc: dict[str, Any] = {
                "clusterId": self.cluster_id,
                "leaderId": self.leader_id,
                "leaderEpoch": self.leader_epoch,
                "votedId": self.voted_id,
                "appliedOffset": self.applied_offset,
                "currentVoters": [{"voterId": v} for v in self.current_voters],
                "data_version": 0,
            }
        else:
            doc = {"leaderId": self.leader_id, "leaderEpoch": self.leader_epoch, "votedId": self.voted_id}
            if self.voted_directory_id is not None:
                doc["votedDirectoryId"] = str(self.voted_directory_id)
            doc["data_version"] = self.data_version
        return json.dumps(doc, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, path: Path | str = "quorum-state") -> QuorumStateData:
        try:
            doc = json.loads(text)
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            if "data_version" not in doc:
                raise ValueError("no data_version")
            voters = doc.get("currentVoters") or []
            voted_dir = doc.get("votedDirectoryId")
            return cls(
                leader_id=int(doc.get("leaderId", -1)),
                leader_epoch=int(doc.get("leaderEpoch", 0)),
                voted_id=int(doc.get("votedId", -1)),
                applied_offset=int(doc.get("appliedOffset", 0)),
                current_voters=tuple(int(v["voterId"]) for v in voters),
                cluster_id=str(doc.get("clusterId", "")),
                voted_directory_id=None if voted_dir is None else Uuid.from_string(voted_dir),
                data_version=int(doc["data_version"]),
            )
        except (ValueError, KeyError, TypeError) as e:
            raise LogError(f"{path}: not a quorum-state file: {e}") from None


def read_quorum_state(path: Path) -> QuorumStateData | None:
    if not path.exists():
        return None
    return QuorumStateData.from_json(path.read_text("utf-8"), path)


def write_quorum_state(path: Path, state: QuorumStateData) -> None:
    """quorum-state.tmp, fsync, rename: a vote is on disk before it is answered."""
    atomic_write(path, state.to_json().encode("utf-8"))

"""The small text files beside the segments: leader-epoch-checkpoint, partition.metadata and
quorum-state, in the formats Kafka writes (reference 8.1, 8.5)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraftpy.metalog.epoch_cache import EpochEntry
from kraftpy.metalog.errors import MetadataLogError
from kraftpy.metalog.files import write_atomically
from protocol.uuid import Uuid

CHECKPOINT_VERSION = 0


def format_leader_epoch_checkpoint(entries: list[EpochEntry]) -> bytes:
    lines = [str(CHECKPOINT_VERSION), str(len(entries))]
    lines += [f"{e.epoch} {e.start_offset}" for e in entries]
    return ("\n".join(lines) + "\n").encode("ascii")


def parse_leader_epoch_checkpoint(
    text: str, path: Path | str = "leader-epoch-checkpoint"
) -> list[EpochEntry]:
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        version = int(lines[0])
        count = int(lines[1])
        if version != CHECKPOINT_VERSION:
            raise ValueError(f"version {version}, expected {CHECKPOINT_VERSION}")
        if len(lines) - 2 != count:
            raise ValueError(f"header says {count} entries, file has {len(lines) - 2}")
        entries = []
        for line in lines[2:]:
            epoch, offset = line.split()
            entries.append(EpochEntry(int(epoch), int(offset)))
    except (IndexError, ValueError) as e:
        raise MetadataLogError(f"{path}: not a leader-epoch checkpoint: {e}") from None
    return entries


def read_leader_epoch_checkpoint(path: Path) -> list[EpochEntry]:
    if not path.exists():
        return []
    return parse_leader_epoch_checkpoint(path.read_text("ascii"), path)


def write_leader_epoch_checkpoint(path: Path, entries: list[EpochEntry], *, sync: bool = True) -> None:
    write_atomically(path, format_leader_epoch_checkpoint(entries), sync=sync)


def format_partition_metadata(topic_id: Uuid) -> bytes:
    # Kafka writes no newline after the topic id
    return f"version: 0\ntopic_id: {topic_id}".encode("ascii")


def read_partition_metadata(path: Path) -> Uuid | None:
    if not path.exists():
        return None
    fields = {}
    for line in path.read_text("ascii").splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            fields[key.strip()] = value.strip()
    if fields.get("version") != "0" or "topic_id" not in fields:
        raise MetadataLogError(f"{path}: not a version 0 partition.metadata file")
    return Uuid.from_string(fields["topic_id"])


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
            raise MetadataLogError(f"{path}: not a quorum-state file: {e}") from None


def read_quorum_state(path: Path) -> QuorumStateData | None:
    if not path.exists():
        return None
    return QuorumStateData.from_json(path.read_text("utf-8"), path)


def write_quorum_state(path: Path, state: QuorumStateData) -> None:
    """quorum-state.tmp, fsync, rename: a vote is on disk before it is answered."""
    write_atomically(path, state.to_json().encode("utf-8"))

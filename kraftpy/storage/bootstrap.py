"""bootstrap.checkpoint: the metadata a new cluster starts from, written by `kraftpy storage format`.

The file uses the snapshot batch layout (Kafka's BatchFileWriter): a control batch holding
SnapshotHeaderRecord, a data batch of records, a control batch holding SnapshotFooterRecord; offsets
from 0, leader epoch 0. Here the records are FeatureLevelRecord(metadata.version=<level>) and any other
feature levels; only the metadata dir's copy is read at startup (BootstrapDirectory).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from kraftpy.storage.atomic import atomic_write

BOOTSTRAP_FILE = "bootstrap.checkpoint"
METADATA_VERSION_FEATURE = "metadata.version"


class BootstrapError(ValueError):
    """A bootstrap.checkpoint that exists but cannot be used."""


@dataclass(frozen=True)
class BootstrapMetadata:
    records: list  # list[ApiMessageAndVersion]
    metadata_version_level: int
    source: str

    def feature_level(self, name: str) -> int | None:
        for amv in self.records:
            msg = amv.message
            if type(msg).__name__ == "FeatureLevelRecord" and msg.Name == name:
                return msg.FeatureLevel
        return None


def bootstrap_records(metadata_version_level: int, features: dict[str, int] | None = None) -> list:
    """FeatureLevelRecord for metadata.version first, then other features with level > 0 sorted by name."""
    from protocol.framing import ApiMessageAndVersion
    from protocol.metadata_records import FeatureLevelRecord

    records = [
        ApiMessageAndVersion(
            FeatureLevelRecord(Name=METADATA_VERSION_FEATURE, FeatureLevel=metadata_version_level), 0
        )
    ]
    for name in sorted(features or {}):
        level = (features or {})[name]
        if name != METADATA_VERSION_FEATURE and name != "kraft.version" and level > 0:
            records.append(ApiMessageAndVersion(FeatureLevelRecord(Name=name, FeatureLevel=level), 0))
    return records


def encode_bootstrap_checkpoint(
    records: list, timestamp_ms: int | tuple[int, int, int] | None = None
) -> bytes:
    """Header batch, one data batch with `records`, footer batch; offsets 0.., epoch 0.

    Batch timestamps are now, or `timestamp_ms` (one for all, or one per batch as Kafka's clock gave them).
    """
    from protocol.control_records import SnapshotFooterRecord, SnapshotHeaderRecord
    from protocol.record_batch import build_control_batch, build_metadata_batch

    if timestamp_ms is None:
        timestamp_ms = int(time.time() * 1000)
    t_header, t_data, t_footer = (timestamp_ms,) * 3 if isinstance(timestamp_ms, int) else timestamp_ms
    header = build_control_batch(
        0, 0, t_header, [SnapshotHeaderRecord(Version=0, LastContainedLogTimestamp=0)]
    )
    data = build_metadata_batch(1, 0, t_data, records)
    footer = build_control_batch(1 + len(records), 0, t_footer, [SnapshotFooterRecord(Version=0)])
    return header + data + footer


def write_bootstrap_checkpoint(
    log_dir: str | Path,
    metadata_version_level: int,
    features: dict[str, int] | None = None,
    extra: list | None = None,
) -> None:
    """Atomically write `<log_dir>/bootstrap.checkpoint` (temp file, fsync, rename, fsync of the dir);
    `extra` records (SCRAM credentials) follow the feature levels, as in Kafka's bootstrap file."""
    data = encode_bootstrap_checkpoint(
        bootstrap_records(metadata_version_level, features) + list(extra or [])
    )
    atomic_write(Path(log_dir) / BOOTSTRAP_FILE, data)


def decode_bootstrap_checkpoint(data: bytes, source: str = BOOTSTRAP_FILE) -> BootstrapMetadata:
    from protocol.record_batch import CorruptBatchError, iter_batches, metadata_records

    records = []
    try:
        for batch in iter_batches(data):
            if not batch.is_control:
                records.extend(metadata_records(batch))
    except (CorruptBatchError, ValueError) as e:
        raise BootstrapError(f"{source} is not a valid bootstrap file: {e}") from None
    for amv in records:
        msg = amv.message
        if type(msg).__name__ == "FeatureLevelRecord" and msg.Name == METADATA_VERSION_FEATURE:
            return BootstrapMetadata(records, msg.FeatureLevel, source)
    raise BootstrapError(
        f"No FeatureLevelRecord for metadata.version was found in the bootstrap metadata from {source}"
    )


def read_bootstrap_checkpoint(log_dir: str | Path) -> BootstrapMetadata:
    """Read `<log_dir>/bootstrap.checkpoint`; FileNotFoundError if absent, BootstrapError if unusable."""
    path = Path(log_dir) / BOOTSTRAP_FILE
    return decode_bootstrap_checkpoint(path.read_bytes(), str(path))

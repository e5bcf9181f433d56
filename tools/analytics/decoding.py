"""Decode one byte range of a log into rows of the `records` table, with our codec.

This runs on executors (and in the single-process benchmark). A batch is decoded whole before
any of its rows are given out, so a corrupt batch contributes either all of its records or none,
and is reported as a CorruptSpot with its file and byte position.

Rows are ordered by `seq`: the offset for segment records; for records of the base snapshot a
negative number keeping their order inside the snapshot, so the snapshot replays first. Their
`offset` is the last offset the snapshot covers (its end offset - 1), the point their state is as of.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Iterator
from typing import Any

from protocol.control_records import control_record_name, decode_control_record
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_records import record_name
from protocol.record_batch import (
    LOG_OVERHEAD,
    CorruptBatchError,
    RecordBatch,
    decode_batch,
    metadata_records,
    read_batch_header,
)
from protocol.uuid import Uuid
from tools.analytics.errors import CorruptSpot
from tools.analytics.splitting import SNAPSHOT, LogRange

SNAPSHOT_SEQ_BASE = -(1 << 62)

# seq, offset, batch_base_offset, timestamp, leader_epoch, control, type, type_name, version, record, file, source
RecordRow = tuple[int, int, int, int, int, bool, int | None, str, int, str, str, str]

RECORDS_DDL = (
    "seq long, offset long, batch_base_offset long, timestamp long, leader_epoch int, control boolean, "
    "type int, type_name string, version int, record string, file string, source string"
)

_DECODE_ERRORS = (CorruptBatchError, ValueError, IndexError, KeyError, struct.error, UnicodeDecodeError)


def _json_default(value: Any) -> Any:
    """What json cannot write by itself: Uuids as text, bytes as base64 (as to_json_dict does)."""
    if isinstance(value, Uuid):  # a bytes subclass, so tested first
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


# (record class, version) -> names of the top-level fields that version has
_PRESENT: dict[tuple[type, int], tuple[str, ...]] = {}


def _to_json(message: Any, version: int) -> str:
    """json of message.to_json_dict(version), with the per-version field list looked up once per class.

    The codec works the field list out on every call; a log has millions of records of a handful
    of (type, version) pairs, so this is most of the decoding time saved. Values go to json as they
    are (ints, strings, lists of them); only Uuids, bytes and nested structs need `default`.
    """
    cls = type(message)
    names = _PRESENT.get((cls, version))
    if names is None:
        fields = getattr(cls, "_FIELDS", None)
        if fields is None or version < 0:
            return json.dumps(
                message.to_json_dict(version if version >= 0 else None),
                separators=(",", ":"),
                default=_json_default,
            )
        names = tuple(f.name for f in fields if f.present_in(version))
        _PRESENT[(cls, version)] = names

    def default(value: Any) -> Any:
        to_json_dict = getattr(value, "to_json_dict", None)
        return to_json_dict(version) if to_json_dict is not None else _json_default(value)

    return json.dumps({n: getattr(message, n) for n in names}, separators=(",", ":"), default=default)


def _metadata_rows(batch: RecordBatch) -> Iterator[tuple[int, int | None, str, int, str]]:
    for rec, amv in zip(batch.records, metadata_records(batch), strict=True):
        msg = amv.message
        yield rec.offset_delta, msg.API_KEY, record_name(msg), amv.version, _to_json(msg, amv.version)


def _control_rows(batch: RecordBatch) -> Iterator[tuple[int, int | None, str, int, str]]:
    for rec in batch.records:
        decoded = decode_control_record(rec.key, rec.value)
        if isinstance(decoded, ApiMessageAndVersion):
            msg, version = decoded.message, decoded.version
        else:  # a control type this codec does not read: kept as its raw value
            msg, version = decoded, -1
        yield rec.offset_delta, None, control_record_name(msg), version, _to_json(msg, version)


def batch_rows(batch: RecordBatch, rng: LogRange) -> list[RecordRow]:
    """Every row of one decoded batch (all or nothing: decoding errors propagate)."""
    decoded = list(_control_rows(batch) if batch.is_control else _metadata_rows(batch))
    rows: list[RecordRow] = []
    control = batch.is_control
    epoch = batch.partition_leader_epoch
    if rng.source == SNAPSHOT:
        ts = rng.snapshot_timestamp if rng.snapshot_timestamp >= 0 else batch.base_timestamp
        as_of = rng.snapshot_end_offset - 1
        for delta, api_key, name, version, text in decoded:
            inner = batch.base_offset + delta
            rows.append(
                (
                    SNAPSHOT_SEQ_BASE + inner,
                    as_of,
                    batch.base_offset,
                    ts,
                    epoch,
                    control,
                    api_key,
                    name,
                    version,
                    text,
                    rng.file,
                    rng.source,
                )
            )
        return rows
    ts = batch.base_timestamp
    for delta, api_key, name, version, text in decoded:
        offset = batch.base_offset + delta
        if offset < rng.min_offset:
            continue
        rows.append(
            (
                offset,
                offset,
                batch.base_offset,
                ts,
                epoch,
                control,
                api_key,
                name,
                version,
                text,
                rng.file,
                rng.source,
            )
        )
    return rows


def iter_range(rng: LogRange) -> Iterator[RecordRow | CorruptSpot]:
    """Rows of every readable batch in the range, and a CorruptSpot for every unreadable one."""
    try:
        with open(rng.path, "rb") as f:
            f.seek(rng.start)
            buf = f.read(rng.end - rng.start)
    except OSError as e:
        yield CorruptSpot(rng.file, rng.start, f"cannot read: {e.strerror or e}", rng.end - rng.start)
        return
    if len(buf) != rng.end - rng.start:
        yield CorruptSpot(
            rng.file, rng.start + len(buf), "file shrank while being read", rng.end - rng.start - len(buf)
        )
        return
    pos = 0
    end = len(buf)
    while pos < end:
        try:
            size = read_batch_header(buf, pos).length + LOG_OVERHEAD
        except CorruptBatchError as e:
            # The driver read this header fine, so the file changed under us: stop this range.
            yield CorruptSpot(rng.file, rng.start + pos, e.reason, end - pos, _base_offset(buf, pos))
            return
        try:
            rows = batch_rows(decode_batch(buf, pos), rng)
        except _DECODE_ERRORS as e:
            reason = e.reason if isinstance(e, CorruptBatchError) else f"unreadable record: {e}"
            yield CorruptSpot(rng.file, rng.start + pos, reason, size, _base_offset(buf, pos))
        else:
            yield from rows
        pos += size


def _base_offset(buf: bytes, pos: int) -> int | None:
    return int.from_bytes(buf[pos : pos + 8], "big", signed=True) if len(buf) - pos >= 8 else None

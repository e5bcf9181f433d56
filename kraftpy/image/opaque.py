"""Areas the image keeps but does not interpret: ACLs, client quotas, SCRAM credentials and
delegation tokens. Each is the latest record per key, written back as it came."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar


def acl_key(rec: Any) -> Hashable:
    return rec.Id


def client_quota_key(rec: Any) -> Hashable:
    entity = tuple(sorted((e.EntityType, e.EntityName) for e in rec.Entity))
    return (entity, rec.Key)


def scram_key(rec: Any) -> Hashable:
    return (rec.Name, rec.Mechanism)


def delegation_token_key(rec: Any) -> Hashable:
    return rec.TokenId


@dataclass(frozen=True)
class RecordStoreImage:
    """Latest record per key, in insertion order."""

    records: Mapping[Hashable, Any]

    EMPTY: ClassVar[RecordStoreImage]

    def is_empty(self) -> bool:
        return not self.records

    def __len__(self) -> int:
        return len(self.records)


RecordStoreImage.EMPTY = RecordStoreImage(MappingProxyType({}))


class RecordStoreDelta:
    def __init__(self, image: RecordStoreImage, key: Callable[[Any], Hashable]) -> None:
        self.image = image
        self.key = key
        self.changes: dict[Hashable, Any | None] = {}

    def put(self, rec: Any) -> None:
        self.changes[self.key(rec)] = rec

    def remove(self, rec: Any) -> None:
        self.changes[self.key(rec)] = None

    def apply(self) -> RecordStoreImage:
        records = dict(self.image.records)
        for k, rec in self.changes.items():
            if rec is None:
                records.pop(k, None)
            else:
                records[k] = rec
        return RecordStoreImage(MappingProxyType(records))

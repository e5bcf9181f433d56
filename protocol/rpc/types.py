"""Pydantic field types for RPC models: Kafka's primitive types with their ranges, and Uuid.

A Uuid field holds a `protocol.uuid.Uuid`. It validates from a Uuid, from 16 bytes (msgpack bin)
or from Kafka's 22-character text (JSON). It serializes as text in pydantic's JSON mode, as 16 bytes
when the serialization context says `{"encoding": "msgpack"}`, and stays a Uuid otherwise.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, GetCoreSchemaHandler, SerializationInfo
from pydantic_core import core_schema

from protocol.uuid import InvalidUuidError
from protocol.uuid import Uuid as _Uuid

Int8 = Annotated[int, Field(ge=-(2**7), le=2**7 - 1)]
Int16 = Annotated[int, Field(ge=-(2**15), le=2**15 - 1)]
Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
UInt16 = Annotated[int, Field(ge=0, le=2**16 - 1)]
NodeId = Annotated[int, Field(ge=0, le=2**31 - 1)]
"""A broker id a broker sends about itself or a replica: Kafka's node ids are never negative, and
negative ones mean something else in records (-1 no leader, -2 "no change" in PartitionChangeRecord),
so one taken from a request could fence nothing or leave a fenced broker leading."""


MAX_LOG_DIRS = 10_000
"""The most log dirs a registration or heartbeat may name: far beyond any broker, short of harm."""
MAX_LISTENERS = 1_000
"""The most listeners a registration may name."""


def _to_uuid(value: Any) -> _Uuid:
    if isinstance(value, _Uuid):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        if len(raw) != 16:
            raise ValueError(f"a Uuid is 16 bytes, got {len(raw)}")
        return _Uuid(raw)
    if isinstance(value, str):
        try:
            return _Uuid.from_string(value)
        except InvalidUuidError as e:
            raise ValueError(str(e)) from None
    raise ValueError(f"a Uuid is 16 bytes or 22 characters of base64, got {type(value).__name__}")


def _from_uuid(value: _Uuid, info: SerializationInfo) -> Any:
    if info.mode_is_json():
        return str(value)
    ctx = info.context
    if isinstance(ctx, dict) and ctx.get("encoding") == "msgpack":
        return value.bytes
    return value


class _UuidSchema:
    """Annotated marker teaching pydantic how to validate and serialize protocol.uuid.Uuid."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            _to_uuid,
            serialization=core_schema.plain_serializer_function_ser_schema(
                _from_uuid, info_arg=True, when_used="always"
            ),
        )

    def __get_pydantic_json_schema__(self, schema: Any, handler: Any) -> dict[str, Any]:
        return {"type": "string", "minLength": 22, "maxLength": 24, "description": "Kafka Uuid (base64url)"}


Uuid = Annotated[_Uuid, _UuidSchema()]
"""Field annotation for a Kafka uuid; values are `protocol.uuid.Uuid`."""

__all__ = ["MAX_LISTENERS", "MAX_LOG_DIRS", "Int8", "Int16", "Int32", "Int64", "NodeId", "UInt16", "Uuid"]

"""Our wire schemas against Kafka's: field by field, and byte for byte through an independent codec.

Kafka's schemas come from the JSON files kafka-python ships; the second check writes a message of
every served API and version with our codec, reads it with kafka-python's, writes it again there,
and wants the same bytes back, then reads those with ours and wants the same message.
"""

from __future__ import annotations

from typing import Any

import pytest

from broker.dataplane import CLIENT_APIS
from protocol.rpc import API_SPECS
from protocol.rpc.broker_fetch import FETCH_SPEC
from protocol.rpc.spec import ApiSpec
from protocol.schema import Field
from protocol.wire.codec import wire_api
from protocol.wire.schema import wire_schema
from tests.wire.kafka_json import OWN_TAGS, differences, kafka_schema

# every API a broker's Kafka listener serves
CLIENT_API_NAMES = ("ApiVersions", *CLIENT_APIS)


def _spec(name: str) -> ApiSpec:
    return FETCH_SPEC if name == "Fetch" else API_SPECS[name]


def _cases() -> list[tuple[str, str, int]]:
    out = []
    for name in CLIENT_API_NAMES:
        spec = _spec(name)
        for kind in ("Request", "Response"):
            for v in range(spec.min_version, spec.max_version + 1):
                out.append((name, kind, v))
    return out


@pytest.mark.parametrize("name", CLIENT_API_NAMES)
@pytest.mark.parametrize("kind", ["Request", "Response"])
def test_schema_matches_kafkas_at_every_served_version(name: str, kind: str) -> None:
    spec = _spec(name)
    model = spec.request_model if kind == "Request" else spec.response_model
    valid = f"{spec.min_version}-{spec.max_version}"
    ours = wire_schema(model, spec.api_key, valid, spec.flexible_versions)
    assert differences(ours, kafka_schema(name + kind), range(spec.min_version, spec.max_version + 1)) == []


def test_the_comparison_sees_a_field_out_of_place() -> None:
    spec = _spec("Produce")
    ours = wire_schema(spec.request_model, spec.api_key, "3-11", spec.flexible_versions)
    swapped = ours.fields[2], ours.fields[1], *ours.fields[3:]
    broken = type(ours)(
        ours.name, ours.api_key, ours.valid_versions, ours.flexible_versions, (ours.fields[0], *swapped)
    )
    assert differences(broken, kafka_schema("ProduceRequest"), range(3, 12))


# ---- byte for byte through kafka-python's codec ------------------------------------------------------

_SAMPLES = {"int8": 1, "int16": 2, "uint16": 3, "int32": 4, "int64": 5, "bool": True, "float64": 0.5}
_UUID = bytes(range(1, 17))


def _value(f: Field, etype: str, version: int) -> Any:
    if f.is_struct:
        return sample(f.fields, version)
    if etype in _SAMPLES:
        return _SAMPLES[etype]
    if etype == "string":
        return "s"
    if etype == "uuid":
        return _UUID
    if etype == "bytes":
        return None if f.nullable_in(version) else b""  # records fields: kafka-python parses non-empty ones
    raise AssertionError(etype)


def sample(fields: tuple[Field, ...], version: int) -> dict[str, Any]:
    """A wire dict with every field `version` has set to a non-default value (one element per array)."""
    out: dict[str, Any] = {}
    for f in fields:
        if not f.present_in(version) or (f.tagged_in(version) and (f.tag or 0) >= OWN_TAGS):
            continue  # kraftpy's own tags are skipped by Kafka's readers, so they do not come back
        v = _value(f, f.element_type, version)
        out[f.name] = [v] if f.is_array else v
    return out


def _kafka_python_class(name: str) -> Any:
    pytest.importorskip("kafka", reason="kafka-python is not installed")
    import kafka.protocol.admin.cluster
    import kafka.protocol.admin.groups
    import kafka.protocol.admin.topics
    import kafka.protocol.consumer.fetch
    import kafka.protocol.consumer.group
    import kafka.protocol.consumer.offsets
    import kafka.protocol.metadata.api_versions
    import kafka.protocol.metadata.find_coordinator
    import kafka.protocol.metadata.metadata
    import kafka.protocol.producer.produce
    import kafka.protocol.producer.transaction  # noqa: F401
    from kafka.protocol.api_message import ApiMessage

    todo = [ApiMessage]
    while todo:
        c = todo.pop()
        if c.__name__ == name and getattr(c, "_class_version", 1) is None:
            return c
        todo += c.__subclasses__()
    raise AssertionError(f"kafka-python has no {name}")


@pytest.mark.parametrize(("name", "kind", "version"), _cases())
def test_bytes_agree_with_kafka_python(name: str, kind: str, version: int) -> None:
    spec = _spec(name)
    api = wire_api(spec, spec.min_version, spec.max_version)
    model_cls = spec.request_model if kind == "Request" else spec.response_model
    codegen_cls = api.request_cls if kind == "Request" else api.response_cls
    plain = sample(codegen_cls.SCHEMA.fields, version)
    if name == "ApiVersions" and kind == "Response":
        plain["ErrorCode"] = 0  # an ApiVersions error answer is read at v0 whatever its version
    msg = model_cls.from_wire(plain, version)
    ours = bytearray()
    (api.encode_request if kind == "Request" else api.encode_response)(msg, version, ours)

    theirs_cls = _kafka_python_class(name + kind)
    decoded = theirs_cls.decode(bytes(ours), version=version)
    decoded._header = None
    assert bytes(decoded.encode(version=version)) == bytes(ours)

    back = (api.decode_request if kind == "Request" else api.decode_response)(bytes(ours), 0, version)
    assert back == msg


@pytest.mark.parametrize("version", [9, 12])
def test_kafka_python_reads_a_metadata_answer_with_kraftpys_own_tags(version: int) -> None:
    spec = _spec("Metadata")
    api = wire_api(spec, spec.min_version, spec.max_version)
    plain = sample(api.response_cls.SCHEMA.fields, version)
    plain["Topics"][0]["Partitions"][0]["ReplicaDirectories"] = [_UUID]
    out = bytearray()
    api.encode_response(spec.response_model.from_wire(plain, version), version, out)
    decoded = _kafka_python_class("MetadataResponse").decode(bytes(out), version=version)
    assert decoded.topics[0].partitions[0].replica_nodes == [4]

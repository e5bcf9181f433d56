"""CreateAcls, DescribeAcls, DeleteAcls, DescribeUserScramCredentials and AlterUserScramCredentials on
Kafka's wire: field lists against Kafka's JSON schemas at every version, bytes against kafka-python's
codec, and values through both the binary codec and the HTTP bodies (JSON and msgpack)."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.errors import Errors, KafkaError
from protocol.rpc import API_SPECS
from protocol.rpc.alter_user_scram_credentials import AlterUserScramCredentialsRequest
from protocol.rpc.create_acls import CreateAclsRequest, CreateAclsResponse
from protocol.rpc.delete_acls import DeleteAclsResponse
from protocol.rpc.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from protocol.rpc.message import RpcMessage
from protocol.wire.codec import wire_api
from protocol.wire.schema import wire_schema
from tests.wire.kafka_json import differences, kafka_schema
from tests.wire.test_kafka_schemas import _kafka_python_class, sample

APIS = {
    "DescribeAcls": (29, 0, 3),
    "CreateAcls": (30, 0, 3),
    "DeleteAcls": (31, 0, 3),
    "DescribeUserScramCredentials": (50, 0, 0),
    "AlterUserScramCredentials": (51, 0, 0),
}


def _cases() -> list[tuple[str, str, int]]:
    return [
        (name, kind, v)
        for name, (_key, lo, hi) in APIS.items()
        for kind in ("Request", "Response")
        for v in range(lo, hi + 1)
    ]


@pytest.mark.parametrize("name", APIS)
def test_key_and_versions_are_kafkas(name: str) -> None:
    spec = API_SPECS[name]
    assert (spec.api_key, spec.min_version, spec.max_version) == APIS[name]
    assert spec.flexible_versions == ("2+" if spec.max_version == 3 else "0+")


@pytest.mark.parametrize("name", APIS)
@pytest.mark.parametrize("kind", ["Request", "Response"])
def test_fields_match_kafkas_schema_at_every_version(name: str, kind: str) -> None:
    spec = API_SPECS[name]
    model = spec.request_model if kind == "Request" else spec.response_model
    ours = wire_schema(model, spec.api_key, f"{spec.min_version}-{spec.max_version}", spec.flexible_versions)
    assert differences(ours, kafka_schema(name + kind), range(spec.min_version, spec.max_version + 1)) == []


@pytest.mark.parametrize(("name", "kind", "version"), _cases())
def test_every_field_round_trips_and_kafka_python_writes_the_same_bytes(
    name: str, kind: str, version: int
) -> None:
    spec = API_SPECS[name]
    api = wire_api(spec, spec.min_version, spec.max_version)
    model_cls = spec.request_model if kind == "Request" else spec.response_model
    codegen_cls = api.request_cls if kind == "Request" else api.response_cls
    msg = model_cls.from_wire(sample(codegen_cls.SCHEMA.fields, version), version)
    out = bytearray()
    (api.encode_request if kind == "Request" else api.encode_response)(msg, version, out)
    back = (api.decode_request if kind == "Request" else api.decode_response)(bytes(out), 0, version)
    assert back == msg

    theirs = _kafka_python_class(name + kind).decode(bytes(out), version=version)
    theirs._header = None
    assert bytes(theirs.encode(version=version)) == bytes(out)

    for encoding in ("json", "msgpack"):
        assert model_cls.from_wire(msg.to_wire(version, encoding), version) == msg


def _binary(msg: RpcMessage, name: str, version: int, request: bool = True) -> RpcMessage:
    spec = API_SPECS[name]
    api = wire_api(spec, spec.min_version, spec.max_version)
    out = bytearray()
    (api.encode_request if request else api.encode_response)(msg, version, out)
    decoded: RpcMessage = (api.decode_request if request else api.decode_response)(bytes(out), 0, version)
    return decoded


def test_a_prefixed_acl_creation_keeps_its_values() -> None:
    C = CreateAclsRequest
    req = C(
        Creations=[
            C.AclCreation(
                ResourceType=2,
                ResourceName="orders-",
                ResourcePatternType=4,
                Principal="User:alice",
                Host="10.0.0.1",
                Operation=3,
                PermissionType=3,
            )
        ]
    )
    for v in (1, 2, 3):
        assert _binary(req, "CreateAcls", v) == req


def test_v0_carries_no_pattern_type_so_only_literal_acls() -> None:
    C = CreateAclsRequest
    literal = C(Creations=[C.AclCreation(ResourceType=2, ResourceName="t", Principal="User:a", Host="*")])
    assert _binary(literal, "CreateAcls", 0).Creations[0].ResourcePatternType == 3
    prefixed = literal.model_copy(deep=True)
    prefixed.Creations[0].ResourcePatternType = 4
    with pytest.raises(KafkaError) as e:
        _binary(prefixed, "CreateAcls", 0)
    assert e.value.code is Errors.UNSUPPORTED_VERSION


def test_describe_filters_keep_their_nulls() -> None:
    req = DescribeAclsRequest(ResourceTypeFilter=1, PatternTypeFilter=1, Operation=1, PermissionType=1)
    back = _binary(req, "DescribeAcls", 3)
    assert (back.ResourceNameFilter, back.PrincipalFilter, back.HostFilter) == (None, None, None)
    R = DescribeAclsResponse
    resp = R(
        Resources=[
            R.DescribeAclsResource(
                ResourceType=4,
                ResourceName="kafka-cluster",
                Acls=[R.AclDescription(Principal="User:*", Host="*", Operation=2, PermissionType=3)],
            )
        ]
    )
    assert _binary(resp, "DescribeAcls", 2, request=False) == resp


def test_a_salted_password_survives_json_as_base64_and_never_prints() -> None:
    U = AlterUserScramCredentialsRequest.ScramCredentialUpsertion
    req = AlterUserScramCredentialsRequest(
        Upsertions=[U(Name="alice", Mechanism=2, Iterations=8192, Salt=b"\x00salt", SaltedPassword=b"\xffpw")]
    )
    body: dict[str, Any] = req.to_wire(0, "json")
    assert isinstance(body["Upsertions"][0]["SaltedPassword"], str)
    assert AlterUserScramCredentialsRequest.from_wire(body, 0) == req
    assert _binary(req, "AlterUserScramCredentials", 0) == req
    assert "\\xffpw" not in repr(req) and "salt" not in repr(req)


@pytest.mark.parametrize(
    ("name", "response"),
    [("CreateAcls", CreateAclsResponse()), ("DeleteAcls", DeleteAclsResponse())],
)
def test_apis_without_a_top_level_error_answer_an_empty_list(name: str, response: RpcMessage) -> None:
    assert API_SPECS[name].error_response(Errors.NOT_CONTROLLER) == response

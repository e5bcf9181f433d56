"""The ZooKeeper-mode RPCs (LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown) against
Kafka 3.9's message JSON: every field at the versions Kafka gives it, ignorable where Kafka says so,
and bodies that survive both encodings at every version."""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from inspect import isclass
from typing import Annotated, Any, Union, get_args, get_origin

import pytest

from protocol.errors import Errors, KafkaError
from protocol.rpc import API_SPECS, RpcMessage, VersionRange
from protocol.rpc.controlled_shutdown import ControlledShutdownRequest, ControlledShutdownResponse
from protocol.rpc.leader_and_isr import LeaderAndIsrPartitionState, LeaderAndIsrRequest, LeaderAndIsrResponse
from protocol.rpc.stop_replica import StopReplicaRequest, StopReplicaResponse
from protocol.rpc.update_metadata import (
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from protocol.transport import codec
from protocol.uuid import Uuid

# ---- Kafka's schemas, restated ------------------------------------------------------------------


@dataclass(frozen=True)
class F:
    """One field as Kafka's JSON declares it."""

    versions: str = "0+"
    ignorable: bool = False
    tagged: str | None = None
    tag: int | None = None
    nullable: str | None = None
    default: Any = None
    struct: dict[str, F] = field(default_factory=dict)


LEADER_AND_ISR_PARTITION_STATE = {
    "TopicName": F("0-1", ignorable=True),
    "PartitionIndex": F(),
    "ControllerEpoch": F(),
    "Leader": F(),
    "LeaderEpoch": F(),
    "Isr": F(),
    "PartitionEpoch": F(),
    "Replicas": F(),
    "AddingReplicas": F("3+", ignorable=True),
    "RemovingReplicas": F("3+", ignorable=True),
    "IsNew": F("1+", ignorable=True, default=False),
    "LeaderRecoveryState": F("6+", default=0),
}
LEADER_AND_ISR_PARTITION_ERROR = {
    "TopicName": F("0-4", ignorable=True),
    "PartitionIndex": F(),
    "ErrorCode": F(),
}
UPDATE_METADATA_PARTITION_STATE = {
    "TopicName": F("0-4", ignorable=True),
    "PartitionIndex": F(),
    "ControllerEpoch": F(),
    "Leader": F(),
    "LeaderEpoch": F(),
    "Isr": F(),
    "ZkVersion": F(),
    "Replicas": F(),
    "OfflineReplicas": F("4+", ignorable=True),
}

SCHEMAS: dict[str, tuple[int, int, int, dict[str, F], dict[str, F]]] = {
    # name: (api key, max version, first flexible version, request fields, response fields)
    "LeaderAndIsr": (
        4,
        7,
        4,
        {
            "ControllerId": F(),
            "isKRaftController": F("7+", default=False),
            "ControllerEpoch": F(),
            "BrokerEpoch": F("2+", ignorable=True, default=-1),
            "Type": F("5+"),
            "UngroupedPartitionStates": F("0-1", struct=LEADER_AND_ISR_PARTITION_STATE),
            "TopicStates": F(
                "2+",
                struct={
                    "TopicName": F("2+"),
                    "TopicId": F("5+", ignorable=True),
                    "PartitionStates": F("2+", struct=LEADER_AND_ISR_PARTITION_STATE),
                },
            ),
            "LiveLeaders": F(struct={"BrokerId": F(), "HostName": F(), "Port": F()}),
        },
        {
            "ErrorCode": F(),
            "PartitionErrors": F("0-4", struct=LEADER_AND_ISR_PARTITION_ERROR),
            "Topics": F(
                "5+",
                struct={
                    "TopicId": F("5+"),
                    "PartitionErrors": F("5+", struct=LEADER_AND_ISR_PARTITION_ERROR),
                },
            ),
        },
    ),
    "StopReplica": (
        5,
        4,
        2,
        {
            "ControllerId": F(),
            "isKRaftController": F("4+", default=False),
            "ControllerEpoch": F(),
            "BrokerEpoch": F("1+", ignorable=True, default=-1),
            "DeletePartitions": F("0-2"),
            "UngroupedPartitions": F("0", struct={"TopicName": F("0"), "PartitionIndex": F("0")}),
            "Topics": F("1-2", struct={"Name": F("1-2"), "PartitionIndexes": F("1-2")}),
            "TopicStates": F(
                "3+",
                struct={
                    "TopicName": F("3+"),
                    "PartitionStates": F(
                        "3+",
                        struct={
                            "PartitionIndex": F("3+"),
                            "LeaderEpoch": F("3+", default=-1),
                            "DeletePartition": F("3+"),
                        },
                    ),
                },
            ),
        },
        {
            "ErrorCode": F(),
            "PartitionErrors": F(struct={"TopicName": F(), "PartitionIndex": F(), "ErrorCode": F()}),
        },
    ),
    "UpdateMetadata": (
        6,
        8,
        6,
        {
            "ControllerId": F(),
            "isKRaftController": F("8+", default=False),
            "Type": F("8+", tagged="8+", tag=0, default=0),
            "ControllerEpoch": F(),
            "BrokerEpoch": F("5+", ignorable=True, default=-1),
            "UngroupedPartitionStates": F("0-4", struct=UPDATE_METADATA_PARTITION_STATE),
            "TopicStates": F(
                "5+",
                struct={
                    "TopicName": F("5+"),
                    "TopicId": F("7+", ignorable=True),
                    "PartitionStates": F("5+", struct=UPDATE_METADATA_PARTITION_STATE),
                },
            ),
            "LiveBrokers": F(
                struct={
                    "Id": F(),
                    "V0Host": F("0", ignorable=True),
                    "V0Port": F("0", ignorable=True),
                    "Endpoints": F(
                        "1+",
                        ignorable=True,
                        struct={
                            "Port": F("1+"),
                            "Host": F("1+"),
                            "Listener": F("3+", ignorable=True),
                            "SecurityProtocol": F("1+"),
                        },
                    ),
                    "Rack": F("2+", ignorable=True, nullable="0+"),
                }
            ),
        },
        {"ErrorCode": F()},
    ),
    "ControlledShutdown": (
        7,
        3,
        3,
        {"BrokerId": F(), "BrokerEpoch": F("2+", ignorable=True, default=-1)},
        {"ErrorCode": F(), "RemainingPartitions": F(struct={"TopicName": F(), "PartitionIndex": F()})},
    ),
}

ALL_VERSIONS = [(name, v) for name, (_, top, _, _, _) in SCHEMAS.items() for v in range(top + 1)]


def _struct_of(model: type[RpcMessage], name: str) -> type[RpcMessage] | None:
    annotation = model.model_fields[name].annotation
    if get_origin(annotation) is list:
        (element,) = get_args(annotation)
        if isclass(element) and issubclass(element, RpcMessage):
            return element
    return None


def _check_schema(model: type[RpcMessage], schema: dict[str, F], versions: range, where: str) -> None:
    assert list(model.model_fields) == list(schema), f"{where}: fields or their order differ from Kafka's"
    for name, want in schema.items():
        got = model.field_versions()[name]
        spot = f"{where}.{name}"
        # Only versions the enclosing struct exists in matter: a nested "0+" and Kafka's "2+" agree there.
        for v in versions:
            assert (v in got.versions) == (v in VersionRange.parse(want.versions)), f"{spot} at v{v}"
            assert (v in got.tagged) == (want.tagged is not None and v in VersionRange.parse(want.tagged)), (
                spot
            )
            if v in got.versions:
                want_null = want.nullable is not None and v in VersionRange.parse(want.nullable)
                assert (v in got.nullable) == want_null, f"{spot} nullable at v{v}"
        assert got.ignorable == want.ignorable, f"{spot} ignorable"
        assert got.tag == want.tag, f"{spot} tag"
        if want.default is not None:
            assert model.field_default(name) == want.default, f"{spot} default"
        nested = _struct_of(model, name)
        assert (nested is not None) == bool(want.struct), f"{spot} is a struct array in one and not the other"
        if nested is not None:
            inner = [v for v in versions if v in VersionRange.parse(want.versions)]
            _check_schema(nested, want.struct, range(inner[0], inner[-1] + 1) if inner else range(0), spot)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_fields_versions_and_flags_are_kafkas(name: str) -> None:
    key, top, _, request, response = SCHEMAS[name]
    spec = API_SPECS[name]
    assert (spec.api_key, spec.min_version, spec.max_version) == (key, 0, top)
    _check_schema(spec.request_model, request, range(top + 1), f"{name}Request")
    _check_schema(spec.response_model, response, range(top + 1), f"{name}Response")


def test_api_keys_are_unique_across_every_api() -> None:
    keys = [s.api_key for s in API_SPECS.values()]
    assert len(keys) == len(set(keys))


def test_flexible_versions_are_documented() -> None:
    for name, (_, _, flexible, _, _) in SCHEMAS.items():
        module = __import__(API_SPECS[name].request_model.__module__, fromlist=["_"])
        assert f"flexible from v{flexible}" in (module.__doc__ or ""), name


# ---- round trips -------------------------------------------------------------------------------


def _sample(model: type[RpcMessage], version: int, seed: int = 1) -> RpcMessage:
    """A message with a non-default value in every field `version` has, and defaults elsewhere."""
    values = {}
    for i, (name, info) in enumerate(model.model_fields.items()):
        if version in model.field_versions()[name].versions:
            values[name] = _value(info.annotation, version, seed + i)
    return model(**values)


def _value(annotation: Any, version: int, seed: int) -> Any:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _value(get_args(annotation)[0], version, seed)
    if origin in (Union, types.UnionType):
        return _value(next(a for a in get_args(annotation) if a is not type(None)), version, seed)
    if origin is list:
        (element,) = get_args(annotation)
        return [_value(element, version, seed), _value(element, version, seed + 1)]
    if annotation is bool:
        return True
    if annotation is int:
        return seed % 100 + 1  # fits every Kafka int type, Int8 included
    if annotation is str:
        return f"text-{seed}"
    if annotation is Uuid:
        return Uuid.from_longs(seed, seed + 1)
    assert isclass(annotation) and issubclass(annotation, RpcMessage), annotation
    return _sample(annotation, version, seed * 10)


def _through_the_wire(msg: RpcMessage, version: int, encoding: codec.Encoding) -> RpcMessage:
    body = codec.decode(codec.encode(msg.to_wire(version, encoding), encoding), encoding)
    return type(msg).from_wire(body, version)


@pytest.mark.parametrize("encoding", ["json", "msgpack"])
@pytest.mark.parametrize(("name", "version"), ALL_VERSIONS)
def test_every_field_round_trips_at_every_version(name: str, version: int, encoding: codec.Encoding) -> None:
    spec = API_SPECS[name]
    for model in (spec.request_model, spec.response_model):
        msg = _sample(model, version)
        assert _through_the_wire(msg, version, encoding) == msg


def _present(schema: dict[str, F], version: int) -> set[str]:
    return {n for n, f in schema.items() if version in VersionRange.parse(f.versions)}


@pytest.mark.parametrize(("name", "version"), ALL_VERSIONS)
def test_the_wire_carries_exactly_the_fields_of_the_version(name: str, version: int) -> None:
    _, _, _, request, response = SCHEMAS[name]
    spec = API_SPECS[name]
    for model, schema in ((spec.request_model, request), (spec.response_model, response)):
        wire = _sample(model, version).to_wire(version)
        assert set(wire) == _present(schema, version)
        for field_name, f in schema.items():
            if f.struct and wire.get(field_name):
                assert set(wire[field_name][0]) == _present(f.struct, version), field_name


# ---- what differs between versions -------------------------------------------------------------


def _partition(**kw: Any) -> LeaderAndIsrPartitionState:
    base: dict[str, Any] = {
        "TopicName": "t",
        "PartitionIndex": 0,
        "ControllerEpoch": 1,
        "Leader": 1,
        "LeaderEpoch": 3,
        "Isr": [1, 2],
        "PartitionEpoch": 4,
        "Replicas": [1, 2],
    }
    return LeaderAndIsrPartitionState(**{**base, **kw})


def test_is_new_defaults_to_false_and_exists_from_v1() -> None:
    assert LeaderAndIsrPartitionState().IsNew is False
    v0 = LeaderAndIsrRequest(UngroupedPartitionStates=[_partition(IsNew=True)]).to_wire(0)
    assert "IsNew" not in v0["UngroupedPartitionStates"][0]  # ignorable: dropped, not refused
    assert LeaderAndIsrRequest.from_wire(v0, 0).UngroupedPartitionStates[0].IsNew is False
    v1 = LeaderAndIsrRequest(UngroupedPartitionStates=[_partition(IsNew=True)]).to_wire(1)
    assert v1["UngroupedPartitionStates"][0]["IsNew"] is True
    assert LeaderAndIsrRequest.from_wire(v1, 1).UngroupedPartitionStates[0].IsNew is True


def test_offline_replicas_exist_from_v4_only() -> None:
    state = UpdateMetadataPartitionState(
        TopicName="t", PartitionIndex=0, Leader=1, Isr=[1], Replicas=[1, 2], OfflineReplicas=[2]
    )
    v3 = UpdateMetadataRequest(UngroupedPartitionStates=[state]).to_wire(3)
    assert "OfflineReplicas" not in v3["UngroupedPartitionStates"][0]
    assert UpdateMetadataRequest.from_wire(v3, 3).UngroupedPartitionStates[0].OfflineReplicas == []
    v4 = UpdateMetadataRequest(UngroupedPartitionStates=[state]).to_wire(4)
    assert v4["UngroupedPartitionStates"][0]["OfflineReplicas"] == [2]
    assert UpdateMetadataRequest.from_wire(v4, 4).UngroupedPartitionStates[0].OfflineReplicas == [2]


@pytest.mark.parametrize(
    ("msg", "version"),
    [
        (LeaderAndIsrRequest(isKRaftController=True), 6),
        (LeaderAndIsrRequest(Type=2), 4),
        (LeaderAndIsrRequest(TopicStates=[{"TopicName": "t", "PartitionStates": []}]), 1),
        (LeaderAndIsrRequest(UngroupedPartitionStates=[_partition()]), 2),
        (
            LeaderAndIsrRequest(
                TopicStates=[{"TopicName": "t", "PartitionStates": [_partition(LeaderRecoveryState=1)]}]
            ),
            5,
        ),
        (LeaderAndIsrResponse(Topics=[{"TopicId": Uuid.ONE, "PartitionErrors": []}]), 4),
        (LeaderAndIsrResponse(PartitionErrors=[{"TopicName": "t", "PartitionIndex": 0, "ErrorCode": 0}]), 5),
        (UpdateMetadataRequest(isKRaftController=True), 7),
        (UpdateMetadataRequest(Type=2), 7),
        (StopReplicaRequest(isKRaftController=True), 3),
        (StopReplicaRequest(DeletePartitions=True), 3),
    ],
)
def test_a_non_default_field_the_version_lacks_is_refused_unless_ignorable(
    msg: RpcMessage, version: int
) -> None:
    with pytest.raises(KafkaError) as e:
        msg.to_wire(version)
    assert e.value.code == Errors.UNSUPPORTED_VERSION


def test_ignorable_fields_are_dropped_at_versions_that_lack_them() -> None:
    assert "BrokerEpoch" not in LeaderAndIsrRequest(BrokerEpoch=5).to_wire(1)
    assert "BrokerEpoch" not in StopReplicaRequest(BrokerEpoch=5).to_wire(0)
    assert "BrokerEpoch" not in ControlledShutdownRequest(BrokerId=1, BrokerEpoch=5).to_wire(1)
    assert ControlledShutdownRequest(BrokerId=1, BrokerEpoch=5).to_wire(2) == {
        "BrokerId": 1,
        "BrokerEpoch": 5,
    }
    topic = {"TopicName": "t", "TopicId": Uuid.ONE, "PartitionStates": []}
    assert "TopicId" not in LeaderAndIsrRequest(TopicStates=[topic]).to_wire(4)["TopicStates"][0]
    assert "TopicId" not in UpdateMetadataRequest(TopicStates=[topic]).to_wire(6)["TopicStates"][0]


def test_update_metadata_type_is_tagged_and_optional_on_the_wire() -> None:
    assert "Type" not in UpdateMetadataRequest().to_wire(8)
    assert UpdateMetadataRequest(Type=2).to_wire(8)["Type"] == 2
    body = UpdateMetadataRequest().to_wire(8)
    assert UpdateMetadataRequest.from_wire(body, 8).Type == 0


def test_update_metadata_rack_is_nullable_and_v0_brokers_have_one_address() -> None:
    broker = UpdateMetadataRequest.UpdateMetadataBroker(
        Id=1,
        V0Host="h",
        V0Port=9092,
        Endpoints=[{"Port": 9092, "Host": "h", "SecurityProtocol": 0}],
        Rack=None,
    )
    v0 = UpdateMetadataRequest(LiveBrokers=[broker]).to_wire(0)["LiveBrokers"][0]
    assert v0 == {"Id": 1, "V0Host": "h", "V0Port": 9092}
    v2 = UpdateMetadataRequest(LiveBrokers=[broker]).to_wire(2)["LiveBrokers"][0]
    assert v2["Rack"] is None and "V0Host" not in v2
    assert UpdateMetadataRequest.from_wire(
        {**UpdateMetadataRequest().to_wire(2), "LiveBrokers": [v2]}, 2
    ) == (UpdateMetadataRequest(LiveBrokers=[broker.model_copy(update={"V0Host": "", "V0Port": 0})]))


def test_defaults_are_kafkas() -> None:
    assert LeaderAndIsrRequest().BrokerEpoch == -1
    assert LeaderAndIsrRequest().isKRaftController is False
    assert UpdateMetadataRequest().BrokerEpoch == -1
    assert StopReplicaRequest().BrokerEpoch == -1
    assert StopReplicaRequest.StopReplicaPartitionState().LeaderEpoch == -1
    assert ControlledShutdownRequest().BrokerEpoch == -1
    assert UpdateMetadataResponse().ErrorCode == 0
    assert StopReplicaResponse().PartitionErrors == []
    assert ControlledShutdownResponse().RemainingPartitions == []


def test_a_body_missing_a_mandatory_field_is_an_invalid_request() -> None:
    body = LeaderAndIsrRequest().to_wire(7)
    del body["isKRaftController"]
    with pytest.raises(KafkaError) as e:
        LeaderAndIsrRequest.from_wire(body, 7)
    assert e.value.code == Errors.INVALID_REQUEST
    # Decoding at v6, where the field does not exist, is fine.
    assert LeaderAndIsrRequest.from_wire(LeaderAndIsrRequest().to_wire(6), 6) == LeaderAndIsrRequest()


def test_a_body_with_a_field_its_version_lacks_is_an_invalid_request() -> None:
    body = {**LeaderAndIsrRequest().to_wire(6), "isKRaftController": True}
    with pytest.raises(KafkaError) as e:
        LeaderAndIsrRequest.from_wire(body, 6)
    assert e.value.code == Errors.INVALID_REQUEST

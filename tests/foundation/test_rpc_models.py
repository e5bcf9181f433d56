"""RPC models: Kafka field names, defaults, per-field versions, Uuid in both encodings."""

from __future__ import annotations

import msgpack
import pytest

from protocol.errors import Errors, KafkaError
from protocol.rpc import (
    API_SPECS,
    ApiSpec,
    AssignReplicasToDirsRequest,
    AssignReplicasToDirsResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    VersionRange,
)
from protocol.uuid import LOST, Uuid


def test_registry_has_the_three_apis_with_kafka_keys_and_versions() -> None:
    expect = {
        "BrokerRegistration": (62, 0, 4),
        "BrokerHeartbeat": (63, 0, 1),
        "AssignReplicasToDirs": (73, 0, 0),
    }
    for name, (key, lo, hi) in expect.items():
        spec = API_SPECS[name]
        assert isinstance(spec, ApiSpec)
        assert (spec.api_key, spec.min_version, spec.max_version) == (key, lo, hi)
        assert spec.request_model.__name__ == f"{name}Request"
        assert spec.response_model.__name__ == f"{name}Response"


def test_kafka_defaults() -> None:
    assert BrokerHeartbeatResponse().IsFenced is True
    assert BrokerHeartbeatResponse().IsCaughtUp is False
    assert BrokerHeartbeatRequest().BrokerEpoch == -1
    assert BrokerHeartbeatRequest().OfflineLogDirs == []
    assert BrokerRegistrationRequest().PreviousBrokerEpoch == -1
    assert BrokerRegistrationRequest().IsMigratingZkBroker is False
    assert BrokerRegistrationRequest().IncarnationId == Uuid.ZERO
    assert BrokerRegistrationResponse().BrokerEpoch == -1
    assert AssignReplicasToDirsRequest().BrokerEpoch == -1


def test_version_range_parsing() -> None:
    assert 3 in VersionRange.parse("2+") and 1 not in VersionRange.parse("2+")
    assert 1 in VersionRange.parse("0-1") and 2 not in VersionRange.parse("0-1")
    assert 0 not in VersionRange.parse("none")
    assert str(VersionRange.parse("3")) == "3"


def _registration(**kw: object) -> BrokerRegistrationRequest:
    base = {
        "BrokerId": 2,
        "ClusterId": "MkU3OEVBNTcwNTJENDM2Qg",
        "IncarnationId": Uuid.random(),
        "Listeners": [BrokerRegistrationRequest.Listener(Name="PLAINTEXT", Host="127.0.0.1", Port=9092)],
        "Features": [
            BrokerRegistrationRequest.Feature(
                Name="metadata.version", MinSupportedVersion=1, MaxSupportedVersion=21
            )
        ],
    }
    base.update(kw)
    return BrokerRegistrationRequest(**base)


def test_fields_present_per_version() -> None:
    req = _registration()
    assert "IsMigratingZkBroker" not in req.to_wire(0)
    assert "IsMigratingZkBroker" in req.to_wire(1)
    assert "LogDirs" not in req.to_wire(1)
    assert "LogDirs" in req.to_wire(2)
    assert "PreviousBrokerEpoch" not in req.to_wire(2)
    assert req.to_wire(3)["PreviousBrokerEpoch"] == -1


@pytest.mark.parametrize("encoding", ["json", "msgpack"])
def test_round_trip_every_version(encoding: str) -> None:
    req = _registration(LogDirs=sorted([Uuid.random(), Uuid.random()]), PreviousBrokerEpoch=7, Rack=None)
    for v in range(5):
        wire = req.to_wire(v, encoding)  # type: ignore[arg-type]
        if encoding == "msgpack":
            wire = msgpack.unpackb(msgpack.packb(wire, use_bin_type=True), raw=False)
            assert isinstance(wire["IncarnationId"], bytes) and len(wire["IncarnationId"]) == 16
        else:
            assert wire["IncarnationId"] == str(req.IncarnationId)
        back = BrokerRegistrationRequest.from_wire(wire, v)
        assert back.IncarnationId == req.IncarnationId
        assert back.LogDirs == (req.LogDirs if v >= 2 else [])
        assert back.PreviousBrokerEpoch == (7 if v >= 3 else -1)
    assert BrokerRegistrationRequest.from_wire(req.to_wire(4, encoding), 4) == req  # type: ignore[arg-type]


def test_ignorable_field_is_dropped_at_an_older_version() -> None:
    req = _registration(LogDirs=[Uuid.random()], PreviousBrokerEpoch=5)
    wire = req.to_wire(1)
    assert "LogDirs" not in wire and "PreviousBrokerEpoch" not in wire
    # a body carrying them anyway: dropped, as Kafka's reader never sees them
    full = req.to_wire(4)
    back = BrokerRegistrationRequest.from_wire(full, 1)
    assert back.LogDirs == [] and back.PreviousBrokerEpoch == -1


def test_non_ignorable_field_with_non_default_value_at_older_version() -> None:
    hb = BrokerHeartbeatRequest(BrokerId=1, OfflineLogDirs=[LOST])
    with pytest.raises(KafkaError) as e:
        hb.to_wire(0)
    assert e.value.code == Errors.UNSUPPORTED_VERSION
    with pytest.raises(KafkaError) as e:
        BrokerHeartbeatRequest.from_wire(hb.to_wire(1), 0)
    assert e.value.code == Errors.INVALID_REQUEST
    assert "OfflineLogDirs" in (e.value.message or "")
    # the default value is fine at any version
    assert "OfflineLogDirs" not in BrokerHeartbeatRequest(BrokerId=1).to_wire(0)


def test_tagged_field_is_optional_and_omitted_when_empty() -> None:
    wire = BrokerHeartbeatRequest(BrokerId=1, BrokerEpoch=3).to_wire(1)
    assert "OfflineLogDirs" not in wire
    assert BrokerHeartbeatRequest.from_wire(wire, 1).OfflineLogDirs == []
    d = Uuid.random()
    assert BrokerHeartbeatRequest.from_wire({**wire, "OfflineLogDirs": [str(d)]}, 1).OfflineLogDirs == [d]


def test_missing_mandatory_field_is_invalid_request() -> None:
    wire = BrokerHeartbeatRequest(BrokerId=1).to_wire(1)
    del wire["WantFence"]
    with pytest.raises(KafkaError) as e:
        BrokerHeartbeatRequest.from_wire(wire, 1)
    assert e.value.code == Errors.INVALID_REQUEST
    assert "WantFence" in (e.value.message or "")


@pytest.mark.parametrize(
    "field,value",
    [
        ("BrokerId", "1"),
        ("BrokerId", True),
        ("BrokerId", 2**31),
        ("BrokerEpoch", 1.5),
        ("WantFence", "false"),
        ("OfflineLogDirs", ["not-a-uuid"]),
        ("OfflineLogDirs", [b"short"]),
        ("OfflineLogDirs", "AAAAAAAAAAAAAAAAAAAAAg"),
    ],
)
def test_wrong_field_type_is_invalid_request(field: str, value: object) -> None:
    wire = BrokerHeartbeatRequest(BrokerId=1).to_wire(1)
    wire[field] = value
    with pytest.raises(KafkaError) as e:
        BrokerHeartbeatRequest.from_wire(wire, 1)
    assert e.value.code == Errors.INVALID_REQUEST
    assert field in (e.value.message or "")


def test_body_that_is_not_a_map() -> None:
    with pytest.raises(KafkaError) as e:
        BrokerHeartbeatRequest.from_wire([1, 2], 0)
    assert e.value.code == Errors.INVALID_REQUEST


def test_nested_structs_validate_and_round_trip() -> None:
    d, t = Uuid.random(), Uuid.random()
    R = AssignReplicasToDirsRequest
    req = R(
        BrokerId=1,
        BrokerEpoch=5,
        Directories=[
            R.DirectoryData(
                Id=d, Topics=[R.TopicData(TopicId=t, Partitions=[R.PartitionData(PartitionIndex=0)])]
            )
        ],
    )
    for enc in ("json", "msgpack"):
        assert R.from_wire(req.to_wire(0, enc), 0) == req  # type: ignore[arg-type]
    bad = req.to_wire(0)
    del bad["Directories"][0]["Topics"][0]["Partitions"][0]["PartitionIndex"]
    with pytest.raises(KafkaError) as e:
        R.from_wire(bad, 0)
    assert "PartitionIndex" in (e.value.message or "")


def test_error_response_sets_only_top_level_error_code() -> None:
    resp = API_SPECS["AssignReplicasToDirs"].error_response(Errors.NOT_CONTROLLER)
    assert isinstance(resp, AssignReplicasToDirsResponse)
    assert resp.ErrorCode == Errors.NOT_CONTROLLER and resp.Directories == []
    hb = API_SPECS["BrokerHeartbeat"].error_response(Errors.STALE_BROKER_EPOCH)
    assert hb.ErrorCode == 77 and hb.IsFenced is True


def test_nullable_rack() -> None:
    assert BrokerRegistrationRequest.from_wire(_registration(Rack=None).to_wire(0), 0).Rack is None
    assert BrokerRegistrationRequest.from_wire(_registration(Rack="r1").to_wire(0), 0).Rack == "r1"


def test_model_dump_json_mode_renders_uuid_as_text() -> None:
    d = Uuid.random()
    assert BrokerHeartbeatRequest(OfflineLogDirs=[d]).model_dump(mode="json")["OfflineLogDirs"] == [str(d)]
    assert BrokerHeartbeatRequest(OfflineLogDirs=[d]).model_dump()["OfflineLogDirs"] == [d]

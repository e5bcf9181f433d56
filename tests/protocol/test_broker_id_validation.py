"""Negative broker ids are refused at the edge: -1/-2 mean "none"/"no change" in records."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.errors import Errors, KafkaError
from protocol.rpc import API_SPECS
from protocol.uuid import Uuid

APIS = [
    ("BrokerRegistration", None),
    ("BrokerHeartbeat", None),
    ("AssignReplicasToDirs", None),
    ("AlterPartition", 3),
    ("AlterPartition", 1),
]


def wire(api: str, version: int, **fields: Any) -> dict[str, Any]:
    """A complete body (every field of `version` present), with `fields` set."""
    body = API_SPECS[api].request_model().to_wire(version, "json")
    body.update(fields)
    return body


@pytest.mark.parametrize("broker_id", [-1, -2, -3, -(2**31)])
@pytest.mark.parametrize(("api", "version"), APIS)
def test_negative_broker_id_is_invalid_request_naming_the_field(
    api: str, version: int | None, broker_id: int
) -> None:
    spec = API_SPECS[api]
    v = spec.max_version if version is None else version
    assert spec.request_model.from_wire(wire(api, v, BrokerId=7), v).BrokerId == 7
    with pytest.raises(KafkaError) as e:
        spec.request_model.from_wire(wire(api, v, BrokerId=broker_id), v)
    assert e.value.code == Errors.INVALID_REQUEST
    assert "BrokerId" in (e.value.message or "")


def test_alter_partition_refuses_a_negative_isr_member() -> None:
    spec = API_SPECS["AlterPartition"]
    model: Any = spec.request_model
    part = model.PartitionData().to_wire(1, "json")
    topic = {"TopicName": "t", "Partitions": [{**part, "NewIsr": [1, -2]}]}
    with pytest.raises(KafkaError) as e:
        model.from_wire(wire("AlterPartition", 1, BrokerId=1, Topics=[topic]), 1)
    assert e.value.code == Errors.INVALID_REQUEST and "NewIsr" in (e.value.message or "")
    part = model.PartitionData().to_wire(3, "json")
    state = model.BrokerState().to_wire(3, "json")
    topic = {
        "TopicId": str(Uuid.from_longs(1, 2)),
        "Partitions": [{**part, "NewIsrWithEpochs": [{**state, "BrokerId": -1}]}],
    }
    with pytest.raises(KafkaError) as e:
        model.from_wire(wire("AlterPartition", 3, BrokerId=1, Topics=[topic]), 3)
    assert e.value.code == Errors.INVALID_REQUEST and "BrokerId" in (e.value.message or "")

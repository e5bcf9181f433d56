"""protocol.transport.tally exports what prometheus_client's Counter and Histogram would, and the RPC
server's remembered answer bytes are the ones encoding gives."""

from __future__ import annotations

import random

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

import protocol.transport.codec as codec
from protocol.rpc.broker_heartbeat import BrokerHeartbeatResponse
from protocol.transport.server import _encode
from protocol.transport.tally import LabelledCounter, LabelledHistogram

BUCKETS = (0.5, 1, 2.5, 5, 10, 10000)


def _exported(tallied: bool) -> str:
    registry = CollectorRegistry()
    if tallied:
        counter = LabelledCounter("c", "a counter", ["api", "error"], registry=registry)
        histogram = LabelledHistogram("h", "a histogram", ["api"], buckets=BUCKETS, registry=registry)
    else:
        counter = Counter("c", "a counter", ["api", "error"], registry=registry)  # type: ignore[assignment]
        histogram = Histogram("h", "a histogram", ["api"], buckets=BUCKETS, registry=registry)  # type: ignore[assignment]
    rnd = random.Random(11)
    for _ in range(3000):
        api = rnd.choice(["b", "a", "c"])
        series = counter.labels(api, rnd.choice(["NONE", "NONE", "STALE"]))
        if tallied:
            series.value += 1  # type: ignore[attr-defined]
        else:
            series.inc()  # type: ignore[attr-defined]
        histogram.labels(api).observe(rnd.choice([0.0, 0.5, 1.0, 10000.0, 20000.0, rnd.random() * 40]))
    return generate_latest(registry).decode()


def test_tallies_export_what_prometheus_metrics_export() -> None:
    assert _exported(tallied=True) == _exported(tallied=False)


def test_an_answer_of_plain_values_encodes_as_to_wire_does() -> None:
    for caught_up in (True, False):
        resp = BrokerHeartbeatResponse(ErrorCode=0, IsCaughtUp=caught_up, IsFenced=False)
        for version in (0, 1):
            for encoding in ("msgpack", "json"):
                expected = codec.encode(resp.to_wire(version, encoding), encoding)
                assert _encode(resp, version, encoding) == expected
                assert _encode(resp, version, encoding) == expected  # remembered


def test_remembered_answers_tell_true_from_one() -> None:
    as_bool = BrokerHeartbeatResponse.model_construct(ThrottleTimeMs=0, ErrorCode=0, IsCaughtUp=True)
    as_int = BrokerHeartbeatResponse.model_construct(ThrottleTimeMs=0, ErrorCode=0, IsCaughtUp=1)
    assert _encode(as_bool, 1, "msgpack") == codec.encode(as_bool.to_wire(1, "msgpack"), "msgpack")
    assert _encode(as_int, 1, "msgpack") == codec.encode(as_int.to_wire(1, "msgpack"), "msgpack")
    assert _encode(as_bool, 1, "msgpack") != _encode(as_int, 1, "msgpack")


def test_answers_with_lists_are_encoded_each_time_and_never_remembered() -> None:
    from protocol.rpc.assign_replicas_to_dirs import AssignReplicasToDirsResponse
    from protocol.transport import server

    resp = AssignReplicasToDirsResponse(ErrorCode=0, Directories=[])
    before = dict(server._ENCODED)
    assert _encode(resp, 0, "msgpack") == codec.encode(resp.to_wire(0, "msgpack"), "msgpack")
    assert before == server._ENCODED
    assert AssignReplicasToDirsResponse.declares_only_plain_values() is False
    assert BrokerHeartbeatResponse.declares_only_plain_values() is True

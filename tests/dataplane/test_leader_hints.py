"""KIP-951 in kraftpy's producer: a NOT_LEADER_OR_FOLLOWER answer naming the new leader (CurrentLeader
and NodeEndpoints) moves the client's cached leader, so it sends again at once; so does a leader
its metadata learnt while the batch was out."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from protocol.errors import Errors, KafkaError
from protocol.rpc.current_leader import LeaderIdAndEpoch
from protocol.rpc.metadata import MetadataResponse
from protocol.rpc.produce import ProduceResponse
from protocol.uuid import Uuid
from tools.client.cluster import BrokerInfo, ClusterMetadata, ConnectionPool, topics_from
from tools.client.producer import Producer

M = MetadataResponse


def _metadata() -> ClusterMetadata:
    md = ClusterMetadata("127.0.0.1:1", ConnectionPool())
    resp = M(
        Brokers=[M.MetadataResponseBroker(NodeId=1, Host="h1", Port=1)],
        Topics=[
            M.MetadataResponseTopic(
                Name="t",
                TopicId=Uuid.from_longs(1, 1),
                Partitions=[
                    M.MetadataResponsePartition(
                        PartitionIndex=0, LeaderId=1, LeaderEpoch=4, ReplicaNodes=[1, 2]
                    )
                ],
            )
        ],
    )
    md.brokers = {1: BrokerInfo(1, "h1", 1, None)}
    md.topics = topics_from(resp)
    return md


def test_a_newer_leader_with_its_endpoint_moves_the_cached_leader() -> None:
    md = _metadata()
    ep = ProduceResponse.NodeEndpoint(NodeId=2, Host="h2", Port=2)
    assert md.apply_leader_hint("t", 0, 2, 5, [ep])
    assert md.partition("t", 0).leader == 2 and md.partition("t", 0).leader_epoch == 5
    assert md.leader_url("t", 0) == "http://h2:2"


def test_stale_or_unreachable_hints_change_nothing() -> None:
    md = _metadata()
    assert not md.apply_leader_hint("t", 0, 2, 4, [ProduceResponse.NodeEndpoint(NodeId=2, Host="h2", Port=2)])
    assert not md.apply_leader_hint("t", 0, 3, 9, [])  # no address for broker 3
    assert not md.apply_leader_hint("t", 0, -1, 9, [])
    assert not md.apply_leader_hint("u", 0, 1, 9, [])
    assert md.partition("t", 0).leader == 1 and md.partition("t", 0).leader_epoch == 4


class _Broker:
    def __init__(self, name: str, calls: list[tuple[str, str]], answer: Any) -> None:
        self.name, self.calls, self.answer = name, calls, answer

    async def call(self, api: str, req: Any, version: int | None = None, **_: Any) -> Any:
        self.calls.append((api, self.name))
        return self.answer()


class _Unreachable:
    def __init__(self, calls: list[tuple[str, str]]) -> None:
        self.calls = calls

    async def call(self, api: str, req: Any, version: int | None = None, **_: Any) -> Any:
        self.calls.append((api, "bootstrap"))
        raise KafkaError(Errors.NETWORK_EXCEPTION, "not in this test")


class _Pool:
    def __init__(self, brokers: dict[str, _Broker], calls: list[tuple[str, str]]) -> None:
        self.brokers = brokers
        self.calls = calls

    def get(self, url: str) -> _Broker | _Unreachable:
        return self.brokers.get(url) or _Unreachable(self.calls)

    async def close(self) -> None:
        pass


def _answer(code: Errors, hint: tuple[int, int] | None = None) -> ProduceResponse:
    P = ProduceResponse
    return P(
        Responses=[
            P.TopicProduceResponse(
                Name="t",
                PartitionResponses=[
                    P.PartitionProduceResponse(
                        Index=0,
                        ErrorCode=int(code),
                        BaseOffset=7 if code is Errors.NONE else -1,
                        CurrentLeader=LeaderIdAndEpoch(LeaderId=hint[0], LeaderEpoch=hint[1])
                        if hint
                        else None,
                    )
                ],
            )
        ],
        NodeEndpoints=[P.NodeEndpoint(NodeId=hint[0], Host="h2", Port=2)] if hint else [],
    )


async def settled(fut: Any) -> Any:
    """The batch's result; a regression that retries forever fails here instead of hanging the run."""
    return await asyncio.wait_for(fut, 30)


async def _producer(
    first_answer: Callable[[ClusterMetadata], ProduceResponse],
) -> tuple[Producer, list[tuple[str, str]]]:
    calls: list[tuple[str, str]] = []
    p = Producer("127.0.0.1:1", enable_idempotence=False, linger_ms=0, retry_backoff_ms=100)
    md = _metadata()
    p.metadata = md
    answers = [first_answer]

    def h1() -> ProduceResponse:
        return answers.pop(0)(md) if answers else _answer(Errors.NONE)

    p.pool = md.pool = _Pool(  # type: ignore[assignment]
        {
            "http://h1:1": _Broker("h1", calls, h1),
            "http://h2:2": _Broker("h2", calls, lambda: _answer(Errors.NONE)),
        },
        calls,
    )
    p._started = True
    return p, calls


async def test_the_producer_resends_at_once_to_the_leader_an_answer_names() -> None:
    p, calls = await _producer(lambda _md: _answer(Errors.NOT_LEADER_OR_FOLLOWER, (2, 5)))
    fut = await p.send("t", b"v", partition=0)
    assert (await settled(fut)).offset == 7
    assert calls == [("Produce", "h1"), ("Produce", "h2")]  # no Metadata request in between
    assert p.stats["leader_hints"] == 1
    await p.close()


async def test_the_producer_skips_the_backoff_when_its_metadata_moved_the_leader_meanwhile() -> None:
    """As Kafka's producer: no backoff (nor Metadata request) for a batch whose partition got a new
    leader since the batch was sent, here from another partition's answer while it was out."""

    def moved_meanwhile(md: ClusterMetadata) -> ProduceResponse:
        md.apply_leader_hint("t", 0, 2, 5, [ProduceResponse.NodeEndpoint(NodeId=2, Host="h2", Port=2)])
        return _answer(Errors.NOT_LEADER_OR_FOLLOWER)

    p, calls = await _producer(moved_meanwhile)
    fut = await p.send("t", b"v", partition=0)
    assert (await settled(fut)).offset == 7
    assert calls == [("Produce", "h1"), ("Produce", "h2")]
    assert p.stats["retries"] == 1 and p.stats["leader_hints"] == 0
    await p.close()


async def test_a_leader_whose_metadata_is_behind_is_asked_again_without_a_metadata_request() -> None:
    """The broker the client's metadata names leader (epoch 4) has not heard of it yet and points to
    the leader of epoch 3: it is catching up, so the batch goes to it again shortly."""
    p, calls = await _producer(lambda _md: _answer(Errors.NOT_LEADER_OR_FOLLOWER, (2, 3)))
    fut = await p.send("t", b"v", partition=0)
    assert (await settled(fut)).offset == 7
    assert calls == [("Produce", "h1"), ("Produce", "h1")]
    assert p.metadata.partition("t", 0).leader == 1  # an older hint moves nothing
    await p.close()


async def test_a_leader_still_taking_over_is_asked_again_without_a_metadata_request() -> None:
    """The broker the client's metadata names leader (1, epoch 4) answers NOT_LEADER_OR_FOLLOWER
    naming itself at that epoch: its metadata moved while the produce was checked, and it is
    becoming the leader. No new leader to go to, so ask it again shortly, not after the backoff
    and a Metadata request."""
    p, calls = await _producer(lambda _md: _answer(Errors.NOT_LEADER_OR_FOLLOWER, (1, 4)))
    fut = await p.send("t", b"v", partition=0)
    assert (await settled(fut)).offset == 7
    assert calls == [("Produce", "h1"), ("Produce", "h1")]
    assert p.stats["retries"] == 1 and p.stats["leader_hints"] == 0
    await p.close()

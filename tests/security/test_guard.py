"""ApiGuard: refused requests reach no handler and are answered as Kafka answers them; allowed parts
of a mixed request are served; a node's principal speaks only for its node."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from kraftpy.security.acl import AclOperation as Op
from kraftpy.security.acl import ResourceType as RT
from kraftpy.security.denial_log import DenialLog
from kraftpy.security.guard import ApiGuard
from protocol.errors import Errors
from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.rpc.create_topics import CreateTopicsRequest, CreateTopicsResponse
from protocol.rpc.join_group import JoinGroupRequest, JoinGroupResponse
from protocol.rpc.metadata import MetadataRequest, MetadataResponse
from protocol.rpc.produce import ProduceRequest, ProduceResponse
from protocol.transport.context import REQUEST_CONTEXT, RequestContext


class TableAuthorizer:
    """Allows exactly the (principal, operation, resource type, name) tuples given."""

    def __init__(self, *allowed: tuple[str, Op, RT, str]) -> None:
        self.allowed = set(allowed)
        self.asked: list[tuple[str, str, Op, RT, str]] = []

    def authorize(
        self, principal: str, host: str, operation: Op, resource_type: RT, resource_name: str
    ) -> bool:
        self.asked.append((principal, host, operation, resource_type, resource_name))
        return (principal, operation, resource_type, resource_name) in self.allowed


class Recorder:
    def __init__(self, response: Any) -> None:
        self.calls: list[Any] = []
        self.response = response

    async def __call__(self, req: Any, version: int) -> Any:
        self.calls.append(req)
        return self.response(req) if callable(self.response) else self.response


@pytest.fixture
def as_alice() -> Any:
    token = REQUEST_CONTEXT.set(RequestContext("CLIENT", "cli", "/10.0.0.7", "User:alice", "SASL_SSL"))
    yield
    REQUEST_CONTEXT.reset(token)


def _produce_answer(req: ProduceRequest) -> ProduceResponse:
    R = ProduceResponse
    return R(
        Responses=[
            R.TopicProduceResponse(
                Name=t.Name,
                PartitionResponses=[R.PartitionProduceResponse(Index=p.Index) for p in t.PartitionData],
            )
            for t in req.TopicData
        ]
    )


async def test_produce_serves_the_topics_alice_may_write_and_refuses_the_others(as_alice: None) -> None:
    authz = TableAuthorizer(("User:alice", Op.WRITE, RT.TOPIC, "orders"))
    handler = Recorder(_produce_answer)
    guarded = ApiGuard(lambda: authz)("Produce", handler)
    P = ProduceRequest
    req = P(
        TopicData=[
            P.TopicProduceData(Name="orders", PartitionData=[P.PartitionProduceData(Index=0)]),
            P.TopicProduceData(
                Name="payroll",
                PartitionData=[P.PartitionProduceData(Index=0), P.PartitionProduceData(Index=1)],
            ),
        ]
    )
    resp = await guarded(req, 9)
    assert [t.Name for t in handler.calls[0].TopicData] == ["orders"]
    codes = {(t.Name, p.Index): p.ErrorCode for t in resp.Responses for p in t.PartitionResponses}
    assert codes == {
        ("orders", 0): 0,
        ("payroll", 0): Errors.TOPIC_AUTHORIZATION_FAILED,
        ("payroll", 1): Errors.TOPIC_AUTHORIZATION_FAILED,
    }
    # the host is the client's address without Kafka's leading slash
    assert authz.asked[0][1] == "10.0.0.7"


async def test_a_request_refused_everywhere_reaches_no_handler(as_alice: None) -> None:
    handler = Recorder(_produce_answer)
    guarded = ApiGuard(lambda: TableAuthorizer())("Produce", handler)
    P = ProduceRequest
    resp = await guarded(
        P(TopicData=[P.TopicProduceData(Name="t", PartitionData=[P.PartitionProduceData(Index=3)])]), 9
    )
    assert handler.calls == []
    assert resp.Responses[0].PartitionResponses[0].ErrorCode == Errors.TOPIC_AUTHORIZATION_FAILED


async def test_cluster_apis_need_cluster_action(as_alice: None) -> None:
    handler = Recorder(BrokerHeartbeatResponse())
    guarded = ApiGuard(lambda: TableAuthorizer())("BrokerHeartbeat", handler)
    resp = await guarded(BrokerHeartbeatRequest(BrokerId=1), 1)
    assert resp.ErrorCode == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert handler.calls == []
    allowed = ApiGuard(
        lambda: TableAuthorizer(("User:alice", Op.CLUSTER_ACTION, RT.CLUSTER, "kafka-cluster"))
    )
    resp = await allowed("BrokerHeartbeat", handler)(BrokerHeartbeatRequest(BrokerId=1), 1)
    assert resp.ErrorCode == 0 and len(handler.calls) == 1


async def test_metadata_lists_only_describable_topics(as_alice: None) -> None:
    R = MetadataResponse
    answer = R(Topics=[R.MetadataResponseTopic(Name="orders"), R.MetadataResponseTopic(Name="payroll")])
    authz = TableAuthorizer(("User:alice", Op.DESCRIBE, RT.TOPIC, "orders"))
    guarded = ApiGuard(lambda: authz)("Metadata", Recorder(answer))
    resp = await guarded(MetadataRequest(Topics=None), 12)
    assert [t.Name for t in resp.Topics] == ["orders"]
    named = await guarded(MetadataRequest(Topics=[MetadataRequest.MetadataRequestTopic(Name="payroll")]), 12)
    assert [(t.Name, t.ErrorCode) for t in named.Topics] == [("payroll", Errors.TOPIC_AUTHORIZATION_FAILED)]


async def test_create_topics_needs_create_on_the_cluster_or_the_topic(as_alice: None) -> None:
    C = CreateTopicsRequest
    answer = lambda req: CreateTopicsResponse(  # noqa: E731
        Topics=[CreateTopicsResponse.CreatableTopicResult(Name=t.Name) for t in req.Topics]
    )
    authz = TableAuthorizer(("User:alice", Op.CREATE, RT.TOPIC, "mine"))
    resp = await ApiGuard(lambda: authz)("CreateTopics", Recorder(answer))(
        C(Topics=[C.CreatableTopic(Name="mine"), C.CreatableTopic(Name="theirs")]), 7
    )
    assert {t.Name: t.ErrorCode for t in resp.Topics} == {
        "mine": 0,
        "theirs": Errors.TOPIC_AUTHORIZATION_FAILED,
    }
    cluster = TableAuthorizer(("User:alice", Op.CREATE, RT.CLUSTER, "kafka-cluster"))
    resp = await ApiGuard(lambda: cluster)("CreateTopics", Recorder(answer))(
        C(Topics=[C.CreatableTopic(Name="x")]), 7
    )
    assert resp.Topics[0].ErrorCode == 0


async def test_group_apis_need_read_on_the_group(as_alice: None) -> None:
    handler = Recorder(JoinGroupResponse())
    resp = await ApiGuard(lambda: TableAuthorizer())("JoinGroup", handler)(JoinGroupRequest(GroupId="g"), 7)
    assert resp.ErrorCode == Errors.GROUP_AUTHORIZATION_FAILED and handler.calls == []


async def test_without_an_authorizer_only_the_node_binding_applies() -> None:
    handler = Recorder(BrokerHeartbeatResponse())
    guard = ApiGuard(lambda: None, node_principal_template="User:node-{id}")
    token = REQUEST_CONTEXT.set(RequestContext("", "", "/127.0.0.1", "User:node-2", "SSL"))
    try:
        own = await guard("BrokerHeartbeat", handler)(BrokerHeartbeatRequest(BrokerId=2), 1)
        other = await guard("BrokerHeartbeat", handler)(BrokerHeartbeatRequest(BrokerId=3), 1)
    finally:
        REQUEST_CONTEXT.reset(token)
    assert own.ErrorCode == 0
    assert other.ErrorCode == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert [r.BrokerId for r in handler.calls] == [2]


async def test_acl_changes_refused_item_by_item(as_alice: None) -> None:
    from protocol.rpc.create_acls import CreateAclsRequest, CreateAclsResponse

    handler = Recorder(CreateAclsResponse())
    req = CreateAclsRequest(Creations=[CreateAclsRequest.AclCreation(), CreateAclsRequest.AclCreation()])
    resp = await ApiGuard(lambda: TableAuthorizer())("CreateAcls", handler)(req, 3)
    assert [r.ErrorCode for r in resp.Results] == [Errors.CLUSTER_AUTHORIZATION_FAILED] * 2
    assert handler.calls == []


def _acl(principal: str, op: Op, name: str, pattern: int = 3, permission: int = 3) -> Any:
    from kraftpy.security.acl import AclBinding, AclPermissionType, PatternType

    return AclBinding(RT.TOPIC, name, PatternType(pattern), principal, "*", op, AclPermissionType(permission))


@pytest.mark.parametrize(
    ("acls", "allowed"),
    [
        ([], False),
        ([("User:alice", Op.WRITE, "orders", 3, 3)], True),
        ([("User:*", Op.WRITE, "logs-", 4, 3)], True),
        ([("User:bob", Op.WRITE, "orders", 3, 3)], False),
        ([("User:alice", Op.READ, "orders", 3, 3)], False),
        ([("User:alice", Op.WRITE, "orders", 3, 3), ("User:alice", Op.WRITE, "*", 3, 2)], False),
        ([("User:alice", Op.WRITE, "orders", 3, 3), ("User:alice", Op.WRITE, "", 4, 2)], False),
        ([("User:alice", Op.WRITE, "orders", 3, 3), ("User:alice", Op.WRITE, "ord", 4, 2)], True),
    ],
)
async def test_an_idempotent_producer_needs_write_on_some_topic(
    as_alice: None, acls: list[tuple[str, Op, str, int, int]], allowed: bool
) -> None:
    from kraftpy.security.authorizer import AclIndex, Authorizer
    from protocol.rpc.init_producer_id import InitProducerIdRequest, InitProducerIdResponse

    authz = Authorizer(index=AclIndex.build((i, _acl(*a)) for i, a in enumerate(acls)))
    handler = Recorder(InitProducerIdResponse(ProducerId=7))
    resp = await ApiGuard(lambda: authz)("InitProducerId", handler)(InitProducerIdRequest(), 4)
    assert (resp.ErrorCode == 0) is allowed
    assert len(handler.calls) == int(allowed)


async def test_many_identical_metadata_denials_log_one_line_then_the_count(as_alice: None) -> None:
    now = [1000.0]
    authz = TableAuthorizer(("User:alice", Op.DESCRIBE, RT.TOPIC, "orders"))
    guard = ApiGuard(lambda: authz, denials=DenialLog(60.0, clock=lambda: now[0]))
    guarded = guard("Metadata", Recorder(MetadataResponse()))
    req = MetadataRequest(
        Topics=[MetadataRequest.MetadataRequestTopic(Name="payroll")], AllowAutoTopicCreation=False
    )
    with capture_logs() as logs:
        for _ in range(100):
            resp = await guarded(req, 12)
            assert resp.Topics[0].ErrorCode == Errors.TOPIC_AUTHORIZATION_FAILED
            now[0] += 0.5
    assert [e for e in logs if e["event"] == "authorization failed"] == [
        {
            "event": "authorization failed",
            "log_level": "info",
            "principal": "User:alice",
            "host": "10.0.0.7",
            "operation": "DESCRIBE",
            "resource": "TOPIC:payroll",
            "suppressed": 0,
        }
    ]
    now[0] += 60.0
    with capture_logs() as logs:
        await guarded(req, 12)
    assert [e["suppressed"] for e in logs if e["event"] == "authorization failed"] == [99]


async def test_listing_every_topic_logs_no_denial_for_the_ones_it_hides(as_alice: None) -> None:
    R = MetadataResponse
    answer = R(Topics=[R.MetadataResponseTopic(Name="orders"), R.MetadataResponseTopic(Name="payroll")])
    authz = TableAuthorizer(("User:alice", Op.DESCRIBE, RT.TOPIC, "orders"))
    with capture_logs() as logs:
        resp = await ApiGuard(lambda: authz)("Metadata", Recorder(answer))(MetadataRequest(Topics=None), 12)
    assert [t.Name for t in resp.Topics] == ["orders"]
    assert [e for e in logs if e["event"] == "authorization failed"] == []


async def test_delete_topics_by_id_leaves_an_unknown_id_to_the_handler(as_alice: None) -> None:
    from protocol.rpc.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
    from protocol.uuid import Uuid

    known, unknown = Uuid((7001).to_bytes(16, "big")), Uuid((7002).to_bytes(16, "big"))
    D = DeleteTopicsRequest
    authz = TableAuthorizer(("User:alice", Op.DELETE, RT.TOPIC, "orders"))
    handler = Recorder(DeleteTopicsResponse())
    guard = ApiGuard(lambda: authz, topic_name={known: "payroll"}.get)
    req = D(
        Topics=[
            D.DeleteTopicState(Name="orders"),
            D.DeleteTopicState(TopicId=known),
            D.DeleteTopicState(TopicId=unknown),
        ]
    )
    resp = await guard("DeleteTopics", handler)(req, 6)
    assert [(t.Name, t.TopicId) for t in handler.calls[0].Topics] == [("orders", Uuid.ZERO), (None, unknown)]
    assert [(r.TopicId, r.ErrorCode) for r in resp.Responses] == [(known, Errors.TOPIC_AUTHORIZATION_FAILED)]
    old = await guard("DeleteTopics", handler)(D(TopicNames=["orders", "payroll"]), 5)
    assert handler.calls[1].TopicNames == ["orders"]
    assert [(r.Name, r.ErrorCode) for r in old.Responses] == [("payroll", Errors.TOPIC_AUTHORIZATION_FAILED)]

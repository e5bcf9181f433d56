"""ApiGuard: what each API needs of the authorizer before its handler runs (KafkaApis' and
ControllerApis' authorize calls, gathered into one table shared by brokers and controllers).

A refused request is answered the way Kafka answers it and reaches no handler, so it writes nothing:
- an API that acts on the whole cluster (BrokerRegistration, AlterPartitionReassignments...) gets its
  error answer with CLUSTER_AUTHORIZATION_FAILED;
- an API over many topics or groups runs for the ones the principal may use and answers
  TOPIC_AUTHORIZATION_FAILED / GROUP_AUTHORIZATION_FAILED for the others;
- Metadata lists only the topics the principal may describe.

Denials are logged at most once a minute per principal, operation and resource (DenialLog).

Beyond Kafka, a principal bound to a node id (`kraftpy.node.principal.template`, e.g. `User:node-{id}`)
may speak only for that node: broker 2 cannot heartbeat, register or report dirs for broker 3.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from kraftpy.security.acl import CLUSTER_RESOURCE_NAME, AclOperation, ResourceType
from kraftpy.security.authorizer import AclIndex, Authorizer, bound_node_id, parse_super_users
from kraftpy.security.denial_log import DenialLog
from protocol.errors import Errors
from protocol.rpc import API_SPECS
from protocol.rpc.broker_fetch import FetchRequest, FetchResponse
from protocol.rpc.create_partitions import CreatePartitionsResponse
from protocol.rpc.create_topics import CreateTopicsResponse
from protocol.rpc.delete_topics import DeleteTopicsResponse
from protocol.rpc.describe_configs import DescribeConfigsResponse
from protocol.rpc.describe_groups import DescribeGroupsResponse
from protocol.rpc.find_coordinator import FindCoordinatorResponse
from protocol.rpc.list_offsets import ListOffsetsResponse
from protocol.rpc.message import RpcMessage
from protocol.rpc.metadata import MetadataResponse
from protocol.rpc.offset_commit import OffsetCommitResponse
from protocol.rpc.offset_fetch import OffsetFetchResponse
from protocol.rpc.offset_for_leader_epoch import OffsetForLeaderEpochResponse
from protocol.rpc.produce import ProduceResponse
from protocol.transport.context import current_request
from protocol.uuid import Uuid

log = structlog.get_logger("kraftpy.authorizer")

Handler = Callable[[Any, int], Awaitable[Any]]

Op = AclOperation
RT = ResourceType

TOPIC_DENIED = int(Errors.TOPIC_AUTHORIZATION_FAILED)
GROUP_DENIED = int(Errors.GROUP_AUTHORIZATION_FAILED)
CLUSTER_DENIED = Errors.CLUSTER_AUTHORIZATION_FAILED
DENIED_MESSAGE = "Authorization failed."

OPEN_APIS = frozenset({"ApiVersions", "SaslHandshake", "SaslAuthenticate", "DescribeCluster"})
"""Served to anyone who got through the listener (Kafka checks DescribeCluster only for the
authorized-operations bits, which we do not compute)."""

NODE_APIS = frozenset(
    {"BrokerRegistration", "BrokerHeartbeat", "AssignReplicasToDirs", "AlterPartition", "ControlledShutdown"}
)
"""The APIs in which a broker speaks for itself by BrokerId: bound to the principal's node id."""

CLUSTER_OPERATION: dict[str, AclOperation] = {
    "AlterPartitionReassignments": Op.ALTER,
    "ListPartitionReassignments": Op.DESCRIBE,
    "DescribeLogDirs": Op.DESCRIBE,
    "AlterReplicaLogDirs": Op.ALTER,
    "CreateAcls": Op.ALTER,
    "DeleteAcls": Op.ALTER,
    "DescribeAcls": Op.DESCRIBE,
    "AlterUserScramCredentials": Op.ALTER,
    "DescribeUserScramCredentials": Op.DESCRIBE,
    "DescribeQuorum": Op.DESCRIBE,
}
"""APIs that need one operation on the cluster; any API in no table needs CLUSTER_ACTION, as the
controller's and brokers' inter-node APIs (BrokerHeartbeat, LeaderAndIsr, Vote...) do."""


class Authorizes(Protocol):
    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
    ) -> bool: ...


@dataclass(frozen=True)
class Asker:
    """The authorizer as one request sees it: who asks, from which host."""

    authorizer: Authorizes
    principal: str
    host: str
    denials: DenialLog

    def may(
        self,
        op: AclOperation,
        rtype: ResourceType = RT.CLUSTER,
        name: str = CLUSTER_RESOURCE_NAME,
        *,
        log_denial: bool = True,
    ) -> bool:
        """`log_denial=False` where a denial refuses nothing (Kafka's logIfDenied = false): a
        listing filtered to what may be described, a cluster-wide grant tried before per-resource ones."""
        allowed = self.authorizer.authorize(self.principal, self.host, op, rtype, name)
        if not allowed and log_denial:
            self.denials.denied(self.principal, self.host, op.name, f"{rtype.name}:{name}")
        return allowed

    def may_topic(self, op: AclOperation, name: str, *, log_denial: bool = True) -> bool:
        return self.may(op, RT.TOPIC, name, log_denial=log_denial)

    def may_group(self, op: AclOperation, name: str, *, log_denial: bool = True) -> bool:
        return self.may(op, RT.GROUP, name, log_denial=log_denial)


class ApiGuard:
    """Wraps handlers with the checks their API needs. `authorizer()` is None when no authorizer is
    configured (`authorizer.class.name` empty): then only the node binding applies."""

    def __init__(
        self,
        authorizer: Callable[[], Authorizes | None],
        *,
        topic_name: Callable[[Uuid], str | None] = lambda _id: None,
        node_principal_template: str = "",
        specs: dict[str, Any] | None = None,
        denials: DenialLog | None = None,
    ) -> None:
        self._authorizer = authorizer
        self._denials = DenialLog() if denials is None else denials
        self._topic_name = topic_name
        self._template = node_principal_template
        self._specs = API_SPECS if specs is None else specs
        self._wrapped: dict[tuple[str, int], Handler] = {}

    def __call__(self, api: str, handler: Handler) -> Handler:
        """The guarded handler for `api` (cached, so dispatch may call this per request)."""
        key = (api, id(handler))
        found = self._wrapped.get(key)
        if found is None:
            found = self._wrapped[key] = self._wrap(api, handler)
        return found

    def _wrap(self, api: str, handler: Handler) -> Handler:
        if api in OPEN_APIS:
            return handler
        rule = _RULES.get(api)

        async def guarded(req: Any, version: int) -> Any:
            ctx = current_request()
            spec = self._specs.get(api)
            if api in NODE_APIS and not self._node_matches(ctx.principal, req):
                return _cluster_refusal(spec, api, req)
            authorizer = self._authorizer()
            if authorizer is None:
                return await handler(req, version)
            asker = Asker(authorizer, ctx.principal, ctx.client_host.lstrip("/"), self._denials)
            if rule is not None:
                return await rule(self, asker, req, version, handler)
            if not asker.may(CLUSTER_OPERATION.get(api, Op.CLUSTER_ACTION)):
                return _cluster_refusal(spec, api, req)
            return await handler(req, version)

        return guarded

    def _node_matches(self, principal: str, req: Any) -> bool:
        node = bound_node_id(principal, self._template)
        if node is None or node == getattr(req, "BrokerId", node):
            return True
        log.warning(
            "request refused: a node spoke for another",
            principal=principal,
            bound_node=node,
            broker_id=getattr(req, "BrokerId", None),
        )
        return False

    def topic_name(self, key: str | Uuid) -> str | None:
        return key if isinstance(key, str) else self._topic_name(key)


def _refuse_all(api: str) -> Callable[[Any, Errors, str | None], RpcMessage] | None:
    """For APIs with no top-level error code, the answer that refuses every item of the request."""
    if api == "CreateAcls":
        from protocol.rpc.create_acls import refuse_all
    elif api == "DeleteAcls":
        from protocol.rpc.delete_acls import refuse_all
    elif api == "AlterUserScramCredentials":
        from protocol.rpc.alter_user_scram_credentials import refuse_all
    else:
        return None
    return refuse_all  # type: ignore[return-value]


def _cluster_refusal(spec: Any, api: str, req: Any) -> RpcMessage:
    refuse = _refuse_all(api)
    if refuse is not None:
        return refuse(req, CLUSTER_DENIED, DENIED_MESSAGE)
    if spec is None:
        raise KeyError(api)
    return spec.error_response(CLUSTER_DENIED)


# ---- per-topic and per-group APIs ------------------------------------------------------------------


Rule = Callable[[ApiGuard, Asker, Any, int, Handler], Awaitable[Any]]


async def _split(
    req: Any,
    version: int,
    handler: Handler,
    *,
    items: str,
    allowed: Callable[[Any], bool],
    answers: str,
    refused: Callable[[Any], Any],
    empty: Callable[[], Any],
) -> Any:
    """Run `handler` on the request's `items` that are `allowed`; answer the others with `refused(item)`."""
    ok, no = [], []
    for item in getattr(req, items):
        (ok if allowed(item) else no).append(item)
    if not no:
        return await handler(req, version)
    resp = await handler(req.model_copy(update={items: ok}), version) if ok else empty()
    return resp.model_copy(update={answers: [*getattr(resp, answers), *(refused(i) for i in no)]})


@dataclass(frozen=True)
class PerItem:
    """A row for an API over many topics or groups: the request field listing them, the operation
    each needs on its resource, and the answer refusing one. The handler serves the allowed items;
    the refused ones are answered after them.

    `name` reads an item's resource name; None (a topic id no topic has) leaves the item to the
    handler, which answers UNKNOWN_TOPIC_ID as Kafka does. With `cluster_grant`, the operation on
    the cluster allows every item, as CREATE does for CreateTopics."""

    items: str
    operation: AclOperation
    resource_type: ResourceType
    name: Callable[[ApiGuard, Any], str | None]
    answers: str
    refused: Callable[[Any], Any]
    response: Callable[[], Any]
    cluster_grant: bool = False

    async def __call__(self, g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
        everything = self.cluster_grant and a.may(self.operation, log_denial=False)

        def allowed(item: Any) -> bool:
            if everything:
                return True
            name = self.name(g, item)
            return name is None or a.may(self.operation, self.resource_type, name)

        return await _split(
            req,
            version,
            handler,
            items=self.items,
            allowed=allowed,
            answers=self.answers,
            refused=self.refused,
            empty=self.response,
        )


@dataclass(frozen=True)
class OneGroup:
    """A row for an API about the one group its request names (JoinGroup...): refused whole with
    GROUP_AUTHORIZATION_FAILED unless the principal may `operation` it."""

    api: str
    operation: AclOperation

    async def __call__(self, g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
        if not a.may_group(self.operation, req.GroupId):
            return g._specs[self.api].error_response(Errors.GROUP_AUTHORIZATION_FAILED)
        return await handler(req, version)


@dataclass(frozen=True)
class ByVersion:
    """A row for an API whose request changed shape at version `since`."""

    since: int
    older: Rule
    newer: Rule

    async def __call__(self, g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
        rule = self.newer if version >= self.since else self.older
        return await rule(g, a, req, version, handler)


def _named(g: ApiGuard, item: Any) -> str:
    return item.Name


def _itself(g: ApiGuard, item: str) -> str:
    return item


def _group_id(g: ApiGuard, item: Any) -> str:
    return item.GroupId


def _name_or_id(g: ApiGuard, t: Any) -> str | None:
    return t.Name if t.Name is not None else g.topic_name(t.TopicId)


def _refused_produce(t: Any) -> Any:
    R = ProduceResponse
    return R.TopicProduceResponse(
        Name=t.Name,
        PartitionResponses=[
            R.PartitionProduceResponse(Index=p.Index, ErrorCode=TOPIC_DENIED) for p in t.PartitionData
        ],
    )


def _refused_list_offsets(t: Any) -> Any:
    R = ListOffsetsResponse
    return R.ListOffsetsTopicResponse(
        Name=t.Name,
        Partitions=[
            R.ListOffsetsPartitionResponse(PartitionIndex=p.PartitionIndex, ErrorCode=TOPIC_DENIED)
            for p in t.Partitions
        ],
    )


def _refused_created_topic(t: Any) -> Any:
    return CreateTopicsResponse.CreatableTopicResult(
        Name=t.Name, ErrorCode=TOPIC_DENIED, ErrorMessage=DENIED_MESSAGE
    )


def _refused_deleted_name(n: str) -> Any:
    return DeleteTopicsResponse.DeletableTopicResult(Name=n, ErrorCode=TOPIC_DENIED)


def _refused_deleted_topic(t: Any) -> Any:
    return DeleteTopicsResponse.DeletableTopicResult(
        Name=t.Name, TopicId=t.TopicId, ErrorCode=TOPIC_DENIED, ErrorMessage=DENIED_MESSAGE
    )


def _refused_partitions(t: Any) -> Any:
    return CreatePartitionsResponse.CreatePartitionsTopicResult(
        Name=t.Name, ErrorCode=TOPIC_DENIED, ErrorMessage=DENIED_MESSAGE
    )


def _refused_offsets_group(grp: Any) -> Any:
    return OffsetFetchResponse.OffsetFetchResponseGroup(GroupId=grp.GroupId, ErrorCode=GROUP_DENIED)


def _refused_described_group(grp: str) -> Any:
    return DescribeGroupsResponse.DescribedGroup(GroupId=grp, ErrorCode=GROUP_DENIED)


async def _fetch(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    R = FetchResponse
    if not isinstance(req, FetchRequest):
        # the metadata log's Fetch, from a broker or another controller
        if not a.may(Op.CLUSTER_ACTION):
            return g._specs["Fetch"].error_response(CLUSTER_DENIED)
        return await handler(req, version)
    follower = req.replica_id(version) >= 0
    if follower and not a.may(Op.CLUSTER_ACTION):
        allowed: Callable[[Any], bool] = lambda _t: False  # noqa: E731
    else:

        def allowed(t: Any) -> bool:
            name = g.topic_name(t.TopicId if version >= 13 else t.Topic)
            # an unknown topic id is the handler's to answer (UNKNOWN_TOPIC_ID), as in Kafka
            return follower or name is None or a.may_topic(Op.READ, name)

    return await _split(
        req,
        version,
        handler,
        items="Topics",
        allowed=allowed,
        answers="Responses",
        refused=lambda t: R.FetchableTopicResponse(
            Topic=t.Topic,
            TopicId=t.TopicId,
            Partitions=[
                R.PartitionData(PartitionIndex=p.Partition, ErrorCode=TOPIC_DENIED) for p in t.Partitions
            ],
        ),
        empty=R,
    )


async def _offset_for_leader_epoch(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    R = OffsetForLeaderEpochResponse
    follower = req.ReplicaId >= 0
    cluster_ok = follower and a.may(Op.CLUSTER_ACTION)
    return await _split(
        req,
        version,
        handler,
        items="Topics",
        allowed=lambda t: cluster_ok if follower else a.may_topic(Op.DESCRIBE, t.Topic),
        answers="Topics",
        refused=lambda t: R.OffsetForLeaderTopicResult(
            Topic=t.Topic,
            Partitions=[
                R.EpochEndOffset(Partition=p.Partition, ErrorCode=TOPIC_DENIED) for p in t.Partitions
            ],
        ),
        empty=R,
    )


async def _metadata(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    R = MetadataResponse

    if req.Topics is None:
        resp = await handler(req, version)
        return resp.model_copy(
            update={
                "Topics": [
                    t
                    for t in resp.Topics
                    if t.Name is None or a.may_topic(Op.DESCRIBE, t.Name, log_denial=False)
                ]
            }
        )

    def allowed(t: Any) -> bool:
        name = t.Name if t.Name else g.topic_name(t.TopicId)
        return name is None or a.may_topic(Op.DESCRIBE, name)

    if req.AllowAutoTopicCreation and not a.may(Op.CREATE, log_denial=False):
        # Kafka creates a missing topic only for a principal that may CREATE it
        names = [t.Name for t in req.Topics if t.Name]
        if not all(a.may_topic(Op.CREATE, n) for n in names):
            req = req.model_copy(update={"AllowAutoTopicCreation": False})
    return await _split(
        req,
        version,
        handler,
        items="Topics",
        allowed=allowed,
        answers="Topics",
        refused=lambda t: R.MetadataResponseTopic(ErrorCode=TOPIC_DENIED, Name=t.Name, TopicId=t.TopicId),
        empty=R,
    )


TOPIC_CONFIG_RESOURCE = 2


async def _describe_configs(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    R = DescribeConfigsResponse

    def allowed(r: Any) -> bool:
        if r.ResourceType == TOPIC_CONFIG_RESOURCE:
            return a.may_topic(Op.DESCRIBE_CONFIGS, r.ResourceName)
        return a.may(Op.DESCRIBE_CONFIGS)

    def refused(r: Any) -> Any:
        code = TOPIC_DENIED if r.ResourceType == TOPIC_CONFIG_RESOURCE else int(CLUSTER_DENIED)
        return R.DescribeConfigsResult(
            ErrorCode=code,
            ErrorMessage=DENIED_MESSAGE,
            ResourceType=r.ResourceType,
            ResourceName=r.ResourceName,
        )

    return await _split(
        req, version, handler, items="Resources", allowed=allowed, answers="Results", refused=refused, empty=R
    )


async def _init_producer_id(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    if req.TransactionalId is not None:
        ok = a.may(Op.WRITE, RT.TRANSACTIONAL_ID, req.TransactionalId)
    else:
        # Kafka 3.x lets an idempotent producer in with WRITE on any topic (KIP-679)
        authorizer = a.authorizer
        by_type = getattr(authorizer, "authorize_by_resource_type", None)
        ok = a.may(Op.IDEMPOTENT_WRITE) or (
            by_type is not None and bool(by_type(a.principal, a.host, Op.WRITE, RT.TOPIC))
        )
    if not ok:
        return g._specs["InitProducerId"].error_response(CLUSTER_DENIED)
    return await handler(req, version)


async def _offset_commit(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    R = OffsetCommitResponse

    group_ok = a.may_group(Op.READ, req.GroupId)

    def refused(t: Any) -> Any:
        code = TOPIC_DENIED if group_ok else GROUP_DENIED
        return R.OffsetCommitResponseTopic(
            Name=t.Name,
            Partitions=[
                R.OffsetCommitResponsePartition(PartitionIndex=p.PartitionIndex, ErrorCode=code)
                for p in t.Partitions
            ],
        )

    return await _split(
        req,
        version,
        handler,
        items="Topics",
        allowed=lambda t: group_ok and a.may_topic(Op.READ, t.Name),
        answers="Topics",
        refused=refused,
        empty=R,
    )


KEY_TYPE_TRANSACTION = 1


async def _find_coordinator(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    R = FindCoordinatorResponse

    if req.KeyType == KEY_TYPE_TRANSACTION:
        rtype, code = RT.TRANSACTIONAL_ID, int(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    else:
        rtype, code = RT.GROUP, GROUP_DENIED
    if version < 4:
        if not a.may(Op.DESCRIBE, rtype, req.Key):
            return R(ErrorCode=code, ErrorMessage=DENIED_MESSAGE)
        return await handler(req, version)
    return await _split(
        req,
        version,
        handler,
        items="CoordinatorKeys",
        allowed=lambda k: a.may(Op.DESCRIBE, rtype, k),
        answers="Coordinators",
        refused=lambda k: R.Coordinator(
            Key=k, NodeId=-1, Port=-1, ErrorCode=code, ErrorMessage=DENIED_MESSAGE
        ),
        empty=R,
    )


async def _list_groups(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    resp = await handler(req, version)
    if a.may(Op.DESCRIBE, log_denial=False):
        return resp
    return resp.model_copy(
        update={"Groups": [x for x in resp.Groups if a.may_group(Op.DESCRIBE, x.GroupId, log_denial=False)]}
    )


_RULES: dict[str, Rule] = {
    "Produce": PerItem(
        items="TopicData",
        operation=Op.WRITE,
        resource_type=RT.TOPIC,
        name=_named,
        answers="Responses",
        refused=_refused_produce,
        response=ProduceResponse,
    ),
    "Fetch": _fetch,
    "ListOffsets": PerItem(
        items="Topics",
        operation=Op.DESCRIBE,
        resource_type=RT.TOPIC,
        name=_named,
        answers="Topics",
        refused=_refused_list_offsets,
        response=ListOffsetsResponse,
    ),
    "OffsetForLeaderEpoch": _offset_for_leader_epoch,
    "Metadata": _metadata,
    "CreateTopics": PerItem(
        items="Topics",
        operation=Op.CREATE,
        resource_type=RT.TOPIC,
        name=_named,
        answers="Topics",
        refused=_refused_created_topic,
        response=CreateTopicsResponse,
        cluster_grant=True,
    ),
    "DeleteTopics": ByVersion(
        since=6,
        older=PerItem(
            items="TopicNames",
            operation=Op.DELETE,
            resource_type=RT.TOPIC,
            name=_itself,
            answers="Responses",
            refused=_refused_deleted_name,
            response=DeleteTopicsResponse,
        ),
        newer=PerItem(
            items="Topics",
            operation=Op.DELETE,
            resource_type=RT.TOPIC,
            name=_name_or_id,
            answers="Responses",
            refused=_refused_deleted_topic,
            response=DeleteTopicsResponse,
        ),
    ),
    "CreatePartitions": PerItem(
        items="Topics",
        operation=Op.ALTER,
        resource_type=RT.TOPIC,
        name=_named,
        answers="Results",
        refused=_refused_partitions,
        response=CreatePartitionsResponse,
    ),
    "DescribeConfigs": _describe_configs,
    "InitProducerId": _init_producer_id,
    "JoinGroup": OneGroup("JoinGroup", Op.READ),
    "SyncGroup": OneGroup("SyncGroup", Op.READ),
    "Heartbeat": OneGroup("Heartbeat", Op.READ),
    "LeaveGroup": OneGroup("LeaveGroup", Op.READ),
    "OffsetCommit": _offset_commit,
    "OffsetFetch": ByVersion(
        since=8,
        older=OneGroup("OffsetFetch", Op.DESCRIBE),
        newer=PerItem(
            items="Groups",
            operation=Op.DESCRIBE,
            resource_type=RT.GROUP,
            name=_group_id,
            answers="Groups",
            refused=_refused_offsets_group,
            response=OffsetFetchResponse,
        ),
    ),
    "FindCoordinator": _find_coordinator,
    "DescribeGroups": PerItem(
        items="Groups",
        operation=Op.DESCRIBE,
        resource_type=RT.GROUP,
        name=_itself,
        answers="Groups",
        refused=_refused_described_group,
        response=DescribeGroupsResponse,
    ),
    "ListGroups": _list_groups,
}
"""Per-topic and per-group APIs: a row where the check is the same for every item (PerItem,
OneGroup, ByVersion), a function where it depends on the request (a follower's Fetch, Metadata's
auto-creation, DescribeConfigs' resource types...)."""


# ---- one authorizer per process ----------------------------------------------------------------------


def process_guard(
    cfg: Any,
    acls: Callable[[], tuple[object, Mapping[Any, Any]]],
    topic_name: Callable[[Uuid], str | None],
    specs: dict[str, Any],
) -> ApiGuard | None:
    """The guard of a process configured by `cfg` (a KafkaConfig), None when it checks nothing.

    `acls()` gives a key that changes whenever the ACLs do, and the AccessControlEntryRecords by id:
    a broker's latest image store, or the controller's own ACL manager."""
    template = cfg.kraftpy_node_principal_template
    if not cfg.authorizer_enabled and not template:
        return None
    authorizer: Callable[[], Authorizes | None] = lambda: None  # noqa: E731
    if cfg.authorizer_enabled:
        authz = Authorizer(parse_super_users(cfg.super_users), cfg.allow_everyone_if_no_acl_found)
        seen: list[object] = [None]

        def current() -> Authorizes:
            key, records = acls()
            if key is not seen[0] and key != seen[0]:
                authz.index = AclIndex.from_records(records)
                seen[0] = key
            return authz

        authorizer = current
    return ApiGuard(authorizer, topic_name=topic_name, node_principal_template=template, specs=specs)

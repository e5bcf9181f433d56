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
from protocol.rpc.message import RpcMessage
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
        rule = _TOPIC_RULES.get(api)

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


async def _produce(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    from protocol.rpc.produce import ProduceResponse as R

    return await _split(
        req,
        version,
        handler,
        items="TopicData",
        allowed=lambda t: a.may_topic(Op.WRITE, t.Name),
        answers="Responses",
        refused=lambda t: R.TopicProduceResponse(
            Name=t.Name,
            PartitionResponses=[
                R.PartitionProduceResponse(Index=p.Index, ErrorCode=TOPIC_DENIED) for p in t.PartitionData
            ],
        ),
        empty=R,
    )


async def _fetch(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    from protocol.rpc.broker_fetch import FetchRequest
    from protocol.rpc.broker_fetch import FetchResponse as R

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


async def _list_offsets(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    from protocol.rpc.list_offsets import ListOffsetsResponse as R

    return await _split(
        req,
        version,
        handler,
        items="Topics",
        allowed=lambda t: a.may_topic(Op.DESCRIBE, t.Name),
        answers="Topics",
        refused=lambda t: R.ListOffsetsTopicResponse(
            Name=t.Name,
            Partitions=[
                R.ListOffsetsPartitionResponse(PartitionIndex=p.PartitionIndex, ErrorCode=TOPIC_DENIED)
                for p in t.Partitions
            ],
        ),
        empty=R,
    )


async def _offset_for_leader_epoch(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    from protocol.rpc.offset_for_leader_epoch import OffsetForLeaderEpochResponse as R

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
    from protocol.rpc.metadata import MetadataResponse as R

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


async def _create_topics(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    from protocol.rpc.create_topics import CreateTopicsResponse as R

    cluster = a.may(Op.CREATE, log_denial=False)
    return await _split(
        req,
        version,
        handler,
        items="Topics",
        allowed=lambda t: cluster or a.may_topic(Op.CREATE, t.Name),
        answers="Topics",
        refused=lambda t: R.CreatableTopicResult(
            Name=t.Name, ErrorCode=TOPIC_DENIED, ErrorMessage=DENIED_MESSAGE
        ),
        empty=R,
    )


async def _delete_topics(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    from protocol.rpc.delete_topics import DeleteTopicsResponse as R

    if version < 6:
        return await _split(
            req,
            version,
            handler,
            items="TopicNames",
            allowed=lambda n: a.may_topic(Op.DELETE, n),
            answers="Responses",
            refused=lambda n: R.DeletableTopicResult(Name=n, ErrorCode=TOPIC_DENIED),
            empty=R,
        )

    def allowed(t: Any) -> bool:
        name = t.Name if t.Name is not None else g.topic_name(t.TopicId)
        return name is None or a.may_topic(Op.DELETE, name)

    return await _split(
        req,
        version,
        handler,
        items="Topics",
        allowed=allowed,
        answers="Responses",
        refused=lambda t: R.DeletableTopicResult(
            Name=t.Name, TopicId=t.TopicId, ErrorCode=TOPIC_DENIED, ErrorMessage=DENIED_MESSAGE
        ),
        empty=R,
    )


async def _create_partitions(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    from protocol.rpc.create_partitions import CreatePartitionsResponse as R

    return await _split(
        req,
        version,
        handler,
        items="Topics",
        allowed=lambda t: a.may_topic(Op.ALTER, t.Name),
        answers="Results",
        refused=lambda t: R.CreatePartitionsTopicResult(
            Name=t.Name, ErrorCode=TOPIC_DENIED, ErrorMessage=DENIED_MESSAGE
        ),
        empty=R,
    )


TOPIC_CONFIG_RESOURCE = 2


async def _describe_configs(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    from protocol.rpc.describe_configs import DescribeConfigsResponse as R

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


def _one_group(op: AclOperation, api: str) -> Rule:
    async def rule(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
        if not a.may_group(op, req.GroupId):
            return g._specs[api].error_response(Errors.GROUP_AUTHORIZATION_FAILED)
        return await handler(req, version)

    return rule


async def _offset_commit(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    from protocol.rpc.offset_commit import OffsetCommitResponse as R

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


async def _offset_fetch(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    from protocol.rpc.offset_fetch import OffsetFetchResponse as R

    if version < 8:
        return await _one_group(Op.DESCRIBE, "OffsetFetch")(g, a, req, version, handler)
    return await _split(
        req,
        version,
        handler,
        items="Groups",
        allowed=lambda grp: a.may_group(Op.DESCRIBE, grp.GroupId),
        answers="Groups",
        refused=lambda grp: R.OffsetFetchResponseGroup(GroupId=grp.GroupId, ErrorCode=GROUP_DENIED),
        empty=R,
    )


KEY_TYPE_TRANSACTION = 1


async def _find_coordinator(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    from protocol.rpc.find_coordinator import FindCoordinatorResponse as R

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


async def _describe_groups(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    from protocol.rpc.describe_groups import DescribeGroupsResponse as R

    return await _split(
        req,
        version,
        handler,
        items="Groups",
        allowed=lambda grp: a.may_group(Op.DESCRIBE, grp),
        answers="Groups",
        refused=lambda grp: R.DescribedGroup(GroupId=grp, ErrorCode=GROUP_DENIED),
        empty=R,
    )


async def _list_groups(g: ApiGuard, a: Asker, req: Any, version: int, handler: Handler) -> Any:
    resp = await handler(req, version)
    if a.may(Op.DESCRIBE, log_denial=False):
        return resp
    return resp.model_copy(
        update={"Groups": [x for x in resp.Groups if a.may_group(Op.DESCRIBE, x.GroupId, log_denial=False)]}
    )


_TOPIC_RULES: dict[str, Rule] = {
    "Produce": _produce,
    "Fetch": _fetch,
    "ListOffsets": _list_offsets,
    "OffsetForLeaderEpoch": _offset_for_leader_epoch,
    "Metadata": _metadata,
    "CreateTopics": _create_topics,
    "DeleteTopics": _delete_topics,
    "CreatePartitions": _create_partitions,
    "DescribeConfigs": _describe_configs,
    "InitProducerId": _init_producer_id,
    "JoinGroup": _one_group(Op.READ, "JoinGroup"),
    "SyncGroup": _one_group(Op.READ, "SyncGroup"),
    "Heartbeat": _one_group(Op.READ, "Heartbeat"),
    "LeaveGroup": _one_group(Op.READ, "LeaveGroup"),
    "OffsetCommit": _offset_commit,
    "OffsetFetch": _offset_fetch,
    "FindCoordinator": _find_coordinator,
    "DescribeGroups": _describe_groups,
    "ListGroups": _list_groups,
}


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

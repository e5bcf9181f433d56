"""An admin client: topics (create, list, describe, delete), log dirs, ACLs and SCRAM credentials,
through any broker or controller.

A broker forwards CreateTopics / DeleteTopics to the active controller (as KRaft brokers do); a
controller answers them itself. Metadata works on both. DescribeLogDirs goes to each broker.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kraftpy.security.acl import AclBinding, AclBindingFilter
from protocol.errors import Errors, KafkaError
from protocol.rpc.alter_replica_log_dirs import AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse
from protocol.rpc.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)
from protocol.rpc.create_acls import CreateAclsRequest, CreateAclsResponse
from protocol.rpc.create_topics import CreateTopicsRequest, CreateTopicsResponse
from protocol.rpc.delete_acls import DeleteAclsRequest, DeleteAclsResponse
from protocol.rpc.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from protocol.rpc.describe_acls import DescribeAclsResponse
from protocol.rpc.describe_log_dirs import DescribeLogDirsRequest, DescribeLogDirsResponse
from protocol.rpc.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from protocol.rpc.metadata import MetadataResponse
from tools.client.cluster import BrokerInfo, ClusterMetadata, ConnectionPool, TopicInfo, topics_from
from tools.client.errors import ClientError, as_error

CREATE_TOPICS_VERSION = 7
DELETE_TOPICS_VERSION = 6
ACLS_VERSION = 3  # CreateAcls, DescribeAcls, DeleteAcls


@dataclass(frozen=True, slots=True)
class TopicResult:
    name: str
    error: Errors
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ItemResult:
    """One creation, filter or user of an ACL or SCRAM request: its error and what it matched."""

    error: Errors
    message: str | None = None
    matched: tuple[AclBinding, ...] = ()


@dataclass(frozen=True, slots=True)
class BrokerLogDirs:
    broker: BrokerInfo
    error: KafkaError | None
    response: DescribeLogDirsResponse | None


class Admin:
    def __init__(self, bootstrap_servers: str | list[str], *, timeout_ms: int = 30000) -> None:
        self.timeout_ms = timeout_ms
        self.pool = ConnectionPool(timeout_s=timeout_ms / 1000)
        self.metadata = ClusterMetadata(bootstrap_servers, self.pool)

    async def __aenter__(self) -> Admin:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.pool.close()

    async def _call_any(self, api: str, req: object, version: int | None = None) -> object:
        """Send to the first reachable bootstrap address (then known brokers)."""
        last: KafkaError | None = None
        for url in [*self.metadata.bootstrap, *(b.url for b in self.metadata.brokers.values())]:
            try:
                return await self.pool.get(url).call(api, req, version, timeout=self.timeout_ms / 1000)  # type: ignore[arg-type]
            except KafkaError as e:
                last = e
        raise ClientError(
            last.code if last else Errors.NETWORK_EXCEPTION,
            f"no server answered {api} ({', '.join(u.split('://', 1)[-1] for u in self.metadata.bootstrap)})",
        )

    # ---- topics -----------------------------------------------------------------------------------

    async def create_topic(
        self,
        name: str,
        *,
        partitions: int = -1,
        replication_factor: int = -1,
        assignments: Mapping[int, Sequence[int]] | None = None,
        configs: Mapping[str, str] | None = None,
        validate_only: bool = False,
        wait: bool = True,
    ) -> TopicResult:
        """CreateTopics for one topic; with `wait`, also until every partition has a leader in Metadata."""
        C = CreateTopicsRequest
        topic = C.CreatableTopic(
            Name=name,
            NumPartitions=-1 if assignments else partitions,
            ReplicationFactor=-1 if assignments else replication_factor,
            Assignments=[
                C.CreatableReplicaAssignment(PartitionIndex=p, BrokerIds=list(b))
                for p, b in sorted((assignments or {}).items())
            ],
            Configs=[C.CreatableTopicConfig(Name=k, Value=v) for k, v in (configs or {}).items()],
        )
        req = C(Topics=[topic], TimeoutMs=self.timeout_ms, ValidateOnly=validate_only)
        resp = await self._call_any("CreateTopics", req, CREATE_TOPICS_VERSION)
        assert isinstance(resp, CreateTopicsResponse)
        result = next((r for r in resp.Topics if r.Name == name), None)
        if result is None:
            return TopicResult(name, Errors.UNKNOWN_SERVER_ERROR, "the answer did not name the topic")
        out = TopicResult(name, as_error(result.ErrorCode), result.ErrorMessage)
        if out.error is Errors.NONE and wait and not validate_only:
            await self.wait_for_leaders(name)
        return out

    async def wait_for_leaders(self, name: str, timeout_ms: int | None = None) -> TopicInfo:
        deadline = time.monotonic() + (timeout_ms or self.timeout_ms) / 1000
        while True:
            resp = await self.metadata.fetch([name])
            info = topics_from(resp).get(name)
            if (
                info is not None
                and info.error is Errors.NONE
                and info.partitions
                and all(p.leader >= 0 for p in info.partitions.values())
            ):
                return info
            if time.monotonic() > deadline:
                raise ClientError(
                    Errors.REQUEST_TIMED_OUT, f"topic {name} has no leader for every partition yet"
                )
            await asyncio.sleep(0.05)

    async def delete_topics(self, names: Sequence[str]) -> list[TopicResult]:
        D = DeleteTopicsRequest
        req = D(Topics=[D.DeleteTopicState(Name=n) for n in names], TimeoutMs=self.timeout_ms)
        resp = await self._call_any("DeleteTopics", req, DELETE_TOPICS_VERSION)
        assert isinstance(resp, DeleteTopicsResponse)
        return [TopicResult(r.Name or "", as_error(r.ErrorCode), r.ErrorMessage) for r in resp.Responses]

    async def describe(self, names: Sequence[str] | None = None) -> MetadataResponse:
        """Metadata for the given topics (every topic when None), brokers included."""
        resp = await self.metadata.fetch(list(names) if names is not None else None)
        scheme = self.metadata.scheme
        self.metadata.brokers = {
            b.NodeId: BrokerInfo(b.NodeId, b.Host, b.Port, b.Rack, scheme) for b in resp.Brokers
        }
        return resp

    async def list_topics(self) -> list[str]:
        resp = await self.describe(None)
        return sorted(t.Name for t in resp.Topics if t.Name)

    # ---- log dirs ---------------------------------------------------------------------------------

    async def live_brokers(self) -> dict[int, BrokerInfo]:
        """The brokers alive in fresh metadata, by id, reachable the way that metadata was asked."""
        resp = await self.describe([])
        scheme = self.metadata.scheme
        return {b.NodeId: BrokerInfo(b.NodeId, b.Host, b.Port, b.Rack, scheme) for b in resp.Brokers}

    async def live_broker(self, broker_id: int) -> BrokerInfo:
        """One live broker; BROKER_NOT_AVAILABLE when the metadata does not list it."""
        b = (await self.live_brokers()).get(broker_id)
        if b is None:
            raise ClientError(Errors.BROKER_NOT_AVAILABLE, f"broker {broker_id} is not alive in the metadata")
        return b

    async def describe_log_dirs(
        self, broker_ids: Sequence[int] | None = None, topics: Mapping[str, Sequence[int]] | None = None
    ) -> list[BrokerLogDirs]:
        """DescribeLogDirs of each broker asked for (every live broker when None)."""
        brokers = await self.live_brokers()
        wanted = sorted(brokers) if broker_ids is None else list(broker_ids)
        req = DescribeLogDirsRequest(
            Topics=None
            if topics is None
            else [
                DescribeLogDirsRequest.DescribableLogDirTopic(Topic=t, Partitions=list(ps))
                for t, ps in topics.items()
            ]
        )

        async def one(broker_id: int) -> BrokerLogDirs:
            b = brokers.get(broker_id)
            if b is None:
                return BrokerLogDirs(
                    BrokerInfo(broker_id, "", 0, None),
                    ClientError(
                        Errors.BROKER_NOT_AVAILABLE, f"broker {broker_id} is not alive in the metadata"
                    ),
                    None,
                )
            try:
                r = await self.pool.get(b.url).call("DescribeLogDirs", req, timeout=self.timeout_ms / 1000)
            except KafkaError as e:
                return BrokerLogDirs(b, e, None)
            return BrokerLogDirs(b, None, r)

        return list(await asyncio.gather(*(one(b) for b in wanted)))

    async def alter_replica_log_dirs(
        self, broker_id: int, moves: Mapping[tuple[str, int], str]
    ) -> dict[tuple[str, int], Errors]:
        """AlterReplicaLogDirs to one broker: move each (topic, partition) replica there into the log
        dir at the given path. Returns each partition's error (NONE: the move is under way or done)."""
        info = await self.live_broker(broker_id)
        by_path: dict[str, dict[str, list[int]]] = {}
        for (topic, partition), path in moves.items():
            by_path.setdefault(path, {}).setdefault(topic, []).append(partition)
        req = AlterReplicaLogDirsRequest(
            Dirs=[
                AlterReplicaLogDirsRequest.AlterReplicaLogDir(
                    Path=path,
                    Topics=[
                        AlterReplicaLogDirsRequest.AlterReplicaLogDirTopic(Name=t, Partitions=ps)
                        for t, ps in topics.items()
                    ],
                )
                for path, topics in by_path.items()
            ]
        )
        r: AlterReplicaLogDirsResponse = await self.pool.get(info.url).call(
            "AlterReplicaLogDirs", req, timeout=self.timeout_ms / 1000
        )
        return {
            (t.TopicName, p.PartitionIndex): as_error(p.ErrorCode) for t in r.Results for p in t.Partitions
        }

    async def topic_configs(self, topics: Sequence[str]) -> dict[str, list[tuple[str, str | None]]]:
        """Each topic's configs that are not at their default (what kafka-topics prints as Configs:),
        by name; a topic the answer leaves out or refuses has none."""
        from protocol.rpc.describe_configs import (
            RESOURCE_TOPIC,
            SOURCE_DEFAULT_CONFIG,
            DescribeConfigsRequest,
        )

        if not topics:
            return {}
        req = DescribeConfigsRequest(
            Resources=[
                DescribeConfigsRequest.DescribeConfigsResource(ResourceType=RESOURCE_TOPIC, ResourceName=t)
                for t in topics
            ]
        )
        resp = await self._call_any("DescribeConfigs", req, 4)
        out: dict[str, list[tuple[str, str | None]]] = {}
        for r in resp.Results:  # type: ignore[attr-defined]
            if r.ErrorCode == 0:
                out[r.ResourceName] = sorted(
                    (c.Name, c.Value) for c in r.Configs if c.ConfigSource != SOURCE_DEFAULT_CONFIG
                )
        return out

    # ---- ACLs ---------------------------------------------------------------------------------------

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[ItemResult]:
        """CreateAcls; one result per binding, in order (an answer that leaves one out gets
        UNKNOWN_SERVER_ERROR for it, as Kafka's admin client does)."""
        req = CreateAclsRequest(Creations=[b.to_creation() for b in bindings])
        resp = await self._call_any("CreateAcls", req, ACLS_VERSION)
        assert isinstance(resp, CreateAclsResponse)
        results = [ItemResult(as_error(r.ErrorCode), r.ErrorMessage) for r in resp.Results]
        return _pad(results, len(bindings), "CreateAcls")

    async def describe_acls(self, flt: AclBindingFilter = AclBindingFilter.ANY) -> list[AclBinding]:
        """The ACLs `flt` matches; ClientError when the server refuses the filter."""
        req = flt.to_describe_request()
        resp = await self._call_any("DescribeAcls", req, ACLS_VERSION)
        assert isinstance(resp, DescribeAclsResponse)
        if resp.ErrorCode:
            raise ClientError(as_error(resp.ErrorCode), resp.ErrorMessage or "DescribeAcls refused")
        return [AclBinding.from_description(r, a) for r in resp.Resources for a in r.Acls]

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[ItemResult]:
        """DeleteAcls; per filter, its error and the ACLs it removed."""
        req = DeleteAclsRequest(Filters=[f.to_delete_filter() for f in filters])
        resp = await self._call_any("DeleteAcls", req, ACLS_VERSION)
        assert isinstance(resp, DeleteAclsResponse)
        results = [
            ItemResult(
                as_error(r.ErrorCode),
                r.ErrorMessage,
                tuple(AclBinding.from_matching_acl(a) for a in r.MatchingAcls),
            )
            for r in resp.FilterResults
        ]
        return _pad(results, len(filters), "DeleteAcls")

    # ---- SCRAM credentials ----------------------------------------------------------------------------

    async def describe_user_scram_credentials(
        self, users: Sequence[str] | None = None
    ) -> DescribeUserScramCredentialsResponse:
        """Each user's mechanisms and iterations (every user with a credential when None or empty)."""
        D = DescribeUserScramCredentialsRequest
        req = D(Users=[D.UserName(Name=u) for u in users] if users else None)
        resp = await self._call_any("DescribeUserScramCredentials", req, 0)
        assert isinstance(resp, DescribeUserScramCredentialsResponse)
        if resp.ErrorCode:
            raise ClientError(
                as_error(resp.ErrorCode), resp.ErrorMessage or "DescribeUserScramCredentials refused"
            )
        return resp

    async def alter_user_scram_credentials(
        self,
        upsertions: Sequence[AlterUserScramCredentialsRequest.ScramCredentialUpsertion] = (),
        deletions: Sequence[AlterUserScramCredentialsRequest.ScramCredentialDeletion] = (),
    ) -> dict[str, ItemResult]:
        """AlterUserScramCredentials; each user's result. Upsertions carry the salted password,
        never the password (kraftpy.security.scram.salted_password)."""
        req = AlterUserScramCredentialsRequest(Upsertions=list(upsertions), Deletions=list(deletions))
        resp = await self._call_any("AlterUserScramCredentials", req, 0)
        assert isinstance(resp, AlterUserScramCredentialsResponse)
        out = {r.User: ItemResult(as_error(r.ErrorCode), r.ErrorMessage) for r in resp.Results}
        for user in (a.Name for a in (*deletions, *upsertions)):
            out.setdefault(user, ItemResult(Errors.UNKNOWN_SERVER_ERROR, "the answer did not name this user"))
        return out


def _pad(results: list[ItemResult], wanted: int, api: str) -> list[ItemResult]:
    missing = ItemResult(
        Errors.UNKNOWN_SERVER_ERROR, f"the {api} answer has fewer results than were asked for"
    )
    return results[:wanted] + [missing] * (wanted - len(results))

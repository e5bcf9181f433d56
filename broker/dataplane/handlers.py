"""RPC handlers of the broker's data plane: request models in, response models out.

Errors are answered per partition (or per dir) with Kafka's codes; only a request the broker
cannot look at raises. Controller requests a client sends to a broker (CreateTopics, DeleteTopics)
are forwarded to the active controller, as KRaft brokers do.
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING

from broker.dataplane.describe_configs import describe_configs
from broker.dataplane.metadata_response import brokers as metadata_brokers
from broker.dataplane.metadata_response import metadata_response
from broker.storage import LogDirOfflineError, PartitionLog
from kraftpy.image import MetadataImage
from protocol.errors import Errors, KafkaError
from protocol.rpc.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
)
from protocol.rpc.broker_fetch import EpochEndOffset as FetchEpochEndOffset
from protocol.rpc.broker_fetch import FetchRequest, FetchResponse, LeaderIdAndEpoch
from protocol.rpc.create_partitions import CreatePartitionsRequest, CreatePartitionsResponse
from protocol.rpc.create_topics import CreateTopicsRequest, CreateTopicsResponse
from protocol.rpc.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from protocol.rpc.describe_cluster import (
    ENDPOINT_TYPE_BROKER,
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from protocol.rpc.describe_configs import RESOURCE_TOPIC, DescribeConfigsRequest, DescribeConfigsResponse
from protocol.rpc.describe_log_dirs import DescribeLogDirsRequest, DescribeLogDirsResponse
from protocol.rpc.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from protocol.rpc.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from protocol.rpc.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from protocol.rpc.metadata import MetadataRequest, MetadataResponse
from protocol.rpc.offset_for_leader_epoch import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from protocol.rpc.produce import ProduceRequest, ProduceResponse
from protocol.transport import run_large
from protocol.transport.context import current_request
from protocol.uuid import Uuid

if TYPE_CHECKING:
    from broker.dataplane.host import ConfiguredLogDir
    from broker.dataplane.producer_ids import ProducerIdManager
    from broker.dataplane.replica_manager import FetchRead, ReplicaManager

D = DescribeLogDirsResponse


LARGE_METADATA_REQUEST = 1000  # topics named in one Metadata request, or partitions in an all-topics one
LIST_OFFSETS_SLICE = 500  # partitions of one ListOffsets request looked up between yields


class DataPlaneHandlers:
    def __init__(self, replicas: ReplicaManager, producer_ids: ProducerIdManager) -> None:
        self.replicas = replicas
        self.producer_ids = producer_ids
        self.host = replicas.host

    def _image(self) -> MetadataImage:
        return self.replicas.image

    # ---- Produce --------------------------------------------------------------------------------

    async def produce(self, req: ProduceRequest, version: int) -> ProduceResponse:
        P = ProduceResponse
        refuse: Errors | None = None
        message = None
        if req.Acks not in (0, 1, -1):
            refuse, message = Errors.INVALID_REQUIRED_ACKS, f"acks must be 0, 1 or -1, not {req.Acks}"
        elif req.TransactionalId is not None:
            refuse, message = Errors.INVALID_REQUEST, "transactional produce is not supported"
        calls = []
        places = []
        for topic in req.TopicData:
            for pd in topic.PartitionData:
                places.append((topic.Name, pd.Index))
                if refuse is None:
                    calls.append(
                        self.replicas.append(topic.Name, pd.Index, pd.Records, req.Acks, req.TimeoutMs)
                    )
        outcomes = await asyncio.gather(*calls) if refuse is None else []
        by_topic: dict[str, list[ProduceResponse.PartitionProduceResponse]] = {}
        leaders: set[int] = set()
        for i, (name, index) in enumerate(places):
            if refuse is not None:
                part = P.PartitionProduceResponse(Index=index, ErrorCode=int(refuse), ErrorMessage=message)
            else:
                o = outcomes[i]
                part = P.PartitionProduceResponse(
                    Index=index,
                    ErrorCode=int(o.error),
                    BaseOffset=o.base_offset,
                    LogStartOffset=o.log_start_offset,
                    ErrorMessage=o.message if version >= 8 else None,
                )
                # KIP-951 (v10+): where the partition went, so the producer need not ask Metadata first
                if version >= 10 and (now := o.current_leader) is not None:
                    part = part.model_copy(
                        update={"CurrentLeader": LeaderIdAndEpoch(LeaderId=now[0], LeaderEpoch=now[1])}
                    )
                    leaders.add(now[0])
            by_topic.setdefault(name, []).append(part)
        return P(
            Responses=[P.TopicProduceResponse(Name=n, PartitionResponses=ps) for n, ps in by_topic.items()],
            NodeEndpoints=[
                P.NodeEndpoint(NodeId=n, Host=h, Port=p, Rack=r) for n, h, p, r in self._endpoints(leaders)
            ],
        )

    def _listener(self) -> str:
        """The listener the request came in on: a Kafka listener's name, or over HTTP the RPC one."""
        return current_request().listener or self.replicas.listener_name or ""

    def _endpoints(self, node_ids: set[int]) -> list[tuple[int, str, int, str | None]]:
        """The brokers' endpoints on the listener the request came in on (the RPC one over HTTP)."""
        listener = self._listener()
        out = []
        for n in sorted(node_ids):
            reg = self._image().cluster.brokers.get(n)
            ep = reg.listener(listener) if reg is not None else None
            if ep is not None:
                out.append((n, ep.host, ep.port, reg.rack if reg is not None else None))
        return out

    # ---- Fetch ----------------------------------------------------------------------------------

    async def fetch(self, req: FetchRequest, version: int) -> FetchResponse:
        replica_id = req.replica_id(version)
        replica_epoch = req.replica_epoch(version)
        wanted: list[tuple[str | Uuid, int, FetchRequest.FetchPartition, FetchRequest.FetchTopic]] = []
        for topic in req.Topics:
            key: str | Uuid = topic.TopicId if version >= 13 else topic.Topic
            for p in topic.Partitions:
                wanted.append((key, p.Partition, p, topic))

        async def read_all() -> list[FetchRead]:
            return list(
                await asyncio.gather(
                    *(
                        self.replicas.read(
                            key,
                            index,
                            replica_id=replica_id,
                            replica_epoch=replica_epoch,
                            fetch_offset=p.FetchOffset,
                            current_leader_epoch=p.CurrentLeaderEpoch,
                            last_fetched_epoch=p.LastFetchedEpoch,
                            max_bytes=max(p.PartitionMaxBytes, 1),
                        )
                        for key, index, p, _ in wanted
                    )
                )
            )

        keys = [k for key, index, _, _ in wanted if (k := self.replicas.key_of(key, index)) is not None]
        with self.replicas.fetch_waiters.watch(keys) as watch:
            reads = await read_all()
            total = sum(len(r.records) for r in reads)
            quiet = all(r.error is Errors.NONE and r.diverging is None for r in reads)
            waits = wanted and quiet and total < max(req.MinBytes, 1) and req.MaxWaitMs > 0
            if waits and await watch.wait(req.MaxWaitMs / 1000):
                reads = await read_all()

        R = FetchResponse
        topics: dict[tuple[str, Uuid], list[FetchResponse.PartitionData]] = {}
        budget = req.MaxBytes
        stats, image = self.replicas.topic_stats, self._image()
        out_meter = "replicationbytesout" if replica_id >= 0 else "bytesout"
        for (key, index, _, topic), r in zip(wanted, reads, strict=True):
            records = r.records
            if records and budget <= 0:
                records = b""  # over MaxBytes: the next fetch takes it
            budget -= len(records)
            known = image.topics.get_topic(key)
            name = known.name if known is not None else None
            stats.mark("totalfetchrequests", name)
            if r.error is not Errors.NONE:
                stats.mark("failedfetchrequests", name)
            if records:
                stats.mark(out_meter, name, len(records))
            pd = R.PartitionData(
                PartitionIndex=index,
                ErrorCode=int(r.error),
                HighWatermark=r.high_watermark,
                LastStableOffset=r.high_watermark,
                LogStartOffset=r.log_start_offset,
                DivergingEpoch=(
                    FetchEpochEndOffset(Epoch=r.diverging.epoch, EndOffset=r.diverging.end_offset)
                    if r.diverging is not None
                    else None
                ),
                CurrentLeader=(
                    LeaderIdAndEpoch(LeaderId=r.leader[0], LeaderEpoch=r.leader[1])
                    if r.leader is not None and version >= 12
                    else None
                ),
                Records=records,
            )
            topics.setdefault((topic.Topic, topic.TopicId), []).append(pd)
        leaders = (
            {pd.CurrentLeader.LeaderId for ps in topics.values() for pd in ps if pd.CurrentLeader is not None}
            if version >= 16
            else set()
        )
        return R(
            Responses=[
                R.FetchableTopicResponse(Topic=name if version < 13 else "", TopicId=tid, Partitions=ps)
                for (name, tid), ps in topics.items()
            ],
            NodeEndpoints=[
                R.NodeEndpoint(NodeId=n, Host=h, Port=p, Rack=r) for n, h, p, r in self._endpoints(leaders)
            ],
        )

    # ---- ListOffsets ----------------------------------------------------------------------------

    async def list_offsets(self, req: ListOffsetsRequest, version: int) -> ListOffsetsResponse:
        L = ListOffsetsResponse
        out = []
        for topic in req.Topics:
            answers: list[L.ListOffsetsPartitionResponse] = []
            # In slices, each gathered (which yields to the loop): a request naming 100,000 partitions
            # must not hold it.
            for start in range(0, len(topic.Partitions), LIST_OFFSETS_SLICE):
                wanted = topic.Partitions[start : start + LIST_OFFSETS_SLICE]
                results = await asyncio.gather(
                    *(
                        self.replicas.list_offset(
                            topic.Name, p.PartitionIndex, p.Timestamp, p.CurrentLeaderEpoch, req.ReplicaId
                        )
                        for p in wanted
                    )
                )
                answers += [
                    L.ListOffsetsPartitionResponse(
                        PartitionIndex=p.PartitionIndex,
                        ErrorCode=int(code),
                        Timestamp=ts,
                        Offset=offset,
                        LeaderEpoch=epoch,
                    )
                    for p, (code, ts, offset, epoch) in zip(wanted, results, strict=True)
                ]
            out.append(L.ListOffsetsTopicResponse(Name=topic.Name, Partitions=answers))
        return L(Topics=out)

    # ---- OffsetForLeaderEpoch -------------------------------------------------------------------

    async def offset_for_leader_epoch(
        self, req: OffsetForLeaderEpochRequest, version: int
    ) -> OffsetForLeaderEpochResponse:
        R = OffsetForLeaderEpochResponse
        topics = []
        for t in req.Topics:
            found = await asyncio.gather(
                *(
                    self.replicas.end_offset_for_epoch(
                        t.Topic, p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch
                    )
                    for p in t.Partitions
                )
            )
            topics.append(
                R.OffsetForLeaderTopicResult(
                    Topic=t.Topic,
                    Partitions=[
                        R.EpochEndOffset(
                            ErrorCode=int(code), Partition=p.Partition, LeaderEpoch=epoch, EndOffset=end
                        )
                        for p, (code, epoch, end) in zip(t.Partitions, found, strict=True)
                    ],
                )
            )
        return R(Topics=topics)

    # ---- DescribeConfigs ------------------------------------------------------------------------

    async def describe_configs(self, req: DescribeConfigsRequest, version: int) -> DescribeConfigsResponse:
        image = self._image()
        return describe_configs(
            req,
            version,
            node_id=self.host.node_id,
            cfg=getattr(self.host, "config", None),
            topic_configs=lambda name: image.configs.configs(RESOURCE_TOPIC, name),
            topic_exists=lambda name: image.topics.get_topic(name) is not None,
        )

    # ---- DescribeCluster ------------------------------------------------------------------------

    async def describe_cluster(self, req: DescribeClusterRequest, version: int) -> DescribeClusterResponse:
        """The live brokers on the listener asked (KIP-919: a broker answers for brokers only)."""
        R = DescribeClusterResponse
        if version >= 1 and req.EndpointType != ENDPOINT_TYPE_BROKER:
            return R(
                ErrorCode=int(Errors.MISMATCHED_ENDPOINT_TYPE),
                ErrorMessage="a broker describes brokers; ask a controller for controllers",
                EndpointType=ENDPOINT_TYPE_BROKER,
            )
        listener = self._listener()
        return R(
            ClusterId=self.host.cluster_id or "",
            ControllerId=self.host.node_id,  # as in Metadata: KRaft brokers name a live broker
            Brokers=[
                R.DescribeClusterBroker(BrokerId=b.NodeId, Host=b.Host, Port=b.Port, Rack=b.Rack)
                for b in metadata_brokers(self._image().cluster, listener)
            ],
        )

    # ---- Metadata -------------------------------------------------------------------------------

    async def metadata(self, req: MetadataRequest, version: int) -> MetadataResponse:
        """Brokers are listed with their endpoints on the listener asked (the RPC one over HTTP)."""
        image = self._image()
        answer = functools.partial(
            metadata_response,
            image,
            req,
            version,
            listener=self._listener(),
            cluster_id=self.host.cluster_id,
            local_broker_id=self.host.node_id,
            unreadable=self.replicas.unreadable_replicas().keys(),
        )
        if req.Topics is not None:
            size = len(req.Topics)
        else:
            size = sum(len(t.partitions) for t in image.topics.topics_by_id.values())
        if size > LARGE_METADATA_REQUEST:
            # The image is immutable, so a long answer can be built off the loop.
            return await run_large(answer)
        return answer()

    # ---- DescribeLogDirs ------------------------------------------------------------------------

    async def describe_log_dirs(self, req: DescribeLogDirsRequest, version: int) -> DescribeLogDirsResponse:
        wanted: dict[str, set[int]] | None = None
        if req.Topics is not None:
            wanted = {}
            for t in req.Topics:
                wanted.setdefault(t.Topic, set()).update(t.Partitions)
        results = [await self._describe_dir(d, wanted) for d in self.host.configured_log_dirs()]
        return D(Results=results)

    async def _describe_dir(
        self, d: ConfiguredLogDir, wanted: dict[str, set[int]] | None
    ) -> D.DescribeLogDirsResult:
        dir_id = d.dir_id or Uuid.ZERO
        if d.log_dir is None or not d.log_dir.online:
            return D.DescribeLogDirsResult(
                ErrorCode=int(Errors.KAFKA_STORAGE_ERROR), LogDir=d.path, DirectoryId=dir_id
            )
        logs = []
        for hp in self.replicas.partitions.values():
            local = hp.local
            if local is None or local.log_dir is not d.log_dir:
                continue
            if wanted is not None and hp.tp.partition not in wanted.get(hp.tp.topic_name, set()):
                continue
            logs.append((hp, local.log))
        try:
            usage = await d.log_dir.run(d.log_dir.usage)
            sizes = await d.log_dir.run(_sizes, [log for _, log in logs])
        except LogDirOfflineError:
            return D.DescribeLogDirsResult(
                ErrorCode=int(Errors.KAFKA_STORAGE_ERROR), LogDir=d.path, DirectoryId=dir_id
            )
        topics: dict[str, list[D.DescribeLogDirsPartition]] = {}
        for (hp, _), (size, leo) in zip(logs, sizes, strict=True):
            topics.setdefault(hp.tp.topic_name, []).append(
                D.DescribeLogDirsPartition(
                    PartitionIndex=hp.tp.partition,
                    PartitionSize=size,
                    OffsetLag=max(hp.state.high_watermark - leo, 0),
                    IsFutureKey=False,
                )
            )
        futures = getattr(self.host, "future_replicas", None)
        for tp, size, lag in futures(d.dir_id) if futures is not None and d.dir_id is not None else ():
            if wanted is not None and tp.partition not in wanted.get(tp.topic_name, set()):
                continue
            topics.setdefault(tp.topic_name, []).append(
                D.DescribeLogDirsPartition(
                    PartitionIndex=tp.partition, PartitionSize=size, OffsetLag=lag, IsFutureKey=True
                )
            )
        return D.DescribeLogDirsResult(
            ErrorCode=0,
            LogDir=d.path,
            Topics=[
                D.DescribeLogDirsTopic(
                    Name=name, Partitions=sorted(ps, key=lambda p: (p.PartitionIndex, p.IsFutureKey))
                )
                for name, ps in sorted(topics.items())
            ],
            TotalBytes=usage.total_bytes,
            UsableBytes=usage.usable_bytes,
            DirectoryId=dir_id,
        )

    # ---- InitProducerId -------------------------------------------------------------------------

    async def init_producer_id(self, req: InitProducerIdRequest, version: int) -> InitProducerIdResponse:
        if req.TransactionalId is not None:
            return InitProducerIdResponse(ErrorCode=int(Errors.INVALID_REQUEST))
        try:
            pid = await self.producer_ids.next_producer_id()
        except KafkaError as e:
            return InitProducerIdResponse(ErrorCode=int(e.code))
        return InitProducerIdResponse(ErrorCode=0, ProducerId=pid, ProducerEpoch=0)

    # ---- forwarded to the controller -------------------------------------------------------------

    async def create_topics(self, req: CreateTopicsRequest, version: int) -> CreateTopicsResponse:
        resp: CreateTopicsResponse = await self.host.controller.call("CreateTopics", req, version, timeout=30)
        return resp

    async def create_partitions(self, req: CreatePartitionsRequest, version: int) -> CreatePartitionsResponse:
        resp: CreatePartitionsResponse = await self.host.controller.call(
            "CreatePartitions", req, version, timeout=30
        )
        return resp

    async def delete_topics(self, req: DeleteTopicsRequest, version: int) -> DeleteTopicsResponse:
        resp: DeleteTopicsResponse = await self.host.controller.call("DeleteTopics", req, version, timeout=30)
        return resp

    # ---- partition reassignment (KIP-455), forwarded to the controller ---------------------------

    async def alter_partition_reassignments(
        self, req: AlterPartitionReassignmentsRequest, version: int
    ) -> AlterPartitionReassignmentsResponse:
        resp: AlterPartitionReassignmentsResponse = await self.host.controller.call(
            "AlterPartitionReassignments", req, version, timeout=30
        )
        return resp

    async def list_partition_reassignments(
        self, req: ListPartitionReassignmentsRequest, version: int
    ) -> ListPartitionReassignmentsResponse:
        resp: ListPartitionReassignmentsResponse = await self.host.controller.call(
            "ListPartitionReassignments", req, version, timeout=30
        )
        return resp


def _sizes(logs: list[PartitionLog]) -> list[tuple[int, int]]:
    return [(log.size_bytes, log.log_end_offset) for log in logs]

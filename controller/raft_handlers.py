"""The quorum's RPCs as every controller serves them: Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch,
FetchSnapshot and DescribeQuorum.

Each request is stepped through the Raft core, which answers with Kafka's error codes (reference 9)
and writes nothing for a request it refuses; these handlers only translate. FetchSnapshot is read
in chunks straight from the snapshot file, and DescribeQuorum from the leader's replica progress.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from controller import raft_wire as wire
from controller.describe_quorum import describe_quorum
from controller.raft_fetch import OffsetAndEpoch
from kraftpy.raft import messages as raft
from kraftpy.raft.state import Role
from protocol.errors import Errors, KafkaError
from protocol.rpc.current_leader import LeaderIdAndEpoch
from protocol.rpc.describe_quorum import DescribeQuorumRequest, DescribeQuorumResponse
from protocol.rpc.fetch import FetchRequest, FetchResponse
from protocol.rpc.fetch_snapshot import FetchSnapshotRequest, FetchSnapshotResponse

if TYPE_CHECKING:
    from controller.raft_client import RaftClient

Handler = Callable[[Any, int], Awaitable[Any]]

METADATA_TOPIC = "__cluster_metadata"


class RaftApis:
    def __init__(self, raft_client: RaftClient, cluster_id: str) -> None:
        self._raft = raft_client
        self._cluster_id = cluster_id

    def handlers(self) -> dict[str, Handler]:
        from protocol.rpc import API_SPECS  # TEMP

        return {
            k: v
            for k, v in {
                "Vote": self._vote,
                "BeginQuorumEpoch": self._begin_quorum_epoch,
                "EndQuorumEpoch": self._end_quorum_epoch,
                "Fetch": self._fetch,
                "FetchSnapshot": self._fetch_snapshot,
                "DescribeQuorum": self._describe_quorum,
            }.items()
            if k in API_SPECS
        }

    async def _step(self, source: int, message: raft.Request, reply_type: type) -> Any:
        answer = await self._raft.handle(source, message, reply_type)
        if answer is None:
            # The core ignores a message that claims to come from this very node.
            raise KafkaError(Errors.INVALID_REQUEST, f"node {source} is this controller")
        return answer

    async def _vote(self, req: Any, version: int) -> Any:
        m = wire.vote_request_from_wire(req, self._cluster_id)
        return wire.vote_response_to_wire(await self._step(m.CandidateId, m, raft.VoteResponse))

    async def _begin_quorum_epoch(self, req: Any, version: int) -> Any:
        m = wire.begin_request_from_wire(req, self._cluster_id)
        return wire.begin_response_to_wire(await self._step(m.LeaderId, m, raft.BeginQuorumEpochResponse))

    async def _end_quorum_epoch(self, req: Any, version: int) -> Any:
        m = wire.end_request_from_wire(req, self._cluster_id)
        return wire.end_response_to_wire(await self._step(m.LeaderId, m, raft.EndQuorumEpochResponse))

    async def _fetch(self, req: FetchRequest, version: int) -> FetchResponse:
        if req.MaxWaitMs < 0 or req.MaxBytes < 0:
            raise KafkaError(Errors.INVALID_REQUEST, "MaxWaitMs and MaxBytes must not be negative")
        m = wire.fetch_request_from_wire(req, self._cluster_id)
        if m.ReplicaId == self._raft.node_id:
            raise KafkaError(Errors.INVALID_REQUEST, f"ReplicaId {m.ReplicaId} is this controller")
        answer, _ = await self._raft.handle_fetch(m, req.MaxWaitMs)
        return wire.fetch_response_to_wire(answer, self._raft.log_start_offset)

    async def _fetch_snapshot(self, req: FetchSnapshotRequest, version: int) -> FetchSnapshotResponse:
        raft_client = self._raft
        error, size, data = await raft_client.read_snapshot_chunk(
            req.ClusterId,
            req.CurrentLeaderEpoch,
            OffsetAndEpoch(req.SnapshotId.EndOffset, req.SnapshotId.Epoch),
            req.Position,
            req.MaxBytes,
        )
        resp = FetchSnapshotResponse(
            ErrorCode=int(error),
            SnapshotId=req.SnapshotId,
            CurrentLeader=LeaderIdAndEpoch(
                LeaderId=raft_client.leader_id, LeaderEpoch=raft_client.leader_epoch
            ),
        )
        if error is Errors.NONE:
            resp.Size = size
            resp.Position = req.Position
            resp.UnalignedRecords = data
        return resp

    async def _describe_quorum(self, req: DescribeQuorumRequest, version: int) -> DescribeQuorumResponse:
        return describe_quorum(
            req, self._raft, now_ms=time.time_ns() // 1_000_000, leading=self._raft.role is Role.LEADER
        )

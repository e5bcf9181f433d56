"""The quorum's messages over the controller listeners: `POST /rpc/<Api>` to each voter.

One RpcClient per peer, no retries here (the core resends on its own timers). A Fetch waits at the
leader for new records, so its timeout covers that wait. A snapshot comes in chunks and is handed
to the core whole.
"""

from __future__ import annotations

import ssl as _ssl
from collections.abc import Mapping

import structlog

from controller import raft_wire as wire
from kraftpy.raft import messages as raft
from protocol.errors import Errors
from protocol.rpc.fetch import SnapshotIdData
from protocol.rpc.fetch_snapshot import FetchSnapshotRequest
from protocol.transport import RpcClient, RpcConnectionError, RpcError
from protocol.transport.client import NO_RETRIES

log = structlog.get_logger(__name__)

REQUEST_TIMEOUT_S = 2.0
FETCH_MAX_WAIT_MS = 500
SNAPSHOT_CHUNK_BYTES = 1 << 20


class HttpRaftTransport:
    def __init__(
        self, voters: Mapping[int, str], node_id: int, cluster_id: str, *, ssl: _ssl.SSLContext | None = None
    ) -> None:
        """`voters`: node id -> base URL of its controller listener; `ssl`: the client context when
        the controller listener is TLS."""
        self.node_id = node_id
        self.cluster_id = cluster_id
        self._clients = {
            voter: RpcClient(url, timeout=REQUEST_TIMEOUT_S, retry=NO_RETRIES, ssl=ssl)
            for voter, url in voters.items()
            if voter != node_id
        }

    async def send(self, destination: int, message: raft.Request) -> raft.Response | None:
        client = self._clients.get(destination)
        if client is None:
            return None
        try:
            if isinstance(message, raft.FetchRequest):
                resp = await client.call(
                    "Fetch",
                    wire.fetch_request_to_wire(message, FETCH_MAX_WAIT_MS),
                    timeout=REQUEST_TIMEOUT_S + FETCH_MAX_WAIT_MS / 1000,
                )
                return wire.fetch_response_from_wire(resp, message)
            if isinstance(message, raft.VoteRequest):
                return wire.vote_response_from_wire(
                    await client.call("Vote", wire.vote_request_to_wire(message))
                )
            if isinstance(message, raft.BeginQuorumEpochRequest):
                resp = await client.call("BeginQuorumEpoch", wire.begin_request_to_wire(message))
                return wire.begin_response_from_wire(resp)
            if isinstance(message, raft.EndQuorumEpochRequest):
                resp = await client.call("EndQuorumEpoch", wire.end_request_to_wire(message))
                return wire.end_response_from_wire(resp)
        except (RpcConnectionError, RpcError) as e:
            log.debug(
                "raft rpc failed", destination=destination, message=type(message).__name__, error=str(e)
            )
            return None
        raise TypeError(f"no RPC for {type(message).__name__}")

    async def fetch_snapshot(
        self, destination: int, request: raft.FetchSnapshotRequest
    ) -> raft.FetchSnapshotResponse | None:
        """Download the whole snapshot in chunks; an error answer ends it (the core asks again)."""
        client = self._clients.get(destination)
        if client is None:
            return None
        sid = request.SnapshotId
        chunks: list[bytes] = []
        position, size = 0, None
        try:
            while size is None or position < size:
                resp = await client.call(
                    "FetchSnapshot",
                    FetchSnapshotRequest(
                        ClusterId=request.ClusterId,
                        ReplicaId=request.ReplicaId,
                        MaxBytes=SNAPSHOT_CHUNK_BYTES,
                        CurrentLeaderEpoch=request.CurrentLeaderEpoch,
                        SnapshotId=SnapshotIdData(EndOffset=sid.EndOffset, Epoch=sid.Epoch),
                        Position=position,
                    ),
                )
                leader_id, leader_epoch = wire._leader(resp.CurrentLeader)
                if resp.ErrorCode != Errors.NONE or resp.Position != position or not resp.UnalignedRecords:
                    return raft.FetchSnapshotResponse(
                        ErrorCode=wire._error(resp.ErrorCode)
                        if resp.ErrorCode
                        else Errors.UNKNOWN_SERVER_ERROR,
                        LeaderId=leader_id,
                        LeaderEpoch=leader_epoch,
                        SnapshotId=sid,
                    )
                size = resp.Size
                chunks.append(resp.UnalignedRecords)
                position += len(resp.UnalignedRecords)
        except (RpcConnectionError, RpcError) as e:
            log.debug("snapshot fetch failed", destination=destination, error=str(e))
            return None
        data = b"".join(chunks)
        return raft.FetchSnapshotResponse(
            ErrorCode=Errors.NONE,
            LeaderId=leader_id,
            LeaderEpoch=leader_epoch,
            SnapshotId=sid,
            Size=len(data),
            Position=0,
            UnalignedRecords=data,
        )

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()

"""LeaderIdAndEpoch: the leader a response points its client to (the CurrentLeader field).

Kafka's schemas each declare their own copy (FetchResponse, ProduceResponse,
FetchSnapshotResponse); the fields and their meaning are the same, so ours share one.
"""

from __future__ import annotations

from protocol.rpc.message import RpcMessage
from protocol.rpc.types import Int32


class LeaderIdAndEpoch(RpcMessage):
    LeaderId: Int32 = -1
    LeaderEpoch: Int32 = -1

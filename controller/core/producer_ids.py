"""Producer id blocks handed to brokers (AllocateProducerIds, ProducerIdsRecord)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controller.core.result import ControllerResult
from protocol.errors import Errors, KafkaError
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_records import ProducerIdsRecord
from protocol.rpc.allocate_producer_ids import AllocateProducerIdsRequest, AllocateProducerIdsResponse

if TYPE_CHECKING:
    from controller.core.cluster_control import ClusterControlManager

PRODUCER_ID_BLOCK_SIZE = 1000
_MAX_INT64 = 2**63 - 1


class ProducerIdControlManager:
    def __init__(self) -> None:
        self.next_producer_id = 0
        """The first id of the next block to hand out."""

    def replay_producer_ids(self, record: Any) -> None:
        if record.NextProducerId < self.next_producer_id:
            raise ValueError(
                f"ProducerIdsRecord goes backwards: NextProducerId {record.NextProducerId} "
                f"after {self.next_producer_id}"
            )
        self.next_producer_id = record.NextProducerId

    def snapshot(self) -> int:
        return self.next_producer_id

    def restore(self, snapshot: int) -> None:
        self.next_producer_id = snapshot

    def exhausted(self) -> bool:
        return self.next_producer_id > _MAX_INT64 - PRODUCER_ID_BLOCK_SIZE


def allocate_producer_ids(
    cluster: ClusterControlManager,
    ids: ProducerIdControlManager,
    req: AllocateProducerIdsRequest,
    version: int,
) -> ControllerResult[AllocateProducerIdsResponse]:
    """The next block of PRODUCER_ID_BLOCK_SIZE ids, as one ProducerIdsRecord."""
    cluster.check_broker_epoch(req.BrokerId, req.BrokerEpoch)
    if ids.exhausted():
        raise KafkaError(Errors.UNKNOWN_SERVER_ERROR, "Exhausted all producerIds.")
    start = ids.next_producer_id
    record = ProducerIdsRecord(
        BrokerId=req.BrokerId, BrokerEpoch=req.BrokerEpoch, NextProducerId=start + PRODUCER_ID_BLOCK_SIZE
    )
    response = AllocateProducerIdsResponse(
        ErrorCode=0, ProducerIdStart=start, ProducerIdLen=PRODUCER_ID_BLOCK_SIZE
    )
    return ControllerResult.of([ApiMessageAndVersion(record, 0)], response)
